"""The tool loop against the embedded provider: pydantic tools, TOOL_RESULT facts, progress.

The provider's ``weather`` scenario calls the first declared tool with example arguments
built from its schema (``"Paris"`` for a string), then answers with the tool's result.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

import orjson
import pytest
from city_names import CityName
from pydantic import BaseModel, Field, field_validator

from solon_events import ChatEventFilter, ChatModel, ChatPrompt, ToolContext
from solon_events.cli import ROUTES
from solon_events.devserver import ROUTES as WIRE_ROUTES
from solon_events.devserver import RunningServer
from solon_events.event_model.errors import ToolCallError
from solon_events.event_model.events import ChatEvent, ChatEventType
from solon_events.tools import tool

T = ChatEventType
WIRES = {dialect: wire for _path, wire, dialect in WIRE_ROUTES}


class Place(BaseModel):
    """Where to look."""

    city: CityName = Field(description="The city's name, capitalised")
    country: str = Field("FR", min_length=2, max_length=2)


class LowerPlace(BaseModel):
    city: str

    @field_validator("city")
    @classmethod
    def lower(cls, value: str) -> str:
        if value != value.lower():
            raise ValueError("write the city in lower case")
        return value


class Forecast(BaseModel):
    city: str
    celsius: float
    sky: str = Field(serialization_alias="skyCondition")


@tool
def forecast(place: Place) -> Forecast:
    """The weather at a place.

    Args:
        place: Where to look.
    """
    return Forecast(city=place.city, celsius=18.0, sky="sunny")


@tool
def lower_forecast(place: LowerPlace) -> str:
    """The weather at a place written in lower case."""
    return f"sunny in {place.city}"


class Run:
    """Every event of one subscription, and how it ended."""

    def __init__(self) -> None:
        self.events: list[ChatEvent] = []
        self.threads: set[str] = set()
        self.error: BaseException | None = None
        self.done = threading.Event()

    def on_next(self, event: ChatEvent) -> None:
        self.events.append(event)
        self.threads.add(threading.current_thread().name)

    def on_error(self, error: BaseException) -> None:
        self.error = error
        self.done.set()

    def of(self, kind: ChatEventType) -> list[ChatEvent]:
        return [event for event in self.events if event.type is kind]


def collect(prompt: ChatPrompt, timeout: float = 20.0) -> Run:
    run = Run()
    subscription = (
        prompt.event_filter(ChatEventFilter.all())
        .stream()
        .subscribe(run.on_next, run.on_error, run.done.set)
    )
    try:
        assert run.done.wait(timeout), "the stream did not end in time"
    finally:
        subscription.dispose()
    return run


# --------------------------------------------------------------------------- pydantic tools


@pytest.mark.parametrize("dialect", list(ROUTES))
def test_a_pydantic_parameter_tool_runs_through_the_loop(
    server: RunningServer, make_model: Callable[..., ChatModel], dialect: str
) -> None:
    model = make_model(server, "weather", dialect)
    before = len(server.requests)
    run = collect(model.prompt("Weather in Paris?").tools(forecast))
    assert run.error is None
    call = run.of(T.TOOL_CALL_END)[0].tool_call
    assert call is not None and call.arguments == {"place": {"city": "Paris"}}
    result = run.of(T.TOOL_RESULT)[0]
    assert result.text == '{"city":"Paris","celsius":18.0,"skyCondition":"sunny"}'
    assert result.attrs["is_error"] is False
    end = run.events[-1]
    assert end.type is T.RESPONSE_END and end.response is not None
    assert end.response.text == "It is 18°C and sunny in Paris right now."  # the JSON read
    declared = WIRES[dialect].read_request(server.requests[before].body).tools[0]
    place = declared.schema["properties"]["place"]
    assert place["properties"]["city"]["description"] == "The city's name, capitalised"
    assert place["properties"]["country"]["maxLength"] == 2


def test_validation_errors_reach_the_model_with_tool_errors_return(
    server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    model = make_model(server, "weather", tool_errors="return")
    before = len(server.requests)
    run = collect(model.prompt("Weather?").tools(lower_forecast))
    assert run.error is None
    result = run.of(T.TOOL_RESULT)[0]
    assert result.attrs["is_error"] is True
    assert result.text == (
        "Error: tool 'lower_forecast': argument 'place.city': "
        "Value error, write the city in lower case"
    )
    body = server.requests[before + 1].body
    assert WIRES["openai"].read_request(body).tool_results == (result.text,)
    assert "write the city in lower case" in (run.events[-1].response.text or "")


def test_validation_errors_fail_the_response_by_default(
    server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    model = make_model(server, "weather")
    before = len(server.requests)
    run = collect(model.prompt("Weather?").tools(lower_forecast))
    error = run.error
    assert isinstance(error, ToolCallError)
    assert "write the city in lower case" in str(error)
    assert error.tool_name == "lower_forecast" and error.tool_call_id
    assert error.partial_response is not None and error.partial_response.tool_calls
    assert len(server.requests) == before + 1
    assert run.of(T.TOOL_RESULT) == []


def test_a_failed_call_is_marked_as_an_error_in_the_next_request(
    server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    model = make_model(server, "weather", "anthropic", tool_errors="return")
    before = len(server.requests)
    assert collect(model.prompt("Weather?").tools(lower_forecast)).error is None
    body = orjson.loads(orjson.dumps(server.requests[before + 1].body))
    blocks = [
        block
        for message in body["messages"]
        for block in message["content"]
        if isinstance(message["content"], list)
    ]
    results = [block for block in blocks if block.get("type") == "tool_result"]
    assert len(results) == 1 and results[0]["is_error"] is True


# --------------------------------------------------------------------------- TOOL_RESULT


def test_tool_result_says_which_tool_ran_how_long_and_whether_it_failed(
    server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    @tool
    def get_weather(city: str) -> str:
        """Current weather."""
        time.sleep(0.05)
        return "18°C"

    run = collect(make_model(server, "weather").prompt("Weather?").tools(get_weather))
    result = run.of(T.TOOL_RESULT)[0]
    assert set(result.attrs) == {"tool_name", "duration", "is_error"}
    assert result.attrs["tool_name"] == "get_weather"
    assert result.attrs["is_error"] is False
    duration = result.attrs["duration"]
    assert isinstance(duration, float) and 0.05 <= duration < 20.0
    assert result.tool_call is not None and result.tool_call.name == "get_weather"
    assert result.tool_call_id == result.tool_call.id


def test_a_raising_tool_with_tool_errors_return_is_a_failed_result(
    server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    @tool
    def get_weather(city: str) -> str:
        """Current weather."""
        raise RuntimeError("station offline")

    model = make_model(server, "weather", tool_errors="return")
    result = collect(model.prompt("Weather?").tools(get_weather)).of(T.TOOL_RESULT)[0]
    assert result.attrs["is_error"] is True
    assert result.text == "Error: RuntimeError: station offline"


# --------------------------------------------------------------------------- progress


@tool
def slow_weather(city: str, ctx: ToolContext) -> str:
    """Current weather, asked of three stations."""
    assert ctx.tool_call is not None and ctx.tool_call.name == "slow_weather"
    for station in range(1, 4):
        ctx.progress(station, 3, f"station {station} of 3")
    return "18°C"


@tool
async def slow_weather_async(city: str, ctx: ToolContext | None = None) -> str:
    """Current weather, asked of two stations."""
    assert ctx is not None
    ctx.progress(0.5, message="half way")
    await asyncio.sleep(0)
    ctx.progress(1.0)
    return "18°C"


def test_the_context_parameter_is_not_part_of_the_schema() -> None:
    assert list(slow_weather.parameters["properties"]) == ["city"]
    assert list(slow_weather_async.parameters["properties"]) == ["city"]
    # Outside a loop the tool gets a context that reports nowhere.
    assert asyncio.run(slow_weather_async.ainvoke({"city": "Paris"})) == "18°C"


def test_a_sync_tool_reports_progress_as_status_events(
    server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    run = collect(make_model(server, "weather").prompt("Weather?").tools(slow_weather))
    assert run.error is None
    statuses = [e for e in run.of(T.STATUS) if e.sub_type == "tool_progress"]
    assert [(e.attrs["progress"], e.attrs["total"], e.text) for e in statuses] == [
        (1.0, 3.0, "station 1 of 3"),
        (2.0, 3.0, "station 2 of 3"),
        (3.0, 3.0, "station 3 of 3"),
    ]
    call_end = run.of(T.TOOL_CALL_END)[0]
    result = run.of(T.TOOL_RESULT)[0]
    positions = [run.events.index(e) for e in statuses]
    assert run.events.index(call_end) < positions[0]
    assert positions[-1] < run.events.index(result)
    for event in statuses:
        assert event.attrs["tool_name"] == "slow_weather"
        assert event.tool_call_id == result.tool_call_id and event.step == result.step
        assert event.response_id == result.response_id is not None
    assert run.threads == {"solon-events-io"}


def test_an_async_tool_reports_progress(
    server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    run = collect(make_model(server, "weather").prompt("Weather?").tools(slow_weather_async))
    statuses = [e for e in run.of(T.STATUS) if e.sub_type == "tool_progress"]
    assert [(e.attrs["progress"], e.attrs["total"], e.text) for e in statuses] == [
        (0.5, None, "half way"),
        (1.0, None, None),
    ]


def test_a_report_after_the_call_returned_is_dropped(
    server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    kept: list[ToolContext] = []

    @tool
    def get_weather(city: str, ctx: ToolContext) -> str:
        """Current weather."""
        kept.append(ctx)
        return "18°C"

    model = make_model(server, "weather")
    run = Run()
    prompt = model.prompt("Weather?").tools(get_weather).event_filter(ChatEventFilter.all())
    subscription = prompt.stream().subscribe(run.on_next, run.on_error, run.done.set)
    assert run.done.wait(20)
    kept[0].progress(1, 1, "too late")
    model.prompt("Again").call()  # the I/O loop has run everything scheduled before
    subscription.dispose()
    assert [e for e in run.events if e.text == "too late"] == []
