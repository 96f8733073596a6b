"""ChatEvents back into the providers' own wire formats: any client in front of any provider.

Each module writes one format, named as the dialect that reads it:

=========================  ============================================  ===========================
format                     what it writes                                module
=========================  ============================================  ===========================
``"openai"``               Chat Completions chunks (SSE), ``[DONE]``     :mod:`.openai_chat`
``"openai-responses"``     Responses events (SSE with ``event:`` lines)  :mod:`.openai_responses`
``"anthropic"``            Messages events (SSE with ``event:`` lines)   :mod:`.anthropic`
``"gemini"``               ``GenerateContentResponse`` SSE events        :mod:`.gemini`
``"ollama"``               ``/api/chat`` objects, one a line (NDJSON)    :mod:`.ollama`
``"cohere"``               Cohere v2 chat stream events (SSE)            :mod:`.cohere`
``"google-interactions"``  Interactions API step events (SSE)            :mod:`.google_interactions`
=========================  ============================================  ===========================

:func:`wire_encoder` makes the sans-I/O encoder of one streamed response
(:class:`~.base.WireEncoder`: ``encode(event) -> bytes``, ``close() -> bytes``,
``media_type``); :func:`to_wire` is the same as a pipeable Rx operator; :func:`response_body`
and :func:`error_body` write a format's non-streaming bodies. Each module's docstring says
what its format cannot carry, and drops.

A new format is one module with a :class:`~.base.WireEncoder` subclass, its line in
:data:`WIRE_FORMATS`, and its finish words in :data:`.base.FINISH_WORDS`. The framing
(SSE events, JSON lines) is :mod:`solon_events.wire.writing`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from reactivex import Observable, abc
from reactivex import create as rx_create

from ...event_model.events import ChatEvent
from ...event_model.results import ChatResponse
from ...support.safe_callbacks import Callbacks, subscribe_safely
from .anthropic import AnthropicEncoder
from .base import WireEncoder
from .cohere import CohereEncoder
from .gemini import GeminiEncoder
from .google_interactions import GoogleInteractionsEncoder
from .ollama import OllamaEncoder
from .openai_chat import OpenAIChatEncoder
from .openai_responses import OpenAIResponsesEncoder

__all__ = [
    "WIRE_FORMATS",
    "AnthropicEncoder",
    "CohereEncoder",
    "GeminiEncoder",
    "GoogleInteractionsEncoder",
    "OllamaEncoder",
    "OpenAIChatEncoder",
    "OpenAIResponsesEncoder",
    "WireEncoder",
    "error_body",
    "response_body",
    "to_wire",
    "wire_encoder",
]

WIRE_FORMATS: Mapping[str, type[WireEncoder]] = MappingProxyType(
    {
        encoder.format: encoder
        for encoder in (
            OpenAIChatEncoder,
            OpenAIResponsesEncoder,
            AnthropicEncoder,
            GeminiEncoder,
            OllamaEncoder,
            CohereEncoder,
            GoogleInteractionsEncoder,
        )
    }
)
"""Each wire format's encoder class, by the format's (and its dialect's) name."""


def _encoder_class(format: str) -> type[WireEncoder]:
    try:
        return WIRE_FORMATS[format]
    except KeyError:
        known = ", ".join(sorted(WIRE_FORMATS))
        raise ValueError(f"unknown wire format {format!r}; known formats: {known}") from None


def wire_encoder(format: str, *, model: str, **options: Any) -> WireEncoder:
    """A new encoder of one streamed response in ``format`` (``"openai"``, ...), naming
    ``model`` where the format does; ``options`` are the format's own (see its class).

    ::

        encoder = wire_encoder("openai", model="gpt-4o")
        for event in events:
            body.write(encoder.encode(event))
        body.write(encoder.close())

    A ``ValueError`` names the known formats when ``format`` is not one.
    """
    return _encoder_class(format)(model, **options)


def response_body(format: str, response: ChatResponse, *, model: str) -> dict[str, Any]:
    """``response`` as ``format``'s non-streaming response body (a JSON object)."""
    return _encoder_class(format).response_body(response, model=model)


def error_body(format: str, status: int, message: str | None = None) -> dict[str, Any]:
    """``format``'s JSON error body for HTTP ``status`` (``message`` replaces the default)."""
    return _encoder_class(format).error_body(status, message)


_WHERE = "the to_wire() operator"


def to_wire(
    format: str, *, model: str, **options: Any
) -> Callable[[Observable[ChatEvent]], Observable[bytes]]:
    """A pipeable operator: ChatEvents -> the bytes of ``format``'s streamed body.

    Each subscription gets a fresh :func:`wire_encoder`; only non-empty bytes are sent; on
    completion the encoder's :meth:`~.base.WireEncoder.close` bytes are sent last. A
    failure upstream is first written in the format's error shape (unless an ERROR event
    already was), then passed on. An encoder that raises ends the stream with a ChatError
    naming the operator::

        model.prompt("Hi").stream().pipe(to_wire("anthropic", model="claude")).subscribe(
            response_body_writer)
    """
    _encoder_class(format)

    def operator(source: Observable[ChatEvent]) -> Observable[bytes]:
        def subscribe(
            observer: abc.ObserverBase[bytes], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            def start() -> Callbacks:
                encoder = wire_encoder(format, model=model, **options)

                def send(data: bytes) -> None:
                    if data:
                        observer.on_next(data)

                def on_next(event: ChatEvent) -> None:
                    send(encoder.encode(event))

                def on_error(error: Exception) -> None:
                    send(encoder.fail(error))
                    send(encoder.close())
                    observer.on_error(error)

                def on_completed() -> None:
                    send(encoder.close())
                    observer.on_completed()

                return on_next, on_error, on_completed

            return subscribe_safely(source, observer, scheduler, start, where=_WHERE)

        return rx_create(subscribe)

    return operator
