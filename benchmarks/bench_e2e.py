"""End to end over loopback: the embedded provider in one process, a client in another.

The provider (``python -m solon_events.devserver``) streams its ``slow:N:0`` scenario: an
OpenAI Chat Completions answer of N text deltas, one socket write each. Each client runs
in a process of its own, so that its CPU time and peak RSS are its alone:

- ``astream``: ``ChatModel.prompt(...).astream()`` on the client's loop;
- ``stream``: ``ChatModel.prompt(...).stream().subscribe(...)`` (events on the I/O thread);
- ``AsyncOpenAI``: the openai SDK's ``chat.completions.create(stream=True)`` (bench extra);
- ``aiohttp``: bare aiohttp reads of the same responses, nothing decoded: the floor that
  any client on aiohttp pays per frame (a socket read and a task switch for each frame
  that arrives alone), so that what the library adds above it can be told apart;
- the same three on uvloop (``KIND+uvloop``; the ``uvloop`` extra), when it is installed.

Our clients run with ChatModel's default time budgets (60 s to the first frame and between
frames), as a user's would.

Figures: wall time, time to the first text (p50/p99 over the streams), the client's CPU
time and CPU per frame (against ``replay()`` of the same bytes in this process), peak RSS.
Each client process first reads a short stream, untimed, so that first-use costs (imports,
lazily built tables) are left out. With one stream of 2,000 frames sent back to back, how
many frames each socket read gets depends on how fast the two processes run at that moment,
which moves the CPU per frame of every client (bare aiohttp's too) by up to 3x run to run.

The added latency, from a frame's arrival on the socket to its event in the subscriber, is
measured on runs of its own (one stream of 2,000 frames, one every millisecond so that each
arrives alone): aiohttp's protocol (``ResponseHandler.data_received``, called with the bytes
each socket read gave, on either loop) is wrapped to note when each frame's bytes came off
the socket, and each text delta is timed from there to its event in the subscriber (for
bare aiohttp reads: to the chunk in the reading task, the floor of any client on aiohttp).
The first 200 frames are a warm-up, left out; the percentiles are over the other 1,800.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import resource
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .bench_dialects import replay_once, split_and_decode

KINDS = ("astream", "stream", "aiohttp", "AsyncOpenAI")
UVLOOP = "+uvloop"
"""A kind's suffix: the client runs on a uvloop loop (astream, aiohttp: the caller's loop;
stream: ``ChatModel(io_loop="uvloop")``)."""
UVLOOP_KINDS = tuple(kind + UVLOOP for kind in ("astream", "stream", "aiohttp"))
LATENCY_TARGET_US = 100.0


@contextlib.contextmanager
def devserver() -> Iterator[str]:
    """The embedded provider in a process of its own; its base URL."""
    process = subprocess.Popen(
        [sys.executable, "-m", "solon_events.devserver", "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        found = re.search(r"http://\S+", first)
        if not found:
            raise RuntimeError(f"the devserver did not start: {first!r}")
        yield found.group(0)
    finally:
        process.terminate()
        process.wait(10)


def _peak_rss_mib() -> float:
    """This process's peak resident memory: VmHWM (ru_maxrss outlives exec on Linux, so a
    child started by a big parent would report the parent's)."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


# -- inside a client process -----------------------------------------------------------------


LATENCY_FRAMES = 2_000
LATENCY_WARMUP = 200
"""The latency runs' frames (500 with ``quick``), and how many of the first are left out as
a warm-up."""
_TEXT = re.compile(rb'"content":"(\d+) "')


class _ArrivalProbe:
    """When each frame's bytes came off the socket, and when its text delta reached the
    subscriber (the wall clock and the thread's CPU clock: one thread does both): aiohttp's
    client protocol is wrapped to note the time of every read (the bytes are searched for
    the frames' texts only after the run)."""

    def __init__(self, frames: int) -> None:
        from aiohttp.client_proto import ResponseHandler

        self.frames = frames
        self.reads: list[tuple[float, float, bytes]] = []
        self.seen: dict[int, tuple[float, float]] = {}
        reads = self.reads
        original = ResponseHandler.data_received

        def data_received(protocol: Any, data: bytes) -> None:
            reads.append((time.perf_counter(), time.thread_time(), data))
            original(protocol, data)

        ResponseHandler.data_received = data_received  # type: ignore[method-assign]

    def delivered(self, at: float, number: int) -> None:
        """The subscriber had frame ``number``'s text delta at ``at``."""
        self.seen[number] = (at, time.thread_time())

    def latencies(self) -> list[tuple[float, float]]:
        """Seconds from socket to subscriber, wall and thread CPU time, of each frame after
        the warm-up."""
        arrived: dict[int, tuple[float, float]] = {}
        for at, cpu, data in self.reads:
            for number in _TEXT.findall(data):
                arrived.setdefault(int(number), (at, cpu))
        return [
            (self.seen[n][0] - arrived[n][0], self.seen[n][1] - arrived[n][1])
            for n in range(LATENCY_WARMUP, self.frames)
            if n in self.seen and n in arrived
        ]


def _model(url: str, frames: int, interval: float, streams: int, kind: str = "") -> Any:
    from solon_events import ChatModel

    endpoint = f"{url}/v1/chat/completions"
    name = f"slow:{frames}:{interval:g}"
    io_loop = "uvloop" if kind.endswith(UVLOOP) else "asyncio"
    return ChatModel(endpoint, name, api_key="x", connection_limit=streams, io_loop=io_loop)


def _io_thread_cpu(model: Any) -> float:
    """CPU seconds the model's I/O thread has used (its whole life: one model per run)."""

    async def thread_time() -> float:
        return time.thread_time()

    return float(model._io.run(thread_time()))  # the model's private I/O thread


async def _astream(model: Any, probe: _ArrivalProbe | None) -> dict:
    from solon_events import ChatEventType

    start = time.perf_counter()
    first = None
    count = 0
    async for event in model.prompt("hi").astream():
        if event.type is ChatEventType.TEXT_DELTA:
            now = time.perf_counter()
            if first is None:
                first = now - start
            count += 1
            if probe is not None:
                probe.delivered(now, int(event.text))
    return {"ttfe": first, "frames": count}


def _stream(model: Any, probe: _ArrivalProbe | None) -> Any:
    from solon_events import ChatEventType

    start = time.perf_counter()
    result: dict[str, Any] = {"ttfe": None, "frames": 0}
    done = threading.Event()

    def on_next(event: Any) -> None:
        if event.type is ChatEventType.TEXT_DELTA:
            now = time.perf_counter()
            if result["ttfe"] is None:
                result["ttfe"] = now - start
            result["frames"] += 1
            if probe is not None:
                probe.delivered(now, int(event.text))

    def on_error(error: Exception) -> None:
        result["error"] = repr(error)
        done.set()

    model.prompt("hi").stream().subscribe(on_next, on_error, done.set)
    return result, done


async def _openai(client: Any, frames: int, interval: float) -> dict:
    start = time.perf_counter()
    first = None
    count = 0
    stream = await client.chat.completions.create(
        model=f"slow:{frames}:{interval:g}",
        messages=[{"role": "user", "content": "hi"}],
        stream=True,
    )
    async for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            if first is None:
                first = time.perf_counter() - start
            count += 1
    return {"ttfe": first, "frames": count}


async def _bare(
    session: Any, url: str, frames: int, interval: float, probe: _ArrivalProbe | None
) -> dict:
    body = {"model": f"slow:{frames}:{interval:g}", "stream": True,
            "messages": [{"role": "user", "content": "hi"}]}  # fmt: skip
    start = time.perf_counter()
    first = None
    count = 0
    async with session.post(f"{url}/v1/chat/completions", json=body) as response:
        async for chunk in response.content.iter_any():
            now = time.perf_counter()
            if first is None:
                first = now - start
            count += chunk.count(b"\n\n")
            if probe is not None:
                for number in _TEXT.findall(chunk):
                    probe.delivered(now, int(number))
    # the first frame, the finish, the usage and [DONE] carry no text
    return {"ttfe": first, "frames": max(count - 4, 0)}


async def _clients(
    kind: str, url: str, streams: int, frames: int, interval: float, probe: _ArrivalProbe | None
) -> tuple[list[dict], float | None]:
    """``streams`` concurrent streams of ``frames`` frames read by clients of ``kind``: each
    stream's figures, and the CPU seconds of the model's I/O thread (None: not used)."""
    io_cpu = None
    base = kind.removesuffix(UVLOOP)
    if kind == "AsyncOpenAI":
        import httpx
        import openai

        limits = httpx.Limits(max_connections=streams, max_keepalive_connections=streams)
        client = openai.AsyncOpenAI(
            api_key="x",
            base_url=f"{url}/v1",
            http_client=httpx.AsyncClient(limits=limits, timeout=None),
        )
        results = await asyncio.gather(*(_openai(client, frames, interval) for _ in range(streams)))
        await client.close()
    elif base == "aiohttp":
        import aiohttp

        connector = aiohttp.TCPConnector(limit=streams)
        async with aiohttp.ClientSession(connector=connector) as session:
            results = await asyncio.gather(
                *(_bare(session, url, frames, interval, probe) for _ in range(streams))
            )
    elif base == "astream":
        model = _model(url, frames, interval, streams)
        results = await asyncio.gather(*(_astream(model, probe) for _ in range(streams)))
        io_cpu = _io_thread_cpu(model) if model._io.started else None  # astream: never used
        model.close()
    else:
        model = _model(url, frames, interval, streams, kind)
        pending = [_stream(model, probe) for _ in range(streams)]
        for _result, done in pending:
            await asyncio.get_running_loop().run_in_executor(None, done.wait)
        results = [result for result, _done in pending]
        io_cpu = _io_thread_cpu(model)
        model.close()
    return results, io_cpu


WARMUP_FRAMES = 20
"""Each client process first reads one stream of this many frames, untimed, so that the
timed run pays no first-use costs (imports, lazily built tables, the executor's thread)."""


async def _run_client(kind: str, url: str, streams: int, frames: int, interval: float) -> dict:
    probe = _ArrivalProbe(frames) if interval and kind != "AsyncOpenAI" else None
    await _clients(kind, url, 1, WARMUP_FRAMES, interval, None)
    cpu, wall = time.process_time(), time.perf_counter()
    results, io_cpu = await _clients(kind, url, streams, frames, interval, probe)
    wall = time.perf_counter() - wall
    cpu = time.process_time() - cpu
    received = sum(r["frames"] for r in results)
    errors = [r["error"] for r in results if "error" in r]
    firsts = [r["ttfe"] for r in results if r["ttfe"] is not None]
    latencies = probe.latencies() if probe is not None else []
    walls = [wall for wall, _cpu in latencies]
    p99 = _percentile(walls, 0.99)
    slowest = [(wall, cpu) for wall, cpu in latencies if wall >= p99]
    return {
        "kind": kind,
        "streams": streams,
        "frames": frames,
        "received": received,
        "errors": errors[:3],
        "wall_s": wall,
        "ttfe_p50_ms": _percentile(firsts, 0.5) * 1e3,
        "ttfe_p99_ms": _percentile(firsts, 0.99) * 1e3,
        "cpu_s": cpu,
        "cpu_us_per_frame": cpu * 1e6 / max(received, 1),
        "io_thread_us_per_frame": io_cpu * 1e6 / max(received, 1) if io_cpu else None,
        "peak_rss_mib": _peak_rss_mib(),
        "latency_frames": len(latencies),
        "latency_p50_us": _percentile(walls, 0.5) * 1e6 if walls else None,
        "latency_p99_us": p99 * 1e6 if walls else None,
        # thread CPU time over wall time across the slowest 1 %: ~1 when they ran all along
        # (no wait, no preemption the kernel saw), the same code running slower
        "latency_slowest_cpu_share": (
            sum(cpu for _, cpu in slowest) / sum(wall for wall, _ in slowest) if slowest else None
        ),
    }


CATEGORIES = (
    ("solon_events/sse.py", "SSE decoding"),
    ("solon_events/payloads.py", "SSE decoding"),
    ("orjson", "JSON decoding"),
    ("solon_events/transport.py", "transport and response reader"),
    ("solon_events/stream_reader.py", "transport and response reader"),
    ("solon_events/model.py", "astream and stream edges (model.py)"),
    ("solon_events/tool_loop.py", "step driver (tool_loop.py)"),
    ("solon_events/", "pipeline (parse, dialect, respond)"),
    ("reactivex/", "Rx plumbing (observers)"),
    ("aiohttp/", "aiohttp (socket reads, HTTP parsing)"),
    ("_socket.socket' objects", "aiohttp (socket reads, HTTP parsing)"),
    ("asyncio/queues.py", "asyncio.Queue"),
    ("call_soon_threadsafe", "thread hop (call_soon_threadsafe, self-pipe)"),
    ("_write_to_self", "thread hop (call_soon_threadsafe, self-pipe)"),
    ("asyncio/", "event loops (select, callbacks, task switches)"),
    ("selectors.py", "event loops (select, callbacks, task switches)"),
    ("epoll", "event loops (select, callbacks, task switches)"),
)
"""Where a profiled function's own time is counted: the first category whose key is in its
file name or (for built-ins) its name."""


def _category(filename: str, name: str) -> str:
    where = name if filename == "~" else filename
    return next((label for key, label in CATEGORIES if key in where), "other")


async def _profiled(url: str, streams: int, frames: int) -> dict[str, float]:
    """``astream()`` clients under cProfile on both threads: own time per category, in us
    per frame (the profiler's overhead included, the proportions are what tell)."""
    import cProfile
    import pstats

    model = _model(url, frames, 0.0, streams)
    # thread_time: each thread's own CPU, not the wall clock (which counts waits in select)
    io_profile = cProfile.Profile(time.thread_time)
    caller_profile = cProfile.Profile(time.thread_time)

    async def switch(on: bool) -> None:
        io_profile.enable() if on else io_profile.disable()

    model._io.run(switch(True))
    caller_profile.enable()
    results = await asyncio.gather(*(_astream(model, None) for _ in range(streams)))
    caller_profile.disable()
    model._io.run(switch(False))
    model.close()
    received = sum(r["frames"] for r in results)
    totals: dict[str, float] = {}
    for thread, profile in (("I/O thread", io_profile), ("caller", caller_profile)):
        stats: Any = pstats.Stats(profile).stats
        for (filename, _line, name), (_cc, _nc, own, _cum, _callers) in stats.items():
            key = f"{thread}: {_category(filename, name)}"
            totals[key] = totals.get(key, 0.0) + own * 1e6 / max(received, 1)
    return dict(sorted(totals.items(), key=lambda item: -item[1]))


def client_main(argv: list[str]) -> None:
    """``python -m benchmarks.bench_e2e KIND URL STREAMS FRAMES INTERVAL``: one client run,
    its figures printed as one JSON line (KIND ``profile``: where astream's time goes).
    ``python -m benchmarks.bench_e2e latency [--quick]``: the latency runs alone, printed."""
    if argv[:1] == ["latency"]:
        with devserver() as url:
            _print_latency(measure_latency(url, quick="--quick" in argv))
        return
    kind, url, streams, frames, interval = argv
    if kind == "profile":
        figures = asyncio.run(_profiled(url, int(streams), int(frames)))
    else:
        run = _run_client(kind, url, int(streams), int(frames), float(interval))
        if kind.endswith(UVLOOP) and not kind.startswith("stream"):
            import uvloop

            figures = uvloop.run(run)
        else:
            figures = asyncio.run(run)
    print(json.dumps(figures))


# -- the parent ------------------------------------------------------------------------------


def run_client(kind: str, url: str, streams: int, frames: int, interval: float = 0.0) -> dict:
    """One client run in a fresh process; its figures (or its error)."""
    command = [sys.executable, "-m", "benchmarks.bench_e2e", kind, url]
    command += [str(streams), str(frames), repr(interval)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    if done.returncode:
        tail = done.stderr.strip().splitlines()[-1:] or ["no output"]
        return {"kind": kind, "streams": streams, "frames": frames, "error": tail[0]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def replay_us_per_frame(url: str, frames: int) -> float:
    """CPU us per frame of ``replay()`` over the bytes the provider sends for one answer."""
    import urllib.request

    body = json.dumps(
        {"model": f"slow:{frames}:0", "messages": [{"role": "user", "content": "hi"}],
         "stream": True}
    ).encode()  # fmt: skip
    request = urllib.request.Request(
        f"{url}/v1/chat/completions", body, {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request) as response:
        payload = response.read()
    count = split_and_decode(payload)
    best = float("inf")
    for _ in range(5):
        start = time.process_time()
        replay_once(payload, "openai")
        best = min(best, time.process_time() - start)
    return best * 1e6 / count


def _kinds() -> tuple[str, ...]:
    """The client kinds to run: the uvloop ones too when uvloop is installed."""
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return KINDS
    return KINDS + UVLOOP_KINDS


def measure(quick: bool = False) -> dict[str, Any]:
    """Every client kind on one 2,000-frame answer and on many concurrent streams; the
    added latency; replay()'s cost per frame on the same bytes."""
    concurrent = (100, 200) if quick else (1_000, 200)
    runs: list[dict[str, Any]] = []
    kinds = _kinds()
    with devserver() as url:
        replay_cost = replay_us_per_frame(url, 2_000)
        for streams, frames in ((1, 2_000), concurrent):
            for kind in kinds:
                runs.append(run_client(kind, url, streams, frames))
        latency = measure_latency(url, quick)
        profile = run_client("profile", url, *concurrent)
    return {
        "replay_us_per_frame": replay_cost,
        "runs": runs,
        "latency": latency,
        "profile": profile,
    }


def measure_latency(url: str, quick: bool = False) -> list[dict[str, Any]]:
    """The latency runs against the provider at ``url``: bare aiohttp reads, then ours."""
    count = 500 if quick else LATENCY_FRAMES
    kinds = [kind for kind in _kinds() if kind.removesuffix(UVLOOP) in KINDS[:3]]
    kinds.sort(key=lambda kind: kind.removesuffix(UVLOOP) != "aiohttp")
    return [run_client(kind, url, 1, count, 0.001) for kind in kinds]


def _print_above_floor(runs: list[dict[str, Any]], replay_cost: float) -> None:
    """What each of our clients adds per frame above bare aiohttp reads of the same run,
    over many concurrent streams only: with one stream sent back to back, how many frames
    each socket read gets moves every client's CPU per frame by up to 3x run to run (see
    the module's docstring), more than the difference to tell apart."""
    print("  (one stream: not compared, its frames per socket read vary run to run)")
    bare = {
        (r["streams"], r["frames"], r["kind"].endswith(UVLOOP)): r
        for r in runs
        if r["kind"].removesuffix(UVLOOP) == "aiohttp"
    }
    for run in runs:
        kind = run["kind"]
        floor = bare.get((run["streams"], run["frames"], kind.endswith(UVLOOP)))
        if kind.removesuffix(UVLOOP) not in KINDS[:2] or "error" in run or run["streams"] == 1:
            continue
        if not floor or "error" in floor:
            continue
        above = run["cpu_us_per_frame"] - floor["cpu_us_per_frame"]
        run["above_bare_us_per_frame"] = above
        print(
            f"  {kind:<15}{run['streams']:>6,} streams: {above:>6.1f} us CPU per frame "
            f"above bare aiohttp reads{' (uvloop)' if kind.endswith(UVLOOP) else ''} = "
            f"{above / replay_cost:.1f}x replay()"
        )


def _print_latency(runs: list[dict[str, Any]]) -> None:
    """Socket read -> subscriber per client kind, and ours above bare aiohttp's on the same
    loop kind."""
    print(
        f"latency, socket read -> subscriber (target p99 < {LATENCY_TARGET_US:g} us), one "
        f"stream, frames 1 ms apart, the first {LATENCY_WARMUP} left out as a warm-up:"
    )
    floors = {
        run["kind"].endswith(UVLOOP): run
        for run in runs
        if run["kind"].removesuffix(UVLOOP) == "aiohttp" and run.get("latency_p50_us")
    }
    for run in runs:
        kind = run["kind"]
        if "error" in run or run.get("latency_p50_us") is None:
            print(f"  {kind:<11} failed: {run.get('error')}")
            continue
        where = {"aiohttp": "bare aiohttp reads (the floor)", "stream": "on_next (I/O thread)"}
        label = where.get(kind.removesuffix(UVLOOP), "astream()")
        label += " on uvloop" if kind.endswith(UVLOOP) else ""
        floor = floors.get(kind.endswith(UVLOOP))
        above = ""
        if floor is not None and floor is not run:
            p50 = run["latency_p50_us"] - floor["latency_p50_us"]
            p99 = run["latency_p99_us"] - floor["latency_p99_us"]
            above = f"  above the floor: p50 {p50:+6.1f} p99 {p99:+6.1f}"
        print(
            f"  {label:<42} p50 {run['latency_p50_us']:>6.1f} us  p99 "
            f"{run['latency_p99_us']:>6.1f} us  ({run['latency_frames']:,} frames; CPU/wall of "
            f"the slowest 1 %: {run['latency_slowest_cpu_share']:.2f}){above}"
        )


def main(quick: bool = False) -> dict[str, Any]:
    """Print the end-to-end tables; return their figures."""
    figures = measure(quick)
    replay_cost = figures["replay_us_per_frame"]
    print(f"replay() of the same bytes: {replay_cost:.2f} us CPU per frame")
    print(
        f"{'client':<16}{'streams':>8}{'frames':>8}{'wall s':>8}{'ttfe p50':>10}{'p99 ms':>8}"
        f"{'cpu s':>8}{'us/frame':>10}{'I/O thr':>8}{'x replay':>9}{'RSS MiB':>9}"
    )
    for run in figures["runs"]:
        head = f"{run['kind']:<16}{run['streams']:>8,}{run['frames']:>8,}"
        if "error" in run:
            print(f"{head}  failed: {run['error']}")
            continue
        print(
            f"{head}{run['wall_s']:>8.2f}{run['ttfe_p50_ms']:>10.1f}{run['ttfe_p99_ms']:>8.1f}"
            f"{run['cpu_s']:>8.2f}{run['cpu_us_per_frame']:>10.1f}"
            f"{run['io_thread_us_per_frame'] or float('nan'):>8.1f}"
            f"{run['cpu_us_per_frame'] / replay_cost:>9.1f}{run['peak_rss_mib']:>9.0f}"
            + (f"  ({len(run['errors'])}+ failed: {run['errors'][0]})" if run["errors"] else "")
        )
    _print_above_floor(figures["runs"], replay_cost)
    _print_latency(figures["latency"])
    profile = figures["profile"]
    if "error" in profile:
        print(f"profile failed: {profile['error']}")
        return figures
    streams, frames = (100, 200) if quick else (1_000, 200)
    print(
        f"where astream()'s CPU goes, {streams:,} streams x {frames} frames under cProfile "
        "(us per frame, profiler overhead included):"
    )
    for where, us in profile.items():
        if us >= 0.05:
            print(f"  {where:<62}{us:>7.2f}")
    return figures


if __name__ == "__main__":
    client_main(sys.argv[1:])
