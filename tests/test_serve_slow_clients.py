"""Clients that read nothing: dropped after the gateway's write timeout (their model
requests cancelled), the bytes waiting for all clients together capped, and the memory of
100 such clients on ``solon-events serve`` bounded and given back once they are dropped.

The provider is a small hostile aiohttp app on 127.0.0.1 that floods each request with
large text deltas and then waits (or goes on) until the gateway hangs up; it counts the
requests it saw cut off."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import platform
import signal
import socket
import subprocess
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp import web
from flooding import POSTS, Flood, flooding_provider, posting_client, small_send_buffer, until
from serving import serve_command, sse_json
from sockets import open_connections

from solon_events import ChatModel
from solon_events.serve import GATEWAY, create_app, serving


async def read_all(sock: socket.socket) -> tuple[bytes, bool]:
    """Everything the connection still gives, and whether it ended with a reset."""
    loop = asyncio.get_running_loop()
    sock.setblocking(False)
    body = b""
    try:
        while chunk := await asyncio.wait_for(loop.sock_recv(sock, 1 << 16), 30):
            body += chunk
    except ConnectionResetError:
        return body, True
    finally:
        sock.close()
    return body, False


@contextlib.asynccontextmanager
async def flooded_gateway(
    size: int, *, then_wait: bool, **options: Any
) -> AsyncIterator[tuple[int, Flood, web.Application]]:
    """A gateway (``create_app`` ``options``, small send buffers) in front of a
    :func:`~flooding.flooding_provider` of ``size`` bytes: its port, the flood, the app."""
    async with flooding_provider(size, then_wait=then_wait) as (provider, flood):
        model = ChatModel(provider, "m")
        try:
            app = create_app(model, **options)
            app.on_response_prepare.append(small_send_buffer)
            async with serving(app) as url:
                yield int(url.rsplit(":", 1)[1]), flood, app
        finally:
            await asyncio.to_thread(model.close)


@pytest.mark.parametrize("path", list(POSTS))
async def test_a_client_that_reads_nothing_is_dropped_after_the_write_timeout(path: str) -> None:
    """The model sends 8 MiB and waits; the client reads nothing. Nothing overflows
    (``max_buffer`` is larger), so only the write timeout can end it: the client is
    dropped (its connection reset), its model request cut off, what waited freed. The
    provider routes (an SDK's stream) are held to it as ``/events`` is."""
    options = {"write_timeout": 0.5, "max_buffer": 64 << 20}
    async with flooded_gateway(8 << 20, then_wait=True, **options) as (port, flood, app):
        client = posting_client(port, path)
        await until(lambda: flood.cut == 1, "the model request was cut off")
        await until(lambda: open_connections(port) == 0, "the client was dropped")
        body, reset = await read_all(client)
        backlog = app[GATEWAY]._backlog.size
    assert reset, "the client's connection was closed, not dropped"
    assert b"read too slowly" not in body  # dropped, not stopped for its buffer
    assert flood.finished == 0 and backlog == 0


async def test_a_whole_body_the_client_does_not_read_is_dropped_after_the_write_timeout() -> None:
    """The answer (8 MiB of text, not streamed: the provider routes without ``stream``)
    waits for a client that reads nothing: dropped after the write timeout, as a stream's
    client is."""
    whole = orjson.dumps({"model": "m", "messages": [{"role": "user", "content": "Tell me."}]})
    async with flooded_gateway(8 << 20, then_wait=False, write_timeout=0.5) as (port, flood, _):
        client = posting_client(port, "/v1/chat/completions", whole)
        await until(lambda: flood.finished == 1, "the upstream answered")
        await until(lambda: open_connections(port) == 0, "the client was dropped", 20)
        _body, reset = await read_all(client)
    assert reset, "the client's connection was closed, not dropped"


async def test_a_client_that_reads_slowly_but_without_pause_is_not_dropped() -> None:
    """The client takes 2 KiB every 50 ms: each of the gateway's 64 KiB writes waits
    longer than the write timeout (1 s), but the client never stops reading, so it is
    served to the end of the answer."""
    async with flooding_provider(48 << 10, then_wait=False) as (provider, flood):
        model = ChatModel(provider, "m")
        try:
            app = create_app(model, write_timeout=1.0)
            app.on_response_prepare.append(small_send_buffer)
            async with serving(app) as url:
                client = posting_client(int(url.rsplit(":", 1)[1]))
                client.setblocking(False)
                loop, body = asyncio.get_running_loop(), b""
                try:
                    while chunk := await asyncio.wait_for(loop.sock_recv(client, 2048), 30):
                        body += chunk
                        await asyncio.sleep(0.05)
                finally:
                    client.close()
        finally:
            await asyncio.to_thread(model.close)
    events = sse_json(body.split(b"\r\n\r\n", 1)[1])
    assert flood.finished == 1 and flood.cut == 0
    assert events[-1]["type"] == "RESPONSE_END", events[-1]
    assert sum(len(e.get("text") or "") for e in events if e["type"] == "TEXT_DELTA") >= 48 << 10


async def test_what_waits_for_all_clients_together_is_capped() -> None:
    """Three clients read nothing; each alone may buffer 64 MiB, all together 1 MiB. Each
    response is stopped as it passes the shared cap; its client, reading at last, finds
    the protocol's error at the end. Nothing is left waiting afterwards."""
    async with flooding_provider(4 << 20, then_wait=True) as (provider, flood):
        model = ChatModel(provider, "m")
        try:
            app = create_app(model, max_buffer=64 << 20, max_total_buffer=1 << 20)
            app.on_response_prepare.append(small_send_buffer)
            async with serving(app) as url:
                port = int(url.rsplit(":", 1)[1])
                clients = [posting_client(port) for _ in range(3)]
                await until(lambda: flood.cut == 3, "every model request was cut off")
                bodies = [await read_all(client) for client in clients]
                await until(lambda: app[GATEWAY]._backlog.size == 0, "the backlog emptied")
        finally:
            await asyncio.to_thread(model.close)
    for body, reset in bodies:
        assert not reset
        last = sse_json(body.split(b"\r\n\r\n", 1)[1])[-1]
        assert last["type"] == "ERROR", last
        assert "the gateway's clients read too slowly" in last["text"]
        assert "(the limit is 1048576)" in last["text"]
        assert len(body) < 8 << 20


def sockets_of(pid: int) -> int:
    """How many sockets process ``pid`` holds open."""
    count = 0
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            count += os.readlink(fd).startswith("socket:")
    return count


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


async def trimmed_rss_mib(process: subprocess.Popen[str], url: str) -> float:
    """The gateway's RSS once its allocator gave back the memory it keeps free (its
    SIGUSR1 handler has run by the time it answers a request)."""
    os.kill(process.pid, signal.SIGUSR1)
    await asyncio.to_thread(lambda: urllib.request.urlopen(url, timeout=30).read())
    return rss_mib(process.pid)


CLIENTS = 100
TRIMMING_SERVE = (str(Path(__file__).resolve().parent / "serve_with_trim.py"),)


async def clients_let_go(
    process: subprocess.Popen[str], port: int, flood: Flood, sockets: int, wave: int
) -> float:
    """Connect ``CLIENTS`` clients that read nothing, wait until the gateway has cut off
    each one's model request and let go of each (it holds no more sockets than
    ``sockets``), then close them; the gateway's highest RSS meanwhile (MiB)."""
    peak = [rss_mib(process.pid)]
    clients = [posting_client(port) for _ in range(CLIENTS)]

    def let_go() -> bool:
        peak.append(rss_mib(process.pid))
        return flood.cut == CLIENTS * wave and sockets_of(process.pid) <= sockets

    def state() -> str:
        return (
            f"wave {wave}: every client let go ({flood.started} model requests, "
            f"{flood.cut} cut off, the gateway holds {sockets_of(process.pid)} "
            f"sockets, {sockets} before)"
        )

    try:
        await until(let_go, state, timeout=300)
    finally:
        for client in clients:
            client.close()
    return max(peak)


async def test_100_clients_that_read_nothing_are_let_go_and_their_memory_given_back() -> None:
    """``solon-events serve`` and 100 clients that read nothing, twice over. Each time
    every model request is cut off and the gateway lets every client go (it holds no
    socket more than before); its RSS stays bounded while they hang on, and once they
    are gone it holds nothing more than before the wave: what is left is the free memory
    glibc keeps for reuse, which it gives back when asked (``malloc_trim``). On main a
    client that read nothing was kept forever, with what waited for it (100 such clients
    held ~2 GiB a minute later)."""
    if not Path("/proc/self/status").exists() or platform.libc_ver()[0] != "glibc":
        pytest.skip("reads RSS from /proc and trims glibc's heap")
    options = ("--write-timeout", "1", "--max-buffer", "512KiB", "--max-total-buffer", "16MiB")
    async with flooding_provider(64 << 20, then_wait=False) as (provider, flood):
        with serve_command(
            "--url", provider, "--model", "m", *options, program=TRIMMING_SERVE
        ) as process:
            assert process.stdout is not None
            url = (await asyncio.to_thread(process.stdout.readline)).strip()
            port = int(url.rsplit(":", 1)[1])
            baseline, sockets = await trimmed_rss_mib(process, url), sockets_of(process.pid)
            peaks, after = [], []
            for wave in (1, 2):
                peaks.append(await clients_let_go(process, port, flood, sockets, wave))
                after.append(await trimmed_rss_mib(process, url))
    print(
        f"\n{CLIENTS} clients reading nothing, twice: RSS {baseline:.0f} MiB before, peaks "
        f"{peaks[0]:.0f} and {peaks[1]:.0f} MiB, after each wave (trimmed) {after[0]:.0f} "
        f"and {after[1]:.0f} MiB"
    )
    assert flood.started == flood.cut == 2 * CLIENTS and flood.finished == 0
    for peak_mib, after_mib in zip(peaks, after):
        assert peak_mib - baseline < CLIENTS * 6, "more than 6 MiB a client"
        assert after_mib - baseline < 40, "memory still held after the clients were let go"


class _LeftRequest:
    """What the gateway's watch reads of a request: its transport (here a real one,
    closed: the client left)."""

    def __init__(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport


async def test_a_write_after_the_client_left_leaves_no_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A response's work that goes on after its client left (its cancellation did not
    stop it before its next write) and fails writing to the closed connection is no "Task
    exception was never retrieved" in the log (the chaos soak through the gateways found
    ~60 in 10,000 responses); any other failure is logged by the gateway."""
    from solon_events.serve.gateway import _until

    loop = asyncio.get_running_loop()
    ours, theirs = socket.socketpair()
    transport, _protocol = await loop.create_connection(asyncio.Protocol, sock=ours)
    transport.close()
    theirs.close()

    async def writes_anyway(error: Exception) -> None:
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(5)
        raise error

    caplog.set_level(logging.INFO)
    left: Any = _LeftRequest(transport)
    assert not await _until(writes_anyway(ConnectionResetError("closing transport")), left)
    assert not await _until(writes_anyway(RuntimeError("a bug")), left)
    await asyncio.sleep(0.05)
    gc.collect()
    await asyncio.sleep(0.05)
    assert not [r for r in caplog.records if "never retrieved" in r.getMessage()]
    (logged,) = [r for r in caplog.records if r.name == "solon_events.serve"]
    assert logged.exc_info is not None and str(logged.exc_info[1]) == "a bug"
