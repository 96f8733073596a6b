"""Transports: send an :class:`HttpRequest`, get the status and headers, then the body bytes.

A transport is the only network code and knows nothing else: not the frames, the dialect,
the time budgets or Rx (the model's :class:`~solon_events.client.stream_reader.StreamReader` does
all of that). ``ChatModel(..., transport=...)`` takes any object with an ``async
send(request)`` that returns an :class:`HttpResponse` (and, optionally, an ``async
aclose()`` the model calls when it is closed), as httpx's clients take a transport:

- :class:`AiohttpTransport` (the default): an aiohttp connection pool per event loop that
  sends (the model's private I/O loop, the callers' own loops); it follows a redirect
  within the request's origin only, so that its credentials never reach another host;
- :class:`ReplayTransport`: answers from recorded bytes, with no network (for tests, demos
  and notebooks).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import threading
import weakref
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Mapping,
)
from pathlib import Path
from typing import ClassVar, Protocol, runtime_checkable
from urllib.parse import urljoin, urlsplit

import aiohttp
import attrs
from multidict import CIMultiDict, CIMultiDictProxy

from ..dialects.base import HttpRequest
from ..event_model.errors import ChatError, ChatHttpError
from ..support.redaction import redact_url

__all__ = [
    "AiohttpTransport",
    "ChatTransport",
    "HttpResponse",
    "MAX_REDIRECTS",
    "RecordedResponse",
    "ReplayTransport",
]

Headers = Mapping[str, str] | Iterable[tuple[str, str]]


class HttpResponse:
    """A response as a transport returns it: ``status``, ``headers`` (case-insensitive) and
    ``reason`` at once, then the body as ``async for chunk in response``; :meth:`aclose`
    releases it (the model always calls it, also when it stops reading early)."""

    __slots__ = ("_body", "_close", "_closed", "headers", "reason", "status")

    def __init__(
        self,
        status: int,
        headers: Headers | None = None,
        body: AsyncIterable[bytes] | bytes = b"",
        *,
        reason: str | None = None,
        close: Callable[[], Awaitable[None] | None] | None = None,
    ) -> None:
        self.status = status
        self.headers: CIMultiDictProxy[str] = CIMultiDictProxy(CIMultiDict(headers or ()))
        self.reason = reason
        self._body = _chunks_of(body) if isinstance(body, (bytes, bytearray)) else body
        self._close = close
        self._closed = False

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._body.__aiter__()

    async def aclose(self) -> None:
        """Release the response (idempotent)."""
        if self._closed:
            return
        self._closed = True
        if self._close is not None:
            result = self._close()
            if inspect.isawaitable(result):
                await result

    def __repr__(self) -> str:
        return f"<HttpResponse {self.status}>"


async def _chunks_of(*chunks: bytes) -> AsyncIterator[bytes]:
    for chunk in chunks:
        if chunk:
            yield bytes(chunk)


@runtime_checkable
class ChatTransport(Protocol):
    """What ``ChatModel(..., transport=...)`` takes: ``await send(request)`` gives the
    response's status and headers, then its body as bytes. An ``async aclose()``, if the
    transport has one, is called when the model is closed.

    ``send`` runs on the loop of the response: the model's I/O loop for ``stream()`` and
    ``call()``, the caller's own loop for ``astream()`` and ``acall()``; so a transport
    must not hold on to one loop. An exception it raises (or raises while the body is
    read) is a connection error, retried before the first frame as ``max_retries`` says.
    ``aclose()`` is called on the I/O loop.
    """

    async def send(self, request: HttpRequest) -> HttpResponse:
        """Send ``request``; the response, its body still to be read."""
        ...


class AiohttpTransport:
    """The default transport: an aiohttp connection pool of ``connection_limit``
    connections (0: no limit) per event loop it sends from (the model's I/O loop for
    ``stream()`` and ``call()``, the caller's own loop for ``astream()`` and ``acall()``),
    made on first use in that loop.

    :meth:`aclose` closes them all (each on its own loop); a loop's pool is also closed,
    and forgotten, when the loop shuts down its async generators, as ``asyncio.run()`` does
    at its end (a loop closed without that is forgotten when the next pool is made), so
    that the transport keeps no ended loop alive.
    """

    def __init__(self, *, connection_limit: int = 100) -> None:
        if not isinstance(connection_limit, int) or connection_limit < 0:
            raise ValueError("connection_limit must be a whole number >= 0 (0: no limit)")
        self.connection_limit = connection_limit
        self._pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Pool] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"AiohttpTransport(connection_limit={self.connection_limit})"

    async def _client(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        with self._lock:
            pool = self._pools.get(loop)
        if pool is not None and not pool.session.closed:
            return pool.session
        session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=self.connection_limit),
            timeout=aiohttp.ClientTimeout(total=None),
            auto_decompress=True,
        )
        pool = _Pool(session, lambda: self._forget(loop))
        await pool.start()
        with self._lock:
            for ended in [other for other in self._pools if other.is_closed()]:
                del self._pools[ended]
            self._pools[loop] = pool
        return session

    def _forget(self, loop: asyncio.AbstractEventLoop) -> None:
        """``loop``'s pool was closed: the transport no longer holds it (nor the loop)."""
        with self._lock:
            pool = self._pools.get(loop)
            if pool is not None and pool.session.closed:
                del self._pools[loop]

    async def send(self, request: HttpRequest) -> HttpResponse:
        """POST ``request``; the response once its status line and headers are in.

        A redirect within ``request``'s origin (scheme, host and port) is followed with the
        same headers, up to :data:`MAX_REDIRECTS` times; a redirect to another origin is
        never followed (its credentials would go with it): it fails with a
        :class:`~solon_events.ChatHttpError` of the redirect's status that says where the
        provider tried to send the request (its user info and query values masked).
        """
        client = await self._client()
        method, url = "POST", request.url
        body: bytes | None = request.body_bytes()
        headers = dict(request.headers)
        redirects = 0
        while True:
            response = await client.request(
                method, url, data=body, headers=headers, allow_redirects=False
            )
            location = response.headers.get("Location") if response.status in _REDIRECTS else None
            if location is None:
                break
            response.release()
            target = _redirect_target(url, location)
            if target is None or _origin(target) != _origin(request.url):
                raise _redirect_error(request, response, target, "another origin; not followed")
            redirects += 1
            if redirects > MAX_REDIRECTS:
                raise _redirect_error(request, response, target, "too many redirects")
            # As aiohttp (and browsers) do: a 303, or a POST answered 301 or 302, becomes a GET.
            if response.status == 303 or (response.status in (301, 302) and method == "POST"):
                method, body = "GET", None
            url = target

        def close() -> None:
            # A body read to its end gives its connection back to the pool; any other
            # (an error, a disposal) closes it at once.
            if response.content.at_eof():
                response.release()
            else:
                response.close()

        return HttpResponse(
            response.status,
            response.headers.items(),
            response.content.iter_any(),
            reason=response.reason,
            close=close,
        )

    async def aclose(self) -> None:
        """Close the pool of the running loop, and have every other running loop close
        its own (idempotent)."""
        here = asyncio.get_running_loop()
        for loop, pool in self._take_pools():
            if loop is here:
                await pool.close()
            elif not loop.is_closed():
                with contextlib.suppress(RuntimeError):  # closed meanwhile
                    loop.call_soon_threadsafe(pool.close_soon)

    def close_soon(self) -> None:
        """Start closing the pool of the loop running in this thread, if any, without
        waiting (for a synchronous close from inside that loop: the closing is a task of
        the loop from now on, so that a loop about to end finishes it or closes the pool
        itself)."""
        try:
            here = asyncio.get_running_loop()
        except RuntimeError:
            return
        for _loop, pool in self._take_pools(here):
            pool.close_soon()

    def _take_pools(
        self, loop: asyncio.AbstractEventLoop | None = None
    ) -> list[tuple[asyncio.AbstractEventLoop, _Pool]]:
        """The pools (of ``loop`` only, if given), no longer this transport's."""
        with self._lock:
            taken = [(k, v) for k, v in self._pools.items() if loop is None or k is loop]
            for k, _pool in taken:
                del self._pools[k]
        return taken


MAX_REDIRECTS = 10
"""How many redirects within a request's origin :class:`AiohttpTransport` follows."""

_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_DEFAULT_PORTS = {"http": 80, "https": 443}


def _origin(url: str) -> tuple[str, str, int | None]:
    """``url``'s origin: its scheme, host and port (the scheme's default when not given)."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    return scheme, (parts.hostname or "").lower(), parts.port or _DEFAULT_PORTS.get(scheme)


def _redirect_target(url: str, location: str) -> str | None:
    """Where a redirect from ``url`` to ``location`` goes (None: no http(s) URL)."""
    try:
        target = urljoin(url, location)
        _origin(target)  # a bad port raises here
    except ValueError:
        return None
    return target if target.startswith(("http://", "https://")) else None


def _redirect_error(
    request: HttpRequest, response: aiohttp.ClientResponse, target: str | None, why: str
) -> ChatHttpError:
    shown = redact_url(target) if target is not None else "<an invalid URL>"
    headers = {name: value for name, value in response.headers.items()}
    headers.pop("Location", None)
    headers["Location"] = shown
    return ChatHttpError(
        response.status,
        f"the provider redirected the request to {shown}, {why} (credentials go to "
        "api_url's origin only: set api_url to that address if you trust it)",
        url=redact_url(request.url),
        headers=headers,
    )


async def pools_closed() -> None:
    """Wait until the pools of the running loop that :meth:`AiohttpTransport.aclose` (on
    another loop) asked to close are closed."""
    loop = asyncio.get_running_loop()
    closing = [task for task in _Pool._closing_tasks if task.get_loop() is loop]
    if closing:
        await asyncio.wait(closing)


async def _closing(
    session: aiohttp.ClientSession, closed: Callable[[], None]
) -> AsyncGenerator[None, None]:
    """Suspended until closed: by :meth:`_Pool.close`, or by the loop when it shuts its
    async generators down; then closes ``session``, on its loop, and calls ``closed``."""
    try:
        yield
    finally:
        try:
            await session.close()
        finally:
            closed()


class _Pool:
    """One loop's aiohttp session, and what closes it when that loop ends."""

    _closing_tasks: ClassVar[set[asyncio.Future[None]]] = set()

    def __init__(self, session: aiohttp.ClientSession, closed: Callable[[], None]) -> None:
        self.session = session
        self._closer = _closing(session, closed)
        self._closed: asyncio.Future[None] | None = None

    async def start(self) -> None:
        """Start the closer (in the pool's loop: the loop now knows it)."""
        await self._closer.__anext__()

    async def close(self) -> None:
        """Close the session (in its loop; idempotent)."""
        if self._closed is None:
            self._closed = asyncio.ensure_future(self._closer.aclose())
        await asyncio.shield(self._closed)

    def close_soon(self) -> None:
        """Close the session (in its loop), without waiting."""
        task = asyncio.ensure_future(self.close())
        self._closing_tasks.add(task)
        task.add_done_callback(self._closing_tasks.discard)


def _body_bytes(body: bytes | str | Path) -> bytes:
    if isinstance(body, Path):
        return body.read_bytes()
    return body.encode("utf-8") if isinstance(body, str) else bytes(body)


@attrs.frozen
class RecordedResponse:
    """One recorded answer for :class:`ReplayTransport`: its ``body`` (bytes, text, or the
    path of a file read at once), ``status``, ``headers``, and ``chunk_size`` (the body is
    delivered in pieces of that many bytes; None: in one piece)."""

    body: bytes = attrs.field(converter=_body_bytes, default=b"")
    status: int = 200
    headers: Mapping[str, str] = attrs.field(factory=dict)
    chunk_size: int | None = None

    def chunks(self) -> list[bytes]:
        """The body in the pieces it is delivered in."""
        size = self.chunk_size or len(self.body) or 1
        return [self.body[i : i + size] for i in range(0, len(self.body), size)]


Recorded = RecordedResponse | bytes | str | Path | BaseException


class ReplayTransport:
    """Answers each request with the next recorded response, from memory: no network.

    Each of ``responses`` is a :class:`RecordedResponse`, a body (bytes, text, or a
    :class:`~pathlib.Path` to read; answered 200), or an exception to raise instead, as a
    connection that fails would. ``chunk_size`` splits every body into pieces of that many
    bytes. The requests received are kept in :attr:`requests`. A request beyond the last
    response fails with a ChatError.

    >>> transport = ReplayTransport(Path("step0.sse"), Path("step1.sse"))  # doctest: +SKIP
    >>> ChatModel("http://recorded/v1/chat/completions", "m", transport=transport)  # doctest: +SKIP
    """

    def __init__(self, *responses: Recorded, chunk_size: int | None = None) -> None:
        self._responses = [_recorded(r, chunk_size) for r in responses]
        self._next = 0
        self.requests: list[HttpRequest] = []
        """Every request sent, in order."""

    def __repr__(self) -> str:
        return f"ReplayTransport({len(self.requests)} of {len(self._responses)} responses used)"

    async def send(self, request: HttpRequest) -> HttpResponse:
        """The next recorded response (or its exception, raised)."""
        self.requests.append(request)
        if self._next >= len(self._responses):
            raise ChatError(
                f"ReplayTransport has no recorded response left for request "
                f"{len(self.requests)} (it holds {len(self._responses)})"
            )
        recorded = self._responses[self._next]
        self._next += 1
        if isinstance(recorded, BaseException):
            raise recorded
        return HttpResponse(
            recorded.status, recorded.headers, _chunks_of(*recorded.chunks()), reason=None
        )


def _recorded(response: Recorded, chunk_size: int | None) -> RecordedResponse | BaseException:
    if isinstance(response, BaseException):
        return response
    if not isinstance(response, RecordedResponse):
        response = RecordedResponse(response)
    if chunk_size is not None and response.chunk_size is None:
        response = attrs.evolve(response, chunk_size=chunk_size)
    return response
