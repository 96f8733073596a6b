"""What every dialect's parsing shares: plain JSON values, a provider's error message, usage,
an image format's mime type."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..event_model.errors import ChatProtocolError
from ..event_model.results import Usage, new_usage

__all__ = [
    "Raw",
    "expect_object",
    "image_mime",
    "make_usage",
    "output_by_total",
    "plain_json",
    "provider_error_message",
    "token_count",
]

Raw = Mapping[str, Any]
"""A JSON object as the provider sent it: a frame, or an object in one (a payload, a
block's start, a delta)."""


def expect_object(frame: Any) -> dict[str, Any]:
    """``frame`` when it is a JSON object; else a ChatProtocolError (the stage names the frame)."""
    if type(frame) is not dict:
        raise ChatProtocolError(f"expected a JSON object, got {type(frame).__name__}")
    return frame


def provider_error_message(body: Any) -> str | None:
    """The message of an error payload in any of the common shapes, or None.

    Understands ``{"error": {"message": ...}}``, ``{"error": "..."}``, ``{"message": ...}``
    and lists of those (Gemini sends a one-element list).
    """
    if isinstance(body, list) and body:
        return provider_error_message(body[0])
    if not isinstance(body, Mapping):
        return None
    error = body.get("error")
    if isinstance(error, Mapping):
        message = error.get("message") or error.get("type") or error.get("code")
        return str(message) if message is not None else None
    if isinstance(error, str) and error:
        return error
    for key in ("message", "detail", "error_message"):
        value = body.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def image_mime(fmt: Any, known: str | None = None) -> str:
    """The mime type of an image format a provider names (``"png"``, ``"jpeg"``, or a
    mime type already): ``fmt``, else ``known``, else PNG."""
    chosen = fmt if isinstance(fmt, str) and fmt else known or "png"
    return chosen if "/" in chosen else f"image/{chosen}"


def plain_json(value: Any) -> Any:
    """``value`` with every mapping made a dict and every tuple a list, recursively.

    For the JSON encoder (read-only mappings in tool schemas) and for payloads handed to
    :meth:`~solon_events.dialects.ChatDialect.parse_frame`, which only ever sees plain JSON
    values.
    """
    if isinstance(value, Mapping):
        return {key: plain_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_json(item) for item in value]
    return value


def token_count(value: Any) -> int:
    """A provider's token count: a non-negative JSON integer, which some SDKs write as
    ``12.0``; anything else (missing, negative, fractional, a bool) counts 0."""
    if type(value) is int:
        return value if value > 0 else 0
    if type(value) is float and value.is_integer() and value > 0:
        return int(value)
    return 0


def output_by_total(prompt: int, completion: int, thinking: int, total: int) -> int:
    """The output count (thinking included, the project's rule) that agrees with the total
    a server reported: ``completion`` as read, plus ``thinking`` when the server counted its
    thinking outside it (xAI's ``completion_tokens``: its total is prompt + completion +
    reasoning), less ``thinking`` when it was counted twice (a total of prompt + output
    alone); as read when there is no total, no thinking, or the total says neither."""
    if total and thinking and prompt + completion != total:
        if prompt + completion + thinking == total:
            return completion + thinking
        if prompt + completion - thinking == total and completion >= thinking:
            return completion - thinking
    return completion


def make_usage(
    *,
    prompt_tokens: int | None = 0,
    completion_tokens: int | None = 0,
    total_tokens: int | None = None,
    thinking_tokens: int | None = 0,
    cache_read_input_tokens: int | None = 0,
    cache_creation_input_tokens: int | None = 0,
    server_tool_use: Mapping[str, Any] | None = None,
    source: Any = None,
) -> Usage:
    """A :class:`Usage` from provider numbers, any of which may be missing (None).

    ``total_tokens`` defaults to prompt + completion when the provider gives none; when it
    gives one, ``completion_tokens`` is reconciled with it (:func:`output_by_total`).
    """
    prompt = prompt_tokens or 0
    completion = completion_tokens or 0
    if total_tokens and thinking_tokens:
        completion = output_by_total(prompt, completion, thinking_tokens, total_tokens)
    return new_usage(
        prompt,
        completion,
        total_tokens if total_tokens else prompt + completion,
        thinking_tokens or 0,
        cache_creation_input_tokens or 0,
        cache_read_input_tokens or 0,
        server_tool_use,
        source,
    )
