"""One process's share of a load point: its requests sent on one event loop, each timed as
its events arrive (``ChatPrompt.astream()``, read in the sending task itself), with what
the process itself cost (CPU time, event loop lag).

A load point is planned the same way in every process (:func:`share`), so that ``N``
processes together send exactly the requests one process would: the rate's arrivals are
drawn once from the seed and dealt out in turn (process ``w`` sends arrivals ``w``,
``w + N``, ...), and a concurrency is split between them (``C // N`` each, one more for
the first ``C % N``), each taking the request numbers ``w``, ``w + N``, ... in order.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import attrs

from ..client.model import ChatModel
from ..event_model.errors import ChatError, ChatHttpError
from ..event_model.events import EVENT_TYPES
from ..event_model.results import Usage
from ..support.redaction import redact_url
from .load import Load, arrival_times
from .metrics import ClientStats, RequestRecord
from .prompts import BenchPrompt

__all__ = [
    "LAG_INTERVAL",
    "Endpoint",
    "PointRun",
    "Share",
    "error_kind",
    "run_share",
    "share",
]

LAG_INTERVAL = 0.01
"""How often, in seconds, the event loop's lag is sampled (a timer of this length, and how
late it fired)."""

_CONTENT = frozenset(
    {
        EVENT_TYPES.TEXT_DELTA,
        EVENT_TYPES.THINKING_DELTA,
        EVENT_TYPES.TOOL_CALL_ARGS_DELTA,
        EVENT_TYPES.REFUSAL_DELTA,
    }
)


@attrs.frozen
class Endpoint:
    """What is benchmarked: the endpoint ``url`` posted to, its ``dialect`` (``"auto"``:
    the one the URL's path names), the ``model`` name, and the ``api_key`` and extra
    ``headers`` sent (never shown: not in a repr, a result or its JSON)."""

    url: str
    model: str
    dialect: str = "auto"
    api_key: str | None = attrs.field(default=None, repr=False)
    headers: Mapping[str, str] = attrs.field(factory=dict, repr=False)

    def chat_model(self, timeout: float | None) -> ChatModel:
        """A ChatModel for the benchmark: no retry (a failure is counted, not hidden), no
        cap on its connections, ``timeout`` to the first frame and between frames."""
        return ChatModel(
            self.url,
            self.model,
            api_key=self.api_key,
            dialect=self.dialect,
            headers=self.headers or None,
            timeout=timeout,
            idle_timeout=timeout,
            max_retries=0,
            connection_limit=0,
        )

    def to_json(self) -> dict[str, Any]:
        """What the results' JSON says of the endpoint: its URL (user info and query values
        masked), dialect and model; no key, no header."""
        return {"url": redact_url(self.url), "dialect": self.dialect, "model": self.model}


@attrs.frozen
class Share:
    """What one of ``workers`` processes sends at a load point: the request numbers and,
    for a rate, their arrival times (``arrivals``: None for a concurrency, whose
    ``requests`` are sent ``concurrency`` at a time, until ``deadline`` when there is one)."""

    worker: int
    workers: int
    requests: Iterator[int] | Sequence[int]
    arrivals: Sequence[float] | None
    concurrency: int
    max_concurrency: int | None
    deadline: float | None


def share(
    load: Load,
    worker: int,
    workers: int,
    *,
    requests: int | None,
    duration: float | None,
    seed: int | str,
) -> Share:
    """Process ``worker``'s share of ``load`` (of ``workers`` processes): ``requests`` in
    all, or as many as fit in ``duration`` seconds (arrivals drawn until then; a
    concurrency starts none after it)."""
    if requests is None and duration is None:
        raise ValueError("a load point needs a request count or a duration")
    if load.rate is not None:
        times = arrival_times(load, seed, count=requests, until=duration)
        dealt = range(worker, len(times), workers)
        return Share(
            worker, workers, dealt, [times[i] for i in dealt], 0, load.max_concurrency, None
        )
    concurrency = int(load.concurrency or 1)
    active = min(workers, concurrency)
    mine = concurrency // active + (1 if worker < concurrency % active else 0)
    if worker >= active:
        return Share(worker, workers, (), None, 0, None, None)
    numbers: Iterator[int] | Sequence[int] = (
        range(worker, requests, active) if requests is not None else itertools.count(worker, active)
    )
    return Share(worker, workers, numbers, None, mine, None, duration)


@attrs.frozen
class PointRun:
    """What one process measured at a load point: its ``records`` (in request order) and
    its own ``client`` cost."""

    records: tuple[RequestRecord, ...]
    client: ClientStats


def error_kind(error: BaseException) -> str:
    """A failure's kind in the results: ``"http 429"`` for an HTTP status, else the
    exception's class name (``"ChatTimeoutError"``, ``"ProviderError"``, ...)."""
    if isinstance(error, ChatHttpError) and error.status:
        return f"http {error.status}"
    return type(error).__name__


class _Sender:
    """Sends one process's requests and times them."""

    def __init__(
        self,
        model: ChatModel,
        prompts: Sequence[BenchPrompt],
        options: Mapping[str, Any],
        worker: int,
        on_record: Callable[[RequestRecord], Any] | None,
    ) -> None:
        self.model = model
        self.prompts = prompts
        self.options = options
        self.worker = worker
        self.on_record = on_record
        self.records: list[RequestRecord] = []
        self.usages: dict[int, Usage] = {}
        self.t0 = time.perf_counter()

    def _prompt(self, index: int) -> Any:
        chosen = self.prompts[index % len(self.prompts)]
        prompt = self.model.prompt(chosen.messages)
        options = dict(self.options)
        if chosen.output_tokens is not None:
            options.setdefault("max_tokens", chosen.output_tokens)
        return prompt.options(**options) if options else prompt

    async def send(self, index: int, scheduled: float | None) -> None:
        frames = 0
        first_frame = 0.0

        def tap(_frame: object) -> None:
            nonlocal frames, first_frame
            if not frames:
                first_frame = time.perf_counter()
            frames += 1

        request = attrs.evolve(self._prompt(index), frame_tap=tap)
        deltas: list[float] = []
        first_reasoning = first_answer = None
        response = None
        failure: BaseException | None = None
        start = time.perf_counter()
        try:
            async for event in request.astream():
                kind = event.type
                if kind in _CONTENT:
                    if event.text:
                        now = time.perf_counter()
                        deltas.append(now)
                        if kind is EVENT_TYPES.TEXT_DELTA:
                            if first_answer is None:
                                first_answer = now
                        elif kind is EVENT_TYPES.THINKING_DELTA and first_reasoning is None:
                            first_reasoning = now
                elif kind is EVENT_TYPES.RESPONSE_END:
                    response = event.response
        except Exception as error:  # every failure is counted by its kind, none raised
            failure = error
        end = time.perf_counter()
        usage = _usage(response, failure)
        if usage is not None:
            self.usages[index] = usage
        record = RequestRecord(
            index=index,
            start=start - self.t0,
            scheduled=scheduled,
            ttfe=first_frame - start if frames else None,
            ttft=deltas[0] - start if deltas else None,
            first_reasoning=None if first_reasoning is None else first_reasoning - start,
            first_answer=None if first_answer is None else first_answer - start,
            e2e=end - start,
            itl=tuple(b - a for a, b in itertools.pairwise(deltas)),
            output_tokens=usage.completion_tokens if usage is not None else 0,
            output_tokens_estimated=bool(usage is not None and usage.estimated),
            input_tokens=usage.prompt_tokens if usage is not None else 0,
            frames=frames,
            error=None if failure is None else error_kind(failure),
            error_message=None if failure is None else _message(failure),
            worker=self.worker,
        )
        self.records.append(record)
        if self.on_record is not None:
            self.on_record(record)


def _usage(response: Any, failure: BaseException | None) -> Usage | None:
    if failure is not None:
        partial = getattr(failure, "partial_response", None)
        response = partial if partial is not None else response
    usage = getattr(response, "usage", None)
    return usage if isinstance(usage, Usage) else None


def _message(error: BaseException) -> str:
    # ChatErrors are redacted by the model; anything else is named by its type only.
    text = str(error) if isinstance(error, ChatError) else type(error).__name__
    return " ".join(text.split())[:500]


async def _watch_lag(samples: list[float], stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    while not stop.is_set():
        before = loop.time()
        await asyncio.sleep(LAG_INTERVAL)
        samples.append(max(0.0, loop.time() - before - LAG_INTERVAL))


async def _by_rate(sender: _Sender, mine: Share) -> None:
    gate = asyncio.Semaphore(mine.max_concurrency) if mine.max_concurrency else None
    running: set[asyncio.Task[None]] = set()

    async def gated(index: int, at: float) -> None:
        assert gate is not None
        async with gate:
            await sender.send(index, at)

    assert mine.arrivals is not None
    for index, at in zip(mine.requests, mine.arrivals):
        wait = sender.t0 + at - time.perf_counter()
        if wait > 0:
            await asyncio.sleep(wait)
        task = asyncio.create_task(gated(index, at) if gate else sender.send(index, at))
        running.add(task)
        task.add_done_callback(running.discard)
    if running:
        await asyncio.gather(*running)


async def _by_concurrency(sender: _Sender, mine: Share) -> None:
    numbers = iter(mine.requests)
    deadline = None if mine.deadline is None else sender.t0 + mine.deadline

    async def slot() -> None:
        for index in numbers:
            if deadline is not None and time.perf_counter() >= deadline:
                return
            await sender.send(index, None)

    await asyncio.gather(*(slot() for _ in range(mine.concurrency)))


async def run_share(
    model: ChatModel,
    prompts: Sequence[BenchPrompt],
    mine: Share,
    *,
    options: Mapping[str, Any] | None = None,
    on_record: Callable[[RequestRecord], Any] | None = None,
    start_at: float | None = None,
) -> PointRun:
    """Send ``mine`` (a process's share of a load point) with ``model``, prompts taken in
    turn from ``prompts`` by request number; ``on_record`` sees each request's record as it
    ends; ``start_at`` (a ``time.time()``) is when the point starts, for processes started
    together (default: now)."""
    if not prompts:
        raise ValueError("a benchmark needs at least one prompt")
    sender = _Sender(model, prompts, options or {}, mine.worker, on_record)
    if start_at is not None:
        await asyncio.sleep(max(0.0, start_at - time.time()))
    samples: list[float] = []
    stop = asyncio.Event()
    watcher = asyncio.create_task(_watch_lag(samples, stop))
    cpu = time.process_time()
    sender.t0 = time.perf_counter()
    try:
        if mine.arrivals is not None:
            await _by_rate(sender, mine)
        else:
            await _by_concurrency(sender, mine)
    finally:
        stop.set()
        wall = time.perf_counter() - sender.t0
        cpu = time.process_time() - cpu
        await watcher
    records = tuple(sorted(sender.records, key=lambda r: r.index))
    records = _priced(records, sender.usages, model)
    client = ClientStats(
        cpu_seconds=cpu,
        wall_seconds=wall,
        frames=sum(r.frames for r in records),
        loop_lag=tuple(samples),
        processes=1,
        peak_cpu_share=cpu / wall if wall > 0 else 0.0,
    )
    return PointRun(records, client)


def _priced(
    records: tuple[RequestRecord, ...], usages: Mapping[int, Usage], model: ChatModel
) -> tuple[RequestRecord, ...]:
    """``records`` with their cost, when the ``cost`` extra is installed and knows the
    model's price (priced after the point, so that pricing costs the client nothing while
    it measures)."""
    try:
        import genai_prices  # noqa: F401
    except ImportError:
        return records
    from ..event_model.pricing import price

    priced = []
    for record in records:
        usage = usages.get(record.index)
        cost = (
            price(usage, model.model, model.dialect.name, api_url=model.api_url) if usage else None
        )
        if cost is None or cost.total is None:
            return records  # one request not priced: the point has no cost
        priced.append(attrs.evolve(record, cost=float(cost.total)))
    return tuple(priced)
