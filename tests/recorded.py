"""Provider bodies made offline by the embedded provider's encoders: recorded bytes for
tests that need no server (a ReplayTransport plays them)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from solon_events.devserver import ROUTES
from solon_events.devserver.encoders.base import RequestView, ToolDecl
from solon_events.devserver.scenarios import plan
from solon_events.devserver.turns import Finish, Pause, Script, Text, TurnUsage, WaitGate

__all__ = ["DIALECTS", "WIRES", "body_of", "text_body", "weather_bodies"]

WIRES = {dialect: wire for _path, wire, dialect in ROUTES}
DIALECTS = tuple(WIRES)
WEATHER_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}


def body_of(dialect: str, script: Script, model: str = "recorded") -> bytes:
    """The bytes ``dialect``'s provider sends for ``script`` (pauses and gates dropped)."""
    wire = WIRES[dialect](model, script.usage)
    return b"".join(
        wire.frame_bytes(frame)
        for part in script.parts
        if not isinstance(part, (Pause, WaitGate))
        for frame in wire.encode(part)
    )


def text_body(dialect: str, *deltas: str) -> bytes:
    """A complete answer made of ``deltas``."""
    parts: list[Any] = [Text(delta) for delta in deltas]
    return body_of(dialect, Script([*parts, Finish("stop")], TurnUsage(prompt=5, completion=3)))


def weather_bodies(dialect: str, result: str) -> tuple[bytes, bytes]:
    """The weather scenario's two steps: a call of ``get_weather``, then the answer quoting
    ``result``."""
    tool = ToolDecl("get_weather", WEATHER_SCHEMA)
    first = plan(RequestView(model="weather", tools=(tool,)))
    second = plan(RequestView(model="weather", tools=(tool,), tool_results=(result,)))
    assert isinstance(first, Script) and isinstance(second, Script)
    return body_of(dialect, first), body_of(dialect, second)
