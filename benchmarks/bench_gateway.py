"""The translating gateway's overhead over loopback, beside LiteLLM's proxy in the same run.

Every party is a process of its own, so that each one's CPU time is its alone:

- the upstream: the embedded provider (``slow:N:interval`` answers: N text deltas, one
  socket write each), in the dialect of the row (``openai``: Chat Completions, the
  client's own format; ``anthropic``: Messages, which the proxies translate), with a
  probe that notes when each delta is written to the socket;
- the proxies: ``solon-events serve --upstream DIALECT:URL --model SCENARIO`` (one per
  scenario: the gateway's model is its own), and LiteLLM's proxy (``litellm --config``)
  with the same upstreams in its model list, when it can be started (else the reason is
  printed). The ``bench`` extra has ``litellm``; its proxy needs
  ``pip install 'litellm[proxy]'`` besides, which the extra leaves out because it pins
  ``rich<14`` (this package's terminal tests read rich 14's live stack): without it here
  (nor ``--litellm PATH``), the proxy runs from a virtual environment of its own,
  ``.venv-litellm`` at the repository's root, made when missing (:func:`litellm_command`);
- a bytes-only TCP relay (``python -m benchmarks.bench_gateway relay HOST PORT``: asyncio
  protocols passing each read on as it comes, no HTTP) in front of the Chat Completions
  upstream: the floor of any proxy's hop on this machine (a process of its own, one more
  read and write per frame);
- the clients, in processes of their own, all speaking Chat Completions: bare aiohttp
  reads (nothing decoded) and the ``openai`` SDK (``AsyncOpenAI``, streaming); each asks
  the upstream directly (Chat Completions rows only: the floor) and through each proxy.

Figures, per (proxy, upstream dialect):

- added latency per frame: from the upstream's socket write of a delta to its arrival in
  the client (aiohttp: off the socket; the SDK: the chunk it yields), one stream of
  frames 1 ms apart (the first 10 % left out as a warm-up), p50 and p99, minus the same
  client's direct figures (the loopback and the client's own cost); every process reads
  the same monotonic clock;
- added time to the first token per request: many short answers one after another (after
  100 untimed ones), p50 and p99, minus the direct ones (LiteLLM publishes its own
  per-request overhead so);
- the proxy's CPU per frame: its process tree's CPU time (``/proc``) over concurrent
  streams read by bare aiohttp, divided by the frames delivered, and over the latency
  run's lone stream (each frame read and written on its own, as a frame 1 ms after the
  last is: the CPU that stands between a frame's arrival and its departure).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Optional

from .bench_e2e import _ArrivalProbe, _percentile
from .local_servers import free_port, free_port_pair
from .machine import measured, print_run_heading

UPSTREAMS = ("openai", "anthropic")
ROUTES = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages"}
MASTER_KEY = "sk-bench-0123456789abcdef0123456789"
"""The LiteLLM proxy's master key (it refuses to start without one)."""
_TTFT_WARMUP = 100
_DELTA = re.compile(rb'"(?:content|text)":"(\d+) "')


def _scenarios(quick: bool) -> dict[str, str]:
    """Each run's scenario (the upstream's model name)."""
    frames = 300 if quick else 1_000
    return {
        "latency": f"slow:{frames}:0.001",
        "cpu": "slow:500:0",
        "ttft": "slow:3:0",
    }


def _runs(quick: bool) -> dict[str, int]:
    return {"cpu_streams": 20, "ttft_requests": 30 if quick else 100}


# -- the upstream process: the embedded provider, its deltas' write times noted ---------------


def upstream_main(port: int) -> None:
    """``python -m benchmarks.bench_gateway upstream PORT``: the embedded provider on PORT,
    and on PORT+1 ``GET /writes``: ``{delta number: perf_counter of its socket write}``
    since the last call (of the last stream that wrote it)."""
    from aiohttp import web

    from solon_events.devserver import DevServer

    writes: dict[int, float] = {}
    original = web.StreamResponse.write

    async def write(self: web.StreamResponse, data: Any) -> None:
        at = time.perf_counter()
        for number in _DELTA.findall(bytes(data)):
            writes[int(number)] = at  # the last stream's: the client's first is untimed
        await original(self, data)

    web.StreamResponse.write = write  # type: ignore[method-assign]

    async def taken(_request: web.Request) -> web.Response:
        found = dict(writes)
        writes.clear()
        return web.json_response(found)

    async def run() -> None:
        probe = web.Application()
        probe.router.add_get("/writes", taken)
        runner = web.AppRunner(probe, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port + 1).start()
        async with DevServer(port=port) as server:
            print(server.url, flush=True)
            await asyncio.Event().wait()

    asyncio.run(run())


def relay_main(host: str, port: int) -> None:
    """``python -m benchmarks.bench_gateway relay HOST PORT``: a bytes-only TCP relay to
    HOST:PORT on a free port of 127.0.0.1 (printed): each client connection gets one to
    the upstream, and every read on either side is written on the other as it comes."""

    class Pipe(asyncio.Protocol):
        def __init__(self) -> None:
            self.transport: asyncio.Transport | None = None
            self.peer: Pipe | None = None
            self.waiting: list[bytes] = []
            self.connecting: asyncio.Future[None] | None = None

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            assert isinstance(transport, asyncio.Transport)
            self.transport = transport
            transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def data_received(self, data: bytes) -> None:
            peer = self.peer
            if peer is not None and peer.transport is not None:
                peer.transport.write(data)
            else:
                self.waiting.append(data)

        def connection_lost(self, exc: BaseException | None) -> None:
            if self.peer is not None and self.peer.transport is not None:
                self.peer.transport.close()

    class Front(Pipe):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(transport)
            self.connecting = asyncio.ensure_future(self.connect())

        async def connect(self) -> None:
            loop = asyncio.get_running_loop()
            _, back = await loop.create_connection(Pipe, host, port)
            back.peer, self.peer = self, back
            assert back.transport is not None
            for data in self.waiting:
                back.transport.write(data)
            self.waiting.clear()

    async def run() -> None:
        server = await asyncio.get_running_loop().create_server(Front, "127.0.0.1", 0)
        print(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}", flush=True)
        await asyncio.Event().wait()

    asyncio.run(run())


# -- the clients ----------------------------------------------------------------------------


def _body(model: str, stream: bool = True) -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": "hi"}], "stream": stream}


async def _aiohttp_latency(url: str, model: str, frames: int) -> list[tuple[int, float]]:
    import aiohttp

    probe = _ArrivalProbe(frames)
    headers = {"Authorization": f"Bearer {MASTER_KEY}"}
    async with aiohttp.ClientSession() as session:
        for _ in range(2):  # the first, untimed: first-use costs
            probe.reads.clear()
            async with session.post(url, json=_body(model), headers=headers) as response:
                async for _chunk in response.content.iter_any():
                    pass
    arrived: dict[int, float] = {}
    for at, _cpu, data in probe.reads:
        for number in _DELTA.findall(data):
            arrived.setdefault(int(number), at)
    return sorted(arrived.items())


async def _openai_latency(url: str, model: str, frames: int) -> list[tuple[int, float]]:
    import openai

    client = openai.AsyncOpenAI(api_key=MASTER_KEY, base_url=url.removesuffix("/chat/completions"))
    seen: dict[int, float] = {}
    for _ in range(2):
        seen.clear()
        stream = await client.chat.completions.create(
            model=model, messages=[{"role": "user", "content": "hi"}], stream=True
        )
        async for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                seen.setdefault(int(chunk.choices[0].delta.content), time.perf_counter())
    await client.close()
    return sorted(seen.items())


async def _aiohttp_cpu(url: str, model: str, streams: int) -> int:
    import aiohttp

    headers = {"Authorization": f"Bearer {MASTER_KEY}"}
    connector = aiohttp.TCPConnector(limit=streams)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def one() -> int:
            count = 0
            async with session.post(url, json=_body(model), headers=headers) as response:
                async for chunk in response.content.iter_any():
                    count += len(_DELTA.findall(chunk))
            return count

        return sum(await asyncio.gather(*(one() for _ in range(streams))))


async def _aiohttp_ttft(url: str, model: str, count: int) -> list[float]:
    import aiohttp

    headers = {"Authorization": f"Bearer {MASTER_KEY}"}
    firsts = []
    async with aiohttp.ClientSession() as session:
        # untimed: a fresh proxy's first requests (lazy imports, connection pools, its first
        # full garbage collection, which came about the 50th in our gateway: 20 ms)
        for number in range(count + _TTFT_WARMUP):
            start = time.perf_counter()
            first = None
            async with session.post(url, json=_body(model), headers=headers) as response:
                async for chunk in response.content.iter_any():
                    if first is None and _DELTA.search(chunk):
                        first = time.perf_counter() - start
            if number >= _TTFT_WARMUP and first is not None:
                firsts.append(first)
    return firsts


def client_main(argv: list[str]) -> None:
    """``python -m benchmarks.bench_gateway client RUN URL MODEL N``: one client run
    (``aiohttp-latency``/``openai-latency`` N frames, ``cpu`` N streams, ``ttft`` N
    requests), its figures printed as one JSON line."""
    run, url, model, n = argv
    clients: dict[str, Any] = {
        "aiohttp-latency": _aiohttp_latency,
        "openai-latency": _openai_latency,
        "cpu": _aiohttp_cpu,
        "ttft": _aiohttp_ttft,
    }
    print(json.dumps(asyncio.run(clients[run](url, model, int(n)))))


def _client(run: str, url: str, model: str, n: int) -> Any:
    command = [sys.executable, "-m", "benchmarks.bench_gateway", "client", run, url, model, str(n)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if done.returncode:
        tail = done.stderr.strip().splitlines()[-1:] or ["no output"]
        raise RuntimeError(f"{run} client failed: {tail[0]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# -- the processes --------------------------------------------------------------------------


@contextlib.contextmanager
def _process(
    command: list[str], ready: str, env: dict[str, str] | None = None, wait: float = 120.0
) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """A process started with ``command``, once it printed a line matching ``ready`` (its
    output kept in a temporary file), or once the URL ``ready`` answers; the process and
    what matched (the URL)."""
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
        found: re.Match[bytes] | None = None
        try:
            deadline = time.monotonic() + wait
            while True:
                if ready.startswith("http"):
                    with contextlib.suppress(OSError):
                        urllib.request.urlopen(ready, timeout=1).close()
                        break
                else:
                    log.seek(0)
                    found = re.search(ready.encode(), log.read())
                    if found:
                        break
                if process.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    lines = log.read().decode(errors="replace").strip().splitlines()
                    said = lines[-1] if lines else "nothing"
                    raise RuntimeError(f"{Path(command[0]).name} did not start: {said}")
                time.sleep(0.1)
            yield process, found.group(1).decode() if found else ready
        finally:
            process.terminate()
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)


def _family(pid: int) -> set[int]:
    """Process ``pid`` and its descendants, from /proc."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                parents[int(entry.name)] = int(fields[1])
    family = {pid}
    changed = True
    while changed:
        changed = False
        for child, parent in parents.items():
            if parent in family and child not in family:
                family.add(child)
                changed = True
    return family


def _cpu_seconds(pid: int) -> float:
    """The CPU time (user + system) of process ``pid`` and its descendants, from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for member in _family(pid):
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{member}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def _writes(probe: str) -> dict[int, float]:
    with urllib.request.urlopen(probe + "/writes", timeout=30) as response:
        return {int(k): v for k, v in json.loads(response.read()).items()}


def _litellm_config(upstream: str, scenarios: dict[str, str], path: Path) -> None:
    lines = ["model_list:"]
    for dialect in UPSTREAMS:
        for run, scenario in scenarios.items():
            provider = "openai" if dialect == "openai" else "anthropic"
            base = f"{upstream}/v1" if dialect == "openai" else upstream
            lines += [
                f"  - model_name: {dialect}-{run}",
                "    litellm_params:",
                f'      model: "{provider}/{scenario}"',
                f"      api_base: {base}",
                "      api_key: bench-key",
            ]
    path.write_text("\n".join(lines) + "\n")


LITELLM = "SOLON_BENCH_LITELLM"
"""The environment variable naming the ``litellm`` command to start the proxy with (set by
``python -m benchmarks --litellm PATH``), for a proxy installed in a virtual environment of
its own (``litellm[proxy]`` pins ``rich<14``); else the one beside this Python, else on
``PATH``, else :data:`LITELLM_VENV`'s."""

LITELLM_VENV = Path(__file__).resolve().parents[1] / ".venv-litellm"
"""Where LiteLLM's proxy is installed when no other is given or found: a virtual
environment of its own at the repository's root, made when missing (``python3 -m venv
.venv-litellm && .venv-litellm/bin/pip install 'litellm[proxy]'``)."""


def litellm_command() -> str | None:
    """The ``litellm`` command the benchmarks start LiteLLM's proxy with (see
    :data:`LITELLM`), or None when there is none and :data:`LITELLM_VENV` cannot be made."""
    found = os.environ.get(LITELLM) or (
        shutil.which("litellm", path=str(Path(sys.executable).parent)) or shutil.which("litellm")
    )
    if found:
        return found
    command = LITELLM_VENV / "bin" / "litellm"
    if not command.exists():
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run(["python3", "-m", "venv", str(LITELLM_VENV)], check=True, timeout=300)
            pip = [str(LITELLM_VENV / "bin" / "pip"), "install", "-q", "litellm[proxy]"]
            subprocess.run(pip, check=True, timeout=1800)
    return str(command) if command.exists() else None


@contextlib.contextmanager
def _litellm(upstream: str, scenarios: dict[str, str]) -> Iterator[tuple[int, str] | str]:
    """LiteLLM's proxy on the same upstreams: its pid and URL, or why it cannot start."""
    command = litellm_command()
    if command is None:
        yield f"its command is not installed, nor could {LITELLM_VENV.name} be made"
        return
    with tempfile.TemporaryDirectory() as folder:
        config = Path(folder) / "config.yaml"
        _litellm_config(upstream, scenarios, config)
        port = free_port()
        env = {
            **os.environ,
            "LITELLM_MASTER_KEY": MASTER_KEY,
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # no download of its price list
            "LITELLM_LOG": "ERROR",
        }
        argv = [command, "--config", str(config), "--host", "127.0.0.1", "--port", str(port)]
        try:
            url = f"http://127.0.0.1:{port}"
            with _process(argv, url + "/health/liveliness", env) as (process, _ready):
                yield process.pid, url
        except RuntimeError as error:
            yield str(error)


@contextlib.contextmanager
def _gateways(
    upstream: str, scenarios: dict[str, str]
) -> Iterator[dict[tuple[str, str], tuple[int, str]]]:
    """``solon-events serve --upstream`` per (dialect, run): pid and URL of each."""
    with contextlib.ExitStack() as stack:
        found = {}
        for dialect in UPSTREAMS:
            for run, scenario in scenarios.items():
                argv = [sys.executable, "-m", "solon_events.cli", "serve", "--port", "0"]
                argv += ["--upstream", f"{dialect}:{upstream}{ROUTES[dialect]}"]
                argv += ["--model", scenario]
                process, url = stack.enter_context(_process(argv, r"(http://127\.0\.0\.1:\d+)"))
                found[dialect, run] = process.pid, url
        yield found


# -- the measures ---------------------------------------------------------------------------


def _frame_latencies(
    arrivals: list[tuple[int, float]], writes: dict[int, float], frames: int
) -> list[float]:
    warmup = frames // 10
    return [at - writes[n] for n, at in arrivals if n >= warmup and n in writes]


RELAY = "bytes-only TCP relay"
"""The path through :func:`relay_main`: the floor of a proxy's hop."""

Target = tuple[str, str, Optional[int]]  # noqa: UP045 (a runtime alias on 3.10)
"""Where a run's client asks: the URL, the model name, the pid of the proxy (None: none)."""


def _path_figures(targets: dict[str, Target], probe: str, quick: bool) -> dict[str, Any]:
    """One path's figures; ``targets`` says where each run asks."""
    runs = _runs(quick)
    frames = int(_scenarios(quick)["latency"].split(":")[1])
    figures: dict[str, Any] = {}
    url, model, pid = targets["latency"]
    for client in ("aiohttp", "openai"):
        _writes(probe)  # forget the writes before this run
        before = _cpu_seconds(pid) if pid is not None else 0.0
        arrivals = _client(f"{client}-latency", url, model, frames)
        if pid is not None and client == "aiohttp":  # two streams: the first untimed
            figures["cpu_us_per_frame_alone"] = (_cpu_seconds(pid) - before) * 1e6 / (2 * frames)
        latencies = _frame_latencies([(n, at) for n, at in arrivals], _writes(probe), frames)
        figures[client] = {
            "frames": len(latencies),
            "p50_us": _percentile(latencies, 0.5) * 1e6,
            "p99_us": _percentile(latencies, 0.99) * 1e6,
        }
    url, model, _pid = targets["ttft"]
    firsts = _client("ttft", url, model, runs["ttft_requests"])
    figures["ttft"] = {
        "requests": len(firsts),
        "p50_ms": _percentile(firsts, 0.5) * 1e3,
        "p99_ms": _percentile(firsts, 0.99) * 1e3,
    }
    url, model, pid = targets["cpu"]
    if pid is not None:
        _client("cpu", url, model, 1)  # warm
        before = _cpu_seconds(pid)
        received = _client("cpu", url, model, runs["cpu_streams"])
        figures["cpu_us_per_frame"] = (_cpu_seconds(pid) - before) * 1e6 / max(received, 1)
        figures["cpu_frames"] = received
    return figures


def measure(quick: bool = False) -> dict[str, Any]:
    """Every path's figures: direct, through our gateway and through LiteLLM's proxy."""
    scenarios = _scenarios(quick)
    port = free_port_pair()
    upstream_argv = [sys.executable, "-m", "benchmarks.bench_gateway", "upstream", str(port)]
    figures: dict[str, Any] = {"paths": {}}
    paths = figures["paths"]
    route = ROUTES["openai"]
    with _process(upstream_argv, r"(http://127\.0\.0\.1:\d+)") as (_upstream, upstream):
        probe = f"http://127.0.0.1:{port + 1}"
        direct: dict[str, Target] = {
            run: (upstream + route, scenario, None) for run, scenario in scenarios.items()
        }
        paths["direct (Chat Completions)"] = _path_figures(direct, probe, quick)
        relay_argv = [sys.executable, "-m", "benchmarks.bench_gateway", "relay", "127.0.0.1"]
        relay_argv.append(str(port))
        with _process(relay_argv, r"(http://127\.0\.0\.1:\d+)") as (relay, relay_url):
            relayed: dict[str, Target] = {
                run: (relay_url + route, scenario, relay.pid) for run, scenario in scenarios.items()
            }
            paths[RELAY] = _path_figures(relayed, probe, quick)
        with _gateways(upstream, scenarios) as gateways:
            for dialect in UPSTREAMS:
                ours: dict[str, Target] = {
                    run: (url + route, "any", pid)
                    for (d, run), (pid, url) in gateways.items()
                    if d == dialect
                }
                paths[f"solon-events, {dialect} upstream"] = _path_figures(ours, probe, quick)
        with _litellm(upstream, scenarios) as litellm:
            if isinstance(litellm, str):
                figures["litellm"] = litellm
            else:
                pid, url = litellm
                for dialect in UPSTREAMS:
                    theirs: dict[str, Target] = {
                        run: (url + route, f"{dialect}-{run}", pid) for run in scenarios
                    }
                    paths[f"LiteLLM, {dialect} upstream"] = _path_figures(theirs, probe, quick)
    return figures


def main(quick: bool = False) -> dict[str, Any]:
    """Print the gateway's overhead beside LiteLLM's; return the figures."""
    figures = measured(measure, quick)
    paths = figures["paths"]
    floor = paths["direct (Chat Completions)"]
    print_run_heading(
        figures, "clients speak Chat Completions; latency: one stream, deltas 1 ms apart"
    )
    head = f"{'path':<30}{'added latency per frame, us':>30}{'added TTFT, ms':>17}"
    print(head + f"{'proxy CPU, us/frame':>22}")
    print(f"{'':<30}{'aiohttp p50':>12}{'p99':>7}{'SDK p50':>9}{'p99':>7}{'p50':>9}{'p99':>8}"
          f"{'20 streams':>11}{'alone':>8}")  # fmt: skip
    for name, run in paths.items():
        if run is floor:
            continue
        added = {
            key: run[client][q] - floor[client][q]
            for key, client, q in (
                ("a50", "aiohttp", "p50_us"),
                ("a99", "aiohttp", "p99_us"),
                ("o50", "openai", "p50_us"),
                ("o99", "openai", "p99_us"),
            )
        }
        t50 = run["ttft"]["p50_ms"] - floor["ttft"]["p50_ms"]
        t99 = run["ttft"]["p99_ms"] - floor["ttft"]["p99_ms"]
        run["added"] = {**added, "ttft_p50_ms": t50, "ttft_p99_ms": t99}
        print(
            f"{name:<30}{added['a50']:>12.0f}{added['a99']:>7.0f}{added['o50']:>9.0f}"
            f"{added['o99']:>7.0f}{t50:>9.2f}{t99:>8.2f}{run.get('cpu_us_per_frame', 0):>11.1f}"
            f"{run.get('cpu_us_per_frame_alone', 0):>8.1f}"
        )
    print(
        f"{'direct: the floor':<30}{floor['aiohttp']['p50_us']:>12.0f}"
        f"{floor['aiohttp']['p99_us']:>7.0f}{floor['openai']['p50_us']:>9.0f}"
        f"{floor['openai']['p99_us']:>7.0f}{floor['ttft']['p50_ms']:>9.2f}"
        f"{floor['ttft']['p99_ms']:>8.2f}   (absolute, not added)"
    )
    return figures


if __name__ == "__main__":
    if sys.argv[1:2] == ["upstream"]:
        upstream_main(int(sys.argv[2]))
    elif sys.argv[1:2] == ["relay"]:
        relay_main(sys.argv[2], int(sys.argv[3]))
    elif sys.argv[1:2] == ["client"]:
        client_main(sys.argv[2:])
    else:
        main(quick="--quick" in sys.argv)
