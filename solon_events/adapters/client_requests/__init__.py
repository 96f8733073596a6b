"""What provider SDK clients send, read into our terms: the request side of the gateway's
provider routes (``solon-events serve --upstream ...``; :mod:`solon_events.serve.provider_routes`).

:func:`read_client_request` reads the body of a request in one provider's wire format
(``"openai"``: Chat Completions, ``"openai-responses"``, ``"anthropic"``: Messages,
``"gemini"``: ``generateContent``, ``"ollama"``: ``/api/chat``, ``"cohere"``: ``/v2/chat``,
``"google-interactions"``: ``interactions.create``) into a
:class:`ClientRequest`: the conversation as our messages, the client's tools with their
JSON schemas, and the generation options (:class:`GenerationOptions`), which
:meth:`GenerationOptions.for_dialect` writes for whichever dialect the upstream speaks.
Each reader is the inverse of that dialect's request builder
(:mod:`solon_events.dialects`), so a conversation built by one and read by the other
comes back the same. Sans-I/O; a malformed body raises ``ValueError`` naming the field.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .anthropic import read_messages
from .cohere import read_chat as read_cohere_chat
from .fields import body_object
from .gemini import read_generate_content
from .google_interactions import read_interaction
from .ollama import read_chat
from .openai_chat import read_chat_completions
from .openai_responses import read_responses
from .options import EFFORT_BUDGETS, UNSUPPORTED, GenerationOptions
from .request import ClientRequest

__all__ = [
    "CLIENT_FORMATS",
    "EFFORT_BUDGETS",
    "UNSUPPORTED",
    "ClientRequest",
    "GenerationOptions",
    "read_client_request",
]

_READERS: dict[str, Callable[[Mapping[str, Any]], ClientRequest]] = {
    "openai": read_chat_completions,
    "openai-responses": read_responses,
    "anthropic": read_messages,
    "ollama": read_chat,
    "cohere": read_cohere_chat,
    "google-interactions": read_interaction,
}

CLIENT_FORMATS = (*_READERS, "gemini")
"""The wire formats whose requests :func:`read_client_request` reads (dialect names)."""


def read_client_request(
    format: str, body: Any, *, model: str = "", stream: bool | None = None
) -> ClientRequest:
    """The :class:`ClientRequest` of ``body``, a request in wire ``format`` (one of
    :data:`CLIENT_FORMATS`).

    Gemini names the model and whether it streams in the URL, not the body: pass them as
    ``model`` and ``stream``. A body that cannot be read raises ``ValueError`` naming
    the field (a shape no check names: what went wrong reading it).
    """
    reader = _READERS.get(format)
    if reader is None and format != "gemini":
        raise ValueError(f"unknown client format {format!r}; known: {', '.join(CLIENT_FORMATS)}")
    body = body_object(body)
    try:
        if reader is None:
            return read_generate_content(body, model=model, stream=bool(stream))
        return reader(body)
    except (TypeError, KeyError, IndexError, AttributeError, RecursionError) as exc:
        # A shape no reader check names: still the client's body, not the gateway's fault.
        raise ValueError(
            f"the request body could not be read: {type(exc).__name__}: {exc}"
        ) from exc
