"""OpenAI Chat Completions: the request side (``messages`` and ``tools``, shared with
Ollama); the stream is written by
:class:`~solon_events.adapters.provider_formats.openai_chat.OpenAIChatEncoder`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from ..turns import Content
from .base import (
    FormatWire,
    Frame,
    RequestView,
    ToolDecl,
    content_text,
)

__all__ = ["OpenAIChatWire", "read_chat_messages"]


def read_chat_messages(body: Mapping[str, Any]) -> RequestView:
    """The view of a ``messages`` + ``tools`` body (Chat Completions and Ollama)."""
    messages = [m for m in body.get("messages") or () if isinstance(m, Mapping)]
    results: list[str] = []
    for message in reversed(messages):
        if message.get("role") != "tool":
            break
        results.insert(0, content_text(message.get("content")))
    user_text = next(
        (content_text(m.get("content")) for m in reversed(messages) if m.get("role") == "user"),
        "",
    )
    return RequestView(
        model=str(body.get("model") or ""),
        user_text=user_text,
        tool_results=tuple(results),
        tools=tuple(_function_tools(body.get("tools") or ())),
    )


def _function_tools(tools: Iterable[Any]) -> Iterable[ToolDecl]:
    for tool in tools:
        function = tool.get("function") if isinstance(tool, Mapping) else None
        if isinstance(function, Mapping) and function.get("name"):
            yield ToolDecl(str(function["name"]), function.get("parameters") or {})


class OpenAIChatWire(FormatWire):
    """The ``/v1/chat/completions`` stream."""

    framing = "sse"
    format = "openai"

    @classmethod
    def read_request(cls, body: Mapping[str, Any]) -> RequestView:
        """Messages with ``role: tool`` results, ``tools`` of ``type: function``. The usage
        chunk is sent unless ``stream_options.include_usage`` is false (what a compatible
        server that sends no usage looks like; OpenAI itself needs it true)."""
        options = body.get("stream_options")
        refused = isinstance(options, Mapping) and options.get("include_usage") is False
        return attrs.evolve(read_chat_messages(body), include_usage=not refused)

    def encode(self, part: Content) -> list[Frame]:
        """The encoder's payloads, the usage chunk (``choices: []``) left out when the
        request refused it."""
        frames = super().encode(part)
        if self.send_usage:
            return frames
        return [f for f in frames if not (isinstance(f, Mapping) and f.get("choices") == [])]
