"""Transports: the response value, the aiohttp pool, replayed bytes, and a ChatModel given
any of them (the tool loop run from recorded bytes, with no server)."""

from __future__ import annotations

import asyncio
import gc
import threading
import time
import weakref
from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest
from recorded import DIALECTS, ENDPOINTS, text_body, weather_bodies

from solon_events import (
    ChatError,
    ChatEvent,
    ChatEventFilter,
    ChatEventType,
    ChatModel,
    ChatPrompt,
    tool,
)
from solon_events.client.transport import (
    AiohttpTransport,
    ChatTransport,
    HttpResponse,
    RecordedResponse,
    ReplayTransport,
)
from solon_events.devserver import DevServer
from solon_events.dialects.base import HttpRequest

T = ChatEventType
URLS = {dialect: "http://recorded.invalid" + path for dialect, path in ENDPOINTS.items()}
RESULT = "18°C and sunny"


@tool
def get_weather(city: str) -> str:
    """Current weather in a city.

    Args:
        city: The city's name.
    """
    return RESULT


async def read_all(response: HttpResponse) -> bytes:
    return b"".join([chunk async for chunk in response])


# --- the response value


async def test_a_response_gives_status_and_headers_then_the_body() -> None:
    closed: list[str] = []

    async def body() -> AsyncIterator[bytes]:
        yield b"data: 1\n\n"
        yield b"data: 2\n\n"

    async def close() -> None:
        closed.append("closed")

    response = HttpResponse(
        200, {"Content-Type": "text/event-stream", "Retry-After": "3"}, body(), close=close
    )
    assert response.status == 200
    assert response.headers["content-type"] == "text/event-stream"
    assert response.headers.get("retry-after") == "3"
    assert await read_all(response) == b"data: 1\n\ndata: 2\n\n"
    await response.aclose()
    await response.aclose()
    assert closed == ["closed"]
    assert repr(response) == "<HttpResponse 200>"


async def test_a_response_takes_a_whole_body_and_a_plain_close() -> None:
    closed: list[int] = []
    response = HttpResponse(404, [("x-a", "1")], b"not found", close=lambda: closed.append(1))
    assert await read_all(response) == b"not found"
    await response.aclose()
    assert closed == [1]


# --- ReplayTransport


async def test_replay_transport_answers_in_order_and_keeps_the_requests(tmp_path: Path) -> None:
    path = tmp_path / "body.sse"
    path.write_bytes(b"data: from a file\n\n")
    transport = ReplayTransport(
        b"data: one\n\n",
        RecordedResponse("data: two\n\n", status=503, headers={"retry-after": "1"}),
        path,
        ConnectionResetError("reset by peer"),
        chunk_size=3,
    )
    assert isinstance(transport, ChatTransport)
    requests = [HttpRequest(url=f"http://x.invalid/{n}") for n in range(5)]
    first = await transport.send(requests[0])
    assert first.status == 200 and [c async for c in first] == [b"dat", b"a: ", b"one", b"\n\n"]
    second = await transport.send(requests[1])
    assert second.status == 503 and second.headers["Retry-After"] == "1"
    assert await read_all(second) == b"data: two\n\n"
    assert await read_all(await transport.send(requests[2])) == b"data: from a file\n\n"
    with pytest.raises(ConnectionResetError):
        await transport.send(requests[3])
    with pytest.raises(ChatError, match="no recorded response left for request 5"):
        await transport.send(requests[4])
    assert transport.requests == requests


def test_a_recorded_file_is_read_at_once(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        ReplayTransport(tmp_path / "missing.sse")


# --- a ChatModel given a transport


def collect(prompt: ChatPrompt) -> list[ChatEvent]:
    """Every event of one subscription, once it has ended."""
    events: list[ChatEvent] = []
    done = threading.Event()
    prompt.event_filter(ChatEventFilter.all()).stream().subscribe(
        events.append, lambda _: done.set(), done.set
    )
    assert done.wait(5.0)
    return events


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("chunk_size", [None, 1], ids=["whole", "byte-by-byte"])
def test_the_tool_loop_runs_from_recorded_bytes_without_a_server(
    dialect: str, chunk_size: int | None
) -> None:
    transport = ReplayTransport(*weather_bodies(dialect, RESULT), chunk_size=chunk_size)
    with ChatModel(URLS[dialect], "weather", dialect=dialect, transport=transport) as model:
        events = collect(model.prompt("Weather in Paris?").tools(get_weather))
    types = [e.type for e in events]
    assert types[0] is T.RESPONSE_START and types[-1] is T.RESPONSE_END
    assert types.count(T.STEP_START) == 2 and types.count(T.TOOL_RESULT) == 1
    (result,) = [e for e in events if e.type is T.TOOL_RESULT]
    assert result.text == RESULT and result.tool_call is not None
    assert result.tool_call.arguments == {"city": "Paris"}
    final = events[-1].response
    assert final is not None and final.text == f"It is {RESULT} in Paris right now."
    assert len(transport.requests) == 2
    assert transport.requests[0].url.startswith(URLS[dialect])
    assert RESULT in orjson.dumps(transport.requests[1].body).decode()


class BytesTransport:
    """A transport written by a user: status and headers first, then the body in pieces."""

    def __init__(self, body: bytes) -> None:
        self.body = body
        self.closed = False

    async def send(self, request: HttpRequest) -> HttpResponse:
        async def pieces() -> AsyncIterator[bytes]:
            for i in range(0, len(self.body), 7):
                await asyncio.sleep(0)
                yield self.body[i : i + 7]

        return HttpResponse(200, {"content-type": "text/event-stream"}, pieces())

    async def aclose(self) -> None:
        self.closed = True


def test_any_object_with_send_is_a_transport_and_is_closed_with_the_model() -> None:
    transport = BytesTransport(text_body("openai", "Hello", " from", " a transport"))
    model = ChatModel(URLS["openai"], "m", transport=transport)
    assert model.transport is transport
    assert model.prompt("hi").call().text == "Hello from a transport"
    model.close()
    assert transport.closed


def test_transport_and_connection_limit_are_checked() -> None:
    with pytest.raises(ValueError, match="connection_limit"):
        ChatModel(URLS["openai"], "m", transport=ReplayTransport(), connection_limit=4)
    with pytest.raises(ValueError, match="connection_limit"):
        ChatModel(URLS["openai"], "m", connection_limit=-1)
    with pytest.raises(TypeError, match="send"):
        ChatModel(URLS["openai"], "m", transport=object())  # type: ignore[arg-type]
    model = ChatModel(URLS["openai"], "m", connection_limit=3)
    assert isinstance(model.transport, AiohttpTransport)
    assert model.transport.connection_limit == 3
    model.close()


# --- the aiohttp pool


def test_connection_limit_is_the_pool_size() -> None:
    """With one connection, a second stream waits for the first to end."""
    server = DevServer.run_in_thread()
    model = ChatModel(server.url + "/v1/chat/completions", "gate", connection_limit=1)
    try:
        first_delta = threading.Event()
        outcomes: list[str] = []

        def on_next(event: ChatEvent) -> None:
            if event.type is T.TEXT_DELTA:
                first_delta.set()

        def on_completed() -> None:
            outcomes.append("done")

        model.prompt("one").stream().subscribe(on_next, on_completed=on_completed)
        assert first_delta.wait(5.0)
        model.prompt("two").stream().subscribe(on_completed=on_completed)
        time.sleep(0.3)
        assert len(server.requests) == 1, "the second request must wait for the only connection"
        server.open_gate()
        deadline = time.monotonic() + 5.0
        while len(outcomes) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert outcomes == ["done", "done"] and len(server.requests) == 2
    finally:
        model.close()
        server.close()


def test_an_ended_loop_is_not_kept_alive_by_its_pool() -> None:
    """Each ``asyncio.run(acall())`` makes a pool on its own loop; once the loop has ended,
    neither the pool nor the loop is kept (#29.12: every closed loop stayed alive, with its
    aiohttp session, in the transport's pools)."""
    server = DevServer.run_in_thread()
    loops: list[weakref.ref[asyncio.AbstractEventLoop]] = []
    try:
        with ChatModel(server.url + "/v1/chat/completions", "echo") as model:

            async def ask() -> str:
                loops.append(weakref.ref(asyncio.get_running_loop()))
                return (await model.prompt("hello there").acall()).text

            answers = [asyncio.run(ask()) for _ in range(20)]
            assert answers == ["hello there"] * 20
            gc.collect()
            assert [ref() for ref in loops] == [None] * 20
            assert isinstance(model.transport, AiohttpTransport)
            assert not model.transport._pools
    finally:
        server.close()


def test_a_loop_closed_without_shutting_its_generators_down_is_forgotten() -> None:
    """A loop closed by hand (no ``shutdown_asyncgens()``) is dropped when the next pool
    is made."""
    server = DevServer.run_in_thread()
    try:
        with ChatModel(server.url + "/v1/chat/completions", "echo") as model:
            loop = asyncio.new_event_loop()
            assert loop.run_until_complete(model.prompt("by hand").acall()).text == "by hand"
            loop.close()
            gone = weakref.ref(loop)
            del loop
            assert asyncio.run(model.prompt("next").acall()).text == "next"
            gc.collect()
            assert gone() is None
    finally:
        server.close()
