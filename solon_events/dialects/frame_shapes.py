"""What each built-in dialect's frames look like: :func:`claims_frame`.

Each built-in dialect's frames have a shape no other dialect's have: Anthropic's a
``type`` such as ``message_start`` or ``content_block_delta``, the Responses API's a
``type`` starting ``response.``, Chat Completions' a ``choices`` list (or
``object: "chat.completion.chunk"``), Gemini's ``candidates`` (or ``usageMetadata``,
``promptFeedback``), Ollama's ``message`` or ``done`` beside ``created_at``, Bedrock's a
single key naming a ConverseStream event (``contentBlockDelta``, ...) or exception, Cohere's
a hyphenated ``type`` (``message-start``, ``content-delta``, ...), the Interactions API's an
``event_type`` starting ``interaction.`` or ``step.`` (or its ``error`` event).
:meth:`~solon_events.ChatDialect.claims` asks this module; :mod:`~solon_events.dialects.sniff`
asks every registered dialect.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["claims_frame"]

_ANTHROPIC_TYPES = frozenset(
    {
        "message_start",
        "message_delta",
        "message_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "ping",
    }
)


def _error(frame: Mapping[str, Any], key: str) -> bool:
    """Whether ``frame`` is ``{"error": {..., key: ...}}``."""
    error = frame.get("error")
    return isinstance(error, dict) and key in error


def _anthropic(frame: Mapping[str, Any]) -> bool:
    kind = frame.get("type")
    return (isinstance(kind, str) and kind in _ANTHROPIC_TYPES) or (
        kind == "error" and isinstance(frame.get("error"), dict)
    )


def _openai_responses(frame: Mapping[str, Any]) -> bool:
    kind = frame.get("type")
    if kind == "error":  # the Responses API's error event: its fields at the top
        return isinstance(frame.get("message"), str) and "error" not in frame
    return isinstance(kind, str) and kind.startswith("response.")


def _openai(frame: Mapping[str, Any]) -> bool:
    if "type" in frame:
        return False
    choices = frame.get("choices")
    return (
        frame.get("object") == "chat.completion.chunk"
        or isinstance(choices, list)
        or _error(frame, "type")
    )


def _gemini(frame: Mapping[str, Any]) -> bool:
    return (
        "candidates" in frame
        or "usageMetadata" in frame
        or "promptFeedback" in frame
        or _error(frame, "status")
    )


def _ollama(frame: Mapping[str, Any]) -> bool:
    return ("created_at" in frame and ("message" in frame or "done" in frame)) or (
        len(frame) == 1 and isinstance(frame.get("error"), str)
    )


_BEDROCK_EVENTS = frozenset(
    {
        "messageStart",
        "contentBlockStart",
        "contentBlockDelta",
        "contentBlockStop",
        "messageStop",
        "metadata",
    }
)


def _bedrock(frame: Mapping[str, Any]) -> bool:
    if len(frame) != 1:
        return False
    ((key, value),) = frame.items()
    return isinstance(value, dict) and (key in _BEDROCK_EVENTS or key.endswith("Exception"))


_COHERE_TYPES = frozenset(
    {
        "message-start",
        "content-start",
        "content-delta",
        "content-end",
        "tool-plan-delta",
        "tool-call-start",
        "tool-call-delta",
        "tool-call-end",
        "citation-start",
        "citation-end",
        "message-end",
        "debug",
    }
)


def _cohere(frame: Mapping[str, Any]) -> bool:
    kind = frame.get("type")
    return isinstance(kind, str) and kind in _COHERE_TYPES


def _google_interactions(frame: Mapping[str, Any]) -> bool:
    kind = frame.get("event_type")
    if kind == "error":
        return isinstance(frame.get("error"), dict)
    return isinstance(kind, str) and kind.startswith(("interaction.", "step."))


_SHAPES: dict[str, Callable[[Mapping[str, Any]], bool]] = {
    "anthropic": _anthropic,
    "openai-responses": _openai_responses,
    "openai": _openai,
    "gemini": _gemini,
    "ollama": _ollama,
    "bedrock": _bedrock,
    "cohere": _cohere,
    "google-interactions": _google_interactions,
}


def claims_frame(dialect_name: str, frame: Any) -> bool:
    """Whether the decoded ``frame`` has the shape of the built-in dialect ``dialect_name``'s
    frames (False for a name that is not a built-in dialect's)."""
    shape = _SHAPES.get(dialect_name)
    if isinstance(frame, list) and len(frame) == 1:  # Gemini's array form, one per frame
        frame = frame[0]
    return shape is not None and isinstance(frame, dict) and shape(frame)
