"""OpenAI Responses: the request side; the stream is written by
:class:`~solon_events.adapters.provider_formats.openai_responses.OpenAIResponsesEncoder`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .base import FormatWire, RequestView, ToolDecl, content_text

__all__ = ["OpenAIResponsesWire"]


class OpenAIResponsesWire(FormatWire):
    """The ``/v1/responses`` stream."""

    framing = "sse-event"
    format = "openai-responses"

    @classmethod
    def read_request(cls, body: Mapping[str, Any]) -> RequestView:
        """Trailing ``function_call_output`` items; tools of ``type: function``."""
        raw_input = body.get("input")
        items = (
            [{"role": "user", "content": raw_input}]
            if isinstance(raw_input, str)
            else [i for i in raw_input or () if isinstance(i, Mapping)]
        )
        results: list[str] = []
        for item in reversed(items):
            if item.get("type") != "function_call_output":
                break
            results.insert(0, content_text(item.get("output")))
        user_text = next(
            (content_text(i.get("content")) for i in reversed(items) if i.get("role") == "user"),
            "",
        )
        tools = tuple(
            ToolDecl(str(t["name"]), t.get("parameters") or {})
            for t in body.get("tools") or ()
            if isinstance(t, Mapping) and t.get("type") == "function" and t.get("name")
        )
        return RequestView(
            model=str(body.get("model") or ""),
            user_text=user_text,
            tool_results=tuple(results),
            tools=tools,
        )
