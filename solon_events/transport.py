"""The only network code: POST a dialect's request with aiohttp, yield frames as bytes arrive.

Three time budgets apply: ``timeout`` until the first frame, ``idle_timeout`` between
received chunks after that, ``total_timeout`` for the whole request. Disposing the
frames observable cancels the request task, which closes the connection at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import sys
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import aiohttp
import orjson
from reactivex import Observable, abc
from reactivex import create as rx_create
from reactivex.disposable import Disposable

from .dialects.base import ChatDialect, HttpRequest
from .errors import ChatError, ChatHttpError, ChatProtocolError, ChatTimeoutError
from .loop_thread import EventLoopThread, cancel_other_tasks
from .sse import Frame, StreamDecoder

if sys.version_info >= (3, 11):
    from asyncio import timeout as _deadline
else:  # aiohttp depends on async-timeout before 3.11
    from async_timeout import timeout as _deadline

__all__ = ["HttpTransport", "redact_url"]

_ERROR_BODY_LIMIT = 64 * 1024
_MARKUP = ("text/html", "application/xhtml", "text/xml", "application/xml")


def redact_url(url: str) -> str:
    """``url`` without its query string and user info, for error messages."""
    parts = urlsplit(url)
    netloc = parts.hostname or ""
    if parts.port:
        netloc = f"{netloc}:{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _redact(text: str, secrets: Iterable[str]) -> str:
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text


def _redact_payload(value: Any, secrets: tuple[str, ...]) -> Any:
    """``value`` (decoded JSON) with every secret replaced in its strings."""
    if not secrets:
        return value
    if isinstance(value, str):
        return _redact(value, secrets)
    if isinstance(value, dict):
        return {key: _redact_payload(item, secrets) for key, item in value.items()}
    if isinstance(value, list):
        return [_redact_payload(item, secrets) for item in value]
    return value


def _snippet(body: bytes, limit: int = 200) -> str:
    text = body.decode("utf-8", "replace")
    text = re.sub(r"\s+", " ", text).strip()
    return text[:limit] + ("..." if len(text) > limit else "")


class HttpTransport:
    """A shared aiohttp connection pool on a private I/O loop, closable.

    ``timeout``: seconds until the first frame; ``idle_timeout``: seconds allowed between
    chunks after it; ``total_timeout``: seconds for the whole request (None: no limit).
    """

    def __init__(
        self,
        *,
        timeout: float | None = 60.0,
        idle_timeout: float | None = 60.0,
        total_timeout: float | None = None,
        max_frame_size: int = 16 * 1024 * 1024,
        connection_limit: int = 100,
        io: EventLoopThread | None = None,
        secrets: Iterable[str] = (),
    ) -> None:
        for name, value in (
            ("timeout", timeout),
            ("idle_timeout", idle_timeout),
            ("total_timeout", total_timeout),
        ):
            if value is not None and value <= 0:
                raise ValueError(f"{name} must be a positive number of seconds or None")
        self.timeout = timeout
        self.idle_timeout = idle_timeout
        self.total_timeout = total_timeout
        self.max_frame_size = max_frame_size
        self._connection_limit = connection_limit
        self.io = io or EventLoopThread()
        self._secrets = tuple(s for s in secrets if s)
        self._session: aiohttp.ClientSession | None = None

    def __repr__(self) -> str:
        return (
            f"HttpTransport(timeout={self.timeout}, idle_timeout={self.idle_timeout}, "
            f"total_timeout={self.total_timeout})"
        )

    async def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self._connection_limit),
                timeout=aiohttp.ClientTimeout(total=None),
                auto_decompress=True,
            )
        return self._session

    async def aclose(self) -> None:
        """Fail the requests in flight, then close the connection pool (on the I/O loop)."""
        await cancel_other_tasks()
        if self._session is not None:
            await self._session.close()
            self._session = None

    def close(self) -> None:
        """Close the connection pool and stop the I/O loop (idempotent)."""
        if self._session is not None and not self.io.in_loop_thread():
            with contextlib.suppress(RuntimeError):
                self.io.run(self.aclose())
        self.io.close()

    def frames(self, request: HttpRequest, dialect: ChatDialect) -> Observable[Frame]:
        """A cold observable of the frames of ``request``'s streamed response.

        Frames are delivered on the I/O loop thread as the bytes arrive; disposal cancels
        the request and closes its connection.
        """

        def subscribe(
            observer: abc.ObserverBase[Frame], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            disposed = False

            def on_frame(frame: Frame) -> None:
                if not disposed:
                    observer.on_next(frame)

            async def run() -> None:
                try:
                    await self.stream(request, dialect, on_frame)
                except asyncio.CancelledError:
                    if not disposed:  # not a disposal: the model was closed
                        observer.on_error(self._closed_error(request))
                    return
                except ChatError as exc:
                    if not disposed:
                        observer.on_error(exc)
                    return
                except Exception as exc:
                    if not disposed:
                        observer.on_error(self._connection_error(request, exc))
                    return
                if not disposed:
                    observer.on_completed()

            future = self.io.submit(run())

            def dispose() -> None:
                nonlocal disposed
                disposed = True
                future.cancel()

            return Disposable(dispose)

        return rx_create(subscribe)

    def _closed_error(self, request: HttpRequest) -> ChatError:
        where = redact_url(request.url)
        return ChatError(f"the request to {where} was cancelled: its ChatModel was closed")

    def _connection_error(self, request: HttpRequest, exc: BaseException) -> ChatError:
        where = redact_url(request.url)
        detail = _redact(str(exc) or type(exc).__name__, self._secrets)
        return ChatError(f"request to {where} failed: {type(exc).__name__}: {detail}")

    async def stream(
        self, request: HttpRequest, dialect: ChatDialect, on_frame: Callable[[Frame], None]
    ) -> None:
        """POST ``request`` and call ``on_frame`` for each frame as it is decoded."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        deadline = started + self.total_timeout if self.total_timeout else None

        def budget(first_frame: bool) -> tuple[float | None, str]:
            phase = "timeout" if first_frame else "idle_timeout"
            phase_limit = self.timeout if first_frame else self.idle_timeout
            remaining = deadline - loop.time() if deadline is not None else None
            if phase_limit is None or (remaining is not None and remaining < phase_limit):
                return remaining, "total_timeout"
            return phase_limit, phase

        async def within(awaitable: Any, limit: float | None, label: str) -> Any:
            if limit is None:
                return await awaitable
            # Not asyncio.wait_for: before 3.12 it swallows a cancellation (disposal) that
            # arrives as the awaited read completes, and the request would go on.
            try:
                async with _deadline(max(limit, 0.0)):
                    return await awaitable
            except asyncio.TimeoutError:
                raise self._timeout(label, request) from None

        client = await self._client()
        limit, label = budget(True)
        response = await within(
            client.post(request.url, data=request.body_bytes(), headers=dict(request.headers)),
            limit,
            label,
        )
        try:
            await self._check_response(response, request, dialect)
            decoder = StreamDecoder(max_frame_size=self.max_frame_size)
            got_frame = False
            while True:
                limit, label = budget(not got_frame)
                chunk = await within(response.content.readany(), limit, label)
                if not chunk:
                    break
                for frame in decoder.feed(chunk):
                    got_frame = True
                    on_frame(frame)
            frames = decoder.close()
            if not got_frame and not frames:
                raise ChatProtocolError(
                    f"{redact_url(request.url)} answered {response.status} with an empty body; "
                    "expected an event stream"
                )
            for frame in frames:
                on_frame(frame)
        except BaseException:
            response.close()
            raise
        finally:
            response.release()

    def _timeout(self, label: str, request: HttpRequest) -> ChatTimeoutError:
        seconds = getattr(self, label)
        what = {
            "timeout": "waiting for the first frame",
            "idle_timeout": "waiting for the next frame",
            "total_timeout": "for the whole response",
        }[label]
        return ChatTimeoutError(
            f"{label} of {seconds} s ran out {what} from {redact_url(request.url)}", budget=label
        )

    async def _check_response(
        self, response: aiohttp.ClientResponse, request: HttpRequest, dialect: ChatDialect
    ) -> None:
        where = redact_url(request.url)
        if response.status >= 400:
            body = await response.content.read(_ERROR_BODY_LIMIT)
            payload: Any = None
            with contextlib.suppress(orjson.JSONDecodeError):
                payload = _redact_payload(orjson.loads(body), self._secrets)
            message = dialect.error_message(payload) if payload is not None else None
            if not message:
                message = _snippet(body) or response.reason or None
            raise ChatHttpError(
                response.status,
                _redact(message, self._secrets) if message else None,
                provider_error=payload if isinstance(payload, dict) else None,
                url=where,
            )
        content_type = response.headers.get("Content-Type", "").lower()
        if any(content_type.startswith(markup) for markup in _MARKUP):
            start = _snippet(await response.content.read(400), 80)
            raise ChatProtocolError(
                f"{where} answered with {content_type.split(';')[0]} (starting {start!r}), "
                "not an event stream: check api_url"
            )
