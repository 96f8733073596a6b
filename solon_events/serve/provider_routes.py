"""The gateway's provider routes: a provider SDK in front of the gateway's model.

:func:`~solon_events.serve.create_app` serves the routes of the providers' own APIs
(:data:`PROVIDER_ROUTES`), so that their official SDKs (and tools built on them) talk to
whatever model the gateway serves, in any dialect:

=====================================================  =========================  ============
route                                                  wire format                SDK
=====================================================  =========================  ============
``POST /v1/chat/completions``                          ``"openai"``               openai
``POST /v1/responses``                                 ``"openai-responses"``     openai
``POST /v1/messages``                                  ``"anthropic"``            anthropic
``POST /v1beta/models/{model}:generateContent``        ``"gemini"``               google-genai
``POST /v1beta/models/{model}:streamGenerateContent``  ``"gemini"``               google-genai
``POST /ollama/api/chat``                              ``"ollama"``               ollama
``POST /v2/chat``                                      ``"cohere"``               cohere
``POST /v1beta/interactions``                          ``"google-interactions"``  google-genai
=====================================================  =========================  ============

:meth:`Gateway.provider() <solon_events.serve.Gateway.provider>` handles them with this
module's pieces: each request is read into our terms (:func:`read_route_request`: the
conversation, the client's tools, the generation options), run on the gateway's model as
one response (:func:`route_prompt`), and written back in the client's format, streamed
(:func:`route_encoder`, :class:`WireTranslator`) or as one body
(:func:`~solon_events.adapters.provider_formats.response_body`).

Tools are the client's: the gateway never runs them (nor its own server tools here); a
step that calls them ends the response with the calls, which the client answers in its
next request. The model a client names (the body's ``model``, Gemini's path) picks the
model of a gateway served from a configuration (:class:`~solon_events.serve.models.ModelTable`),
and responses name it; a name the gateway does not serve gets the protocol's own "model
not found" (HTTP 404, :func:`model_not_found`). A gateway of one model answers every name
with it, and responses name the upstream's. The deployment that answered is named in the
``x-solon-deployment`` header (its label: see :class:`~solon_events.Router`). A model with
a cache (``cache`` in its ``[models.NAME]``, see :doc:`/guides/caching`) answers with
``x-solon-cache: hit`` or ``miss`` (:func:`cache_header`); a hit is encoded into the
client's own wire format whatever protocol stored it, and a client's ``Cache-Control:
no-store`` or ``no-cache`` is respected (:func:`cache_mode`).

Ollama's route sits under ``/ollama`` because ``POST /api/chat`` is the Vercel UI message
stream's (the chat page and ``useChat`` post there): point an Ollama client at
``http://HOST:PORT/ollama``. Telling the two apart by their bodies would answer a
malformed request of one protocol in the other's.

The gateway's safety checks apply as on every route (loopback host names without a
token, origin, token, JSON content type, body size; a slow client's write timeout and
buffer caps; a client that leaves cancels the upstream request). The token may come in
each SDK's own key header: ``Authorization: Bearer`` (openai, ollama, cohere),
``x-api-key`` (anthropic), ``x-goog-api-key`` (google-genai). A stream is answered with
HTTP 200 only once the upstream's first content arrives: a failure before it (the
upstream's 429, say) is an HTTP error in the client's error shape
(:func:`upstream_failure`), so that the SDK's own retries apply; its message names the
upstream by its deployment (its model name), never by address
(:class:`~solon_events.serve.deployments.Deployments`). A response carries
``x-solon-ignored``: the request fields that were not translated, when there were any
(:func:`ignored_header`: percent-encoded, the first 32, each cut at 64 characters).
A request that no upstream model can be sent (content its dialect cannot carry) gets a
400 naming what cannot be sent (:func:`route_prompt`). Streams are not kept in Redis
(the SDKs do not resume).
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any
from urllib.parse import quote

from ..adapters.client_requests import ClientRequest, read_client_request
from ..adapters.provider_formats import WireEncoder, wire_encoder
from ..adapters.provider_formats.base import error_message
from ..client.cache import CacheMode
from ..client.model import ChatModel, ChatPrompt
from ..client.router import NoHealthyDeploymentError
from ..client.routing import ModelGroup
from ..dialects.output import prepared
from ..dialects.request import Endpoint
from ..event_model.errors import (
    ChatConnectionError,
    ChatError,
    ChatHttpError,
    ChatProtocolError,
    ChatTimeoutError,
)
from ..event_model.events import EVENT_TYPES, ChatEvent
from ..event_model.messages import ChatRequest, OutputFormat
from ..event_model.results import ChatResponse

__all__ = [
    "CACHE_HEADER",
    "DEPLOYMENT_HEADER",
    "IGNORED_NAMES",
    "IGNORED_NAME_LENGTH",
    "PROVIDER_ROUTES",
    "WireTranslator",
    "answered_by",
    "cache_header",
    "cache_mode",
    "deployment_header",
    "ignored_header",
    "model_not_found",
    "read_head",
    "read_route_request",
    "route_encoder",
    "route_prompt",
    "upstream_failure",
    "upstream_status",
]

PROVIDER_ROUTES: Mapping[str, str] = {
    "/v1/chat/completions": "openai",
    "/v1/responses": "openai-responses",
    "/v1/messages": "anthropic",
    "/v1beta/models/{model}:generateContent": "gemini",
    "/v1beta/models/{model}:streamGenerateContent": "gemini",
    "/ollama/api/chat": "ollama",
    "/v2/chat": "cohere",
    "/v1beta/interactions": "google-interactions",
}
"""Each provider route's path (as aiohttp writes it) and the wire format it speaks."""

CACHE_HEADER = "x-solon-cache"
"""The response header of a model with a cache: ``hit`` (answered from the cache, or shared
with an identical request in flight) or ``miss``."""

DEPLOYMENT_HEADER = "x-solon-deployment"
"""The response header naming the deployment that answered (a router's or a group's
label of it)."""

_NOT_FOUND = {
    "openai": "The model `{}` does not exist or you do not have access to it.",
    "openai-responses": "The model `{}` does not exist or you do not have access to it.",
    "anthropic": "model: {}",
    "gemini": "models/{} is not found for API version v1beta, or is not supported for "
    "generateContent. Call ListModels to see the list of available models and their "
    "supported methods.",
    "google-interactions": "models/{} is not found for API version v1beta.",
    "ollama": "model '{}' not found",
    "cohere": "model '{}' not found, make sure the correct model ID was used and that you "
    "have access to the model.",
}

_HEAD = frozenset(
    {
        EVENT_TYPES.RESPONSE_START,
        EVENT_TYPES.STEP_START,
        EVENT_TYPES.STEP_END,  # a failed step's, before its ERROR
        EVENT_TYPES.STATUS,
        EVENT_TYPES.HEARTBEAT,
        EVENT_TYPES.ERROR,  # its ChatError follows
    }
)  # what may come before the upstream answered: held until it did


def read_route_request(
    route: str, body: Any, *, model: str = "", query: Mapping[str, str] | None = None
) -> ClientRequest:
    """The request ``body`` posted to provider ``route`` (a key of
    :data:`PROVIDER_ROUTES`), read; ``model`` and ``query`` are the URL's (Gemini names the
    model in the path and streams as SSE only: ``?alt=sse``). A request that cannot be
    read raises ``ValueError`` naming what is wrong."""
    format = PROVIDER_ROUTES[route]
    if format != "gemini":
        return read_client_request(format, body)
    stream = route.endswith(":streamGenerateContent")
    if stream and (query or {}).get("alt") != "sse":
        raise ValueError("streamGenerateContent is served as SSE only: add ?alt=sse")
    return read_client_request(format, body, model=model, stream=stream)


def route_prompt(model: ChatModel | ModelGroup, client: ClientRequest) -> ChatPrompt:
    """``model``'s prompt for ``client``'s request: its conversation, its tools as client
    tools (never run by the gateway), its options written for each model's own dialect
    (a router's deployments may speak several), its
    structured output asked of the upstream in the upstream's own form (never checked
    here: the client's SDK does). A structured output an upstream cannot be asked for
    raises ``ValueError`` saying why (HTTP 400): it is never dropped.

    A request that no model of ``model`` can be sent (content its dialect cannot carry:
    an image URL to Ollama or Bedrock, a file URL to Chat Completions, a PDF to Ollama,
    an image without data) raises ``ValueError`` naming what cannot be sent, by model."""
    prompt = model.prompt(client.messages).auto_tool_call(False)
    if client.tools:
        prompt = prompt.client_tools(*client.tools)
    if client.output is not None:
        _check_output(model, client.output)
        prompt = prompt.output(client.output)
    _check_sendable(model, client)
    return prompt.dialect_options(client.options.for_dialect)


def _check_output(model: ChatModel | ModelGroup, output: OutputFormat) -> None:
    """Raise ``ValueError`` when a model of ``model`` cannot be asked for ``output``."""
    for leaf in model.leaves() if isinstance(model, ModelGroup) else (model,):
        asked = ChatRequest(model=leaf.model, messages=(), output=output)
        dialect = leaf.dialect
        try:
            dialect.request_for(prepared(dialect, asked), Endpoint("http://check", "check"))
        except ValueError as error:
            why = f"the structured output cannot be asked of {leaf.model}: {error}"
            raise ValueError(why) from None


def _check_sendable(model: ChatModel | ModelGroup, client: ClientRequest) -> None:
    """Build (and encode) the request for each model of ``model`` (with the client's
    options in its dialect's words) until one can be sent; a ValueError saying why when
    none can."""
    refusals = []
    for leaf in model.leaves() if isinstance(model, ModelGroup) else (model,):
        options = client.options.for_dialect(leaf.dialect.name)
        request = ChatRequest(
            model=leaf.model, messages=client.messages, tools=client.tools, options=options
        )
        try:
            leaf.build_http_request(request).body_bytes()
        except (ValueError, TypeError) as exc:  # orjson's encode errors are TypeErrors
            refusals.append(f"{leaf.model} ({leaf.dialect.name}): {exc}")
        except ChatError:  # not the request's fault (no credentials): its attempt says so
            return
        else:
            return
    raise ValueError(f"this request cannot be sent upstream: {'; '.join(refusals)}")


IGNORED_NAMES = 32
"""How many of the fields a request named that were not translated ``x-solon-ignored``
lists (then how many more there were)."""
IGNORED_NAME_LENGTH = 64
"""How much of each field's name ``x-solon-ignored`` shows."""
_NAME_SAFE = "!#$&'()*+-./:;<=>?@[]^_`{|}~"  # printable ASCII but the comma, space and %


def ignored_header(names: Sequence[str]) -> str:
    """The ``x-solon-ignored`` header of a request whose fields ``names`` were not
    translated: each name percent-encoded outside printable ASCII (so a control
    character or a comma cannot break the header), the first
    :data:`IGNORED_NAME_LENGTH` characters of a long one (then ``...``), the first
    :data:`IGNORED_NAMES` names (then ``... (N more)``)."""
    shown = []
    for name in names[:IGNORED_NAMES]:
        cut = quote(name[:IGNORED_NAME_LENGTH], safe=_NAME_SAFE)
        shown.append(cut + "..." if len(name) > IGNORED_NAME_LENGTH else cut)
    if len(names) > IGNORED_NAMES:
        shown.append(f"... ({len(names) - IGNORED_NAMES} more)")
    return ", ".join(shown)


def route_encoder(client: ClientRequest, model: str) -> WireEncoder:
    """The encoder of the stream that answers ``client`` (naming ``model``): its wire
    format, with the usage chunk only when a Chat Completions client asked for it."""
    options = {"include_usage": client.include_usage} if client.format == "openai" else {}
    return wire_encoder(client.format, model=model, **options)


def model_not_found(format: str, name: str) -> str:
    """What ``format``'s API says of a model it does not serve, ``name``."""
    return _NOT_FOUND.get(format, "model '{}' not found").format(name)


def cache_mode(cache_control: str | None) -> CacheMode:
    """How a request whose ``Cache-Control`` header is ``cache_control`` uses the model's
    cache: ``no-store`` neither reads nor stores (False); ``no-cache`` (or ``max-age=0``)
    asks the upstream and stores its answer (``"refresh"``); else True."""
    directives = {d.strip().lower() for d in (cache_control or "").split(",")}
    if "no-store" in directives:
        return False
    if "no-cache" in directives or "max-age=0" in directives:
        return "refresh"
    return True


def cache_header(head: Sequence[ChatEvent]) -> dict[str, str]:
    """The :data:`CACHE_HEADER` of a stream of a model with a cache whose first events are
    ``head``: ``hit`` when the cache's STATUS event says so (read from the cache, or
    shared with an identical request in flight), else ``miss``."""
    for event in head:
        if event.type is EVENT_TYPES.STATUS and event.sub_type == "cache":
            return {CACHE_HEADER: "hit"}
    return {CACHE_HEADER: "miss"}


def deployment_header(head: list[ChatEvent]) -> dict[str, str]:
    """The :data:`DEPLOYMENT_HEADER` of a stream whose first events are ``head``: the
    deployment a router's STATUS event (``sub_type="routed"``) names, if any."""
    for event in head:
        if event.type is EVENT_TYPES.STATUS and event.sub_type == "routed":
            return {DEPLOYMENT_HEADER: str(event.attrs.get("model", ""))}
    return {}


def answered_by(response: ChatResponse) -> dict[str, str]:
    """The :data:`DEPLOYMENT_HEADER` of a whole response: the attempt that answered."""
    for attempt in response.attempts:
        if attempt.outcome == "answered":
            return {DEPLOYMENT_HEADER: attempt.model}
    return {}


def upstream_status(error: BaseException) -> int:
    """The HTTP status a client is answered with when the upstream failed with ``error``:
    the upstream's own status, but 502 for its 401, 403 and 407 (the gateway's key was
    refused, not the client's), 504 for a timeout, 502 for a connection failure or a
    body that is not a model stream; when a router had no healthy deployment, 429 if
    every one was rate limited, else 503; 500 otherwise."""
    if isinstance(error, NoHealthyDeploymentError):
        return 429 if error.rate_limited else 503
    if isinstance(error, ChatHttpError):
        return 502 if error.status in (401, 403, 407) else error.status
    if isinstance(error, ChatTimeoutError):
        return 504
    if isinstance(error, (ChatConnectionError, ChatProtocolError)):
        return 502
    return 500


def upstream_failure(error: ChatError) -> tuple[int, str, dict[str, str]]:
    """The HTTP status (:func:`upstream_status`), the message and the headers a client is
    answered with when the upstream failed before its first content: ``Retry-After``
    when the upstream gave one, so that the SDK's own retries wait as long."""
    headers = {}
    retry_after = getattr(error, "retry_after", None)
    if isinstance(retry_after, (int, float)):
        headers["Retry-After"] = str(max(1, math.ceil(retry_after)))
    return upstream_status(error), error_message(error), headers


class WireTranslator:
    """A :class:`~solon_events.adapters.provider_formats.base.WireEncoder` as the
    gateway's translator of one response: each event's bytes, the end of the body written
    after the terminal event (or a failure)."""

    def __init__(self, encoder: WireEncoder) -> None:
        self.encoder = encoder
        self.closed = False

    def feed(self, event: ChatEvent) -> list[bytes]:
        """The bytes of ``event`` (and of the body's end after a terminal event)."""
        data = self.encoder.encode(event)
        if event.type.is_terminal:
            data += self._close()
        return [data] if data else []

    def fail(self, error: BaseException | None, text: str | None = None) -> list[bytes]:
        """The format's error event (unless one was written) and the body's end."""
        data = self.encoder.fail(error, text) + self._close()
        return [data] if data else []

    def _close(self) -> bytes:
        if self.closed:
            return b""
        self.closed = True
        return self.encoder.close()


async def read_head(events: AsyncIterator[ChatEvent], head: list[ChatEvent]) -> None:
    """Read ``events`` into ``head`` up to the first that shows the upstream answered (a
    failure before it raises its ChatError)."""
    async for event in events:
        head.append(event)
        if event.type not in _HEAD:
            return
