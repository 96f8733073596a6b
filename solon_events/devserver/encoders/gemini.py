"""Gemini ``streamGenerateContent?alt=sse``: the request side; the stream is written by
:class:`~solon_events.adapters.provider_formats.gemini.GeminiEncoder` (a script's
``streamed`` tool calls as ``partialArgs`` pieces).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..turns import Content, ToolCallPart
from .base import (
    FormatWire,
    Frame,
    RequestView,
    ToolDecl,
    content_text,
)

__all__ = ["GeminiWire"]


class GeminiWire(FormatWire):
    """The ``/v1beta/models/{model}:streamGenerateContent`` stream."""

    framing = "sse-crlf"
    format = "gemini"
    stream_error_status = 503

    def encode(self, part: Content) -> list[Frame]:
        """As every format does; a ``streamed`` call's arguments as ``partialArgs``."""
        if isinstance(part, ToolCallPart):
            self.encoder.stream_arguments = part.streamed  # type: ignore[attr-defined]
        return super().encode(part)

    @classmethod
    def read_request(cls, body: Mapping[str, Any]) -> RequestView:
        """``functionResponse`` parts of the last content; ``functionDeclarations``."""
        contents = [c for c in body.get("contents") or () if isinstance(c, Mapping)]
        results: list[str] = []
        if contents:
            results = [
                _response_text(part["functionResponse"])
                for part in contents[-1].get("parts") or ()
                if isinstance(part, Mapping) and isinstance(part.get("functionResponse"), Mapping)
            ]
        user_text = next(
            (
                text
                for c in reversed(contents)
                if c.get("role", "user") == "user" and (text := _text_parts(c.get("parts")))
            ),
            "",
        )
        return RequestView(
            model=str(body.get("model") or ""),
            user_text=user_text,
            tool_results=tuple(results),
            tools=tuple(_declarations(body.get("tools") or ())),
        )


def _text_parts(parts: Any) -> str:
    return "".join(
        p["text"]
        for p in parts or ()
        if isinstance(p, Mapping) and isinstance(p.get("text"), str) and not p.get("thought")
    )


def _response_text(function_response: Mapping[str, Any]) -> str:
    response = function_response.get("response")
    if isinstance(response, Mapping):
        for key in ("result", "output", "content"):
            if key in response:
                return content_text(response[key])
        if len(response) == 1:
            return content_text(next(iter(response.values())))
    return content_text(response)


def _declarations(tools: Any) -> list[ToolDecl]:
    found: list[ToolDecl] = []
    for tool in tools:
        if not isinstance(tool, Mapping):
            continue
        for decl in tool.get("functionDeclarations") or tool.get("function_declarations") or ():
            if isinstance(decl, Mapping) and decl.get("name"):
                schema = decl.get("parameters") or decl.get("parametersJsonSchema") or {}
                found.append(ToolDecl(str(decl["name"]), schema))
    return found
