"""Keys, limits and budgets across replicas: three ``solon-events serve --config``
processes and one real redis-server, the embedded provider upstream.

A requests-per-minute limit of N lets exactly N through across the replicas; token and
USD budgets hold within the documented overrun while concurrent streaming clients cancel
at random points and requests fall back and hedge; the spend log's totals equal what the
embedded provider served; a key removed by a reload (SIGHUP) is refused everywhere; a
replica killed mid-stream holds no place in flight past its lease.

Slower than most (about 20 s): three gateway processes start, and the budgets need
streams long enough to be cancelled mid-way.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import random
import signal
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from redis_server import RedisServer
from serving import serve_command

from solon_events.client.limit_store import RedisLimitStore
from solon_events.client.limiter import Limiter
from solon_events.client.limits import NANOS_PER_USD, Limits
from solon_events.client.spend_log import read_spend
from solon_events.devserver import DevServer

REPLICAS = 3
STREAM = f"spend-{uuid.uuid4().hex[:8]}"
LEASE = 2.0
PRICE_IN, PRICE_OUT = 100.0, 400.0  # USD per million tokens: a token is 0.0001 or 0.0004
SLOW = "slow:30:0.01"  # 30 one-token deltas, 10 ms apart; it reports 10 input tokens
QUESTION: Any = [{"role": "user", "content": "count to thirty"}]
MAX_TOKENS = 40  # each request names its maximum: more than the 30 it gets

KEYS = {
    "rpm": ("sk-rpm-01", "rpm = 10"),
    "tokens": ("sk-tokens-02", 'budget_tokens = 600\nwindow = "day"'),
    "dollars": ("sk-dollars-03", 'budget_usd = 0.1\nwindow = "day"'),
    "loose": ("sk-loose-04", "budget_tokens = 300\noutput_allowance = 8"),
    "capped": ("sk-capped-05", 'budget_tokens = 300\noutput_allowance = 8\noverrun = "stop"'),
    "audit": ("sk-audit-06", ""),
    "solo": ("sk-solo-07", "max_parallel = 1"),
    "revoked": ("sk-revoked-08", ""),
}


def config_text(dev: str, redis: str, keys: dict[str, tuple[str, str]]) -> str:
    sections = [
        f'redis = "{redis}"',
        f"[limits]\nlease = {LEASE}",
        f'[spend_log]\nredis_stream = "{STREAM}"\ninterval = 0.05',
        f'[models.fast]\n[[models.fast.deployments]]\nupstream = "openai:{dev}/v1/chat/completions"'
        '\nmodel = "echo"',
        # every request falls back: its first deployment fails, and is asked again each time
        '[models.flaky]\nstrategy = "fallback"\ncooldown = 0\n'
        f'[[models.flaky.deployments]]\nupstream = "openai:{dev}/v1/chat/completions"\n'
        'model = "status:503"\n'
        f'[[models.flaky.deployments]]\nupstream = "anthropic:{dev}/v1/messages"\n'
        f'model = "{SLOW}"',
        # every request hedges: the first deployment is slow to answer, the second wins
        '[models.hedged]\nstrategy = "hedge"\nhedge_after = 0.05\n'
        f'[[models.hedged.deployments]]\nupstream = "openai:{dev}/v1/chat/completions"\n'
        'model = "first-delay:3"\n'
        f'[[models.hedged.deployments]]\nupstream = "openai:{dev}/v1/chat/completions"\n'
        f'model = "{SLOW}"',
        f'[models.long]\n[[models.long.deployments]]\nupstream = "openai:{dev}/v1/chat/completions"'
        '\nmodel = "slow:3000:0.01"',
        *(
            f'[prices."{model}"]\ninput = {PRICE_IN}\noutput = {PRICE_OUT}'
            for model in ("echo", SLOW, "first-delay:3", "status:503")
        ),
    ]
    for name, (key, limits) in keys.items():
        digest = hashlib.sha256(key.encode()).hexdigest()
        sections.append(f'[keys.{name}]\nkey_sha256 = "{digest}"\n{limits}')
    return "\n\n".join(sections) + "\n"


class Replica:
    """One ``solon-events serve --config`` process."""

    def __init__(self, process: Any) -> None:
        self.process = process
        self.url = process.stdout.readline().strip()
        assert self.url.startswith("http://"), self.process.stderr.read()

    def client(self, name: str) -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(api_key=KEYS[name][0], base_url=self.url + "/v1", max_retries=0)


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    folder = tmp_path_factory.mktemp("replicas")
    redis = RedisServer().start()
    dev = DevServer.run_in_thread()
    path = folder / "gateway.toml"
    path.write_text(config_text(dev.url, redis.url, KEYS))
    with contextlib.ExitStack() as stack:
        processes = [
            stack.enter_context(serve_command("--config", str(path))) for _ in range(REPLICAS)
        ]
        replicas = [Replica(process) for process in processes]
        yield {"replicas": replicas, "redis": redis.url, "dev": dev, "path": path}
    dev.close()
    redis.close()


def counts(redis: str, name: str, limits: Limits) -> Any:
    """A key's counts, as every replica sees them."""

    async def read() -> Any:
        store = RedisLimitStore(redis)
        try:
            return await Limiter(limits, name=f"key:{name}", store=store).counts()
        finally:
            store.close()

    return asyncio.run(read())


async def settled(redis: str, name: str, limits: Limits) -> Any:
    """The key's counts once nothing of it is in flight and its charges are written."""
    for _ in range(200):
        found = await asyncio.to_thread(counts, redis, name, limits)
        if found.in_flight == 0:
            await asyncio.sleep(0.3)  # the last charges, sent after the release
            return await asyncio.to_thread(counts, redis, name, limits)
        await asyncio.sleep(0.05)
    raise AssertionError(f"key {name} still has requests in flight: {found}")


def spend_of(redis: str, key: str) -> list[Any]:
    return [record for record in read_spend(redis, stream=STREAM) if record.key == key]


def test_an_rpm_limit_lets_exactly_n_through_across_replicas(setup: dict[str, Any]) -> None:
    replicas = setup["replicas"]

    async def ask(number: int) -> tuple[int, str | None]:
        replica = replicas[number % REPLICAS]
        async with httpx.AsyncClient(timeout=30) as client:
            answer = await client.post(
                replica.url + "/v1/chat/completions",
                json={"model": "fast", "messages": QUESTION},
                headers={"Authorization": f"Bearer {KEYS['rpm'][0]}"},
            )
        return answer.status_code, answer.headers.get("Retry-After")

    async def burst() -> list[tuple[int, str | None]]:
        return await asyncio.gather(*(ask(number) for number in range(30)))

    answers = asyncio.run(burst())
    statuses = sorted(status for status, _ in answers)
    assert statuses == [200] * 10 + [429] * 20
    assert all(1 <= int(after or 0) <= 60 for status, after in answers if status == 429)
    assert counts(setup["redis"], "rpm", Limits(rpm=10)).requests == 10


async def stream_and_cancel(
    replica: Replica,
    key: str,
    model: str,
    rng: random.Random,
    *,
    max_tokens: int | None,
    cancel: bool = True,
) -> str:
    """One streaming client that leaves after a random number of chunks (or reads it all;
    all of it, unless ``cancel``): how it ended."""
    client = replica.client(key)
    options: dict[str, Any] = {"max_tokens": max_tokens} if max_tokens else {}
    leave_after = rng.choice([1, 3, 8, 15, 1000]) if cancel else 1000
    try:
        stream = await client.chat.completions.create(
            model=model, messages=QUESTION, stream=True, **options
        )
        chunks = 0
        async for _chunk in stream:
            chunks += 1
            if chunks >= leave_after:
                await stream.close()
                return "cancelled"
        return "read"
    except openai.RateLimitError:
        return "refused"
    except openai.APIError:
        return "stopped"  # the limit's error event (overrun = "stop")
    finally:
        await client.close()


async def crowd(
    replicas: list[Replica],
    key: str,
    count: int,
    *,
    max_tokens: int | None,
    seed: int,
    cancel: bool = True,
) -> list[str]:
    rng = random.Random(seed)
    models = ["flaky", "hedged"]
    return await asyncio.gather(
        *(
            stream_and_cancel(
                replicas[i % REPLICAS],
                key,
                models[i % 2],
                rng,
                max_tokens=max_tokens,
                cancel=cancel,
            )
            for i in range(count)
        )
    )


def test_budgets_hold_while_clients_cancel_and_requests_fall_back_and_hedge(
    setup: dict[str, Any],
) -> None:
    replicas, redis = setup["replicas"], setup["redis"]
    concurrency = 12

    async def run() -> dict[str, Any]:
        found: dict[str, Any] = {}
        for key, budget_limits, max_tokens in (
            ("tokens", Limits(budget_tokens=600, window="day"), MAX_TOKENS),
            ("dollars", Limits(budget_usd=0.1, window="day"), MAX_TOKENS),
            ("loose", Limits(budget_tokens=300), None),
            ("capped", Limits(budget_tokens=300), None),
        ):
            outcomes: list[str] = []
            for wave in range(2):  # waves of concurrent clients until the budget refuses
                outcomes += await crowd(
                    replicas,
                    key,
                    concurrency,
                    max_tokens=max_tokens,
                    seed=wave,
                    cancel=key != "capped",  # its clients stay, to be stopped
                )
            found[key] = (outcomes, await settled(redis, key, budget_limits))
        return found

    found = asyncio.run(run())
    for key in found:
        outcomes, _ = found[key]
        assert "refused" in outcomes, (key, outcomes)  # each budget was reached
        assert "cancelled" in outcomes or key == "capped", (key, outcomes)
    # Every request named its maximum, which it did not exceed: the overrun is nothing.
    assert found["tokens"][1].spent_tokens <= 600
    assert found["dollars"][1].spent_nanos <= 0.1 * NANOS_PER_USD
    # No maximum named: each request reserved 8 output tokens and may use 30, so the
    # requests in flight when the budget was reached (at most the concurrency) overrun it
    # by at most 22 each.
    assert found["loose"][1].spent_tokens <= 300 + concurrency * (30 - 8)
    # Stopped at the limit: each stream in flight overruns it by the delta that crossed it
    # and the deltas its upstream sent before the cancellation reached it (one every 10 ms:
    # two at most allowed, on a machine busy enough to delay the cancellation).
    assert found["capped"][1].spent_tokens <= 300 + concurrency * 3
    assert "stopped" in found["capped"][0]
    # The counts are the spend log's, exactly: every attempt charged, cancelled or not.
    time.sleep(0.3)
    for key, (_outcomes, settled_counts) in found.items():
        records = spend_of(redis, key)
        assert settled_counts.spent_tokens == sum(r.tokens for r in records), key
        assert settled_counts.spent_nanos == sum(r.nanos for r in records), key
        kinds = {r.outcome for r in records}
        # fallbacks' failed first attempts, and answers read whole or left by their client
        assert "failed" in kinds and kinds & {"completed", "cancelled"}, (key, kinds)


def test_the_spend_log_equals_what_the_provider_served(setup: dict[str, Any]) -> None:
    replicas, redis, dev = setup["replicas"], setup["redis"], setup["dev"]
    before = dev.served_usage()

    async def ask(number: int) -> None:
        client = replicas[number % REPLICAS].client("audit")
        model = ["fast", "flaky", "hedged"][number % 3]
        try:
            if number % 2:
                stream = await client.chat.completions.create(
                    model=model, messages=QUESTION, stream=True, max_tokens=MAX_TOKENS
                )
                async for _chunk in stream:
                    pass
            else:
                await client.chat.completions.create(model=model, messages=QUESTION)
        finally:
            await client.close()

    async def run() -> None:
        await asyncio.gather(*(ask(number) for number in range(18)))
        await settled(redis, "audit", Limits())

    asyncio.run(run())
    after = dev.served_usage()
    records = spend_of(redis, "audit")
    logged = [r.usage for r in records if r.usage is not None]
    assert not any(u.estimated for u in logged)  # every stream reported its usage
    served_in = after["prompt_tokens"] - before["prompt_tokens"]
    served_out = after["completion_tokens"] - before["completion_tokens"]
    assert (sum(u.prompt_tokens for u in logged), sum(u.completion_tokens for u in logged)) == (
        served_in,
        served_out,
    )
    assert after["finished"] - before["finished"] == len(logged) == 18
    outcomes = sorted(r.outcome for r in records)
    assert outcomes.count("failed") == 6  # flaky's first deployment, every time: no usage
    assert outcomes.count("cancelled") == 6  # hedged's loser, before it sent anything


def test_a_key_removed_by_a_reload_is_refused_by_every_replica(setup: dict[str, Any]) -> None:
    replicas, path, dev, redis = setup["replicas"], setup["path"], setup["dev"], setup["redis"]

    def ask(replica: Replica, key: str, model: str = "fast") -> int:
        return httpx.post(
            replica.url + "/v1/chat/completions",
            json={"model": model, "messages": QUESTION},
            headers={"Authorization": f"Bearer {key}"},
            timeout=30,
        ).status_code

    assert [ask(r, KEYS["revoked"][0]) for r in replicas] == [200] * REPLICAS
    assert [ask(r, "sk-unknown-99") for r in replicas] == [401] * REPLICAS
    kept = {name: value for name, value in KEYS.items() if name != "revoked"}
    kept["solo"] = (KEYS["solo"][0], 'max_parallel = 1\nmodels = ["long"]')
    path.write_text(config_text(dev.url, redis, kept))
    for replica in replicas:
        replica.process.send_signal(signal.SIGHUP)
    for replica in replicas:
        line = replica.process.stderr.readline()
        while "reloaded" not in line:
            assert line, "the replica ended"
            line = replica.process.stderr.readline()
    assert [ask(r, KEYS["revoked"][0]) for r in replicas] == [401] * REPLICAS
    assert [ask(r, KEYS["audit"][0]) for r in replicas] == [200] * REPLICAS
    assert [ask(r, KEYS["solo"][0]) for r in replicas] == [403] * REPLICAS  # another model


def test_a_replica_killed_mid_stream_holds_no_place_past_its_lease(
    setup: dict[str, Any],
) -> None:
    replicas, redis = setup["replicas"], setup["redis"]
    solo = Limits(max_parallel=1)

    async def run() -> float:
        doomed = replicas[-1]
        client = doomed.client("solo")
        stream = await client.chat.completions.create(model="long", messages=QUESTION, stream=True)
        chunks = 0
        async for _chunk in stream:
            chunks += 1
            if chunks == 5:
                break
        assert (await asyncio.to_thread(counts, redis, "solo", solo)).in_flight == 1
        other = replicas[0].client("solo")
        with pytest.raises(openai.RateLimitError):
            await other.chat.completions.create(model="long", messages=QUESTION, stream=True)
        doomed.process.kill()
        killed = time.monotonic()
        with contextlib.suppress(Exception):
            await stream.close()
        while (await asyncio.to_thread(counts, redis, "solo", solo)).in_flight:
            await asyncio.sleep(0.05)
        freed = time.monotonic() - killed
        again = await other.chat.completions.create(model="long", messages=QUESTION, stream=True)
        async for _chunk in again:
            break
        await again.close()
        await other.close()
        return freed

    freed_after = asyncio.run(run())
    assert freed_after <= LEASE + 1.0  # the lease lapsed; nothing held past it
