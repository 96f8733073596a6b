"""OpenAI Responses: the request side; the stream is written by
:class:`~solon_events.adapters.provider_formats.openai_responses.OpenAIResponsesEncoder`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .base import (
    FormatWire,
    RequestView,
    content_text,
    flat_function_tools,
    trailing_results,
)

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
        user_text = next(
            (content_text(i.get("content")) for i in reversed(items) if i.get("role") == "user"),
            "",
        )
        return RequestView(
            model=str(body.get("model") or ""),
            user_text=user_text,
            tool_results=trailing_results(items, "function_call_output", "output"),
            tools=flat_function_tools(body.get("tools")),
        )
