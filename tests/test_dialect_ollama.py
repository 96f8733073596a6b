"""The Ollama dialect: ``/api/chat`` NDJSON lines and request building.

The fixtures are small chat response objects written from Ollama's API reference.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from chat_requests import CITY_SCHEMA, hi
from dialect_runs import feed

from solon_events import ChatRequest, SystemMessage, ToolMessage, ToolSpec, UserMessage
from solon_events.core.parsing import ParseStage
from solon_events.dialects import get_dialect
from solon_events.dialects.ollama import OllamaDialect
from solon_events.event_model.errors import ChatProtocolError, ProviderError
from solon_events.event_model.events import ChatEventType
from solon_events.event_model.results import (
    AssistantMessage,
    FileBlock,
    ImageBlock,
    TextBlock,
    ToolCall,
)

T = ChatEventType
DIALECT = OllamaDialect()
URL = "http://localhost:11434/api/chat"


def run(frames: list[Any], *, step: int = 0) -> tuple[list[Any], ParseStage]:
    """Feed ``frames`` to the dialect; the events (typed loosely for brevity) and the stage."""
    return feed(DIALECT, frames, response_id="r-1", step=step)


def line(content: str = "", **extra: Any) -> dict[str, Any]:
    """One streamed chat response object that is not the last."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    message.update(extra)
    return {
        "model": "qwen3:8b",
        "created_at": "2025-05-27T22:54:57.641643Z",
        "message": message,
        "done": False,
    }


METRICS = {
    "total_duration": 4883583458,
    "load_duration": 1334875,
    "prompt_eval_count": 26,
    "prompt_eval_duration": 342546000,
    "eval_count": 282,
    "eval_duration": 4535599000,
}
"""The metrics of the final chat response object: its usage's source."""


def last(**extra: Any) -> dict[str, Any]:
    """The final chat response object, with its metrics."""
    frame: dict[str, Any] = {
        "model": "qwen3:8b",
        "created_at": "2025-05-27T22:54:58.100000Z",
        "message": {"role": "assistant", "content": ""},
        "done": True,
        "done_reason": "stop",
        **METRICS,
    }
    frame.update(extra)
    return frame


def only(events: list[Any], *types: ChatEventType) -> list[Any]:
    return [e for e in events if e.type in types]


# parsing


def test_thinking_then_text_then_done() -> None:
    events, ctx = run(
        [
            line(thinking="The user "),
            line(thinking="greets me."),
            line("Hello"),
            line("!"),
            last(),
        ]
    )
    assert [(e.type, e.text) for e in events if e.type is not T.USAGE] == [
        (T.THINKING_DELTA, "The user "),
        (T.THINKING_DELTA, "greets me."),
        (T.TEXT_DELTA, "Hello"),
        (T.TEXT_DELTA, "!"),
    ]
    assert ctx.finished and ctx.finish_reason == "stop"
    assert ctx.model == "qwen3:8b"
    assert ctx.provider_response_id is None
    assert all(e.response_id == "r-1" for e in events)
    assert events[2].raw["message"]["content"] == "Hello"


def test_done_gives_a_usage_snapshot() -> None:
    events, _ = run([line("Hi"), last()])
    (usage_event,) = only(events, T.USAGE)
    usage = usage_event.usage
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (26, 282, 308)
    assert usage.thinking_tokens == 0
    assert usage.source == METRICS
    assert events[-1] is usage_event


def test_done_reason_is_passed_on() -> None:
    _, ctx = run([line("long"), last(done_reason="length")])
    assert ctx.finish_reason == "length"


def test_done_without_reason_or_counts() -> None:
    events, ctx = run(
        [{"model": "llama3.2", "message": {"role": "assistant", "content": "ok"}, "done": True}]
    )
    assert [(e.type, e.text) for e in events] == [(T.TEXT_DELTA, "ok")]
    assert ctx.finish_reason == "stop"


def test_not_done_means_not_finished() -> None:
    _, ctx = run([line("partial")])
    assert not ctx.finished


def test_tool_calls_become_chunks_with_generated_ids() -> None:
    calls = [
        {"function": {"name": "get_weather", "arguments": {"city": "Toronto"}}},
        {"function": {"index": 1, "name": "get_time", "arguments": {"zone": "EST", "utc": False}}},
    ]
    events, ctx = run([line(thinking="Need tools."), line(tool_calls=calls), last()], step=2)
    chunks = only(events, T.TOOL_CALL_CHUNK)
    assert [(e.index, e.tool_call_id) for e in chunks] == [
        (0, "ollama_call_2_0"),
        (1, "ollama_call_2_1"),
    ]
    assert chunks[0].tool_call == ToolCall(
        id="ollama_call_2_0", name="get_weather", arguments={"city": "Toronto"}, index=0
    )
    assert chunks[0].tool_call.arguments == {"city": "Toronto"}
    assert chunks[1].tool_call.arguments == {"zone": "EST", "utc": False}
    assert chunks[1].raw == calls[1]
    assert ctx.finish_reason == "stop"


def test_tool_calls_across_lines_keep_counting_and_use_given_ids() -> None:
    events, _ = run(
        [
            line(tool_calls=[{"function": {"name": "a", "arguments": {}}}]),
            line(tool_calls=[{"id": "call_x", "function": {"name": "b", "arguments": {"n": 1}}}]),
            line(tool_calls=[{"function": {"name": "c", "arguments": '{"s": "t"}'}}]),
        ]
    )
    calls = [e.tool_call for e in only(events, T.TOOL_CALL_CHUNK)]
    assert [(c.id, c.name, c.arguments, c.index) for c in calls] == [
        ("ollama_call_0_0", "a", {}, 0),
        ("call_x", "b", {"n": 1}, 1),
        ("ollama_call_0_2", "c", {"s": "t"}, 2),
    ]


def test_a_tool_call_without_a_function_name_is_raw() -> None:
    events, _ = run([line(tool_calls=[{"function": {"arguments": {}}}, {"type": "function"}])])
    assert [(e.type, e.raw_type) for e in events] == [
        (T.RAW, "ollama.tool_call"),
        (T.RAW, "ollama.tool_call"),
    ]


def test_error_object_fails_with_the_provider_fields() -> None:
    error = {"error": "model runner has unexpectedly stopped"}
    events, ctx = run([line("Hel"), error])
    assert [e.text for e in events] == ["Hel"]
    assert isinstance(ctx.failure, ProviderError)
    assert ctx.failure.provider_error == error
    assert "model runner has unexpectedly stopped" in str(ctx.failure)
    assert not ctx.finished


def test_http_error_body_message() -> None:
    assert DIALECT.error_message({"error": "model 'nope' not found"}) == "model 'nope' not found"


@pytest.mark.parametrize("bad", ["text", 1, None, [{"done": True}]])
def test_a_line_that_is_not_an_object_is_a_protocol_error(bad: Any) -> None:
    with pytest.raises(ChatProtocolError, match="frame 1: expected a JSON object"):
        run([orjson.dumps(bad).decode()])


def test_an_unknown_object_is_raw() -> None:
    events, ctx = run([{"status": "pulling manifest"}])
    assert [(e.type, e.raw_type) for e in events] == [(T.RAW, "ollama.unknown")]
    assert not ctx.finished


@pytest.mark.parametrize(
    ("odd", "expected", "finished"),
    [
        ({"message": {"content": None, "thinking": 3, "tool_calls": None}}, [], False),
        ({"message": {"tool_calls": [None, "x", {"function": None}]}}, [T.RAW], False),
        ({"message": None, "done": False}, [T.RAW], False),
        ({"model": None, "message": {}, "done": True, "prompt_eval_count": "26"}, [], True),
    ],
)
def test_odd_but_valid_json_does_not_crash(
    odd: dict[str, Any], expected: list[ChatEventType], finished: bool
) -> None:
    events, ctx = run([odd])
    assert [e.type for e in events] == expected
    assert ctx.finished is finished


def test_get_dialect_knows_ollama() -> None:
    dialect = get_dialect("ollama")
    assert isinstance(dialect, OllamaDialect) and dialect.name == "ollama"


# request building


def build(request: ChatRequest, **kwargs: Any) -> Any:
    return DIALECT.build_request(request, api_url=kwargs.pop("api_url", URL), **kwargs)


@pytest.mark.parametrize(
    ("api_url", "expected"),
    [
        (URL, URL),
        ("http://localhost:11434", URL),
        ("http://localhost:11434/", URL),
        ("http://127.0.0.1:8000/custom/chat", "http://127.0.0.1:8000/custom/chat"),
    ],
)
def test_url(api_url: str, expected: str) -> None:
    request = hi()
    assert build(request, api_url=api_url).url == expected


def test_bearer_header_only_with_a_key() -> None:
    request = hi()
    plain = build(request)
    assert plain.headers == {"Content-Type": "application/json"}
    keyed = build(request, api_key="sk-ollama", headers={"X-Trace": "1"})
    assert keyed.headers["Authorization"] == "Bearer sk-ollama"
    assert keyed.headers["X-Trace"] == "1"
    assert "sk-ollama" not in keyed.url
    assert "sk-ollama" not in repr(keyed)
    assert b"sk-ollama" not in keyed.body_bytes()


def test_body_messages_tools_and_stream() -> None:
    schema = CITY_SCHEMA
    request = ChatRequest(
        model="qwen3:8b",
        messages=[
            SystemMessage(text="Be brief."),
            UserMessage(
                text="What is this?",
                blocks=[
                    ImageBlock(data="iVBORw0KGgo="),
                    ImageBlock(url="data:image/png;base64,AAAA"),
                    TextBlock(text="A second line."),
                ],
            ),
            AssistantMessage(
                text="",
                thinking="I should call the tool.",
                tool_calls=[
                    ToolCall(id="ollama_call_0_0", name="weather", arguments={"city": "Oslo"})
                ],
            ),
            ToolMessage(tool_call_id="ollama_call_0_0", name="weather", content="-3C"),
            AssistantMessage(text="It is -3C."),
        ],
        tools=[ToolSpec(name="weather", description="Weather in a city.", parameters=schema)],
    )
    body = orjson.loads(build(request).body_bytes())
    assert body == {
        "model": "qwen3:8b",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {
                "role": "user",
                "content": "What is this?\n\nA second line.",
                "images": ["iVBORw0KGgo=", "AAAA"],
            },
            {
                "role": "assistant",
                "content": "",
                "thinking": "I should call the tool.",
                "tool_calls": [{"function": {"name": "weather", "arguments": {"city": "Oslo"}}}],
            },
            {
                "role": "tool",
                "content": "-3C",
                "tool_name": "weather",
                "tool_call_id": "ollama_call_0_0",
            },
            {"role": "assistant", "content": "It is -3C."},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "weather",
                    "description": "Weather in a city.",
                    "parameters": schema,
                },
            }
        ],
        "stream": True,
    }


def test_options_are_sorted_into_model_options_and_request_fields() -> None:
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}}
    request = hi(
        options={
            "temperature": 0.1,
            "top_p": 0.9,
            "num_ctx": 8192,
            "seed": 42,
            "max_tokens": 128,
            "stop": "###",
            "think": "high",
            "format": schema,
            "keep_alive": "10m",
            "options": {"repeat_penalty": 1.1},
        },
    )
    body = build(request).body
    assert body["options"] == {
        "temperature": 0.1,
        "top_p": 0.9,
        "num_ctx": 8192,
        "seed": 42,
        "num_predict": 128,
        "stop": ["###"],
        "repeat_penalty": 1.1,
    }
    assert (body["think"], body["format"], body["keep_alive"]) == ("high", schema, "10m")
    assert body["stream"] is True


def test_no_options_object_without_options() -> None:
    body = build(hi()).body
    assert "options" not in body and "tools" not in body


def test_images_must_be_data() -> None:
    with pytest.raises(ValueError, match="base64"):
        build(
            ChatRequest(
                model="m", messages=[UserMessage(blocks=[ImageBlock(url="https://x/y.png")])]
            )
        )
    with pytest.raises(TypeError, match="ollama"):
        build(ChatRequest(model="m", messages=[UserMessage(blocks=[FileBlock(data="AA")])]))
    with pytest.raises(TypeError, match="ollama"):
        build(ChatRequest(model="m", messages=[3.5]))


def _fields(events: list[Any]) -> list[tuple[Any, ...]]:
    return [(e.type, e.text, e.index, e.tool_call_id, e.tool_call, e.usage) for e in events]


@pytest.mark.parametrize(
    "frame",
    [
        line("Hello"),
        line(""),
        line("Hi", thinking="hmm"),
        {**line("Hi"), "model": 7},
        {**line("Hi"), "model": ""},
        {**line("Hi"), "error": "boom"},
        {**line("Hi"), "done": True, "eval_count": 3},
        {**line("Hi"), "done": 0},
        {
            "model": "m",
            "message": {"content": "x", "tool_calls": [{"function": {"name": "f"}}]},
            "done": False,
        },
        {"model": "m", "message": {"role": "assistant", "thinking": "t"}, "done": False},
        {"model": "m", "message": {"role": "assistant", "content": 5}, "done": False},
        {"message": {"role": "assistant", "content": "no model"}, "done": False},
    ],
)
def test_common_lines_and_near_misses_give_what_the_general_path_gives(
    frame: dict[str, Any],
) -> None:
    # An extra key in the message sends the same content down the general path.
    general = {**frame, "message": {**frame["message"], "images": None}}
    fast_events, fast_ctx = run([frame])
    general_events, general_ctx = run([general])
    assert _fields(fast_events) == _fields(general_events)
    assert all(e.raw == frame for e in fast_events if e.type is T.TEXT_DELTA)
    assert (fast_ctx.model, fast_ctx.finished, fast_ctx.failure is None) == (
        general_ctx.model,
        general_ctx.finished,
        general_ctx.failure is None,
    )


def test_a_common_line_gives_one_text_delta_and_the_model() -> None:
    events, ctx = run([line("Hello")])
    assert [(e.type, e.text, e.raw["done"]) for e in events] == [(T.TEXT_DELTA, "Hello", False)]
    assert ctx.model == "qwen3:8b"
