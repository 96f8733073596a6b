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
    """The view of a ``messages`` + ``tools`` body (Chat Completions and Ollama), a
    trailing assistant message's text as the prefill."""
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
    last = messages[-1] if messages else {}
    return RequestView(
        model=str(body.get("model") or ""),
        user_text=user_text,
        tool_results=tuple(results),
        tools=tuple(_function_tools(body.get("tools") or ())),
        prefill=content_text(last.get("content")) if last.get("role") == "assistant" else "",
    )


def _function_tools(tools: Iterable[Any]) -> Iterable[ToolDecl]:
    for tool in tools:
        function = tool.get("function") if isinstance(tool, Mapping) else None
        if isinstance(function, Mapping) and function.get("name"):
            yield ToolDecl(str(function["name"]), function.get("parameters") or {})


def _asks_to_continue(body: Mapping[str, Any]) -> bool:
    """Whether a compatible server is asked to continue the trailing assistant message
    (DeepSeek's and Mistral's ``prefix``, Qwen's ``partial``, vLLM's
    ``continue_final_message``)."""
    last = body["messages"][-1]
    return bool(last.get("prefix") or last.get("partial") or body.get("continue_final_message"))


class OpenAIChatWire(FormatWire):
    """The ``/v1/chat/completions`` stream."""

    framing = "sse"
    format = "openai"
    encoder: OpenAIChatEncoder

    @classmethod
    def read_request(cls, body: Mapping[str, Any]) -> RequestView:
        """Messages with ``role: tool`` results, ``tools`` of ``type: function``; a trailing
        assistant message continued only when marked so (``prefix``, ``partial``,
        ``continue_final_message``). The usage
        chunk is sent unless ``stream_options.include_usage`` is false (what a compatible
        server that sends no usage looks like; OpenAI itself needs it true)."""
        options = body.get("stream_options")
        refused = isinstance(options, Mapping) and options.get("include_usage") is False
        view = read_chat_messages(body)
        if view.prefill and not _asks_to_continue(body):
            view = attrs.evolve(view, prefill="")  # a turn of the history, answered after
        return attrs.evolve(view, include_usage=not refused)

    @property
    def send_usage(self) -> bool:
        """Whether the stream ends with its usage chunk (``choices: []``): the encoder's
        ``include_usage``, which a request's ``stream_options.include_usage: false`` turns
        off."""
        return self.encoder.include_usage

    @send_usage.setter
    def send_usage(self, value: bool) -> None:
        self.encoder.include_usage = value
