"""The request the dialects' request tests build from: model "m", the user saying "hi"."""

from __future__ import annotations

from typing import Any

from solon_events import ChatRequest, ToolSpec, UserMessage

__all__ = ["CITY_SCHEMA", "WEATHER", "hi"]

CITY_SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
"""A tool's parameters: one required string, ``city``."""
WEATHER = ToolSpec(name="weather", description="Current weather.", parameters=CITY_SCHEMA)
"""A tool with a description and parameters."""


def hi(**fields: Any) -> ChatRequest:
    """A request to model ``"m"`` whose one message is the user's ``"hi"``, with ``fields``
    (tools, options, ...)."""
    return ChatRequest(model="m", messages=[UserMessage(text="hi")], **fields)
