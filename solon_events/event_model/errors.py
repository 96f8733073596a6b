"""The errors of solon_events: every failure a subscriber sees is a :class:`ChatError`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "ChatConnectionError",
    "ChatError",
    "ChatHttpError",
    "ChatProtocolError",
    "ChatTimeoutError",
    "StructuredOutputError",
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
    """The provider answered with an HTTP error status (``status``) and its own message.

    ``retry_after`` is the wait, in seconds, the provider asked for (``Retry-After`` or
    ``retry-after-ms``), or None; ``headers`` are the response's headers. ``hint`` is what
    the library adds after the provider's message (a 404 for a URL of the wrong shape: what
    the dialect's URLs look like).
    """

    def __init__(
        self,
        status: int,
        provider_message: str | None = None,
        *,
        provider_error: Mapping[str, Any] | None = None,
        url: str | None = None,
        retry_after: float | None = None,
        headers: Mapping[str, str] | None = None,
        hint: str | None = None,
    ) -> None:
        self.status = status
        self.provider_message = provider_message
        self.url = url
        self.retry_after = retry_after
        self.headers: Mapping[str, str] = dict(headers or {})
        detail = f": {provider_message}" if provider_message else ""
        where = f" from {url}" if url else ""
        after = f" ({hint})" if hint else ""
        super().__init__(f"HTTP {status}{where}{detail}{after}", provider_error=provider_error)


class ChatTimeoutError(ChatError, TimeoutError):
    """A time budget ran out: ``budget`` names which (``"timeout"``, ``"idle_timeout"`` or
    ``"total_timeout"``) and ``frames_received`` how many frames had been decoded."""

    def __init__(
        self, message: str, *, budget: str | None = None, frames_received: int | None = None
    ) -> None:
        super().__init__(message)
        self.budget = budget
        self.frames_received = frames_received


class ChatConnectionError(ChatError):
    """The request could not be sent or its response could not be read (connection
    refused or reset, DNS failure, a body cut off by the network)."""


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


class StructuredOutputError(ChatError):
    """A structured answer (``prompt(..., output=...)``) that did not come in its shape.

    ``raw`` is the answer's text as it came; ``path`` where it does not fit, as a JSON path
    (``"$.cities[0].name"``; ``"$"`` for the whole value; None when the text is not JSON
    at all); ``reason`` what is wrong there; ``refusal`` the model's refusal, when it
    refused instead of answering; ``attempts`` how many answers were asked for (the first
    and its retries). The failed response, with its usage, is ``partial_response``.
    """

    def __init__(
        self,
        message: str,
        *,
        raw: str = "",
        path: str | None = None,
        reason: str = "",
        refusal: str | None = None,
        attempts: int = 1,
    ) -> None:
        super().__init__(message)
        self.raw = raw
        self.path = path
        self.reason = reason
        self.refusal = refusal
        self.attempts = attempts


class ProviderError(ChatError):
    """The provider reported a failure inside the stream (an error frame or event)."""
