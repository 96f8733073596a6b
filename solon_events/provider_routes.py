"""The gateway's provider routes: a provider SDK in front of the gateway's model.

:func:`add_provider_routes` adds to a gateway application (``create_app`` does) the
routes of five providers' APIs, so that their official SDKs (and tools built on them)
talk to whatever model the gateway serves, in any dialect:

=========================================================  ======================  ============
route                                                      wire format             SDK
=========================================================  ======================  ============
``POST /v1/chat/completions``                              ``"openai"``            openai
``POST /v1/responses``                                     ``"openai-responses"``  openai
``POST /v1/messages``                                      ``"anthropic"``         anthropic
``POST /v1beta/models/{model}:generateContent``            ``"gemini"``            google-genai
``POST /v1beta/models/{model}:streamGenerateContent``      ``"gemini"``            google-genai
``POST /ollama/api/chat``                                  ``"ollama"``            ollama
=========================================================  ======================  ============

Each request is read into our terms
(:func:`~solon_events.adapters.client_requests.read_client_request`: the conversation,
the client's tools, the generation options written for the upstream's dialect), run on
the gateway's model as one response, and written back in the client's format, streamed
(:func:`~solon_events.adapters.provider_formats.wire_encoder`) or as one body
(:func:`~solon_events.adapters.provider_formats.response_body`).

Tools are the client's: the gateway never runs them (nor its own server tools here); a
step that calls them ends the response with the calls, which the client answers in its
next request. The model is the gateway's: the model a client names is not used (the
body's ``model``, Gemini's path), and responses name the upstream's.

Ollama's route sits under ``/ollama`` because ``POST /api/chat`` is the Vercel UI message
stream's (the chat page and ``useChat`` post there): point an Ollama client at
``http://HOST:PORT/ollama``. Telling the two apart by their bodies would answer a
malformed request of one protocol in the other's.

The gateway's safety checks apply as on every route (origin, bearer token, JSON content
type, body size; a slow client's buffer cap; a client that leaves cancels the upstream
request). The token may come in each SDK's own key header: ``Authorization: Bearer``
(openai, ollama), ``x-api-key`` (anthropic), ``x-goog-api-key`` (google-genai). A stream
is answered with HTTP 200 only once the upstream's first content arrives: a failure before
it (the upstream's 429, say) is an HTTP error in the client's error shape, with
``Retry-After`` when the upstream gave one, so that the SDK's own retries apply. The
upstream's 401 and 403 (the gateway's key refused) become 502, a timeout 504, a
connection failure 502. A response carries ``x-solon-ignored``: the request fields that
were not translated, when there were any. Streams are not kept in Redis (the SDKs do not
resume).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import orjson
from aiohttp import web

from .adapters.client_requests import ClientRequest, read_client_request
from .adapters.provider_formats import (
    WireEncoder,
    error_body,
    response_body,
    wire_encoder,
)
from .errors import (
    ChatConnectionError,
    ChatError,
    ChatHttpError,
    ChatProtocolError,
    ChatTimeoutError,
)
from .events import EVENT_TYPES, ChatEvent
from .model import ChatPrompt
from .serve import Gateway, _HttpError, _until, _Wire

__all__ = ["PROVIDER_ROUTES", "ProviderRoutes", "add_provider_routes", "upstream_status"]

PROVIDER_ROUTES: tuple[tuple[str, str], ...] = (
    ("/v1/chat/completions", "openai"),
    ("/v1/responses", "openai-responses"),
    ("/v1/messages", "anthropic"),
    ("/v1beta/models/{model}:generateContent", "gemini"),
    ("/v1beta/models/{model}:streamGenerateContent", "gemini"),
    ("/ollama/api/chat", "ollama"),
)
"""Each provider route's path and the wire format it speaks."""

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


def upstream_status(error: BaseException) -> int:
    """The HTTP status a client is answered with when the upstream failed with ``error``:
    the upstream's own status, but 502 for its 401, 403 and 407 (the gateway's key was
    refused, not the client's), 504 for a timeout, 502 for a connection failure or a
    body that is not a model stream, 500 otherwise."""
    if isinstance(error, ChatHttpError):
        return 502 if error.status in (401, 403, 407) else error.status
    if isinstance(error, ChatTimeoutError):
        return 504
    if isinstance(error, (ChatConnectionError, ChatProtocolError)):
        return 502
    return 500


class _Encoding:
    """A :class:`WireEncoder` as the gateway's translator: an event's bytes, with the
    end of the body written after the terminal event (or a failure)."""

    def __init__(self, encoder: WireEncoder) -> None:
        self.encoder = encoder
        self.closed = False

    def feed(self, event: ChatEvent) -> list[bytes]:
        data = self.encoder.encode(event)
        if event.type.is_terminal:
            data += self._close()
        return [data] if data else []

    def fail(self, error: BaseException | None, text: str | None = None) -> list[bytes]:
        data = self.encoder.fail(error, text) + self._close()
        return [data] if data else []

    def _close(self) -> bytes:
        if self.closed:
            return b""
        self.closed = True
        return self.encoder.close()


class ProviderRoutes:
    """The provider routes' handlers for ``gateway``: :meth:`openai`, :meth:`responses`,
    :meth:`anthropic`, :meth:`gemini` and :meth:`ollama`, each an aiohttp handler."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway

    async def openai(self, request: web.Request) -> web.StreamResponse:
        """``POST /v1/chat/completions``: OpenAI Chat Completions."""
        return await self._handle(request, "openai")

    async def responses(self, request: web.Request) -> web.StreamResponse:
        """``POST /v1/responses``: the OpenAI Responses API."""
        return await self._handle(request, "openai-responses")

    async def anthropic(self, request: web.Request) -> web.StreamResponse:
        """``POST /v1/messages``: the Anthropic Messages API."""
        return await self._handle(request, "anthropic")

    async def gemini(self, request: web.Request) -> web.StreamResponse:
        """``POST /v1beta/models/{model}:generateContent`` or ``:streamGenerateContent``
        (``?alt=sse``): the Gemini API."""
        stream = request.path.endswith(":streamGenerateContent")
        if stream and request.query.get("alt") != "sse":
            error = _HttpError(400, "streamGenerateContent is served as SSE only: add ?alt=sse")
            return self._error(request, "gemini", error)
        return await self._handle(
            request, "gemini", model=request.match_info.get("model", ""), stream=stream
        )

    async def ollama(self, request: web.Request) -> web.StreamResponse:
        """``POST /ollama/api/chat``: Ollama's chat API."""
        return await self._handle(request, "ollama")

    async def _handle(
        self, request: web.Request, format: str, *, model: str = "", stream: bool | None = None
    ) -> web.StreamResponse:
        try:
            body = await self.gateway._accept(request)
            client = read_client_request(format, body, model=model, stream=stream)
            prompt = self.prompt(client)
        except _HttpError as exc:
            return self._error(request, format, exc)
        except ValueError as exc:
            return self._error(request, format, _HttpError(400, str(exc)))
        headers = {"x-solon-ignored": ", ".join(client.ignored)} if client.ignored else {}
        if client.stream:
            return await self._stream(request, client, prompt, headers)
        return await self._respond(request, format, prompt, headers)

    def prompt(self, client: ClientRequest) -> ChatPrompt:
        """The gateway model's prompt for ``client``'s request: its conversation, its tools
        as client tools (never run here), its options for the upstream's dialect."""
        model = self.gateway.model
        prompt = model.prompt(client.messages).auto_tool_call(False)
        if client.tools:
            prompt = prompt.client_tools(*client.tools)
        options = client.options.for_dialect(model.dialect.name)
        return prompt.options(**options) if options else prompt

    async def _respond(
        self, request: web.Request, format: str, prompt: ChatPrompt, headers: Mapping[str, str]
    ) -> web.StreamResponse:
        done: list[Any] = []

        async def run() -> None:
            done.append(await prompt.acall())

        try:
            if not await _until(run(), request):
                return web.Response(status=499)
        except ChatError as exc:
            return self._failed(request, format, exc)
        body = response_body(format, done[0], model=self.gateway.model.model)
        return web.Response(
            body=orjson.dumps(body),
            content_type="application/json",
            headers={**headers, **self.gateway._cors_headers(request)},
        )

    async def _stream(
        self,
        request: web.Request,
        client: ClientRequest,
        prompt: ChatPrompt,
        headers: Mapping[str, str],
    ) -> web.StreamResponse:
        format = client.format
        events = prompt.astream()
        head: list[ChatEvent] = []
        try:
            if not await _until(_read_head(events, head), request):
                return web.Response(status=499)
        except ChatError as exc:
            return self._failed(request, format, exc)
        options = {"include_usage": client.include_usage} if format == "openai" else {}
        encoder = wire_encoder(format, model=self.gateway.model.model, **options)
        wire = _Wire(
            format,
            _Encoding(encoder),
            _as_is,
            {
                "Content-Type": encoder.media_type,
                "Cache-Control": "no-cache",
                "x-accel-buffering": "no",
                **headers,
            },
        )
        return await self.gateway._stream(request, _chained(head, events), wire)

    def _failed(self, request: web.Request, format: str, error: ChatError) -> web.Response:
        from .adapters.provider_formats.base import error_message

        headers = {}
        if isinstance(error, ChatHttpError) and error.retry_after is not None:
            headers["Retry-After"] = str(max(1, round(error.retry_after)))
        status = upstream_status(error)
        return self._error(request, format, _HttpError(status, error_message(error), headers))

    def _error(self, request: web.BaseRequest, format: str, error: _HttpError) -> web.Response:
        return web.Response(
            body=orjson.dumps(error_body(format, error.status, error.message)),
            status=error.status,
            content_type="application/json",
            headers={**error.headers, **self.gateway._cors_headers(request)},
        )


def _as_is(data: bytes) -> bytes:
    return data


async def _read_head(events: AsyncIterator[ChatEvent], head: list[ChatEvent]) -> None:
    """Read ``events`` into ``head`` up to the first that shows the upstream answered (a
    failure before it raises its ChatError)."""
    async for event in events:
        head.append(event)
        if event.type not in _HEAD:
            return


async def _chained(
    head: list[ChatEvent], events: AsyncIterator[ChatEvent]
) -> AsyncIterator[ChatEvent]:
    try:
        for event in head:
            yield event
        async for event in events:
            yield event
    finally:
        aclose = getattr(events, "aclose", None)
        if aclose is not None:
            await aclose()


def add_provider_routes(app: web.Application, gateway: Gateway) -> ProviderRoutes:
    """Add the provider routes (:data:`PROVIDER_ROUTES`, with their CORS preflights) of
    ``gateway`` to ``app``; returns their handlers."""
    routes = ProviderRoutes(gateway)
    handlers: dict[str, Callable[[web.Request], Any]] = {
        "openai": routes.openai,
        "openai-responses": routes.responses,
        "anthropic": routes.anthropic,
        "gemini": routes.gemini,
        "ollama": routes.ollama,
    }
    for path, format in PROVIDER_ROUTES:
        app.router.add_post(path, handlers[format])
        app.router.add_route("OPTIONS", path, gateway.preflight)
    return routes
