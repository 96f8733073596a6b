"""Anthropic Messages: the request side; the stream is written by
:class:`~solon_events.adapters.provider_formats.anthropic.AnthropicEncoder`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .base import FormatWire, RequestView, ToolDecl, content_text

__all__ = ["AnthropicWire"]


class AnthropicWire(FormatWire):
    """The ``/v1/messages`` stream."""

    framing = "sse-event"
    format = "anthropic"
    stream_error_status = 503

    @classmethod
    def read_request(cls, body: Mapping[str, Any]) -> RequestView:
        """``tool_result`` blocks of the last user turn; tools with an ``input_schema``; a
        trailing assistant turn's text, continued (a prefill)."""
        messages = [m for m in body.get("messages") or () if isinstance(m, Mapping)]
        results: list[str] = []
        if messages and messages[-1].get("role") == "user":
            content = messages[-1].get("content")
            blocks = content if isinstance(content, list) else ()
            results = [
                content_text(b.get("content"))
                for b in blocks
                if isinstance(b, Mapping) and b.get("type") == "tool_result"
            ]
        user_text = next(
            (
                text
                for m in reversed(messages)
                if m.get("role") == "user" and (text := _user_text(m.get("content")))
            ),
            "",
        )
        tools = tuple(
            ToolDecl(str(t["name"]), t.get("input_schema") or {})
            for t in body.get("tools") or ()
            if isinstance(t, Mapping) and t.get("name") and "input_schema" in t
        )
        last = messages[-1] if messages else {}
        return RequestView(
            model=str(body.get("model") or ""),
            user_text=user_text,
            tool_results=tuple(results),
            tools=tools,
            prefill=_user_text(last.get("content")) if last.get("role") == "assistant" else "",
        )


def _user_text(content: Any) -> str:
    if isinstance(content, list):
        content = [b for b in content if isinstance(b, Mapping) and b.get("type") == "text"]
    return content_text(content)
