"""OpenTelemetry (solon_events.telemetry) against the embedded provider over real HTTP.

Spans and metric points go to the in-memory exporter and reader of tests/otel_global.py
(the process's global providers), drained before each test.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from executables import run_python
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from otel_global import EXPORTER, READER, install
from reactivex import operators as ops
from usage_reports import Reports

from solon_events import ChatEventType, ChatModel, replay, tool
from solon_events.client.transport import ReplayTransport
from solon_events.devserver import RunningServer
from solon_events.event_model.errors import (
    ChatError,
    ChatHttpError,
    ChatProtocolError,
    ChatTimeoutError,
    ProviderError,
)
from solon_events.telemetry import CAPTURE_CONTENT_ENV, error_type, instrument

T = ChatEventType
Traced = Callable[..., ChatModel]


@pytest.fixture
def traced(server: RunningServer, make_model: Callable[..., ChatModel]) -> Traced:
    """``traced(scenario, dialect="openai", **options)``: a ChatModel of the embedded
    provider's ``scenario`` with telemetry on."""

    def build(scenario: str, dialect: str = "openai", **options: Any) -> ChatModel:
        return make_model(server, scenario, dialect, telemetry=True, **options)

    return build


ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def telemetry() -> Iterator[None]:
    """The global providers (installed once), drained before each test."""
    install()
    yield


def points() -> dict[str, list[tuple[dict[str, Any], int, float]]]:
    """Every histogram point since the last read: name -> [(attributes, count, sum)]."""
    found: dict[str, list[tuple[dict[str, Any], int, float]]] = {}
    data = READER.get_metrics_data()
    for resource in data.resource_metrics if data is not None else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                for point in metric.data.data_points:
                    if point.count:
                        found.setdefault(metric.name, []).append(
                            (dict(point.attributes), point.count, point.sum)
                        )
    return found


def _wait_for_points(name: str) -> dict[str, list[tuple[dict[str, Any], int, float]]]:
    """The histogram points, once ``name`` has some (recorded on another thread)."""
    found: dict[str, list[tuple[dict[str, Any], int, float]]] = {}
    for _ in range(500):
        for key, values in points().items():
            found.setdefault(key, []).extend(values)
        if name in found:
            return found
        time.sleep(0.01)
    return found


def spans() -> dict[str, ReadableSpan]:
    return {span.name: span for span in EXPORTER.get_finished_spans()}


def all_attribute_text() -> str:
    return json.dumps(
        [dict(s.attributes or {}) for s in EXPORTER.get_finished_spans()], default=str
    )


@tool
def get_weather(city: str) -> str:
    """The weather in a city.

    Args:
        city: The city's name.
    """
    return f"sunny, 21 C in {city}"


def test_a_tool_loop_is_a_chat_span_with_a_tool_span_and_three_metrics(
    server: RunningServer, traced: Traced
) -> None:
    model = traced("weather")
    answer = model.prompt("Weather in Paris?").tools(get_weather).options(temperature=0.2).call()

    found = spans()
    assert set(found) == {"chat weather", "execute_tool get_weather"}
    chat, run = found["chat weather"], found["execute_tool get_weather"]
    assert chat.kind is SpanKind.CLIENT and chat.status.status_code is StatusCode.UNSET
    attributes = dict(chat.attributes or {})
    assert attributes["gen_ai.operation.name"] == "chat"
    assert attributes["gen_ai.provider.name"] == attributes["gen_ai.system"] == "openai"
    assert attributes["gen_ai.request.model"] == attributes["gen_ai.response.model"] == "weather"
    assert attributes["gen_ai.request.stream"] is True
    assert attributes["gen_ai.request.temperature"] == 0.2
    assert attributes["server.address"] == "127.0.0.1"
    assert attributes["server.port"] == int(server.url.rsplit(":", 1)[1])
    assert attributes["gen_ai.response.id"] == answer.provider_response_id
    assert attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert answer.usage is not None
    assert attributes["gen_ai.usage.input_tokens"] == answer.usage.prompt_tokens == 42 + 80
    assert attributes["gen_ai.usage.output_tokens"] == answer.usage.completion_tokens
    assert attributes["gen_ai.usage.reasoning.output_tokens"] == 9
    first_chunk = attributes["gen_ai.response.time_to_first_chunk"]
    assert 0 < first_chunk < (chat.end_time - chat.start_time) / 1e9

    assert run.kind is SpanKind.INTERNAL and run.parent is not None
    assert run.parent.span_id == chat.context.span_id
    assert run.context.trace_id == chat.context.trace_id
    assert chat.start_time < run.start_time <= run.end_time < chat.end_time
    tool_attributes = dict(run.attributes or {})
    assert tool_attributes["gen_ai.operation.name"] == "execute_tool"
    assert tool_attributes["gen_ai.tool.name"] == "get_weather"
    assert tool_attributes["gen_ai.tool.call.id"].startswith("call_")

    # No content unless asked for.
    text = all_attribute_text()
    assert "Paris" not in text and "sunny" not in text
    assert not any(".messages" in key or "call.arguments" in key for key in json.loads(text)[0])

    recorded = points()
    shared = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "weather",
        "gen_ai.response.model": "weather",
        "server.address": "127.0.0.1",
        "server.port": attributes["server.port"],
    }
    [(duration_attributes, count, seconds)] = recorded["gen_ai.client.operation.duration"]
    assert duration_attributes == shared and count == 1
    assert seconds == pytest.approx((chat.end_time - chat.start_time) / 1e9, abs=0.05)
    [(ttfc_attributes, _, ttfc)] = recorded["gen_ai.client.operation.time_to_first_chunk"]
    assert ttfc_attributes == shared and ttfc == first_chunk
    tokens = {
        a["gen_ai.token.type"]: total for a, _, total in recorded["gen_ai.client.token.usage"]
    }
    assert tokens == {"input": 122, "output": answer.usage.completion_tokens}


@pytest.mark.parametrize(
    ("dialect", "provider"),
    [
        ("openai", "openai"),
        ("openai-responses", "openai"),
        ("anthropic", "anthropic"),
        ("gemini", "gcp.gemini"),
        ("ollama", "ollama"),
    ],
)
def test_every_dialect_names_its_provider_and_counts_tokens(
    traced: Traced, dialect: str, provider: str
) -> None:
    model = traced("think", dialect=dialect)
    answer = model.prompt("Why is the sky blue?").call()
    [chat] = EXPORTER.get_finished_spans()
    attributes = dict(chat.attributes or {})
    assert chat.name == "chat think"
    assert attributes["gen_ai.provider.name"] == provider
    assert answer.usage is not None
    assert attributes["gen_ai.usage.input_tokens"] == answer.usage.prompt_tokens == 14
    assert attributes["gen_ai.usage.output_tokens"] == answer.usage.completion_tokens
    assert attributes["gen_ai.response.finish_reasons"] == (answer.finish_reason,)
    recorded = points()
    assert {a["gen_ai.provider.name"] for a, _, _ in recorded["gen_ai.client.token.usage"]} == {
        provider
    }


def test_an_http_error_sets_the_status_and_error_type(traced: Traced) -> None:
    model = traced("status:503", max_retries=0)
    with pytest.raises(ChatHttpError):
        model.prompt("hello").call()
    [chat] = EXPORTER.get_finished_spans()
    assert chat.status.status_code is StatusCode.ERROR
    assert chat.attributes is not None and chat.attributes["error.type"] == "503"
    recorded = points()
    [(attributes, _, _)] = recorded["gen_ai.client.operation.duration"]
    assert attributes["error.type"] == "503"
    assert "gen_ai.client.operation.time_to_first_chunk" not in recorded


@pytest.mark.parametrize(
    ("dialect", "code"),
    [
        ("anthropic", "overloaded_error"),
        ("openai", "server_error"),
        ("openai-responses", "server_error"),
        ("gemini", "503"),
    ],
)
def test_an_in_stream_error_is_typed_by_the_providers_code(
    traced: Traced, dialect: str, code: str
) -> None:
    model = traced("error-frame", dialect=dialect)
    with pytest.raises(ProviderError) as raised:
        model.prompt("hello").call()
    [chat] = EXPORTER.get_finished_spans()
    attributes = dict(chat.attributes or {})
    assert chat.status.status_code is StatusCode.ERROR
    assert chat.status.description == str(raised.value)
    assert attributes["error.type"] == code
    assert attributes["gen_ai.response.time_to_first_chunk"] > 0
    assert "Partial" not in all_attribute_text()
    recorded = points()
    [(duration_attributes, _, _)] = recorded["gen_ai.client.operation.duration"]
    assert duration_attributes["error.type"] == code
    for name in ("gen_ai.client.operation.time_to_first_chunk", "gen_ai.client.token.usage"):
        assert all("error.type" not in a for a, _, _ in recorded.get(name, ()))


def test_error_types_fall_back_to_the_exception_class() -> None:
    assert (
        error_type(ChatProtocolError("truncated"))
        == "solon_events.event_model.errors.ChatProtocolError"
    )
    assert error_type(ValueError("x")) == "ValueError"
    assert error_type(ChatTimeoutError("slow", budget="timeout")) == "timeout"
    assert error_type(ChatError("x", provider_error={"error": {"code": True}})) == (
        "solon_events.event_model.errors.ChatError"
    )


def test_a_failing_tool_is_an_error_on_its_span_only(traced: Traced) -> None:
    @tool
    def broken(city: str) -> str:
        """Always fails.

        Args:
            city: The city.
        """
        raise ValueError("no weather today")

    model = traced("weather", tool_errors="return")
    model.prompt("Weather?").tools(broken).call()
    found = spans()
    assert found["chat weather"].status.status_code is StatusCode.UNSET
    run = found["execute_tool broken"]
    assert run.status.status_code is StatusCode.ERROR
    assert run.attributes is not None and run.attributes["error.type"] == "_OTHER"


@pytest.mark.parametrize("how", ["take", "dispose"])
def test_cancellation_is_recorded_as_such_not_as_an_error(traced: Traced, how: str) -> None:
    model = traced("slow:40:0.05")
    stream = model.prompt("count").stream()
    done = threading.Event()
    deltas: list[str] = []
    if how == "take":
        stream.pipe(ops.filter(lambda e: e.type is T.TEXT_DELTA), ops.take(3)).subscribe(
            lambda e: deltas.append(e.text), on_completed=done.set
        )
        assert done.wait(10)
    else:

        def on_next(event: Any) -> None:
            if event.type is T.TEXT_DELTA:
                deltas.append(event.text)
                if len(deltas) == 3:
                    done.set()

        subscription = stream.subscribe(on_next)
        assert done.wait(10)
        subscription.dispose()
    [chat] = EXPORTER.get_finished_spans()
    assert chat.status.status_code is StatusCode.UNSET
    assert chat.attributes is not None and chat.attributes["solon_events.response.cancelled"]
    assert "error.type" not in chat.attributes
    assert [event.name for event in chat.events] == ["cancelled"]
    # No duration: but the tokens billed so far (estimated: the provider counts at the
    # end) reach the token metric once the request is stopped, as no event can carry them.
    found = _wait_for_points("gen_ai.client.token.usage")
    assert set(found) == {"gen_ai.client.token.usage"}
    counts = {attrs["gen_ai.token.type"]: total for attrs, _, total in found[set(found).pop()]}
    assert counts["input"] > 0 and counts["output"] >= len(deltas)


def test_a_retried_requests_usage_reaches_the_token_metric(traced: Traced) -> None:
    # The first request is answered, then lost before its first frame: it is retried, and
    # the input it may have been billed for is recorded beside the response's own tokens.
    reports = Reports()
    model = traced("cut-early:1", on_usage=reports)
    response = model.prompt("one two three").call()
    report = reports.one()
    [retried] = report.retried
    assert response.usage is not None and retried.prompt_tokens > 0
    count, total = 0, 0.0
    for _ in range(500):
        for attrs, n, value in points().get("gen_ai.client.token.usage", []):
            if attrs["gen_ai.token.type"] == "input":
                count, total = count + n, total + value
        if count >= 2:
            break
        time.sleep(0.01)
    assert (count, total) == (2, response.usage.prompt_tokens + retried.prompt_tokens)


def test_content_is_recorded_only_when_asked(
    server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    model = make_model(server, "weather", telemetry={"capture_content": True})
    answer = model.prompt("Weather in Paris?").tools(get_weather).call()
    found = spans()
    chat = dict(found["chat weather"].attributes or {})
    assert json.loads(chat["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]}
    ]
    assert json.loads(chat["gen_ai.output.messages"]) == [
        {
            "role": "assistant",
            "parts": [{"type": "text", "content": answer.text}],
            "finish_reason": "stop",
        }
    ]
    run = dict(found["execute_tool get_weather"].attributes or {})
    assert json.loads(run["gen_ai.tool.call.arguments"]) == {"city": "Paris"}
    assert run["gen_ai.tool.call.result"] == "sunny, 21 C in Paris"


SECRET = "sk-live-0123456789abcdefXYZ"


def _echoing_body(secret: str) -> bytes:
    """An OpenAI stream whose provider-controlled fields (model, id) and answer quote the
    key: as a hostile or broken provider might."""
    chunks = [
        {
            "id": f"chatcmpl-{secret}",
            "model": f"gpt-4o ({secret})",
            "choices": [{"index": 0, "delta": {"content": f"Your key is {secret}"}}],
        },
        {
            "id": f"chatcmpl-{secret}",
            "model": f"gpt-4o ({secret})",
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
        },
    ]
    frames = [b"data: " + json.dumps(chunk).encode() + b"\n\n" for chunk in chunks]
    return b"".join(frames) + b"data: [DONE]\n\n"


def test_provider_controlled_attributes_never_show_the_key() -> None:
    """gen_ai.response.model and gen_ai.response.id come from the provider: they pass the
    model's redactor, as the captured content does (#29.11)."""
    transport = ReplayTransport(_echoing_body(SECRET))
    with ChatModel(
        "http://recorded.invalid/v1/chat/completions",
        "gpt-4o",
        api_key=SECRET,
        transport=transport,
        telemetry={"capture_content": True},
    ) as model:
        answer = model.prompt("hello").call()
    assert SECRET in answer.text  # the answer itself is the user's: left as it came
    [chat] = EXPORTER.get_finished_spans()
    attributes = dict(chat.attributes or {})
    assert attributes["gen_ai.response.model"] == "gpt-4o (***)"
    assert attributes["gen_ai.response.id"] == "chatcmpl-***"
    assert "Your key is ***" in attributes["gen_ai.output.messages"]
    recorded = json.dumps([*points().values(), all_attribute_text()], default=str)
    assert "gpt-4o (***)" in recorded
    assert SECRET not in recorded and SECRET[:12] not in recorded


def test_the_environment_variable_opts_in(traced: Traced, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CAPTURE_CONTENT_ENV, "true")
    traced("echo").prompt("hello there").call()
    [chat] = EXPORTER.get_finished_spans()
    assert "hello there" in (chat.attributes or {})["gen_ai.input.messages"]


def test_the_operator_works_on_any_stream_with_its_own_providers() -> None:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    events = (
        replay("examples/recordings/tool-loop-openai.jsonl")
        .pipe(
            instrument(
                model="gpt-4o-mini",
                provider="openai",
                tracer_provider=tracer_provider,
                meter_provider=MeterProvider(metric_readers=[reader]),
            ),
            ops.to_list(),
        )
        .run()
    )
    run, chat = exporter.get_finished_spans()
    assert chat.name == "chat gpt-4o-mini"
    assert run.name == "execute_tool get_weather"
    assert run.parent is not None and run.parent.span_id == chat.context.span_id
    end = events[-1]
    assert end.type is T.RESPONSE_END and end.response is not None
    assert chat.attributes is not None
    assert chat.attributes["gen_ai.response.id"] == end.response.provider_response_id
    assert EXPORTER.get_finished_spans() == ()  # nothing went to the global provider
    data = reader.get_metrics_data()
    assert data is not None and data.resource_metrics


def test_telemetry_options_are_checked(server: RunningServer) -> None:
    with pytest.raises(ValueError, match="unknown telemetry option"):
        ChatModel(server.url + "/v1/chat/completions", "echo", telemetry={"content": True})


def test_a_missing_extra_says_what_to_install() -> None:
    code = (
        "import sys; sys.modules['opentelemetry'] = None\n"
        "from solon_events import ChatModel\n"
        "try:\n"
        "    ChatModel('http://127.0.0.1:1/v1/chat/completions', 'm', telemetry=True)\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    result = run_python(code, check=True)
    assert "pip install 'solon-events[otel]'" in result.stdout


async def test_astream_is_recorded_as_call_is(traced: Traced) -> None:
    model = traced("weather")
    events = [e async for e in model.prompt("Weather in Paris?").tools(get_weather).astream()]
    found = spans()
    assert set(found) == {"chat weather", "execute_tool get_weather"}
    chat = found["chat weather"]
    attributes = dict(chat.attributes or {})
    assert attributes["solon_events.response.id"] == events[-1].response_id
    assert attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert "gen_ai.client.operation.duration" in points()


async def test_an_astream_left_early_is_recorded_as_cancelled(traced: Traced) -> None:
    model = traced("slow:50:0.01")
    stream = model.prompt("hi").astream()
    async for event in stream:
        if event.type is T.TEXT_DELTA:
            break
    await stream.aclose()
    chat = spans()["chat slow:50:0.01"]
    assert dict(chat.attributes or {})["solon_events.response.cancelled"] is True
    assert chat.status.status_code is StatusCode.UNSET


def test_a_priced_response_records_its_cost_and_an_estimate_says_so(traced: Traced) -> None:
    model = traced("gpt-4o-mini", pricing=True)
    answer = model.prompt("Hello").call()
    assert answer.cost is not None and answer.cost.total is not None
    chat = dict(spans()["chat gpt-4o-mini"].attributes or {})
    assert chat["solon_events.usage.cost"] == float(answer.cost.total)
    assert "solon_events.usage.estimated" not in chat
    EXPORTER.clear()
    points()
    guessed = model.prompt("Hello").options(stream_options={"include_usage": False}).call()
    assert guessed.usage is not None and guessed.usage.estimated
    chat = dict(spans()["chat gpt-4o-mini"].attributes or {})
    assert chat["solon_events.usage.estimated"] is True
    assert chat["gen_ai.usage.output_tokens"] == guessed.usage.completion_tokens
