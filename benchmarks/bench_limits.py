"""What a limit check adds to a request: in the process, and on Redis.

Two figures, each against a baseline measured in the same run:

- **the check alone**: one request's whole limit work, as a ChatModel or the gateway does
  it (reserve against requests per minute, tokens per minute and a token and USD budget,
  charge the usage, release), one request after another: microseconds per request, p50
  and p99, for a :class:`~solon_events.client.limit_store.MemoryLimitStore` and a
  :class:`~solon_events.client.limit_store.RedisLimitStore` (a local redis-server of the
  run's own), beside a bare Redis round trip from the same loop (``PING``: the floor of
  anything kept in Redis); and at 64 requests at once, the checks completed per second;
- **per request**: requests to the embedded provider (in-process, Chat Completions, a
  short answer), one after another, through a model without a limiter, with an
  in-process one and with one on Redis, taken in turn so that the three see the same
  machine: the time to the first answer event, p50 and p99, and what the limiter adds.

Needs ``redis-server`` on the PATH and the ``redis`` extra for the Redis rows (left out,
and said so, without them). ``python -m benchmarks.bench_limits`` runs it alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from typing import Any

from .bench_e2e import _percentile

LIMITS = {"rpm": 10**9, "tpm": 10**12, "budget_tokens": 10**15, "budget_usd": 10.0**6}
CONCURRENCY = 64


def _runs(quick: bool) -> dict[str, int]:
    return {"checks": 2_000 if quick else 10_000, "requests": 150 if quick else 600, "warmup": 50}


@contextlib.contextmanager
def _redis_server() -> Iterator[str | None]:
    """A redis-server on a free port for the run (None when it is not installed)."""
    binary = shutil.which("redis-server")
    try:
        import redis  # noqa: F401
    except ImportError:
        binary = None
    if binary is None:
        yield None
        return
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with tempfile.TemporaryDirectory() as folder:
        process = subprocess.Popen(
            [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--dir", folder],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port)):
                    break
                time.sleep(0.05)
            yield f"redis://127.0.0.1:{port}/0"
        finally:
            process.kill()
            process.wait(10)


def _summary(seconds: list[float], unit: float) -> dict[str, float]:
    return {"p50": _percentile(seconds, 0.5) * unit, "p99": _percentile(seconds, 0.99) * unit}


async def _checks(limiter: Any, count: int, warmup: int) -> list[float]:
    """Each request's reserve, charge and release, one after another (seconds)."""
    taken = []
    for number in range(warmup + count):
        start = time.perf_counter()
        reservation = await limiter.reserve(120, 5_000)
        reservation.charge(100, 4_000)
        reservation.release()
        if number >= warmup:
            taken.append(time.perf_counter() - start)
    return taken


async def _concurrent(limiter: Any, count: int) -> float:
    """Checks completed per second with :data:`CONCURRENCY` requests at once."""
    per_client = max(1, count // CONCURRENCY)

    async def client() -> None:
        for _ in range(per_client):
            reservation = await limiter.reserve(120, 5_000)
            reservation.charge(100, 4_000)
            reservation.release()

    start = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(CONCURRENCY)))
    return per_client * CONCURRENCY / (time.perf_counter() - start)


async def _pings(store: Any, count: int, warmup: int) -> list[float]:
    """Bare Redis round trips from the store's loop thread (seconds)."""
    client = store._io.run(_client(store))
    taken = []
    for number in range(warmup + count):
        start = time.perf_counter()
        await asyncio.wrap_future(store._io.submit(client.ping()))
        if number >= warmup:
            taken.append(time.perf_counter() - start)
    return taken


async def _client(store: Any) -> Any:
    return store._redis()


def measure(quick: bool = False) -> dict[str, Any]:
    """The figures (see the module's docs)."""
    from solon_events import ChatModel
    from solon_events.client.limit_store import RedisLimitStore
    from solon_events.client.limiter import Limiter
    from solon_events.devserver import DevServer
    from solon_events.event_model.events import EVENT_TYPES

    runs = _runs(quick)
    figures: dict[str, Any] = {"checks": {}, "requests": {}}
    with _redis_server() as redis_url:
        stores: dict[str, Any] = {"in the process": None}
        if redis_url is not None:
            stores["on Redis"] = RedisLimitStore(redis_url)
        else:
            figures["redis"] = "not measured: redis-server or the redis extra is missing"
        try:
            for where, store in stores.items():
                limiter = Limiter(name=f"bench-{where}", store=store, **LIMITS)
                taken = asyncio.run(_checks(limiter, runs["checks"], runs["warmup"]))
                per_second = asyncio.run(_concurrent(limiter, runs["checks"]))
                figures["checks"][where] = {**_summary(taken, 1e6), "per_second": per_second}
            if "on Redis" in stores:
                pings = asyncio.run(_pings(stores["on Redis"], runs["checks"], runs["warmup"]))
                figures["checks"]["Redis PING (floor)"] = _summary(pings, 1e6)

            server = DevServer.run_in_thread()
            models = {"no limiter": ChatModel(server.url + "/v1/chat/completions", "echo")}
            for where, store in stores.items():
                limiter = Limiter(name=f"bench-requests-{where}", store=store, **LIMITS)
                models[f"limiter {where}"] = ChatModel(
                    server.url + "/v1/chat/completions", "echo", limiter=limiter
                )

            async def first_events() -> dict[str, list[float]]:
                taken: dict[str, list[float]] = {name: [] for name in models}
                for number in range(runs["warmup"] + runs["requests"]):
                    for name, model in models.items():  # in turn: the same machine for each
                        start = time.perf_counter()
                        first = None
                        async for event in model.prompt("one two three").astream():
                            if first is None and event.type is EVENT_TYPES.TEXT_DELTA:
                                first = time.perf_counter() - start
                        if number >= runs["warmup"] and first is not None:
                            taken[name].append(first)
                return taken

            try:
                for name, taken in asyncio.run(first_events()).items():
                    figures["requests"][name] = _summary(taken, 1e3)
            finally:
                for model in models.values():
                    model.close()
                server.close()
        finally:
            for store in stores.values():
                if store is not None:
                    store.close()
    return figures


def main(quick: bool = False) -> dict[str, Any]:
    """Print the limit checks' figures; return them."""
    figures = measure(quick)
    if "redis" in figures:
        print(f"Redis {figures['redis']}")
    print("a limit check per request: reserve (rpm, tpm, token and USD budgets), charge, release")
    print(f"{'where':<22}{'p50 us':>10}{'p99 us':>10}{f'at C={CONCURRENCY}':>16}")
    for where, run in figures["checks"].items():
        rate = f"{run['per_second']:>11.0f}/s" if "per_second" in run else ""
        print(f"{where:<22}{run['p50']:>10.1f}{run['p99']:>10.1f}{rate:>16}")
    redis, ping = figures["checks"].get("on Redis"), figures["checks"].get("Redis PING (floor)")
    if redis and ping:
        ratio = redis["p50"] / ping["p50"]
        figures["redis_to_ping"] = ratio
        print(f"on Redis, p50: {ratio:.2f} round trips' worth (the check is one script)")
    print()
    requests = figures["requests"]
    base = requests["no limiter"]
    for run in requests.values():
        if run is not base:
            run["added_p50"] = run["p50"] - base["p50"]
            run["added_p99"] = run["p99"] - base["p99"]
    print("a request to the embedded provider, time to its first text delta (ms)")
    print(
        "model".ljust(26) + "".join(c.rjust(11) for c in ("p50", "p99", "added p50", "added p99"))
    )
    for name, run in requests.items():
        cells = [run.get(c) for c in ("p50", "p99", "added_p50", "added_p99")]
        print(name.ljust(26) + "".join("".rjust(11) if c is None else f"{c:>11.3f}" for c in cells))
    return figures


if __name__ == "__main__":
    import sys

    main("--quick" in sys.argv)
