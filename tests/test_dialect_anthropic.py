"""The Anthropic Messages dialect: stream events -> semantic events, and request building.

The fixtures are small streams written from Anthropic's streaming reference (event names and
payload shapes of ``POST /v1/messages`` with ``stream: true``). The corpus test at the end
reads the recorded streams in ``../shared/corpus/anthropic`` (see ``recorded.CORPUS``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import attrs
import orjson
import pytest
from dialect_runs import block, feed, of, outcome, shape
from hypothesis import example, given
from hypothesis import strategies as st
from recorded import corpus_paths

from solon_events.core.parsing import ParseStage
from solon_events.dialects import anthropic, get_dialect
from solon_events.dialects.anthropic import AnthropicDialect
from solon_events.event_model.errors import ChatError, ChatProtocolError, ProviderError
from solon_events.event_model.events import ChatEvent, ChatEventType
from solon_events.event_model.results import Citation, SearchResult, ToolCall, Usage

T = ChatEventType
DIALECT = AnthropicDialect()


# ---------------------------------------------------------------- frame builders


def message_start(
    msg_id: str = "msg_01", model: str = "claude-sonnet-4-5", **usage: Any
) -> dict[str, Any]:
    return {
        "type": "message_start",
        "message": {
            "id": msg_id,
            "type": "message",
            "role": "assistant",
            "content": [],
            "model": model,
            "stop_reason": None,
            "stop_sequence": None,
            "usage": usage or {"input_tokens": 25, "output_tokens": 1},
        },
    }


def block_start(index: int, block: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": dict(block)}


def delta(index: Any, **payload: Any) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": payload}


def text(index: int, value: str) -> dict[str, Any]:
    return delta(index, type="text_delta", text=value)


def json_delta(index: int, fragment: str) -> dict[str, Any]:
    return delta(index, type="input_json_delta", partial_json=fragment)


def block_stop(index: int) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": index}


def message_delta(stop_reason: str | None = "end_turn", **usage: Any) -> dict[str, Any]:
    frame: dict[str, Any] = {
        "type": "message_delta",
        "delta": {"stop_reason": stop_reason, "stop_sequence": None},
    }
    if usage:
        frame["usage"] = usage
    return frame


def text_block(index: int, *texts: str) -> list[dict[str, Any]]:
    """A text block at ``index``: its start, a delta per text of ``texts``, its stop."""
    return [block_start(index, TEXT_BLOCK), *(text(index, t) for t in texts), block_stop(index)]


def ended(stop_reason: str | None = "end_turn", **usage: Any) -> list[dict[str, Any]]:
    """The end of a message: its message_delta (``stop_reason``, ``usage``), message_stop."""
    return [message_delta(stop_reason, **usage), MESSAGE_STOP]


def tool_use(type: str, id: str, name: str, **more: Any) -> dict[str, Any]:
    """A tool use block (``type``: tool_use, server_tool_use, mcp_tool_use) as
    content_block_start gives it: its input comes in deltas."""
    return {"type": type, "id": id, "name": name, "input": {}, **more}


PING = {"type": "ping"}
MESSAGE_STOP = {"type": "message_stop"}
TEXT_BLOCK = {"type": "text", "text": ""}


def run(frames: Iterable[Any]) -> tuple[list[ChatEvent], ParseStage]:
    """Feed ``frames`` to the dialect the way the parse operator does."""
    return feed(DIALECT, frames, response_id="resp-1", end=DIALECT.end_of_stream)


def usages(events: list[ChatEvent]) -> list[Usage]:
    found = [e.usage for e in of(events, T.USAGE)]
    assert all(u is not None for u in found)
    return [u for u in found if u is not None]


def last_usage(events: list[ChatEvent]) -> Usage:
    return usages(events)[-1]


# ---------------------------------------------------------------- text and lifecycle


def test_get_dialect_knows_anthropic() -> None:
    dialect = get_dialect("anthropic")
    assert isinstance(dialect, AnthropicDialect)
    assert dialect.name == "anthropic"


def test_text_stream_events_in_order() -> None:
    events, ctx = run(
        [
            message_start("msg_1nZdL29xx5MUA1yADyHTEsnR", "claude-opus-4-1"),
            block_start(0, TEXT_BLOCK),
            PING,
            text(0, "Hello"),
            text(0, "!"),
            block_stop(0),
            *ended("end_turn", output_tokens=15),
        ]
    )
    assert shape(events) == [
        ("USAGE", -1, None),
        ("TEXT_START", 0, None),
        ("HEARTBEAT", -1, None),
        ("TEXT_DELTA", 0, "Hello"),
        ("TEXT_DELTA", 0, "!"),
        ("TEXT_END", 0, None),
        ("USAGE", -1, None),
    ]
    assert ctx.finished and ctx.finish_reason == "end_turn"
    assert ctx.failure is None
    assert ctx.provider_response_id == "msg_1nZdL29xx5MUA1yADyHTEsnR"
    assert ctx.model == "claude-opus-4-1"
    assert {e.provider_response_id for e in events} == {"msg_1nZdL29xx5MUA1yADyHTEsnR"}
    assert {e.response_id for e in events} == {"resp-1"}
    assert events[3].raw["delta"] == {"type": "text_delta", "text": "Hello"}
    usage = last_usage(events)
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (25, 15, 40)


def test_message_delta_without_message_stop_is_complete() -> None:
    _, ctx = run(
        [
            message_start(),
            *text_block(0, "a"),
            message_delta("max_tokens", output_tokens=3),
        ]
    )
    assert ctx.finished and ctx.finish_reason == "max_tokens"


def test_stream_cut_before_message_delta_is_not_finished() -> None:
    events, ctx = run([message_start(), block_start(0, TEXT_BLOCK), text(0, "par")])
    assert not ctx.finished
    assert shape(events)[-1] == ("TEXT_DELTA", 0, "par")


def test_text_block_that_starts_with_text_and_citations() -> None:
    citation = {
        "type": "char_location",
        "cited_text": "grass is green",
        "document_index": 0,
        "document_title": "Facts",
        "start_char_index": 0,
        "end_char_index": 14,
    }
    events, _ = run(
        [
            message_start(),
            block_start(0, {"type": "text", "text": "Grass is green.", "citations": [citation]}),
        ]
    )
    assert shape(events)[1:] == [
        ("TEXT_START", 0, None),
        ("TEXT_DELTA", 0, "Grass is green."),
        ("CITATION", 0, None),
    ]
    assert events[-1].citation is not None
    assert events[-1].citation.cited_text == "grass is green"


def test_empty_text_deltas_are_not_sent() -> None:
    events, _ = run([message_start(), block_start(0, TEXT_BLOCK), text(0, ""), block_stop(0)])
    assert of(events, T.TEXT_DELTA) == []
    assert len(of(events, T.TEXT_START, T.TEXT_END)) == 2


def test_message_stop_closes_blocks_left_open() -> None:
    events, ctx = run([message_start(), block_start(0, TEXT_BLOCK), text(0, "x"), MESSAGE_STOP])
    assert shape(events)[-1] == ("TEXT_END", 0, None)
    assert ctx.finished


# ---------------------------------------------------------------- usage


def test_cached_input_tokens_count_in_prompt_tokens() -> None:
    start = message_start(
        input_tokens=10,
        cache_creation_input_tokens=200,
        cache_read_input_tokens=300,
        output_tokens=1,
    )
    events, _ = run([start, message_delta("end_turn", output_tokens=42), MESSAGE_STOP])
    first, final = usages(events)
    assert (first.prompt_tokens, first.completion_tokens) == (510, 1)
    assert final.prompt_tokens == 510
    assert final.completion_tokens == 42
    assert final.total_tokens == 552
    assert final.cache_creation_input_tokens == 200
    assert final.cache_read_input_tokens == 300
    assert final.source == {
        "input_tokens": 10,
        "cache_creation_input_tokens": 200,
        "cache_read_input_tokens": 300,
        "output_tokens": 42,
    }


def test_message_delta_input_tokens_win() -> None:
    events, _ = run(
        [
            message_start(input_tokens=43, output_tokens=1),
            *ended("end_turn", input_tokens=61, output_tokens=2),
        ]
    )
    usage = last_usage(events)
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (61, 2, 63)


def test_null_usage_fields_in_message_delta_keep_earlier_values() -> None:
    events, _ = run(
        [
            message_start(input_tokens=7, cache_read_input_tokens=5, output_tokens=1),
            message_delta(
                "end_turn", input_tokens=None, cache_read_input_tokens=None, output_tokens=9
            ),
        ]
    )
    usage = last_usage(events)
    assert (usage.prompt_tokens, usage.completion_tokens, usage.cache_read_input_tokens) == (
        12,
        9,
        5,
    )


def test_server_tool_use_counters() -> None:
    events, _ = run(
        [
            message_start(),
            message_delta(
                "end_turn",
                input_tokens=30,
                output_tokens=4,
                server_tool_use={"web_search_requests": 2},
            ),
        ]
    )
    assert dict(last_usage(events).server_tool_use) == {"web_search_requests": 2}


# ---------------------------------------------------------------- thinking


def thinking_stream() -> list[dict[str, Any]]:
    """A thinking block with its signature, then a text block."""
    return [
        message_start(),
        block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
        delta(0, type="thinking_delta", thinking="Let me"),
        delta(0, type="thinking_delta", thinking=" think."),
        delta(0, type="signature_delta", signature="EqQBCgIYAhIM"),
        block_stop(0),
        *text_block(1, "Done."),
        *ended("end_turn", output_tokens=9),
    ]


def test_thinking_with_signature_then_text() -> None:
    events, _ = run(thinking_stream())
    assert shape(events)[1:-1] == [
        ("THINKING_START", 0, None),
        ("THINKING_DELTA", 0, "Let me"),
        ("THINKING_DELTA", 0, " think."),
        ("THINKING_SIGNATURE", 0, "EqQBCgIYAhIM"),
        ("THINKING_END", 0, None),
        *block("TEXT", 1, "Done."),
    ]


def test_redacted_thinking() -> None:
    events, _ = run(
        [
            message_start(),
            block_start(0, {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"}),
            block_stop(0),
            *text_block(1, "ok"),
        ]
    )
    assert shape(events)[1:] == [
        ("THINKING_REDACTED", 0, "EmwKAhgBEgy3va3pzix"),
        *block("TEXT", 1, "ok"),
    ]


# ---------------------------------------------------------------- client tool calls


def test_tool_use_streams_arguments() -> None:
    tool = tool_use("tool_use", "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "get_weather")
    events, ctx = run(
        [
            message_start(),
            *text_block(0, "Let me check."),
            block_start(1, tool),
            json_delta(1, ""),
            json_delta(1, '{"location": "San Fra'),
            json_delta(1, 'ncisco, CA", "unit": "fahrenheit"}'),
            block_stop(1),
            *ended("tool_use", output_tokens=89),
        ]
    )
    calls = of(events, T.TOOL_CALL_START, T.TOOL_CALL_ARGS_DELTA, T.TOOL_CALL_END)
    assert [(e.type.name, e.index, e.tool_call_id, e.text) for e in calls] == [
        ("TOOL_CALL_START", 0, "toolu_01T1x1fJ34qAmk2tNTrN7Up6", None),
        ("TOOL_CALL_ARGS_DELTA", 0, "toolu_01T1x1fJ34qAmk2tNTrN7Up6", '{"location": "San Fra'),
        (
            "TOOL_CALL_ARGS_DELTA",
            0,
            "toolu_01T1x1fJ34qAmk2tNTrN7Up6",
            'ncisco, CA", "unit": "fahrenheit"}',
        ),
        ("TOOL_CALL_END", 0, "toolu_01T1x1fJ34qAmk2tNTrN7Up6", None),
    ]
    assert calls[0].tool_call == ToolCall(
        id="toolu_01T1x1fJ34qAmk2tNTrN7Up6", name="get_weather", index=0
    )
    end = calls[-1].tool_call
    assert end is not None
    assert (end.id, end.name) == ("toolu_01T1x1fJ34qAmk2tNTrN7Up6", "get_weather")
    assert end.arguments == {"location": "San Francisco, CA", "unit": "fahrenheit"}
    assert ctx.finish_reason == "tool_use"


@pytest.mark.parametrize("fragments", [[], [""], ["{}"], ["", "{", "}"]])
def test_tool_without_arguments_parses_to_empty_dict(fragments: list[str]) -> None:
    tool = tool_use("tool_use", "toolu_1", "refresh")
    frames = [message_start(), block_start(0, tool), *(json_delta(0, f) for f in fragments)]
    events, _ = run([*frames, block_stop(0), message_delta("tool_use"), MESSAGE_STOP])
    (end,) = of(events, T.TOOL_CALL_END)
    assert end.tool_call is not None
    assert end.tool_call.arguments == {}
    assert end.tool_call.arguments_str == "".join(fragments)


def test_tool_input_given_whole_in_block_start() -> None:
    tool = {"type": "tool_use", "id": "toolu_2", "name": "lookup", "input": {"q": "x"}}
    events, _ = run([message_start(), block_start(0, tool), block_stop(0), MESSAGE_STOP])
    (end,) = of(events, T.TOOL_CALL_END)
    assert end.tool_call is not None
    assert end.tool_call.arguments == {"q": "x"}


def test_parallel_tool_calls_get_their_own_positions() -> None:
    first = tool_use("tool_use", "toolu_a", "weather")
    second = tool_use("tool_use", "toolu_b", "time")
    events, _ = run(
        [
            message_start(),
            block_start(1, first),
            json_delta(1, '{"city": "Paris"}'),
            block_stop(1),
            block_start(2, second),
            json_delta(2, '{"tz": "CET"}'),
            block_stop(2),
            *ended("tool_use"),
        ]
    )
    ends = [e.tool_call for e in of(events, T.TOOL_CALL_END)]
    assert [(c.id, c.name, c.index, c.arguments) for c in ends if c is not None] == [
        ("toolu_a", "weather", 0, {"city": "Paris"}),
        ("toolu_b", "time", 1, {"tz": "CET"}),
    ]


def test_end_of_stream_closes_a_tool_call_after_message_delta() -> None:
    tool = tool_use("tool_use", "toolu_3", "f")
    events, _ = run(
        [
            message_start(),
            block_start(0, tool),
            json_delta(0, '{"a": 1}'),
            message_delta("tool_use"),
        ]
    )
    (end,) = of(events, T.TOOL_CALL_END)
    assert end.tool_call is not None and end.tool_call.arguments == {"a": 1}


def test_end_of_stream_leaves_an_unfinished_stream_alone() -> None:
    tool = tool_use("tool_use", "toolu_4", "f")
    events, ctx = run([message_start(), block_start(0, tool), json_delta(0, '{"a"')])
    assert not ctx.finished
    assert of(events, T.TOOL_CALL_END) == []


# ---------------------------------------------------------------- server tools


WEB_RESULTS = [
    {
        "type": "web_search_result",
        "url": "https://en.wikipedia.org/wiki/Claude_Shannon",
        "title": "Claude Shannon - Wikipedia",
        "encrypted_content": "EqgfCioIARgB",
        "page_age": "April 30, 2025",
    },
    {
        "type": "web_search_result",
        "url": "https://www.britannica.com/biography/Claude-Shannon",
        "title": "Claude Shannon | Britannica",
        "encrypted_content": "EpYCCioIARgB",
        "page_age": None,
    },
]


def web_search_stream() -> list[dict[str, Any]]:
    server_use = tool_use("server_tool_use", "srvtoolu_014hJH82Qum7Td6UV8gDXThB", "web_search")
    result = {
        "type": "web_search_tool_result",
        "tool_use_id": "srvtoolu_014hJH82Qum7Td6UV8gDXThB",
        "content": WEB_RESULTS,
    }
    citation = {
        "type": "web_search_result_location",
        "url": "https://en.wikipedia.org/wiki/Claude_Shannon",
        "title": "Claude Shannon - Wikipedia",
        "encrypted_index": "Eo8BCioIAhgB",
        "cited_text": "Claude Elwood Shannon (April 30, 1916 - February 24, 2001)",
    }
    return [
        message_start(),
        block_start(0, server_use),
        json_delta(0, ""),
        json_delta(0, '{"query": "claude'),
        json_delta(0, ' shannon birth date"}'),
        block_stop(0),
        block_start(1, result),
        block_stop(1),
        block_start(2, {"type": "text", "text": "", "citations": []}),
        delta(2, type="citations_delta", citation=citation),
        text(2, "Claude Shannon was born on April 30, 1916"),
        block_stop(2),
        message_delta(
            "end_turn",
            input_tokens=6039,
            output_tokens=931,
            server_tool_use={"web_search_requests": 1},
        ),
        MESSAGE_STOP,
    ]


def test_web_search_server_tool_events() -> None:
    events, ctx = run(web_search_stream())
    assert [e.type.name for e in events if e.type is not T.USAGE] == [
        "SERVER_TOOL_START",
        "SERVER_TOOL_ARGS_DELTA",
        "SERVER_TOOL_ARGS_DELTA",
        "SERVER_TOOL_RESULT",
        "SEARCH_RESULT",
        "SEARCH_RESULT",
        "TEXT_START",
        "CITATION",
        "TEXT_DELTA",
        "TEXT_END",
    ]
    start, *args = of(events, T.SERVER_TOOL_START, T.SERVER_TOOL_ARGS_DELTA)
    assert (start.sub_type, start.tool_call_id, start.index) == (
        "web_search",
        "srvtoolu_014hJH82Qum7Td6UV8gDXThB",
        0,
    )
    assert start.tool_call is not None
    assert (start.tool_call.id, start.tool_call.name) == (
        "srvtoolu_014hJH82Qum7Td6UV8gDXThB",
        "web_search",
    )
    assert [a.text for a in args] == ['{"query": "claude', ' shannon birth date"}']
    assert {a.sub_type for a in args} == {"web_search"}
    (result,) = of(events, T.SERVER_TOOL_RESULT)
    assert result.sub_type == "web_search"
    assert result.raw_type == "web_search_tool_result"
    assert result.tool_call_id == "srvtoolu_014hJH82Qum7Td6UV8gDXThB"
    assert result.raw["content"] == WEB_RESULTS
    assert result.attr("is_error") is False
    assert result.tool_call is not None
    assert result.tool_call.arguments == {"query": "claude shannon birth date"}
    found = [e.search_result for e in of(events, T.SEARCH_RESULT)]
    assert [(r.url, r.title, r.date) for r in found if r is not None] == [
        (
            "https://en.wikipedia.org/wiki/Claude_Shannon",
            "Claude Shannon - Wikipedia",
            "April 30, 2025",
        ),
        (
            "https://www.britannica.com/biography/Claude-Shannon",
            "Claude Shannon | Britannica",
            None,
        ),
    ]
    (cited,) = of(events, T.CITATION)
    assert cited.index == 2 and cited.citation is not None
    assert cited.citation.url == "https://en.wikipedia.org/wiki/Claude_Shannon"
    assert cited.citation.title == "Claude Shannon - Wikipedia"
    assert cited.citation.type == "web_search_result_location"
    assert cited.citation.cited_text is not None
    assert cited.citation.cited_text.startswith("Claude Elwood Shannon")
    assert of(events, T.TOOL_CALL_START, T.TOOL_CALL_END) == []
    assert dict(last_usage(events).server_tool_use) == {"web_search_requests": 1}
    assert ctx.finish_reason == "end_turn"


def test_web_search_error_result() -> None:
    error = {
        "type": "web_search_tool_result",
        "tool_use_id": "srvtoolu_9",
        "content": {"type": "web_search_tool_result_error", "error_code": "max_uses_exceeded"},
    }
    events, _ = run([message_start(), block_start(0, error), block_stop(0)])
    (result,) = of(events, T.SERVER_TOOL_RESULT)
    assert result.attr("is_error") is True
    assert result.sub_type == "web_search"
    assert of(events, T.SEARCH_RESULT) == []


@pytest.mark.parametrize(
    ("tool_name", "result_type", "sub_type"),
    [
        ("bash_code_execution", "bash_code_execution_tool_result", "bash_code_execution"),
        (
            "text_editor_code_execution",
            "text_editor_code_execution_tool_result",
            "text_editor_code_execution",
        ),
        ("code_execution", "code_execution_tool_result", "code_execution"),
        ("web_fetch", "web_fetch_tool_result", "web_fetch"),
        ("tool_search_tool_regex", "tool_search_tool_result", "tool_search_tool_regex"),
    ],
)
def test_server_tool_results_share_the_call_sub_type(
    tool_name: str, result_type: str, sub_type: str
) -> None:
    use = tool_use("server_tool_use", "srvtoolu_x", tool_name)
    result = {
        "type": result_type,
        "tool_use_id": "srvtoolu_x",
        "content": {"type": f"{tool_name}_result", "stdout": "34\n", "return_code": 0},
    }
    events, _ = run(
        [
            message_start(),
            block_start(0, use),
            json_delta(0, '{"command": "ls"}'),
            block_stop(0),
            block_start(1, result),
            block_stop(1),
            MESSAGE_STOP,
        ]
    )
    start, args, end = events[1:4]
    assert (start.type, start.sub_type) == (T.SERVER_TOOL_START, sub_type)
    assert (args.type, args.text) == (T.SERVER_TOOL_ARGS_DELTA, '{"command": "ls"}')
    assert (end.type, end.sub_type, end.raw_type) == (T.SERVER_TOOL_RESULT, sub_type, result_type)
    assert end.raw == result
    assert end.tool_call is not None and end.tool_call.arguments == {"command": "ls"}


def test_unmatched_tool_result_uses_the_block_type_prefix() -> None:
    result = {"type": "memory_search_tool_result", "tool_use_id": "srvtoolu_unknown", "content": []}
    events, _ = run([message_start(), block_start(0, result), block_stop(0)])
    (end,) = of(events, T.SERVER_TOOL_RESULT)
    assert (end.sub_type, end.tool_call_id, end.tool_call) == (
        "memory_search",
        "srvtoolu_unknown",
        None,
    )


def test_mcp_tool_use_and_result_are_server_tools() -> None:
    use = tool_use("mcp_tool_use", "mcptoolu_017Cuqa", "echo", server_name="echo-server")
    result = {
        "type": "mcp_tool_result",
        "tool_use_id": "mcptoolu_017Cuqa",
        "is_error": False,
        "content": [{"type": "text", "text": "Tool echo: hello world"}],
    }
    events, _ = run(
        [
            message_start(),
            block_start(0, use),
            json_delta(0, '{"message": '),
            json_delta(0, '"hello world"}'),
            block_stop(0),
            block_start(1, result),
            block_stop(1),
            *text_block(2, "It echoed."),
            *ended("end_turn"),
        ]
    )
    (start,) = of(events, T.SERVER_TOOL_START)
    assert (start.sub_type, start.tool_call_id) == ("mcp", "mcptoolu_017Cuqa")
    assert start.attr("server_name") == "echo-server"
    assert start.tool_call is not None and start.tool_call.name == "echo"
    assert len(of(events, T.SERVER_TOOL_ARGS_DELTA)) == 2
    (end,) = of(events, T.SERVER_TOOL_RESULT)
    assert (end.sub_type, end.tool_call_id, end.attr("is_error")) == (
        "mcp",
        "mcptoolu_017Cuqa",
        False,
    )
    assert end.tool_call is not None and end.tool_call.arguments == {"message": "hello world"}
    assert of(events, T.TOOL_CALL_START, T.TOOL_CALL_END, T.SEARCH_RESULT) == []


def test_mcp_error_result() -> None:
    result = {
        "type": "mcp_tool_result",
        "tool_use_id": "mcptoolu_1",
        "is_error": True,
        "content": [{"type": "text", "text": "boom"}],
    }
    events, _ = run([message_start(), block_start(0, result)])
    assert of(events, T.SERVER_TOOL_RESULT)[0].attr("is_error") is True


# ---------------------------------------------------------------- citations


@pytest.mark.parametrize(
    ("citation", "expected"),
    [
        (
            {
                "type": "char_location",
                "cited_text": "The grass is green.",
                "document_index": 0,
                "document_title": "Example Document",
                "start_char_index": 0,
                "end_char_index": 20,
            },
            ("Example Document", None, 0, 20, 0),
        ),
        (
            {
                "type": "page_location",
                "cited_text": "p.2 text",
                "document_index": 1,
                "document_title": "Report.pdf",
                "start_page_number": 2,
                "end_page_number": 3,
            },
            ("Report.pdf", None, 2, 3, 1),
        ),
        (
            {
                "type": "content_block_location",
                "cited_text": "block",
                "document_index": 2,
                "document_title": None,
                "start_block_index": 0,
                "end_block_index": 1,
            },
            (None, None, 0, 1, 2),
        ),
        (
            {
                "type": "search_result_location",
                "cited_text": "kb text",
                "source": "https://kb.example.com/a",
                "title": "KB",
                "search_result_index": 3,
                "start_block_index": 0,
                "end_block_index": 2,
            },
            ("KB", "https://kb.example.com/a", 0, 2, 3),
        ),
    ],
)
def test_citations_delta(citation: dict[str, Any], expected: tuple[Any, ...]) -> None:
    events, _ = run(
        [
            message_start(),
            block_start(0, {"type": "text", "text": "", "citations": []}),
            delta(0, type="citations_delta", citation=citation),
            text(0, "the grass is green"),
        ]
    )
    (event,) = of(events, T.CITATION)
    found = event.citation
    assert found is not None
    assert (
        found.title,
        found.url,
        found.start_index,
        found.end_index,
        found.document_index,
    ) == expected
    assert found.cited_text == citation["cited_text"]
    assert found.type == citation["type"]
    assert found.raw == citation
    assert event.index == 0


# Sources are built by the positional builders: these pin them to the keyword constructors,
# field by field, for any shape of location or search result item.

_SCALARS = st.none() | st.booleans() | st.integers(-2, 2) | st.sampled_from(["", "a", "b"])
_START_KEYS = ["start_char_index", "start_page_number", "start_block_index"]
_END_KEYS = ["end_char_index", "end_page_number", "end_block_index"]
_DOCUMENT_KEYS = ["document_index", "search_result_index"]
_LOCATION_KEYS = [
    *("type", "url", "source", "title", "document_title", "cited_text", "file_id"),
    *(_START_KEYS + _END_KEYS + _DOCUMENT_KEYS),
]
_RESULT_KEYS = ["type", "url", "title", "page_age", "snippet", "encrypted_content"]


def _opt_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _first_int(raw: Mapping[str, Any], keys: list[str]) -> int | None:
    values = [raw.get(key) for key in keys]
    return next((v for v in values if isinstance(v, int) and not isinstance(v, bool)), None)


def expected_citation(raw: Mapping[str, Any]) -> Citation:
    """The Citation a location maps to, spelled out with the keyword constructor."""
    return Citation(
        url=_opt_str(raw.get("url")) or _opt_str(raw.get("source")),
        title=_opt_str(raw.get("title")) or _opt_str(raw.get("document_title")),
        cited_text=_opt_str(raw.get("cited_text")),
        start_index=_first_int(raw, _START_KEYS),
        end_index=_first_int(raw, _END_KEYS),
        document_index=_first_int(raw, _DOCUMENT_KEYS),
        file_id=_opt_str(raw.get("file_id")),
        type=_opt_str(raw.get("type")),
        raw=raw,
    )


def assert_same_value(found: Any, expected: Any) -> None:
    assert type(found) is type(expected)
    assert attrs.asdict(found, recurse=False) == attrs.asdict(expected, recurse=False)


@given(st.dictionaries(st.sampled_from(_LOCATION_KEYS), _SCALARS, min_size=4))
@example({"url": "", "source": "a", "title": "", "document_title": "b"})
@example({"url": "", "source": 1, "title": "", "document_title": None})
@example({"start_char_index": True, "start_page_number": 2, "search_result_index": 3})
def test_a_citation_maps_every_field_of_its_location(location: dict[str, Any]) -> None:
    events = assert_same_as_general(
        [
            message_start(),
            block_start(0, {"type": "text", "text": "", "citations": [location]}),
            delta(0, type="citations_delta", citation=location),
        ]
    )
    found = of(events, T.CITATION)
    assert len(found) == 2
    for event in found:
        assert_same_value(event.citation, expected_citation(location))


@given(
    st.lists(
        st.dictionaries(st.sampled_from(_RESULT_KEYS), _SCALARS) | _SCALARS | st.just([]),
        max_size=4,
    )
)
def test_a_search_result_maps_every_field_of_its_item(items: list[Any]) -> None:
    result = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": items}
    events = assert_same_as_general([message_start(), block_start(0, result)])
    found = of(events, T.SEARCH_RESULT)
    with_url = [i for i in items if isinstance(i, dict) and isinstance(i.get("url"), str)]
    assert [e.raw for e in found] == with_url
    for event, item in zip(found, with_url):
        assert (event.index, event.tool_call_id, event.sub_type) == (0, "srvtoolu_1", "web_search")
        expected = SearchResult(
            url=item["url"],
            title=_opt_str(item.get("title")),
            date=_opt_str(item.get("page_age")),
            type=_opt_str(item.get("type")),
            raw=item,
        )
        assert_same_value(event.search_result, expected)


# ---------------------------------------------------------------- safety and errors


def test_refusal_is_a_content_filter() -> None:
    details = {"type": "refusal", "category": "cyber", "explanation": "blocked by policy"}
    frame = message_delta("refusal", input_tokens=18, output_tokens=5)
    frame["delta"]["stop_details"] = details
    events, ctx = run([message_start(), PING, frame, MESSAGE_STOP])
    (flt,) = of(events, T.CONTENT_FILTER)
    assert (flt.text, flt.sub_type) == ("refusal", "cyber")
    assert flt.attr("explanation") == "blocked by policy"
    assert ctx.finish_reason == "refusal"
    assert [e.type.name for e in events] == ["USAGE", "HEARTBEAT", "USAGE", "CONTENT_FILTER"]


def test_error_event_fails_the_stream_and_keeps_what_came_before() -> None:
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    events, ctx = run([message_start(), block_start(0, TEXT_BLOCK), text(0, "Hel"), error])
    assert isinstance(ctx.failure, ProviderError)
    assert isinstance(ctx.failure, ChatError)
    assert "Overloaded" in str(ctx.failure)
    assert ctx.failure.provider_error == error
    assert not ctx.finished
    assert shape(events)[-1] == ("TEXT_DELTA", 0, "Hel")


def test_error_event_without_details_still_fails() -> None:
    _, ctx = run([{"type": "error"}])
    assert isinstance(ctx.failure, ProviderError)


# ---------------------------------------------------------------- unknown and odd input


def test_unknown_block_becomes_raw_events() -> None:
    events, ctx = run(
        [
            message_start(),
            block_start(0, {"type": "foo_block", "payload": 1}),
            delta(0, type="foo_delta", value="x"),
            text(0, "not text"),
            block_stop(0),
            *text_block(1, "fine"),
            MESSAGE_STOP,
        ]
    )
    assert [(e.type.name, e.index, e.raw_type) for e in events[1:]] == [
        ("RAW", 0, "content_block_start:foo_block"),
        ("RAW", 0, "content_block_delta:foo_delta"),
        ("RAW", 0, "content_block_delta:text_delta"),
        ("RAW", 0, "content_block_stop:foo_block"),
        ("TEXT_START", 1, None),
        ("TEXT_DELTA", 1, None),
        ("TEXT_END", 1, None),
    ]
    assert events[1].raw["content_block"] == {"type": "foo_block", "payload": 1}
    assert ctx.finished


def test_unknown_event_type_is_raw() -> None:
    frame = {"type": "message_checkpoint", "at": 3}
    events, _ = run([message_start(), frame])
    assert (events[-1].type, events[-1].raw_type, dict(events[-1].raw)) == (
        T.RAW,
        "message_checkpoint",
        frame,
    )


def test_unknown_delta_on_a_known_block_is_raw_and_keeps_the_block_open() -> None:
    events, _ = run(
        [
            message_start(),
            block_start(0, TEXT_BLOCK),
            delta(0, type="sparkle_delta"),
            json_delta(0, "{}"),
            text(0, "still here"),
            block_stop(0),
        ]
    )
    assert shape(events)[1:] == [
        ("TEXT_START", 0, None),
        ("RAW", 0, None),
        ("RAW", 0, None),
        ("TEXT_DELTA", 0, "still here"),
        ("TEXT_END", 0, None),
    ]
    assert [e.raw_type for e in of(events, T.RAW)] == [
        "content_block_delta:sparkle_delta",
        "content_block_delta:input_json_delta",
    ]


def test_delta_and_stop_for_a_block_never_started_are_raw() -> None:
    events, _ = run([message_start(), text(5, "orphan"), block_stop(5)])
    assert [(e.type, e.raw_type) for e in events[1:]] == [
        (T.RAW, "content_block_delta:text_delta"),
        (T.RAW, "content_block_stop"),
    ]


@pytest.mark.parametrize(
    "frame",
    [
        {},
        {"type": 5},
        {"type": ["message_start"]},
        {"type": "message_start"},
        {"type": "message_start", "message": []},
        {"type": "message_start", "message": {"usage": {"input_tokens": "many"}}},
        {"type": "content_block_start"},
        {"type": "content_block_start", "index": 0, "content_block": "text"},
        {"type": "content_block_start", "index": [1], "content_block": {"type": "text"}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": {"x": 1}}},
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "server_tool_use", "id": {"x": 1}, "name": 3},
        },
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {
                "type": "web_search_tool_result",
                "tool_use_id": [1],
                "content": [1, {"url": 2}, {"url": "https://a"}],
            },
        },
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "thinking", "thinking": None, "signature": 7},
        },
        {"type": "content_block_delta", "index": {"a": 1}, "delta": {"type": ["x"]}},
        {"type": "content_block_delta", "index": 0, "delta": "text"},
        {"type": "content_block_stop", "index": "zero"},
        {"type": "message_delta"},
        {"type": "message_delta", "delta": None, "usage": {"output_tokens": True}},
        {"type": "message_delta", "delta": {"stop_reason": 3, "stop_details": "x"}},
        {"type": "message_stop", "extra": None},
        {"type": "ping", "n": []},
    ],
)
def test_odd_but_valid_json_never_raises(frame: dict[str, Any]) -> None:
    tool = tool_use("tool_use", "toolu_z", "f")
    events, _ = run([message_start(), block_start(0, tool), frame, block_stop(0), frame])
    assert events
    assert all(isinstance(e, ChatEvent) for e in events)


@pytest.mark.parametrize("frame", [[], ["message_start"], "message_start", 3, None, True])
def test_a_frame_that_is_not_an_object_is_a_protocol_error(frame: Any) -> None:
    with pytest.raises(ChatProtocolError, match="frame 1: expected a JSON object"):
        run([orjson.dumps(frame).decode()])


def test_duplicate_message_start_changes_nothing() -> None:
    start = message_start("msg_dup", input_tokens=17, output_tokens=1)
    events, ctx = run(
        [
            start,
            start,
            *text_block(0, "Hello, World!"),
            *ended("end_turn", output_tokens=227),
        ]
    )
    assert [(e.type.name, e.raw_type) for e in events[:2]] == [
        ("USAGE", None),
        ("RAW", "message_start:duplicate"),
    ]
    assert "".join(e.text or "" for e in of(events, T.TEXT_DELTA)) == "Hello, World!"
    usage = last_usage(events)
    assert (usage.prompt_tokens, usage.completion_tokens) == (17, 227)
    assert ctx.provider_response_id == "msg_dup"


def test_a_second_message_closes_the_first_and_starts_fresh() -> None:
    events, ctx = run(
        [
            message_start("msg_a", input_tokens=10, output_tokens=1),
            block_start(0, TEXT_BLOCK),
            text(0, "one"),
            message_start("msg_b", input_tokens=20, output_tokens=1),
            *text_block(0, "two"),
            *ended("end_turn", output_tokens=5),
        ]
    )
    assert shape(events) == [
        ("USAGE", -1, None),
        *block("TEXT", 0, "one"),
        ("USAGE", -1, None),
        *block("TEXT", 0, "two"),
        ("USAGE", -1, None),
    ]
    assert events[2].provider_response_id == "msg_a"
    assert events[6].provider_response_id == "msg_b"
    assert ctx.provider_response_id == "msg_b"
    usage = last_usage(events)
    assert (usage.prompt_tokens, usage.completion_tokens) == (20, 5)


# ---------------------------------------------------------------- the fast path for deltas

# parse_frame hands a delta of an open block straight to that block's delta handler (and sends
# a text delta of a text block itself), with plain lookups; everything else goes through
# anthropic._parse_general, the general code. These tests pin that both ways give the same
# events, and which way a frame goes.


def general(frames: Iterable[Any]) -> tuple[list[ChatEvent], ParseStage]:
    """Feed ``frames`` to the general code only: the reference the fast path must match."""
    return feed(anthropic._parse_general, frames, response_id="resp-1", end=DIALECT.end_of_stream)


def assert_same_as_general(frames: list[Any]) -> list[ChatEvent]:
    events, ctx = run(frames)
    assert outcome(events, ctx) == outcome(*general(frames))
    return events


@pytest.fixture
def general_calls(record_frames: Callable[[ModuleType, str], list[Any]]) -> list[Any]:
    """The frames that reach the general code during a test."""
    return record_frames(anthropic, "_parse_general")


def tool_stream() -> list[dict[str, Any]]:
    tool = tool_use("tool_use", "toolu_1", "get_weather")
    return [
        message_start(),
        *text_block(0, "Let me check."),
        block_start(1, tool),
        json_delta(1, ""),
        json_delta(1, '{"city": '),
        json_delta(1, '"Paris"}'),
        block_stop(1),
        *ended("tool_use", output_tokens=20),
    ]


FAST_STREAMS = {
    "thinking": thinking_stream,
    "tool": tool_stream,
    "web search": web_search_stream,
}


@pytest.mark.parametrize("name", sorted(FAST_STREAMS))
def test_deltas_of_open_blocks_take_the_fast_path(name: str, general_calls: list[Any]) -> None:
    frames = FAST_STREAMS[name]()
    run(frames)
    assert general_calls == [f for f in frames if f["type"] != "content_block_delta"]


@pytest.mark.parametrize("name", sorted(FAST_STREAMS))
def test_the_fast_path_sends_what_the_general_path_sends(name: str) -> None:
    assert_same_as_general(FAST_STREAMS[name]())


# Open blocks: 0 text, 1 server tool, 2 thinking, 3 client tool.
OPEN_BLOCKS = [
    message_start(),
    block_start(0, TEXT_BLOCK),
    block_start(1, {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search"}),
    block_start(2, {"type": "thinking", "thinking": ""}),
    block_start(3, tool_use("tool_use", "toolu_1", "f")),
]
CLOSE_BLOCKS = [*(block_stop(i) for i in range(4)), message_delta("end_turn"), MESSAGE_STOP]
CITED = {"type": "web_search_result_location", "url": "https://a.example", "cited_text": "a"}


NEAR_MISSES: list[tuple[str, Any, list[tuple[ChatEventType, Any]]]] = [
    ("text", text(0, "a"), [(T.TEXT_DELTA, "a")]),
    ("empty text", text(0, ""), []),
    ("text not a string", delta(0, type="text_delta", text=5), []),
    ("text null", delta(0, type="text_delta", text=None), []),
    ("no text", delta(0, type="text_delta"), []),
    ("server arguments", json_delta(1, '{"q": '), [(T.SERVER_TOOL_ARGS_DELTA, '{"q": ')]),
    ("empty server arguments", json_delta(1, ""), []),
    ("server arguments not a string", delta(1, type="input_json_delta", partial_json=[]), []),
    ("tool arguments", json_delta(3, '{"a": '), [(T.TOOL_CALL_ARGS_DELTA, '{"a": ')]),
    ("thinking", delta(2, type="thinking_delta", thinking="hm"), [(T.THINKING_DELTA, "hm")]),
    (
        "signature",
        delta(2, type="signature_delta", signature="c2ln"),
        [(T.THINKING_SIGNATURE, "c2ln")],
    ),
    ("citation", delta(0, type="citations_delta", citation=CITED), [(T.CITATION, None)]),
    ("citation not an object", delta(0, type="citations_delta", citation=[CITED]), []),
    (
        "index True",
        delta(True, type="input_json_delta", partial_json="x"),
        [(T.RAW, "content_block_delta:input_json_delta")],
    ),
    (
        "index 0.0",
        delta(0.0, type="text_delta", text="a"),
        [(T.RAW, "content_block_delta:text_delta")],
    ),
    (
        "index a string",
        delta("0", type="text_delta", text="a"),
        [(T.RAW, "content_block_delta:text_delta")],
    ),
    (
        "index a list",
        delta([0], type="text_delta", text="a"),
        [(T.RAW, "content_block_delta:text_delta")],
    ),
    (
        "no index",
        {"type": "content_block_delta", "delta": {"type": "text_delta", "text": "a"}},
        [(T.RAW, "content_block_delta:text_delta")],
    ),
    ("block never opened", text(9, "a"), [(T.RAW, "content_block_delta:text_delta")]),
    ("text delta of a thinking block", text(2, "a"), [(T.RAW, "content_block_delta:text_delta")]),
    ("text delta of a tool block", text(1, "a"), [(T.RAW, "content_block_delta:text_delta")]),
    (
        "arguments of a text block",
        json_delta(0, "{}"),
        [(T.RAW, "content_block_delta:input_json_delta")],
    ),
    (
        "unknown delta",
        delta(0, type="sparkle_delta"),
        [(T.RAW, "content_block_delta:sparkle_delta")],
    ),
    ("delta type a number", delta(0, type=5, text="a"), [(T.RAW, "content_block_delta:")]),
    ("delta type a list", delta(0, type=["text_delta"]), [(T.RAW, "content_block_delta:")]),
    ("untyped delta", delta(0, text="a"), [(T.RAW, "content_block_delta:")]),
    (
        "delta a string",
        {"type": "content_block_delta", "index": 0, "delta": "a"},
        [(T.RAW, "content_block_delta:")],
    ),
    ("no delta", {"type": "content_block_delta", "index": 0}, [(T.RAW, "content_block_delta:")]),
]


@pytest.mark.parametrize(
    ("odd", "expected"), [m[1:] for m in NEAR_MISSES], ids=[m[0] for m in NEAR_MISSES]
)
def test_near_misses_of_the_fast_path_give_their_own_events(
    odd: dict[str, Any], expected: list[tuple[ChatEventType, Any]]
) -> None:
    before = len(run(OPEN_BLOCKS)[0])
    events = assert_same_as_general([*OPEN_BLOCKS, odd, *CLOSE_BLOCKS])
    found = events[before : before + len(expected)]
    assert [(e.type, e.raw_type if e.type is T.RAW else e.text) for e in found] == expected
    assert len(run([*OPEN_BLOCKS, odd])[0]) == before + len(expected)


# The near misses that take the fast path all the same: their handler skips what is not there.
FAST_TOO = {
    "text",
    "empty text",
    "server arguments",
    "empty server arguments",
    "server arguments not a string",
    "tool arguments",
    "thinking",
    "signature",
    "citation",
    "citation not an object",
}


@pytest.mark.parametrize(
    ("name", "odd"), [m[:2] for m in NEAR_MISSES], ids=[m[0] for m in NEAR_MISSES]
)
def test_which_near_misses_go_the_general_way(
    name: str, odd: dict[str, Any], general_calls: list[Any]
) -> None:
    run([*OPEN_BLOCKS, odd])
    assert general_calls == [*OPEN_BLOCKS, *([] if name in FAST_TOO else [odd])]


def test_a_delta_after_its_block_stopped_goes_the_general_way(general_calls: list[Any]) -> None:
    frames = [message_start(), block_start(0, TEXT_BLOCK), block_stop(0), text(0, "late")]
    events, _ = run(frames)
    assert general_calls == frames
    assert (events[-1].type, events[-1].raw_type) == (T.RAW, "content_block_delta:text_delta")


# ---------------------------------------------------------------- recorded corpus


def _corpus_frames(path: Path) -> list[Any]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def _replay_file(path: Path) -> tuple[list[ChatEvent], ParseStage]:
    return run(_corpus_frames(path))


def _assert_well_formed(events: list[ChatEvent], ctx: ParseStage) -> None:
    assert ctx.failure is None
    assert ctx.finished
    open_blocks: set[tuple[str, int]] = set()
    for event in events:
        group = event.type.group.name
        if event.type in (T.TEXT_START, T.THINKING_START):
            assert (group, event.index) not in open_blocks
            open_blocks.add((group, event.index))
        elif event.type in (T.TEXT_DELTA, T.THINKING_DELTA):
            assert (group, event.index) in open_blocks
        elif event.type in (T.TEXT_END, T.THINKING_END):
            open_blocks.remove((group, event.index))
    assert not open_blocks
    starts = {e.tool_call_id for e in of(events, T.TOOL_CALL_START)}
    assert starts == {e.tool_call_id for e in of(events, T.TOOL_CALL_END)}


@pytest.mark.parametrize("path", corpus_paths("anthropic"))
def test_corpus_recording(path: Path) -> None:
    expected = orjson.loads(path.with_name(path.stem + ".expected.json").read_bytes())
    events, ctx = _replay_file(path)
    _assert_well_formed(events, ctx)
    if "text" not in expected:
        assert "oracle_note" in expected
        return
    assert "".join(e.text or "" for e in of(events, T.TEXT_DELTA)) == expected["text"]
    assert "".join(e.text or "" for e in of(events, T.THINKING_DELTA)) == expected["thinking"]
    calls = [e.tool_call for e in of(events, T.TOOL_CALL_END) if e.tool_call is not None]
    assert [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in calls] == expected[
        "tool_calls"
    ]
    # The oracle lists server_tool_use blocks only; MCP calls are server tools here too.
    server = [e.tool_call for e in of(events, T.SERVER_TOOL_START) if e.sub_type != "mcp"]
    assert [{"id": c.id, "name": c.name} for c in server if c is not None] == expected[
        "server_tool_calls"
    ]
    usage = last_usage(events)
    assert {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
    } == expected["usage"]
    assert ctx.finish_reason == expected["finish_reason"]


@pytest.mark.parametrize("path", corpus_paths("anthropic"))
def test_corpus_recording_on_the_fast_path_is_as_on_the_general_path(path: Path) -> None:
    assert_same_as_general(_corpus_frames(path))
