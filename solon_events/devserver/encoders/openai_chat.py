"""OpenAI Chat Completions: the request side (``messages`` and ``tools``, shared with
Ollama); the stream is written by
:class:`~solon_events.adapters.provider_formats.openai_chat.OpenAIChatEncoder`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from .base import (
    FormatWire,
    RequestView,
    ToolDecl,
    content_text,
)

if TYPE_CHECKING:
    from ...adapters.provider_formats import OpenAIChatEncoder

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
    encoder: OpenAIChatEncoder

    @classmethod
    def read_request(cls, body: Mapping[str, Any]) -> RequestView:
        """Messages with ``role: tool`` results, ``tools`` of ``type: function``. The usage
        chunk is sent unless ``stream_options.include_usage`` is false (what a compatible
        server that sends no usage looks like; OpenAI itself needs it true)."""
        options = body.get("stream_options")
        refused = isinstance(options, Mapping) and options.get("include_usage") is False
        return attrs.evolve(read_chat_messages(body), include_usage=not refused)

    @property
    def send_usage(self) -> bool:
        """Whether the stream ends with its usage chunk (``choices: []``): the encoder's
        ``include_usage``, which a request's ``stream_options.include_usage: false`` turns
        off."""
        return self.encoder.include_usage

    @send_usage.setter
    def send_usage(self, value: bool) -> None:
        self.encoder.include_usage = value
