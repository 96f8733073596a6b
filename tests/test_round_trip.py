"""The devserver's encoders against the dialects, as one round-trip table, without HTTP.

Each row is a script of abstract parts (text, thinking, a tool call, a finish, an in-stream
error); each column a wire format. The embedded provider's encoder turns the script into
the bytes it would send, and the dialect of the same wire reads them back through
:func:`~solon_events.replay`: what comes out must be what went in, in every format (as h11
runs one table of cases both ways, ``h11/tests/test_io.py``).
"""

from __future__ import annotations

from typing import Any

import pytest
from wire_messages import read_back

from solon_events import ChatError, ChatEventType
from solon_events.devserver import ROUTES
from solon_events.devserver.encoders import Wire
from solon_events.devserver.turns import (
    Content,
    Finish,
    StreamError,
    Text,
    Thinking,
    ToolCallPart,
    TurnUsage,
)

WIRES: dict[str, type[Wire]] = {dialect: wire for _path, wire, dialect in ROUTES}
"""Every wire format the embedded provider speaks, by the name of the dialect that reads it."""

USAGE = TurnUsage(prompt=7, completion=5)

# name -> (the script, the text, the thinking, the tool calls as (name, arguments)).
SCRIPTS: dict[str, tuple[list[Content], str, str, list[tuple[str, dict[str, Any]]]]] = {
    "text": (
        [Text("Hel"), Text("lo, "), Text("wörld 🌍"), Finish("stop")],
        "Hello, wörld 🌍",
        "",
        [],
    ),
    "thinking then text": (
        [Thinking("Let me "), Thinking("see."), Text("Yes."), Finish("stop")],
        "Yes.",
        "Let me see.",
        [],
    ),
    "a tool call": (
        [ToolCallPart("get_weather", ('{"city": ', '"Paris"}')), Finish("tool_calls")],
        "",
        "",
        [("get_weather", {"city": "Paris"})],
    ),
    "text then two tool calls": (
        [
            Text("Checking."),
            ToolCallPart("get_weather", ('{"city": "Paris"}',)),
            ToolCallPart("get_time", ("{}",)),
            Finish("tool_calls"),
        ],
        "Checking.",
        "",
        [("get_weather", {"city": "Paris"}), ("get_time", {})],
    ),
}


def encoded(dialect: str, script: list[Content]) -> bytes:
    """The bytes the embedded provider sends for ``script`` in ``dialect``'s wire format."""
    wire = WIRES[dialect]("test-model", USAGE)
    return b"".join(wire.frame_bytes(frame) for part in script for frame in wire.encode(part))


@pytest.mark.parametrize("dialect", list(WIRES))
@pytest.mark.parametrize("name", list(SCRIPTS))
def test_what_the_encoder_sends_the_dialect_reads_back(dialect: str, name: str) -> None:
    script, text, thinking, calls = SCRIPTS[name]
    events, errors = read_back(dialect, encoded(dialect, script))
    assert errors == []
    end = events[-1]
    assert end.type is ChatEventType.RESPONSE_END
    response = end.response
    assert response.text == text
    assert response.thinking == thinking
    assert [(call.name, call.arguments) for call in response.tool_calls] == calls
    assert response.finish_reason is not None
    assert response.usage.prompt_tokens == USAGE.prompt
    assert response.usage.completion_tokens == USAGE.completion
    deltas = "".join(e.text for e in events if e.type is ChatEventType.TEXT_DELTA)
    assert deltas == text  # each piece of content sent once


@pytest.mark.parametrize("dialect", list(WIRES))
def test_an_in_stream_error_is_read_back_as_a_failure_after_the_text(dialect: str) -> None:
    events, errors = read_back(dialect, encoded(dialect, [Text("partial"), StreamError("boom")]))
    assert len(errors) == 1 and isinstance(errors[0], ChatError)
    assert "boom" in str(errors[0])
    error_event = events[-1]
    assert error_event.type is ChatEventType.ERROR
    assert error_event.response.text == "partial"
