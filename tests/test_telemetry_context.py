"""The chat span is the current span where our code runs the user's: spans a subscriber
or a tool makes (or an instrumented client they call) are children of the response's.

Against the embedded provider over real HTTP, with the SDK's in-memory exporter
(tests/otel_global.py). ``stream()`` delivers on the model's I/O thread and runs sync tools
in an executor: neither has the caller's context unless we give it. ``astream()`` runs in
the caller's task: the chat span is current while we read, parse and run tools, never
across a ``yield`` (the consumer's loop body keeps its own context: a span left current
there would leak into the consumer's task when it leaves the loop early).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from otel_global import EXPORTER, install

from solon_events import ChatEvent, ChatEventType, ChatModel, ToolCallError, replay, tool
from solon_events.devserver import RunningServer
from solon_events.telemetry import instrument

T = ChatEventType
TRACER = trace.get_tracer("tests.telemetry_context")


@pytest.fixture(autouse=True)
def telemetry() -> Iterator[None]:
    install()
    yield


def spans() -> dict[str, ReadableSpan]:
    return {span.name: span for span in EXPORTER.get_finished_spans()}


def parent_of(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def traced(name: str) -> None:
    """What a user's code (or an instrumented client it calls) does: a span of its own."""
    with TRACER.start_as_current_span(name):
        pass


@tool
def get_weather(city: str) -> str:
    """The weather in a city (a sync tool: run in an executor).

    Args:
        city: The city's name.
    """
    traced("in the tool")
    return f"sunny in {city}"


@tool(name="get_weather")
async def get_weather_async(city: str) -> str:
    """The weather in a city (an async tool: run on the loop).

    Args:
        city: The city's name.
    """
    traced("in the tool")
    await asyncio.sleep(0)
    return f"sunny in {city}"


TOOLS = {"sync": get_weather, "async": get_weather_async}


def assert_tool_span_under_chat(found: dict[str, ReadableSpan]) -> None:
    chat, run = found["chat weather"], found["execute_tool get_weather"]
    assert parent_of(run) == chat.context.span_id
    inner = found["in the tool"]
    assert parent_of(inner) == run.context.span_id
    assert inner.context.trace_id == chat.context.trace_id
    assert run.start_time <= inner.start_time <= inner.end_time <= run.end_time


def on_next_span(event: ChatEvent) -> None:
    if event.type is T.TEXT_DELTA and "in on_next" not in spans():
        traced("in on_next")


@pytest.mark.parametrize("kind", sorted(TOOLS))
def test_stream_subscriber_and_tool_spans_are_children_of_the_chat_span(
    server: RunningServer, make_model: Callable[..., ChatModel], kind: str
) -> None:
    model = make_model(server, "weather", telemetry=True)
    done = threading.Event()
    threads: set[int] = set()

    def on_next(event: ChatEvent) -> None:
        threads.add(threading.get_ident())
        on_next_span(event)

    with TRACER.start_as_current_span("caller"):
        model.prompt("Weather in Paris?").tools(TOOLS[kind]).stream().subscribe(
            on_next, lambda e: done.set(), done.set
        )
    assert done.wait(10)
    assert threading.get_ident() not in threads  # delivered on the I/O thread
    found = spans()
    chat = found["chat weather"]
    assert parent_of(chat) == found["caller"].context.span_id
    assert parent_of(found["in on_next"]) == chat.context.span_id
    assert_tool_span_under_chat(found)
    assert trace.get_current_span() is trace.INVALID_SPAN  # nothing left current here


@pytest.mark.parametrize("kind", sorted(TOOLS))
def test_call_tool_spans_are_children_of_the_chat_span(
    server: RunningServer, make_model: Callable[..., ChatModel], kind: str
) -> None:
    model = make_model(server, "weather", telemetry=True)
    model.prompt("Weather in Paris?").tools(TOOLS[kind]).call()
    found = spans()
    assert parent_of(found["chat weather"]) is None
    assert_tool_span_under_chat(found)
    assert trace.get_current_span() is trace.INVALID_SPAN


@pytest.mark.parametrize("kind", sorted(TOOLS))
async def test_astream_tool_spans_are_children_and_the_consumer_keeps_its_context(
    server: RunningServer, make_model: Callable[..., ChatModel], kind: str
) -> None:
    model = make_model(server, "weather", telemetry=True)
    with TRACER.start_as_current_span("consumer") as consumer:
        async for event in model.prompt("Weather in Paris?").tools(TOOLS[kind]).astream():
            assert trace.get_current_span() is consumer
            on_next_span(event)
        assert trace.get_current_span() is consumer
    found = spans()
    chat = found["chat weather"]
    assert parent_of(chat) == consumer.get_span_context().span_id
    assert parent_of(found["in on_next"]) == consumer.get_span_context().span_id
    assert_tool_span_under_chat(found)


async def test_an_astream_left_early_leaves_nothing_current(
    server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    model = make_model(server, "slow:50:0.01", telemetry=True)
    with TRACER.start_as_current_span("consumer") as consumer:
        async for event in model.prompt("hi").astream():
            if event.type is T.TEXT_DELTA:
                break
        assert trace.get_current_span() is consumer
        await asyncio.sleep(0.05)
        assert trace.get_current_span() is consumer


def test_a_raising_tool_leaves_nothing_current(
    server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    @tool
    def get_weather(city: str) -> str:
        """Fails after making a span.

        Args:
            city: The city.
        """
        traced("in the tool")
        raise ValueError("no weather")

    model = make_model(server, "weather", telemetry=True)
    with pytest.raises(ToolCallError):
        model.prompt("Weather?").tools(get_weather).call()
    found = spans()
    assert_tool_span_under_chat(found)
    assert found["execute_tool get_weather"].status.status_code is trace.StatusCode.ERROR
    assert found["chat weather"].status.status_code is trace.StatusCode.ERROR
    assert trace.get_current_span() is trace.INVALID_SPAN


def test_a_raising_subscriber_leaves_nothing_current() -> None:
    seen: list[int] = []

    def on_next(event: ChatEvent) -> None:
        seen.append(trace.get_current_span().get_span_context().span_id)
        raise RuntimeError("the subscriber fails")

    stream = replay("examples/recordings/text-openai.jsonl").pipe(instrument(model="m"))
    with pytest.raises(RuntimeError, match="the subscriber fails"):
        stream.subscribe(on_next)
    assert seen and seen[0] != 0
    assert trace.get_current_span() is trace.INVALID_SPAN


def test_the_operator_makes_its_span_current_for_any_subscriber() -> None:
    parents: list[int] = []

    def on_next(event: ChatEvent) -> None:
        parents.append(trace.get_current_span().get_span_context().span_id)

    replay("examples/recordings/text-openai.jsonl").pipe(instrument(model="m")).subscribe(on_next)
    [chat] = EXPORTER.get_finished_spans()
    assert parents and set(parents) == {chat.context.span_id}
    assert trace.get_current_span() is trace.INVALID_SPAN


@pytest.mark.parametrize("inner_telemetry", [False, True])
def test_a_model_asked_inside_a_tool_records_its_tools_in_its_own_response_only(
    server: RunningServer, make_model: Callable[..., ChatModel], inner_telemetry: bool
) -> None:
    inner_model = make_model(server, "weather", telemetry=inner_telemetry)

    @tool
    def inner(city: str) -> str:
        """The inner model's tool.

        Args:
            city: The city.
        """
        traced("in the inner tool")
        return "sunny"

    @tool
    def ask_b(city: str) -> str:
        """Asks another model (an agent as a tool).

        Args:
            city: The city.
        """
        return inner_model.prompt(f"Weather in {city}?").tools(inner).call().text

    make_model(server, "weather", telemetry=True).prompt("Weather?").tools(ask_b).call()
    found = spans()
    outer = found["execute_tool ask_b"]
    inner_parent = found["in the inner tool"].parent
    if not inner_telemetry:  # the inner model's tool runs under the outer tool's span
        assert sorted(name for name in found if name.startswith("execute_tool")) == [
            "execute_tool ask_b"
        ]
        assert parent_of(found["in the inner tool"]) == outer.context.span_id
        return
    # The inner model's response is a child of the outer tool's span, its tool its own.
    chats = [s for s in EXPORTER.get_finished_spans() if s.name == "chat weather"]
    [inner_chat] = [s for s in chats if parent_of(s) == outer.context.span_id]
    inner_run = found["execute_tool inner"]
    assert parent_of(inner_run) == inner_chat.context.span_id
    assert inner_parent is not None and inner_parent.span_id == inner_run.context.span_id
