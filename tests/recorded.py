"""Provider bodies made offline by the embedded provider's encoders: recorded bytes for
tests that need no server (a ReplayTransport plays them)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from solon_events.devserver import ROUTES
from solon_events.devserver.encoders.base import RequestView, ToolDecl
from solon_events.devserver.scenarios import plan
from solon_events.devserver.turns import (
    Cut,
    Finish,
    KeepAlive,
    Pause,
    Ping,
    RawBytes,
    Script,
    Text,
    TurnUsage,
    WaitGate,
)

__all__ = ["DIALECTS", "ENDPOINTS", "WIRES", "body_of", "text_body", "weather_bodies"]

WIRES = {dialect: wire for _path, wire, dialect in ROUTES}
DIALECTS = tuple(WIRES)
ENDPOINTS = {
    "openai": "/v1/chat/completions",
    "anthropic": "/v1/messages",
    "openai-responses": "/v1/responses",
    "gemini": "/v1beta",
    "ollama": "/api/chat",
}
"""Each dialect's endpoint on the embedded provider (Gemini's base URL takes the model)."""
WEATHER_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}


def body_of(dialect: str, script: Script, model: str = "recorded") -> bytes:
    """The bytes ``dialect``'s provider sends for ``script``, as the embedded provider acts it
    out (pauses and gates take no time; a cut ends the body)."""
    wire = WIRES[dialect](model, script.usage)
    out: list[bytes] = []
    for part in script.parts:
        if isinstance(part, Cut):
            break
        if isinstance(part, RawBytes):
            out.append(part.data)
        elif isinstance(part, KeepAlive):
            out.append(wire.keep_alive_bytes())
        elif not isinstance(part, (Pause, WaitGate)):
            frames = wire.ping() if isinstance(part, Ping) else wire.encode(part)
            out += [wire.frame_bytes(frame) for frame in frames]
    return b"".join(out)


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
