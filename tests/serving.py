"""Helpers for the gateway tests: a gateway app on a real port, a gateway in front of each
of the embedded provider's dialects, ``solon-events serve`` in its own process, SSE
reading, node clients."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Generic, TypeVar

import orjson
import pytest
from aiohttp import web
from executables import executable_or_skip

from solon_events.cli import ROUTES
from solon_events.client.model import ChatModel
from solon_events.client.transport import pools_closed
from solon_events.devserver import DevServer, RunningServer
from solon_events.serve import create_app, run_app, serving
from solon_events.serve.models import ModelTable
from solon_events.serve.provider_routes import PROVIDER_ROUTES
from solon_events.support.loop_thread import EventLoopThread

CLIENTS = Path(__file__).resolve().parent / "clients"
SHOW_MAP = {
    "name": "show_map",
    "description": "Show a city on the user's map",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}
"""A frontend tool, as an AG-UI client declares it."""


UPSTREAMS = tuple(ROUTES)
"""Every dialect the embedded provider speaks, each the upstream of a gateway."""
SDK_CLIENTS = tuple(dict.fromkeys(PROVIDER_ROUTES.values()))
"""The providers' protocols a gateway serves to their SDKs."""

K = TypeVar("K")


def for_every_upstream_sdk_and_mode(test: Callable[..., None]) -> Callable[..., None]:
    """Run ``test`` for every ``upstream`` (:data:`UPSTREAMS`), every ``client``
    (:data:`SDK_CLIENTS`), answers streamed and whole (``stream``)."""
    test = pytest.mark.parametrize("upstream", UPSTREAMS)(test)
    test = pytest.mark.parametrize("client", SDK_CLIENTS)(test)
    return pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])(test)


@dataclasses.dataclass(frozen=True)
class Gateways(Generic[K]):
    """The embedded provider, and a gateway in front of each of the models on it."""

    provider: RunningServer
    gateways: dict[K, str]  # a model's key -> its gateway's URL
    models: dict[K, ChatModel]  # the gateways' models, asked directly too


@contextlib.contextmanager
def gateway_per_model(
    models_at: Callable[[str], dict[K, ChatModel]], thread: str
) -> Iterator[Gateways[K]]:
    """Start the embedded provider, the models ``models_at(its URL)`` gives and a gateway
    in front of each (on 127.0.0.1, all on one loop thread named ``thread``)."""
    provider = DevServer.run_in_thread()
    io = EventLoopThread(name=thread)
    models = models_at(provider.url)
    stack = contextlib.AsyncExitStack()

    async def start() -> dict[K, str]:
        return {
            key: await stack.enter_async_context(serving(create_app(model)))
            for key, model in models.items()
        }

    try:
        yield Gateways(provider, io.run(start()), models)
    finally:
        io.run(stack.aclose(), timeout=30)
        for model in models.values():
            model.close()  # asks each loop's connection pool to close ...
        io.run(pools_closed(), timeout=30)  # ... which the gateways' loop does here
        io.close()
        provider.close()


@contextlib.contextmanager
def serving_in_thread(app: web.Application) -> Iterator[str]:
    """Serve ``app`` on 127.0.0.1 from its own loop thread (for blocking clients)."""
    io = EventLoopThread(name="test-gateway")
    stop = io.run(_new_event())
    ready = threading.Event()
    address: list[str] = []

    def announce(url: str) -> None:
        address.append(url)
        ready.set()

    future = io.submit(run_app(app, "127.0.0.1", 0, announce=announce, stop=stop))
    future.add_done_callback(lambda _: ready.set())
    try:
        ready.wait(30)
        if not address:
            future.result(timeout=1)
            raise RuntimeError("the gateway did not start")
        yield address[0]
    finally:
        io.loop.call_soon_threadsafe(stop.set)
        with contextlib.suppress(Exception):
            future.result(timeout=5)
        io.close()


@contextlib.contextmanager
def serving_table(table: ModelTable, **options: Any) -> Iterator[str]:
    """Serve a gateway of ``table`` (with ``options``) from its own loop thread; at the end
    the table's models are closed on that loop, and their connection pools there too."""
    app = create_app(table, **options)

    async def close(_app: web.Application) -> None:
        table.close()
        await pools_closed()

    app.on_cleanup.append(close)
    with serving_in_thread(app) as url:
        yield url


SERVE = ("-m", "solon_events.cli", "serve")


@contextlib.contextmanager
def serve_command(
    *options: str, program: Sequence[str] = SERVE, nofile: int | None = None
) -> Iterator[subprocess.Popen[str]]:
    """``solon-events serve --port 0 OPTIONS`` in its own process (its address is the
    first line of its ``stdout``), or ``program`` (Python's arguments) with them, with at
    most ``nofile`` file descriptors when given (``resource.setrlimit``); terminated, then
    killed if need be, at the end."""

    def limit_files() -> None:
        if nofile is not None:
            import resource

            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    process = subprocess.Popen(
        [sys.executable, *program, "--port", "0", *options],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        preexec_fn=limit_files if nofile is not None else None,
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.terminate()
        try:
            process.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()


async def _new_event() -> asyncio.Event:
    return asyncio.Event()


def sse_payloads(body: bytes) -> list[bytes]:
    """The ``data:`` payloads of an SSE body, in order."""
    payloads = []
    for event in body.replace(b"\r\n", b"\n").split(b"\n\n"):
        lines = [line[5:].lstrip(b" ") for line in event.split(b"\n") if line.startswith(b"data:")]
        if lines:
            payloads.append(b"\n".join(lines))
    return payloads


def sse_events(body: bytes) -> list[tuple[str | None, bytes]]:
    """Each SSE event of ``body`` as (its ``id:``, its ``data:`` payload)."""
    found = []
    for event in body.replace(b"\r\n", b"\n").split(b"\n\n"):
        ids = [line[3:].strip().decode() for line in event.split(b"\n") if line.startswith(b"id:")]
        data = [line[5:].lstrip(b" ") for line in event.split(b"\n") if line.startswith(b"data:")]
        if data:
            found.append((ids[-1] if ids else None, b"\n".join(data)))
    return found


def sse_json(body: bytes) -> list[Any]:
    """The JSON payloads of an SSE body (``[DONE]`` left out)."""
    return [orjson.loads(p) for p in sse_payloads(body) if p != b"[DONE]"]


def node_or_skip() -> str:
    """The ``node`` executable; skips the test when Node.js is not installed."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("Node.js is not installed: the real front-end clients cannot run")
    return node


def chromium_or_skip() -> str:
    """The Chromium executable; skips the test when it is not installed (fails in CI)."""
    return executable_or_skip("chromium", "chromium-browser", package="chromium")


_NPM_FAILURE: dict[Path, str] = {}
"""Why ``npm ci`` could not install a clients folder, once tried: the next tests skip at once."""


def ensure_node_modules() -> None:
    """Install the pinned client packages (``npm ci``) when they are not there yet; skips
    the test, saying why, when npm is missing or cannot install them (no registry)."""
    if (CLIENTS / "node_modules" / ".package-lock.json").exists():
        return
    if CLIENTS not in _NPM_FAILURE:
        _NPM_FAILURE[CLIENTS] = _npm_ci(CLIENTS)
    if _NPM_FAILURE[CLIENTS]:
        pytest.skip(
            f"the real front-end clients cannot run: {_NPM_FAILURE[CLIENTS]} (run 'npm ci' "
            f"in {CLIENTS} once npm can reach its registry)"
        )


def _npm_ci(folder: Path) -> str:
    """Run ``npm ci`` in ``folder``; what went wrong, or "" when it installed."""
    npm = shutil.which("npm")
    if npm is None:
        return "Node.js is installed but npm is not"
    try:
        done = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=600,
        )
    except subprocess.TimeoutExpired:
        return "npm ci did not finish in 10 minutes"
    if done.returncode == 0:
        return ""
    said = [line.strip() for line in done.stderr.splitlines() if line.strip()]
    return f"npm ci failed ({done.returncode}): {' / '.join(said[-3:]) or 'it said nothing'}"


def run_node(script: str, *args: str, timeout: float = 60) -> Any:
    """Run ``tests/clients/<script>`` with ``args``; its one JSON line of output."""
    node = node_or_skip()
    ensure_node_modules()
    env = {**os.environ, "SUPPRESS_TRANSFORMATION_WARNINGS": "true"}
    done = subprocess.run(
        [node, str(CLIENTS / script), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=CLIENTS,
        env=env,
    )
    assert done.returncode == 0, f"{script} failed ({done.returncode}):\n{done.stderr}"
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert lines, f"{script} printed no result:\n{done.stdout}\n{done.stderr}"
    return orjson.loads(lines[-1])
