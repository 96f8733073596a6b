"""The chaos soak through two gateway replicas sharing a Redis that restarts mid-run
(``python -m benchmarks --soak N --gateways``).

The plans are :mod:`benchmarks.soak`'s, the models theirs (``told:a``, ``told:b``,
``told:c`` of one embedded provider), served by two ``solon-events serve`` processes with
``--redis``: one as a fallback chain (a, then b, then c), one as a hedge (after 50 ms).
Each response is posted to ``/events`` of one replica and read over HTTP; with
resumption on, a stream that ends without its terminal event (its connection lost, its
gateway's Redis gone) is resumed on the other replica after the last event id it read
(``GET /events?resume=<id>`` with ``Last-Event-ID``), retried while Redis is away, and a
request Redis refused (503) is posted again. The client leaves a quarter of the streams
after a few events, and resumes half of those. The redis-server (every write in its
append-only file before it is acknowledged) is killed halfway through and started again
a second later. Figures as :mod:`benchmarks.soak`'s, plus each gateway's memory,
threads and file descriptors every 1,000 responses, and the responses cut by the
restart (failed while Redis was away, their stream lost with it: not answers lost).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import textwrap
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import attrs
import orjson

from solon_events.adapters.native import event_from_json
from solon_events.devserver import DevServer
from solon_events.event_model import errors

from . import soak
from .local_servers import RedisServer, gateway_process, process_figures

REPLICAS = {
    "fallback": ("--fallback", "told:b", "--fallback", "told:c"),
    "hedge": ("--fallback", "told:b", "--fallback", "told:c", "--hedge-after", "0.05"),
}
SHAPES = {
    "fallback": ("fallback", ("one", "a"), ("one", "b"), ("one", "c")),
    "hedge": ("hedge", 0.05, ("one", "a"), ("one", "b"), ("one", "c")),
}
FAULTS = {
    k: v for k, v in soak.FAULTS.items() if k != "stall:6"
}  # the gateway's idle timeout is 60 s
RESTART_PAUSE = 1.0
RETRIES = 40
RETRY_PAUSE = 0.25


def _subclasses(cls: type) -> set[type]:
    found: set[type] = set(cls.__subclasses__())
    for sub in list(found):
        found |= _subclasses(sub)
    return found


def _chat_errors() -> frozenset[str]:
    """The names of every ChatError class (the gateway's own among them), as ``/events``
    names an error's type."""
    from solon_events.serve import redis_log  # noqa: F401  (its StreamLogError)

    return frozenset(cls.__name__ for cls in {errors.ChatError, *_subclasses(errors.ChatError)})


@attrs.define
class _Read:
    """What a client read of one response over HTTP."""

    events: list[dict[str, Any]] = attrs.Factory(list)
    last_id: str | None = None
    response_id: str | None = None

    @property
    def ended(self) -> bool:
        return bool(self.events) and self.events[-1].get("type") in (
            "RESPONSE_END",
            "ERROR",
            "ABORT",
        )


class GatewaySoak:
    """The client of the two replicas (``addresses``: kind -> URL)."""

    def __init__(self, addresses: dict[str, str]) -> None:
        self.addresses = addresses
        self.session: aiohttp.ClientSession | None = None
        self.outage: tuple[float, float] | None = None  # when Redis was away
        self.chat_errors = _chat_errors()

    async def run(self, plan: soak.Plan) -> soak.Outcome:
        """Post ``plan``'s prompt to its replica, read (leave, resume) as it says."""
        assert self.session is not None
        replica = plan.shape[0]
        other = "hedge" if replica == "fallback" else "fallback"
        rng = random.Random(plan.number)
        read = _Read()
        leave = rng.randint(1, 8) if rng.random() < 0.25 else None
        body = orjson.dumps({"messages": [{"role": "user", "content": plan.prompt}]})
        started = time.monotonic()
        for _ in range(RETRIES):  # a 503 (Redis away) before the stream started: again
            status = await self._read(f"{self.addresses[replica]}/events", read, body, leave)
            if status != 503:
                break
            await asyncio.sleep(RETRY_PAUSE)
        if leave is not None and not read.ended and rng.random() < 0.5:
            return soak.Outcome(cancelled=True)  # left, not resumed
        for attempt in range(RETRIES):  # resumption: on the other replica, then either
            if read.ended or read.response_id is None:
                break
            where = self.addresses[other if attempt % 2 == 0 else replica]
            await self._read(f"{where}/events?resume={read.response_id}", read)
            if not read.ended:
                await asyncio.sleep(RETRY_PAUSE)
        outcome = self._outcome(read)
        if outcome.error is not None and plan.kind() == "whole" and self._in_outage(started):
            outcome = attrs.evolve(outcome, error=_RestartCut(str(outcome.error)))
        return outcome

    def _in_outage(self, started: float) -> bool:
        """Whether a response that started at ``started`` ran while Redis was away."""
        return self.outage is not None and started <= self.outage[1]

    async def _read(
        self, url: str, read: _Read, body: bytes | None = None, leave: int | None = None
    ) -> int:
        """POST ``body`` to (or GET) ``url`` and read its SSE events into ``read`` (after
        ``read.last_id``), ``leave`` of them at most; the status."""
        assert self.session is not None
        headers = {"Content-Type": "application/json"}
        if read.last_id is not None:
            headers["Last-Event-ID"] = read.last_id
        method = "POST" if body is not None else "GET"
        try:
            async with self.session.request(method, url, data=body, headers=headers) as answer:
                if answer.status != 200:
                    return answer.status
                read.response_id = read.response_id or answer.headers.get("x-response-id")
                async for event_id, data in _sse(answer.content):
                    read.events.append(orjson.loads(data))
                    read.last_id = event_id or read.last_id
                    if leave is not None and len(read.events) >= leave:
                        break
                return 200
        except (aiohttp.ClientError, asyncio.TimeoutError, ConnectionError):
            return 0

    def _outcome(self, read: _Read) -> soak.Outcome:
        if not read.events:
            return soak.Outcome(error=errors.ChatError("no stream could be read"))
        events = tuple(event_from_json(event) for event in read.events)
        last = read.events[-1]
        error: BaseException | None = None
        if last.get("type") != "RESPONSE_END":
            named = (last.get("error") or {}).get("type", "ChatError")
            cause = errors.ChatError if named in self.chat_errors else RuntimeError
            error = cause(f"{last.get('type')}: {last.get('text')}")
        text = events[-1].response.text if error is None and events[-1].response else None
        return soak.Outcome(events, text, error)


class _RestartCut(errors.ChatError):
    """A response that failed because Redis went away while it ran."""


async def _sse(content: aiohttp.StreamReader) -> AsyncIterator[tuple[str | None, bytes]]:
    """Each SSE event's ``id:`` and ``data:``."""
    event_id: str | None = None
    data: list[bytes] = []
    async for raw in content:
        line = raw.rstrip(b"\r\n")
        if not line:
            if data:
                yield event_id, b"\n".join(data)
            event_id, data = None, []
        elif line.startswith(b"id:"):
            event_id = line[3:].strip().decode()
        elif line.startswith(b"data:"):
            data.append(line[5:].lstrip(b" "))


def _judged_apart(cut: list[int]) -> Any:
    """:func:`soak.judge`, but a response the restart cut is counted apart (in ``cut``)."""

    def judged(plan: soak.Plan, outcome: soak.Outcome, tally: soak.Tally) -> None:
        if isinstance(outcome.error, _RestartCut):
            tally.responses += 1
            cut[0] += 1
            if len(tally.examples) < 20:
                tally.examples.append(f"cut: #{plan.number} {plan.prompt!r}: {outcome.error}")
            return
        soak.judge(plan, outcome, tally)

    return judged


def main(responses: int, concurrency: int = 50, seed: int = 1) -> dict[str, Any]:
    """Run the soak through the two replicas; print its figures and return them."""
    redis = RedisServer(persistent=True).start()
    provider = DevServer.run_in_thread()
    upstream = f"{provider.url}/v1/chat/completions"
    tally, cut = soak.Tally(), [0]
    try:
        with contextlib.ExitStack() as stack:
            replicas = {
                kind: stack.enter_context(
                    gateway_process(
                        "--url", upstream, "--model", "told:a", "--redis", redis.url, *options
                    )
                )
                for kind, options in REPLICAS.items()
            }
            client = GatewaySoak({kind: gateway.url for kind, gateway in replicas.items()})
            pids = {kind: gateway.process.pid for kind, gateway in replicas.items()}
            print(
                f"{responses} responses through two gateways (a fallback chain and a hedge) "
                f"sharing Redis, {concurrency} at a time, seed {seed}; Redis restarted at "
                f"{responses // 2}"
            )
            print(soak.HEADER + "  gateways: RSS MiB, threads, fds")
            asyncio.run(_soak(client, responses, concurrency, seed, redis, tally, cut, pids))
            logs = {kind: gateway.log() for kind, gateway in replicas.items()}
            away = client.outage[1] - client.outage[0] if client.outage else 0.0
    finally:
        provider.close()
        redis.close()
    print(
        f"{tally.succeeded} answered, {tally.failed} failed, {tally.cancelled} left; "
        f"{cut[0]} cut by the Redis restart (Redis answered again {away:.1f} s after it was "
        "killed)"
    )
    found = [traceback for log in logs.values() for traceback in _tracebacks(log)]
    raised = Counter(error for error, _whole in found)
    tracebacks = sum(raised.values())
    print(
        "the gateways logged "
        + ", ".join(f"{len(log.splitlines())} lines ({kind})" for kind, log in logs.items())
        + f"; {tracebacks} tracebacks"
    )
    for error, times in raised.most_common():
        print(f"  {times} x {error}; the first:")
        whole = next(whole for raised, whole in found if raised == error)
        print(textwrap.indent(whole, "    "))
    for example in tally.examples:
        print("  " + example)
    figures = {**tally.figures(), "cut_by_restart": cut[0], "redis_away_s": away}
    return {**figures, "gateway_tracebacks": tracebacks}


def _tracebacks(log: str) -> list[tuple[str, str]]:
    """Each traceback in a gateway's ``log``: the exception line that ends it, and the
    whole of it with the log line before it."""
    found: list[tuple[str, str]] = []
    lines = log.splitlines()
    start = None
    for number, line in enumerate(lines):
        if line.startswith("Traceback (most recent call last)"):
            start = number if start is None else start
        elif start is not None and line and not line.startswith((" ", "During", "The above")):
            found.append((line[:200], "\n".join(lines[max(start - 1, 0) : number + 1])))
            start = None
    return found


async def _soak(
    client: GatewaySoak,
    responses: int,
    concurrency: int,
    seed: int,
    redis: RedisServer,
    tally: soak.Tally,
    cut: list[int],
    pids: dict[str, int],
) -> None:
    timeout = aiohttp.ClientTimeout(total=soak.HANG_AFTER, sock_read=30)
    connector = aiohttp.TCPConnector(limit=concurrency * 2)
    async with aiohttp.ClientSession(timeout=timeout, connector=connector) as session:
        client.session = session

        def report(seconds: float, cpu: float) -> None:
            tasks = len(asyncio.all_tasks()) - 1
            line = soak.progress_line(tally, seconds, cpu, 0, tasks, threading.active_count())
            gateways = "; ".join(
                f"{figures.get('rss_mib', 0):.0f} {figures.get('threads', 0):.0f} "
                f"{figures.get('fds', 0):.0f}"
                for figures in (process_figures(pid) for pid in pids.values())
            )
            print(f"{line}  {gateways}", flush=True)

        async def restart() -> None:
            while tally.responses < responses // 2:
                await asyncio.sleep(0.05)
            client.outage = (time.monotonic(), float("inf"))
            redis.stop()
            await asyncio.sleep(RESTART_PAUSE)
            await asyncio.to_thread(redis.start)
            client.outage = (client.outage[0], time.monotonic())

        def plans() -> Any:
            for number in range(responses):
                replica = "fallback" if number % 2 else "hedge"
                drawn = soak.draw(number, seed, FAULTS)
                yield attrs.evolve(drawn, shape=SHAPES[replica], way="http", cancel=None)

        restarting = asyncio.ensure_future(restart())
        try:
            await soak.drive(plans(), client.run, tally, concurrency, report, _judged_apart(cut))
        finally:
            restarting.cancel()
