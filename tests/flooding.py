"""A hostile provider for the gateway's slow-client tests: it floods each request with
large text deltas as fast as they are taken (:func:`flooding_provider`), and what the
tests that use it share."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import AsyncIterator
from typing import Any

import orjson
from aiohttp import web

from solon_events.serve import serving

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


def posting_client(port: int, path: str = "/events", body: bytes | None = None) -> socket.socket:
    """A client that posts to ``path`` (``body``, or the path's in :data:`POSTS`) and
    reads nothing yet (its receive buffer small)."""
    body = POSTS[path] if body is None else body
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
