"""The OpenAI Chat Completions dialect, frame by frame.

The fixtures are small streams written from the public streaming references of OpenAI
Chat Completions (``chat.completion.chunk``), DeepSeek and Kimi (``reasoning_content``),
OpenRouter (``reasoning``, ``url_citation`` annotations), Mistral (content arrays, whole
tool calls), Groq (``x_groq``) and Perplexity (``citations``, ``search_results``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from chat_requests import hi
from dialect_runs import DONE, feed
from recorded import CORPUS, corpus_paths, needs_corpus

from solon_events import ChatRequest, SystemMessage, ToolMessage, ToolSpec, UserMessage
from solon_events.core.accumulator import ChatAccumulator
from solon_events.core.parsing import ParseStage
from solon_events.dialects import get_dialect
from solon_events.dialects.openai import OpenAIDialect
from solon_events.event_model.errors import ChatError, ChatProtocolError, ProviderError
from solon_events.event_model.events import ChatEvent, ChatEventType
from solon_events.event_model.results import (
    AssistantMessage,
    ChatResponse,
    Citation,
    FileBlock,
    ImageBlock,
    TextBlock,
    ToolCall,
)

T = ChatEventType
DIALECT = OpenAIDialect()


# driver and fixture helpers


def run(frames: list[Any]) -> tuple[list[ChatEvent], ParseStage]:
    """Feed ``frames`` (decoded payloads, or DONE) to the dialect as the parse operator does."""
    return feed(DIALECT, frames, response_id="resp-1")


def fold(events: list[ChatEvent], ctx: ParseStage) -> ChatResponse:
    """The step's response, as the step accumulator folds the dialect's events."""
    accumulator = ChatAccumulator()
    for event in events:
        accumulator.add(event)
    return accumulator.snapshot(finish_reason=ctx.finish_reason, model=ctx.model)


def chunk(
    delta: dict[str, Any] | None = None,
    finish: str | None = None,
    *,
    id: str = "chatcmpl-abc123",
    model: str = "gpt-4o-mini-2024-07-18",
    **extra: Any,
) -> dict[str, Any]:
    """A ``chat.completion.chunk`` with one choice, as the OpenAI reference shows it."""
    frame: dict[str, Any] = {
        "id": id,
        "object": "chat.completion.chunk",
        "created": 1694268190,
        "model": model,
        "system_fingerprint": "fp_44709d6fcb",
        "choices": [{"index": 0, "delta": delta or {}, "logprobs": None, "finish_reason": finish}],
        "usage": None,
    }
    frame.update(extra)
    return frame


def usage_chunk(usage: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """The final usage-only chunk of ``stream_options.include_usage``: empty choices."""
    frame = chunk(**extra)
    frame["choices"] = []
    frame["usage"] = usage
    return frame


def types(events: list[ChatEvent]) -> list[ChatEventType]:
    return [e.type for e in events]


def texts(events: list[ChatEvent], type: ChatEventType) -> str:
    return "".join(e.text or "" for e in events if e.type is type)


# text, refusal, usage, finish


OPENAI_TEXT = [
    chunk({"role": "assistant", "content": "", "refusal": None}),
    chunk({"content": "Hello"}),
    chunk({"content": " there!"}),
    chunk({}, "stop"),
    usage_chunk(
        {
            "prompt_tokens": 19,
            "completion_tokens": 10,
            "total_tokens": 29,
            "prompt_tokens_details": {"cached_tokens": 5, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 4, "audio_tokens": 0},
        }
    ),
    DONE,
]


def test_text_deltas_usage_only_chunk_and_finish_reason() -> None:
    events, ctx = run(OPENAI_TEXT)
    assert types(events) == [T.TEXT_DELTA, T.TEXT_DELTA, T.USAGE]
    assert [e.text for e in events[:2]] == ["Hello", " there!"]
    assert ctx.finished and ctx.finish_reason == "stop"
    assert ctx.failure is None
    assert ctx.provider_response_id == "chatcmpl-abc123"
    assert ctx.model == "gpt-4o-mini-2024-07-18"
    assert all(e.provider_response_id == "chatcmpl-abc123" for e in events)
    assert all(e.response_id == "resp-1" for e in events)
    assert events[0].raw["choices"][0]["delta"]["content"] == "Hello"


def test_usage_maps_cached_and_reasoning_tokens() -> None:
    events, _ = run(OPENAI_TEXT)
    usage = events[-1].usage
    assert usage is not None
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (19, 10, 29)
    assert usage.cache_read_input_tokens == 5
    assert usage.thinking_tokens == 4
    assert usage.cache_creation_input_tokens == 0
    assert usage.source["prompt_tokens_details"]["cached_tokens"] == 5


def test_usage_only_chunk_after_finish_is_still_read() -> None:
    events, ctx = run(OPENAI_TEXT[:4])
    assert ctx.finished and T.USAGE not in types(events)
    events, ctx = run(OPENAI_TEXT[:5])
    assert events[-1].type is T.USAGE
    assert fold(events, ctx).usage == events[-1].usage


def test_total_comes_from_the_provider() -> None:
    # xAI counts reasoning outside completion_tokens: its total is larger than the sum.
    usage = {"prompt_tokens": 307, "completion_tokens": 26, "total_tokens": 560}
    events, _ = run([chunk({}, "stop"), usage_chunk(usage)])
    assert events[-1].usage is not None and events[-1].usage.total_tokens == 560


def test_total_defaults_to_prompt_plus_completion() -> None:
    events, _ = run([chunk({}, "stop"), usage_chunk({"prompt_tokens": 7, "completion_tokens": 3})])
    assert events[-1].usage is not None and events[-1].usage.total_tokens == 10


def test_usage_inside_the_finish_chunk_deepseek() -> None:
    usage = {
        "prompt_tokens": 18,
        "completion_tokens": 25,
        "total_tokens": 43,
        "prompt_tokens_details": {"cached_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 20},
        "prompt_cache_hit_tokens": 0,
        "prompt_cache_miss_tokens": 18,
    }
    events, ctx = run(
        [
            chunk({"role": "assistant", "content": None, "reasoning_content": ""}),
            chunk({"content": None, "reasoning_content": "Count the r's."}),
            chunk({"content": "Three.", "reasoning_content": None}),
            chunk({"content": "", "reasoning_content": None}, "stop", usage=usage),
        ]
    )
    assert types(events) == [T.THINKING_DELTA, T.TEXT_DELTA, T.USAGE]
    assert texts(events, T.THINKING_DELTA) == "Count the r's."
    assert texts(events, T.TEXT_DELTA) == "Three."
    assert events[-1].usage is not None and events[-1].usage.thinking_tokens == 20
    assert ctx.finish_reason == "stop"


def test_deepseek_cache_hit_tokens_without_details() -> None:
    usage = {"prompt_tokens": 50, "completion_tokens": 5, "prompt_cache_hit_tokens": 32}
    events, _ = run([chunk({}, "stop", usage=usage)])
    assert events[-1].usage is not None and events[-1].usage.cache_read_input_tokens == 32


def test_groq_usage_in_x_groq() -> None:
    frame = chunk({}, "stop")
    del frame["usage"]
    frame["x_groq"] = {
        "id": "req_01",
        "usage": {
            "prompt_tokens": 210,
            "completion_tokens": 15,
            "total_tokens": 225,
            "queue_time": 0.04,
        },
    }
    events, _ = run([frame])
    assert types(events) == [T.USAGE]
    assert events[0].usage is not None and events[0].usage.total_tokens == 225


def test_refusal_deltas() -> None:
    events, ctx = run(
        [
            chunk({"role": "assistant", "content": None, "refusal": "I'm sorry,"}),
            chunk({"refusal": " I can't help with that."}),
            chunk({}, "stop"),
        ]
    )
    assert types(events) == [T.REFUSAL_DELTA, T.REFUSAL_DELTA]
    message = fold(events, ctx).message
    assert message is not None and message.refusal == "I'm sorry, I can't help with that."


def test_content_filter_finish() -> None:
    events, ctx = run([chunk({"content": "Part"}), chunk({}, "content_filter")])
    assert types(events) == [T.TEXT_DELTA, T.CONTENT_FILTER]
    assert events[1].text == "content_filter"
    assert ctx.finish_reason == "content_filter"


def test_length_finish_reason_is_passed_through() -> None:
    _, ctx = run([chunk({"content": "cut"}, "length")])
    assert ctx.finish_reason == "length"


def test_done_alone_finishes_without_a_reason() -> None:
    events, ctx = run([chunk({"content": "hi"}), DONE])
    assert ctx.finished and ctx.finish_reason is None
    assert types(events) == [T.TEXT_DELTA]


# reasoning variants


def test_reasoning_field_openrouter() -> None:
    events, _ = run(
        [
            chunk({"role": "assistant", "content": "", "reasoning": "Let me think"}),
            chunk({"content": "", "reasoning": " briefly."}),
            chunk({"content": "Done."}, "stop"),
        ]
    )
    assert types(events) == [T.THINKING_DELTA, T.THINKING_DELTA, T.TEXT_DELTA]
    assert texts(events, T.THINKING_DELTA) == "Let me think briefly."


def test_reasoning_sent_once_when_both_fields_carry_it() -> None:
    events, _ = run([chunk({"reasoning_content": "same", "reasoning": "same"}, "stop")])
    assert types(events) == [T.THINKING_DELTA]
    assert events[0].text == "same"


def test_kimi_frames_without_object_field() -> None:
    frames = [
        {
            "id": "chatcmpl-k",
            "created": 1,
            "model": "kimi-k2",
            "choices": [
                {
                    "index": 0,
                    "delta": {"role": "assistant", "reasoning_content": "Hm. "},
                    "finish_reason": None,
                }
            ],
        },
        {
            "id": "chatcmpl-k",
            "created": 1,
            "model": "kimi-k2",
            "choices": [{"index": 0, "delta": {"content": "Hi!"}, "finish_reason": "stop"}],
            "usage": {
                "prompt_tokens": 9,
                "completion_tokens": 4,
                "total_tokens": 13,
                "completion_tokens_details": {"reasoning_tokens": 2},
            },
        },
    ]
    events, ctx = run(frames)
    assert types(events) == [T.THINKING_DELTA, T.TEXT_DELTA, T.USAGE]
    assert ctx.model == "kimi-k2" and ctx.finish_reason == "stop"
    assert events[-1].usage is not None and events[-1].usage.thinking_tokens == 2


# Mistral content arrays


def test_mistral_thinking_and_text_parts() -> None:
    model = "magistral-medium-2507"
    events, ctx = run(
        [
            chunk(
                {
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "thinking": [{"type": "text", "text": "Two plus"}]}
                    ],
                },
                model=model,
            ),
            chunk(
                {
                    "content": [
                        {
                            "type": "thinking",
                            "thinking": [
                                {"type": "text", "text": " two."},
                                {"type": "text", "text": " Four."},
                            ],
                        }
                    ]
                },
                model=model,
            ),
            chunk({"content": [{"type": "text", "text": "2 + 2 = 4"}]}, model=model),
            chunk(
                {"content": ""},
                "stop",
                model=model,
                usage={"prompt_tokens": 10, "total_tokens": 56, "completion_tokens": 46},
            ),
        ]
    )
    assert types(events) == [
        T.THINKING_DELTA,
        T.THINKING_DELTA,
        T.THINKING_DELTA,
        T.TEXT_DELTA,
        T.USAGE,
    ]
    assert texts(events, T.THINKING_DELTA) == "Two plus two. Four."
    assert texts(events, T.TEXT_DELTA) == "2 + 2 = 4"
    assert ctx.model == model


def test_mistral_unknown_content_part_is_raw() -> None:
    part = {"type": "reference", "reference_ids": [1, 2]}
    events, _ = run([chunk({"content": [part, {"type": "text", "text": "ok"}]}, "stop")])
    assert types(events) == [T.RAW, T.TEXT_DELTA]
    assert events[0].raw_type == "content.reference"
    assert events[0].raw["reference_ids"] == [1, 2]


# tool calls


def tool_delta(
    index: int | None,
    *,
    id: str | None = None,
    name: str | None = None,
    arguments: str | None = None,
) -> dict[str, Any]:
    """One ``delta.tool_calls`` entry; later fragments carry only index and arguments."""
    call: dict[str, Any] = {}
    if index is not None:
        call["index"] = index
    if id is not None:
        call["id"] = id
        call["type"] = "function"
    function: dict[str, Any] = {}
    if name is not None:
        function["name"] = name
    if arguments is not None:
        function["arguments"] = arguments
    call["function"] = function
    return {"tool_calls": [call]}


PARALLEL_CALLS = [
    chunk(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "index": 0,
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": ""},
                }
            ],
        }
    ),
    chunk(tool_delta(0, arguments='{"loc')),
    chunk(tool_delta(0, arguments='ation": "Paris"}')),
    chunk(tool_delta(1, id="call_b", name="get_time", arguments="")),
    chunk(tool_delta(1, arguments='{"tz": "CET"}')),
    chunk({}, "tool_calls"),
    usage_chunk({"prompt_tokens": 80, "completion_tokens": 40, "total_tokens": 120}),
    DONE,
]


def test_tool_calls_streamed_by_index() -> None:
    events, ctx = run(PARALLEL_CALLS)
    assert types(events) == [
        T.TOOL_CALL_START,
        T.TOOL_CALL_ARGS_DELTA,
        T.TOOL_CALL_ARGS_DELTA,
        T.TOOL_CALL_START,
        T.TOOL_CALL_ARGS_DELTA,
        T.TOOL_CALL_END,
        T.TOOL_CALL_END,
        T.USAGE,
    ]
    starts = [e for e in events if e.type is T.TOOL_CALL_START]
    assert [(e.index, e.tool_call_id) for e in starts] == [(0, "call_a"), (1, "call_b")]
    assert [e.tool_call.name for e in starts if e.tool_call] == ["get_weather", "get_time"]
    deltas = [e for e in events if e.type is T.TOOL_CALL_ARGS_DELTA]
    assert [(e.index, e.tool_call_id) for e in deltas] == [
        (0, "call_a"),
        (0, "call_a"),
        (1, "call_b"),
    ]
    ends = [e.tool_call for e in events if e.type is T.TOOL_CALL_END]
    assert [(c.id, c.name, c.arguments, c.index) for c in ends if c] == [
        ("call_a", "get_weather", {"location": "Paris"}, 0),
        ("call_b", "get_time", {"tz": "CET"}, 1),
    ]
    assert ctx.finish_reason == "tool_calls"
    assert events[-1].usage is not None and events[-1].usage.total_tokens == 120


def test_tool_calls_fold_into_one_call_each() -> None:
    events, ctx = run(PARALLEL_CALLS)
    calls = fold(events, ctx).tool_calls
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        ("call_a", "get_weather", {"location": "Paris"}),
        ("call_b", "get_time", {"tz": "CET"}),
    ]


def test_later_fragments_with_empty_id_belong_to_the_open_call() -> None:
    # Qwen repeats `"id": ""` and `"type": "function"` on every later fragment.
    events, ctx = run(
        [
            chunk(tool_delta(0, id="call_q", name="weather", arguments="")),
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "",
                            "type": "function",
                            "function": {"arguments": '{"location": "SF'},
                        }
                    ]
                }
            ),
            chunk(
                {
                    "tool_calls": [
                        {"index": 0, "id": "", "type": "function", "function": {"arguments": '"}'}}
                    ]
                }
            ),
            chunk(
                {
                    "tool_calls": [
                        {"index": 0, "id": "", "type": "function", "function": {"arguments": ""}}
                    ]
                }
            ),
            chunk({}, "tool_calls"),
        ]
    )
    assert types(events).count(T.TOOL_CALL_START) == 1
    calls = fold(events, ctx).tool_calls
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        ("call_q", "weather", {"location": "SF"})
    ]


def test_a_new_id_at_a_used_index_is_a_new_call() -> None:
    events, ctx = run(
        [
            chunk(tool_delta(0, id="call_1", name="a", arguments="{}")),
            chunk(tool_delta(0, id="call_2", name="b", arguments='{"x": 1}')),
            chunk({}, "tool_calls"),
        ]
    )
    ends = [e.tool_call for e in events if e.type is T.TOOL_CALL_END and e.tool_call]
    assert [(c.id, c.name, c.arguments) for c in ends] == [
        ("call_1", "a", {}),
        ("call_2", "b", {"x": 1}),
    ]
    assert len({c.index for c in ends}) == 2
    assert [c.id for c in fold(events, ctx).tool_calls] == ["call_1", "call_2"]


def test_mistral_whole_tool_calls_without_index() -> None:
    model = "mistral-small-latest"
    events, ctx = run(
        [
            chunk({"role": "assistant", "content": ""}, model=model),
            chunk(
                {
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "gSIMJiOkT",
                            "function": {"name": "weather", "arguments": '{"location": "Paris"}'},
                        },
                        {
                            "id": "hTJNKjPlU",
                            "function": {"name": "weather", "arguments": '{"location": "Rome"}'},
                        },
                    ],
                },
                model=model,
            ),
            chunk(
                {
                    "content": None,
                    "tool_calls": [
                        {"id": "iUKOLkQmV", "function": {"name": "clock", "arguments": "{}"}},
                    ],
                },
                "tool_calls",
                model=model,
                usage={"prompt_tokens": 124, "total_tokens": 146, "completion_tokens": 22},
            ),
        ]
    )
    assert types(events).count(T.TOOL_CALL_START) == 3
    assert types(events).count(T.TOOL_CALL_END) == 3
    ends = [e.tool_call for e in events if e.type is T.TOOL_CALL_END and e.tool_call]
    assert [(c.id, c.name, c.arguments, c.index) for c in ends] == [
        ("gSIMJiOkT", "weather", {"location": "Paris"}, 0),
        ("hTJNKjPlU", "weather", {"location": "Rome"}, 1),
        ("iUKOLkQmV", "clock", {}, 2),
    ]
    calls = fold(events, ctx).tool_calls
    assert [(c.id, c.arguments) for c in calls] == [
        ("gSIMJiOkT", {"location": "Paris"}),
        ("hTJNKjPlU", {"location": "Rome"}),
        ("iUKOLkQmV", {}),
    ]
    assert ctx.finish_reason == "tool_calls"


def test_arguments_sent_as_an_object_are_encoded() -> None:
    events, _ = run(
        [
            chunk(
                {"tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": {"a": 1}}}]},
                "tool_calls",
            )
        ]
    )
    ends = [e.tool_call for e in events if e.type is T.TOOL_CALL_END and e.tool_call]
    assert [(c.arguments_str, c.arguments) for c in ends] == [('{"a":1}', {"a": 1})]


def test_done_closes_tool_calls_left_open() -> None:
    events, ctx = run([chunk(tool_delta(0, id="c1", name="f", arguments='{"k": 2}')), DONE])
    assert types(events)[-1] is T.TOOL_CALL_END
    assert events[-1].tool_call is not None and events[-1].tool_call.arguments == {"k": 2}
    assert ctx.finished


def test_orphan_argument_fragment_is_a_protocol_error() -> None:
    with pytest.raises(ChatProtocolError, match="frame 1"):
        run([chunk({"tool_calls": [{"function": {"arguments": '{"a"'}}]})])


def test_empty_orphan_fragment_is_ignored() -> None:
    events, _ = run([chunk({"tool_calls": [{"function": {"arguments": ""}}]}, "stop")])
    assert events == []


# Perplexity sources and annotations


CITATIONS = ["https://a.example/1", "https://b.example/2", "https://a.example/1"]
SEARCH_RESULTS = [
    {
        "title": "A",
        "url": "https://a.example/1",
        "date": "2025-01-02",
        "last_updated": "2025-02-01",
        "snippet": "alpha",
    },
    {"title": "B", "url": "https://b.example/2", "date": None, "snippet": "beta"},
]


def sonar(
    delta: dict[str, Any],
    finish: str | None = None,
    *,
    completion: int,
    object: str = "chat.completion.chunk",
    more: list[str] | None = None,
) -> dict[str, Any]:
    """A Perplexity frame: every one repeats citations, search_results and usage."""
    return {
        "id": "pplx-1",
        "model": "sonar",
        "created": 1770768240,
        "usage": {
            "prompt_tokens": 10,
            "completion_tokens": completion,
            "total_tokens": 10 + completion,
            "num_search_queries": 1,
        },
        "citations": CITATIONS + (more or []),
        "search_results": SEARCH_RESULTS,
        "object": object,
        "choices": [{"index": 0, "delta": {"role": "assistant", **delta}, "finish_reason": finish}],
    }


def test_perplexity_sources_are_sent_once() -> None:
    events, ctx = run(
        [
            sonar({"content": "Paris"}, completion=1),
            sonar({"content": " [1]"}, completion=3),
            sonar({"content": "[2]"}, completion=4, more=["https://c.example/3"]),
            sonar({"content": ""}, "stop", completion=4, object="chat.completion.done"),
        ]
    )
    citations = [e.citation for e in events if e.type is T.CITATION and e.citation]
    assert [c.url for c in citations] == [*CITATIONS, "https://c.example/3"]
    results = [e.search_result for e in events if e.type is T.SEARCH_RESULT and e.search_result]
    assert [(r.url, r.title, r.snippet, r.date) for r in results] == [
        ("https://a.example/1", "A", "alpha", "2025-01-02"),
        ("https://b.example/2", "B", "beta", None),
    ]
    assert results[0].raw["last_updated"] == "2025-02-01"
    assert texts(events, T.TEXT_DELTA) == "Paris [1][2]"
    assert ctx.finish_reason == "stop"
    response = fold(events, ctx)
    assert len(response.citations) == 4 and len(response.search_results) == 2


def test_perplexity_usage_repeats_are_not_resent() -> None:
    events, _ = run(
        [
            sonar({"content": "a"}, completion=1),
            sonar({"content": "b"}, completion=2),
            sonar({"content": ""}, "stop", completion=2),
        ]
    )
    usages = [e.usage for e in events if e.type is T.USAGE and e.usage]
    assert [u.completion_tokens for u in usages] == [1, 2]
    assert usages[-1].server_tool_use == {"web_search_requests": 1}


def test_url_citation_annotations() -> None:
    annotation = {
        "type": "url_citation",
        "url_citation": {
            "url": "https://news.example/x",
            "title": "X",
            "start_index": 4,
            "end_index": 20,
        },
    }
    events, _ = run(
        [
            chunk({"content": "See https://news.example/x", "annotations": [annotation]}),
            chunk({"annotations": [annotation]}, "stop"),
        ]
    )
    citations = [e.citation for e in events if e.type is T.CITATION]
    assert citations == [
        Citation(
            url="https://news.example/x",
            title="X",
            start_index=4,
            end_index=20,
            type="url_citation",
            raw=annotation,
        )
    ]


def test_unknown_annotation_is_raw() -> None:
    annotation = {"type": "file_citation", "file_citation": {"file_id": "f1"}}
    events, _ = run([chunk({"annotations": [annotation]}, "stop")])
    assert types(events) == [T.RAW]
    assert events[0].raw_type == "annotation.file_citation"


def test_a_whole_non_streamed_completion_is_read() -> None:
    frame = {
        "id": "chatcmpl-whole",
        "object": "chat.completion",
        "model": "gpt-4o-mini",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": "Calling.",
                    "tool_calls": [
                        {
                            "id": "call_w",
                            "type": "function",
                            "function": {"name": "f", "arguments": '{"a": 1}'},
                        }
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12},
    }
    events, ctx = run([frame])
    response = fold(events, ctx)
    assert response.text == "Calling."
    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [("call_w", "f", {"a": 1})]
    assert ctx.finish_reason == "tool_calls"
    assert response.usage is not None and response.usage.total_tokens == 12


# errors, nulls, odd frames


def test_error_frame_fails_with_the_provider_fields() -> None:
    error = {
        "message": "The server had an error while processing your request.",
        "type": "server_error",
        "param": None,
        "code": "internal_error",
    }
    events, ctx = run([chunk({"content": "Par"}), {"error": error}])
    assert types(events) == [T.TEXT_DELTA]
    assert isinstance(ctx.failure, ProviderError)
    assert "The server had an error" in str(ctx.failure)
    assert ctx.failure.provider_error == error
    assert not ctx.finished


def test_error_string_frame() -> None:
    _, ctx = run([{"error": "overloaded"}])
    assert isinstance(ctx.failure, ProviderError)
    assert "overloaded" in str(ctx.failure)
    assert ctx.failure.provider_error == {"error": "overloaded"}


def test_nulls_never_crash() -> None:
    frames = [
        chunk(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": None,
                "refusal": None,
                "reasoning_content": None,
            }
        ),
        chunk(None),
        {
            "id": "x",
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": None, "finish_reason": None}],
        },
        {"id": "x", "object": "chat.completion.chunk", "choices": None, "usage": None},
        {"id": "x", "object": "chat.completion.chunk", "choices": [None]},
        chunk({"content": "ok"}, "stop", usage=None),
    ]
    events, ctx = run(frames)
    assert types(events) == [T.TEXT_DELTA]
    assert ctx.finish_reason == "stop"


def test_empty_choices_frame_emits_nothing() -> None:
    events, ctx = run([usage_chunk(None)])  # type: ignore[arg-type]
    assert events == [] and not ctx.finished


def test_choices_other_than_the_first_are_ignored() -> None:
    frame = chunk({"content": "first"})
    frame["choices"].append({"index": 1, "delta": {"content": "second"}, "finish_reason": None})
    events, _ = run([frame])
    assert [e.text for e in events] == ["first"]


def test_unknown_frame_is_raw() -> None:
    events, ctx = run([{"type": "ping"}])
    assert types(events) == [T.RAW]
    assert events[0].raw_type == "ping" and events[0].raw == {"type": "ping"}
    assert not ctx.finished


@pytest.mark.parametrize("frame", [[1, 2], "text", 3, None])
def test_a_frame_that_is_not_an_object_is_a_protocol_error(frame: Any) -> None:
    with pytest.raises(ChatProtocolError, match="frame 1: expected a JSON object"):
        run([orjson.dumps(frame).decode()])


def test_a_protocol_error_is_a_chat_error() -> None:
    assert issubclass(ChatProtocolError, ChatError)


def test_provider_response_id_is_kept_from_the_first_frame() -> None:
    events, ctx = run([chunk({"content": "a"}, id="first"), chunk({"content": "b"}, id="other")])
    assert ctx.provider_response_id == "first"
    assert {e.provider_response_id for e in events} == {"first"}


def test_get_dialect_knows_openai() -> None:
    dialect = get_dialect("openai")
    assert isinstance(dialect, OpenAIDialect) and dialect.name == "openai"


# request building


URL = "https://api.openai.com/v1/chat/completions"


def build(messages: list[Any], **kwargs: Any) -> dict[str, Any]:
    request = ChatRequest(model="gpt-4o-mini", messages=messages, **kwargs)
    return dict(DIALECT.build_request(request, api_url=URL).body)


def test_request_url_headers_and_stream_flags() -> None:
    request = ChatRequest(model="gpt-4o-mini", messages=[UserMessage(text="hi")])
    http = DIALECT.build_request(
        request, api_url=URL, api_key="sk-secret", headers={"OpenAI-Organization": "org-1"}
    )
    assert http.url == URL
    assert dict(http.headers) == {
        "Content-Type": "application/json",
        "Authorization": "Bearer sk-secret",
        "OpenAI-Organization": "org-1",
    }
    assert http.body == {
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    assert "sk-secret" not in repr(http)
    assert orjson.loads(http.body_bytes()) == http.body


def test_request_without_key_has_no_authorization() -> None:
    request = hi()
    http = DIALECT.build_request(request, api_url=URL, headers={"Content-Type": "x/y"})
    assert dict(http.headers) == {"Content-Type": "x/y"}


def test_request_messages_of_every_kind() -> None:
    calls = (
        ToolCall(id="call_1", name="weather", arguments_str='{"location": "Paris"}'),
        ToolCall(id="call_2", name="clock", arguments={"tz": "CET"}),
    )
    body = build(
        [
            SystemMessage(text="Be brief."),
            UserMessage(text="Weather and time in Paris?"),
            AssistantMessage(text="", thinking="not sent back", tool_calls=calls),
            ToolMessage(tool_call_id="call_1", name="weather", content="18C"),
            ToolMessage(tool_call_id="call_2", name="clock", content="12:00", is_error=False),
            AssistantMessage(text="18C and noon."),
            {"role": "developer", "content": "passed through"},
        ]
    )
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather and time in Paris?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "weather", "arguments": '{"location": "Paris"}'},
                },
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "clock", "arguments": '{"tz":"CET"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "18C"},
        {"role": "tool", "tool_call_id": "call_2", "content": "12:00"},
        {"role": "assistant", "content": "18C and noon."},
        {"role": "developer", "content": "passed through"},
    ]


def test_request_assistant_text_is_kept_beside_tool_calls() -> None:
    message = AssistantMessage(text="Checking.", tool_calls=[ToolCall(id="c", name="f")])
    (out,) = build([message])["messages"]
    assert out["content"] == "Checking."
    assert out["tool_calls"][0]["function"] == {"name": "f", "arguments": "{}"}


def test_request_user_blocks_become_content_parts() -> None:
    message = UserMessage(
        text="What is in these?",
        blocks=[
            ImageBlock(url="https://img.example/cat.png"),
            ImageBlock(data="iVBORw0KGgo=", mime_type="image/png"),
            TextBlock(text="and this file"),
            FileBlock(file_id="file-abc"),
            FileBlock(data="JVBERi0=", mime_type="application/pdf", name="a.pdf"),
        ],
    )
    (out,) = build([message])["messages"]
    assert out == {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is in these?"},
            {"type": "image_url", "image_url": {"url": "https://img.example/cat.png"}},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
            {"type": "text", "text": "and this file"},
            {"type": "file", "file": {"file_id": "file-abc"}},
            {
                "type": "file",
                "file": {"filename": "a.pdf", "file_data": "data:application/pdf;base64,JVBERi0="},
            },
        ],
    }


def test_request_image_without_source_is_rejected() -> None:
    with pytest.raises(ValueError, match="url or data"):
        build([UserMessage(text="x", blocks=[ImageBlock()])])


def test_request_unknown_block_is_rejected() -> None:
    with pytest.raises(TypeError, match="cannot send a object block"):
        build([UserMessage(text="x", blocks=[object()])])


def test_request_tools_and_options() -> None:
    schema = {
        "type": "object",
        "properties": {"location": {"type": "string"}},
        "required": ["location"],
    }
    body = build(
        [UserMessage(text="hi")],
        tools=[ToolSpec(name="weather", description="Current weather.", parameters=schema)],
        options={"temperature": 0.2, "stream_options": {"include_usage": False}},
    )
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "weather",
                "description": "Current weather.",
                "parameters": schema,
            },
        }
    ]
    assert body["temperature"] == 0.2
    assert body["stream_options"] == {"include_usage": False}
    assert body["stream"] is True
    assert list(body)[:5] == ["model", "messages", "tools", "stream", "stream_options"]
    assert orjson.loads(orjson.dumps(body)) == body


# recorded corpus (read in place: see recorded.CORPUS)


RECORDINGS = corpus_paths("openai-chat")


def read_recording(path: Path) -> list[Any]:
    frames: list[Any] = []
    for line in path.read_bytes().splitlines():
        line = line.strip()
        if line:
            frames.append(DONE if line == b"[DONE]" else orjson.loads(line))
    return frames


@needs_corpus
def test_corpus_is_present() -> None:
    assert RECORDINGS, f"no recordings under {CORPUS}"


@pytest.mark.parametrize("path", RECORDINGS)
def test_corpus_recording(path: Path) -> None:
    expected = json.loads(path.with_name(path.stem + ".expected.json").read_text())
    events, ctx = run(read_recording(path))
    assert ctx.failure is None and ctx.finished
    assert texts(events, T.TEXT_DELTA) == expected["text"]
    assert texts(events, T.THINKING_DELTA) == expected["thinking"]
    ends = [e.tool_call for e in events if e.type in (T.TOOL_CALL_END, T.TOOL_CALL_CHUNK)]
    assert [(c.id, c.name, c.arguments) for c in ends if c] == [
        (c["id"], c["name"], c["arguments"]) for c in expected["tool_calls"]
    ]
    assert types(events).count(T.TOOL_CALL_START) == len(expected["tool_calls"])
    assert ctx.finish_reason == expected["finish_reason"]
    usages = [e.usage for e in events if e.type is T.USAGE and e.usage]
    assert usages, "no USAGE event"
    last = usages[-1]
    want = expected["usage"]
    # the output counts the thinking (xAI's completion_tokens leave it out: reconciled
    # with its total, see test_usage_totals)
    assert (last.prompt_tokens, last.completion_tokens, last.total_tokens) == (
        want["prompt_tokens"],
        want["total_tokens"] - want["prompt_tokens"],
        want["total_tokens"],
    )


def _fields(events: list[ChatEvent]) -> list[tuple[Any, ...]]:
    return [
        (e.type, e.text, e.index, e.tool_call_id, e.tool_call, e.usage, e.citation, e.raw_type)
        for e in events
    ]


@pytest.mark.parametrize(
    "frame",
    [
        chunk({"content": "Hello"}),
        chunk({"content": ""}),
        chunk({"content": "Hi"}, "stop"),
        chunk({"content": "Hi", "role": "assistant"}),
        chunk({"content": "Hi"}, usage={"prompt_tokens": 3, "completion_tokens": 1}),
        chunk({"content": "Hi"}, citations=["https://a.example"]),
        chunk({"content": "Hi"}, search_results=[{"url": "https://b.example", "title": "B"}]),
        chunk({"content": "Hi"}, x_groq={"id": "r", "usage": {"prompt_tokens": 3}}),
        chunk({"content": "Hi"}, error={"message": "overloaded"}),
        chunk({"content": 7}),
        {
            **chunk({"content": "Hi"}),
            "choices": [{"index": 1, "delta": {"content": "Hi"}, "finish_reason": None}],
        },
        {**chunk({"content": "Hi"}), "choices": []},
        {**chunk({"content": "Hi"}), "choices": {"only": 1}},
        {**chunk({"content": "Hi"}), "choices": [{"index": 0, "delta": {"content": "Hi"}}]},
        chunk({"content": None, "reasoning_content": "We"}),
        chunk({"reasoning_content": "We"}),
        chunk({"content": None, "reasoning": "We"}),
        chunk({"reasoning": "We"}),
        {**chunk({}), "choices": [{"index": 0, "delta": {"reasoning_content": "We"}}]},
        chunk({"content": None, "reasoning_content": ""}),
        chunk({"content": None, "reasoning_content": 5}),
        chunk({"content": None, "reasoning_content": None, "reasoning": "We"}),
        chunk({"content": "Hi", "reasoning_content": "We"}),
        chunk({"content": None, "reasoning_content": "We"}, "stop"),
        chunk({"reasoning_content": "We"}, usage={"prompt_tokens": 3, "completion_tokens": 1}),
        chunk({"content": None}),
        chunk({"content": None, "reasoning_content": "We", "reasoning": "Us"}),
        chunk({"role": "assistant", "reasoning_content": "We"}),
        chunk(
            {
                "reasoning_content": "We",
                "tool_calls": [{"index": 0, "id": "c1", "function": {"name": "f"}}],
            }
        ),
    ],
)
def test_common_chunks_and_near_misses_give_what_the_general_path_gives(
    frame: dict[str, Any],
) -> None:
    # A second key in the delta (a null refusal) sends the same content the general way.
    choices = frame["choices"]
    general = dict(frame)
    if isinstance(choices, list) and choices:
        first = choices[0]
        general["choices"] = [{**first, "delta": {**first["delta"], "refusal": None}}]
    fast_events, fast_ctx = run([frame])
    general_events, general_ctx = run([general])
    assert _fields(fast_events) == _fields(general_events)
    assert (fast_ctx.model, fast_ctx.provider_response_id, fast_ctx.finish_reason) == (
        general_ctx.model,
        general_ctx.provider_response_id,
        general_ctx.finish_reason,
    )
    assert (fast_ctx.failure is None) == (general_ctx.failure is None)
