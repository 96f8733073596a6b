"""The model's side of one provider request: send it through the transport, decode the
body into frames, keep the time budgets, classify what goes wrong, retry before the first
frame.

Time budgets count decoded frames, never bytes: ``timeout`` runs from the request until
its first frame (retries and their waits included), ``idle_timeout`` from the delivery of
each batch of frames to the next frame (the provider's silence: the time the receiver
spends on the frames, in a ``stream()`` callback or between ``astream()``'s iterations, is
not counted), ``total_timeout`` over the whole response (a deadline the caller passes: the tool
loop's, which covers every step and the tools run between them; by default the request's
own). A retry whose wait would outlast either is not made: the request fails with what the
provider said. Bytes that complete no frame (a partial line, an SSE comment, a keep-alive
blank line) restart neither; a provider's own ping event is a frame.

Failures become ChatErrors: :class:`ChatHttpError` (a status of 400 or more, with the
provider's message or a bounded snippet of the body), :class:`ChatProtocolError` (a body
that is not an event stream), :class:`ChatTimeoutError` (naming the budget and the frames
received) and :class:`ChatConnectionError` (whatever the transport raised).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import re
import sys
from collections.abc import AsyncGenerator, Callable, Coroutine, Sequence
from typing import Any

import attrs
import orjson
from reactivex import Observable, abc
from reactivex import create as rx_create
from reactivex.disposable import Disposable

from ..dialects.base import ChatDialect, HttpRequest
from ..dialects.endpoints import expected_url
from ..event_model.errors import (
    ChatConnectionError,
    ChatError,
    ChatHttpError,
    ChatProtocolError,
    ChatTimeoutError,
)
from ..event_model.events import EVENT_TYPES, ChatEvent
from ..support.loop_thread import DeadlinePassed, EventLoopThread, within
from ..support.redaction import Redactor, mask_key_shaped, redact_url
from ..wire.sse import DEFAULT_MAX_FRAME_SIZE, Frame
from .retry import RetryPolicy, retry_after_seconds
from .transport import ChatTransport, HttpResponse

__all__ = ["StreamReader", "TimeBudgets", "downstream_error"]

Emit = Callable[[Frame | str | bytes | ChatEvent], None]

_ERROR_BODY_LIMIT = 64 * 1024
_MARKUP_START_LIMIT = 400
_MARKUP = ("text/html", "application/xhtml", "text/xml", "application/xml")
# An error body nested deeper than this is read as text, not as the provider's fields.
_MAX_ERROR_NESTING = 32
_WAITING_FOR = {
    "timeout": "waiting for the first frame",
    "idle_timeout": "waiting for the next frame",
    "total_timeout": "for the whole response",
}


def _positive_or_none(_instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and not value > 0:
        raise ValueError(f"{attribute.name} must be a positive number of seconds or None")


@attrs.frozen(kw_only=True)
class TimeBudgets:
    """Seconds until the first frame (``timeout``), between frames (``idle_timeout``), for
    the whole response (``total_timeout``) and for each tool run (``tool_timeout``, the
    tool loop's); None for no limit."""

    timeout: float | None = attrs.field(default=60.0, validator=_positive_or_none)
    idle_timeout: float | None = attrs.field(default=60.0, validator=_positive_or_none)
    total_timeout: float | None = attrs.field(default=None, validator=_positive_or_none)
    tool_timeout: float | None = attrs.field(default=None, validator=_positive_or_none)


class _Downstream(Exception):
    """An exception raised by whoever received a frame: passed on as it is, never retried."""

    def __init__(self, original: BaseException) -> None:
        super().__init__(original)
        self.original = original


def downstream_error(error: BaseException) -> BaseException:
    """What :meth:`StreamReader.read` raised, unwrapped: the exception of whoever received
    a frame as it was raised, else the request's own failure."""
    return error.original if isinstance(error, _Downstream) else error


class _FrameClock:
    """The deadlines of one attempt: the next frame's (first or idle) and the total one;
    :attr:`deadline` is the nearest of them (loop time, None: no limit), :attr:`budget`
    its name. The first frame's and the total deadline are the request's, the same for
    each of its attempts."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        budgets: TimeBudgets,
        first_deadline: float | None,
        total_deadline: float | None,
    ) -> None:
        self._loop = loop
        self._budgets = budgets
        self.total_deadline = total_deadline
        self.frames = 0
        self.bytes = 0
        self.accepted = False
        """Whether the provider accepted the request (answered with a stream)."""
        self.deadline: float | None = None
        self.budget = "timeout"
        self._set_frame_deadline(first_deadline, "timeout")

    def _after(self, seconds: float | None) -> float | None:
        return None if seconds is None else self._loop.time() + seconds

    def _set_frame_deadline(self, frame: float | None, budget: str) -> None:
        total = self.total_deadline
        if total is not None and (frame is None or total <= frame):
            self.deadline, self.budget = total, "total_timeout"
        else:
            self.deadline, self.budget = frame, budget

    def frames_decoded(self, count: int) -> None:
        """``count`` frames (of one chunk) were delivered now: the idle budget restarts."""
        self.frames += count
        self._set_frame_deadline(self._after(self._budgets.idle_timeout), "idle_timeout")

    def next_limit(self) -> tuple[float | None, str]:
        """Seconds left before the nearest deadline, and the name of its budget."""
        deadline = self.deadline
        return (None if deadline is None else deadline - self._loop.time()), self.budget


class _Watchdog:
    """Keeps the nearest deadline of ``clock`` while the body's reads wait, with one timer
    for the whole body instead of one set up and torn down per read (which cost about as
    much as parsing a frame): a chunk only moves the clock's deadline; the timer, firing
    before a deadline that has moved on, is set again for it, and firing on time while a
    read waits, cancels the reading task (the read then raises the budget's
    ChatTimeoutError). The idle deadline is set once the frames are delivered, so the time
    the caller holds them is never counted against the provider.
    """

    __slots__ = ("_armed_at", "_base", "_clock", "_handle", "_loop", "_task", "fired", "reading")

    def __init__(self, loop: asyncio.AbstractEventLoop, clock: _FrameClock) -> None:
        self._loop = loop
        self._clock = clock
        self._handle: asyncio.TimerHandle | None = None
        self._armed_at = 0.0
        self._task: asyncio.Task[Any] | None = None
        self._base = 0
        self.reading = False
        """Whether a read is waiting (set by the reader around each read)."""
        self.fired: str | None = None
        """The budget that ran out, once this watchdog cancelled the reading task."""

    def enter(self) -> None:
        """A read is about to wait: in the running task, within the clock's deadline."""
        self._task = task = asyncio.current_task()
        if sys.version_info >= (3, 11) and task is not None:
            self._base = task.cancelling()
        self.reading = True
        deadline = self._clock.deadline
        if deadline is not None and (self._handle is None or deadline < self._armed_at):
            self._arm(deadline)

    def _arm(self, deadline: float) -> None:
        if self._handle is not None:
            self._handle.cancel()
        self._armed_at = deadline
        self._handle = self._loop.call_at(deadline, self._check)

    def _check(self) -> None:
        self._handle = None
        deadline = self._clock.deadline
        if deadline is None:
            return
        if self._loop.time() < deadline:
            self._arm(deadline)
        elif self.reading and self._task is not None:
            self.fired = self._clock.budget
            self._task.cancel()

    def timed_out(self) -> str | None:
        """After a read raised CancelledError: the budget that ran out if that was this
        watchdog's doing alone (its cancellation of the task is then taken back, as
        ``asyncio.timeout`` does), else None."""
        if self.fired is None or self._task is None:
            return None
        if sys.version_info >= (3, 11) and self._task.uncancel() > self._base:
            return None  # cancelled by someone else too
        return self.fired

    def close(self) -> None:
        """Stop the timer and let go of the task (a task cancelled while it read keeps
        the CancelledError, whose traceback keeps this watchdog: a reference cycle)."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        self._task = None


class StreamReader:
    """Reads the frames of requests sent through ``transport``, on the I/O loop ``io``.

    ``dialect`` reads the provider's message out of an error body; ``redactor`` masks
    secrets in what a retry's STATUS event says. Set :attr:`closed` to fail every later
    subscription at once.
    """

    def __init__(
        self,
        transport: ChatTransport,
        io: EventLoopThread,
        dialect: ChatDialect,
        *,
        budgets: TimeBudgets | None = None,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        retry_policy: RetryPolicy | None = None,
        redactor: Redactor | None = None,
    ) -> None:
        self.transport = transport
        self.io = io
        self.dialect = dialect
        self._decoder_takes_data_only = _takes_data_only(dialect)
        self.budgets = budgets or TimeBudgets()
        self.max_frame_size = max_frame_size
        self.retry_policy = retry_policy or RetryPolicy()
        self.redactor = redactor or Redactor()
        self.closed = False

    def frames(self, request: HttpRequest) -> Observable[Frame | str | bytes | ChatEvent]:
        """A cold observable of the frames of ``request``'s response, delivered on the I/O
        loop as they are decoded (a retry's STATUS event before the first one).

        Disposal cancels the request and closes its connection; nothing is delivered after
        it. When the model is closed while the request runs, it fails with a ChatError
        saying so.
        """

        def subscribe(
            observer: abc.ObserverBase[Frame | str | bytes | ChatEvent],
            scheduler: abc.SchedulerBase | None = None,
        ) -> abc.DisposableBase:
            if self.closed:
                observer.on_error(self._closed_error(request))
                return Disposable()
            disposed = False

            def emit(item: Frame | str | bytes | ChatEvent) -> None:
                if not disposed:
                    observer.on_next(item)

            def finished(outcome: Any) -> None:
                if disposed:
                    return
                if outcome.cancelled():
                    observer.on_error(self._closed_error(request))
                    return
                error = outcome.exception()
                if error is None:
                    observer.on_completed()
                    return
                error = downstream_error(error)
                if not isinstance(error, Exception):
                    error = ChatError(f"the request was interrupted: {type(error).__name__}")
                observer.on_error(error)

            cancel = self._start(self._read_all(request, emit), finished)

            def dispose() -> None:
                nonlocal disposed
                disposed = True
                cancel()

            return Disposable(dispose)

        return rx_create(subscribe)

    async def _read_all(self, request: HttpRequest, emit: Emit) -> None:
        async for _ in self.read(request, emit, paced=False):
            pass

    def _start(
        self, coro: Coroutine[Any, Any, None], finished: Callable[[Any], None]
    ) -> Callable[[], None]:
        """Run ``coro`` on the I/O loop, ``finished`` called with its task when it ends
        (also when it is cancelled before it started); returns a thread-safe cancel."""
        if self.io.in_loop_thread():
            task = asyncio.get_running_loop().create_task(coro)
            task.add_done_callback(finished)
            loop = task.get_loop()

            def cancel_task() -> None:
                loop.call_soon_threadsafe(task.cancel)

            return cancel_task
        future = self.io.submit(coro)
        future.add_done_callback(finished)

        def cancel() -> None:
            future.cancel()

        return cancel

    def _closed_error(self, request: HttpRequest) -> ChatError:
        return ChatError(
            f"the request to {redact_url(request.url)} was cancelled: its ChatModel was closed"
        )

    async def read(
        self,
        request: HttpRequest,
        emit: Emit,
        paced: bool = True,
        *,
        data_only: bool = False,
        deadline: float | None = None,
    ) -> AsyncGenerator[None, None]:
        """Send ``request`` (retrying as the policy says) and ``emit`` each frame decoded,
        on the running loop. ``paced``: yield after each chunk of the body that gave
        frames (a retry's STATUS event counts as one), so that an iterating caller can
        hand them on; else yield nothing (``emit`` hands them on itself). ``data_only``:
        ``emit`` needs each frame's data alone (see :meth:`ChatDialect.frame_decoder`).
        ``deadline``: when the response's ``total_timeout`` runs out (the running loop's
        time), for a request that is one step of a response; by default ``total_timeout``
        from now.

        An exception raised by ``emit`` comes out wrapped (see :func:`downstream_error`);
        closing the iterator early closes the connection.
        """
        if self.closed:
            raise self._closed_error(request)
        loop = asyncio.get_running_loop()
        now = loop.time()
        budgets = self.budgets
        if deadline is None and budgets.total_timeout is not None:
            deadline = now + budgets.total_timeout
        first_frame = None if budgets.timeout is None else now + budgets.timeout
        retries = 0
        while True:
            clock = _FrameClock(loop, budgets, first_frame, deadline)
            try:
                attempt = self._attempt(request, emit, clock, paced, data_only)
                async with contextlib.aclosing(attempt) as chunks:
                    async for _ in chunks:
                        yield
                return
            except ChatError as error:
                delay = self._retry_delay(error, retries, clock)
                if delay is None:
                    raise
                retries += 1
                self._emit(emit, (self._retry_status(retries, delay, error, clock.accepted),))
            if paced:
                yield
            await asyncio.sleep(delay)

    def _retry_delay(self, error: ChatError, retries: int, clock: _FrameClock) -> float | None:
        """The wait before the next try, or None when ``error`` is final (a wait that
        would outlast ``timeout`` or ``total_timeout`` is not made)."""
        if clock.frames or not self.retry_policy.retries(error, retries):
            return None
        retry_after = error.retry_after if isinstance(error, ChatHttpError) else None
        delay = self.retry_policy.delay(retries + 1, retry_after)
        left, _budget = clock.next_limit()
        return None if left is not None and delay >= left else delay

    def _retry_status(
        self, retry: int, delay: float, cause: ChatError, accepted: bool
    ) -> ChatEvent:
        return ChatEvent(
            EVENT_TYPES.STATUS,
            sub_type="retry",
            text=f"retry {retry} in {delay:.2f} s",
            attrs={
                "attempt": retry,
                "delay": delay,
                "cause": self.redactor.text(str(cause)),
                "accepted": accepted,
            },
        )

    @staticmethod
    def _emit(emit: Emit, items: Sequence[Frame | str | bytes | ChatEvent]) -> None:
        try:
            for item in items:
                emit(item)
        except Exception as exc:
            raise _Downstream(exc) from exc

    async def _attempt(
        self, request: HttpRequest, emit: Emit, clock: _FrameClock, paced: bool, data_only: bool
    ) -> AsyncGenerator[None, None]:
        response = await self._within(self._send(request), clock, request)
        watchdog = _Watchdog(asyncio.get_running_loop(), clock)
        try:
            await self._check_head(response, request, clock)
            clock.accepted = True
            decoder = (
                self.dialect.frame_decoder(self.max_frame_size, data_only=True)
                if data_only and self._decoder_takes_data_only
                else self.dialect.frame_decoder(self.max_frame_size)
            )
            chunks = response.__aiter__()
            while True:
                watchdog.enter()
                try:
                    chunk = await self._next_chunk(chunks, request)
                except asyncio.CancelledError:
                    budget = watchdog.timed_out()
                    if budget is not None:
                        raise self._timeout(budget, clock, request) from None
                    raise
                finally:
                    watchdog.reading = False
                if chunk is None:
                    break
                clock.bytes += len(chunk)
                frames = decoder.feed(chunk)
                if frames:
                    self._emit(emit, frames)
                    if paced:
                        yield
                    clock.frames_decoded(len(frames))  # after the receiver is done with them
            frames = decoder.close()
            if frames:
                self._emit(emit, frames)
                clock.frames_decoded(len(frames))
            if not clock.frames:
                what = f"{clock.bytes} bytes and no frame" if clock.bytes else "an empty body"
                raise ChatProtocolError(
                    f"{redact_url(request.url)} answered {response.status} with {what}; "
                    "expected an event stream"
                )
        finally:
            watchdog.close()
            await response.aclose()

    async def _send(self, request: HttpRequest) -> HttpResponse:
        try:
            return await self.transport.send(request)
        except (ChatError, asyncio.CancelledError):
            raise
        except Exception as exc:
            raise self._connection_error(request, exc) from exc

    async def _next_chunk(self, chunks: Any, request: HttpRequest) -> bytes | None:
        try:
            return bytes(await chunks.__anext__())
        except StopAsyncIteration:
            return None
        except (ChatError, asyncio.CancelledError):
            raise
        except Exception as exc:
            raise self._connection_error(request, exc) from exc

    def _connection_error(self, request: HttpRequest, exc: BaseException) -> ChatConnectionError:
        detail = str(exc) or type(exc).__name__
        return ChatConnectionError(
            f"request to {redact_url(request.url)} failed: {type(exc).__name__}: {detail}"
        )

    async def _within(
        self, awaitable: Coroutine[Any, Any, Any], clock: _FrameClock, request: HttpRequest
    ) -> Any:
        """``await awaitable`` within the nearest deadline of ``clock``."""
        limit, budget = clock.next_limit()
        if limit is None:
            return await awaitable
        try:
            return await within(awaitable, limit)
        except DeadlinePassed:
            raise self._timeout(budget, clock, request) from None

    def _timeout(self, budget: str, clock: _FrameClock, request: HttpRequest) -> ChatTimeoutError:
        seconds = getattr(self.budgets, budget)
        frames = "1 frame" if clock.frames == 1 else f"{clock.frames} frames"
        silence = (  # whose time it was: never the receiver's (see _FrameClock.frames_decoded)
            f": the provider sent nothing for {seconds} s after the last frame was delivered"
            if budget == "idle_timeout"
            else ""
        )
        return ChatTimeoutError(
            f"{budget} of {seconds} s ran out {_WAITING_FOR[budget]} from "
            f"{redact_url(request.url)}{silence} ({frames} and {clock.bytes} bytes received)",
            budget=budget,
            frames_received=clock.frames,
        )

    async def _check_head(
        self, response: HttpResponse, request: HttpRequest, clock: _FrameClock
    ) -> None:
        """Fail on an error status or a markup page, reading a bounded start of the body."""
        where = redact_url(request.url)
        if response.status >= 400:
            body = await self._read_start(response, _ERROR_BODY_LIMIT, clock, request)
            raise self._http_error(response, body, where)
        content_type = response.headers.get("Content-Type", "").lower()
        if any(content_type.startswith(markup) for markup in _MARKUP):
            start = _snippet(await self._read_start(response, _MARKUP_START_LIMIT, clock, request))
            raise ChatProtocolError(
                f"{where} answered with {content_type.split(';')[0]} (starting {start!r}), "
                "not an event stream: check api_url"
            )

    async def _read_start(
        self, response: HttpResponse, limit: int, clock: _FrameClock, request: HttpRequest
    ) -> bytes:
        body = bytearray()
        chunks = response.__aiter__()
        while len(body) < limit:
            chunk = await self._within(self._next_chunk(chunks, request), clock, request)
            if chunk is None:
                break
            body += chunk
        return bytes(body[:limit])

    def _http_error(self, response: HttpResponse, body: bytes, where: str) -> ChatHttpError:
        payload = _error_payload(body)
        message: str | None = None
        if payload is not None:
            try:
                message = self.dialect.error_message(payload)
            except Exception:  # a body the dialect cannot read is shown as text
                message = None
        if not message or not isinstance(message, str):
            message = _snippet(body) or response.reason or None
        shape = expected_url(self.dialect.name, where) if response.status == 404 else None
        return ChatHttpError(
            response.status,
            message,
            provider_error=payload if isinstance(payload, dict) else None,
            url=where,
            retry_after=retry_after_seconds(response.headers),
            headers={mask_key_shaped(name): v for name, v in response.headers.items()},
            hint=f"{_article(self.dialect.name)} {self.dialect.name} URL is {shape}"
            if shape
            else None,
        )


def _article(word: str) -> str:
    """``"an"`` before ``word`` when it starts with a vowel (an openai URL), else ``"a"``."""
    return "an" if word[:1].lower() in "aeiou" else "a"


def _error_payload(body: bytes) -> Any:
    """The JSON of an error body, or None when it is not JSON or nests too deep to be
    the provider's fields."""
    try:
        payload = orjson.loads(body)
    except (orjson.JSONDecodeError, RecursionError):
        return None
    return payload if _nesting_within(payload, _MAX_ERROR_NESTING) else None


def _nesting_within(value: Any, limit: int) -> bool:
    """Whether ``value``'s containers nest at most ``limit`` deep (checked without recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return False
        stack.extend((child, depth + 1) for child in children)
    return True


def _snippet(body: bytes, limit: int = 200) -> str:
    text = re.sub(r"\s+", " ", body.decode("utf-8", "replace")).strip()
    return text[:limit] + ("..." if len(text) > limit else "")


def _takes_data_only(dialect: ChatDialect) -> bool:
    """Whether ``dialect.frame_decoder`` takes ``data_only`` (one written before it was
    added, ``frame_decoder(self, max_frame_size)``, gives whole frames, which ``emit``
    reads as well)."""
    parameters = inspect.signature(dialect.frame_decoder).parameters.values()
    return any(p.name == "data_only" or p.kind is p.VAR_KEYWORD for p in parameters)
