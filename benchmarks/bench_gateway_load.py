"""The gateway under load, beside LiteLLM's proxy in the same run: streamed requests per
second on one core, and memory per open stream.

The parties are :mod:`benchmarks.bench_gateway`'s, each a process of its own: the embedded
provider as the upstream (Chat Completions), ``solon-events serve --upstream`` and
LiteLLM's proxy (when its command starts, see :data:`benchmarks.bench_gateway.LITELLM`) in
front of it, each proxy pinned to one CPU (every thread of it), and the clients (bare
aiohttp, Chat Completions).

- Throughput: open-loop load of short streamed answers (``slow:20:0.005``, 20 text deltas
  5 ms apart), requests sent at a fixed rate whatever the answers do, at 10, 25, 50, 100,
  200 ... per second (200 requests or more per rate, for 4 s at least). Each request's
  time to its first delta is counted from the moment it was due (a proxy that falls
  behind is charged for the wait). At each rate the upstream is asked directly too; a
  proxy holds the rate when every request succeeded and its p99 time to the first delta
  is within 5 ms of the direct one. The figure is the highest rate held, on one core.
- Memory per open stream: the proxy's resident memory (its process tree's ``VmRSS``)
  with N streams open (each waiting for its next delta, a second apart), less its
  memory before them, over N.

The machine's other load moves the rates (every party shares its cores); the rows of one
run are measured together.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .bench_e2e import _percentile
from .bench_gateway import MASTER_KEY, _body, _family, _litellm, _process
from .local_servers import free_port_pair
from .machine import measured, print_run_heading

LOAD = "slow:20:0.005"
"""The short streamed answer of the throughput runs."""
OPEN = "slow:3600:1"
"""The stream held open by the memory runs (a delta a second)."""
ADDED_P99_MS = 5.0
"""The p99 time to the first delta a proxy may add to the direct one and still hold a rate."""
_FIRST = b'"content":"0 "'


def _rates(quick: bool) -> tuple[int, ...]:
    return (10, 25, 50, 100, 200) if quick else (10, 25, 50, 100, 200, 400, 800)


def _seconds(quick: bool, rate: int) -> float:
    """How long a rate runs: long enough for 100 requests (200 without ``quick``) and at
    least 2 s (4 s), so that its p99 is not its slowest request."""
    least, requests = (2.0, 100) if quick else (4.0, 200)
    return max(least, requests / rate)


def _open_streams(quick: bool) -> int:
    """The streams held open: fewer than 100, the size of aiohttp's and httpx's default pool
    of connections, which a proxy may keep to its upstream."""
    return 50 if quick else 90


# -- inside a client process -----------------------------------------------------------------


async def _load(url: str, model: str, rate: float, seconds: float) -> dict[str, Any]:
    """Requests at ``rate`` per second for ``seconds``: each one's time to its first delta
    from when it was due, and the failures."""
    import aiohttp

    headers = {"Authorization": f"Bearer {MASTER_KEY}"}
    firsts: list[float] = []
    failures: list[str] = []
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def one(due: float) -> None:
            await asyncio.sleep(max(0.0, due - time.perf_counter()))
            first = None
            try:
                async with session.post(url, json=_body(model), headers=headers) as response:
                    if response.status != 200:
                        failures.append(f"status {response.status}")
                        return
                    async for chunk in response.content.iter_any():
                        if first is None and _FIRST in chunk:
                            first = time.perf_counter() - due
            except (aiohttp.ClientError, OSError) as exc:
                failures.append(type(exc).__name__)
                return
            if first is None:
                failures.append("no first delta")
            else:
                firsts.append(first)

        start = time.perf_counter() + 0.05
        count = int(rate * seconds)
        await asyncio.gather(*(one(start + i / rate) for i in range(count)))
    return {"firsts": firsts, "failures": failures}


async def _hold(url: str, model: str, streams: int) -> None:
    """Open ``streams`` streams, say ``ready`` once each has its first delta, and hold
    them until standard input closes."""
    import aiohttp

    headers = {"Authorization": f"Bearer {MASTER_KEY}"}
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        started = 0
        ready = asyncio.Event()

        async def one() -> None:
            nonlocal started
            async with session.post(url, json=_body(model), headers=headers) as response:
                counted = False
                async for chunk in response.content.iter_any():
                    if not counted and _FIRST in chunk:
                        counted = True
                        started += 1
                        if started == streams:
                            ready.set()

        tasks = [asyncio.ensure_future(one()) for _ in range(streams)]
        await ready.wait()
        print("ready", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def client_main(argv: list[str]) -> None:
    """``python -m benchmarks.bench_gateway_load load URL MODEL RATE SECONDS`` (figures as
    one JSON line) or ``hold URL MODEL STREAMS``."""
    if argv[0] == "load":
        _url, _model, rate, seconds = argv[1:]
        found = asyncio.run(_load(_url, _model, float(rate), float(seconds)))
        print(json.dumps(found))
    else:
        asyncio.run(_hold(argv[1], argv[2], int(argv[3])))


# -- the measures ---------------------------------------------------------------------------


def _pinned(pid: int, cpu: int) -> None:
    """Every thread of process ``pid`` (and its children) on ``cpu`` alone."""
    for member in _family(pid):
        with contextlib.suppress(OSError):
            for thread in os.listdir(f"/proc/{member}/task"):
                with contextlib.suppress(OSError):
                    os.sched_setaffinity(int(thread), {cpu})


def _rss_kib(pid: int) -> int:
    """The resident memory of process ``pid`` and its descendants, KiB."""
    total = 0
    for member in _family(pid):
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{member}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
    return total


def _load_run(url: str, model: str, rate: int, seconds: float) -> dict[str, Any]:
    command = [sys.executable, "-m", "benchmarks.bench_gateway_load", "load", url, model]
    command += [str(rate), str(seconds)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if done.returncode:
        tail = done.stderr.strip().splitlines()[-1:] or ["no output"]
        raise RuntimeError(f"load client failed: {tail[0]}")
    found = json.loads(done.stdout.strip().splitlines()[-1])
    firsts = found["firsts"]
    return {
        "requests": len(firsts) + len(found["failures"]),
        "failures": len(found["failures"]),
        "p50_ms": _percentile(firsts, 0.5) * 1e3,
        "p99_ms": _percentile(firsts, 0.99) * 1e3,
    }


def _memory(url: str, model: str, pid: int, streams: int) -> float:
    """KiB of the proxy's resident memory per stream held open through it."""
    before = _rss_kib(pid)
    command = [sys.executable, "-m", "benchmarks.bench_gateway_load", "hold", url, model]
    holder = subprocess.Popen(
        [*command, str(streams)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None
        ready, _, _ = select.select([holder.stdout], [], [], 120)
        if not ready or holder.stdout.readline().strip() != "ready":
            raise RuntimeError(f"the {streams} streams did not open within 2 minutes")
        time.sleep(0.5)
        during = _rss_kib(pid)
    finally:
        try:
            holder.communicate("", timeout=60)
        except subprocess.TimeoutExpired:
            holder.kill()
            holder.wait()
    return (during - before) / streams


@contextlib.contextmanager
def _gateways(upstream: str) -> Iterator[dict[str, tuple[int, str]]]:
    """``solon-events serve`` for the load and the open streams: pid and URL of each."""
    with contextlib.ExitStack() as stack:
        found = {}
        for run, scenario in (("load", LOAD), ("open", OPEN)):
            argv = [sys.executable, "-m", "solon_events.cli", "serve", "--port", "0"]
            argv += ["--upstream", f"openai:{upstream}/v1/chat/completions", "--model", scenario]
            process, url = stack.enter_context(_process(argv, r"(http://127\.0\.0\.1:\d+)"))
            found[run] = process.pid, url
        yield found


def measure(quick: bool = False) -> dict[str, Any]:
    """The direct path's and each proxy's figures at each rate, and memory per stream."""
    cpu = max(os.sched_getaffinity(0))
    port = free_port_pair()
    upstream_argv = [sys.executable, "-m", "benchmarks.bench_gateway", "upstream", str(port)]
    route = "/v1/chat/completions"
    figures: dict[str, Any] = {"cpu": cpu, "proxies": {}}
    with contextlib.ExitStack() as stack:
        _upstream, upstream = stack.enter_context(
            _process(upstream_argv, r"(http://127\.0\.0\.1:\d+)")
        )
        ours = stack.enter_context(_gateways(upstream))
        proxies: dict[str, dict[str, tuple[int, str, str]]] = {
            "solon-events serve": {
                run: (pid, url + route, "any") for run, (pid, url) in ours.items()
            }
        }
        litellm = stack.enter_context(_litellm(upstream, {"load": LOAD, "open": OPEN}))
        if isinstance(litellm, str):
            figures["litellm"] = litellm
        else:
            pid, url = litellm
            proxies["LiteLLM proxy"] = {
                run: (pid, url + route, f"openai-{run}") for run in ("load", "open")
            }
        for name, paths in proxies.items():
            figures["proxies"][name] = {"rates": {}, "held_rate": 0}
            for pid, _url, _model in paths.values():
                _pinned(pid, cpu)
            _pid, url, model = paths["load"]
            _load_run(url, model, 10, 1.0)  # warm: first requests, pools, lazy imports
        direct = figures["direct"] = {}
        failed: set[str] = set()
        for rate in _rates(quick):
            seconds = _seconds(quick, rate)
            direct[rate] = _load_run(upstream + route, LOAD, rate, seconds)
            for name, paths in proxies.items():
                if name in failed:
                    continue
                _pid, url, model = paths["load"]
                run = _load_run(url, model, rate, seconds)
                run["added_p99_ms"] = run["p99_ms"] - direct[rate]["p99_ms"]
                proxy = figures["proxies"][name]
                proxy["rates"][rate] = run
                if run["failures"] == 0 and run["added_p99_ms"] < ADDED_P99_MS:
                    proxy["held_rate"] = rate
                else:
                    failed.add(name)
        for name, paths in proxies.items():
            proxy = figures["proxies"][name]
            pid, url, model = paths["open"]
            try:
                proxy["kib_per_open_stream"] = _memory(url, model, pid, _open_streams(quick))
            except RuntimeError as error:
                proxy["kib_per_open_stream"] = None
                proxy["memory_failure"] = str(error)
    return figures


def main(quick: bool = False) -> dict[str, Any]:
    """Print the throughput and memory figures; return them."""
    figures = measured(measure, quick)
    print_run_heading(
        figures,
        f"each proxy pinned to CPU {figures['cpu']}; answers {LOAD} (20 deltas 5 ms apart), "
        f"sent open-loop, {100 if quick else 200} or more per rate",
    )
    print("p99 time to the first delta, ms (failed requests in brackets):")
    names = list(figures["proxies"])
    print(f"{'requests/s':>12}{'direct':>10}" + "".join(f"{name:>22}" for name in names))
    for rate, direct in figures["direct"].items():
        cells = []
        for name in names:
            run = figures["proxies"][name]["rates"].get(rate)
            if run is None:
                cells.append(f"{'-':>22}")
            else:
                failed = f" [{run['failures']}]" if run["failures"] else ""
                cells.append(f"{run['p99_ms']:>22.1f}"[: 22 - len(failed)] + failed)
        print(f"{rate:>12}{direct['p99_ms']:>10.1f}" + "".join(cells))
    print()
    print(
        f"{'proxy':<22}{'requests/s held':>16}  (p99 added TTFT < {ADDED_P99_MS:g} ms, none "
        f"failed){'memory per open stream':>26}"
    )
    for name in names:
        proxy = figures["proxies"][name]
        memory = proxy["kib_per_open_stream"]
        shown = f"{memory:>10.1f} KiB" if memory is not None else f"  {proxy['memory_failure']}"
        print(f"{name:<22}{proxy['held_rate']:>16}{'':<37}{shown}")
    return figures


if __name__ == "__main__":
    if sys.argv[1:2] in (["load"], ["hold"]):
        client_main(sys.argv[1:])
    else:
        main(quick="--quick" in sys.argv)
