"""ChatModel over real HTTP: the embedded provider (and tiny aiohttp apps) on 127.0.0.1.

The provider runs on its own thread (``DevServer.run_in_thread``) so that blocking calls
made from the test's own event loop cannot deadlock it.
"""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp import web
from reactivex import operators as ops
from recorded import ENDPOINTS
from sockets import open_connections, wait_for

from solon_events import (
    ChatError,
    ChatEventFilter,
    ChatHttpError,
    ChatProtocolError,
    ChatResponse,
    ChatTimeoutError,
    ProviderError,
    ToolCallError,
    Usage,
)
from solon_events.client.model import ChatModel, ChatPrompt
from solon_events.devserver import ROUTES as WIRE_ROUTES
from solon_events.devserver import DevServer, RunningServer
from solon_events.devserver.encoders.base import error_info
from solon_events.devserver.scenarios import ERROR_FRAME_MESSAGE
from solon_events.event_model.events import ChatEvent, ChatEventType
from solon_events.tools import Tool, ToolContext, tool

T = ChatEventType
DIALECTS = tuple(ENDPOINTS)
WIRES = {dialect: wire for _path, wire, dialect in WIRE_ROUTES}
SECRET = "sk-test-SECRET-123"
RESULT = "18°C and sunny"
ANSWER = f"It is {RESULT} in Paris right now."
ALL = ChatEventFilter.all()


# --- fixtures (``server`` and ``make_model`` are in conftest.py)


@pytest.fixture
def fresh_server() -> Iterator[RunningServer]:
    """A provider of the test's own, whose disconnect count starts at zero."""
    running = DevServer.run_in_thread()
    yield running
    running.close()


def weather_tool(calls: list[str] | None = None, *, fail: bool = False, **options: Any) -> Tool:
    """A ``get_weather`` tool recording its calls (or raising ``RuntimeError``)."""

    def get_weather(city: str) -> str:
        """Current weather in a city.

        Args:
            city: The city's name.
        """
        if calls is not None:
            calls.append(city)
        if fail:
            raise RuntimeError("weather station offline")
        return RESULT

    return tool(**options)(get_weather)


# --- collecting


class Run:
    """What one subscription received, in order: events, then on_error or on_completed."""

    def __init__(self) -> None:
        self.events: list[ChatEvent] = []
        self.order: list[tuple[str, Any]] = []
        self.error: BaseException | None = None
        self.completed = False
        self.done = threading.Event()

    def on_next(self, event: ChatEvent) -> None:
        self.events.append(event)
        self.order.append(("event", event))

    def on_error(self, error: BaseException) -> None:
        self.error = error
        self.order.append(("error", error))
        self.done.set()

    def on_completed(self) -> None:
        self.completed = True
        self.order.append(("completed", None))
        self.done.set()

    @property
    def types(self) -> list[ChatEventType]:
        return [e.type for e in self.events]

    def of(self, kind: ChatEventType) -> list[ChatEvent]:
        return [e for e in self.events if e.type is kind]


def collect(prompt: ChatPrompt, timeout: float = 10.0) -> Run:
    """Subscribe to ``prompt.stream()`` and wait for its end."""
    run = Run()
    subscription = prompt.stream().subscribe(run.on_next, run.on_error, run.on_completed)
    try:
        assert run.done.wait(timeout), "the stream did not end in time"
    finally:
        subscription.dispose()
    return run


def assert_failed_with_one_error(run: Run, kind: type[BaseException]) -> ChatEvent:
    """The run ended with exactly one ERROR event, then on_error; never a RESPONSE_END."""
    assert isinstance(run.error, kind), repr(run.error)
    assert not run.completed
    assert T.RESPONSE_END not in run.types
    errors = run.of(T.ERROR)
    assert len(errors) == 1
    assert run.order[-2] == ("event", errors[0])
    assert run.order[-1] == ("error", run.error)
    assert errors[0].error is run.error
    return errors[0]


def wait_until(predicate: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.005)
    return predicate()


def counters(usage: Usage | None) -> tuple[int, int, int]:
    assert usage is not None
    return usage.prompt_tokens, usage.completion_tokens, usage.total_tokens


# --- call / stream / astream agree


def test_call_stream_astream_and_acall_agree(
    server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    model = make_model(server, "weather")
    prompt = model.prompt("What is the weather in Paris?").tools(weather_tool())

    streamed = collect(prompt)
    assert streamed.completed and streamed.error is None
    end = streamed.events[-1]
    assert end.type is T.RESPONSE_END and end.response is not None

    called = prompt.call()

    async def with_asyncio() -> tuple[list[ChatEvent], ChatResponse]:
        events = [event async for event in prompt.astream()]
        return events, await prompt.acall()

    async_events, acalled = asyncio.run(with_asyncio())
    last = prompt.stream().run()

    assert [e.type for e in async_events] == streamed.types
    assert last.type is T.RESPONSE_END
    for response in (called, acalled, async_events[-1].response, last.response):
        assert response is not None
        assert response.text == end.response.text == ANSWER
        assert counters(response.usage) == counters(end.usage) == (122, 29, 151)

    def thinking(events: list[ChatEvent]) -> str:
        return "".join(e.text or "" for e in events if e.type is T.THINKING_DELTA)

    assert thinking(async_events) == thinking(streamed.events) != ""
    assert called.finish_reason == acalled.finish_reason == end.response.finish_reason == "stop"


async def test_first_text_delta_arrives_while_the_server_holds_the_rest(
    fresh_server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    model = make_model(fresh_server, "gate")
    first_delta = threading.Event()
    run = Run()

    def on_next(event: ChatEvent) -> None:
        run.on_next(event)
        if event.type is T.TEXT_DELTA:
            first_delta.set()

    subscription = model.prompt("hi").stream().subscribe(on_next, run.on_error, run.on_completed)
    try:
        assert await asyncio.to_thread(first_delta.wait, 5.0)
        held = list(run.types)
        assert held.count(T.TEXT_DELTA) == 1 and T.RESPONSE_END not in held
        assert run.of(T.TEXT_DELTA)[0].text == "Before the gate."
        fresh_server.open_gate()
        assert await asyncio.to_thread(run.done.wait, 5.0)
    finally:
        subscription.dispose()
    assert run.completed
    assert run.events[-1].response is not None
    assert run.events[-1].response.text == "Before the gate. After the gate."


# --- disposal


def test_dispose_closes_the_connection_and_stops_delivery(
    fresh_server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    model = make_model(fresh_server, "slow:400:0.01")
    run = Run()
    subscription = (
        model.prompt("hi")
        .event_filter(ALL)
        .stream()
        .subscribe(run.on_next, run.on_error, run.on_completed)
    )
    assert wait_until(lambda: len(run.of(T.TEXT_DELTA)) >= 3)
    assert fresh_server.disconnect_count == 0
    subscription.dispose()
    delivered = len(run.order)
    assert fresh_server.wait_disconnect(1.0, 1)
    time.sleep(0.2)
    assert len(run.order) == delivered
    assert not run.completed and run.error is None
    assert T.TEXT_END not in run.types and T.STEP_END not in run.types


def test_take_three_closes_the_connection_and_stops_delivery(
    fresh_server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    model = make_model(fresh_server, "slow:400:0.01")
    run = Run()
    model.prompt("hi").stream().pipe(ops.take(3)).subscribe(
        run.on_next, run.on_error, run.on_completed
    )
    assert run.done.wait(5.0)
    assert fresh_server.wait_disconnect(1.0, 1)
    time.sleep(0.2)
    assert run.types == [T.RESPONSE_START, T.STEP_START, T.TEXT_START]
    assert run.completed and run.order[-1] == ("completed", None) and len(run.order) == 4


def test_dispose_repeatedly_always_disconnects(
    fresh_server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    model = make_model(fresh_server, "slow:2000:0.002")
    for count in range(1, 11):
        run = Run()
        subscription = model.prompt("hi").stream().subscribe(run.on_next, run.on_error)
        wanted = 2 + count % 5
        assert wait_until(lambda run=run, wanted=wanted: len(run.of(T.TEXT_DELTA)) >= wanted)
        subscription.dispose()
        assert fresh_server.wait_disconnect(1.0, count), f"disposal {count} kept the connection"


# --- timeouts


@pytest.mark.parametrize(
    ("scenario", "budgets", "budget"),
    [
        ("first-delay:2", {"timeout": 0.2}, "timeout"),
        ("stall:2", {"idle_timeout": 0.2}, "idle_timeout"),
        ("slow:200:0.02", {"total_timeout": 0.3}, "total_timeout"),
    ],
)
def test_each_timeout(
    fresh_server: RunningServer,
    make_model: Callable[..., ChatModel],
    scenario: str,
    budgets: dict[str, float],
    budget: str,
) -> None:
    limits = {"timeout": 5.0, "idle_timeout": 5.0, "total_timeout": None, **budgets}
    model = make_model(fresh_server, scenario, **limits)
    started = time.monotonic()
    run = collect(model.prompt("hi"))
    elapsed = time.monotonic() - started
    event = assert_failed_with_one_error(run, ChatTimeoutError)
    error = run.error
    assert isinstance(error, TimeoutError)
    assert isinstance(error, ChatTimeoutError) and error.budget == budget
    assert str(error).startswith(f"{budget} of {budgets[budget]} s")
    assert "127.0.0.1" in str(error)
    assert elapsed < 1.5
    assert event.text == str(error)
    assert fresh_server.wait_disconnect(1.0, 1), "a timeout must close the connection"
    if budget != "timeout":
        assert event.response is not None and event.response.text.startswith(
            "Stalling" if budget == "idle_timeout" else "0 "
        )


# --- HTTP errors


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("status", [401, 429, 500])
def test_http_error_status_carries_the_providers_message(
    server: RunningServer, make_model: Callable[..., ChatModel], dialect: str, status: int
) -> None:
    model = make_model(server, f"status:{status}", dialect, api_key=SECRET)
    run = collect(model.prompt("hi"))
    event = assert_failed_with_one_error(run, ChatHttpError)
    error = run.error
    assert isinstance(error, ChatHttpError)
    expected = error_info(status).message
    assert error.status == status
    assert error.provider_message == expected
    assert f"HTTP {status}" in str(error) and expected in str(error)
    body = WIRES[dialect].error_body(status)
    key = "error" if "error" in body else "message"  # Bedrock: {"message": ...} alone
    assert error.provider_error[key] == body[key]
    assert event.raw and event.text == str(error)
    with pytest.raises(ChatHttpError) as raised:
        model.prompt("hi").call()
    assert raised.value.status == status


def test_html_page_is_a_protocol_error_about_api_url(
    server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    model = make_model(server, "html")
    run = collect(model.prompt("hi"))
    assert_failed_with_one_error(run, ChatProtocolError)
    message = str(run.error)
    assert "api_url" in message and "text/html" in message
    assert server.url in message


def test_truncated_stream_is_one_error_with_the_partial_text(
    server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    model = make_model(server, "truncate")
    run = collect(model.prompt("hi"))
    event = assert_failed_with_one_error(run, ChatProtocolError)
    assert "truncated" in str(run.error)
    assert event.response is not None
    assert event.response.text == "This is a partial answer"
    assert "".join(e.text or "" for e in run.of(T.TEXT_DELTA)) == "This is a partial answer"


@pytest.mark.parametrize("dialect", DIALECTS)
def test_in_stream_provider_error(
    server: RunningServer, make_model: Callable[..., ChatModel], dialect: str
) -> None:
    model = make_model(server, "error-frame", dialect)
    run = collect(model.prompt("hi"))
    event = assert_failed_with_one_error(run, ProviderError)
    assert isinstance(run.error, ProviderError)
    assert ERROR_FRAME_MESSAGE in str(run.error)
    assert run.error.provider_error
    assert ERROR_FRAME_MESSAGE in orjson.dumps(dict(event.raw)).decode()
    assert event.response is not None and event.response.text == "Partial answer"


# --- the tool loop


def _relevant(types: list[ChatEventType]) -> list[ChatEventType]:
    """Lifecycle, step and tool types, runs of ARGS_DELTA collapsed to one."""
    kept = {
        T.RESPONSE_START,
        T.RESPONSE_END,
        T.STEP_START,
        T.STEP_END,
        T.TOOL_CALL_START,
        T.TOOL_CALL_ARGS_DELTA,
        T.TOOL_CALL_END,
        T.TOOL_RESULT,
        T.ERROR,
    }
    out: list[ChatEventType] = []
    for kind in types:
        if kind in kept and not (kind is T.TOOL_CALL_ARGS_DELTA and out and out[-1] is kind):
            out.append(kind)
    return out


TOOL_LOOP_ORDER = [
    T.RESPONSE_START,
    T.STEP_START,
    T.TOOL_CALL_START,
    T.TOOL_CALL_ARGS_DELTA,
    T.TOOL_CALL_END,
    T.TOOL_RESULT,
    T.STEP_END,
    T.STEP_START,
    T.STEP_END,
    T.RESPONSE_END,
]


@pytest.mark.parametrize("dialect", DIALECTS)
def test_two_step_tool_conversation(
    server: RunningServer, make_model: Callable[..., ChatModel], dialect: str
) -> None:
    calls: list[str] = []
    model = make_model(server, "weather", dialect)
    before = len(server.requests)
    run = collect(model.prompt("What is the weather in Paris?").tools(weather_tool(calls)))
    assert run.error is None and run.completed, run.error

    assert _relevant(run.types) == TOOL_LOOP_ORDER
    assert [e.step for e in run.of(T.STEP_START)] == [0, 1]
    assert [e.step for e in run.of(T.STEP_END)] == [0, 1]
    step0 = [e for e in run.events if e.step == 0 and e.type is not T.RESPONSE_START]
    assert step0[0].type is T.STEP_START and step0[-1].type is T.STEP_END
    assert all(e.step == 1 for e in run.events[run.events.index(step0[-1]) + 1 : -1])

    (end_call,) = run.of(T.TOOL_CALL_END)
    (result,) = run.of(T.TOOL_RESULT)
    assert calls == ["Paris"]
    assert end_call.tool_call is not None and end_call.tool_call.name == "get_weather"
    assert end_call.tool_call.arguments == {"city": "Paris"}
    assert result.tool_call_id == end_call.tool_call_id
    assert result.tool_call is not None and result.tool_call.name == "get_weather"
    assert result.text == RESULT
    assert result.step == 0

    step_end0, step_end1 = run.of(T.STEP_END)
    assert step_end0.response is not None
    assert [c.name for c in step_end0.response.tool_calls] == ["get_weather"]
    assert step_end0.response.tool_calls[0].id == end_call.tool_call_id
    end = run.events[-1]
    assert end.response is not None and end.response.text == ANSWER
    assert step_end0.usage is not None and step_end1.usage is not None
    assert end.usage == step_end0.usage + step_end1.usage
    assert counters(end.usage) == (122, 29, 151)
    assert end.response.usage == end.usage
    assert "".join(e.text or "" for e in run.of(T.TEXT_DELTA) if e.step == 1) == ANSWER

    requests = server.requests[before:]
    assert len(requests) == 2
    first, second = (WIRES[dialect].read_request(r.body) for r in requests)
    assert first.tool_results == () and [t.name for t in first.tools] == ["get_weather"]
    assert second.tool_results == (RESULT,)


def test_async_tool(server: RunningServer, make_model: Callable[..., ChatModel]) -> None:
    async def get_weather(city: str) -> str:
        """Current weather in a city.

        Args:
            city: The city's name.
        """
        await asyncio.sleep(0.01)
        return RESULT

    response = make_model(server, "weather").prompt("Weather?").tools(tool(get_weather)).call()
    assert response.text == ANSWER


def asked_about_weather(
    server: RunningServer, make_model: Callable[..., ChatModel], **tool_options: Any
) -> tuple[Run, int]:
    """The run of "Weather?" (the weather scenario) with ``weather_tool(**tool_options)``,
    collected, and how many requests the provider had had before it."""
    model = make_model(server, "weather")
    before = len(server.requests)
    return collect(model.prompt("Weather?").tools(weather_tool(**tool_options))), before


def test_a_raising_tool_fails_with_tool_call_error(
    server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    run, before = asked_about_weather(server, make_model, fail=True)
    assert_failed_with_one_error(run, ToolCallError)
    error = run.error
    assert isinstance(error, ToolCallError)
    assert error.tool_name == "get_weather" and error.tool_call_id
    assert "weather station offline" in str(error)
    assert isinstance(error.__cause__, RuntimeError)
    assert T.TOOL_RESULT not in run.types
    assert len(server.requests) == before + 1


def test_tool_errors_return_sends_the_error_text_back(
    server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    model = make_model(server, "weather", tool_errors="return")
    before = len(server.requests)
    response = model.prompt("Weather?").tools(weather_tool(fail=True)).call()
    assert "weather station offline" in response.text
    view = WIRES["openai"].read_request(server.requests[before + 1].body)
    assert len(view.tool_results) == 1
    assert "RuntimeError: weather station offline" in view.tool_results[0]


def _unknown_tool_recording(path: Path) -> Path:
    """An OpenAI Chat Completions stream calling ``launch_rocket``, a tool nobody declared."""
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "m", "created": 1}
    call = {
        "index": 0,
        "id": "call_rocket",
        "type": "function",
        "function": {"name": "launch_rocket", "arguments": '{"target": "moon"}'},
    }
    chunks = [
        {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [call]}}]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]
    lines = [f"data: {orjson.dumps(c).decode()}" for c in chunks] + ["data: [DONE]"]
    path.write_text("\n\n".join(lines) + "\n\n", encoding="utf-8")
    return path


def test_unknown_tool_fails_with_tool_call_error(
    tmp_path: Path, make_model: Callable[..., ChatModel]
) -> None:
    recording = _unknown_tool_recording(tmp_path / "rocket.sse")
    with DevServer.run_in_thread(recording=recording) as srv:
        model = make_model(srv, "replay", tool_errors="return")
        run = collect(model.prompt("Go").tools(weather_tool()))
        assert_failed_with_one_error(run, ToolCallError)
        error = run.error
        assert isinstance(error, ToolCallError) and error.tool_name == "launch_rocket"
        assert "unknown tool 'launch_rocket'" in str(error) and "get_weather" in str(error)
        assert len(srv.requests) == 1


def test_step_limit(server: RunningServer, make_model: Callable[..., ChatModel]) -> None:
    calls: list[str] = []
    model = make_model(server, "weather", max_steps=1)
    run = collect(model.prompt("Weather?").tools(weather_tool(calls)))
    assert_failed_with_one_error(run, ChatError)
    assert "limit of 1 steps" in str(run.error)
    assert calls == ["Paris"]
    assert run.of(T.TOOL_RESULT) and [e.step for e in run.of(T.STEP_START)] == [0]


def test_default_step_limit_is_eight(server: RunningServer) -> None:
    with ChatModel(server.url + ENDPOINTS["openai"], "weather") as model:
        assert model.max_steps == 8


def test_return_direct_tool_ends_the_response_with_its_result(
    server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    run, before = asked_about_weather(server, make_model, return_direct=True)
    assert run.completed and run.error is None
    end = run.events[-1]
    assert end.type is T.RESPONSE_END and end.response is not None
    assert end.response.text == RESULT
    assert [e.step for e in run.of(T.STEP_START)] == [0]
    assert len(server.requests) == before + 1
    assert "".join(e.text or "" for e in run.of(T.TEXT_DELTA)) == RESULT
    order = _relevant(run.types)
    assert order.index(T.TOOL_RESULT) < order.index(T.STEP_END)


def test_auto_tool_call_false_returns_the_calls(
    server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    calls: list[str] = []
    model = make_model(server, "weather")
    before = len(server.requests)
    response = model.prompt("Weather?").tools(weather_tool(calls)).auto_tool_call(False).call()
    assert [(c.name, c.arguments) for c in response.tool_calls] == [
        ("get_weather", {"city": "Paris"})
    ]
    assert calls == [] and len(server.requests) == before + 1
    assert response.text == ""


# --- delivery policy


@pytest.mark.parametrize(
    "hide_errors",
    [
        ChatEventFilter.of(T.TEXT_DELTA),
        ~ChatEventFilter.of(T.ERROR),
        lambda event: event.type is not T.ERROR,
    ],
    ids=["of-text", "negated", "predicate"],
)
def test_a_filter_hiding_error_still_gets_on_error(
    server: RunningServer, make_model: Callable[..., ChatModel], hide_errors: Any
) -> None:
    model = make_model(server, "error-frame")
    run = collect(model.prompt("hi").event_filter(hide_errors))
    assert isinstance(run.error, ProviderError)
    assert T.ERROR not in run.types and T.RESPONSE_END not in run.types
    assert run.order[-1] == ("error", run.error)
    assert run.types[0] is T.RESPONSE_START


def test_a_filter_that_raises_ends_the_stream_with_its_exception(
    server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    def no_text(event: ChatEvent) -> bool:
        if event.type is T.TEXT_DELTA:
            raise ValueError("a bug in the filter")
        return True

    model = make_model(server, "weather")
    run = collect(model.prompt("hi").event_filter(no_text))
    assert isinstance(run.error, ValueError)
    assert run.order[-1] == ("error", run.error) and not run.completed
    with pytest.raises(ValueError, match="a bug in the filter"):
        model.prompt("hi").event_filter(no_text).call()


# --- concurrency and threads


async def test_fifty_concurrent_streams(
    server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    model = make_model(server, "echo")
    prompts = [f"prompt {i} says {i * i} words" for i in range(50)]
    responses = await asyncio.gather(*(model.prompt(p).acall() for p in prompts))
    assert [r.text for r in responses] == prompts


def test_fifty_concurrent_observables(
    server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    model = make_model(server, "echo")
    runs = {f"stream {i} of fifty": Run() for i in range(50)}
    subscriptions = [
        model.prompt(text).stream().subscribe(run.on_next, run.on_error, run.on_completed)
        for text, run in runs.items()
    ]
    try:
        for text, run in runs.items():
            assert run.done.wait(10.0) and run.error is None
            end = run.events[-1]
            assert end.response is not None and end.response.text == text
            assert "".join(e.text or "" for e in run.of(T.TEXT_DELTA)) == text
    finally:
        for subscription in subscriptions:
            subscription.dispose()
    assert len({run.events[0].response_id for run in runs.values()}) == 50


async def test_blocking_call_inside_a_running_loop(
    server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    asyncio.get_running_loop()
    response = make_model(server, "echo").prompt("called from a coroutine").call()
    assert response.text == "called from a coroutine"


def test_blocking_call_inside_asyncio_run(
    server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    model = make_model(server, "weather")

    async def notebook_cell() -> ChatResponse:
        return model.prompt("Weather?").tools(weather_tool()).call()

    assert asyncio.run(notebook_cell()).text == ANSWER


def test_observable_delivers_on_the_io_thread(
    server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    model = make_model(server, "echo")
    threads: set[str] = set()
    run = Run()

    def on_next(event: ChatEvent) -> None:
        threads.add(threading.current_thread().name)
        run.on_next(event)

    model.prompt("which thread").stream().subscribe(on_next, run.on_error, run.on_completed)
    assert run.done.wait(5.0) and run.completed
    assert threads == {"solon-events-io"}


def test_call_from_the_io_thread_is_refused(
    server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    model = make_model(server, "echo")
    refused: list[BaseException] = []
    run = Run()

    def on_next(event: ChatEvent) -> None:
        if event.type is T.RESPONSE_START:
            try:
                model.prompt("nested").call()
            except RuntimeError as exc:
                refused.append(exc)

    model.prompt("outer").stream().subscribe(on_next, run.on_error, run.on_completed)
    assert run.done.wait(5.0) and run.completed
    assert len(refused) == 1 and "acall" in str(refused[0])


async def test_astream_left_early_cancels_the_request(
    fresh_server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    model = make_model(fresh_server, "slow:400:0.01")
    stream = model.prompt("hi").astream()
    seen = 0
    async for event in stream:
        seen += event.type is T.TEXT_DELTA
        if seen == 3:
            break
    await stream.aclose()
    assert await asyncio.to_thread(fresh_server.wait_disconnect, 1.0, 1)


async def test_astream_raises_after_the_error_event(
    server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    seen: list[ChatEventType] = []
    with pytest.raises(ChatHttpError) as raised:
        async for event in make_model(server, "status:500").prompt("hi").astream():
            seen.append(event.type)
    assert raised.value.status == 500
    assert seen[-1] is T.ERROR


# --- the API key


@pytest.fixture
async def key_echoing_url() -> Any:
    """A provider that answers 401 quoting the Authorization header, as real ones do."""

    async def handler(request: web.Request) -> web.Response:
        key = request.headers.get("Authorization", "").removeprefix("Bearer ")
        body = {"error": {"message": f"Incorrect API key provided: {key}.", "code": "bad_key"}}
        return web.json_response(body, status=401)

    app = web.Application()
    app.router.add_post("/v1/chat/completions", handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    yield f"http://127.0.0.1:{runner.addresses[0][1]}/v1/chat/completions"
    await runner.cleanup()


def _assert_no_secret(*texts: str) -> None:
    for text in texts:
        assert SECRET not in text, text


async def test_api_key_never_in_repr_log_or_error(
    server: RunningServer, key_echoing_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    for name in ("aiohttp", "aiohttp.client", "aiohttp.access", "asyncio", "solon_events"):
        logging.getLogger(name).setLevel(logging.DEBUG)
    outcomes: list[tuple[ChatModel, Run]] = []
    for url, model_name in (
        (server.url + ENDPOINTS["openai"], "status:401"),
        (key_echoing_url, "gpt"),
    ):
        model = ChatModel(url, model_name, api_key=SECRET, headers={"X-Extra": SECRET + "-h"})
        prompt = model.prompt("hi").tools(weather_tool())
        run = Run()
        prompt.stream().subscribe(run.on_next, run.on_error, run.on_completed)
        assert await asyncio.to_thread(run.done.wait, 5.0)
        outcomes.append((model, run))
        with pytest.raises(ChatHttpError) as raised:
            await prompt.acall()
        http_request = model.build_http_request(prompt._plan().request)
        assert any(SECRET in value for value in http_request.headers.values())
        _assert_no_secret(
            repr(model),
            str(model),
            repr(prompt),
            repr(http_request),
            repr(model.transport),
            str(raised.value),
            repr(raised.value),
            repr(raised.value.args),
            orjson.dumps(dict(raised.value.provider_error)).decode(),
        )
        model.close()
    for _model, run in outcomes:
        assert isinstance(run.error, ChatHttpError) and run.error.status == 401
        (error_event,) = run.of(T.ERROR)
        _assert_no_secret(
            str(run.error),
            repr(run.error),
            repr(error_event),
            str(error_event),
            error_event.text or "",
            orjson.dumps(dict(error_event.raw)).decode(),
            *(repr(e) for e in run.events),
        )
    assert "Incorrect API key provided" in str(outcomes[1][1].error)
    assert caplog.records, "DEBUG logging should have captured aiohttp/asyncio records"
    for record in caplog.records:
        _assert_no_secret(record.getMessage(), repr(record.args))


def test_key_is_sent_as_the_dialect_header(
    server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    for dialect in DIALECTS:
        before = len(server.requests)
        model = make_model(server, "echo", dialect, api_key=SECRET)
        assert model.prompt("key please").call().text == "key please"
        headers = server.requests[before].headers
        assert any(SECRET in value for value in headers.values()), dialect


# --- cold observable, validation, closing


def test_resubscribing_makes_a_fresh_request(
    server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    model = make_model(server, "echo")
    before = len(server.requests)
    observable = model.prompt("say it twice").stream()
    assert len(server.requests) == before, "stream() must send nothing until subscribed"
    first, second = observable.run(), observable.run()
    assert len(server.requests) == before + 2
    assert first.type is second.type is T.RESPONSE_END
    assert first.response_id and second.response_id and first.response_id != second.response_id
    assert first.response is not None and second.response is not None
    assert first.response.text == second.response.text == "say it twice"


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        (("ftp://127.0.0.1/v1/chat/completions", "m"), {}),
        (("127.0.0.1:8000/v1/chat/completions", "m"), {}),
        ((None, "m"), {}),
        (("http://127.0.0.1/v1/chat/completions", ""), {}),
        (("http://127.0.0.1/v1/chat/completions", None), {}),
        (("http://127.0.0.1/v1/chat/completions", "m"), {"max_steps": 0}),
        (("http://127.0.0.1/v1/chat/completions", "m"), {"tool_errors": "ignore"}),
        (("http://127.0.0.1/v1/chat/completions", "m"), {"timeout": 0}),
        (("http://127.0.0.1/v1/chat/completions", "m"), {"idle_timeout": -1}),
    ],
)
def test_validation_errors(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        ChatModel(*args, **kwargs)


def test_event_filter_must_be_callable(server: RunningServer) -> None:
    with ChatModel(server.url + ENDPOINTS["openai"], "echo") as model, pytest.raises(TypeError):
        model.prompt("hi").event_filter("TEXT_DELTA")  # type: ignore[arg-type]


def test_close_is_idempotent(server: RunningServer) -> None:
    model = ChatModel(server.url + ENDPOINTS["openai"], "echo")
    model.close()
    model.close()
    used = ChatModel(server.url + ENDPOINTS["openai"], "echo")
    assert used.prompt("before closing").call().text == "before closing"
    io_thread = used._io._thread
    assert io_thread is not None and io_thread.is_alive()
    used.close()
    used.close()
    assert not io_thread.is_alive()


async def test_async_context_manager_closes(server: RunningServer) -> None:
    async with ChatModel(server.url + ENDPOINTS["openai"], "echo") as model:
        assert (await model.prompt("async with").acall()).text == "async with"
        assert model._io._thread is None, "acall() runs on this loop, not the I/O thread"
        observed = Run()
        model.prompt("observed").stream().subscribe(
            observed.on_next, observed.on_error, observed.on_completed
        )
        assert await asyncio.to_thread(observed.done.wait, 5.0)
        io_thread = model._io._thread
    assert io_thread is not None and not io_thread.is_alive()
    assert wait_for(lambda: open_connections(server.port) == 0), "this loop's pool is closed"


def test_options_reach_the_request_body(
    server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    model = make_model(server, "echo")
    before = len(server.requests)
    model.prompt("opts").options(temperature=0.25, max_tokens=7).call()
    body = server.requests[before].body
    assert body["temperature"] == 0.25 and body["max_tokens"] == 7 and body["stream"] is True


def test_dispose_while_a_tool_runs_stops_the_loop(
    server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    started, cancelled = threading.Event(), threading.Event()

    async def get_weather(city: str) -> str:
        """Current weather in a city.

        Args:
            city: The city's name.
        """
        started.set()
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return RESULT

    model = make_model(server, "weather")
    before = len(server.requests)
    run = Run()
    subscription = (
        model.prompt("Weather?")
        .tools(tool(get_weather))
        .stream()
        .subscribe(run.on_next, run.on_error, run.on_completed)
    )
    assert started.wait(5.0)
    subscription.dispose()
    delivered = len(run.order)
    assert cancelled.wait(1.0), "disposal must cancel the running tool"
    time.sleep(0.1)
    assert len(run.order) == delivered and not run.done.is_set()
    assert T.TOOL_RESULT not in run.types
    assert len(server.requests) == before + 1


def test_close_fails_the_streams_in_flight(server: RunningServer) -> None:
    model = ChatModel(server.url + ENDPOINTS["openai"], "slow:400:0.01")
    run = Run()
    model.prompt("hi").stream().subscribe(run.on_next, run.on_error, run.on_completed)
    blocked: list[BaseException] = []

    def blocking_call() -> None:
        try:
            model.prompt("hi").call()
        except ChatError as exc:
            blocked.append(exc)

    caller = threading.Thread(target=blocking_call)
    caller.start()
    assert wait_until(lambda: len(run.of(T.TEXT_DELTA)) >= 2)
    model.close()
    caller.join(2.0)
    assert not caller.is_alive(), "a blocking call() must not hang when its model is closed"
    assert len(blocked) == 1 and "closed" in str(blocked[0])
    assert run.done.wait(1.0)
    assert_failed_with_one_error(run, ChatError)
    assert "was closed" in str(run.error)


def test_close_fails_a_response_whose_tool_runs(server: RunningServer) -> None:
    started = threading.Event()

    async def get_weather(city: str) -> str:
        """Current weather in a city.

        Args:
            city: The city's name.
        """
        started.set()
        await asyncio.sleep(5)
        return RESULT

    model = ChatModel(server.url + ENDPOINTS["openai"], "weather")
    run = Run()
    model.prompt("Weather?").tools(tool(get_weather)).stream().subscribe(
        run.on_next, run.on_error, run.on_completed
    )
    assert started.wait(5.0)
    model.close()
    assert run.done.wait(1.0)
    assert_failed_with_one_error(run, ChatError)
    assert "tool loop" in str(run.error) and "was closed" in str(run.error)


# --- astream() on the caller's loop


async def test_astream_runs_on_the_callers_loop_without_the_io_thread(
    server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    model = make_model(server, "weather")
    here, threads = threading.get_ident(), set()
    seen: list[ChatEvent] = []
    async for event in model.prompt("Weather?").tools(weather_tool()).astream():
        threads.add(threading.get_ident())
        seen.append(event)
    assert threads == {here}
    assert model._io._thread is None, "no request, tool or event went through the I/O thread"
    assert seen[-1].type is T.RESPONSE_END and seen[-1].response is not None
    assert seen[-1].response.text == ANSWER
    assert [e.type for e in seen].count(T.TOOL_RESULT) == 1


async def test_astream_cancelled_mid_stream_closes_the_connection(
    fresh_server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    model = make_model(fresh_server, "slow:400:0.01")
    deltas = 0

    async def read() -> None:
        nonlocal deltas
        async for event in model.prompt("hi").astream():
            deltas += event.type is T.TEXT_DELTA

    reading = asyncio.ensure_future(read())
    while deltas < 3:
        await asyncio.sleep(0.005)
    reading.cancel()
    with pytest.raises(asyncio.CancelledError):
        await reading
    assert await asyncio.to_thread(fresh_server.wait_disconnect, 1.0, 1)
    assert wait_for(lambda: open_connections(fresh_server.port) == 0)


async def test_astream_a_caller_holding_events_longer_than_idle_timeout_is_not_cancelled(
    server: RunningServer,
) -> None:
    # The idle budget is kept while a read waits, never while the caller holds an event:
    # the caller's own awaits run past the deadline untouched, and the frames that came
    # meanwhile are read without waiting.
    url = server.url + ENDPOINTS["openai"]
    with ChatModel(url, "slow:3:0.01", timeout=30.0, idle_timeout=0.3, max_retries=0) as model:
        texts = []
        async for event in model.prompt("hi").astream():
            if event.type is T.TEXT_DELTA:
                texts.append(event.text)
                await asyncio.sleep(0.5)
    assert texts == ["0 ", "1 ", "2 "]


async def test_astream_idle_timeout_while_a_read_waits(server: RunningServer) -> None:
    url = server.url + ENDPOINTS["openai"]
    with ChatModel(url, "stall:5", timeout=30.0, idle_timeout=0.3, max_retries=0) as model:
        seen: list[ChatEvent] = []
        started = time.monotonic()
        with pytest.raises(ChatTimeoutError) as raised:
            async for event in model.prompt("hi").astream():
                seen.append(event)
    assert raised.value.budget == "idle_timeout" and raised.value.frames_received >= 1
    assert time.monotonic() - started < 4  # not the first frame's 30 s, nor the stall's 5
    assert seen[-1].type is T.ERROR and seen[-1].error is raised.value
    if sys.version_info >= (3, 11):  # the timer's cancellation of the task was taken back
        task = asyncio.current_task()
        assert task is not None and task.cancelling() == 0


async def test_close_fails_an_astream_in_flight(server: RunningServer) -> None:
    model = ChatModel(server.url + ENDPOINTS["openai"], "slow:400:0.01")
    seen: list[ChatEvent] = []
    with pytest.raises(ChatError, match="was closed"):
        async for event in model.prompt("hi").astream():
            seen.append(event)
            if len([e for e in seen if e.type is T.TEXT_DELTA]) == 2:
                await asyncio.to_thread(model.close)  # from another thread, as a finalizer
    assert seen[-1].type is T.ERROR and "was closed" in str(seen[-1].error)
    assert seen[-1].response is not None and seen[-1].response.text
    with pytest.raises(ChatError, match="is closed"):
        await model.prompt("after").acall()


async def test_astream_delivers_tool_progress_while_the_tool_runs(
    server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    reported, release = asyncio.Event(), asyncio.Event()

    @tool
    async def get_weather(city: str, ctx: ToolContext) -> str:
        """Current weather in a city."""
        ctx.progress(0.5, message="half way")
        reported.set()
        await release.wait()
        return RESULT

    stream = make_model(server, "weather").prompt("Weather?").tools(get_weather).astream()
    async for event in stream:
        if event.type is T.STATUS and event.sub_type == "tool_progress":
            assert reported.is_set() and not release.is_set(), "delivered while it runs"
            release.set()
        if event.type is T.TOOL_RESULT:
            assert release.is_set() and event.text == RESULT
    assert release.is_set()


CLOSING_SCRIPT = """
import asyncio, sys
from solon_events import ChatModel

async def main() -> None:
    model = ChatModel(sys.argv[1], "echo")
    assert (await model.prompt("hi").acall()).text == "hi"
    if sys.argv[2] == "close":
        model.close()  # synchronously, from inside the loop, which ends right after
    else:
        globals()["kept"] = model  # never closed: the loop's end closes its pool

asyncio.run(main())
print("ok")
"""


@pytest.mark.parametrize("how", ["close", "never"])
def test_a_loop_that_ends_closes_its_pool_cleanly(server: RunningServer, how: str) -> None:
    done = subprocess.run(
        [sys.executable, "-X", "dev", "-c", CLOSING_SCRIPT, server.url + ENDPOINTS["openai"], how],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
    for trouble in ("Task was destroyed", "Unclosed", "Traceback", "Warning"):
        assert trouble not in done.stderr, done.stderr
