"""Google's Interactions API (``/v1beta/interactions``): SSE events named by their
``event_type``, written by
:class:`~solon_events.adapters.provider_formats.google_interactions.GoogleInteractionsEncoder`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .base import FormatWire, RequestView, content_text, flat_function_tools, trailing_results

__all__ = ["GoogleInteractionsWire"]


class GoogleInteractionsWire(FormatWire):
    """The streamed ``POST /v1beta/interactions``."""

    framing = "sse"  # the encoder names each event by its event_type
    format = "google-interactions"

    @classmethod
    def read_request(cls, body: Mapping[str, Any]) -> RequestView:
        """``input`` (a text, a content, or a list of steps or contents: the
        ``function_result`` steps at its end are the tool results); ``tools`` of
        ``type: function``."""
        given = body.get("input")
        if isinstance(given, str):
            user_text, steps = given, []
        else:
            items = [given] if isinstance(given, Mapping) else given or ()
            steps = [s for s in items if isinstance(s, Mapping)]
            user_text = next((text for s in reversed(steps) if (text := _user_text(s))), "")
        return RequestView(
            model=str(body.get("model") or ""),
            user_text=user_text,
            tool_results=trailing_results(steps, "function_result", "result"),
            tools=flat_function_tools(body.get("tools")),
        )


def _user_text(step: Mapping[str, Any]) -> str:
    """The text of a ``user_input`` step (or a user turn), or of a bare ``text`` item."""
    if step.get("type") == "user_input" or step.get("role") == "user":
        return content_text(step.get("content"))
    return str(step["text"]) if step.get("type") == "text" and "text" in step else ""
