"""Time budgets per response (#29.5): ``total_timeout`` covers every step, retry wait and
tool run of a response, ``tool_timeout`` each tool run, and a Retry-After wait counts
against ``timeout`` too; ``max_retry_after`` is the model's.

Against the embedded provider, or a small aiohttp app on 127.0.0.1 that plays the provider
slowly. No test asserts on time: each checks which budget ran out (or that none did), with
budgets far from what the provider takes.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator

import orjson
import pytest
from aiohttp import web
from outcomes import Outcome, outcome_of
from recorded import text_body
from serving import serving_in_thread

from solon_events import (
    ChatEvent,
    ChatEventType,
    ChatHttpError,
    ChatModel,
    ChatTimeoutError,
    ToolCallError,
    tool,
)
from solon_events.client.transport import RecordedResponse, ReplayTransport
from solon_events.devserver import DevServer, RunningServer

T = ChatEventType
RECORDED = "http://recorded.invalid/v1/chat/completions"


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    running = DevServer.run_in_thread()
    yield running
    running.close()


released = threading.Event()
"""Set at the end of the module: the tools that never return are let go."""


@pytest.fixture(scope="module", autouse=True)
def _let_the_stuck_tools_go() -> Iterator[None]:
    yield
    released.set()


@tool
async def stuck_weather(city: str) -> str:
    """The weather in a city, never returned.

    Args:
        city: The city's name.
    """
    await asyncio.Event().wait()
    return "never"


@tool
def blocked_weather(city: str) -> str:
    """The weather in a city, from a call that blocks its thread.

    Args:
        city: The city's name.
    """
    released.wait(60)
    return "too late"


@tool
def get_weather(city: str) -> str:
    """Current weather in a city.

    Args:
        city: The city's name.
    """
    return "sunny"


def weather(server: RunningServer, **options: object) -> ChatModel:
    return ChatModel(server.url + "/v1/chat/completions", "weather", **options)  # type: ignore[arg-type]


def failed_with(outcome: Outcome, kind: type[Exception]) -> Exception:
    error = outcome.error
    assert isinstance(error, kind), error
    assert outcome.events[-1].type is T.ERROR and outcome.events[-1].error is error
    return error


# --- total_timeout: the whole response


def _chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    payload = {"id": "c-1", "object": "chat.completion.chunk", "choices": [choice]}
    return b"data: " + orjson.dumps(payload) + b"\n\n"


def slow_steps_app(step_seconds: float, tool_steps: int) -> web.Application:
    """An OpenAI-compatible provider whose every answer takes ``step_seconds`` (a frame
    every tenth of it): a call of ``get_weather`` for the first ``tool_steps`` steps, then
    the answer."""

    async def chat(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        done = sum(1 for message in body["messages"] if message["role"] == "tool")
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        if done < tool_steps:
            call = {"index": 0, "id": f"call_{done}", "type": "function"}
            pieces = [{**call, "function": {"name": "get_weather", "arguments": ""}}]
            pieces += [
                {"index": 0, "function": {"arguments": part}}
                for part in ('{"ci', 'ty"', ': "Paris"}')
            ]
            frames = [_chunk({"tool_calls": [piece]}) for piece in pieces]
            finish = "tool_calls"
        else:
            frames = [_chunk({"content": word}) for word in ("All", " done.")]
            finish = "stop"
        frames += [_chunk({}, finish)] * (10 - len(frames))
        for frame in frames:
            await asyncio.sleep(step_seconds / 10)
            await response.write(frame)
        await response.write(b"data: [DONE]\n\n")
        return response

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    return app


def test_total_timeout_covers_every_step_of_a_response() -> None:
    """Three steps of 2 s each under a total of 3 s: the second step runs out of it. Before
    #29.5 each step's request had a total of its own and the response completed."""
    with serving_in_thread(slow_steps_app(step_seconds=2.0, tool_steps=2)) as url:
        model = ChatModel(url + "/v1/chat/completions", "m", total_timeout=3.0, max_retries=0)
        with model:
            outcome = outcome_of(model.prompt("weather?").tools(get_weather), timeout=20.0)
    error = failed_with(outcome, ChatTimeoutError)
    assert isinstance(error, ChatTimeoutError) and error.budget == "total_timeout"
    assert "total_timeout of 3.0 s ran out for the whole response" in str(error)
    assert outcome.events[-1].step >= 1  # after the first step and its tool
    assert outcome.of(T.TOOL_RESULT)


def test_the_same_steps_complete_without_a_total_timeout() -> None:
    with (
        serving_in_thread(slow_steps_app(step_seconds=0.2, tool_steps=2)) as url,
        ChatModel(url + "/v1/chat/completions", "m", max_retries=0) as model,
    ):
        outcome = outcome_of(model.prompt("weather?").tools(get_weather), timeout=20.0)
    assert outcome.completed and len(outcome.of(T.TOOL_RESULT)) == 2
    assert outcome.events[-1].response is not None
    assert outcome.events[-1].response.text == "All done."


def test_total_timeout_covers_a_tool_that_never_returns(server: RunningServer) -> None:
    """A tool that never returns hung the response forever before #29.5."""
    with weather(server, total_timeout=1.0) as model:
        outcome = outcome_of(model.prompt("weather?").tools(stuck_weather))
    error = failed_with(outcome, ChatTimeoutError)
    assert isinstance(error, ChatTimeoutError) and error.budget == "total_timeout"
    assert "while tool 'stuck_weather' ran (step 0)" in str(error)
    assert not outcome.of(T.TOOL_RESULT)
    step_end = outcome.of(T.STEP_END)[-1]  # the held STEP_END, with the call, before ERROR
    assert step_end.response is not None and step_end.response.tool_calls[0].name == "stuck_weather"


def test_total_timeout_covers_a_tool_that_never_returns_in_acall(server: RunningServer) -> None:
    async def ask(model: ChatModel) -> None:
        await model.prompt("weather?").tools(stuck_weather).acall()

    with (
        weather(server, total_timeout=1.0) as model,
        pytest.raises(ChatTimeoutError, match="while tool 'stuck_weather' ran"),
    ):
        asyncio.run(asyncio.wait_for(ask(model), 10.0))


# --- tool_timeout: each tool run


def test_tool_timeout_fails_a_tool_that_never_returns(server: RunningServer) -> None:
    with weather(server, tool_timeout=0.5) as model:
        outcome = outcome_of(model.prompt("weather?").tools(stuck_weather))
    error = failed_with(outcome, ToolCallError)
    assert isinstance(error, ToolCallError) and error.tool_name == "stuck_weather"
    assert error.tool_call_id
    assert "tool 'stuck_weather' ran out of its tool_timeout of 0.5 s" in str(error)


def test_tool_timeout_with_tool_errors_return_tells_the_model(server: RunningServer) -> None:
    """A sync tool blocked in its thread: its result is an error the model reads, and the
    response goes on (the thread runs on until the tool returns, its result dropped)."""
    with weather(server, tool_timeout=0.5, tool_errors="return") as model:
        outcome = outcome_of(model.prompt("weather?").tools(blocked_weather))
    assert outcome.completed, outcome.error
    (result,) = outcome.of(T.TOOL_RESULT)
    assert result.attrs["is_error"] is True and result.attrs["tool_name"] == "blocked_weather"
    assert result.text == "Error: tool 'blocked_weather' ran out of its tool_timeout of 0.5 s"
    answer = outcome.events[-1].response
    assert answer is not None and "ran out of its tool_timeout" in answer.text
    assert "ran out of its tool_timeout" in orjson.dumps(server.requests[-1].body).decode()


def test_a_tool_within_its_tool_timeout_runs_as_before(server: RunningServer) -> None:
    with weather(server, tool_timeout=30.0, total_timeout=30.0) as model:
        outcome = outcome_of(model.prompt("weather?").tools(get_weather))
    assert outcome.completed
    (result,) = outcome.of(T.TOOL_RESULT)
    assert result.text == "sunny" and result.attrs["is_error"] is False


def test_tool_timeout_is_checked() -> None:
    with pytest.raises(ValueError, match="tool_timeout"):
        ChatModel(RECORDED, "m", tool_timeout=0)
    with ChatModel(RECORDED, "m", tool_timeout=2.5) as model:
        assert model.budgets.tool_timeout == 2.5


# --- Retry-After waits: against timeout and total_timeout; max_retry_after


def unavailable(retry_after: str) -> RecordedResponse:
    return RecordedResponse(b"{}", status=503, headers={"Retry-After": retry_after})


def test_a_retry_after_wait_beyond_the_first_frame_timeout_is_not_made() -> None:
    """Retry-After: 5 s against 1 s until the first frame: the 503 is the answer at once.
    Before #29.5 each attempt had its own first-frame budget: the wait was made."""
    transport = ReplayTransport(unavailable("5"), text_body("openai", "too late"))
    with ChatModel(RECORDED, "m", transport=transport, timeout=1.0) as model:
        outcome = outcome_of(model.prompt("wait"))
    error = failed_with(outcome, ChatHttpError)
    assert isinstance(error, ChatHttpError) and error.status == 503 and error.retry_after == 5
    assert not outcome.of(T.STATUS) and len(transport.requests) == 1


def first_frame_after(wait: float) -> web.Application:
    """A provider that answers 503 (retry after 2 s) once, then its first frame after
    ``wait`` seconds."""
    attempts: list[int] = []

    async def chat(request: web.Request) -> web.StreamResponse:
        attempts.append(1)
        if len(attempts) == 1:
            return web.json_response({}, status=503, headers={"retry-after-ms": "2000"})
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await asyncio.sleep(wait)
        await response.write(_chunk({"content": "late"}, "stop") + b"data: [DONE]\n\n")
        return response

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    return app


def test_the_retry_wait_counts_against_the_first_frame_timeout() -> None:
    """A wait of 2 s, then a first frame 1 s into the retry, against 2.5 s until the first
    frame: the retry runs out of it (each attempt had 2.5 s of its own before #29.5)."""
    with (
        serving_in_thread(first_frame_after(1.0)) as url,
        ChatModel(url + "/v1/chat/completions", "m", timeout=2.5) as model,
    ):
        outcome = outcome_of(model.prompt("wait"))
    error = failed_with(outcome, ChatTimeoutError)
    assert isinstance(error, ChatTimeoutError) and error.budget == "timeout"
    (retry,) = outcome.of(T.STATUS)
    assert retry.attrs["delay"] == 2.0


def test_max_retry_after_caps_the_wait_the_provider_asks_for() -> None:
    transport = ReplayTransport(unavailable("3600"), text_body("openai", "soon"))
    with ChatModel(RECORDED, "m", transport=transport, max_retry_after=0.01) as model:
        outcome = outcome_of(model.prompt("wait"))
    assert outcome.completed
    (retry,) = outcome.of(T.STATUS)
    assert retry.attrs["delay"] == 0.01
    assert outcome.events[-1].response is not None
    assert outcome.events[-1].response.text == "soon"


def test_max_retry_after_is_checked() -> None:
    with pytest.raises(ValueError, match="max_retry_after"):
        ChatModel(RECORDED, "m", max_retry_after=-1)


# --- idle_timeout times the provider's silence, not the subscriber's work (#29.14)


def test_a_subscriber_that_blocks_longer_than_idle_timeout_is_not_the_providers_silence(
    server: RunningServer,
) -> None:
    """The provider pauses 0.5 s after its first delta; the subscriber blocks the I/O thread
    4 s on that delta, against 2 s of idle time. Before #29.14 the idle budget ran from the
    frame's arrival: the response failed with a ChatTimeoutError blaming the provider."""
    outcome = Outcome()

    def on_next(event: ChatEvent) -> None:
        outcome.events.append(event)
        if event.type is T.TEXT_DELTA and len(outcome.of(T.TEXT_DELTA)) == 1:
            time.sleep(4.0)

    url = server.url + "/v1/chat/completions"
    with ChatModel(url, "stall:0.5", idle_timeout=2.0, max_retries=0) as model:
        model.prompt("hi").stream().subscribe(on_next, outcome.on_error, outcome.on_completed)
        assert outcome.done.wait(20.0)
    assert outcome.completed, outcome.error
    assert outcome.events[-1].response is not None
    assert outcome.events[-1].response.text == "Stalling and done."


def test_an_astream_consumer_that_blocks_its_loop_is_not_the_providers_silence(
    server: RunningServer,
) -> None:
    """The same with astream(): a consumer that blocks the loop 4 s between iterations."""

    async def read(model: ChatModel) -> str:
        texts = []
        async for event in model.prompt("hi").astream():
            if event.type is T.TEXT_DELTA:
                texts.append(event.text or "")
                if len(texts) == 1:
                    time.sleep(4.0)  # blocking the loop on purpose
        return "".join(texts)

    url = server.url + "/v1/chat/completions"
    with ChatModel(url, "stall:0.5", idle_timeout=2.0, max_retries=0) as model:
        assert asyncio.run(read(model)) == "Stalling and done."


def test_the_providers_own_silence_still_runs_out_and_says_so(server: RunningServer) -> None:
    """A provider silent 6 s after its first delta, against 2 s of idle time and a
    subscriber that holds the delta 0.5 s: the provider's silence, and the error says so."""
    outcome = Outcome()

    def on_next(event: ChatEvent) -> None:
        outcome.events.append(event)
        if event.type is T.TEXT_DELTA:
            time.sleep(0.5)

    url = server.url + "/v1/chat/completions"
    with ChatModel(url, "stall:6", idle_timeout=2.0, max_retries=0) as model:
        model.prompt("hi").stream().subscribe(on_next, outcome.on_error, outcome.on_completed)
        assert outcome.done.wait(20.0)
    error = outcome.error
    assert isinstance(error, ChatTimeoutError) and error.budget == "idle_timeout"
    assert "the provider sent nothing for 2.0 s after the last frame was delivered" in str(error)
