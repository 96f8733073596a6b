"""Ollama ``/api/chat``: the request side; the stream (NDJSON) is written by
:class:`~solon_events.adapters.provider_formats.ollama.OllamaEncoder`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .base import FormatWire, RequestView
from .openai_chat import read_chat_messages

__all__ = ["OllamaWire"]


class OllamaWire(FormatWire):
    """The ``/api/chat`` stream (NDJSON)."""

    framing = "ndjson"
    format = "ollama"

    @classmethod
    def read_request(cls, body: Mapping[str, Any]) -> RequestView:
        """Messages with ``role: tool`` results and OpenAI-style ``tools``; a trailing
        assistant message is continued (a prefill), as Ollama does."""
        return read_chat_messages(body)
