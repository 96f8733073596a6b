"""``benchmark()``: run load points against an endpoint, in this process or spread over
worker processes, and gather their results.

Each load point starts with its warm-up requests (sent at the same load, not counted),
then sends its requests; a sweep runs its points one after the other. With ``workers``
above 1, each point runs in that many fresh processes (``python -m
solon_events.bench.worker``), started together once all have warmed up; their records
are merged, and every figure is computed again from the merged samples.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any

import attrs
import orjson

from ..support.loop_thread import IoLoop, loop_factory
from .load import Load
from .metrics import ClientStats, RequestRecord, Slo
from .prompts import BenchPrompt
from .results import BenchResult, PointResult
from .runner import Endpoint, PointRun, run_share, share

__all__ = [
    "KEY_VARIABLE",
    "BenchSettings",
    "Progress",
    "benchmark",
    "machine_busy",
    "run_point",
]

KEY_VARIABLE = "SOLON_EVENTS_BENCH_API_KEY"
"""The environment variable a worker process reads the endpoint's API key from (a key is
never put on a command line)."""

_HEADERS_VARIABLE = "SOLON_EVENTS_BENCH_HEADERS"

Progress = Callable[[int, int, int], Any]
"""Called as ``progress(point, completed, failed)`` as requests end: the point's number
(0, 1, ...) and its requests so far."""


@attrs.frozen
class BenchSettings:
    """How every load point runs: ``requests`` (or ``duration`` seconds), ``warmup``
    requests first, the ``seed`` of arrivals and prompts, the ``workers`` processes, each
    request's ``timeout`` (to the first frame and between frames), the provider
    ``options`` sent with every request, the ``slos`` of goodput, the event ``loop``
    (``"asyncio"`` or ``"uvloop"``), and the ``prompts`` (``prompts_label`` says where
    they came from)."""

    prompts: tuple[BenchPrompt, ...]
    requests: int | None = None
    duration: float | None = None
    warmup: int = 0
    seed: int = 0
    workers: int = 1
    timeout: float | None = 300.0
    options: Mapping[str, Any] = attrs.field(factory=dict)
    slos: tuple[Slo, ...] = ()
    loop: IoLoop = "asyncio"
    prompts_label: str = "given"

    def __attrs_post_init__(self) -> None:
        if not self.prompts:
            raise ValueError("a benchmark needs at least one prompt")
        if self.requests is None and self.duration is None:
            raise ValueError("a benchmark needs a request count or a duration")
        if self.requests is not None and self.requests < 1:
            raise ValueError("requests must be at least 1")
        if self.duration is not None and self.duration <= 0:
            raise ValueError("duration must be above 0")
        if self.warmup < 0 or self.workers < 1:
            raise ValueError("warmup must be >= 0 and workers >= 1")

    def to_json(self) -> dict[str, Any]:
        """The settings as the results' JSON writes them (the prompts by their label)."""
        return {
            "requests": self.requests,
            "duration": self.duration,
            "warmup": self.warmup,
            "seed": self.seed,
            "workers": self.workers,
            "timeout": self.timeout,
            "prompts": self.prompts_label,
            "options": dict(self.options),
            "slos": {slo.metric: slo.limit for slo in self.slos},
        }

    def job(self) -> dict[str, Any]:
        """The settings as a worker process reads them (the prompts themselves included)."""
        return {
            **attrs.asdict(self, recurse=False, filter=lambda a, _: a.name != "prompts"),
            "options": dict(self.options),
            "slos": [[slo.metric, slo.limit] for slo in self.slos],
            "prompts": [[list(p.messages), p.output_tokens, p.input_tokens] for p in self.prompts],
        }

    @classmethod
    def from_job(cls, job: Mapping[str, Any]) -> BenchSettings:
        """The settings :meth:`job` wrote."""
        values = dict(job)
        values["prompts"] = tuple(
            BenchPrompt(tuple(messages), output, tokens)
            for messages, output, tokens in job["prompts"]
        )
        values["slos"] = tuple(Slo(metric, limit) for metric, limit in job["slos"])
        return cls(**values)


def machine_busy() -> Callable[[], float | None]:
    """Start measuring how busy the machine's CPUs are; the returned function gives the
    busy share since (Linux's ``/proc/stat``; None elsewhere)."""
    before = _cpu_times()

    def since() -> float | None:
        after = _cpu_times()
        if before is None or after is None:
            return None
        total = sum(after) - sum(before)
        idle = (after[3] + after[4]) - (before[3] + before[4])
        return 1 - idle / total if total > 0 else None

    return since


def _cpu_times() -> list[int] | None:
    try:
        with open("/proc/stat", "rb") as stat:
            fields = stat.readline().split()
    except OSError:
        return None
    if len(fields) < 6 or fields[0] != b"cpu":
        return None
    return [int(x) for x in fields[1:9]]


async def _point_here(
    endpoint: Endpoint,
    settings: BenchSettings,
    load: Load,
    on_record: Callable[[RequestRecord], Any] | None,
) -> PointRun:
    async with endpoint.chat_model(settings.timeout) as model:
        if settings.warmup:
            warm = share(load, 0, 1, requests=settings.warmup, duration=None, seed="warmup")
            await run_share(model, settings.prompts, warm, options=settings.options)
        busy = machine_busy()
        mine = share(
            load, 0, 1, requests=settings.requests, duration=settings.duration, seed=settings.seed
        )
        run = await run_share(
            model, settings.prompts, mine, options=settings.options, on_record=on_record
        )
        return attrs.evolve(run, client=attrs.evolve(run.client, machine_busy=busy()))


async def _point_in_workers(
    endpoint: Endpoint,
    settings: BenchSettings,
    load: Load,
    progress: Callable[[bool], Any],
) -> PointRun:
    env = dict(os.environ)
    env.pop(KEY_VARIABLE, None)
    if endpoint.api_key:
        env[KEY_VARIABLE] = endpoint.api_key
    env[_HEADERS_VARIABLE] = orjson.dumps(dict(endpoint.headers)).decode()
    processes = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "solon_events.bench.worker",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env=env,
            limit=2**30,
        )
        for _ in range(settings.workers)
    ]
    try:
        for number, process in enumerate(processes):
            job = {
                "endpoint": {
                    "url": endpoint.url,
                    "model": endpoint.model,
                    "dialect": endpoint.dialect,
                },
                "settings": settings.job(),
                "load": load.to_json(),
                "worker": number,
            }
            _write(process, job)
        for process in processes:
            await _expect(process, "ready")
        start_at = time.time() + 0.05 * settings.workers
        busy = machine_busy()
        for process in processes:
            _write(process, {"start_at": start_at})
        runs = await asyncio.gather(*(_results(p, progress) for p in processes))
        machine = busy()
    finally:
        for process in processes:
            if process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
            await process.wait()
    records = tuple(sorted((r for run in runs for r in run.records), key=lambda r: r.index))
    client = runs[0].client
    for run in runs[1:]:
        client = client.merged(run.client)
    return PointRun(records, attrs.evolve(client, machine_busy=machine))


def _write(process: asyncio.subprocess.Process, message: Mapping[str, Any]) -> None:
    assert process.stdin is not None
    process.stdin.write(orjson.dumps(message) + b"\n")


async def _line(process: asyncio.subprocess.Process) -> dict[str, Any]:
    assert process.stdout is not None
    line = await process.stdout.readline()
    if not line:
        code = await process.wait()
        raise RuntimeError(f"a benchmark worker process ended early (exit status {code})")
    return orjson.loads(line)  # type: ignore[no-any-return]


async def _expect(process: asyncio.subprocess.Process, key: str) -> dict[str, Any]:
    message = await _line(process)
    if "error" in message:
        raise RuntimeError(f"a benchmark worker failed: {message['error']}")
    if key not in message:
        raise RuntimeError(f"a benchmark worker said {sorted(message)}, not {key!r}")
    return message


async def _results(
    process: asyncio.subprocess.Process, progress: Callable[[bool], Any]
) -> PointRun:
    while True:
        message = await _line(process)
        if "done" in message:
            progress(bool(message["done"]))
            continue
        if "error" in message:
            raise RuntimeError(f"a benchmark worker failed: {message['error']}")
        client = message["client"]
        return PointRun(
            tuple(RequestRecord.from_json(r) for r in message["records"]),
            ClientStats(
                cpu_seconds=client["cpu_seconds"],
                wall_seconds=client["wall_seconds"],
                frames=client["frames"],
                loop_lag=tuple(client["loop_lag"]),
                peak_cpu_share=client["peak_cpu_share"],
            ),
        )


def run_point(
    endpoint: Endpoint,
    settings: BenchSettings,
    load: Load,
    on_progress: Callable[[bool], Any] | None = None,
) -> PointRun:
    """Run one load point (its warm-up first) here or in ``settings.workers`` processes, on
    a loop of its own; ``on_progress(ok)`` is called as each request ends."""

    def progress(ok: bool) -> None:
        if on_progress is not None:
            on_progress(ok)

    def factory() -> Coroutine[Any, Any, PointRun]:
        if settings.workers > 1:
            return _point_in_workers(endpoint, settings, load, progress)
        return _point_here(endpoint, settings, load, lambda record: progress(record.ok))

    return _run(factory, settings.loop)


def _run(factory: Callable[[], Coroutine[Any, Any, PointRun]], kind: IoLoop) -> PointRun:
    """``factory()`` run to its end on a new loop of ``kind``: in this thread, or in a
    thread of its own when this one runs a loop already (a notebook's)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _run_here(factory, kind)
    outcome: list[Any] = []

    def target() -> None:
        try:
            outcome.append(_run_here(factory, kind))
        except BaseException as error:  # handed to the caller's thread
            outcome.append(error)

    thread = threading.Thread(target=target, name="solon-events-bench", daemon=True)
    thread.start()
    thread.join()
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    return outcome[0]  # type: ignore[no-any-return]


def _run_here(factory: Callable[[], Coroutine[Any, Any, PointRun]], kind: IoLoop) -> PointRun:
    loop = loop_factory(kind)()
    try:
        asyncio.set_event_loop(loop)
        return loop.run_until_complete(factory())
    finally:
        try:
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            asyncio.set_event_loop(None)
            loop.close()


def benchmark(
    endpoint: Endpoint,
    prompts: Sequence[str | BenchPrompt],
    loads: Sequence[Load] | Load,
    *,
    requests: int | None = None,
    duration: float | None = None,
    warmup: int = 0,
    seed: int = 0,
    slos: Sequence[Slo | str] = (),
    workers: int = 1,
    timeout: float | None = 300.0,
    options: Mapping[str, Any] | None = None,
    loop: IoLoop = "asyncio",
    on_progress: Progress | None = None,
    prompts_label: str | None = None,
) -> BenchResult:
    """Benchmark ``endpoint`` at each of ``loads`` in turn and return the results.

    ``prompts`` are taken in turn, by request number (strings are user messages; see
    :func:`~solon_events.bench.prompts.synthetic_prompts` and
    :func:`~solon_events.bench.prompts.read_dataset`); each point sends ``requests``
    requests, or as many as ``duration`` seconds allow, after ``warmup`` requests that are
    not counted; ``seed`` draws the arrivals. ``slos`` (``Slo`` or ``"ttft:500"``, in
    milliseconds) count the goodput; ``workers`` processes share each point's load;
    ``timeout`` bounds each request's wait for its first frame and between frames;
    ``options`` go with every request (``temperature``, ...: a prompt's output tokens are
    sent as ``max_tokens``). Blocks until done; in a notebook it runs on a thread of its
    own. A request's failure is counted, never raised.
    """
    settings = BenchSettings(
        prompts=tuple(p if isinstance(p, BenchPrompt) else BenchPrompt.of(p) for p in prompts),
        requests=requests,
        duration=duration,
        warmup=warmup,
        seed=seed,
        workers=workers,
        timeout=timeout,
        options=dict(options or {}),
        slos=tuple(s if isinstance(s, Slo) else Slo.parse(s) for s in slos),
        loop=loop,
        prompts_label=prompts_label or f"{len(prompts)} given",
    )
    points = []
    for number, load in enumerate([loads] if isinstance(loads, Load) else loads):
        counts = [0, 0]

        def progress(ok: bool, number: int = number, counts: list[int] = counts) -> None:
            counts[0 if ok else 1] += 1
            if on_progress is not None:
                on_progress(number, counts[0], counts[1])

        run = run_point(endpoint, settings, load, progress)
        points.append(PointResult(load, run.records, run.client, settings.slos))
    return BenchResult(endpoint.to_json(), settings.to_json(), tuple(points))


def worker_main(stdin: Any = None, stdout: Any = None) -> int:
    """A worker process (``python -m solon_events.bench.worker``): reads its job as a JSON
    line, warms up, says it is ready, waits for the start time, sends its share of the
    load, and writes a line per request that ends and its records at the end."""
    stdin = stdin or sys.stdin.buffer
    stdout = stdout or sys.stdout.buffer

    def say(message: Mapping[str, Any]) -> None:
        stdout.write(orjson.dumps(message) + b"\n")
        stdout.flush()

    try:
        job = orjson.loads(stdin.readline())
        spec = job["endpoint"]
        endpoint = Endpoint(
            spec["url"],
            spec["model"],
            spec["dialect"],
            api_key=os.environ.get(KEY_VARIABLE) or None,
            headers=orjson.loads(os.environ.get(_HEADERS_VARIABLE) or "{}"),
        )
        settings = BenchSettings.from_job(job["settings"])
        load = Load.from_json(job["load"])
        worker, workers = job["worker"], settings.workers

        async def main() -> PointRun:
            async with endpoint.chat_model(settings.timeout) as model:
                if settings.warmup:
                    warm = share(
                        load,
                        worker,
                        workers,
                        requests=settings.warmup,
                        duration=None,
                        seed="warmup",
                    )
                    await run_share(model, settings.prompts, warm, options=settings.options)
                say({"ready": True})
                start_at = orjson.loads(await asyncio.to_thread(stdin.readline))["start_at"]
                mine = share(
                    load,
                    worker,
                    workers,
                    requests=settings.requests,
                    duration=settings.duration,
                    seed=settings.seed,
                )
                return await run_share(
                    model,
                    settings.prompts,
                    mine,
                    options=settings.options,
                    on_record=lambda record: say({"done": record.ok}),
                    start_at=start_at,
                )

        run = _run_here(main, settings.loop)
    except Exception as error:  # said to the parent, which raises it
        say({"error": f"{type(error).__name__}: {error}"})
        return 1
    client = run.client
    say(
        {
            "records": [record.to_json() for record in run.records],
            "client": {
                "cpu_seconds": client.cpu_seconds,
                "wall_seconds": client.wall_seconds,
                "frames": client.frames,
                "loop_lag": list(client.loop_lag),
                "peak_cpu_share": client.peak_cpu_share,
            },
        }
    )
    return 0
