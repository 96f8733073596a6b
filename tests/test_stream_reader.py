"""StreamReader.frames over real HTTP (the aiohttp transport): tiny aiohttp apps on
127.0.0.1 shape each response.

Each app runs on the test's event loop; the reader runs on its own I/O thread, so the test
waits for it with ``asyncio.to_thread``.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from aiohttp import web
from outcomes import Ending

from solon_events.client.retry import RetryPolicy
from solon_events.client.stream_reader import StreamReader, TimeBudgets
from solon_events.client.transport import AiohttpTransport
from solon_events.dialects.base import HttpRequest, get_dialect
from solon_events.event_model.errors import (
    ChatConnectionError,
    ChatHttpError,
    ChatProtocolError,
    ChatTimeoutError,
)
from solon_events.support.loop_thread import EventLoopThread
from solon_events.wire.sse import Frame

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
OPENAI = get_dialect("openai")
SECRET = "sk-test-SECRET-123"


@asynccontextmanager
async def serve(handler: Handler) -> AsyncIterator[str]:
    """Serve ``handler`` for POST /stream on 127.0.0.1; yields the URL."""
    app = web.Application()
    app.router.add_post("/stream", handler)
    runner = web.AppRunner(app, access_log=None, handler_cancellation=True)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}/stream"
    finally:
        await runner.cleanup()


def make_reader(max_retries: int = 0, max_frame_size: int = 1 << 24, **budgets: Any) -> Reader:
    """A reader over the aiohttp transport on its own I/O thread (no retries by default)."""
    budgets = {"timeout": 2.0, "idle_timeout": 2.0, "total_timeout": 5.0, **budgets}
    return Reader(
        AiohttpTransport(),
        EventLoopThread(),
        OPENAI,
        budgets=TimeBudgets(**budgets),
        max_frame_size=max_frame_size,
        retry_policy=RetryPolicy(max_retries=max_retries, initial_delay=0.01),
    )


class Reader(StreamReader):
    """A StreamReader that closes its transport and I/O thread."""

    def close(self) -> None:
        aclose = self.transport.aclose  # type: ignore[attr-defined]
        self.io.run(aclose())
        self.io.close()


@pytest.fixture
def transport() -> Iterator[Reader]:
    """A reader with short budgets, closed after the test."""
    made = make_reader()
    yield made
    made.close()


class Frames(Ending):
    """What one subscription to ``transport.frames`` received."""

    def __init__(self) -> None:
        super().__init__()
        self.frames: list[Frame] = []
        self.first = threading.Event()

    def on_next(self, frame: Any) -> None:
        self.frames.append(frame)
        self.first.set()

    @property
    def data(self) -> list[str]:
        return [frame.data for frame in self.frames]


def request(url: str, **headers: str) -> HttpRequest:
    return HttpRequest(url=url, headers=headers, body={"model": "m", "stream": True})


async def fetch(transport: StreamReader, url: str, **headers: str) -> Frames:
    """Subscribe to the frames of a POST to ``url`` and wait for the end."""
    got = Frames()
    transport.frames(request(url, **headers)).subscribe(got.on_next, got.on_error, got.on_completed)
    assert await asyncio.to_thread(got.done.wait, 5.0), "the frames did not end in time"
    return got


def sse(*payloads: str) -> bytes:
    return b"".join(f"data: {p}\n\n".encode() for p in payloads)


async def stream_response(request: web.Request, content_type: str) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": content_type})
    await response.prepare(request)
    return response


# --- frames as bytes arrive


async def test_frames_arrive_as_the_bytes_arrive(transport: StreamReader) -> None:
    release = asyncio.Event()

    async def handler(request: web.Request) -> web.StreamResponse:
        response = await stream_response(request, "text/event-stream")
        await response.write(sse('{"n": 1}'))
        await release.wait()
        await response.write(sse('{"n": 2}', "[DONE]"))
        await response.write_eof()
        return response

    async with serve(handler) as url:
        got = Frames()
        transport.frames(request(url)).subscribe(got.on_next, got.on_error, got.on_completed)
        assert await asyncio.to_thread(got.first.wait, 5.0)
        assert got.data == ['{"n": 1}'] and not got.done.is_set()
        release.set()
        assert await asyncio.to_thread(got.done.wait, 5.0)
    assert got.completed and got.error is None
    assert got.data == ['{"n": 1}', '{"n": 2}', "[DONE]"]


async def test_frames_split_across_many_chunks(transport: StreamReader) -> None:
    body = sse('{"text": "héllo wörld"}', '{"text": "two"}') + b"data: [DONE]\r\n\r\n"

    async def handler(request: web.Request) -> web.StreamResponse:
        response = await stream_response(request, "text/event-stream")
        for i in range(0, len(body), 3):
            await response.write(body[i : i + 3])
            await asyncio.sleep(0.001)
        await response.write_eof()
        return response

    async with serve(handler) as url:
        got = await fetch(transport, url)
    assert got.completed
    assert got.data == ['{"text": "héllo wörld"}', '{"text": "two"}', "[DONE]"]


async def test_json_lines_body(transport: StreamReader) -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        response = await stream_response(request, "application/x-ndjson")
        await response.write(b'{"a": 1}\n{"b": 2}\n{"c": 3}')
        await response.write_eof()
        return response

    async with serve(handler) as url:
        got = await fetch(transport, url)
    assert got.completed and got.data == ['{"a": 1}', '{"b": 2}', '{"c": 3}']


async def test_headers_and_body_are_posted(transport: StreamReader) -> None:
    seen: dict[str, Any] = {}

    async def handler(request: web.Request) -> web.StreamResponse:
        seen["auth"] = request.headers.get("Authorization")
        seen["body"] = await request.json()
        response = await stream_response(request, "text/event-stream")
        await response.write(sse("[DONE]"))
        return response

    async with serve(handler) as url:
        got = await fetch(transport, url, Authorization=f"Bearer {SECRET}")
    assert got.completed
    assert seen == {"auth": f"Bearer {SECRET}", "body": {"model": "m", "stream": True}}


# --- bodies that are not streams


async def test_empty_body_is_a_protocol_error(transport: StreamReader) -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        return web.Response(body=b"", content_type="text/event-stream")

    async with serve(handler) as url:
        got = await fetch(transport, url)
    assert isinstance(got.error, ChatProtocolError)
    assert "empty body" in str(got.error) and url in str(got.error)
    assert got.frames == []


@pytest.mark.parametrize("body", [b"\n\n  \n", b": keep-alive\n\n: still here\n\n"])
async def test_a_body_without_a_frame_is_a_protocol_error(
    transport: StreamReader, body: bytes
) -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        return web.Response(body=body, content_type="text/event-stream")

    async with serve(handler) as url:
        got = await fetch(transport, url)
    assert isinstance(got.error, ChatProtocolError)
    assert f"{len(body)} bytes and no frame" in str(got.error)


async def test_unrecognisable_body_is_a_protocol_error(transport: StreamReader) -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        return web.Response(text="Welcome to nginx!\n", content_type="text/plain")

    async with serve(handler) as url:
        got = await fetch(transport, url)
    assert isinstance(got.error, ChatProtocolError)
    assert "Welcome to nginx" in str(got.error)


@pytest.mark.parametrize("content_type", ["text/html", "application/xml", "text/xml"])
async def test_markup_is_a_protocol_error_about_api_url(
    transport: StreamReader, content_type: str
) -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        return web.Response(text="<html><body>Login</body></html>", content_type=content_type)

    async with serve(handler) as url:
        got = await fetch(transport, url)
    assert isinstance(got.error, ChatProtocolError)
    assert "check api_url" in str(got.error) and content_type in str(got.error)


# --- HTTP errors


async def test_error_status_with_json_body(transport: StreamReader) -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        body = {"error": {"message": "Model not found", "type": "invalid_request_error"}}
        return web.json_response(body, status=404)

    async with serve(handler) as url:
        got = await fetch(transport, url)
    error = got.error
    assert isinstance(error, ChatHttpError)
    assert error.status == 404 and error.provider_message == "Model not found"
    assert error.provider_error == {
        "error": {"message": "Model not found", "type": "invalid_request_error"}
    }
    assert error.url == url


async def test_error_status_without_json_body_keeps_a_snippet(transport: StreamReader) -> None:
    text = "upstream connect error or disconnect/reset before headers. " * 10

    async def handler(request: web.Request) -> web.StreamResponse:
        return web.Response(text=text, status=503, content_type="text/plain")

    async with serve(handler) as url:
        got = await fetch(transport, url)
    error = got.error
    assert isinstance(error, ChatHttpError)
    assert error.status == 503 and error.provider_error == {}
    assert error.provider_message is not None
    assert error.provider_message.startswith("upstream connect error or disconnect/reset")
    assert len(error.provider_message) < len(text) and error.provider_message.endswith("...")
    assert "HTTP 503" in str(error)


async def test_error_status_with_empty_body_uses_the_reason(transport: StreamReader) -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        return web.Response(status=502)

    async with serve(handler) as url:
        got = await fetch(transport, url)
    assert isinstance(got.error, ChatHttpError)
    assert got.error.status == 502 and got.error.provider_message == "Bad Gateway"


# --- limits, budgets, connection


@pytest.mark.parametrize("first", [True, False], ids=["first-frame", "later-frame"])
async def test_a_frame_beyond_max_frame_size_is_a_protocol_error(first: bool) -> None:
    small = make_reader(max_frame_size=1024)

    async def handler(request: web.Request) -> web.StreamResponse:
        response = await stream_response(request, "text/event-stream")
        if not first:
            await response.write(sse('{"ok": true}'))
            await asyncio.sleep(0.1)  # its own chunk: a failing feed() drops its batch
        await response.write(b'data: {"text": "')
        for _ in range(8):
            await response.write(b"x" * 512)
        await response.write(b'"}\n\n')
        await response.write_eof()
        return response

    try:
        async with serve(handler) as url:
            got = await fetch(small, url)
    finally:
        small.close()
    assert isinstance(got.error, ChatProtocolError)
    assert "max_frame_size=1024" in str(got.error)
    assert got.data == ([] if first else ['{"ok": true}'])


async def test_idle_timeout_at_the_transport(transport: StreamReader) -> None:
    short = make_reader(timeout=2.0, idle_timeout=0.2)
    gone = asyncio.Event()

    async def handler(request: web.Request) -> web.StreamResponse:
        response = await stream_response(request, "text/event-stream")
        await response.write(sse('{"n": 1}'))
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            gone.set()
            raise
        return response

    try:
        async with serve(handler) as url:
            got = await fetch(short, url)
            await asyncio.wait_for(gone.wait(), 1.0)
    finally:
        short.close()
    assert isinstance(got.error, ChatTimeoutError) and got.error.budget == "idle_timeout"
    assert got.data == ['{"n": 1}']


async def test_dispose_cancels_the_request(transport: StreamReader) -> None:
    gone = asyncio.Event()

    async def handler(request: web.Request) -> web.StreamResponse:
        response = await stream_response(request, "text/event-stream")
        try:
            for n in range(1000):
                await response.write(sse(f'{{"n": {n}}}'))
                await asyncio.sleep(0.005)
        except (asyncio.CancelledError, ConnectionResetError):
            gone.set()
            raise
        return response

    async with serve(handler) as url:
        got = Frames()
        subscription = transport.frames(request(url)).subscribe(
            got.on_next, got.on_error, got.on_completed
        )
        assert await asyncio.to_thread(got.first.wait, 5.0)
        await asyncio.to_thread(subscription.dispose)
        count = len(got.frames)
        await asyncio.wait_for(gone.wait(), 1.0)
        await asyncio.sleep(0.05)
    assert len(got.frames) == count and not got.done.is_set()


async def test_connection_refused_is_a_connection_error(transport: StreamReader) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    got = await fetch(transport, f"http://user:pw@127.0.0.1:{port}/v1/x?key={SECRET}")
    assert isinstance(got.error, ChatConnectionError)
    assert f"http://***@127.0.0.1:{port}/v1/x?key=***" in str(got.error)
    assert SECRET not in str(got.error) and "pw" not in str(got.error)


@pytest.mark.parametrize("name", ["timeout", "idle_timeout", "total_timeout"])
def test_budgets_must_be_positive(name: str) -> None:
    with pytest.raises(ValueError, match=name):
        TimeBudgets(**{name: 0})
