"""The Cohere dialect: ``/v2/chat`` stream events -> semantic events, and request building.

The frames are small streams written from Cohere's Chat API v2 streaming reference (the
event types and payload shapes of the official ``cohere`` SDK's ``V2ChatStreamResponse``).
The requests are compared with what the official SDK itself sends for the same
conversation. The public recordings (``tests/recordings/cohere``) are replayed against the
SDK's reading of them in ``tests/conformance/test_recordings.py``.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from typing import Any

import orjson
import pytest
from dialect_runs import assert_same_outcome, block, feed, odd_frames, outcome, shape
from extra_modules import needed
from hypothesis import given, settings
from sdk_oracles import recording_paths, sdk_http_client

from solon_events import ChatProtocolError, ProviderError
from solon_events.core.parsing import ParseStage
from solon_events.dialects import cohere, dialect_names, get_dialect
from solon_events.dialects.cohere import CohereDialect, cohere_usage
from solon_events.dialects.request import Endpoint
from solon_events.dialects.sniff import claims_frame
from solon_events.event_model.events import ChatEvent, ChatEventType
from solon_events.event_model.messages import (
    ChatRequest,
    SystemMessage,
    ToolMessage,
    ToolSpec,
    UserMessage,
)
from solon_events.event_model.results import AssistantMessage, FileBlock, ImageBlock, ToolCall

T = ChatEventType
DIALECT = CohereDialect()


# ---------------------------------------------------------------- frame builders


def message_start(message_id: str = "msg-1") -> dict[str, Any]:
    message = {"role": "assistant", "content": [], "tool_plan": "", "tool_calls": []}
    return {"id": message_id, "type": "message-start", "delta": {"message": message}}


def content_start(index: int, kind: str = "text", initial: str = "") -> dict[str, Any]:
    content = {"type": kind, kind: initial}
    return {"type": "content-start", "index": index, "delta": {"message": {"content": content}}}


def content_delta(index: int, value: str, kind: str = "text") -> dict[str, Any]:
    content = {kind: value}
    return {"type": "content-delta", "index": index, "delta": {"message": {"content": content}}}


def content_end(index: int) -> dict[str, Any]:
    return {"type": "content-end", "index": index}


def plan(value: str) -> dict[str, Any]:
    return {"type": "tool-plan-delta", "delta": {"message": {"tool_plan": value}}}


def call_start(index: int, call_id: str, name: str, arguments: str = "") -> dict[str, Any]:
    call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
    return {"type": "tool-call-start", "index": index, "delta": {"message": {"tool_calls": call}}}


def call_delta(index: int, fragment: str) -> dict[str, Any]:
    call = {"function": {"arguments": fragment}}
    return {"type": "tool-call-delta", "index": index, "delta": {"message": {"tool_calls": call}}}


def call_end(index: int) -> dict[str, Any]:
    return {"type": "tool-call-end", "index": index}


def citation_start(index: int, span: dict[str, Any]) -> dict[str, Any]:
    return {"type": "citation-start", "index": index, "delta": {"message": {"citations": span}}}


def message_end(reason: str = "COMPLETE", usage: Any = None, **more: Any) -> dict[str, Any]:
    delta: dict[str, Any] = {"finish_reason": reason, **more}
    if usage is not None:
        delta["usage"] = usage
    return {"type": "message-end", "delta": delta}


USAGE = {
    "billed_units": {"input_tokens": 12, "output_tokens": 7},
    "tokens": {"input_tokens": 507, "output_tokens": 10},
    "cached_tokens": 448,
}


def run(frames: Iterable[Any]) -> tuple[list[ChatEvent], ParseStage]:
    """Feed ``frames`` to the dialect the way the parse operator does."""
    return feed(DIALECT, frames, response_id="resp-1", end=DIALECT.end_of_stream)


def general(frames: Iterable[Any]) -> tuple[list[ChatEvent], ParseStage]:
    """Feed ``frames`` to the general code only: what the text fast path must match."""
    return feed(cohere._parse_general, frames, response_id="resp-1", end=DIALECT.end_of_stream)


# ---------------------------------------------------------------- text, thinking, plan


def test_get_dialect_knows_cohere() -> None:
    assert "cohere" in dialect_names()
    assert isinstance(get_dialect("cohere"), CohereDialect)


def test_text_and_thinking_contents_keep_their_index() -> None:
    events, stage = run(
        [
            message_start("m-7"),
            content_start(0, "thinking"),
            content_delta(0, "Hmm.", "thinking"),
            content_end(0),
            content_start(1, "text", "The"),
            content_delta(1, " answer."),
            content_end(1),
            message_end(),
        ]
    )
    assert shape(events) == [
        *block("THINKING", 0, "Hmm."),
        *block("TEXT", 1, "The", " answer."),
    ]
    assert stage.provider_response_id == "m-7"
    assert stage.finished and stage.finish_reason == "COMPLETE"


def test_the_tool_plan_is_thinking_told_apart_by_its_sub_type() -> None:
    events, _ = run([message_start(), plan("I will "), plan("look."), message_end("TOOL_CALL")])
    deltas = [e for e in events if e.type is T.THINKING_DELTA]
    assert [(e.text, e.sub_type) for e in deltas] == [
        ("I will ", "tool_plan"),
        ("look.", "tool_plan"),
    ]


def test_empty_deltas_send_nothing() -> None:
    events, _ = run(
        [content_start(0), content_delta(0, ""), plan(""), content_end(0), message_end()]
    )
    assert shape(events) == [("TEXT_START", 0, None), ("TEXT_END", 0, None)]


def test_contents_left_open_are_closed_at_the_end() -> None:
    events, _ = run(
        [content_start(0, "thinking"), content_delta(0, "x", "thinking"), message_end()]
    )
    assert shape(events)[-1] == ("THINKING_END", 0, None)
    events, stage = run([content_start(3), content_delta(3, "cut")])
    assert shape(events)[-1] == ("TEXT_END", 3, None)
    assert not stage.finished


# ---------------------------------------------------------------- tool calls


def test_tool_calls_stream_their_arguments_and_end_whole() -> None:
    events, stage = run(
        [
            message_start(),
            plan("Checking."),
            call_start(0, "weather_1", "weather"),
            call_delta(0, '{"location":'),
            call_delta(0, ' "Paris"}'),
            call_end(0),
            call_start(1, "time_1", "time", "{}"),
            call_end(1),
            message_end("TOOL_CALL"),
        ]
    )
    starts = [e.tool_call for e in events if e.type is T.TOOL_CALL_START]
    assert [(c.id, c.name) for c in starts] == [("weather_1", "weather"), ("time_1", "time")]
    args = [(e.index, e.text) for e in events if e.type is T.TOOL_CALL_ARGS_DELTA]
    assert args == [(0, '{"location":'), (0, ' "Paris"}'), (1, "{}")]
    ended = [e.tool_call for e in events if e.type is T.TOOL_CALL_END]
    assert [(c.id, c.arguments, c.index) for c in ended] == [
        ("weather_1", {"location": "Paris"}, 0),
        ("time_1", {}, 1),
    ]
    assert stage.finish_reason == "TOOL_CALL"


def test_a_call_without_argument_text_has_empty_arguments() -> None:
    events, _ = run([call_start(0, "now_1", "currentTime"), call_end(0), message_end("TOOL_CALL")])
    (end,) = [e for e in events if e.type is T.TOOL_CALL_END]
    assert end.tool_call == ToolCall(id="now_1", name="currentTime", arguments={}, index=0)


def test_stray_tool_and_content_frames_are_raw() -> None:
    events, _ = run([call_delta(4, "{}"), call_end(4), content_end(9), message_end()])
    assert [e.raw_type for e in events] == ["tool-call-delta", "tool-call-end", "content-end"]
    assert all(e.type is T.RAW for e in events)


# ---------------------------------------------------------------- citations


def test_each_source_of_a_cited_span_is_a_citation() -> None:
    document = {"id": "doc:0", "title": "benefits.txt", "url": "https://e.x/b", "text": "AI..."}
    tool = {"type": "tool", "id": "call_1:0", "tool_output": {"temp": 18}}
    span = {
        "start": 21,
        "end": 40,
        "text": "automation of tasks",
        "sources": [{"type": "document", "id": "doc:0", "document": document}, tool],
        "type": "TEXT_CONTENT",
    }
    events, _ = run([citation_start(0, span), {"type": "citation-end", "index": 0}, message_end()])
    assert [e.type for e in events] == [T.CITATION, T.CITATION]
    first, second = (e.citation for e in events)
    assert (first.cited_text, first.start_index, first.end_index) == ("automation of tasks", 21, 40)
    assert (first.title, first.url, first.type, first.raw["id"]) == (
        "benefits.txt",
        "https://e.x/b",
        "document",
        "doc:0",
    )
    assert (second.type, second.title, second.raw["tool_output"]) == ("tool", None, {"temp": 18})
    assert {e.sub_type for e in events} == {"TEXT_CONTENT"}


def test_a_span_without_sources_is_one_citation() -> None:
    events, _ = run([citation_start(2, {"start": 0, "end": 2, "text": "Hi"}), message_end()])
    (event,) = events
    assert event.index == 2 and event.citation.cited_text == "Hi" and event.citation.raw == {}


# ---------------------------------------------------------------- the end: usage, reasons


def test_usage_counts_every_token_and_keeps_the_billed_units_raw() -> None:
    usage = cohere_usage(USAGE)
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (507, 10, 517)
    assert usage.cache_read_input_tokens == 448
    assert usage.source == USAGE


def test_usage_falls_back_to_billed_units_and_reads_integral_floats() -> None:
    usage = cohere_usage({"billed_units": {"input_tokens": 12.0, "output_tokens": 7.0}})
    assert (usage.prompt_tokens, usage.completion_tokens, usage.cache_read_input_tokens) == (
        12,
        7,
        0,
    )
    odd = cohere_usage(
        {"tokens": {"input_tokens": 1.5, "output_tokens": True}, "cached_tokens": -3}
    )
    assert (odd.prompt_tokens, odd.completion_tokens, odd.cache_read_input_tokens) == (0, 0, 0)


@pytest.mark.parametrize(
    "reason", ["COMPLETE", "STOP_SEQUENCE", "MAX_TOKENS", "TOOL_CALL", "TIMEOUT"]
)
def test_finish_reasons_are_cohere_s_own_words(reason: str) -> None:
    events, stage = run([content_start(0), content_delta(0, "x"), message_end(reason, USAGE)])
    assert stage.finished and stage.finish_reason == reason and stage.failure is None
    assert [e.usage.prompt_tokens for e in events if e.type is T.USAGE] == [507]


def test_an_error_finish_is_a_provider_failure_after_the_text() -> None:
    frames = [
        content_start(0),
        content_delta(0, "partial"),
        message_end("ERROR", error="overloaded"),
    ]
    events, stage = run(frames)
    assert isinstance(stage.failure, ProviderError)
    assert "overloaded" in str(stage.failure)
    assert stage.failure.provider_error["finish_reason"] == "ERROR"
    assert [e.text for e in events if e.type is T.TEXT_DELTA] == ["partial"]
    _, stage = run([message_end("ERROR")])
    assert "ERROR" in str(stage.failure)


def test_unknown_event_types_are_raw_and_odd_frames_fail_naming_them() -> None:
    events, _ = run([{"type": "debug", "delta": {}}, message_end()])
    assert [(e.type, e.raw_type) for e in events] == [(T.RAW, "debug")]
    with pytest.raises(ChatProtocolError, match="frame 1"):
        run([["not", "an", "object"]])


# ---------------------------------------------------------------- the text fast path


RECORDED = [
    [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
    for path in recording_paths("cohere")
]


@pytest.mark.parametrize("frames", RECORDED, ids=[p.name for p in recording_paths("cohere")])
def test_the_fast_path_gives_what_the_general_code_gives(frames: list[Any]) -> None:
    assert outcome(*run(frames)) == outcome(*general(frames))


def test_text_deltas_take_the_fast_path(record_frames: Any) -> None:
    calls = record_frames(cohere, "_parse_general")
    frames = [content_start(0, "thinking"), content_delta(0, "Hm", "thinking"), content_end(0)]
    frames += [content_start(1), content_delta(1, "Hi"), content_delta(1, ""), content_end(1)]
    run(frames)
    assert calls == [f for f in frames if f["type"] != "content-delta" or "thinking" in str(f)]


ODD_PLACES = [
    ("type",),
    ("index",),
    ("delta",),
    ("delta", "message"),
    ("delta", "message", "content"),
]


@settings(max_examples=150, deadline=None, database=None)
@given(frames=odd_frames(RECORDED, ODD_PLACES, ["content-delta", "text", 0]))
def test_the_fast_path_matches_the_general_code_on_odd_frames(frames: list[Any]) -> None:
    assert_same_outcome(run, general, frames)


# ---------------------------------------------------------------- sniffing


def test_cohere_frames_are_claimed_by_cohere_alone() -> None:
    # the recordings' frames: tests/conformance/test_recordings.py
    frames = [plan("x"), message_end("ERROR", error="e"), {"type": "debug"}]
    for frame in frames:
        assert [name for name in dialect_names() if claims_frame(name, frame)] == ["cohere"]


# ---------------------------------------------------------------- the request


WEATHER = ToolSpec(
    name="weather",
    description="The weather in a city",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


def conversation() -> ChatRequest:
    notes = base64.b64encode(b"AI provides automation.").decode()
    return ChatRequest(
        model="command-a-03-2025",
        messages=(
            SystemMessage(text="Be brief."),
            UserMessage(
                text="Weather in Paris?",
                blocks=(FileBlock(data=notes, name="notes.txt", mime_type="text/plain"),),
            ),
            AssistantMessage(
                thinking="I will use the weather tool.",
                tool_calls=(ToolCall(id="weather_1", name="weather", arguments={"city": "Paris"}),),
            ),
            ToolMessage(tool_call_id="weather_1", name="weather", content='{"temp": 18}'),
        ),
        tools=(WEATHER,),
        options={"temperature": 0.2},
    )


def test_the_request_is_what_the_cohere_sdk_sends() -> None:
    cohere_sdk = needed("cohere")
    sent: list[Any] = []
    body = b"data: " + orjson.dumps(message_end()) + b"\n\n"
    client = cohere_sdk.ClientV2(
        api_key="k", base_url="http://sdk.test", httpx_client=sdk_http_client(body, sent)
    )
    list(
        client.chat_stream(
            model="command-a-03-2025",
            messages=[
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Weather in Paris?"},
                {
                    "role": "assistant",
                    "tool_plan": "I will use the weather tool.",
                    "tool_calls": [
                        {
                            "id": "weather_1",
                            "type": "function",
                            "function": {"name": "weather", "arguments": '{"city":"Paris"}'},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "weather_1", "content": '{"temp": 18}'},
            ],
            tools=[
                {
                    "type": "function",
                    "function": {
                        "name": "weather",
                        "description": "The weather in a city",
                        "parameters": dict(WEATHER.parameters),
                    },
                }
            ],
            documents=[
                {
                    "id": "notes.txt",
                    "data": {"title": "notes.txt", "text": "AI provides automation."},
                }
            ],
            temperature=0.2,
        )
    )
    ours = DIALECT.build_request(conversation(), api_url="http://sdk.test/v2/chat", api_key="k")
    assert (ours.url, dict(ours.body)) == sent[0]
    assert ours.url == "http://sdk.test/v2/chat"
    assert ours.headers["Authorization"] == "Bearer k"


def test_the_request_s_other_shapes() -> None:
    request = ChatRequest(
        model="m",
        messages=(
            UserMessage(text="Look", blocks=(ImageBlock(data="AAAA", mime_type="image/jpeg"),)),
            AssistantMessage(text="A cat.", thinking="It is furry."),
        ),
        options={"documents": ["plain text doc"]},
    )
    body = DIALECT.request_for(request, Endpoint("http://x/v2/chat")).body
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Look"},
                {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,AAAA"}},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "It is furry."},
                {"type": "text", "text": "A cat."},
            ],
        },
    ]
    assert body["documents"] == ["plain text doc"]
    assert body["stream"] is True
    headers = DIALECT.request_for(request, Endpoint("http://x/v2/chat")).headers
    assert "Authorization" not in headers


def test_a_file_the_request_cannot_send_is_a_clear_error() -> None:
    by_url = ChatRequest(
        model="m", messages=(UserMessage(text="x", blocks=(FileBlock(url="http://f"),)),)
    )
    with pytest.raises(TypeError, match="document"):
        DIALECT.request_for(by_url, Endpoint("http://x/v2/chat"))
    binary = base64.b64encode(b"\xff\xfe").decode()
    not_text = ChatRequest(
        model="m", messages=(UserMessage(text="x", blocks=(FileBlock(data=binary),)),)
    )
    with pytest.raises(ValueError, match="UTF-8"):
        DIALECT.request_for(not_text, Endpoint("http://x/v2/chat"))
