"""Clients that read nothing: dropped after the gateway's write timeout (their model
requests cancelled), the bytes waiting for all clients together capped, and the memory of
100 such clients on ``solon-events serve`` bounded and given back once they are dropped.

The provider is a small hostile aiohttp app on 127.0.0.1 that floods each request with
large text deltas and then waits (or goes on) until the gateway hangs up; it counts the
requests it saw cut off."""

from __future__ import annotations

import asyncio
import contextlib
import os
import platform
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp import web
from serving import serve_command, sse_json
from sockets import open_connections

from solon_events import ChatModel
from solon_events.serve import GATEWAY, create_app, serving

DELTA = "x" * 16_000
FRAME = (
    b"data: "
    + orjson.dumps(
        {
            "id": "c",
            "object": "chat.completion.chunk",
            "model": "m",
            "choices": [{"index": 0, "delta": {"content": DELTA}}],
        }
    )
    + b"\n\n"
)
BODY = orjson.dumps({"messages": [{"role": "user", "content": "Tell me everything."}]})


class Flood:
    """The provider's side: how many requests came, were cut off, or ran to their end."""

    def __init__(self) -> None:
        self.started = 0
        self.cut = 0
        self.finished = 0


@contextlib.asynccontextmanager
async def flooding_provider(size: int, *, then_wait: bool) -> AsyncIterator[tuple[str, Flood]]:
    """Each request gets ``size`` bytes of text deltas as fast as it takes them, then
    (``then_wait``) nothing more until it is cut off, or the end of the answer."""
    flood = Flood()

    async def chat(request: web.Request) -> web.StreamResponse:
        flood.started += 1
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        try:
            await response.prepare(request)
            for _ in range(size // len(FRAME) + 1):
                await response.write(FRAME)
            if then_wait:
                await asyncio.Event().wait()
            await response.write(b"data: [DONE]\n\n")
            flood.finished += 1
        except ConnectionError:
            flood.cut += 1
        except asyncio.CancelledError:
            flood.cut += 1
            raise
        return response

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    async with serving(app) as url:
        yield url + "/v1/chat/completions", flood


# A streamed request to the gateway's own /events, and to two of its provider routes.
POSTS = {
    "/events": BODY,
    "/v1/chat/completions": orjson.dumps(
        {"model": "m", "stream": True, "messages": [{"role": "user", "content": "Tell me."}]}
    ),
    "/v1/messages": orjson.dumps(
        {
            "model": "m",
            "max_tokens": 100,
            "stream": True,
            "messages": [{"role": "user", "content": "Tell me."}],
        }
    ),
}


def posting_client(port: int, path: str = "/events") -> socket.socket:
    """A client that posts to ``path`` and reads nothing yet (its receive buffer small)."""
    body = POSTS[path]
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    sock.sendall(
        f"POST {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n".encode()
        + b"Content-Type: application/json\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    return sock


async def small_send_buffer(request: web.Request, response: web.StreamResponse) -> None:
    """Make the gateway's side of the connection buffer little, to fill it quickly."""
    sock = request.transport.get_extra_info("socket") if request.transport else None
    if sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8192)


async def until(condition: Any, what: Any, timeout: float = 60.0) -> None:
    """Wait until ``condition()`` holds (a guard against hanging, not a timed check);
    ``what`` says what was awaited (a string, or a function giving one)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"never happened: {what() if callable(what) else what}")
        await asyncio.sleep(0.05)


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


@pytest.mark.parametrize("path", list(POSTS))
async def test_a_client_that_reads_nothing_is_dropped_after_the_write_timeout(path: str) -> None:
    """The model sends 8 MiB and waits; the client reads nothing. Nothing overflows
    (``max_buffer`` is larger), so only the write timeout can end it: the client is
    dropped (its connection reset), its model request cut off, what waited freed. The
    provider routes (an SDK's stream) are held to it as ``/events`` is."""
    async with flooding_provider(8 << 20, then_wait=True) as (provider, flood):
        model = ChatModel(provider, "m")
        try:
            app = create_app(model, write_timeout=0.5, max_buffer=64 << 20)
            app.on_response_prepare.append(small_send_buffer)
            async with serving(app) as url:
                port = int(url.rsplit(":", 1)[1])
                client = posting_client(port, path)
                await until(lambda: flood.cut == 1, "the model request was cut off")
                await until(lambda: open_connections(port) == 0, "the client was dropped")
                body, reset = await read_all(client)
                backlog = app[GATEWAY]._backlog.size
        finally:
            await asyncio.to_thread(model.close)
    assert reset, "the client's connection was closed, not dropped"
    assert b"read too slowly" not in body  # dropped, not stopped for its buffer
    assert flood.finished == 0 and backlog == 0


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
