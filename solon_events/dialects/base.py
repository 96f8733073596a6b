"""The dialect interface, :class:`ChatDialect`, and the dialects known by name.

A dialect is a sans-I/O translator of one provider's wire format: it builds the provider's
HTTP request for a conversation and says what each decoded frame of the streamed answer
means, recording it on a :class:`~solon_events.dialects.context.ChatStreamContext`. The
parse stage owns the stream and acts on what the dialect records. The dialects guide's
"Writing a dialect" (docs/guides/dialects.rst) shows a whole one.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from ..event_model.messages import ChatRequest, OutputFormat, OutputMode
from ..wire.sse import Frame, StreamDecoder
from .context import ChatStreamContext
from .frame_shapes import claims_frame
from .output import prepared
from .reading import provider_error_message
from .request import Endpoint, HttpRequest

__all__ = [
    "ChatDialect",
    "ChatStreamContext",
    "FrameDecoder",
    "HttpRequest",
    "dialect_names",
    "get_dialect",
]
# ChatStreamContext and HttpRequest live in .context and .request; they are named here too
# because this is where the rest of the package has always found them.


class FrameDecoder(Protocol):
    """What decodes a response body into frames, sans-I/O: bytes in at any split."""

    def feed(self, chunk: bytes) -> Sequence[Frame | str | bytes]:
        """The frames the next chunk completed."""

    def close(self) -> Sequence[Frame | str | bytes]:
        """The frames pending at the end of the body; raises on a body cut short."""


class ChatDialect:
    """A provider's wire format: the request to send, and what the streamed frames mean.

    A subclass sets :attr:`name` and implements :meth:`request_for` (or
    :meth:`build_request`) and :meth:`parse_frame`; :meth:`parse_done`, :meth:`end_of_stream` and
    :meth:`error_message` have defaults. One dialect object serves every stream at once,
    so whatever a stream needs remembered between frames goes in ``ctx.state`` (or
    ``ctx.state_of(key, factory)``), which the parse stage creates for each stream.

    The parsing methods only *record* on ``ctx`` what a frame means (``ctx.send``,
    ``ctx.finish``, ``ctx.fail``, ``ctx.next_response``); the parse stage acts on the
    record after each call. A dialect sends each piece of content exactly once. An
    exception raised by any of these methods fails the stream with a
    :class:`~solon_events.ChatProtocolError` naming the frame (the frame's events recorded
    before it are dropped with it); a failure the provider reports is ``ctx.fail(...)``.
    """

    name: str = ""
    """The name :func:`get_dialect` knows this dialect by."""

    assistant_prefill: bool = False
    """Whether the model continues a trailing assistant turn of the request (an assistant
    prefill) rather than answering after it: what ``fallback(..., mid_stream="continue")``
    asks before it sends one (Anthropic and Ollama do; an OpenAI-compatible server when
    declared to, ``OpenAIDialect(prefill=...)``)."""

    native_output: bool = False
    """Whether :meth:`request_for` writes a request's ``output`` in the provider's own
    mechanism (``"native"`` mode); a dialect that does not is asked in ``"tool"`` or
    ``"prompted"`` mode only."""

    def build_request(
        self,
        request: ChatRequest,
        *,
        api_url: str,
        api_key: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> HttpRequest:
        """The provider's streaming HTTP request for ``request``, posted to ``api_url``
        (:meth:`request_for` that :class:`Endpoint`). A request asking for a structured
        answer in ``"tool"`` or ``"prompted"`` mode is written as such first
        (:func:`~solon_events.dialects.output.prepared`), so :meth:`request_for` sees an
        ``output`` in ``"native"`` mode only."""
        return self.request_for(prepared(self, request), Endpoint(api_url, api_key, headers))

    def output_mode(self, model: str, output: OutputFormat) -> OutputMode:
        """How this dialect asks ``model`` for a structured answer when the request does
        not say: ``"prompted"`` here (it works with any model); a dialect with a native
        mechanism overrides it."""
        return "prompted"

    def forced_tool(self, name: str | None) -> dict[str, Any]:
        """The request options that make the model call the tool ``name`` (None: any of
        its tools), for ``"tool"`` mode; a ValueError for a dialect that cannot say so."""
        raise ValueError(
            f"the {self.name!r} dialect cannot make the model call a tool: "
            "ask for a structured answer with mode='native' or mode='prompted'"
        )

    def request_for(self, request: ChatRequest, endpoint: Endpoint) -> HttpRequest:
        """The provider's streaming HTTP request for ``request`` to ``endpoint``: what a
        dialect implements (or it overrides :meth:`build_request` itself)."""
        raise NotImplementedError

    def frame_decoder(self, max_frame_size: int, *, data_only: bool = False) -> FrameDecoder:
        """The decoder of a response body into frames: SSE or JSON lines (sniffed) by
        default; a provider with another framing (Bedrock's AWS event stream) says so here.

        ``data_only``: the reader needs each frame's data alone (the parse stage reads
        nothing else), so the decoder may give a str instead of a :class:`Frame` (the
        default decoder then builds no Frame); False when something also reads the SSE
        fields (a recording notes each frame's ``event``)."""
        return StreamDecoder(max_frame_size=max_frame_size, data_only=data_only)

    def secrets(self, *, api_key: str | None = None, api_url: str | None = None) -> list[str]:
        """Secrets the requests will carry besides ``api_key`` and the model's headers (none
        by default), for the model's redactor to mask."""
        return []

    def parse_frame(self, ctx: ChatStreamContext, frame: Any) -> None:
        """Record on ``ctx`` what one decoded frame (usually a JSON object) means.

        ``frame`` is a plain JSON value: dicts, lists, str, int, float, bool and None only
        (the parse stage copies any other mapping into dicts first).
        """
        raise NotImplementedError

    def parse_done(self, ctx: ChatStreamContext) -> None:
        """The ``[DONE]`` sentinel arrived: by default, the completion signal."""
        ctx.finish()

    def end_of_stream(self, ctx: ChatStreamContext) -> None:
        """The frames ended: record the closers of what is still open (default: nothing).

        Called whether or not the completion signal came; a stream without it then fails
        as truncated.
        """

    def claims(self, frame: Any) -> bool:
        """Whether a decoded ``frame`` plainly is one of this dialect's (by its shape): what
        ``replay(dialect="auto")`` sniffs the dialect by, and what names the right dialect
        when a stream is read in the wrong one. The built-in dialects know their shapes
        (:mod:`~solon_events.dialects.frame_shapes`); another dialect returns False unless it
        overrides this."""
        return claims_frame(self.name, frame)

    def error_message(self, body: Any) -> str | None:
        """The provider's own message in an HTTP error body, if there is one."""
        return provider_error_message(body)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


_DIALECTS: dict[str, str] = {
    "openai": "solon_events.dialects.openai:OpenAIDialect",
    "openai-responses": "solon_events.dialects.openai_responses:OpenAIResponsesDialect",
    "anthropic": "solon_events.dialects.anthropic:AnthropicDialect",
    "gemini": "solon_events.dialects.gemini:GeminiDialect",
    "ollama": "solon_events.dialects.ollama:OllamaDialect",
    "bedrock": "solon_events.dialects.bedrock:BedrockDialect",
    "cohere": "solon_events.dialects.cohere:CohereDialect",
    "google-interactions": "solon_events.dialects.google_interactions:GoogleInteractionsDialect",
}


def dialect_names() -> tuple[str, ...]:
    """The names :func:`get_dialect` accepts."""
    return tuple(_DIALECTS)


def get_dialect(name: str | ChatDialect) -> ChatDialect:
    """The dialect called ``name`` (a ChatDialect instance is returned as it is): one of
    ``"openai"``, ``"openai-responses"``, ``"anthropic"``, ``"gemini"``, ``"ollama"``,
    ``"bedrock"``, ``"cohere"`` (Cohere's Chat API v2) and ``"google-interactions"``
    (Google's Interactions API).

    Raises ``ValueError`` naming the known dialects for an unknown name.
    """
    if isinstance(name, ChatDialect):
        return name
    dialect_class = _DIALECT_CLASSES.get(name) if isinstance(name, str) else None
    if dialect_class is None:
        dialect_class = _DIALECT_CLASSES[name] = _import_dialect(name)
    return dialect_class()


_DIALECT_CLASSES: dict[str, type[ChatDialect]] = {}


def _import_dialect(name: object) -> type[ChatDialect]:
    target = _DIALECTS.get(name) if isinstance(name, str) else None
    if target is None:
        known = ", ".join(repr(n) for n in _DIALECTS)
        raise ValueError(f"unknown dialect {name!r}; known dialects: {known}")
    module_name, _, class_name = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise ValueError(f"dialect {name!r} is not available yet") from exc
    dialect_class: type[ChatDialect] = getattr(module, class_name)
    return dialect_class
