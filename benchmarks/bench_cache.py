"""The response cache: a hit against a miss over loopback, and LangChain's cache on the
same workload in the same run.

The provider is the embedded one in a process of its own (``python -m
solon_events.devserver``), Chat Completions, streaming its ``slow:N:0`` scenario: N text
deltas, as fast as it can. Every request is the same conversation. Each row asks it
``requests`` times, one after another, on one asyncio loop in this process:

- ours, ``astream()``: the provider asked with no cache (the floor); a miss (a memory
  cache, each request asked again and stored: ``cache("refresh")``); a hit from memory, from
  a SQLite file, and from Redis (when ``redis-server`` is installed: one is started);
- LangChain (``langchain-openai``'s ``ChatOpenAI``, ``streaming=True``, the ``bench``
  extra), ``ainvoke()``: no cache, a miss (an ``InMemoryCache`` cleared before each
  request) and a hit. LangChain's cache is read by ``invoke``/``ainvoke`` only (its
  ``stream()`` always asks the provider), and a hit comes back whole.

Columns: the time to the first event a caller can show (ours: the first text delta;
LangChain: the answer, its first and only piece on a hit), median and p99, in ms; the
process's CPU time per frame of the answer (all threads: the caller's loop, any I/O
thread), in microseconds; and each row's CPU over its own library's uncached row.

``python -m benchmarks.bench_cache`` runs it alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

from .bench_e2e import _percentile, devserver

FRAMES = 200
QUESTION = "the same question"


def _ours(url: str, frames: int, cache: Any) -> Any:
    from solon_events import ChatModel

    return ChatModel(url + "/v1/chat/completions", f"slow:{frames}:0", cache=cache)


async def _ask_ours(model: Any, mode: Any) -> float:
    """One response through ``astream()``; the seconds to its first text delta."""
    from solon_events.event_model.events import EVENT_TYPES

    start = time.perf_counter()
    first = None
    async for event in model.prompt(QUESTION).cache(mode).astream():
        if first is None and event.type is EVENT_TYPES.TEXT_DELTA:
            first = time.perf_counter() - start
    assert first is not None
    return first


def _langchain(url: str, frames: int, cache: Any) -> Any:
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        model=f"slow:{frames}:0",
        base_url=url + "/v1",
        api_key="bench-key",  # type: ignore[arg-type]
        streaming=True,
        cache=cache,
        max_retries=0,
    )


async def _run(
    ask: Callable[[], Awaitable[float]], requests: int, warmup: int = 5
) -> dict[str, Any]:
    for _ in range(warmup):
        await ask()
    firsts = []
    cpu = time.process_time()
    for _ in range(requests):
        firsts.append(await ask())
    cpu = time.process_time() - cpu
    return {
        "ttfe_p50_ms": statistics.median(firsts) * 1e3,
        "ttfe_p99_ms": _percentile(firsts, 0.99) * 1e3,
        "cpu_s": cpu,
    }


@contextlib.contextmanager
def _redis() -> Iterator[str | None]:
    """A redis-server of its own (its URL), or None when none is installed."""
    if shutil.which("redis-server") is None:
        yield None
        return
    from .local_servers import RedisServer

    server = RedisServer().start()
    try:
        yield server.url
    finally:
        server.close()


async def _rows(url: str, frames: int, requests: int, redis: str | None) -> list[dict[str, Any]]:
    from langchain_core.caches import InMemoryCache

    from solon_events import MemoryCache, RedisCache, SQLiteCache

    rows: list[dict[str, Any]] = []

    async def row(library: str, name: str, ask: Callable[[], Awaitable[float]]) -> None:
        found = await _run(ask, requests)
        rows.append({"library": library, "row": name, **found})

    with tempfile.TemporaryDirectory() as folder:
        stores: list[tuple[str, Any]] = [
            ("memory", MemoryCache()),
            ("SQLite", SQLiteCache(Path(folder) / "answers.sqlite3")),
        ]
        if redis is not None:
            stores.append(("Redis", RedisCache(redis, prefix="bench")))
        plain = _ours(url, frames, None)
        await row("solon_events", "no cache", lambda: _ask_ours(plain, True))
        missing = _ours(url, frames, MemoryCache())
        await row("solon_events", "miss (asked, stored)", lambda: _ask_ours(missing, "refresh"))
        for name, store in stores:
            model = _ours(url, frames, store)
            await _ask_ours(model, True)  # stored
            await row("solon_events", f"hit: {name}", lambda m=model: _ask_ours(m, True))  # type: ignore[misc]
            model.close()
            if isinstance(store, RedisCache):
                await store.aclose()
            store.close()
        for model in (plain, missing):
            model.close()

        async def invoke(chat: Any, clear: Any = None) -> float:
            if clear is not None:
                clear.clear()
            start = time.perf_counter()
            answer = await chat.ainvoke(QUESTION)
            assert answer.content
            return time.perf_counter() - start

        chat_plain = _langchain(url, frames, False)
        await row("LangChain", "no cache", lambda: invoke(chat_plain))
        lc_miss = InMemoryCache()
        chat_miss = _langchain(url, frames, lc_miss)
        await row("LangChain", "miss (asked, stored)", lambda: invoke(chat_miss, lc_miss))
        lc_hit = InMemoryCache()
        chat_hit = _langchain(url, frames, lc_hit)
        await invoke(chat_hit)
        await row("LangChain", "hit: InMemoryCache", lambda: invoke(chat_hit))
    for found in rows:
        found["cpu_us_per_frame"] = found["cpu_s"] * 1e6 / (requests * frames)
    for library in ("solon_events", "LangChain"):
        floor = next(r for r in rows if r["library"] == library and r["row"] == "no cache")
        for found in rows:
            if found["library"] == library:
                found["cpu_vs_no_cache"] = found["cpu_s"] / floor["cpu_s"]
    return rows


def run(frames: int, requests: int) -> list[dict[str, Any]]:
    """Every row's figures."""
    with devserver() as url, _redis() as redis:
        return asyncio.run(_rows(url, frames, requests, redis))


def table(rows: list[dict[str, Any]]) -> str:
    """The rows as a text table."""
    lines = [
        f"{'':13} {'':22} {'first event p50':>16} {'p99':>9} {'CPU/frame':>10} {'CPU ratio':>10}"
    ]
    for row in rows:
        lines.append(
            f"{row['library']:13} {row['row']:22} {row['ttfe_p50_ms']:13.3f} ms "
            f"{row['ttfe_p99_ms']:6.3f} ms {row['cpu_us_per_frame']:7.2f} us "
            f"{row['cpu_vs_no_cache']:9.3f}x"
        )
    ours = {r["row"]: r for r in rows if r["library"] == "solon_events"}
    theirs = {r["row"]: r for r in rows if r["library"] == "LangChain"}
    for name, found, hit in (
        ("ours", ours, ours["hit: memory"]),
        ("LangChain's", theirs, theirs["hit: InMemoryCache"]),
    ):
        miss = found["miss (asked, stored)"]
        lines.append(
            f"{name}: a memory hit's first event {miss['ttfe_p50_ms'] / hit['ttfe_p50_ms']:.0f}x "
            f"sooner than a miss's, at {hit['cpu_s'] / miss['cpu_s']:.3f}x its CPU"
        )
    return "\n".join(lines)


def main(quick: bool = False) -> list[dict[str, Any]]:
    """Print the table; return its rows."""
    frames, requests = (FRAMES // 2, 50) if quick else (FRAMES, 200)
    print(
        f"one answer of {frames} text deltas (slow:{frames}:0, Chat Completions, the embedded "
        f"provider in its own process), asked {requests} times in a row on one loop"
    )
    rows = run(frames, requests)
    print(table(rows))
    return rows


if __name__ == "__main__":
    main()
