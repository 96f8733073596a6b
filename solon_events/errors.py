"""The errors of solon_events: every failure a subscriber sees is a :class:`ChatError`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "ChatError",
    "ChatHttpError",
    "ChatProtocolError",
    "ChatTimeoutError",
    "ToolCallError",
]


class ChatError(Exception):
    """Base class of every failure of a chat response.

    ``provider_error`` holds the provider's own error fields when the failure was
    reported by the provider (an error frame or an error body), else an empty mapping.
    ``partial_response`` holds what the failed step had received before the failure
    (a :class:`~solon_events.ChatResponse`), when the pipeline knows it.
    """

    def __init__(self, message: str, *, provider_error: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.provider_error: Mapping[str, Any] = dict(provider_error or {})
        self.partial_response: Any = None

    def __str__(self) -> str:
        return self.message


class ChatHttpError(ChatError):
    """The provider answered with an HTTP error status (``status``) and its own message."""

    def __init__(
        self,
        status: int,
        provider_message: str | None = None,
        *,
        provider_error: Mapping[str, Any] | None = None,
        url: str | None = None,
    ) -> None:
        self.status = status
        self.provider_message = provider_message
        self.url = url
        detail = f": {provider_message}" if provider_message else ""
        where = f" from {url}" if url else ""
        super().__init__(f"HTTP {status}{where}{detail}", provider_error=provider_error)


class ChatTimeoutError(ChatError, TimeoutError):
    """A time budget ran out (``budget`` names which: first frame, idle or total)."""

    def __init__(self, message: str, *, budget: str | None = None) -> None:
        super().__init__(message)
        self.budget = budget


class ChatProtocolError(ChatError):
    """The bytes are not a model stream: not SSE/JSON, malformed, truncated or too large."""


class ToolCallError(ChatError):
    """A tool could not be called: unknown tool, bad arguments, or the tool raised."""

    def __init__(
        self, message: str, *, tool_name: str | None = None, tool_call_id: str | None = None
    ) -> None:
        super().__init__(message)
        self.tool_name = tool_name
        self.tool_call_id = tool_call_id


class ProviderError(ChatError):
    """The provider reported a failure inside the stream (an error frame or event)."""
