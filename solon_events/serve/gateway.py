"""The gateway: a chat model served to front ends over HTTP (aiohttp).

:func:`create_app` returns an aiohttp ``Application`` with

- ``POST /api/chat``: the Vercel AI SDK's UI message stream v1 (what ``useChat`` posts);
- ``POST /agui``: AG-UI (body: ``RunAgentInput``; needs the ``agui`` extra, without which
  it answers 501 with a message naming it);
- ``POST /events``: our own events as SSE, one JSON object per event (body:
  ``{"messages": [{"role": ..., "content": ...}]}``); of an error it sends the type, the
  message and our own fields, and of the provider's response headers only
  ``Retry-After``, the request id and the rate limits;
- ``GET /``: a self-contained chat page that speaks the Vercel protocol;
- ``POST /stop`` (``{"response_id": ...}``): stop a running response;
- the providers' own APIs, for their official SDKs (``/v1/chat/completions``,
  ``/v1/responses``, ``/v1/messages``, Gemini's ``/v1beta/models/...``,
  ``/ollama/api/chat``, ``/v2/chat``, ``/v1beta/interactions``):
  :mod:`solon_events.serve.provider_routes`.

The handlers are the methods of a :class:`Gateway`, usable one by one in an application
of your own. Every stream carries the response id in the ``x-response-id`` header.

With a Redis log (``redis=``; :mod:`solon_events.serve.resume`, :mod:`solon_events.serve.redis_log`)
every response is written to a Redis stream as it is produced and its clients read it
from there: each SSE event carries its entry id, a ``GET`` of the same path with
``?resume=<response id>`` and ``Last-Event-ID`` (or ``&after=<id>``) continues after that
id on any replica, the response goes on when its client leaves (``on_disconnect``), and a
stop request reaches the replica that runs it over pub/sub. When Redis cannot take a
response's first entry the client gets a 503 saying why (no stream has started); Redis
failing later ends the stream with the protocol's error event.

Tool approval: a response that pauses because one of the server's tools requires approval
(:mod:`solon_events.event_model.approvals`) is kept in :attr:`Gateway.approvals` (in Redis with
``redis``, so that any replica continues it) until a request brings the decisions: the
Vercel UI stream's ``tool-approval-request`` answered by ``useChat``'s
``addToolApprovalResponse``, AG-UI's ``interrupt`` outcome answered by ``resume`` entries,
or ``POST /events`` with ``{"approvals": [{"approval_id", "approved", "reason"}]}``. It is
continued once (a second request with the same decisions gets 404); decisions that do not
answer each waiting call get 400 and leave it as it was (its time to live too). In Redis
it is signed with the gateway's approval key (``approval_key``, else the environment's
``SOLON_APPROVAL_KEY``, else one derived from its token; required with tools that wait
for approval), so that writing to that Redis does not make a server tool run.

Safe by default: only the server's own tools run on the server (AG-UI frontend tools go
back to the client as pending tool calls); an optional bearer token, compared in constant
time; without a token, only requests naming a loopback host (``Host: 127.0.0.1``,
``localhost`` or ``[::1]``, any port) or one of ``allowed_hosts`` are answered (403
otherwise: a web page whose name was rebound to 127.0.0.1 cannot reach the gateway);
request bodies capped (413 beyond); JSON bodies only (415 otherwise, so that a
foreign web page cannot post without a CORS preflight); CORS closed unless origins are
listed (a request from an unlisted origin gets 403); a malformed body gets 400 with the
reason. The model's API key is never part of any response. These checks are made in one
place, :meth:`Gateway._accept` (the host alone for the page and the preflight), for
every route.

Each response is read with :meth:`ChatPrompt.astream() <solon_events.ChatPrompt.astream>`
on the server's own loop, in a task of its own; cancelling that task closes the model
request's connection. Without Redis, a client that disconnects cancels the model request
at once (the connection is watched while the model is silent, too), and ``POST /stop``
ends its stream with the protocol's abort; a client that reads slower than
the model writes is served through the socket's drain, and once more than ``max_buffer``
bytes wait for it (or ``max_total_buffer`` for all clients together) the model request
is stopped and the stream ends with the protocol's error event (with Redis, the events
wait in Redis, bounded by its ``maxlen``). A client that reads nothing for
``write_timeout`` seconds while a write to it waits is dropped: its connection is
aborted, what waited for it is freed, and its model request is cancelled (with Redis,
``on_disconnect`` says). Failures always end the stream with the protocol's error event.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import inspect
import socket
import struct
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from importlib import resources
from typing import TYPE_CHECKING, Any, Literal, ParamSpec, Protocol

import attrs
import orjson
from aiohttp import web

from ..adapters.inputs import messages_from_events, messages_from_vercel
from ..adapters.native import encode_event, event_to_json
from ..adapters.provider_formats import error_body, response_body
from ..adapters.vercel import VERCEL_DONE, VERCEL_HEADERS, VercelEncoder, vercel_sse
from ..client.model import ChatModel, ChatPrompt
from ..event_model.approvals import ApprovalDecision, PendingApproval, parse_approval_id
from ..event_model.errors import ChatError
from ..event_model.events import EVENT_TYPES, ChatEvent
from ..event_model.extras import MissingExtraError
from ..support.async_iterators import ending_with
from ..tools import Tool, ToolSet
from . import provider_routes
from ._http_error import HttpError as _HttpError
from .access import Access, Admission, request_of, retire
from .approval_store import (
    APPROVAL_KEY_ENV,
    ApprovalStore,
    MemoryApprovalStore,
    RedisApprovalStore,
)
from .approval_store import approval_key as approval_key_of
from .connections import ConnectionGuard, watched
from .deployments import Deployments, logger
from .models import ModelTable
from .operations import OPERATOR_ROUTES, Operations
from .provider_routes import ignored_header, upstream_failure

if TYPE_CHECKING:
    from ..adapters.client_requests import ClientRequest
    from ..adapters.inputs import AguiRun
    from ..client.routing import ModelGroup
    from .metrics import GatewayMetrics
    from .redis_log import RedisStreamLog
    from .resume import StoredResponse

__all__ = ["GATEWAY", "Gateway", "create_app", "run_app", "serving"]

MAX_BODY = 1024 * 1024
"""The default cap on a request body: 1 MiB."""
MAX_BUFFER = 8 * 1024 * 1024
"""The default cap on encoded events waiting for a slow client: 8 MiB."""
MAX_TOTAL_BUFFER = 128 * 1024 * 1024
"""The default cap on encoded events waiting for slow clients, all together: 128 MiB."""
WRITE_TIMEOUT = 60.0
"""The default time a client may read nothing while a write to it waits: 60 s."""
HEADER_TIMEOUT = 10.0
"""The default time a request's head may take from its first byte (or from the
connection, when nothing comes): 10 s."""
BODY_TIMEOUT = 30.0
"""The default time a request's body may take once its head is read: 30 s."""
MAX_CONNECTIONS = 1000
"""The default cap on the connections held at once (lowered under the file-descriptor
limit: :func:`~solon_events.serve.connections.connection_cap`)."""
_WRITE_CHUNK = 64 * 1024
MAX_DEPTH = 200
"""How deep a request body may nest arrays and objects: what a provider's request wraps
around it must stay under the 254 levels that orjson encodes."""
_ORJSON_DEPTH = 254
_WATCH_INTERVAL = 0.02
_CLOSING = frozenset({408, 413})  # answered before the body was read whole: close after
_LINGERING_TIME = 2.0  # how long the rest of such a body is read (and dropped) before closing
_SSE_HEADERS = {
    "Content-Type": "text/event-stream",
    "Cache-Control": "no-cache",
    "x-accel-buffering": "no",
}
_PAGE_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
        "connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; "
        "frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
_Options = ParamSpec("_Options")
_CORS_REQUEST_HEADERS = "authorization, content-type, last-event-id, x-api-key, x-goog-api-key"
# The request's key, as the access found it (aiohttp before 3.12 has no RequestKey).
_KEY: Any = (
    web.RequestKey("solon_events.key", object) if hasattr(web, "RequestKey") else "solon_events.key"
)
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "[::1]"})
"""The host names a gateway without a token answers (besides ``allowed_hosts``)."""
_CORS_EXPOSED_HEADERS = (
    "x-response-id, x-vercel-ai-ui-message-stream, x-solon-ignored, x-solon-deployment, "
    "x-solon-cache, retry-after"
)


class _Translator(Protocol):
    def feed(self, event: ChatEvent) -> list[Any]: ...

    def fail(self, error: BaseException | None, text: str | None = None) -> list[Any]: ...


class _NativeEvents:
    """The ``/events`` translator: each event as itself; a failure without an ERROR
    event (which cannot happen with a model's stream) as one."""

    def __init__(self) -> None:
        self.finished = False

    def feed(self, event: ChatEvent) -> list[ChatEvent]:
        if self.finished:
            return []
        self.finished = event.type.is_terminal
        return [event]

    def fail(self, error: BaseException | None, text: str | None = None) -> list[ChatEvent]:
        if self.finished:
            return []
        self.finished = True
        return [ChatEvent(EVENT_TYPES.ERROR, error=error, text=text or str(error))]


def _native_sse(event: ChatEvent) -> bytes:
    if event.error is None:
        return b"data: " + encode_event(event) + b"\n\n"
    data = event_to_json(event)
    data["error"] = _shown_error(data["error"])
    return b"data: " + orjson.dumps(data) + b"\n\n"


_SHOWN_ERROR_FIELDS = frozenset(
    {
        "type",
        "message",
        "status",
        "provider_message",
        "provider_error",
        "retry_after",
        "budget",
        "frames_received",
        "tool_name",
        "tool_call_id",
    }
)
_SHOWN_HEADERS = frozenset({"retry-after", "retry-after-ms", "x-request-id", "request-id"})
_SHOWN_HEADER_PREFIXES = ("x-ratelimit-", "ratelimit-", "anthropic-ratelimit-")


def _shown_error(error: Mapping[str, Any]) -> dict[str, Any]:
    """What a client of the gateway sees of an error: its type, message (redacted by the
    model) and own fields, and of the provider's response headers (named in lower case)
    only ``Retry-After``, the request id and the rate limits (not its cookies, account ids
    or anything else)."""
    shown = {name: value for name, value in error.items() if name in _SHOWN_ERROR_FIELDS}
    headers = {
        name.lower(): value
        for name, value in (error.get("headers") or {}).items()
        if name.lower() in _SHOWN_HEADERS or name.lower().startswith(_SHOWN_HEADER_PREFIXES)
    }
    if headers:
        shown["headers"] = headers
    return shown


def _vercel_wire(message_id: str | None = None) -> _Wire:
    encoder = VercelEncoder(message_id)
    return _Wire("vercel", encoder, vercel_sse, VERCEL_HEADERS, VERCEL_DONE)


def _agui_wire(run: AguiRun | None = None) -> _Wire:
    from ..adapters.agui import AguiEncoder, agui_sse

    if run is None:
        encoder = AguiEncoder()
    else:
        names = [spec.name for spec in run.client_tools]
        encoder = AguiEncoder(
            run.thread_id, run.run_id, client_tools=names, messages=run.agui_messages
        )
    return _Wire("agui", encoder, agui_sse, _SSE_HEADERS)


def _events_wire() -> _Wire:
    # A response's attempts (on its RESPONSE_END) say why those that failed did.
    told = _TOLD | {EVENT_TYPES.RESPONSE_END}
    return _Wire("events", _NativeEvents(), _native_sse, _SSE_HEADERS, told=told)


_WIRES: dict[str, Callable[[], _Wire]] = {
    "vercel": _vercel_wire,
    "agui": _agui_wire,
    "events": _events_wire,
}


_TOLD = frozenset({EVENT_TYPES.ERROR, EVENT_TYPES.STATUS})
"""The events whose texts may name an upstream's address (a failure, a retry's cause)."""


@attrs.define(eq=False)
class _Wire:
    """One response's encoding in protocol ``kind``: a translator, how each of its items
    is framed, and the SSE event that closes the stream. With ``shown`` (the gateway's
    deployments), the events of types ``told`` and the failures name the upstreams by
    deployment, never by address (and a failure is logged with its address)."""

    kind: str
    translator: _Translator
    frame: Callable[[Any], bytes]
    headers: Mapping[str, str]
    closing: bytes = b""
    told: frozenset[Any] = _TOLD
    shown: Deployments | None = None

    def encode(self, event: ChatEvent) -> list[bytes]:
        items = [self.frame(item) for item in self.translator.feed(event)]
        if self.shown is None or event.type not in self.told:
            return items
        if event.type is EVENT_TYPES.ERROR:
            logger.warning("response %s failed: %s", event.response_id, event.text)
        return [self.shown.shown_bytes(item) for item in items]

    def fail(self, error: BaseException | None, text: str | None = None) -> list[bytes]:
        items = [self.frame(item) for item in self.translator.fail(error, text)]
        if self.shown is None or not items:  # not shown, or the failure was told already
            return items
        logger.warning("a response failed: %s", text or error)
        return [self.shown.shown_bytes(item) for item in items]


class _Backlog:
    """The bytes waiting for the gateway's clients, all together, and their cap."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.size = 0


class _Outbox:
    """The SSE events of one response on their way to its client.

    The response's events are encoded as they come (:meth:`feed`, then :meth:`fail` or
    :meth:`close`), on the server's loop. ``limit`` bounds the bytes waiting for the
    client, and ``backlog`` those waiting for every client (a client that reads along,
    with less than a write's worth waiting, is never stopped by it): past either,
    ``on_overflow`` runs (it stops the model request) and the stream ends with the
    protocol's error event. :meth:`get` hands the waiting bytes out a write's worth at a
    time, so that no more than that sits in the connection's buffer; :meth:`discard`
    drops what the client will not read.

    While the writer waits in :meth:`get` with nothing waiting and its client takes what
    it is sent (the connection's buffer is empty), the reader writes an event's bytes to
    the client itself (:meth:`write_through`): a frame read from the model goes out in
    the same turn of the loop, with no switch to the writer's task.
    """

    def __init__(
        self, wire: _Wire, limit: int, backlog: _Backlog, on_overflow: Callable[[], None]
    ) -> None:
        self._wire = wire
        self._limit = limit
        self._backlog = backlog
        self._on_overflow = on_overflow
        self._items: deque[bytes] = deque()
        self._size = 0
        self._closed = False
        self._wake = asyncio.Event()
        self._idle: _Client | None = None
        """The client, while the writer waits for bytes with none waiting."""
        self.response_id: str | None = None
        self.started = asyncio.Event()

    def feed(self, event: ChatEvent) -> None:
        """Encode the response's next event."""
        if self._closed:
            return
        if self.response_id is None and event.response_id:
            self.response_id = event.response_id
        self.started.set()
        self._add(self._wire.encode(event), wake=self._idle is None)
        if self._size > self._limit:
            self._overflow(
                f"the client read too slowly: {self._size} bytes were waiting for it "
                f"(the limit is {self._limit}), so the response was stopped"
            )
        elif self._size > _WRITE_CHUNK and self._backlog.size > self._backlog.limit:
            self._overflow(
                f"the gateway's clients read too slowly: {self._backlog.size} bytes were "
                f"waiting for them (the limit is {self._backlog.limit}), {self._size} for "
                "this one, so its response was stopped"
            )

    def _overflow(self, reason: str) -> None:
        self._on_overflow()
        self.fail(ChatError(reason), None)

    def fail(self, error: BaseException | None, text: str | None = None) -> None:
        """End the stream with the protocol's error event (unless it has ended)."""
        if self._closed:
            return
        self._add(self._wire.fail(error, text))
        self.close()

    def close(self) -> None:
        """End the stream (with the protocol's closing event)."""
        if self._closed:
            return
        if self._wire.closing:
            self._add([self._wire.closing])
        self._closed = True
        self.started.set()
        self._wake.set()

    def _add(self, items: Iterable[bytes], wake: bool = True) -> None:
        for item in items:
            self._items.append(item)
            self._size += len(item)
            self._backlog.size += len(item)
        if wake:
            self._wake.set()

    async def write_through(self) -> None:
        """Write what waits to the client from the reader's task when the writer waits
        idle and the client's connection has nothing left to send; else (or when nothing
        waits) hand it to the writer."""
        client = self._idle
        if client is None or not self._items:
            return
        if not client.clear():
            self._wake.set()
            return
        try:
            await client.write(self._take())
        except ConnectionError:  # the client left: the writer finds it so and ends
            self._wake.set()
        if self._items:  # more than a write's worth
            self._wake.set()

    async def get(self, client: _Client) -> bytes | None:
        """The next SSE events (those waiting, joined, up to about a write's worth), None
        at the end; while none waits, ``client`` may be written to by
        :meth:`write_through`."""
        while not self._items:
            if self._closed:
                return None
            self._wake.clear()
            self._idle = client
            try:
                await self._wake.wait()
            finally:
                self._idle = None
        return self._take()

    def _take(self) -> bytes:
        """What waits, joined, up to about a write's worth."""
        items = self._items
        if self._size <= _WRITE_CHUNK:
            data = b"".join(items)
            items.clear()
        else:
            taken = [items.popleft()]
            size = len(taken[0])
            while items and size + len(items[0]) <= _WRITE_CHUNK:
                size += len(items[0])
                taken.append(items.popleft())
            data = b"".join(taken)
        self._size -= len(data)
        self._backlog.size -= len(data)
        return data

    def discard(self) -> None:
        """Drop what waits (the client is gone)."""
        self._backlog.size -= self._size
        self._size = 0
        self._items.clear()


def _nests_deeper(value: Any, limit: int) -> bool:
    """Whether JSON ``value`` nests arrays and objects more than ``limit`` levels deep
    (``[1]`` is one level): orjson encodes 254 levels and no more, so ``value`` inside
    ``254 - limit`` arrays encodes if and only if it does not (at orjson's speed)."""
    for _level in range(_ORJSON_DEPTH - limit):
        value = [value]
    try:
        orjson.dumps(value)
    except orjson.JSONEncodeError:
        return True
    return False


def _host_name(host: str) -> str:
    """The name of a ``Host`` header's value, lowercased, without its port."""
    host = host.strip().lower()
    if host.startswith("["):  # an IPv6 address: [::1]:8000
        return host.partition("]")[0] + "]"
    return host.partition(":")[0].rstrip(".")


class _Client:
    """A response's way to its client, watched for progress: while a write to it waits
    (the connection's buffers are full), :meth:`stalled` says whether the client has taken
    nothing from them for ``write_timeout`` seconds (None: never)."""

    def __init__(
        self,
        response: web.StreamResponse,
        write_timeout: float | None,
        transport: asyncio.BaseTransport | None = None,
    ) -> None:
        self._response = response
        self._timeout = write_timeout
        self._transport = transport
        self._since: float | None = None
        self._unsent = 0

    def clear(self) -> bool:
        """Whether the connection has sent all it was given (a write now goes out at once
        and waits for nothing)."""
        transport = self._transport
        return (
            isinstance(transport, asyncio.WriteTransport)
            and not transport.is_closing()
            and transport.get_write_buffer_size() == 0
        )

    async def write(self, data: bytes) -> None:
        """Write ``data`` (it waits while the client's buffers are full)."""
        self._since = time.monotonic()
        try:
            await self._response.write(data)
        finally:
            self._since = None

    async def write_eof(self) -> None:
        """End the response."""
        self._since = time.monotonic()
        try:
            await self._response.write_eof()
        finally:
            self._since = None

    def stalled(self, transport: asyncio.Transport) -> bool:
        """Whether a write has waited ``write_timeout`` seconds and the client took nothing
        of what waits in ``transport`` (its connection) meanwhile."""
        if self._timeout is None or self._since is None:
            return False
        unsent = transport.get_write_buffer_size()
        now = time.monotonic()
        if unsent < self._unsent:  # the client read: the kernel took some more
            self._since = now
        self._unsent = unsent
        return now - self._since >= self._timeout


def _drop(transport: asyncio.Transport) -> None:
    """Close a connection at once, with a reset: the bytes its client left unread are
    dropped too (a plain close would keep them, and the connection, until it reads)."""
    sock = transport.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    transport.abort()


async def _disconnected(request: web.BaseRequest, client: _Client | None = None) -> None:
    """Return once the client's connection is closed (polled: aiohttp has no callback),
    or once ``client`` has read nothing for its write timeout (its connection is then
    aborted)."""
    while True:
        transport = request.transport
        if transport is None or transport.is_closing():
            return
        if client is not None and client.stalled(transport):
            _drop(transport)
            return
        await asyncio.sleep(_WATCH_INTERVAL)


class Gateway:
    """The request handlers of the gateway for ``model``: :meth:`vercel`, :meth:`agui`,
    :meth:`events` (``POST`` a request, ``GET`` to resume), :meth:`stop`, :meth:`page`,
    :meth:`provider` (the provider routes) and :meth:`preflight` (CORS), each an aiohttp
    handler; :meth:`aclose` when done. ``model`` is a ChatModel, or a
    :class:`~solon_events.ModelGroup` (a fallback chain, a hedge, a router: one response
    each), which answers whatever model a client names; or a
    :class:`~solon_events.serve.models.ModelTable`, whose models answer by the name a
    provider route's client asks for (an unknown name gets the protocol's "model not
    found"; the other routes are served by its first model). :meth:`use` swaps the table.

    ``tools`` are the only tools that run on the server. ``token``: when set, every
    request but the page's needs ``Authorization: Bearer <token>``. ``max_body`` caps
    request bodies (bytes); ``max_buffer`` caps what waits for a slow client (bytes), and
    ``max_total_buffer`` what waits for all of them (a response that adds to it past the
    cap is stopped, unless its client reads along); a client that reads nothing for
    ``write_timeout`` seconds while a write waits for it is dropped (None: never).
    Served by :func:`serving` or :func:`run_app`, a request's head must arrive within
    ``header_timeout`` seconds of its first byte (of the connection, when nothing comes:
    the connection is closed), its body within ``body_timeout`` seconds (408), and at most
    ``max_connections`` connections are held (fewer under the file-descriptor limit; at
    the cap, a new one takes the place of the one that has waited longest for its
    request, or is answered 503 when each serves one): see
    :mod:`solon_events.serve.connections` (None: no timeout).
    ``cors_origins``: the origins (``"https://app.example"``) allowed to call from a
    browser; none by default. ``allowed_hosts``: host names (``"chat.example"``, any port)
    answered besides the loopback ones; without a token, a request whose ``Host`` names
    any other host gets 403 (a DNS-rebinding page speaks to 127.0.0.1 under its own
    name); with a token, every host is answered unless some are listed.

    ``redis`` (a URL or a :class:`~solon_events.serve.redis_log.RedisStreamLog`; the ``redis``
    extra) makes every response resumable: its encoded events go to a Redis stream, each
    SSE event carries its entry id, and a ``GET`` of the same path with
    ``?resume=<response id>`` and ``Last-Event-ID`` (or ``&after=<id>``) continues after
    that id on any process sharing the Redis. ``on_disconnect``: whether a response goes
    on when its client leaves (``"continue"``, the default with Redis) or is cancelled
    (``"cancel"``, the only choice without). ``approval_key`` (at least 16 bytes, the same
    on every replica) signs the responses paused for approval that are kept in Redis
    (:func:`~solon_events.serve.approval_store.approval_key`: by default the environment's
    ``SOLON_APPROVAL_KEY``, else one derived from ``token``); with ``redis`` and tools that
    wait for approval, one of them is required.

    ``metrics``: whether the gateway keeps Prometheus metrics (``GET /metrics``; True needs
    the ``metrics`` extra; None, the default: when it is installed).

    ``access``: the keys requests must carry, their limits, the spend log and the prices
    of models (an :class:`~solon_events.serve.access.Access`, built from a configuration's
    ``[keys.NAME]``, ``[spend_log]`` and ``[prices.MODEL]``); with keys, every request but
    the page's needs one (401 in the protocol's shape), may ask only for its models (403),
    and is held to its limits (429 with ``Retry-After``); keys replace ``token``.
    :meth:`use_access` swaps it (a reload).
    """

    def __init__(
        self,
        model: ChatModel | ModelGroup | ModelTable,
        *,
        tools: Iterable[Tool[..., Any] | Callable[..., Any]] = (),
        token: str | None = None,
        max_body: int = MAX_BODY,
        max_buffer: int = MAX_BUFFER,
        max_total_buffer: int = MAX_TOTAL_BUFFER,
        write_timeout: float | None = WRITE_TIMEOUT,
        header_timeout: float | None = HEADER_TIMEOUT,
        body_timeout: float | None = BODY_TIMEOUT,
        max_connections: int = MAX_CONNECTIONS,
        cors_origins: Iterable[str] = (),
        allowed_hosts: Iterable[str] = (),
        redis: str | RedisStreamLog | None = None,
        on_disconnect: Literal["continue", "cancel"] | None = None,
        metrics: bool | None = None,
        approval_key: bytes | str | None = None,
        access: Access | None = None,
    ) -> None:
        if on_disconnect not in (None, "continue", "cancel"):
            raise ValueError("on_disconnect must be 'continue' or 'cancel'")
        if on_disconnect == "continue" and redis is None:
            raise ValueError("on_disconnect='continue' needs redis: nobody could read the rest")
        if token is not None and not token:
            raise ValueError("token must be a non-empty string, or None for no token")
        if token is not None and access is not None and access.keys:
            raise ValueError("give keys or a token, not both: keys replace the token")
        if max_body <= 0 or max_buffer <= 0 or max_total_buffer <= 0:
            raise ValueError(
                "max_body, max_buffer and max_total_buffer must be positive byte counts"
            )
        for name, seconds in (
            ("write_timeout", write_timeout),
            ("header_timeout", header_timeout),
            ("body_timeout", body_timeout),
        ):
            if seconds is not None and not seconds > 0:
                raise ValueError(f"{name} must be a positive number of seconds, or None")
        if not isinstance(max_connections, int) or max_connections < 1:
            raise ValueError("max_connections must be a whole number, 1 or more")
        self.models = model if isinstance(model, ModelTable) else ModelTable.of(model)
        """The models served, by name (see :meth:`use`)."""
        self._deployments = Deployments(self.models)
        self.tools = ToolSet(tools)
        self._token = token.encode() if token else None
        self.access = access if access is not None else Access()
        """Who may ask for what, their limits and the spend log (see :meth:`use_access`)."""
        self.max_body = max_body
        self.max_buffer = max_buffer
        self.max_total_buffer = max_total_buffer
        self.write_timeout = write_timeout
        self.header_timeout = header_timeout
        self.body_timeout = body_timeout
        self.max_connections = max_connections
        self._backlog = _Backlog(max_total_buffer)
        self.cors_origins = frozenset(o.rstrip("/") for o in cors_origins)
        self.allowed_hosts = frozenset(h.lower().rstrip(".") for h in allowed_hosts)
        if isinstance(redis, str):
            from .redis_log import RedisStreamLog

            redis = RedisStreamLog(redis)
        self.log = redis
        self._approving = any(t.requires_approval is not False for t in self.tools.values())
        self.approvals: ApprovalStore = MemoryApprovalStore()
        """Where the responses paused for tool approval wait for their decisions (in Redis
        with ``redis``, where any replica finds them, signed); any
        :class:`~solon_events.serve.approval_store.ApprovalStore`."""
        if redis is not None:
            key = approval_key_of(approval_key, token)
            if key is None and self._approving:
                raise ValueError(
                    "tools that wait for approval, kept in Redis, need a key to sign them "
                    f"with, the same on every replica: approval_key=, {APPROVAL_KEY_ENV} "
                    "in the environment, or a token"
                )
            if key is not None:
                self.approvals = RedisApprovalStore(redis, key=key)
        self.on_disconnect = on_disconnect or ("continue" if redis is not None else "cancel")
        self._running: dict[str, Callable[[], None]] = {}
        self._stored: set[StoredResponse] = set()
        self._listener: asyncio.Task[None] | None = None
        self.metrics: GatewayMetrics | None = _metrics(self, metrics)
        """The gateway's Prometheus metrics (:mod:`solon_events.serve.metrics`), or None."""
        self.operations = Operations(self)
        """The operator endpoints' handlers (:mod:`solon_events.serve.operations`)."""

    def __repr__(self) -> str:
        return (
            f"Gateway(model={self.model!r}, tools={list(self.tools)}, "
            f"token={'set' if self._token else 'none'})"
        )

    @property
    def model(self) -> ChatModel | ModelGroup:
        """The model of the routes that name none (the table's first)."""
        return self.models.default

    def use(self, models: ModelTable) -> None:
        """Serve ``models`` from now on: the requests in flight finish on the table they
        started with, whose models ``models`` does not keep are closed after them."""
        old, self.models = self.models, models
        self._deployments = Deployments(models)
        if old is not models:
            old.retire(keep=models)

    # The handlers.

    async def vercel(self, request: web.Request) -> web.StreamResponse:
        """``POST``: a ``useChat`` request in, the UI message stream v1 out; ``GET``: resume."""
        return await self._serve(request, "vercel", self._vercel)

    async def agui(self, request: web.Request) -> web.StreamResponse:
        """``POST``: an AG-UI ``RunAgentInput`` in, AG-UI events out (``agui`` extra);
        ``GET``: resume."""
        return await self._serve(request, "agui", self._agui)

    async def events(self, request: web.Request) -> web.StreamResponse:
        """``POST``: ``{"messages": [...]}`` in, our events as SSE JSON objects out;
        ``GET``: resume."""
        return await self._serve(request, "events", self._events)

    async def stop(self, request: web.Request) -> web.Response:
        """``POST`` ``{"response_id": ...}``: stop that response wherever it runs (with
        Redis, any replica); 202, or 404 when no such response is running."""
        try:
            body = await self._accept(request)
            response_id = body.get("response_id") if isinstance(body, dict) else None
            if not isinstance(response_id, str) or not response_id:
                raise _HttpError(400, 'the body must be {"response_id": "<response id>"}')
            stopping = await self._request_stop(response_id)
        except _HttpError as exc:
            return self._error(request, exc)
        if not stopping:
            return self._error(request, _HttpError(404, f"no running response {response_id}"))
        return web.json_response(
            {"response_id": response_id, "stopping": True},
            status=202,
            headers=self._cors_headers(request),
        )

    async def _request_stop(self, response_id: str) -> bool:
        local = self._running.get(response_id)
        if local is not None:
            local()
            return True
        if self.log is None:
            return False
        try:
            for kind in _WIRES:
                key = self.log.key(kind, response_id)
                if await self.log.exists(key) and not await self.log.ended(key):
                    await self.log.request_stop(response_id)
                    return True
        except ChatError as exc:
            raise _HttpError(503, str(exc)) from None
        return False

    def _vercel(self, body: Any) -> tuple[ChatPrompt, _Wire]:
        return self._prompt(messages_from_vercel(body)), _vercel_wire()

    def _agui(self, body: Any) -> tuple[ChatPrompt, _Wire]:
        from ..adapters.inputs import run_from_agui

        run = run_from_agui(body)
        return self._agui_prompt(run, run.messages), _agui_wire(run)

    def _agui_prompt(self, run: AguiRun, messages: Any) -> ChatPrompt:
        """The prompt of an AG-UI run: ``messages`` with the server's tools and the run's
        frontend tools."""
        self._check_client_tools(run)
        return self._prompt(messages).client_tools(*run.client_tools)

    def _check_client_tools(self, run: AguiRun) -> None:
        """A ValueError when the run's frontend tools are named as the server's tools."""
        names = [spec.name for spec in run.client_tools]
        clashes = sorted(name for name in names if name in self.tools)
        if clashes:
            raise ValueError(
                f"the client declares tools the server has: {', '.join(clashes)}; "
                "rename the client's tools"
            )

    def _events(self, body: Any) -> tuple[ChatPrompt, _Wire]:
        return self._prompt(messages_from_events(body)), _events_wire()

    async def _admit(
        self,
        request: web.BaseRequest,
        table: ModelTable,
        name: str,
        prompt: ChatPrompt,
        max_output: int | None = None,
    ) -> Admission:
        """The request for the model served as ``name``, admitted by its key (its
        estimate reserved): 403 or 429 when not."""
        model = table.get(name) or table.default
        key = request.get(_KEY)
        if key is None:  # no estimate to reserve: the spend log's, if any
            return Admission(self.access, None, name, None, 0, model)
        return await self.access.admit(key, name, model, request_of(prompt, name), max_output)

    async def _serve(
        self,
        request: web.Request,
        kind: str,
        start: Callable[[Any], tuple[ChatPrompt, _Wire]],
    ) -> web.StreamResponse:
        """Check and read the request, ``start`` the response, stream it (or say why not);
        a GET resumes a stored response of ``kind``."""
        try:
            if request.method == "GET":
                return await self._resume(request, kind)
            body = await self._accept(request)
            table = self.models
            prompt, wire = await self._continued(kind, body) or start(body)
            admission = await self._admit(request, table, table.default_name, prompt)
        except _HttpError as exc:
            return self._error(request, exc)
        except ValueError as exc:
            return self._error(request, _HttpError(400, str(exc)))
        except MissingExtraError as exc:  # /agui without the agui extra: say what to install
            return self._error(request, _HttpError(501, str(exc)))
        events = admission.events(admission.prompt(prompt).astream())
        wire.shown = self._deployments
        if self._approving:
            events = self._keeping_approvals(events)
        if self.metrics is not None:
            events = self.metrics.observed(events, kind, table.default_name)
        table.enter()
        if self.log is not None:  # the response may outlive this request
            return await self._stream_stored(request, ending_with(events, table.leave), wire)
        try:
            return await self._stream(request, events, wire)
        finally:
            table.leave()

    # Tool approval.

    async def _continued(self, kind: str, body: Any) -> tuple[ChatPrompt, _Wire] | None:
        """A request that brings decisions on tool calls of a response paused for approval
        (``useChat``'s approval responses, AG-UI ``resume`` entries, ``/events``'
        ``approvals``): that response, continued. None for any other request."""
        from ..adapters import inputs

        if kind == "vercel":
            found = inputs.approvals_from_vercel(body)
            if found is None:
                return None
            message_id, decisions = found
            pending = await self._paused(decisions)
            prompt, wire = self._prompt(pending), _vercel_wire(message_id or None)
        elif kind == "agui":
            if not (isinstance(body, Mapping) and body.get("resume")):
                return None
            run = inputs.run_from_agui(body)
            decisions = inputs.approvals_from_agui(run)
            self._check_client_tools(run)  # before the paused response is taken
            pending = await self._paused(decisions)
            prompt, wire = self._agui_prompt(run, pending), _agui_wire(run)
        else:
            found_events = inputs.approvals_from_events(body)
            if found_events is None:
                return None
            decisions = found_events
            pending = await self._paused(decisions)
            prompt, wire = self._prompt(pending), _events_wire()
        for call in pending.tool_calls:
            call_id = call.id or ""
            decision = decisions[pending.approval_id(call_id)]
            if decision.approved:
                prompt = prompt.approve(call_id, arguments=decision.arguments)
            else:
                prompt = prompt.deny(call_id, decision.reason)
        return prompt, wire

    async def _paused(self, decisions: Mapping[str, ApprovalDecision]) -> PendingApproval:
        """The paused response ``decisions`` (by approval id) answer, taken from
        :attr:`approvals` once they answer each of its pending calls: 400 when they name
        another response or leave a call undecided, 404 when no such response waits
        (unknown, expired, or continued already), 503 when the store failed."""
        response_ids = {parse_approval_id(approval_id)[0] for approval_id in decisions}
        if len(response_ids) != 1:
            raise ValueError("the decisions answer tool calls of more than one paused response")
        (response_id,) = response_ids
        gone = _HttpError(
            404,
            f"no response {response_id} waits for approval here "
            "(unknown, expired, or continued already)",
        )
        try:  # looked at first: decisions that do not answer it leave it as it was
            pending = await self.approvals.peek(response_id)
            if pending is None:
                raise gone
            asked = {pending.approval_id(call.id or "") for call in pending.tool_calls}
            if set(decisions) != asked:
                undecided = ", ".join(sorted(asked - set(decisions))) or "none"
                unknown = ", ".join(sorted(set(decisions) - asked)) or "none"
                raise ValueError(
                    "the decisions must answer each call that waits: not answered: "
                    f"{undecided}; not waiting: {unknown}"
                )
            taken = await self.approvals.take(response_id)
        except ChatError as exc:
            raise _HttpError(503, str(exc)) from None
        if taken is None:  # another request took it meanwhile
            raise gone
        return taken

    async def _keeping_approvals(
        self, events: AsyncIterator[ChatEvent]
    ) -> AsyncIterator[ChatEvent]:
        """``events``; a response that pauses for approval is kept in :attr:`approvals`
        before its RESPONSE_END goes on, so that the client's decisions find it."""
        async for event in events:
            if event.type is EVENT_TYPES.RESPONSE_END and event.response is not None:
                pending = event.response.pending_approval
                if pending is not None:
                    await self.approvals.put(pending)
            yield event

    async def page(self, request: web.Request) -> web.Response:
        """``GET``: the chat page (one self-contained HTML file using ``POST /api/chat``)."""
        try:
            self._check_host(request)
        except _HttpError as exc:
            return self._error(request, exc)
        html = resources.files("solon_events.serve").joinpath("static/chat.html").read_bytes()
        return web.Response(
            body=html, content_type="text/html", charset="utf-8", headers=_PAGE_HEADERS
        )

    async def preflight(self, request: web.Request) -> web.Response:
        """``OPTIONS``: the CORS preflight (403 for an origin that is not listed)."""
        try:
            self._check_host(request)
        except _HttpError as exc:
            return self._error(request, exc)
        origin = request.headers.get("Origin")
        if origin is None or origin.rstrip("/") not in self.cors_origins:
            return web.Response(status=403, text="cross-origin requests are not allowed here")
        return web.Response(
            status=204,
            headers={
                **self._cors_headers(request),
                "Access-Control-Allow-Methods": "POST, GET, OPTIONS",
                "Access-Control-Allow-Headers": _CORS_REQUEST_HEADERS,
                "Access-Control-Max-Age": "600",
            },
        )

    # Checks, in order: origin, token, content type, size, JSON.

    def _cors_headers(self, request: web.BaseRequest) -> dict[str, str]:
        origin = request.headers.get("Origin")
        if origin is None or origin.rstrip("/") not in self.cors_origins:
            return {}
        return {
            "Access-Control-Allow-Origin": origin,
            "Access-Control-Expose-Headers": _CORS_EXPOSED_HEADERS,
            "Vary": "Origin",
        }

    @property
    def _guarded(self) -> bool:
        """Whether requests need a token or a key."""
        return self._token is not None or bool(self.access.keys)

    def _check_host(self, request: web.BaseRequest) -> None:
        host = request.headers.get("Host")
        if host is None or (self._guarded and not self.allowed_hosts):
            return  # no Host: not a browser's request
        name = _host_name(host)
        if name not in LOOPBACK_HOSTS and name not in self.allowed_hosts:
            served = "the listed hosts" if self._guarded else "loopback names and the listed hosts"
            raise _HttpError(
                403,
                f"the host {host!r} is not served here: only {served} are "
                "(Gateway(allowed_hosts=...), solon-events serve --allow-host)",
            )

    def _check_origin(self, request: web.BaseRequest) -> None:
        origin = request.headers.get("Origin")
        if origin is None:  # not a browser's cross-site request
            return
        own = f"{request.scheme}://{request.host}"
        if origin.rstrip("/") != own and origin.rstrip("/") not in self.cors_origins:
            raise _HttpError(403, f"requests from {origin} are not allowed (CORS is closed)")

    def _check_token(self, request: web.BaseRequest) -> None:
        if self.access.keys:
            request[_KEY] = self.access.authenticate(request.headers)
            return
        if self._token is None:
            return
        given = _credential(request)
        # compare_digest takes as long whatever the first differing byte is.
        if given is None or not hmac.compare_digest(given.encode(), self._token):
            raise _HttpError(
                401, "a valid bearer token is required", {"WWW-Authenticate": "Bearer"}
            )

    def _check(self, request: web.BaseRequest) -> None:
        """The checks of every request but the page's: host, origin, token."""
        self._check_host(request)
        self._check_origin(request)
        self._check_token(request)

    async def _accept(self, request: web.BaseRequest) -> Any:
        """The request's JSON body, after the host, origin, token, type and size checks."""
        self._check(request)
        self._check_size(request)
        try:
            body = await asyncio.wait_for(self._read_body(request), self.body_timeout)
        except asyncio.TimeoutError:
            raise _HttpError(
                408, f"the request body did not arrive within {self.body_timeout:g} s"
            ) from None
        try:
            value = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise _HttpError(400, f"the request body is not valid JSON: {exc}") from None
        if _nests_deeper(value, MAX_DEPTH):
            raise _HttpError(
                400,
                f"the request body nests arrays and objects more than {MAX_DEPTH} levels "
                "deep: the gateway cannot encode it into a model request",
            )
        return value

    def _check_size(self, request: web.BaseRequest) -> None:
        """The content type and the announced length of the body."""
        if request.content_type != "application/json":
            raise _HttpError(
                415, f"the body must be application/json, not {request.content_type or 'untyped'}"
            )
        if request.content_length is not None and request.content_length > self.max_body:
            raise self._too_large()

    def _too_large(self) -> _HttpError:
        return _HttpError(413, f"the request body is larger than {self.max_body} bytes")

    async def _read_body(self, request: web.BaseRequest) -> bytearray:
        body = bytearray()
        try:
            while chunk := await request.content.read(64 * 1024):
                body += chunk
                if len(body) > self.max_body:
                    raise self._too_large()
        except ConnectionError:  # the client left: nobody reads the answer
            raise _HttpError(499, "the client closed the connection") from None
        return body

    async def expect(self, request: web.Request) -> web.StreamResponse | None:
        """The answer to ``Expect: 100-continue`` (an aiohttp ``expect_handler``): the
        checks that need no body (host, origin, token, content type, announced length)
        made before ``100 Continue``, so that a body over the limit is refused (413) before
        it is sent."""
        if request.headers.get("Expect", "").lower() != "100-continue":
            return self._refusal(request, _HttpError(417, "only Expect: 100-continue is known"))
        try:
            self._check(request)
            self._check_size(request)
        except _HttpError as exc:
            return self._refusal(request, exc)
        await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        request.writer.output_size = 0  # the answer's own size starts after it, as aiohttp's
        return None

    def _refusal(self, request: web.Request, error: _HttpError) -> web.Response:
        """``error`` in the route's shape (a provider's, or ours), on a connection closed
        after it (its body was not read)."""
        route = request.match_info.route.resource
        path = route.canonical if route is not None else request.path
        format = provider_routes.PROVIDER_ROUTES.get(path)
        answer = (
            self._provider_error(request, format, error)
            if format is not None
            else self._error(request, error)
        )
        answer.force_close()
        return answer

    def _error(self, request: web.BaseRequest, error: _HttpError) -> web.Response:
        answer = web.json_response(
            {"error": error.message},
            status=error.status,
            headers={**error.headers, **self._cors_headers(request)},
        )
        if error.status in _CLOSING:
            answer.force_close()
        return answer

    def _prompt(self, messages: Any) -> ChatPrompt:
        prompt = self.model.prompt(messages)
        return prompt.tools(*self.tools.values()) if self.tools else prompt

    # The provider routes.

    async def provider(self, request: web.Request) -> web.StreamResponse:
        """``POST`` to a provider route
        (:data:`~solon_events.serve.provider_routes.PROVIDER_ROUTES`): a provider SDK's request
        in, run on the model it names with the client's tools only (none of the server's
        runs), its answer out in the same wire format, streamed or whole; the deployment
        that answered in the ``x-solon-deployment`` header."""
        route = request.match_info.route.resource
        path = route.canonical if route is not None else request.path
        format = provider_routes.PROVIDER_ROUTES[path]
        try:
            body = await self._accept(request)
            client = provider_routes.read_route_request(
                path, body, model=request.match_info.get("model", ""), query=request.query
            )
            table = self.models
            model = table.get(client.model)
            if model is None:
                raise _HttpError(404, provider_routes.model_not_found(format, client.model))
            prompt = provider_routes.route_prompt(model, client)
            cached = getattr(model, "cache", None) is not None
            if cached:
                mode = provider_routes.cache_mode(request.headers.get("Cache-Control"))
                prompt = prompt.cache(mode)
            admission = await self._admit(
                request,
                table,
                table.answer_name(client.model),
                prompt,
                client.options.max_tokens,
            )
        except _HttpError as exc:
            return self._provider_error(request, format, exc)
        except ValueError as exc:
            return self._provider_error(request, format, _HttpError(400, str(exc)))
        except Exception as exc:  # a fault of the gateway's: still in the client's shape
            logger.exception("reading a request to %s failed", path)
            failed = _HttpError(
                500, f"the gateway failed to read the request: {type(exc).__name__}"
            )
            return self._provider_error(request, format, failed)
        table.enter()
        try:
            return await self._provider(request, format, client, prompt, table, cached, admission)
        finally:
            table.leave()

    async def _provider(
        self,
        request: web.Request,
        format: str,
        client: ClientRequest,
        prompt: ChatPrompt,
        table: ModelTable,
        cached: bool,
        admission: Admission,
    ) -> web.StreamResponse:
        name = table.answer_name(client.model)
        headers = {"x-solon-ignored": ignored_header(client.ignored)} if client.ignored else {}
        events = admission.events(admission.prompt(prompt).astream())
        if self.metrics is not None:
            events = self.metrics.observed(events, format, name)
        if not client.stream:
            return await self._provider_body(request, format, events, headers, name, cached)
        head: list[ChatEvent] = []
        try:
            if not await _until(provider_routes.read_head(events, head), request):
                return web.Response(status=499)
        except ChatError as exc:
            return self._upstream_error(request, format, exc)
        encoder = provider_routes.route_encoder(client, name)
        headers.update(self._shown_headers(provider_routes.deployment_header(head)))
        if cached:
            headers.update(provider_routes.cache_header(head))
        wire = _Wire(
            format,
            provider_routes.WireTranslator(encoder),
            _as_is,
            {**_SSE_HEADERS, "Content-Type": encoder.media_type, **headers},
            shown=self._deployments,
        )
        return await self._stream(request, events, wire, head)

    async def _provider_body(
        self,
        request: web.Request,
        format: str,
        events: AsyncIterator[ChatEvent],
        headers: Mapping[str, str],
        name: str,
        cached: bool = False,
    ) -> web.StreamResponse:
        done: list[Any] = []

        async def run() -> None:
            async for event in events:
                if event.type is EVENT_TYPES.RESPONSE_END:
                    done.append(event.response)

        try:
            if not await _until(run(), request):
                return web.Response(status=499)
        except ChatError as exc:
            return self._upstream_error(request, format, exc)
        body = orjson.dumps(response_body(format, done[0], model=name))
        headers = {
            **headers,
            **self._shown_headers(provider_routes.answered_by(done[0])),
            **self._cors_headers(request),
            "Content-Type": "application/json",
        }
        if cached:
            headers[provider_routes.CACHE_HEADER] = "hit" if done[0].cached else "miss"
        return await self._send_whole(request, body, headers)

    def _shown_headers(self, headers: Mapping[str, str]) -> dict[str, str]:
        """``headers`` with no upstream's address in their values (see
        :class:`~solon_events.serve.deployments.Deployments`)."""
        return {key: self._deployments.shown(value) for key, value in headers.items()}

    async def _send_whole(
        self, request: web.Request, body: bytes, headers: Mapping[str, str]
    ) -> web.StreamResponse:
        """Answer with ``body`` whole, written as streams are: a client that reads nothing
        of it for ``write_timeout`` seconds is dropped."""
        response = web.StreamResponse(headers=headers)
        response.content_length = len(body)
        client = _Client(response, self.write_timeout)

        async def send() -> None:
            for start in range(0, len(body), _WRITE_CHUNK):
                await client.write(body[start : start + _WRITE_CHUNK])
            await client.write_eof()

        with contextlib.suppress(ConnectionError):
            await response.prepare(request)
            await _until(send(), request, client)
        return response

    def _upstream_error(
        self, request: web.BaseRequest, format: str, error: ChatError
    ) -> web.Response:
        """The upstream's failure before its answer, in the provider's error shape, naming
        the deployment (the address goes to the gateway's log only)."""
        status, message, headers = upstream_failure(error)
        logger.warning("the upstream failed before its answer: %s", error)
        shown = _HttpError(status, self._deployments.shown(message), headers)
        return self._provider_error(request, format, shown)

    def _provider_error(
        self, request: web.BaseRequest, format: str, error: _HttpError
    ) -> web.Response:
        """``error`` in the provider's own error shape."""
        answer = web.Response(
            body=orjson.dumps(error_body(format, error.status, error.message)),
            status=error.status,
            content_type="application/json",
            headers={**error.headers, **self._cors_headers(request)},
        )
        if error.status in _CLOSING:
            answer.force_close()
        return answer

    # Streaming.

    async def _stream(
        self,
        request: web.Request,
        events: AsyncIterator[ChatEvent],
        wire: _Wire,
        head: Iterable[ChatEvent] = (),
    ) -> web.StreamResponse:
        """Serve a response straight from the model to this one client: the model's
        events (after ``head``, those read of them already) are read on this loop, in a
        task of their own, while this one writes."""
        running: list[asyncio.Task[None]] = []

        def stop() -> None:  # cancelling the reading task closes the model's connection
            for task in running:
                task.cancel()

        outbox = _Outbox(wire, self.max_buffer, self._backlog, stop)
        for event in head:  # read already: the response has started
            outbox.feed(event)
        running.append(asyncio.ensure_future(_read(events, outbox)))
        rid = None
        try:
            if not outbox.started.is_set() and not await _until(outbox.started.wait(), request):
                return web.Response(status=499)
            rid = outbox.response_id
            if rid:
                self._running[rid] = stop
            response, _gone = await self._send(request, wire, rid, lambda c: _pump(outbox, c))
            return response
        finally:
            stop()
            await asyncio.wait(running)
            # A cancelled task keeps its CancelledError, whose traceback keeps the outbox
            # and so stop() and this list: let go of the task, not to wait for the cyclic
            # collector to free what the response held.
            running.clear()
            outbox.discard()
            if rid:
                self._running.pop(rid, None)

    async def _stream_stored(
        self, request: web.Request, events: AsyncIterator[ChatEvent], wire: _Wire
    ) -> web.StreamResponse:
        """Serve a response through the Redis log: written there as it comes, read back."""
        from .resume import StoredResponse, send_entries

        assert self.log is not None
        await self._listen_for_stops()
        stored = StoredResponse(self.log, wire, on_end=self._forget)
        self._stored.add(stored)
        stored.run(events)
        gone = True
        try:
            if not await _until(stored.started.wait(), request):
                return web.Response(status=499)
            key, rid = stored.key, stored.response_id
            if key is not None and stored.failure is not None:
                # Redis failed before it held anything; the response may have ended in the
                # meantime, its events gone: nothing was sent yet, so say it in the status.
                unstored = _HttpError(503, f"the response could not be stored: {stored.failure}")
                return self._error(request, unstored)
            if key is None:  # the model failed before its first event: say why here
                closing = [wire.closing] if wire.closing else []
                failure = [*wire.fail(stored.failure), *closing]
                response, gone = await self._send(request, wire, rid, _writing(failure))
                return response
            if not stored.ended:  # one that ended already was forgotten: not kept again
                self._running[rid or ""] = stored.stop
            log = self.log
            response, gone = await self._send(
                request, wire, rid, lambda c: send_entries(log, key, None, c, _WIRES[wire.kind]())
            )
            return response
        finally:
            if gone and self.on_disconnect == "cancel":
                stored.stop()

    async def _resume(self, request: web.Request, kind: str) -> web.StreamResponse:
        """``GET ?resume=<response id>`` with ``Last-Event-ID`` or ``&after=<id>``."""
        from .resume import send_entries

        self._check(request)
        response_id = request.query.get("resume")
        if not response_id:
            raise _HttpError(400, "a GET here resumes a response: ?resume=<response id>")
        if self.log is None:
            raise _HttpError(404, "responses cannot be resumed here (the gateway has no Redis)")
        after = request.headers.get("Last-Event-ID") or request.query.get("after") or None
        key = self.log.key(kind, response_id)
        try:
            known = await self.log.exists(key)
        except ChatError as exc:
            raise _HttpError(503, str(exc)) from None
        if not known:
            raise _HttpError(404, f"no response {response_id} to resume (unknown, or expired)")
        log, wire = self.log, _WIRES[kind]()
        response, _gone = await self._send(
            request, wire, response_id, lambda c: send_entries(log, key, after, c, wire)
        )
        return response

    async def _send(
        self,
        request: web.Request,
        wire: _Wire,
        response_id: str | None,
        pump: Callable[[_Client], Awaitable[None]],
    ) -> tuple[web.StreamResponse, bool]:
        """Start the SSE response and run ``pump`` into it until it ends or the client
        leaves (or reads nothing for ``write_timeout`` seconds: it is dropped); the
        response, and whether the client left first."""
        headers = {**wire.headers, **self._cors_headers(request)}
        if response_id:
            headers["x-response-id"] = response_id
        response = web.StreamResponse(headers=headers)
        client = _Client(response, self.write_timeout, request.transport)

        async def send() -> None:
            await pump(client)
            await client.write_eof()

        try:
            await response.prepare(request)
            finished = await _until(send(), request, client)
            return response, not finished
        except ConnectionError:
            return response, True

    def _forget(self, stored: StoredResponse) -> None:
        self._stored.discard(stored)
        if stored.response_id and self._running.get(stored.response_id) == stored.stop:
            del self._running[stored.response_id]

    async def _listen_for_stops(self) -> None:
        """Start (once) the task that stops local responses asked to stop on any replica."""
        if self.log is None or (self._listener is not None and not self._listener.done()):
            return
        ready = asyncio.Event()
        log = self.log

        async def listen() -> None:
            with contextlib.suppress(ChatError):
                async for response_id in log.stop_requests(ready.set):
                    stop = self._running.get(response_id)
                    if stop is not None:
                        stop()
            ready.set()

        self._listener = asyncio.ensure_future(listen())
        await ready.wait()

    def use_access(self, access: Access) -> None:
        """Admit requests by ``access`` from now on (a reloaded configuration's keys): the
        requests in flight keep the one they were admitted by; what ``access`` does not
        keep of the old one (a spend log replaced) is closed."""
        old, self.access = self.access, access
        if old is not access:
            retire(old, access)

    async def aclose(self) -> None:
        """Stop the responses still running here and let their streams end; close Redis,
        the spend log and the keys' counts."""
        for stored in list(self._stored):
            stored.stop()
        if self.log is not None:
            done = [stored.done() for stored in list(self._stored)]
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.gather(*done, return_exceptions=True), 5)
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(BaseException):
                await self._listener
        if self.log is not None:
            await self.log.aclose()
        await self.operations.aclose()
        self.access.close()


def _metrics(gateway: Gateway, wanted: bool | None) -> GatewayMetrics | None:
    """The gateway's metrics: kept when ``wanted`` (None: when the extra is installed)."""
    from .metrics import GatewayMetrics

    if wanted is False:
        return None

    def model_of(name: str, label: str) -> str | None:
        model = gateway.models.get(name)
        if isinstance(model, ChatModel):
            return model.model
        if model is not None and label in model.labels:
            member = model.members[model.labels.index(label)]
            return member.model if isinstance(member, ChatModel) else None
        return None

    try:
        return GatewayMetrics(model_of=model_of)
    except MissingExtraError:
        if wanted:
            raise
        return None


def _credential(request: web.BaseRequest) -> str | None:
    """The token a request carries: ``Authorization: Bearer``, or the key header of the
    provider SDKs that send their key otherwise (``x-api-key``: anthropic,
    ``x-goog-api-key``: google-genai)."""
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() == "bearer":
        return given.strip()
    for name in ("x-api-key", "x-goog-api-key"):
        if name in request.headers:
            return request.headers[name].strip()
    return None


async def _until(
    work: Awaitable[Any], request: web.BaseRequest, client: _Client | None = None
) -> bool:
    """Run ``work`` until it is done (True) or the client disconnects first, or stops
    reading ``client``'s writes (False)."""
    task = asyncio.ensure_future(work)
    watch = asyncio.ensure_future(_disconnected(request, client))
    told = False  # what the work raised, raised to the caller
    try:
        await asyncio.wait({task, watch}, return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            told = True
            task.result()
            return True
        return False
    finally:
        watch.cancel()
        if not told:
            task.cancel()
            task.add_done_callback(_left_behind)


def _left_behind(task: asyncio.Future[Any]) -> None:
    """What a client's work that was left behind (the client went away) raised: a write
    to the closed connection (the cancellation does not always stop the work before its
    next write: the chaos soak saw it about once in 170 responses) is expected, not a
    traceback for the log; anything else is logged."""
    if task.cancelled():
        return
    error = task.exception()
    if error is not None and not isinstance(error, ConnectionError):
        logger.error("a client's response failed after it left", exc_info=error)


async def _read(events: AsyncIterator[ChatEvent], outbox: _Outbox) -> None:
    """Feed ``events`` to ``outbox`` until they end; cancelled, stop reading them (which
    closes the model request's connection) and end the stream with the protocol's abort."""
    try:
        async with contextlib.aclosing(events):  # type: ignore[type-var]
            async for event in events:
                outbox.feed(event)
                await outbox.write_through()
    except asyncio.CancelledError:
        outbox.feed(ChatEvent(EVENT_TYPES.ABORT, text="stopped", response_id=outbox.response_id))
        outbox.close()
        raise
    except Exception as exc:  # after its ERROR event: the protocol's error, if not yet sent
        outbox.fail(exc)
    else:
        outbox.close()


async def _pump(outbox: _Outbox, client: _Client) -> None:
    while (data := await outbox.get(client)) is not None:
        await client.write(data)


def _as_is(data: bytes) -> bytes:
    return data


def _writing(items: Iterable[bytes]) -> Callable[[_Client], Awaitable[None]]:
    async def write(client: _Client) -> None:
        for data in items:
            await client.write(data)

    return write


GATEWAY = web.AppKey("gateway", Gateway)
"""Where :func:`create_app` keeps its :class:`Gateway`: ``app[GATEWAY]``."""


def _taking_options_of(
    gateway: Callable[_Options, Gateway],
) -> Callable[[Callable[[Gateway], web.Application]], Callable[_Options, web.Application]]:
    """Make ``build(gateway)`` a function of ``gateway``'s parameters (the model and the
    options), so that they are written once, in ``Gateway.__init__``, and callers, type
    checkers and the docs see them all the same."""

    def decorate(build: Callable[[Gateway], web.Application]) -> Any:
        def create(*args: _Options.args, **options: _Options.kwargs) -> web.Application:
            return build(gateway(*args, **options))

        create.__name__ = create.__qualname__ = build.__name__
        create.__doc__ = build.__doc__
        create.__module__ = build.__module__
        returns = inspect.signature(build).return_annotation
        create.__signature__ = inspect.signature(gateway).replace(  # type: ignore[attr-defined]
            return_annotation=returns
        )
        return create

    return decorate


@_taking_options_of(Gateway)
def create_app(gateway: Gateway) -> web.Application:
    """An aiohttp Application serving ``model``: ``POST /api/chat`` (Vercel UI message
    stream v1), ``POST /agui`` (AG-UI), ``POST /events`` (our events), the same paths with
    ``GET ?resume=`` (with ``redis``), ``POST /stop``, ``GET /`` (the chat page), and the
    provider routes for the official SDKs (:mod:`solon_events.serve.provider_routes`:
    ``/v1/chat/completions``, ``/v1/responses``, ``/v1/messages``, Gemini's
    ``/v1beta/models/...``, ``/ollama/api/chat``, Cohere's ``/v2/chat`` and
    ``/v1beta/interactions``). The options are :class:`Gateway`'s; the gateway is closed
    with the application."""
    app = web.Application(client_max_size=gateway.max_body, middlewares=[_watching_requests])
    app[GATEWAY] = gateway
    app.router.add_get("/", gateway.page)
    for path, handler in (
        ("/api/chat", gateway.vercel),
        ("/agui", gateway.agui),
        ("/events", gateway.events),
    ):
        app.router.add_post(path, handler, expect_handler=gateway.expect)
        app.router.add_get(path, handler, allow_head=False)
        app.router.add_route("OPTIONS", path, gateway.preflight)
    app.router.add_post("/stop", gateway.stop, expect_handler=gateway.expect)
    app.router.add_route("OPTIONS", "/stop", gateway.preflight)
    for path in provider_routes.PROVIDER_ROUTES:
        app.router.add_post(path, gateway.provider, expect_handler=gateway.expect)
        app.router.add_route("OPTIONS", path, gateway.preflight)
    for method, path, name in OPERATOR_ROUTES:
        handler = getattr(gateway.operations, name)
        app.router.add_route(method, path, handler, expect_handler=gateway.expect)
        app.router.add_route("OPTIONS", path, gateway.preflight)

    async def close(_app: web.Application) -> None:
        await gateway.aclose()

    app.on_cleanup.append(close)
    return app


@web.middleware
async def _watching_requests(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    """Tell the connection guard (:func:`serving`) while a request is being served: its
    connection is not one waiting for a request."""
    connection = watched(request.transport)
    if connection is not None:
        connection.request_started()
    try:
        return await handler(request)
    finally:
        if connection is not None:
            connection.request_done()


@contextlib.asynccontextmanager
async def serving(
    app: web.Application,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    handler_cancellation: bool = True,
) -> AsyncIterator[str]:
    """Serve ``app`` while the ``async with`` block runs; yields its address,
    ``http://HOST:PORT`` (port 0: a free port). With ``handler_cancellation`` a client that
    disconnects cancels its handler at once (the gateway also notices by itself).

    The connections of an app of :func:`create_app` are guarded by its gateway's
    ``header_timeout`` and ``max_connections``
    (:class:`~solon_events.serve.connections.ConnectionGuard`), and while it is served a
    failed ``accept()`` is logged once a minute, not as a traceback each time."""
    runner = web.AppRunner(
        app,
        handler_cancellation=handler_cancellation,
        access_log=None,
        lingering_time=_LINGERING_TIME,
    )
    await runner.setup()
    gateway = app.get(GATEWAY)
    guard = ConnectionGuard(
        gateway.max_connections if gateway else MAX_CONNECTIONS,
        gateway.header_timeout if gateway else None,
    )
    assert runner.server is not None
    loop = asyncio.get_running_loop()
    server: asyncio.Server | None = None
    sweeping = asyncio.ensure_future(guard.sweep())
    try:
        with guard.accept_errors(loop):
            server = await loop.create_server(guard.protocol_factory(runner.server), host, port)
            bound_host, bound_port = server.sockets[0].getsockname()[:2]
            shown = f"[{bound_host}]" if ":" in str(bound_host) else bound_host
            yield f"http://{shown}:{bound_port}"
    finally:
        sweeping.cancel()
        if server is not None:
            server.close()
        await runner.cleanup()


async def run_app(
    app: web.Application,
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    announce: Callable[[str], None] = lambda url: print(url, flush=True),
    stop: asyncio.Event | None = None,
) -> None:
    """Serve ``app`` on ``host``:``port`` until ``stop`` is set (or the task is cancelled).

    ``announce`` is called with the address it listens on, ``http://HOST:PORT`` (the
    bound port when ``port`` is 0). A client that disconnects cancels its handler.
    """
    async with serving(app, host, port) as url:
        announce(url)
        await (stop or asyncio.Event()).wait()
