"""The wire-format encoders (``solon_events.adapters.provider_formats``), format by format:
the exact payloads each writes, its non-streaming and error bodies, the registry and the
Rx operator. The round trip through our own dialects is ``test_wire_round_trip.py``."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
import reactivex as rx
from hypothesis import given
from hypothesis import strategies as st
from serving import sse_json, sse_payloads
from wire_messages import Call, Message, Said, Thought, encode_all, events_of, read_back

from solon_events import ChatEvent, ChatEventType, ChatHttpError, ProviderError
from solon_events.adapters import WIRE_FORMATS, error_body, response_body, to_wire, wire_encoder
from solon_events.adapters.provider_formats.base import (
    WireEncoder,
    error_status,
    finish_kind,
    random_id,
)
from solon_events.event_model.results import AssistantMessage, ChatResponse, ToolCall, Usage

T = ChatEventType
USAGE = Usage(prompt_tokens=12, completion_tokens=7, thinking_tokens=3, cache_read_input_tokens=4)
MESSAGE = Message(
    (
        Thought(("Let me ", "think."), "sig=="),
        Said(("Hel", "lo")),
        Call("call_1", "get_weather", ('{"city": ', '"Paris"}')),
    ),
    "tool_calls",
    USAGE,
)


def hi_and_a_call(
    call_id: str, finish_reason: str = "tool_calls", arguments: str = '{"a": 1}', **metadata: str
) -> ChatResponse:
    """A response (of ``USAGE``) that thought "hm", said "Hi" and called ``f`` with
    ``arguments`` as ``call_id``; ``metadata`` its message's."""
    call = ToolCall(id=call_id, name="f", arguments_str=arguments)
    message = AssistantMessage(text="Hi", thinking="hm", tool_calls=[call], metadata=metadata)
    return ChatResponse(message=message, usage=USAGE, finish_reason=finish_reason)


def test_every_format_is_registered_by_its_dialect_name() -> None:
    assert set(WIRE_FORMATS) >= {"openai", "openai-responses", "anthropic", "gemini", "ollama"}
    for name, encoder in WIRE_FORMATS.items():
        assert issubclass(encoder, WireEncoder) and encoder.format == name
        assert wire_encoder(name, model="m").media_type == encoder.media_type


def test_an_unknown_format_is_a_value_error_naming_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"'smoke'.*openai"):
        wire_encoder("smoke", model="m")
    with pytest.raises(ValueError, match="smoke"):
        response_body("smoke", ChatResponse(), model="m")
    with pytest.raises(ValueError, match="smoke"):
        to_wire("smoke", model="m")


@pytest.mark.parametrize(
    ("reason", "calls", "kind"),
    [
        ("end_turn", False, "stop"),
        ("STOP", True, "tool_calls"),
        ("stop", True, "tool_calls"),
        ("MAX_TOKENS", False, "length"),
        ("max_output_tokens", True, "length"),
        ("SAFETY", False, "content_filter"),
        ("guardrail_intervened", False, "content_filter"),
        ("tool_use", False, "tool_calls"),
        (None, False, "stop"),
        ("something new", False, "other"),
        ("MALFORMED_FUNCTION_CALL", False, "error"),
        ("ERROR", False, "error"),
    ],
)
def test_finish_reasons_of_every_format_have_a_kind(
    reason: str | None, calls: bool, kind: str
) -> None:
    assert finish_kind(reason, calls) == kind


def test_an_errors_status_comes_from_its_http_status_or_any_formats_words() -> None:
    assert error_status(ChatHttpError(429, "slow down")) == 429
    assert error_status(ProviderError("x", provider_error={"type": "overloaded_error"})) == 529
    assert error_status(ProviderError("x", provider_error={"error": {"code": 503}})) == 503
    assert error_status(None, {"error": {"status": "RESOURCE_EXHAUSTED"}}) == 429
    assert error_status(ValueError("x")) == 500


# ------------------------------------------------------------------ OpenAI Chat Completions


def openai_chunks(body: bytes) -> list[dict[str, Any]]:
    return sse_json(body)  # type: ignore[no-any-return]


def test_openai_chunks_say_role_reasoning_text_tool_call_finish_and_usage() -> None:
    body = encode_all(wire_encoder("openai", model="gpt-x"), events_of(MESSAGE))
    assert sse_payloads(body)[-1] == b"[DONE]"
    chunks = openai_chunks(body)
    assert {c["id"] for c in chunks} == {chunks[0]["id"]} and chunks[0]["id"].startswith(
        "chatcmpl-"
    )
    assert {c["model"] for c in chunks} == {"gpt-x"}
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    assert deltas == [
        {"role": "assistant", "content": "", "refusal": None},
        {"reasoning_content": "Let me "},
        {"reasoning_content": "think."},
        {"content": "Hel"},
        {"content": "lo"},
        {
            "tool_calls": [
                {
                    "index": 0,
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": ""},
                }
            ]
        },
        {"tool_calls": [{"index": 0, "function": {"arguments": '{"city": '}}]},
        {"tool_calls": [{"index": 0, "function": {"arguments": '"Paris"}'}}]},
        {},
    ]
    assert [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]][-1] == "tool_calls"
    usage_chunk = chunks[-1]
    assert usage_chunk["choices"] == []
    assert usage_chunk["usage"]["prompt_tokens"] == 12
    assert usage_chunk["usage"]["completion_tokens"] == 7
    assert usage_chunk["usage"]["total_tokens"] == 19
    assert usage_chunk["usage"]["prompt_tokens_details"]["cached_tokens"] == 4
    assert usage_chunk["usage"]["completion_tokens_details"]["reasoning_tokens"] == 3


def test_openai_writes_reasoning_in_the_field_asked_for() -> None:
    encoder = wire_encoder("openai", model="m", reasoning_field="reasoning")
    body = encode_all(encoder, [ChatEvent(T.THINKING_DELTA, text="hm")])
    assert openai_chunks(body)[1]["choices"][0]["delta"] == {"reasoning": "hm"}


def test_openai_keeps_ids_of_parallel_calls_apart_by_index() -> None:
    calls = [ToolCall(id=f"c{i}", name=f"f{i}") for i in range(2)]
    events = [
        ChatEvent(T.TOOL_CALL_START, tool_call_id="c0", tool_call=calls[0]),
        ChatEvent(T.TOOL_CALL_START, tool_call_id="c1", tool_call=calls[1]),
        ChatEvent(T.TOOL_CALL_ARGS_DELTA, tool_call_id="c1", text='{"b": 2}'),
        ChatEvent(T.TOOL_CALL_ARGS_DELTA, tool_call_id="c0", text='{"a": 1}'),
        ChatEvent(T.TOOL_CALL_END, tool_call_id="c0"),
        ChatEvent(T.TOOL_CALL_END, tool_call_id="c1"),
    ]
    chunks = openai_chunks(encode_all(wire_encoder("openai", model="m"), events))
    written = [
        (call["index"], call.get("id"), call["function"].get("arguments"))
        for c in chunks
        if c["choices"]
        for call in c["choices"][0]["delta"].get("tool_calls", ())
    ]
    assert written == [(0, "c0", ""), (0, None, '{"a": 1}'), (1, "c1", ""), (1, None, '{"b": 2}')]


def test_openai_an_error_is_an_error_object_and_no_done() -> None:
    events = [ChatEvent(T.TEXT_DELTA, text="Part"), ChatEvent(T.ERROR, error=ChatHttpError(429))]
    body = encode_all(wire_encoder("openai", model="m"), events)
    assert b"[DONE]" not in body
    error = openai_chunks(body)[-1]
    assert error == {
        "error": {
            "message": "HTTP 429",
            "type": "requests",
            "param": None,
            "code": "rate_limit_exceeded",
        }
    }


def test_openai_close_without_response_end_still_finishes() -> None:
    encoder = wire_encoder("openai", model="m")
    body = encoder.encode(ChatEvent(T.TEXT_DELTA, text="hi")) + encoder.close()
    chunks = openai_chunks(body)
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"
    assert encoder.close() == b"data: [DONE]\n\n"  # a second close writes the end again only
    assert encoder.encode(ChatEvent(T.TEXT_DELTA, text="late")) == b""


def test_openai_response_body() -> None:
    response = hi_and_a_call("c1", finish_reason="tool_use")
    body = response_body("openai", response, model="gpt-x")
    assert body["object"] == "chat.completion" and body["model"] == "gpt-x"
    [choice] = body["choices"]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] == "Hi"
    assert choice["message"]["reasoning_content"] == "hm"
    assert choice["message"]["tool_calls"] == [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}
    ]
    assert body["usage"]["total_tokens"] == 19
    assert error_body("openai", 404)["error"]["code"] == "model_not_found"


# ------------------------------------------------------------------ the Rx operator


def test_to_wire_writes_the_body_and_ends_it_on_completion() -> None:
    chunks: list[bytes] = []
    rx.from_iterable(events_of(MESSAGE)).pipe(to_wire("openai", model="m")).subscribe(chunks.append)
    assert all(chunks) and chunks[-1] == b"data: [DONE]\n\n"
    assert b"".join(chunks).count(b"get_weather") == 1


def test_to_wire_writes_a_failure_upstream_in_the_formats_error_shape() -> None:
    chunks: list[bytes] = []
    errors: list[Exception] = []
    source = rx.concat(
        rx.from_iterable([ChatEvent(T.TEXT_DELTA, text="Part")]),
        rx.throw(ProviderError("down", provider_error={"error": {"code": 503}})),
    )
    source.pipe(to_wire("openai", model="m")).subscribe(chunks.append, errors.append)
    assert len(errors) == 1
    last = orjson.loads(sse_payloads(b"".join(chunks))[-1])
    assert last["error"]["type"] == "server_error"


# ------------------------------------------------------------------ Anthropic Messages


def sse_named(body: bytes) -> list[tuple[str, dict[str, Any]]]:
    """Each SSE event of ``body`` as (its ``event:`` name, its JSON data)."""
    events = []
    for block in body.split(b"\n\n"):
        lines = dict(line.split(b": ", 1) for line in block.split(b"\n") if b": " in line)
        if b"data" in lines:
            events.append((lines[b"event"].decode(), orjson.loads(lines[b"data"])))
    return events


def test_anthropic_events_are_named_blocks_indexed_and_usage_whole_at_the_end() -> None:
    events = [ChatEvent(T.USAGE, usage=USAGE), *events_of(MESSAGE)]
    named = sse_named(encode_all(wire_encoder("anthropic", model="claude-x"), events))
    assert all(name == data["type"] for name, data in named)
    kinds = [
        (
            data["type"],
            data.get("index"),
            (data.get("delta") or data.get("content_block") or {}).get("type"),
        )
        for _, data in named
    ]
    assert kinds == [
        ("message_start", None, None),
        ("ping", None, None),
        ("content_block_start", 0, "thinking"),
        ("content_block_delta", 0, "thinking_delta"),
        ("content_block_delta", 0, "thinking_delta"),
        ("content_block_delta", 0, "signature_delta"),
        ("content_block_stop", 0, None),
        ("content_block_start", 1, "text"),
        ("content_block_delta", 1, "text_delta"),
        ("content_block_delta", 1, "text_delta"),
        ("content_block_stop", 1, None),
        ("content_block_start", 2, "tool_use"),
        ("content_block_delta", 2, "input_json_delta"),
        ("content_block_delta", 2, "input_json_delta"),
        ("content_block_stop", 2, None),
        ("message_delta", None, None),
        ("message_stop", None, None),
    ]
    start = named[0][1]["message"]
    assert start["model"] == "claude-x" and start["id"].startswith("msg_01")
    assert start["usage"]["input_tokens"] == 8  # 12 prompt tokens, 4 of them read from cache
    assert named[11][1]["content_block"] == {
        "type": "tool_use",
        "id": "call_1",
        "name": "get_weather",
        "input": {},
    }
    delta = named[-2][1]
    assert delta["delta"] == {"stop_reason": "tool_use", "stop_sequence": None}
    assert delta["usage"] == {
        "input_tokens": 8,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 4,
        "output_tokens": 7,
    }


def test_anthropic_keeps_its_own_stop_words_and_translates_the_others() -> None:
    def stop_reason(reason: str, calls: bool = False) -> str:
        response = ChatResponse(
            message=AssistantMessage(tool_calls=[ToolCall(name="f")] if calls else []),
            finish_reason=reason,
        )
        body = encode_all(
            wire_encoder("anthropic", model="m"), [ChatEvent(T.RESPONSE_END, response=response)]
        )
        return str(sse_named(body)[-2][1]["delta"]["stop_reason"])

    assert stop_reason("stop_sequence") == "stop_sequence"
    assert stop_reason("STOP", calls=True) == "tool_use"
    assert stop_reason("length") == "max_tokens"
    assert stop_reason("content_filter") == "refusal"


def test_anthropic_redacted_thinking_is_a_block_of_its_own_and_errors_are_typed() -> None:
    events = [
        ChatEvent(T.THINKING_REDACTED, text="ZW5j"),
        ChatEvent(T.TEXT_DELTA, text="Hi"),
        ChatEvent(T.ERROR, error=ProviderError("x", provider_error={"code": 503})),
    ]
    named = sse_named(encode_all(wire_encoder("anthropic", model="m"), events))
    assert named[2][1]["content_block"] == {"type": "redacted_thinking", "data": "ZW5j"}
    assert named[3][1] == {"type": "content_block_stop", "index": 0}
    assert named[-1] == (
        "error",
        {"type": "error", "error": {"type": "overloaded_error", "message": "x"}},
    )
    assert [name for name, _ in named].count("message_stop") == 0


def test_anthropic_server_tools_go_through_with_their_result() -> None:
    result = {
        "type": "web_search_tool_result",
        "tool_use_id": "srvtoolu_1",
        "content": [{"type": "web_search_result", "url": "https://a.example", "title": "A"}],
    }
    call = ToolCall(id="srvtoolu_1", name="web_search")
    events = [
        ChatEvent(
            T.SERVER_TOOL_START, tool_call_id="srvtoolu_1", sub_type="web_search", tool_call=call
        ),
        ChatEvent(T.SERVER_TOOL_ARGS_DELTA, tool_call_id="srvtoolu_1", text='{"query": "a"}'),
        ChatEvent(
            T.SERVER_TOOL_RESULT,
            tool_call_id="srvtoolu_1",
            raw_type="web_search_tool_result",
            raw=result,
        ),
    ]
    named = sse_named(encode_all(wire_encoder("anthropic", model="m"), events))
    blocks = [data["content_block"] for _, data in named if data["type"] == "content_block_start"]
    assert blocks == [
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
        result,
    ]


def test_anthropic_response_body() -> None:
    response = hi_and_a_call("toolu_1", thinking_signature="sig")
    body = response_body("anthropic", response, model="claude-x")
    assert body["content"] == [
        {"type": "thinking", "thinking": "hm", "signature": "sig"},
        {"type": "text", "text": "Hi"},
        {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": 1}},
    ]
    assert body["stop_reason"] == "tool_use" and body["model"] == "claude-x"
    assert body["usage"]["input_tokens"] == 8
    assert error_body("anthropic", 429)["error"]["type"] == "rate_limit_error"


# ------------------------------------------------------------------ OpenAI Responses


def responses_events(events: list[ChatEvent]) -> list[dict[str, Any]]:
    """The data of each event of a Responses stream (checked to be named by its type and
    numbered in order)."""
    named = sse_named(encode_all(wire_encoder("openai-responses", model="gpt-x"), events))
    assert all(name == data["type"] for name, data in named)
    assert [data["sequence_number"] for _, data in named] == list(range(len(named)))
    return [data for _, data in named]


def test_responses_items_follow_each_other_and_complete_with_every_item_and_the_usage() -> None:
    events = [ChatEvent(T.USAGE, usage=USAGE), *events_of(MESSAGE)]
    written = responses_events(events)
    assert [(e["type"].removeprefix("response."), e.get("output_index")) for e in written] == [
        ("created", None),
        ("in_progress", None),
        ("output_item.added", 0),
        ("reasoning_summary_part.added", 0),
        ("reasoning_summary_text.delta", 0),
        ("reasoning_summary_text.delta", 0),
        ("reasoning_summary_text.done", 0),
        ("reasoning_summary_part.done", 0),
        ("output_item.done", 0),
        ("output_item.added", 1),
        ("content_part.added", 1),
        ("output_text.delta", 1),
        ("output_text.delta", 1),
        ("output_text.done", 1),
        ("content_part.done", 1),
        ("output_item.done", 1),
        ("output_item.added", 2),
        ("function_call_arguments.delta", 2),
        ("function_call_arguments.delta", 2),
        ("function_call_arguments.done", 2),
        ("output_item.done", 2),
        ("completed", None),
    ]
    final = written[-1]["response"]
    assert final["status"] == "completed" and final["model"] == "gpt-x"
    assert [item["type"] for item in final["output"]] == ["reasoning", "message", "function_call"]
    call = final["output"][2]
    assert (call["call_id"], call["name"], call["arguments"]) == (
        "call_1",
        "get_weather",
        '{"city": "Paris"}',
    )
    assert final["usage"] == {
        "input_tokens": 12,
        "input_tokens_details": {"cached_tokens": 4},
        "output_tokens": 7,
        "output_tokens_details": {"reasoning_tokens": 3},
        "total_tokens": 19,
    }
    assert {e["response"]["id"] for e in written if "response" in e} == {final["id"]}


@pytest.mark.parametrize(
    ("reason", "status", "why"),
    [
        ("length", "incomplete", "max_output_tokens"),
        ("SAFETY", "incomplete", "content_filter"),
        ("tool_use", "completed", None),
        ("end_turn", "completed", None),
    ],
)
def test_responses_ends_incomplete_for_a_length_or_filter_stop(
    reason: str, status: str, why: str | None
) -> None:
    end = ChatEvent(T.RESPONSE_END, response=ChatResponse(finish_reason=reason))
    final = responses_events([end])[-1]
    assert final["type"] == f"response.{status}"
    details = final["response"]["incomplete_details"]
    assert (details["reason"] if details else None) == why
    body = response_body("openai-responses", ChatResponse(finish_reason=reason), model="m")
    assert body["status"] == status and body["incomplete_details"] == details


def test_responses_refusals_redacted_thinking_and_errors() -> None:
    events = [
        ChatEvent(T.THINKING_REDACTED, text="ZW5j"),
        ChatEvent(T.REFUSAL_DELTA, text="I can"),
        ChatEvent(T.REFUSAL_DELTA, text="not."),
        ChatEvent(T.ERROR, error=ChatHttpError(429, "slow down")),
    ]
    written = responses_events(events)
    reasoning = next(e["item"] for e in written if e["type"] == "response.output_item.done")
    assert reasoning["type"] == "reasoning" and reasoning["encrypted_content"] == "ZW5j"
    assert [e["delta"] for e in written if e["type"] == "response.refusal.delta"] == [
        "I can",
        "not.",
    ]
    error, failed = written[-2:]
    assert (error["type"], error["code"]) == ("error", "rate_limit_exceeded")
    assert failed["type"] == "response.failed"
    assert failed["response"]["error"]["code"] == "rate_limit_exceeded"
    # the refusal part was never closed: the response failed in the middle of it
    assert not any(e["type"] == "response.refusal.done" for e in written)


def test_responses_a_server_tools_item_keeps_its_place_until_its_result() -> None:
    call = ToolCall(id="ws_1", name="web_search")
    result = {"type": "web_search_call", "id": "ws_up", "status": "completed",
              "action": {"type": "search", "query": "a"}}  # fmt: skip
    events = [
        ChatEvent(T.SERVER_TOOL_START, tool_call_id="ws_1", sub_type="web_search", tool_call=call),
        ChatEvent(T.TEXT_DELTA, text="Searching"),
        ChatEvent(T.SERVER_TOOL_RESULT, tool_call_id="ws_1", sub_type="web_search", raw=result),
        ChatEvent(T.RESPONSE_END, response=ChatResponse()),
    ]
    written = responses_events(events)
    placed = [
        (e["type"].removeprefix("response.output_item."), e["output_index"], e["item"]["type"])
        for e in written
        if e["type"].startswith("response.output_item.")
    ]
    assert placed == [
        ("added", 0, "web_search_call"),
        ("added", 1, "message"),
        ("done", 1, "message"),
        ("done", 0, "web_search_call"),
    ]
    final = written[-1]["response"]["output"]
    assert final[0]["action"] == result["action"] and final[0]["id"] == written[2]["item"]["id"]


def test_responses_response_body() -> None:
    response = hi_and_a_call("call_1")
    body = response_body("openai-responses", response, model="gpt-x")
    assert body["object"] == "response" and body["status"] == "completed"
    assert [item["type"] for item in body["output"]] == ["reasoning", "message", "function_call"]
    assert body["output"][0]["summary"] == [{"type": "summary_text", "text": "hm"}]
    assert body["output"][1]["content"][0]["text"] == "Hi"
    assert body["output"][2]["arguments"] == '{"a": 1}'
    assert body["usage"]["input_tokens_details"] == {"cached_tokens": 4}
    assert error_body("openai-responses", 404)["error"]["code"] == "model_not_found"


# ------------------------------------------------------------------ Gemini


def gemini_chunks(body: bytes) -> list[dict[str, Any]]:
    """Each ``data:`` payload of a Gemini stream (checked to use CRLF line ends)."""
    events = body.split(b"\r\n\r\n")
    assert events[-1] == b"" and all(e.startswith(b"data: ") for e in events[:-1])
    return [orjson.loads(e.removeprefix(b"data: ")) for e in events[:-1]]


def test_gemini_each_delta_is_a_response_and_the_last_has_the_reason_and_usage() -> None:
    chunks = gemini_chunks(encode_all(wire_encoder("gemini", model="gemini-x"), events_of(MESSAGE)))
    parts = [chunk["candidates"][0]["content"]["parts"] for chunk in chunks]
    assert parts == [
        [{"text": "Let me ", "thought": True}],
        [{"text": "think.", "thought": True}],
        [{"text": "", "thought": True, "thoughtSignature": "sig=="}],
        [{"text": "Hel"}],
        [{"text": "lo"}],
        [{"functionCall": {"name": "get_weather", "args": {"city": "Paris"}, "id": "call_1"}}],
        [{"text": ""}],
    ]
    assert {(c["modelVersion"], c["responseId"]) for c in chunks} == {
        ("gemini-x", chunks[0]["responseId"])
    }
    last = chunks[-1]
    assert last["candidates"][0]["finishReason"] == "STOP"  # tool calls too
    assert last["usageMetadata"] == {
        "promptTokenCount": 12,
        "candidatesTokenCount": 4,  # 7 completion tokens, 3 of them thinking
        "thoughtsTokenCount": 3,
        "cachedContentTokenCount": 4,
        "totalTokenCount": 19,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 12}],
    }
    assert all("usageMetadata" not in c for c in chunks[:-1])  # no usage was known yet


def test_gemini_streams_arguments_as_partial_args_when_asked() -> None:
    call = Call("c1", "f", ('{"q": "a long query string", ', '"n": [1, true, null]}'))

    def encoded(call: Call) -> bytes:
        encoder = wire_encoder("gemini", model="m", stream_arguments=True)
        return encode_all(encoder, events_of(Message((call,))))

    chunks = gemini_chunks(encoded(call))
    calls = [c["candidates"][0]["content"]["parts"][0].get("functionCall") for c in chunks]
    assert calls[0] == {"name": "f", "willContinue": True, "id": "c1"}
    entries = [e for c in calls[1:-2] for e in c["partialArgs"]]
    assert entries == [
        {"jsonPath": "$.q", "stringValue": "a long query str", "willContinue": True},
        {"jsonPath": "$.q", "stringValue": "ing", "willContinue": True},
        {"jsonPath": "$.q", "stringValue": ""},
        {"jsonPath": "$.n[0]", "numberValue": 1},
        {"jsonPath": "$.n[1]", "boolValue": True},
        {"jsonPath": "$.n[2]", "nullValue": None},
    ]
    assert calls[-2] == {}  # the closing part
    calls_read, errors = read_calls(encoded(call))
    assert calls_read == [("c1", "f", {"q": "a long query string", "n": [1, True, None]})]
    assert errors == []


def read_calls(body: bytes) -> tuple[list[Any], list[Exception]]:
    """The tool calls the gemini dialect reads from ``body``: (id, name, arguments)."""
    events, errors = read_back("gemini", body)
    ends = [e.tool_call for e in events if e.type is T.TOOL_CALL_END and e.tool_call]
    return [(c.id, c.name, c.arguments) for c in ends], errors


def test_gemini_finish_words_errors_and_body() -> None:
    def reason(said: str) -> str:
        end = ChatEvent(T.RESPONSE_END, response=ChatResponse(finish_reason=said))
        body = encode_all(wire_encoder("gemini", model="m"), [end])
        return str(gemini_chunks(body)[-1]["candidates"][0]["finishReason"])

    assert [reason(r) for r in ("end_turn", "length", "refusal", "RECITATION")] == [
        "STOP",
        "MAX_TOKENS",
        "SAFETY",
        "RECITATION",
    ]
    failed = [ChatEvent(T.TEXT_DELTA, text="Hi"), ChatEvent(T.ERROR, error=ChatHttpError(429, "x"))]
    last = gemini_chunks(encode_all(wire_encoder("gemini", model="m"), failed))[-1]
    assert last == {"error": {"code": 429, "message": "x", "status": "RESOURCE_EXHAUSTED"}}
    response = hi_and_a_call("c1", thinking_signature="c2ln")
    body = response_body("gemini", response, model="gemini-x")
    [candidate] = body["candidates"]
    assert candidate["content"]["parts"] == [
        {"text": "hm", "thought": True, "thoughtSignature": "c2ln"},
        {"text": "Hi"},
        {"functionCall": {"name": "f", "args": {"a": 1}, "id": "c1"}},
    ]
    assert candidate["finishReason"] == "STOP" and body["modelVersion"] == "gemini-x"
    assert error_body("gemini", 404)["error"]["status"] == "NOT_FOUND"


# ------------------------------------------------------------------ Ollama


def ollama_lines(body: bytes) -> list[dict[str, Any]]:
    """Each line of an Ollama body, as ``str.splitlines`` (and httpx, and so the ollama SDK)
    cuts it."""
    return [orjson.loads(line) for line in body.decode().splitlines()]


def test_ollama_writes_a_line_per_delta_a_line_per_call_and_the_done_line() -> None:
    lines = ollama_lines(encode_all(wire_encoder("ollama", model="llama-x"), events_of(MESSAGE)))
    messages = [line["message"] for line in lines]
    assert [m.get("thinking") for m in messages[:2]] == ["Let me ", "think."]
    assert [m["content"] for m in messages[2:4]] == ["Hel", "lo"]
    assert messages[4]["tool_calls"] == [
        {
            "id": "call_1",
            "function": {"index": 0, "name": "get_weather", "arguments": {"city": "Paris"}},
        }
    ]
    done = lines[-1]
    assert len(lines) == 6 and all(not line["done"] for line in lines[:-1])
    assert (done["done"], done["done_reason"], done["model"]) == (True, "stop", "llama-x")
    assert (done["prompt_eval_count"], done["eval_count"]) == (12, 7)


def test_ollama_lines_are_not_cut_by_unicode_line_breaks_in_the_text() -> None:
    said = "one\u2028two\x85three\u2029four"
    events = [ChatEvent(T.TEXT_DELTA, text=said), ChatEvent(T.RESPONSE_END)]
    lines = ollama_lines(encode_all(wire_encoder("ollama", model="m"), events))
    assert len(lines) == 2 and lines[0]["message"]["content"] == said


def test_ollama_errors_and_body() -> None:
    failed = [ChatEvent(T.TEXT_DELTA, text="Hi"), ChatEvent(T.ERROR, error=ProviderError("boom"))]
    lines = ollama_lines(encode_all(wire_encoder("ollama", model="m"), failed))
    assert lines[-1] == {"error": "boom"} and len(lines) == 2
    response = hi_and_a_call("c1", finish_reason="max_tokens", arguments="{}")
    body = response_body("ollama", response, model="llama-x")
    assert body["message"] == {
        "role": "assistant",
        "content": "Hi",
        "thinking": "hm",
        "tool_calls": [{"id": "c1", "function": {"index": 0, "name": "f", "arguments": {}}}],
    }
    assert (body["done"], body["done_reason"], body["eval_count"]) == (True, "length", 7)
    assert error_body("ollama", 404) == {"error": "The model does not exist"}


def test_the_embedded_provider_writes_every_format_with_these_encoders() -> None:
    from solon_events.devserver import ROUTES
    from solon_events.devserver.encoders import FormatWire
    from solon_events.devserver.turns import TurnUsage

    formats = {dialect: wire for _path, wire, dialect in ROUTES if dialect != "bedrock"}
    assert (
        set(formats)
        == set(WIRE_FORMATS) & set(formats)
        == {
            "openai",
            "openai-responses",
            "anthropic",
            "gemini",
            "ollama",
            "cohere",
            "google-interactions",
        }
    )
    for name, wire in formats.items():
        assert issubclass(wire, FormatWire) and wire.format == name
        assert type(wire("m", TurnUsage()).encoder) is WIRE_FORMATS[name]
        said, written = wire.error_body(429, "x"), error_body(name, 429, "x")
        for made_up in ("request_id", "id"):  # Anthropic's request_id, Cohere's id
            assert (made_up in said) == (made_up in written)
            said.pop(made_up, None)
            written.pop(made_up, None)
        assert said == written


@given(
    prefix=st.text(max_size=10),
    length=st.integers(0, 64),
    alphabet=st.text(min_size=1, max_size=100).map(lambda s: "".join(dict.fromkeys(s))),
)
def test_random_id_is_the_prefix_then_length_characters_of_the_alphabet(
    prefix: str, length: int, alphabet: str
) -> None:
    made = random_id(prefix, length, alphabet)
    assert made.startswith(prefix)
    assert len(made) == len(prefix) + length
    assert set(made[len(prefix) :]) <= set(alphabet)


def test_random_ids_use_every_character_and_differ() -> None:
    ids = [random_id("chatcmpl-") for _ in range(2_000)]
    assert len(set(ids)) == len(ids)
    counts = {c: 0 for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"}
    for made in ids:
        for c in made.removeprefix("chatcmpl-"):
            counts[c] += 1
    expected = 2_000 * 24 / 62  # 774 each; a biased digit would stray far further
    assert all(abs(n - expected) < 0.25 * expected for n in counts.values())
