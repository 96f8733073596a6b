"""The limiter's counts in a real Redis: the Lua claim decides as the in-process store
does (hypothesis), processes racing for the last places never get more than the limit,
a process that dies leaves no place in flight past its lease, a live one keeps its
places, and Redis down is allowed or refused as configured."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from limit_steps import limits_strategy, run_steps, steps_strategy
from redis_server import RedisServer, redis_server, redis_url  # noqa: F401  (fixtures)

from solon_events.client.limit_store import MemoryLimitStore, RedisLimitStore
from solon_events.client.limiter import Limiter
from solon_events.client.limits import LimitExceededError, Limits

ROOT = Path(__file__).resolve().parents[1]


class SyncedRedisStore:
    """A RedisLimitStore whose writes are written before the next claim (the test plays
    one step after another)."""

    def __init__(self, store: RedisLimitStore) -> None:
        self.store = store

    def claim(self, claim: Any) -> Any:
        self.store.flush().result(10)
        return self.store.claim(claim).result(10)

    def adjust(self, *args: Any, **kwargs: Any) -> None:
        self.store.adjust(*args, **kwargs)

    def release(self, *args: Any) -> None:
        self.store.release(*args)


@pytest.fixture(scope="module")
def shared_store(redis_url: str) -> Any:  # noqa: F811
    store = RedisLimitStore(redis_url, prefix="test-limits")
    yield store
    store.close()


@settings(max_examples=120)
@given(limits=limits_strategy, steps=steps_strategy, data=st.data())
def test_the_lua_claim_decides_as_the_memory_store(
    shared_store: RedisLimitStore, limits: Limits, steps: list, data: Any
) -> None:
    memory = MemoryLimitStore()
    store = RedisLimitStore(shared_store.url, prefix=f"t-{uuid.uuid4().hex}", lease=1e7)
    store._io = shared_store._io  # one loop thread and connection pool for every example
    store._client = shared_store._redis()
    store._script = shared_store._script
    synced = SyncedRedisStore(store)
    decisions: list[Any] = []

    def record(decision: Any, expected: bool) -> None:
        decisions.append(decision)

    run_steps(synced, limits, steps, record)
    expected: list[Any] = []
    run_steps(memory, limits, steps, lambda decision, _: expected.append(decision))
    assert [(d.granted, d.limit) for d in decisions] == [(d.granted, d.limit) for d in expected]
    for got, wanted in zip(decisions, expected):
        if wanted.retry_after is None:
            assert got.retry_after is None
        else:
            assert got.retry_after == pytest.approx(wanted.retry_after, abs=1e-6)
        assert (got.second, got.period) == (wanted.second, wanted.period)
    store.flush().result(10)
    now = 1_796_000_000.25 + sum(step[1] for step in steps if step[0] == "wait")
    got_counts = store.counts("s", limits, now).result(10)
    want_counts = memory.counts("s", limits, now)
    assert got_counts.in_flight == want_counts.in_flight
    assert (got_counts.spent_tokens, got_counts.spent_nanos) == (
        want_counts.spent_tokens,
        want_counts.spent_nanos,
    )
    if limits.tpm is not None:
        assert got_counts.tokens == want_counts.tokens
    if limits.rpm is not None:
        assert got_counts.requests == want_counts.requests


def _race(url: str, scope: str, tries: int, start: float, results: Any) -> None:
    """One process's claims, started together with the others at ``start``."""

    async def claims() -> int:
        limiter = Limiter(rpm=25, tpm=10_000, name=scope, store=url)
        granted = 0
        while time.time() < start:
            await asyncio.sleep(0.001)
        for _ in range(tries):
            try:
                await limiter.reserve(100)
                granted += 1
            except LimitExceededError as error:
                assert error.limit in ("rpm", "tpm")
        limiter.close()
        return granted

    results.put(asyncio.run(claims()))


def test_processes_racing_for_the_last_places_get_exactly_the_limit(
    redis_url: str,  # noqa: F811
) -> None:
    """Three processes of their own (their start-up is most of this test's time)."""
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    scope = f"race-{uuid.uuid4().hex[:8]}"
    start = time.time() + 2.0
    processes = [
        context.Process(target=_race, args=(redis_url, scope, 20, start, results)) for _ in range(3)
    ]
    for process in processes:
        process.start()
    granted = [results.get(timeout=60) for _ in processes]
    for process in processes:
        process.join(30)
    assert sum(granted) == 25  # 60 claims for 25 places: never one more
    counts = asyncio.run(Limiter(rpm=25, tpm=10_000, name=scope, store=redis_url).counts())
    assert (counts.requests, counts.tokens) == (25, 2_500)


HOLDER = textwrap.dedent(
    """
    import asyncio, sys
    from solon_events.client.limit_store import RedisLimitStore
    from solon_events.client.limiter import Limiter

    async def main():
        store = RedisLimitStore(sys.argv[1], lease=float(sys.argv[3]))
        limiter = Limiter(max_parallel=1, budget_tokens=1000, name=sys.argv[2], store=store)
        await limiter.reserve(300)
        print("held", flush=True)
        await asyncio.sleep(3600)

    asyncio.run(main())
    """
)


def test_a_dead_process_holds_no_place_past_its_lease(redis_url: str) -> None:  # noqa: F811
    scope = f"lease-{uuid.uuid4().hex[:8]}"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, redis_url, scope, "1.5"],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        limiter = Limiter(max_parallel=1, budget_tokens=1000, name=scope, store=redis_url)

        async def after_the_kill() -> tuple[int, int, float]:
            assert (await limiter.counts()).in_flight == 1
            await asyncio.sleep(2.0)  # longer than the lease: the live holder renewed it
            assert (await limiter.counts()).in_flight == 1
            with pytest.raises(LimitExceededError):
                await limiter.reserve(10)
            holder.send_signal(signal.SIGKILL)
            holder.wait(10)
            killed = time.monotonic()
            while (await limiter.counts()).in_flight:
                await asyncio.sleep(0.05)
            freed_after = time.monotonic() - killed
            reservation = await limiter.reserve(10)
            counts = await limiter.counts()
            reservation.release()
            return counts.in_flight, counts.spent_tokens, freed_after

        in_flight, spent, freed_after = asyncio.run(after_the_kill())
        assert in_flight == 1
        assert spent == 310  # what the dead process reserved stays counted: the most it used
        assert freed_after <= 1.5 + 0.5
        limiter.close()
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(10)


async def test_redis_down_is_allowed_or_refused_as_configured(
    redis_server: RedisServer,  # noqa: F811
) -> None:
    allowing = Limiter(rpm=1, name="down", store=RedisLimitStore(redis_server.url, timeout=0.3))
    refusing = Limiter(
        rpm=1,
        name="down",
        store=RedisLimitStore(redis_server.url, timeout=0.3, unavailable="refuse"),
    )
    (await allowing.reserve()).release()
    redis_server.stop()
    for _ in range(3):
        (await allowing.reserve()).release()  # over the limit, but Redis cannot say
    with pytest.raises(LimitExceededError) as refused:
        await refusing.reserve()
    assert refused.value.limit == "unavailable"
    allowing.store.close()
    refusing.store.close()
