"""Transports: send an :class:`HttpRequest`, get the status and headers, then the body bytes.

A transport is the only network code and knows nothing else: not the frames, the dialect,
the time budgets or Rx (the model's :class:`~solon_events.stream_reader.StreamReader` does
all of that). ``ChatModel(..., transport=...)`` takes any object with an ``async
send(request)`` that returns an :class:`HttpResponse` (and, optionally, an ``async
aclose()`` the model calls when it is closed), as httpx's clients take a transport:

- :class:`AiohttpTransport` (the default): one aiohttp connection pool, on the model's
  private I/O loop;
- :class:`ReplayTransport`: answers from recorded bytes, with no network (for tests, demos
  and notebooks).
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from typing import Protocol, runtime_checkable

import aiohttp
import attrs
from multidict import CIMultiDict, CIMultiDictProxy

from .dialects.base import HttpRequest
from .errors import ChatError

__all__ = [
    "AiohttpTransport",
    "ChatTransport",
    "HttpResponse",
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

    ``send`` runs on the model's I/O loop; an exception it raises (or raises while the body
    is read) is a connection error, retried before the first frame as ``max_retries`` says.
    """

    async def send(self, request: HttpRequest) -> HttpResponse:
        """Send ``request``; the response, its body still to be read."""
        ...


class AiohttpTransport:
    """The default transport: one aiohttp connection pool of ``connection_limit``
    connections (0: no limit), made on first use in the loop that sends (the model's I/O
    loop) and closed by :meth:`aclose`."""

    def __init__(self, *, connection_limit: int = 100) -> None:
        if not isinstance(connection_limit, int) or connection_limit < 0:
            raise ValueError("connection_limit must be a whole number >= 0 (0: no limit)")
        self.connection_limit = connection_limit
        self._session: aiohttp.ClientSession | None = None

    def __repr__(self) -> str:
        return f"AiohttpTransport(connection_limit={self.connection_limit})"

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self.connection_limit),
                timeout=aiohttp.ClientTimeout(total=None),
                auto_decompress=True,
            )
        return self._session

    async def send(self, request: HttpRequest) -> HttpResponse:
        """POST ``request``; the response once its status line and headers are in."""
        response = await self._client().post(
            request.url, data=request.body_bytes(), headers=dict(request.headers)
        )

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
        """Close the connection pool (idempotent)."""
        session, self._session = self._session, None
        if session is not None:
            await session.close()


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
