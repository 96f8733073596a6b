"""The Gemini dialect: frames of ``streamGenerateContent?alt=sse`` and request building.

The fixtures are small ``GenerateContentResponse`` payloads written from the Gemini API
reference; the recorded streams of ``../shared/corpus/gemini`` are read in place.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson
import pytest
from chat_requests import CITY_SCHEMA, WEATHER, hi
from dialect_runs import feed, outcome
from hypothesis import given, settings
from hypothesis import strategies as st
from recorded import corpus_paths, corpus_presence_test, corpus_recording

from solon_events import ChatRequest, SystemMessage, ToolMessage, ToolSpec, UserMessage
from solon_events.core.parsing import ParseStage
from solon_events.dialects import ChatStreamContext, gemini, get_dialect
from solon_events.dialects.gemini import SKIP_SIGNATURE, GeminiDialect, stream_url
from solon_events.event_model.errors import ChatProtocolError, ProviderError
from solon_events.event_model.events import ChatEvent, ChatEventType
from solon_events.event_model.results import AssistantMessage, FileBlock, ImageBlock, ToolCall

T = ChatEventType
DIALECT = GeminiDialect()


def run(frames: list[Any], *, step: int = 0, end: bool = False) -> tuple[list[Any], ParseStage]:
    """Feed ``frames`` to the dialect; the events (typed loosely for brevity) and the stage."""
    return feed(
        DIALECT,
        frames,
        response_id="r-1",
        step=step,
        end=DIALECT.end_of_stream if end else None,
    )


def kinds(events: list[ChatEvent]) -> list[ChatEventType]:
    return [e.type for e in events]


def only(events: list[Any], *types: ChatEventType) -> list[Any]:
    return [e for e in events if e.type in types]


def frame(*parts: dict[str, Any], **candidate: Any) -> dict[str, Any]:
    """A GenerateContentResponse with one candidate holding ``parts``."""
    body: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}, "index": 0}
    body.update(candidate)
    return {"candidates": [body], "modelVersion": "gemini-2.5-flash", "responseId": "resp-1"}


# text, thinking, signatures


def test_text_thinking_and_signature_in_order() -> None:
    events, ctx = run(
        [
            frame({"text": "Let me count.", "thought": True}),
            frame({"text": "There are "}, {"text": "three."}),
            frame({"text": "", "thoughtSignature": "c2ln"}, finishReason="STOP"),
        ]
    )
    assert [(e.type, e.text) for e in events] == [
        (T.THINKING_DELTA, "Let me count."),
        (T.TEXT_DELTA, "There are "),
        (T.TEXT_DELTA, "three."),
        (T.THINKING_SIGNATURE, "c2ln"),
    ]
    assert ctx.finished and ctx.finish_reason == "STOP"
    assert ctx.model == "gemini-2.5-flash"
    assert ctx.provider_response_id == "resp-1"
    assert all(e.provider_response_id == "resp-1" and e.response_id == "r-1" for e in events)
    assert events[1].raw == {"text": "There are "}


def test_signature_follows_the_thought_it_closes() -> None:
    events, _ = run([frame({"text": "plan", "thought": True, "thoughtSignature": "sig"})])
    assert [(e.type, e.text) for e in events] == [
        (T.THINKING_DELTA, "plan"),
        (T.THINKING_SIGNATURE, "sig"),
    ]


def test_no_finish_reason_means_not_finished() -> None:
    _, ctx = run([frame({"text": "partial"})])
    assert not ctx.finished


# function calls sent whole


def test_whole_function_calls_become_chunks_with_running_index() -> None:
    events, ctx = run(
        [
            frame(
                {
                    "functionCall": {"name": "weather", "args": {"city": "Paris"}, "id": "fc-1"},
                    "thoughtSignature": "abc",
                },
                {"functionCall": {"name": "time", "args": {"zone": "CET", "n": 2}}},
            ),
            frame({"functionCall": {"name": "ping"}}, finishReason="STOP"),
        ]
    )
    assert kinds(events) == [
        T.TOOL_CALL_CHUNK,
        T.THINKING_SIGNATURE,
        T.TOOL_CALL_CHUNK,
        T.TOOL_CALL_CHUNK,
    ]
    first, _, second, third = events
    assert first.tool_call == ToolCall(
        id="fc-1", name="weather", arguments={"city": "Paris"}, index=0
    )
    assert first.tool_call.arguments == {"city": "Paris"}
    assert (first.index, first.tool_call_id) == (0, "fc-1")
    assert (second.index, second.tool_call_id, second.tool_call.id) == (1, None, None)
    assert second.tool_call.arguments == {"zone": "CET", "n": 2}
    assert (third.index, third.tool_call.name, third.tool_call.arguments) == (2, "ping", {})
    assert events[1].text == "abc"
    assert ctx.finish_reason == "STOP"


# function calls with streamed arguments


def streamed(call: dict[str, Any], **candidate: Any) -> dict[str, Any]:
    return frame({"functionCall": call}, **candidate)


def test_streamed_arguments_are_assembled_into_one_call() -> None:
    events, ctx = run(
        [
            streamed({"name": "getWeather", "willContinue": True}),
            streamed(
                {
                    "partialArgs": [
                        {"jsonPath": "$.location", "stringValue": "San ", "willContinue": True}
                    ],
                    "willContinue": True,
                }
            ),
            streamed(
                {
                    "partialArgs": [{"jsonPath": "$.location", "stringValue": "Francisco"}],
                    "willContinue": True,
                }
            ),
            streamed(
                {"partialArgs": [{"jsonPath": "$.days", "numberValue": 3}], "willContinue": True}
            ),
            streamed({}, finishReason="STOP"),
        ]
    )
    assert kinds(events) == [
        T.TOOL_CALL_START,
        T.TOOL_CALL_ARGS_DELTA,
        T.TOOL_CALL_ARGS_DELTA,
        T.TOOL_CALL_ARGS_DELTA,
        T.TOOL_CALL_ARGS_DELTA,
        T.TOOL_CALL_END,
    ]
    assert [e.text for e in only(events, T.TOOL_CALL_ARGS_DELTA)] == [
        '{"location":"San ',
        'Francisco"',
        ',"days":3',
        "}",
    ]
    start, end = events[0], events[-1]
    assert (start.index, start.tool_call.name, start.tool_call_id) == (0, "getWeather", None)
    assert end.index == 0
    assert end.tool_call.name == "getWeather"
    assert end.tool_call.arguments == {"location": "San Francisco", "days": 3}
    assert end.tool_call.arguments_str == '{"location":"San Francisco","days":3}'
    assert ctx.finish_reason == "STOP"


def test_streamed_fragments_join_to_the_final_arguments() -> None:
    partial = [
        {"jsonPath": "$.query.text", "stringValue": 'caf\u00e9 "x"', "willContinue": True},
        {"jsonPath": "$.query.text", "stringValue": "\n"},
        {"jsonPath": "$.query.exact", "boolValue": True},
        {"jsonPath": "$.tags[0]", "stringValue": "a"},
        {"jsonPath": "$.tags[1]", "stringValue": "b"},
        {"jsonPath": "$.items[0].qty", "numberValue": 2.0},
        {"jsonPath": "$.items[1].qty", "numberValue": 0.5},
        {"jsonPath": "$['odd key']", "nullValue": "NULL_VALUE"},
    ]
    events, _ = run(
        [
            streamed({"name": "search", "willContinue": True}),
            streamed({"partialArgs": partial, "willContinue": True}),
            streamed({}),
        ]
    )
    joined = "".join(e.text or "" for e in only(events, T.TOOL_CALL_ARGS_DELTA))
    end = only(events, T.TOOL_CALL_END)[0]
    expected = {
        "query": {"text": 'caf\u00e9 "x"\n', "exact": True},
        "tags": ["a", "b"],
        "items": [{"qty": 2}, {"qty": 0.5}],
        "odd key": None,
    }
    assert end.tool_call.arguments == expected
    assert orjson.loads(joined) == expected
    assert joined == end.tool_call.arguments_str


def test_streamed_call_without_arguments() -> None:
    events, _ = run(
        [streamed({"name": "read_theme", "willContinue": True}), streamed({}, finishReason="STOP")]
    )
    assert kinds(events) == [T.TOOL_CALL_START, T.TOOL_CALL_END]
    assert events[1].tool_call.arguments == {}
    assert events[1].tool_call.arguments_str == ""


def test_streamed_call_in_one_part_with_partial_args_and_no_continuation() -> None:
    events, _ = run(
        [
            streamed(
                {"name": "f", "id": "c1", "partialArgs": [{"jsonPath": "$.a", "boolValue": False}]}
            )
        ]
    )
    assert kinds(events) == [
        T.TOOL_CALL_START,
        T.TOOL_CALL_ARGS_DELTA,
        T.TOOL_CALL_ARGS_DELTA,
        T.TOOL_CALL_END,
    ]
    assert events[-1].tool_call == ToolCall(id="c1", name="f", arguments_str='{"a":false}', index=0)
    assert events[-1].tool_call_id == "c1"


def test_streamed_call_seeded_with_args() -> None:
    events, _ = run(
        [
            streamed({"name": "f", "args": {"a": [1, 2]}, "willContinue": True}),
            streamed({"partialArgs": [{"jsonPath": "$.b", "stringValue": "x"}]}),
        ]
    )
    end = only(events, T.TOOL_CALL_END)[0]
    assert end.tool_call.arguments == {"a": [1, 2], "b": "x"}
    assert (
        "".join(e.text or "" for e in only(events, T.TOOL_CALL_ARGS_DELTA)) == '{"a":[1,2],"b":"x"}'
    )


def test_arguments_streamed_into_seeded_args_leave_the_frames_as_received() -> None:
    first = streamed({"name": "f", "args": {"a": {"b": 1}, "l": [1]}, "willContinue": True})
    second = streamed(
        {"partialArgs": [{"jsonPath": "$.a.c", "stringValue": "x"}], "willContinue": True}
    )
    third = streamed({"partialArgs": [{"jsonPath": "$.l[1]", "numberValue": 2}]})
    received = orjson.loads(orjson.dumps([first, second, third]))
    events, _ = run([first, second, third])
    assert [first, second, third] == received  # and so the events' raw, views of them
    end = only(events, T.TOOL_CALL_END)[0]
    assert end.tool_call.arguments == {"a": {"b": 1, "c": "x"}, "l": [1, 2]}
    start = only(events, T.TOOL_CALL_START)[0]
    assert start.raw["functionCall"]["args"] == {"a": {"b": 1}, "l": [1]}


def test_whole_and_streamed_calls_share_the_running_index() -> None:
    events, _ = run(
        [
            frame({"functionCall": {"name": "first"}}),
            streamed({"name": "second", "willContinue": True}),
            streamed(
                {"partialArgs": [{"jsonPath": "$.id", "stringValue": "A"}], "willContinue": True}
            ),
            streamed({"name": "third", "willContinue": True}),
            streamed({}),
        ]
    )
    ends = [
        (e.index, e.tool_call.name, e.tool_call.arguments)
        for e in only(events, T.TOOL_CALL_CHUNK, T.TOOL_CALL_END)
    ]
    assert ends == [(0, "first", {}), (1, "second", {"id": "A"}), (2, "third", {})]


def test_finish_reason_closes_a_call_left_open() -> None:
    events, ctx = run(
        [
            streamed({"name": "f", "willContinue": True}),
            streamed(
                {
                    "partialArgs": [{"jsonPath": "$.q", "stringValue": "ab", "willContinue": True}],
                    "willContinue": True,
                },
                finishReason="MAX_TOKENS",
            ),
        ]
    )
    assert kinds(events)[-1] is T.TOOL_CALL_END
    assert events[-1].tool_call.arguments == {"q": "ab"}
    assert "".join(e.text or "" for e in only(events, T.TOOL_CALL_ARGS_DELTA)) == '{"q":"ab"}'
    assert ctx.finish_reason == "MAX_TOKENS"


def test_end_of_stream_closes_a_call_left_open() -> None:
    events, ctx = run([streamed({"name": "f", "willContinue": True})], end=True)
    assert kinds(events) == [T.TOOL_CALL_START, T.TOOL_CALL_END]
    assert not ctx.finished


def test_empty_function_call_with_nothing_open_is_raw() -> None:
    events, _ = run([streamed({})])
    assert [(e.type, e.raw_type) for e in events] == [(T.RAW, "gemini.functionCall")]


def test_unreadable_json_path_is_a_protocol_error() -> None:
    with pytest.raises(ChatProtocolError, match="path"):
        run(
            [
                streamed({"name": "f", "willContinue": True}),
                streamed({"partialArgs": [{"jsonPath": "location", "stringValue": "x"}]}),
            ]
        )


# grounding and citations


GROUNDING = {
    "webSearchQueries": ["euro 2024 winner"],
    "groundingChunks": [
        {"web": {"uri": "https://example.com/a", "title": "uefa.com"}},
        {"web": {"uri": "https://example.com/b", "title": "aljazeera.com"}},
    ],
    "groundingSupports": [
        {
            "segment": {"endIndex": 24, "text": "Spain won Euro 2024."},
            "groundingChunkIndices": [0, 1],
            "confidenceScores": [0.9, 0.8],
        },
        {
            "segment": {"startIndex": 25, "endIndex": 50, "text": "They beat England 2-1."},
            "groundingChunkIndices": [0],
        },
    ],
}


def test_grounding_sources_are_sent_once_each() -> None:
    events, _ = run(
        [
            frame(
                {"text": "Spain won Euro 2024. They beat England 2-1."}, groundingMetadata=GROUNDING
            ),
            frame({"text": ""}, groundingMetadata=GROUNDING, finishReason="STOP"),
        ]
    )
    results = [e.search_result for e in only(events, T.SEARCH_RESULT)]
    assert [(r.url, r.title, r.type) for r in results] == [
        ("https://example.com/a", "uefa.com", "web"),
        ("https://example.com/b", "aljazeera.com", "web"),
    ]
    citations = [e.citation for e in only(events, T.CITATION)]
    assert [
        (c.url, c.title, c.cited_text, c.start_index, c.end_index, c.document_index)
        for c in citations
    ] == [
        ("https://example.com/a", "uefa.com", "Spain won Euro 2024.", 0, 24, 0),
        ("https://example.com/b", "aljazeera.com", "Spain won Euro 2024.", 0, 24, 1),
        ("https://example.com/a", "uefa.com", "They beat England 2-1.", 25, 50, 0),
    ]
    assert citations[0].raw["confidenceScores"] == [0.9, 0.8]


def test_support_pointing_past_the_chunks_is_skipped() -> None:
    grounding = {
        "groundingChunks": [
            {"retrievedContext": {"uri": "gs://b/doc", "title": "doc", "text": "t"}}
        ],
        "groundingSupports": [
            {"segment": {"endIndex": 3, "text": "abc"}, "groundingChunkIndices": [0, 7]}
        ],
    }
    events, _ = run([frame({"text": "abc"}, groundingMetadata=grounding)])
    assert [e.search_result.snippet for e in only(events, T.SEARCH_RESULT)] == ["t"]
    assert [(e.citation.url, e.citation.type) for e in only(events, T.CITATION)] == [
        ("gs://b/doc", "retrievedContext")
    ]


def test_citation_metadata_sources_are_sent_once() -> None:
    metadata = {
        "citationSources": [
            {"startIndex": 10, "endIndex": 90, "uri": "https://example.org/x", "license": "mit"}
        ]
    }
    events, _ = run(
        [
            frame({"text": "code"}, citationMetadata=metadata),
            frame({"text": "!"}, citationMetadata=metadata),
        ]
    )
    citations = [e.citation for e in only(events, T.CITATION)]
    assert [(c.url, c.start_index, c.end_index, c.type) for c in citations] == [
        ("https://example.org/x", 10, 90, "citation_source")
    ]


# media and code execution


def test_inline_image_is_media_done() -> None:
    events, _ = run(
        [
            frame(
                {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}, "thought": True},
                {"inlineData": {"mimeType": "image/png", "data": "AAAA"}, "thoughtSignature": "s"},
                {
                    "fileData": {
                        "mimeType": "application/pdf",
                        "fileUri": "https://example.com/f.pdf",
                    }
                },
            )
        ]
    )
    assert kinds(events) == [T.MEDIA_PARTIAL, T.MEDIA_DONE, T.THINKING_SIGNATURE, T.MEDIA_DONE]
    assert events[0].block == ImageBlock(data="iVBORw0KGgo=", mime_type="image/png")
    assert events[1].block == ImageBlock(data="AAAA", mime_type="image/png")
    assert events[1].message is not None and events[1].message.has_media
    assert events[3].block == FileBlock(
        url="https://example.com/f.pdf", mime_type="application/pdf"
    )


def test_code_execution_parts_are_server_tool_events() -> None:
    events, _ = run(
        [
            frame(
                {"executableCode": {"language": "PYTHON", "code": "print(1+1)"}},
                {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "2\n"}},
                {"text": "The answer is 2."},
            )
        ]
    )
    assert kinds(events) == [T.SERVER_TOOL_START, T.SERVER_TOOL_RESULT, T.TEXT_DELTA]
    start, result, _ = events
    assert start.sub_type == result.sub_type == "code_execution"
    assert start.item_id == result.item_id == "code_execution_0"
    assert start.tool_call.arguments == {"language": "PYTHON", "code": "print(1+1)"}
    assert result.raw["codeExecutionResult"]["output"] == "2\n"


# safety


def test_blocked_prompt_is_a_content_filter_and_completes() -> None:
    events, ctx = run(
        [
            {
                "promptFeedback": {
                    "blockReason": "PROHIBITED_CONTENT",
                    "safetyRatings": [
                        {"category": "HARM_CATEGORY_HARASSMENT", "probability": "HIGH"}
                    ],
                },
                "usageMetadata": {"promptTokenCount": 8, "totalTokenCount": 8},
                "modelVersion": "gemini-2.5-flash",
            }
        ]
    )
    assert [(e.type, e.text) for e in events if e.type is not T.USAGE] == [
        (T.CONTENT_FILTER, "PROHIBITED_CONTENT")
    ]
    assert events[0].raw["safetyRatings"][0]["probability"] == "HIGH"
    assert ctx.finished and ctx.finish_reason == "PROHIBITED_CONTENT"


@pytest.mark.parametrize(
    "reason", ["SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "RECITATION", "IMAGE_SAFETY"]
)
def test_safety_finish_reasons_are_content_filters(reason: str) -> None:
    events, ctx = run(
        [frame({"text": "Partial"}), frame(finishReason=reason), frame(finishReason=reason)]
    )
    assert [(e.type, e.text) for e in events] == [
        (T.TEXT_DELTA, "Partial"),
        (T.CONTENT_FILTER, reason),
    ]
    assert ctx.finish_reason == reason


@pytest.mark.parametrize("reason", ["STOP", "MAX_TOKENS", "MALFORMED_FUNCTION_CALL", "OTHER"])
def test_other_finish_reasons_are_not_filters(reason: str) -> None:
    events, ctx = run([frame(finishReason=reason)])
    assert events == []
    assert ctx.finish_reason == reason


# usage


def test_usage_snapshot_counts_thinking_as_completion() -> None:
    usage = {
        "promptTokenCount": 120,
        "cachedContentTokenCount": 100,
        "candidatesTokenCount": 15,
        "thoughtsTokenCount": 45,
        "toolUsePromptTokenCount": 30,
        "totalTokenCount": 210,
    }
    events, _ = run([{**frame({"text": "hi"}), "usageMetadata": usage}])
    (event,) = only(events, T.USAGE)
    got = event.usage
    assert (got.prompt_tokens, got.completion_tokens, got.total_tokens) == (150, 60, 210)
    assert (got.thinking_tokens, got.cache_read_input_tokens) == (45, 100)
    assert got.source == usage
    assert event.raw == usage


def test_usage_first_at_once_then_only_the_latest_as_the_step_ends() -> None:
    first = {"promptTokenCount": 9, "candidatesTokenCount": 5, "totalTokenCount": 14}
    middle = {"promptTokenCount": 9, "candidatesTokenCount": 12, "totalTokenCount": 21}
    later = {"promptTokenCount": 9, "candidatesTokenCount": 23, "totalTokenCount": 32}
    frames = [
        {**frame({"text": "a"}), "usageMetadata": {"trafficType": "ON_DEMAND"}},
        {**frame({"text": "b"}), "usageMetadata": first},
        {**frame({"text": "c"}), "usageMetadata": dict(first)},
        {**frame({"text": "d"}), "usageMetadata": middle},
        {**frame(finishReason="STOP"), "usageMetadata": later},
    ]
    events, _ = run(frames)  # the step has not ended: the latest is still held back
    totals = [(e.usage.completion_tokens, e.usage.total_tokens) for e in only(events, T.USAGE)]
    assert totals == [(5, 14)]

    events, stage = run(frames, end=True)
    totals = [(e.usage.completion_tokens, e.usage.total_tokens) for e in only(events, T.USAGE)]
    assert totals == [(5, 14), (23, 32)]
    assert events[-1].type is T.USAGE  # after every frame's own events, before STEP_END
    assert stage.settled().usage.total_tokens == 32


def test_held_usage_is_not_lost_however_the_step_ends() -> None:
    first = {"promptTokenCount": 3, "candidatesTokenCount": 1, "totalTokenCount": 4}
    later = {"promptTokenCount": 3, "candidatesTokenCount": 7, "totalTokenCount": 10}
    frames = [
        {**frame({"text": "a"}), "usageMetadata": first},
        {**frame({"text": "b"}), "usageMetadata": later},
    ]
    # cut short (no finishReason): the partial response's STEP_END has the latest snapshot
    events, stage = run(frames, end=True)
    assert isinstance(stage.failure, ChatProtocolError)
    assert [e.usage.total_tokens for e in only(events, T.USAGE)] == [4, 10]
    # cancelled mid-stream: nothing more is sent, yet what is billed is the latest
    events, stage = run(frames)
    assert stage.settled().usage.total_tokens == 10
    assert [e.usage.total_tokens for e in only(events, T.USAGE)] == [4]


def test_usage_total_defaults_to_prompt_plus_completion() -> None:
    events, _ = run([{"usageMetadata": {"promptTokenCount": 4, "candidatesTokenCount": 6}}])
    assert only(events, T.USAGE)[0].usage.total_tokens == 10


# errors and odd input


def test_error_frame_fails_with_the_provider_fields() -> None:
    error = {"code": 429, "message": "Resource has been exhausted", "status": "RESOURCE_EXHAUSTED"}
    events, ctx = run([frame({"text": "Hel"}), {"error": error}])
    assert [e.text for e in events] == ["Hel"]
    assert isinstance(ctx.failure, ProviderError)
    assert ctx.failure.provider_error == error
    assert "Resource has been exhausted" in str(ctx.failure)
    assert not ctx.finished


def test_error_list_body_fails_too() -> None:
    _, ctx = run(
        [[{"error": {"code": 400, "message": "API key not valid", "status": "INVALID_ARGUMENT"}}]]
    )
    assert isinstance(ctx.failure, ProviderError)
    assert ctx.failure.provider_error["status"] == "INVALID_ARGUMENT"
    assert (
        DIALECT.error_message([{"error": {"message": "API key not valid"}}]) == "API key not valid"
    )


@pytest.mark.parametrize("bad", ["text", 3, None])
def test_a_frame_that_is_not_an_object_is_a_protocol_error(bad: Any) -> None:
    with pytest.raises(ChatProtocolError, match="frame 1: expected a JSON object"):
        run([orjson.dumps(bad).decode()])


def test_unknown_frames_parts_and_other_candidates_are_raw() -> None:
    events, _ = run(
        [
            {"somethingNew": True},
            frame({"videoMetadata": {"fps": 1}}),
            {"candidates": [{"index": 1, "content": {"parts": [{"text": "other"}]}}]},
        ]
    )
    assert [(e.type, e.raw_type) for e in events] == [
        (T.RAW, "gemini.unknown"),
        (T.RAW, "gemini.part"),
        (T.RAW, "gemini.candidate"),
    ]


@pytest.mark.parametrize(
    ("odd", "expected"),
    [
        ({"candidates": None}, [T.RAW]),
        ({"candidates": [None, "x", {"content": None}]}, []),
        ({"candidates": [{"content": {"parts": None}}]}, []),
        (
            {"candidates": [{"content": {"parts": [None, {"text": None}, {"functionCall": 1}]}}]},
            [T.RAW],
        ),
        (
            {
                "candidates": [
                    {
                        "groundingMetadata": {
                            "groundingChunks": None,
                            "groundingSupports": [None, {"segment": None}],
                        }
                    }
                ]
            },
            [],
        ),
        ({"candidates": [{"citationMetadata": {"citationSources": [None, {}]}}]}, []),
        ({"candidates": [{"finishReason": 7}]}, []),
        ({"usageMetadata": {"promptTokenCount": "many", "totalTokenCount": None}}, [T.USAGE]),
        ({"promptFeedback": {"blockReason": None}}, []),
    ],
)
def test_odd_but_valid_json_does_not_crash(
    odd: dict[str, Any], expected: list[ChatEventType]
) -> None:
    events, ctx = run([odd])
    assert kinds(events) == expected
    assert not ctx.finished


def test_state_belongs_to_the_context_not_the_dialect() -> None:
    opening = streamed({"name": "f", "willContinue": True})
    run([opening])
    events, _ = run([streamed({})])
    assert kinds(events) == [T.RAW]


def test_get_dialect_knows_gemini() -> None:
    dialect = get_dialect("gemini")
    assert isinstance(dialect, GeminiDialect) and dialect.name == "gemini"


# the fast path for plain text frames

# parse_frame reads the common frame (one candidate, index 0, one plain text part, nothing
# else) with plain lookups; everything else goes through gemini._response, the general code.
# These tests pin that both ways give the same events, and which way a frame goes.


def general(frames: list[Any]) -> tuple[list[Any], ParseStage]:
    """Feed ``frames`` to the general code only: the reference the fast path must match."""
    return feed(gemini._response, frames, response_id="r-1")


def assert_same_as_general(frames: list[Any]) -> list[Any]:
    events, ctx = run(frames)
    assert outcome(events, ctx) == outcome(*general(frames))
    return events


def plain(text: Any = "word ", **fields: Any) -> dict[str, Any]:
    """The benchmark's frame shape; ``fields`` replace or add frame fields."""
    body: dict[str, Any] = {
        "candidates": [{"content": {"parts": [{"text": text}], "role": "model"}, "index": 0}],
        "modelVersion": "gemini-2.5-flash",
        "responseId": "resp-1",
    }
    body.update(fields)
    return body


@pytest.fixture
def general_calls(record_frames: Callable[[ModuleType, str], list[Any]]) -> list[Any]:
    """The frames that reach the general code during a test."""
    return record_frames(gemini, "_response")


def test_plain_text_frames_take_the_fast_path(general_calls: list[Any]) -> None:
    frames = [plain("Hel"), plain("lo", responseId="resp-2", modelVersion="m-2"), plain("!")]
    events, ctx = run(frames)
    assert general_calls == []
    part = frames[1]["candidates"][0]["content"]["parts"][0]
    assert events[1] == ChatEvent(
        T.TEXT_DELTA, text="lo", step=0, response_id="r-1", provider_response_id="resp-2", raw=part
    )
    assert [(e.text, e.provider_response_id) for e in events] == [
        ("Hel", "resp-1"),
        ("lo", "resp-2"),
        ("!", "resp-1"),
    ]
    assert (ctx.provider_response_id, ctx.model) == ("resp-1", "gemini-2.5-flash")
    assert outcome(events, ctx) == outcome(*general(frames))


def test_plain_text_frames_in_a_list_take_the_fast_path(general_calls: list[Any]) -> None:
    events, _ = run([[plain("a"), plain("b")]])
    assert [(e.type, e.text) for e in events] == [(T.TEXT_DELTA, "a"), (T.TEXT_DELTA, "b")]
    assert general_calls == []


def with_part(**part: Any) -> dict[str, Any]:
    body = plain()
    body["candidates"][0]["content"]["parts"] = [part]
    return body


def with_candidate(**fields: Any) -> dict[str, Any]:
    body = plain()
    body["candidates"][0].update(fields)
    return body


def without(key: str, body: dict[str, Any]) -> dict[str, Any]:
    del body[key]
    return body


NEAR_MISSES: list[tuple[str, Any, list[tuple[ChatEventType, Any]]]] = [
    ("thought", with_part(text="hm", thought=True), [(T.THINKING_DELTA, "hm")]),
    ("thought false", with_part(text="hm", thought=False), [(T.TEXT_DELTA, "hm")]),
    (
        "signature",
        with_part(text="a", thoughtSignature="c2ln"),
        [(T.TEXT_DELTA, "a"), (T.THINKING_SIGNATURE, "c2ln")],
    ),
    ("empty text", plain(""), []),
    (
        "empty text with signature",
        with_part(text="", thoughtSignature="s"),
        [(T.THINKING_SIGNATURE, "s")],
    ),
    ("text not a string", plain(5), []),
    ("text a list", plain(["x"]), []),
    ("text null", plain(None), []),
    ("function call too", with_part(text="a", functionCall=1), [(T.RAW, "gemini.functionCall")]),
    (
        "two parts",
        with_candidate(content={"parts": [{"text": "a"}, {"text": "b"}]}),
        [(T.TEXT_DELTA, "a"), (T.TEXT_DELTA, "b")],
    ),
    ("no parts", with_candidate(content={"parts": []}), []),
    ("parts not objects", with_candidate(content={"parts": ["word"]}), []),
    ("parts an object", with_candidate(content={"parts": {"text": "x"}}), []),
    ("part a list", with_candidate(content={"parts": [["text"]]}), []),
    ("content not an object", with_candidate(content=[{"parts": [{"text": "x"}]}]), []),
    (
        "two candidates",
        plain(candidates=[plain()["candidates"][0], {"index": 1, "content": {"parts": []}}]),
        [(T.TEXT_DELTA, "word "), (T.RAW, "gemini.candidate")],
    ),
    (
        "candidates an object",
        plain(candidates={"0": {"content": {"parts": [{"text": "x"}]}}}),
        [(T.RAW, "gemini.unknown")],
    ),
    ("candidate index 1", with_candidate(index=1), [(T.RAW, "gemini.candidate")]),
    ("candidate index false", with_candidate(index=False), [(T.TEXT_DELTA, "word ")]),
    ("candidate index null", with_candidate(index=None), [(T.TEXT_DELTA, "word ")]),
    (
        "candidate without index",
        plain(candidates=[{"content": {"parts": [{"text": "x"}]}}]),
        [(T.TEXT_DELTA, "x")],
    ),
    ("finish reason", with_candidate(finishReason="STOP"), [(T.TEXT_DELTA, "word ")]),
    (
        "safety finish",
        with_candidate(finishReason="SAFETY"),
        [(T.TEXT_DELTA, "word "), (T.CONTENT_FILTER, "SAFETY")],
    ),
    ("safety ratings", with_candidate(safetyRatings=[]), [(T.TEXT_DELTA, "word ")]),
    (
        "citations",
        with_candidate(citationMetadata={"citationSources": [{"uri": "https://a.example"}]}),
        [(T.TEXT_DELTA, "word "), (T.CITATION, None)],
    ),
    (
        "usage",
        plain(usageMetadata={"promptTokenCount": 5, "totalTokenCount": 9}),
        [(T.TEXT_DELTA, "word "), (T.USAGE, None)],
    ),
    (
        "usage without counts",
        plain(usageMetadata={"trafficType": "ON_DEMAND"}),
        [(T.TEXT_DELTA, "word ")],
    ),
    (
        "usage not an object",
        plain(usageMetadata=[{"promptTokenCount": 5}]),
        [(T.TEXT_DELTA, "word ")],
    ),
    (
        "blocked prompt",
        plain(promptFeedback={"blockReason": "SAFETY"}),
        [(T.CONTENT_FILTER, "SAFETY"), (T.TEXT_DELTA, "word ")],
    ),
    ("error", plain(error={"code": 500, "message": "boom"}), []),
    ("create time", plain(createTime="2025-01-01T00:00:00Z"), [(T.TEXT_DELTA, "word ")]),
    ("no response id", without("responseId", plain()), [(T.TEXT_DELTA, "word ")]),
    ("no model", without("modelVersion", plain()), [(T.TEXT_DELTA, "word ")]),
    ("empty response id", plain(responseId=""), [(T.TEXT_DELTA, "word ")]),
    ("response id not a string", plain(responseId=7), [(T.TEXT_DELTA, "word ")]),
    ("model null", plain(modelVersion=None), [(T.TEXT_DELTA, "word ")]),
]


@pytest.mark.parametrize(
    ("odd", "expected"), [m[1:] for m in NEAR_MISSES], ids=[m[0] for m in NEAR_MISSES]
)
def test_near_misses_of_the_plain_shape_give_their_own_events(
    odd: dict[str, Any], expected: list[tuple[ChatEventType, Any]]
) -> None:
    # After a plain frame, so a frame that changes nothing shows the ids it kept.
    before = plain("x", responseId="resp-0", modelVersion="m-0")
    events = assert_same_as_general([before, odd])[1:]
    assert [(e.type, e.raw_type if e.type is T.RAW else e.text) for e in events] == expected


# Near misses the fast path takes all the same: the ids are checked there as in the general code.
FAST_TOO = {
    "candidate index false",
    "empty response id",
    "response id not a string",
    "model null",
    "usage",
    "usage without counts",
}
# Near misses the one-part path takes (see below): still one candidate holding one part, and
# no field the general code reads that the one-part path does not.
ONE_PART = {
    "thought",
    "thought false",
    "signature",
    "empty text",
    "empty text with signature",
    "text not a string",
    "text a list",
    "text null",
    "function call too",
    "candidate index null",
    "candidate without index",
    "finish reason",
    "safety finish",
    "safety ratings",
    "usage not an object",
    "create time",
}


@pytest.fixture
def one_part_frames(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The frames gemini._one_part takes during a test (not those it leaves to the general code)."""
    taken: list[Any] = []
    real = gemini._one_part

    def recorded(ctx: ChatStreamContext, frame: Any, *rest: Any) -> bool:
        done = real(ctx, frame, *rest)
        if done:
            taken.append(frame)
        return done

    monkeypatch.setattr(gemini, "_one_part", recorded)
    return taken


@pytest.mark.parametrize(
    ("name", "odd"), [m[:2] for m in NEAR_MISSES], ids=[m[0] for m in NEAR_MISSES]
)
def test_which_near_misses_go_the_general_way(
    name: str, odd: dict[str, Any], general_calls: list[Any], one_part_frames: list[Any]
) -> None:
    run([odd])
    assert general_calls == ([] if name in FAST_TOO or name in ONE_PART else [odd])
    assert one_part_frames == ([odd] if name in ONE_PART else [])


def test_response_id_and_model_follow_the_frames() -> None:
    frames = [
        plain("a", responseId="r-a", modelVersion="m-a"),
        plain("b", responseId="", modelVersion=None),
        plain("c", responseId=3, modelVersion="m-c"),
        plain("d", responseId="r-d", modelVersion=""),
    ]
    events = assert_same_as_general(frames)
    assert [e.provider_response_id for e in events] == ["r-a", "r-a", "r-a", "r-d"]
    _, ctx = run(frames)
    assert ctx.model == "m-c"


JSON_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-1, 2), st.sampled_from(["", "x", "STOP", "SAFETY"])
)
TEXTS = st.sampled_from(["", "z", 5, True, None, ["x"], {"x": 1}])
IDS = st.one_of(st.sampled_from(["r-1", "r-2", "m-1"]), JSON_SCALARS)
# (where, key, values): one change to the plain shape; a drawn change may also delete the key.
CHANGES: list[tuple[str, str, st.SearchStrategy[Any]]] = [
    ("part", "text", TEXTS),
    ("part", "thought", JSON_SCALARS),
    ("part", "thoughtSignature", JSON_SCALARS),
    ("part", "videoMetadata", st.just({})),
    ("content", "parts", st.sampled_from([[], ["x"], [None], {"text": "x"}, [{"text": "y"}]])),
    ("candidate", "index", JSON_SCALARS),
    ("candidate", "finishReason", st.sampled_from(["STOP", "SAFETY", "", None])),
    ("candidate", "citationMetadata", st.just({"citationSources": [{"uri": "https://a.b"}]})),
    ("candidate", "safetyRatings", st.just([])),
    ("candidate", "content", st.sampled_from([None, [], {}])),
    ("frame", "candidates", st.sampled_from([None, [], [{"index": 1}], {"0": {}}])),
    ("frame", "responseId", IDS),
    ("frame", "modelVersion", IDS),
    (
        "frame",
        "usageMetadata",
        st.sampled_from(
            [{"promptTokenCount": 1}, {"promptTokenCount": 2}, {"trafficType": "x"}, [], None]
        ),
    ),
    ("frame", "promptFeedback", st.sampled_from([{"blockReason": "SAFETY"}, {}])),
    ("frame", "createTime", JSON_SCALARS),
]


@st.composite
def gemini_frames(draw: st.DrawFn) -> dict[str, Any]:
    """The plain shape with random text and ids, then up to three changes anywhere in it."""
    part: dict[str, Any] = {"text": draw(st.text(min_size=1, max_size=3))}
    candidate: dict[str, Any] = {"content": {"parts": [part], "role": "model"}, "index": 0}
    body: dict[str, Any] = {
        "candidates": [candidate],
        "modelVersion": draw(st.sampled_from(["m-1", "m-2"])),
        "responseId": draw(st.sampled_from(["r-1", "r-2"])),
    }
    places = {"part": part, "content": candidate["content"], "candidate": candidate, "frame": body}
    change(draw, places, CHANGES)
    return body


def change(draw: st.DrawFn, places: dict[str, dict[str, Any]], changes: list[Any]) -> None:
    """Up to three of ``changes`` (place, key, values) made: the key removed or set anew."""
    for where, key, values in draw(st.lists(st.sampled_from(changes), max_size=3)):
        target = places[where]
        if key in target and draw(st.booleans()):
            del target[key]
        else:
            target[key] = draw(values)


@settings(max_examples=300, deadline=None)
@given(st.lists(gemini_frames(), min_size=1, max_size=4))
def test_any_frame_gives_the_events_of_the_general_code(frames: list[Any]) -> None:
    assert_same_as_general(frames)


# the one-part path: function calls and every other single part

# parse_frame hands any other frame with one candidate holding one part to gemini._one_part,
# which sends that part's events as the general code does, as long as the frame and the
# candidate hold no field but those it knows. Streamed function calls come this way: Vertex AI
# sends each piece in a frame of its own, without a candidate index.


def vertex(call: Any, **part: Any) -> dict[str, Any]:
    """A function call frame as Vertex AI streams it; ``part`` adds part fields."""
    return {
        "candidates": [{"content": {"role": "model", "parts": [{"functionCall": call, **part}]}}],
        "usageMetadata": {"trafficType": "ON_DEMAND"},
        "modelVersion": "gemini-3-flash-preview",
        "createTime": "2026-05-04T20:01:02.264968Z",
        "responseId": "resp-1",
    }


OPEN = {"name": "read_screen", "willContinue": True}
PIECE = {
    "partialArgs": [{"jsonPath": "$.id", "stringValue": "A", "willContinue": True}],
    "willContinue": True,
}
LAST_PIECE = {"partialArgs": [{"jsonPath": "$.id", "stringValue": ""}], "willContinue": True}
WHOLE = {"name": "read_theme"}


def test_streamed_function_calls_take_the_one_part_path(general_calls: list[Any]) -> None:
    frames = [
        vertex(WHOLE, thoughtSignature="c2ln"),
        *[vertex(call) for call in (OPEN, PIECE, LAST_PIECE, {}, OPEN, PIECE, LAST_PIECE)],
        vertex({}),
    ]
    frames[-1]["candidates"][0]["finishReason"] = "STOP"
    frames[-1]["usageMetadata"] = {"promptTokenCount": 9, "totalTokenCount": 20}
    events, ctx = run(frames)
    assert general_calls == []
    assert outcome(events, ctx) == outcome(*general(frames))
    streamed_call = [T.TOOL_CALL_START, *[T.TOOL_CALL_ARGS_DELTA] * 3, T.TOOL_CALL_END]
    assert kinds(events) == [
        T.TOOL_CALL_CHUNK,
        T.THINKING_SIGNATURE,
        *streamed_call,
        *streamed_call,
        T.USAGE,
    ]
    assert [e.tool_call.arguments for e in only(events, T.TOOL_CALL_END)] == [{"id": "A"}] * 2
    assert (ctx.finish_reason, ctx.provider_response_id) == ("STOP", "resp-1")


PARTIAL_ARGS = st.sampled_from(
    [
        [],
        None,
        "x",
        [None],
        PIECE["partialArgs"],
        LAST_PIECE["partialArgs"],
        [{"jsonPath": "$.n", "numberValue": 2.0}, {"jsonPath": "$.b", "boolValue": True}],
        [{"jsonPath": 5, "stringValue": "x"}, {"jsonPath": "$.z", "nullValue": None}],
    ]
)
# (where, key, values) as in CHANGES, for function call frames.
CALL_CHANGES: list[tuple[str, str, st.SearchStrategy[Any]]] = [
    ("call", "name", st.sampled_from(["f", "g", "", None, 3])),
    ("call", "id", st.sampled_from(["c-1", "", 3, None])),
    ("call", "willContinue", JSON_SCALARS),
    ("call", "args", st.sampled_from([{"k": 1}, {}, [], None])),
    ("call", "partialArgs", PARTIAL_ARGS),
    ("part", "functionCall", st.sampled_from([None, 1, [], "x", {}])),
    ("part", "thoughtSignature", JSON_SCALARS),
    ("part", "text", TEXTS),
    ("part", "thought", JSON_SCALARS),
    ("part", "inlineData", st.just({"mimeType": "image/png", "data": "iVBO"})),
    ("content", "parts", st.sampled_from([[], [None], [{"text": "y"}, {"text": "z"}]])),
    ("candidate", "index", JSON_SCALARS),
    ("candidate", "finishReason", st.sampled_from(["STOP", "SAFETY", "", None, 1])),
    ("candidate", "safetyRatings", st.just([])),
    ("candidate", "citationMetadata", st.just({"citationSources": [{"uri": "https://a.b"}]})),
    ("candidate", "groundingMetadata", st.just({"groundingChunks": [{"web": {"uri": "u"}}]})),
    ("candidate", "finishMessage", st.just("done")),
    ("frame", "candidates", st.sampled_from([None, [], [{"index": 1}]])),
    ("frame", "responseId", IDS),
    ("frame", "modelVersion", IDS),
    (
        "frame",
        "usageMetadata",
        st.sampled_from([{"promptTokenCount": 1}, {"trafficType": "x"}, [], None]),
    ),
    ("frame", "promptFeedback", st.sampled_from([{"blockReason": "SAFETY"}, {}])),
    ("frame", "error", st.sampled_from([{"code": 500, "message": "boom"}, None, ""])),
    ("frame", "createTime", JSON_SCALARS),
]


@st.composite
def function_call_frames(draw: st.DrawFn) -> dict[str, Any]:
    """A streamed (or whole) function call frame, then up to three changes anywhere in it."""
    call = dict(draw(st.sampled_from([OPEN, PIECE, LAST_PIECE, {}, WHOLE])))
    body = vertex(call)
    body["responseId"] = draw(st.sampled_from(["r-1", "r-2"]))
    candidate = body["candidates"][0]
    places = {
        "call": call,
        "part": candidate["content"]["parts"][0],
        "content": candidate["content"],
        "candidate": candidate,
        "frame": body,
    }
    change(draw, places, CALL_CHANGES)
    return body


@settings(max_examples=400, deadline=None)
@given(st.lists(function_call_frames(), min_size=1, max_size=8))
def test_any_function_call_frame_gives_the_events_of_the_general_code(frames: list[Any]) -> None:
    assert_same_as_general(frames)


# request building


BASE = "https://generativelanguage.googleapis.com/v1beta"
MODEL_URL = f"{BASE}/models/gemini-2.5-flash:streamGenerateContent"


@pytest.mark.parametrize(
    ("api_url", "model", "expected"),
    [
        (BASE, "gemini-2.5-flash", f"{MODEL_URL}?alt=sse"),
        (f"{BASE}/", "gemini-2.5-flash", f"{MODEL_URL}?alt=sse"),
        (f"{BASE}/models", "gemini-2.5-flash", f"{MODEL_URL}?alt=sse"),
        (BASE, "models/gemini-2.5-flash", f"{MODEL_URL}?alt=sse"),
        (MODEL_URL, "ignored", f"{MODEL_URL}?alt=sse"),
        (f"{MODEL_URL}?alt=sse", "ignored", f"{MODEL_URL}?alt=sse"),
        (f"{MODEL_URL}?alt=json&x=1", "ignored", f"{MODEL_URL}?alt=sse&x=1"),
        (f"{BASE}/models/gemini-2.5-flash:generateContent", "ignored", f"{MODEL_URL}?alt=sse"),
        (
            "http://127.0.0.1:8000/v1beta",
            "m",
            "http://127.0.0.1:8000/v1beta/models/m:streamGenerateContent?alt=sse",
        ),
    ],
)
def test_stream_url_forms(api_url: str, model: str, expected: str) -> None:
    assert stream_url(api_url, model) == expected


def build(request: ChatRequest, **kwargs: Any) -> Any:
    return DIALECT.build_request(request, api_url=BASE, **kwargs)


def test_api_key_goes_in_the_header_only() -> None:
    key = "AIza-secret-key"
    http = build(
        ChatRequest(model="gemini-2.5-flash", messages=[UserMessage(text="hi")]), api_key=key
    )
    assert http.headers["x-goog-api-key"] == key
    assert http.headers["Content-Type"] == "application/json"
    assert key not in http.url
    assert key.encode() not in http.body_bytes()
    assert key not in repr(http)
    assert http.url == f"{MODEL_URL}?alt=sse"


def test_a_key_in_the_url_is_moved_into_the_header() -> None:
    request = hi()
    http = DIALECT.build_request(request, api_url=f"{BASE}?key=AIza-in-url&x=1")
    assert http.url == f"{BASE}/models/m:streamGenerateContent?alt=sse&x=1"
    assert http.headers["x-goog-api-key"] == "AIza-in-url"
    given = DIALECT.build_request(request, api_url=f"{MODEL_URL}?key=old", api_key="new")
    assert given.headers["x-goog-api-key"] == "new"
    assert "old" not in given.url


def test_no_key_header_without_a_key_and_extra_headers_win() -> None:
    http = build(
        hi(),
        headers={"x-goog-user-project": "p", "Content-Type": "application/json; charset=utf-8"},
    )
    assert "x-goog-api-key" not in http.headers
    assert http.headers["x-goog-user-project"] == "p"
    assert http.headers["Content-Type"] == "application/json; charset=utf-8"


def test_body_contents_roles_and_parts() -> None:
    request = ChatRequest(
        model="gemini-2.5-flash",
        messages=[
            SystemMessage(text="Be brief."),
            UserMessage(
                text="What is in these?",
                blocks=[
                    ImageBlock(data="AAAA", mime_type="image/jpeg"),
                    ImageBlock(url="data:image/webp;base64,BBBB"),
                    ImageBlock(url="gs://bucket/cat.png", mime_type="image/png"),
                    FileBlock(data="JVBERi0=", mime_type="application/pdf"),
                ],
            ),
            AssistantMessage(
                text="Let me check.",
                thinking="hidden reasoning",
                tool_calls=[
                    ToolCall(id=None, name="weather", arguments={"city": "Paris"}),
                    ToolCall(id="fc-2", name="time", arguments={}),
                ],
                metadata={"thinking_signature": "c2lnbmF0dXJl"},
            ),
            ToolMessage(tool_call_id=None, name="weather", content="18C"),
            ToolMessage(tool_call_id="fc-2", name="time", content="boom", is_error=True),
            UserMessage(text="Thanks"),
        ],
    )
    body = orjson.loads(build(request).body_bytes())
    assert body["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert body["contents"] == [
        {
            "role": "user",
            "parts": [
                {"text": "What is in these?"},
                {"inlineData": {"mimeType": "image/jpeg", "data": "AAAA"}},
                {"inlineData": {"mimeType": "image/webp", "data": "BBBB"}},
                {"fileData": {"mimeType": "image/png", "fileUri": "gs://bucket/cat.png"}},
                {"inlineData": {"mimeType": "application/pdf", "data": "JVBERi0="}},
            ],
        },
        {
            "role": "model",
            "parts": [
                {"text": "Let me check."},
                {
                    "functionCall": {"name": "weather", "args": {"city": "Paris"}},
                    "thoughtSignature": "c2lnbmF0dXJl",
                },
                {"functionCall": {"name": "time", "args": {}, "id": "fc-2"}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "weather", "response": {"result": "18C"}}},
                {"functionResponse": {"name": "time", "response": {"error": "boom"}, "id": "fc-2"}},
            ],
        },
        {"role": "user", "parts": [{"text": "Thanks"}]},
    ]
    assert "generationConfig" not in body
    assert "tools" not in body


def test_function_call_without_known_signature_gets_the_documented_placeholder() -> None:
    request = ChatRequest(
        model="m",
        messages=[
            UserMessage(text="weather?"),
            AssistantMessage(tool_calls=[ToolCall(name="weather", arguments={"city": "Oslo"})]),
            ToolMessage(tool_call_id=None, name="weather", content="-3C"),
        ],
    )
    model_turn = build(request).body["contents"][1]
    assert model_turn == {
        "role": "model",
        "parts": [
            {
                "functionCall": {"name": "weather", "args": {"city": "Oslo"}},
                "thoughtSignature": SKIP_SIGNATURE,
            }
        ],
    }


def test_text_turn_carries_its_signature_on_the_last_part() -> None:
    request = ChatRequest(
        model="m",
        messages=[
            UserMessage(text="hi"),
            AssistantMessage(text="hello", metadata={"thinking_signature": "sig"}),
            AssistantMessage(text="again"),
        ],
    )
    contents = build(request).body["contents"]
    assert contents[1]["parts"] == [{"text": "hello", "thoughtSignature": "sig"}]
    assert contents[2]["parts"] == [{"text": "again"}]


def test_tools_become_function_declarations() -> None:
    request = hi(tools=[WEATHER, ToolSpec(name="now")])
    body = orjson.loads(build(request).body_bytes())
    assert body["tools"] == [
        {
            "functionDeclarations": [
                {"name": "weather", "description": "Current weather.", "parameters": CITY_SCHEMA},
                {"name": "now", "description": ""},
            ]
        }
    ]


def test_options_map_to_generation_config_and_request_fields() -> None:
    safety = [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}]
    request = hi(
        tools=[ToolSpec(name="now")],
        options={
            "temperature": 0.2,
            "max_tokens": 256,
            "top_p": 0.9,
            "topK": 40,
            "stop": "END",
            "seed": 7,
            "response_mime_type": "application/json",
            "thinking_config": {"thinking_budget": 1024, "include_thoughts": True},
            "safety_settings": safety,
            "tools": [{"googleSearch": {}}],
            "generation_config": {"candidateCount": 1},
        },
    )
    body = build(request).body
    assert body["generationConfig"] == {
        "temperature": 0.2,
        "maxOutputTokens": 256,
        "topP": 0.9,
        "topK": 40,
        "stopSequences": ["END"],
        "seed": 7,
        "responseMimeType": "application/json",
        "thinkingConfig": {"thinkingBudget": 1024, "includeThoughts": True},
        "candidateCount": 1,
    }
    assert body["safetySettings"] == safety
    assert body["tools"] == [
        {"functionDeclarations": [{"name": "now", "description": ""}]},
        {"googleSearch": {}},
    ]


def test_camel_case_thinking_config_passes_through() -> None:
    request = hi(
        options={"thinkingConfig": {"thinkingLevel": "low"}},
    )
    assert build(request).body["generationConfig"] == {"thinkingConfig": {"thinkingLevel": "low"}}


def test_an_unsendable_message_or_block_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="gemini"):
        build(ChatRequest(model="m", messages=[42]))
    with pytest.raises(TypeError, match="gemini"):
        build(ChatRequest(model="m", messages=[UserMessage(text="x", blocks=[object()])]))
    with pytest.raises(ValueError, match="url or data"):
        build(ChatRequest(model="m", messages=[UserMessage(blocks=[ImageBlock()])]))


# the recorded streams of ../shared/corpus/gemini

RECORDINGS = corpus_paths("gemini")


test_the_corpus_is_there = corpus_presence_test(RECORDINGS, at_least=5)


@pytest.mark.parametrize("path", RECORDINGS)
def test_corpus_recording(path: Path) -> None:
    frames, expected = corpus_recording(path)
    events, ctx = run(frames, end=True)

    assert ctx.failure is None
    assert ctx.finished and ctx.finish_reason == expected["finish_reason"]
    assert "".join(e.text or "" for e in only(events, T.TEXT_DELTA)) == expected["text"]
    assert "".join(e.text or "" for e in only(events, T.THINKING_DELTA)) == expected["thinking"]
    usage = only(events, T.USAGE)[-1].usage
    assert {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
    } == expected["usage"]

    # every call, whole (TOOL_CALL_CHUNK) or streamed (TOOL_CALL_END), in stream order
    calls = [e.tool_call for e in only(events, T.TOOL_CALL_CHUNK, T.TOOL_CALL_END)]
    assert [(c.name, c.arguments) for c in calls] == [
        (c["name"], c["arguments"]) for c in expected["tool_calls"]
    ]
    for call, wanted in zip(calls, expected["tool_calls"]):
        if wanted["id"] is not None:
            assert call.id == wanted["id"]
    streamed = [e for e in events if e.type is T.TOOL_CALL_END]
    assert len(only(events, T.TOOL_CALL_START)) == len(streamed)
    positions = [e.index for e in only(events, T.TOOL_CALL_CHUNK, T.TOOL_CALL_END)]
    assert sorted(positions) == list(range(len(positions)))
