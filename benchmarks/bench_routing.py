"""The router's cost in the gateway, beside LiteLLM's proxy doing the same routing.

Every party is a process of its own: two upstreams (the embedded provider, Chat
Completions, each streaming short answers: ``slow:5:0``, five deltas), the gateways, and
the clients (bare aiohttp, streaming, in a process of their own). Two figures:

- **added latency of routing over a single upstream**: requests one after another, the
  time to the first delta, p50 and p99, for the upstream asked directly (the floor), our
  gateway serving one model without routing (``serve --upstream``), our gateway routing
  a configured name over that one deployment (``serve --config``), and LiteLLM's proxy
  with that one deployment; each minus the floor, and routing's own cost (``--config``
  minus ``--upstream``);
- **throughput**: ``C`` clients at once (1, 16, 64, 256), each asking again as soon as
  its stream ended, for a few seconds, through a name routed over *two* deployments (the
  two upstreams, ``weighted`` 1:1; LiteLLM's ``simple-shuffle``, its default, over the
  same two): the streamed requests completed per second, and the p99 time to the first
  delta minus the direct p99 at the same concurrency (the two upstreams asked in turn).
  The streams a path serves per second while its added p99 stays under 5 ms is the
  figure the table ends with.

LiteLLM's proxy runs from a virtual environment of its own, ``.venv-litellm`` at the
repository's root (``python3 -m venv .venv-litellm && .venv-litellm/bin/pip install
'litellm[proxy]'``; the benchmark makes it when it is missing and pip can reach PyPI),
because ``litellm[proxy]`` pins ``rich<14``, which this package's tests cannot use. It
is started as ``litellm --config CONFIG --host 127.0.0.1 --port PORT`` with a master key,
``LITELLM_LOCAL_MODEL_COST_MAP=True`` (no download) and ``LITELLM_LOG=ERROR``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .bench_e2e import _percentile
from .bench_gateway import LITELLM_VENV, MASTER_KEY, _process, litellm_command
from .local_servers import free_port, free_port_pair
from .machine import measured, print_run_heading

SCENARIO = "slow:5:0"
CONCURRENCY = (1, 16, 64, 256)
BUDGET_MS = 5.0
"""The p99 added latency under which a path's throughput counts."""
_ROUTE = "/v1/chat/completions"


def _runs(quick: bool) -> dict[str, float]:
    return {"sequential": 100 if quick else 400, "warmup": 50, "seconds": 2.0 if quick else 5.0}


# -- the client process ---------------------------------------------------------------------


def _body(model: str) -> bytes:
    body = {"model": model, "messages": [{"role": "user", "content": "hi"}], "stream": True}
    return json.dumps(body).encode()


async def _stream(session: Any, url: str, body: bytes) -> float | None:
    """One streamed request; the seconds to its first content delta (None: none came)."""
    start = time.perf_counter()
    first = None
    headers = {"Authorization": f"Bearer {MASTER_KEY}", "Content-Type": "application/json"}
    async with session.post(url, data=body, headers=headers) as response:
        if response.status != 200:
            raise RuntimeError(f"HTTP {response.status}: {(await response.read())[:200]!r}")
        async for chunk in response.content.iter_any():
            if first is None and b'"content":"' in chunk:
                first = time.perf_counter() - start
    return first


async def _sequential(urls: list[str], model: str, count: int, warmup: int) -> list[float]:
    import aiohttp

    firsts: list[float] = []
    body = _body(model)
    async with aiohttp.ClientSession() as session:
        for number in range(warmup + count):
            first = await _stream(session, urls[number % len(urls)], body)
            if number >= warmup and first is not None:
                firsts.append(first)
    return firsts


async def _concurrent(urls: list[str], model: str, clients: int, seconds: float) -> dict[str, Any]:
    import aiohttp

    body = _body(model)
    firsts: list[float] = []
    done = 0
    connector = aiohttp.TCPConnector(limit=clients + 8)
    async with aiohttp.ClientSession(connector=connector) as session:
        for url in urls:  # connections opened, first-use costs paid
            await asyncio.gather(*(_stream(session, url, body) for _ in range(min(clients, 16))))
        end = time.perf_counter() + seconds

        async def client(number: int) -> None:
            nonlocal done
            turn = number
            while time.perf_counter() < end:
                first = await _stream(session, urls[turn % len(urls)], body)
                turn += 1
                done += 1
                if first is not None:
                    firsts.append(first)

        started = time.perf_counter()
        await asyncio.gather(*(client(n) for n in range(clients)))
        elapsed = time.perf_counter() - started
    return {
        "requests": done,
        "per_second": done / elapsed,
        "p50_ms": _percentile(firsts, 0.5) * 1e3,
        "p99_ms": _percentile(firsts, 0.99) * 1e3,
    }


def client_main(argv: list[str]) -> None:
    """``python -m benchmarks.bench_routing client KIND MODEL N SECONDS URL...``: one client
    run (``sequential`` N requests, or ``concurrent`` with N clients for SECONDS), its
    figures printed as one JSON line."""
    kind, model, n, seconds, *urls = argv
    if kind == "sequential":
        found: Any = asyncio.run(_sequential(urls, model, int(n), int(float(seconds))))
    else:
        found = asyncio.run(_concurrent(urls, model, int(n), float(seconds)))
    print(json.dumps(found))


def _client(kind: str, model: str, n: int, seconds: float, urls: list[str]) -> Any:
    command = [sys.executable, "-m", "benchmarks.bench_routing", "client", kind, model]
    command += [str(n), str(seconds), *urls]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    if done.returncode:
        tail = done.stderr.strip().splitlines()[-1:] or ["no output"]
        raise RuntimeError(f"{kind} client failed: {tail[0]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# -- the servers ----------------------------------------------------------------------------


def _config(upstreams: list[str]) -> str:
    """Our configuration: ``single`` over the first upstream, ``pair`` over both."""
    text = '[models.single]\nstrategy = "weighted"\n'
    text += f'[[models.single.deployments]]\nupstream = "openai:{upstreams[0]}{_ROUTE}"\n'
    text += f'model = "{SCENARIO}"\n'
    text += '[models.pair]\nstrategy = "weighted"\n'
    for upstream in upstreams:
        text += f'[[models.pair.deployments]]\nupstream = "openai:{upstream}{_ROUTE}"\n'
        text += f'model = "{SCENARIO}"\nweight = 1\n'
    return text


def _litellm_config(upstreams: list[str]) -> str:
    """LiteLLM's: the same two names over the same deployments."""
    lines = ["model_list:"]
    for name, used in (("single", upstreams[:1]), ("pair", upstreams)):
        for upstream in used:
            lines += [
                f"  - model_name: {name}",
                "    litellm_params:",
                f'      model: "openai/{SCENARIO}"',
                f"      api_base: {upstream}/v1",
                "      api_key: bench-key",
            ]
    lines += ["router_settings:", "  routing_strategy: simple-shuffle"]
    return "\n".join(lines) + "\n"


@contextlib.contextmanager
def _litellm(upstreams: list[str]) -> Iterator[str]:
    """LiteLLM's proxy over ``upstreams``: its URL (RuntimeError: why it did not start)."""
    command = litellm_command()
    if command is None:
        raise RuntimeError(f"no {LITELLM_VENV.name}: pip could not install litellm[proxy]")
    with tempfile.TemporaryDirectory() as folder:
        config = Path(folder) / "config.yaml"
        config.write_text(_litellm_config(upstreams))
        port = free_port()
        env = {
            **os.environ,
            "LITELLM_MASTER_KEY": MASTER_KEY,
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "LITELLM_LOG": "ERROR",
        }
        argv = [command, "--config", str(config), "--host", "127.0.0.1", "--port", str(port)]
        url = f"http://127.0.0.1:{port}"
        with _process(argv, url + "/health/liveliness", env, wait=300):
            yield url


@contextlib.contextmanager
def _upstream() -> Iterator[str]:
    """The embedded provider in a process of its own: its URL (started again on other ports
    when another program took one of its two between their choice and its start)."""
    argv = [sys.executable, "-m", "benchmarks.bench_gateway", "upstream"]
    with contextlib.ExitStack() as stack:
        for attempt in range(3):
            try:
                started = _process([*argv, str(free_port_pair())], r"(http://127\.0\.0\.1:\d+)")
                url = stack.enter_context(started)[1]
                break
            except RuntimeError as error:
                if "address already in use" not in str(error) or attempt == 2:
                    raise
        yield url


@contextlib.contextmanager
def _ours(*options: str) -> Iterator[str]:
    argv = [sys.executable, "-m", "solon_events.cli", "serve", "--port", "0", *options]
    with _process(argv, r"(http://127\.0\.0\.1:\d+)") as (_started, url):
        yield url


# -- the measures ---------------------------------------------------------------------------


def _latency(urls: list[str], model: str, quick: bool) -> dict[str, float]:
    runs = _runs(quick)
    firsts = _client("sequential", model, int(runs["sequential"]), runs["warmup"], urls)
    return {"p50_ms": _percentile(firsts, 0.5) * 1e3, "p99_ms": _percentile(firsts, 0.99) * 1e3}


def _throughput(urls: list[str], model: str, quick: bool) -> dict[int, dict[str, Any]]:
    seconds = _runs(quick)["seconds"]
    return {c: _client("concurrent", model, c, seconds, urls) for c in CONCURRENCY}


def measure(quick: bool = False) -> dict[str, Any]:
    """The figures of every path (see the module)."""
    figures: dict[str, Any] = {"latency": {}, "throughput": {}}
    latency, throughput = figures["latency"], figures["throughput"]
    with _upstream() as first, _upstream() as second:
        upstreams = [first, second]
        direct = [upstream + _ROUTE for upstream in upstreams]
        latency["direct"] = _latency(direct[:1], SCENARIO, quick)
        throughput["direct"] = _throughput(direct, SCENARIO, quick)
        with _ours("--upstream", f"openai:{direct[0]}", "--model", SCENARIO) as url:
            latency["solon-events, no routing"] = _latency([url + _ROUTE], "any", quick)
        with tempfile.TemporaryDirectory() as folder:
            config = Path(folder) / "gateway.toml"
            config.write_text(_config(upstreams))
            with _ours("--config", str(config)) as url:
                latency["solon-events, routed"] = _latency([url + _ROUTE], "single", quick)
                throughput["solon-events"] = _throughput([url + _ROUTE], "pair", quick)
        try:
            with _litellm(upstreams) as url:
                latency["LiteLLM, routed"] = _latency([url + _ROUTE], "single", quick)
                throughput["LiteLLM"] = _throughput([url + _ROUTE], "pair", quick)
        except RuntimeError as error:
            figures["litellm"] = str(error)
    return figures


def main(quick: bool = False) -> dict[str, Any]:
    """Print the router's figures beside LiteLLM's; return them."""
    figures = measured(measure, quick)
    print_run_heading(
        figures, f"upstreams: the embedded provider ({SCENARIO}), Chat Completions, aiohttp clients"
    )
    latency = figures["latency"]
    floor = latency["direct"]
    print("added time to the first delta over a single upstream, requests one at a time (ms)")
    print(f"{'path':<28}{'p50':>8}{'p99':>8}{'added p50':>11}{'added p99':>11}")
    for name, run in latency.items():
        added = (run["p50_ms"] - floor["p50_ms"], run["p99_ms"] - floor["p99_ms"])
        run["added_p50_ms"], run["added_p99_ms"] = added
        shown = ("", "") if run is floor else (f"{added[0]:.2f}", f"{added[1]:.2f}")
        print(f"{name:<28}{run['p50_ms']:>8.2f}{run['p99_ms']:>8.2f}{shown[0]:>11}{shown[1]:>11}")
    plain, routed = latency.get("solon-events, no routing"), latency.get("solon-events, routed")
    if plain and routed:
        own = (routed["p50_ms"] - plain["p50_ms"], routed["p99_ms"] - plain["p99_ms"])
        figures["routing_own_ms"] = {"p50": own[0], "p99": own[1]}
        print(f"routing's own cost (routed minus no routing): p50 {own[0]:.2f}, p99 {own[1]:.2f}")
    print()
    throughput = figures["throughput"]
    direct = throughput["direct"]
    print(
        "throughput over two deployments: streamed requests per second, and p99 time to the "
        f"first delta added to the direct p99 (ms); * over the {BUDGET_MS:.0f} ms budget"
    )
    print(f"{'path':<16}" + "".join(f"{f'C={c}':>20}" for c in CONCURRENCY))
    best: dict[str, float] = {}
    for name, runs in throughput.items():
        cells = []
        for c in CONCURRENCY:
            run = runs[c]
            added = run["p99_ms"] - direct[c]["p99_ms"]
            run["added_p99_ms"] = added
            mark = "*" if run is not direct[c] and added >= BUDGET_MS else " "
            if run is direct[c]:
                cells.append(f"{run['per_second']:>9.0f}/s p99 {run['p99_ms']:>5.1f}")
            else:
                cells.append(f"{run['per_second']:>9.0f}/s +{added:>6.2f}{mark}")
                if added < BUDGET_MS:
                    best[name] = max(best.get(name, 0.0), run["per_second"])
        print(f"{name:<16}" + "".join(f"{cell:>20}" for cell in cells))
    figures["within_budget_per_second"] = best
    for name, rate in best.items():
        print(f"{name}: {rate:.0f} streamed requests/s with p99 added under {BUDGET_MS:.0f} ms")
    return figures


if __name__ == "__main__":
    if sys.argv[1:2] == ["client"]:
        client_main(sys.argv[2:])
    else:
        main(quick="--quick" in sys.argv)
