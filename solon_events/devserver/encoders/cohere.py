"""Cohere's Chat API v2 (``/v2/chat``): SSE events named by their ``type``, written by
:class:`~solon_events.adapters.provider_formats.cohere.CohereEncoder`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .base import FormatWire, RequestView, content_text
from .openai_chat import read_chat_messages

__all__ = ["CohereWire"]


class CohereWire(FormatWire):
    """The ``/v2/chat`` stream."""

    framing = "sse-event"
    format = "cohere"

    @classmethod
    def read_request(cls, body: Mapping[str, Any]) -> RequestView:
        """``messages`` with ``role: tool`` results (text, or ``document`` items whose
        ``data`` is the result), ``tools`` of ``type: function`` (as Chat Completions)."""
        messages = [
            {**m, "content": _tool_content(m.get("content"))}
            if isinstance(m, Mapping) and m.get("role") == "tool"
            else m
            for m in body.get("messages") or ()
        ]
        return read_chat_messages({**body, "messages": messages})


def _tool_content(content: Any) -> str:
    """A tool result's text: its text items and its documents' ``data``."""
    if not isinstance(content, list):
        return content_text(content)
    texts = []
    for item in content:
        document = item.get("document") if isinstance(item, Mapping) else None
        if isinstance(document, Mapping):
            item = document.get("data", document)
        texts.append(content_text(item))
    return "".join(texts)
