"""An operator's callbacks that end the stream when they fail, never hang it.

An exception raised inside an operator's ``on_next``, ``on_error`` or ``on_completed``
escapes to whoever called it: a subject's caller, or, on a ChatModel's I/O thread, a task
that nobody awaits, while the subscriber waits forever for an end. Every Rx operator of
solon_events subscribes to its source through :func:`safe_callbacks` (or
:func:`subscribe_safely`, which also covers what it does when subscribed), so that:

- its own failure reaches its subscriber's ``on_error``, once: a ChatError as it is,
  anything else as a ChatError naming the operator, the exception its ``__cause__``
  (:func:`failure_of`);
- what its subscriber raises from its own callbacks propagates unchanged, as RxPY's
  operators let it (``ops.map`` catches its mapper's exceptions, not its subscriber's):
  :func:`raised_by` tells the two apart by the exception's traceback, so that nothing is
  paid per event for it.

An operator's own work that runs elsewhere than in its source's callbacks (a scheduler's
timer, a callback or a task on another event loop) goes through :func:`safe_action` or
:func:`run_safely`: there its exception would reach nobody, so both of them end the
stream, the subscriber's own exception included (as it is, as ``stream()`` does).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Awaitable, Callable
from types import CodeType
from typing import Any

from reactivex import Observable, abc
from reactivex.disposable import Disposable

from ..event_model.errors import ChatError

__all__ = [
    "failure_of",
    "raised_by",
    "raised_in",
    "run_safely",
    "safe_action",
    "safe_callbacks",
    "subscribe_safely",
]

OnNext = Callable[[Any], None]
OnError = Callable[[Exception], None]
OnCompleted = Callable[[], None]
Callbacks = tuple[OnNext, OnError, OnCompleted]


def failure_of(error: Exception, where: str) -> ChatError:
    """``error``, raised inside ``where`` (``"the partial_json() operator"``), as its
    subscriber gets it: a ChatError as it is, else a ChatError saying where it failed,
    caused by ``error``."""
    if isinstance(error, ChatError):
        return error
    failure = ChatError(f"{where} failed: {type(error).__name__}: {error}")
    failure.__cause__ = error
    return failure


def raised_by(error: BaseException, observer: object) -> bool:
    """Whether ``error`` was raised inside one of ``observer``'s callbacks (its traceback
    passes through them): the subscriber's own exception, not ours."""
    return _raised_within(error, _codes(observer))


def raised_in(error: BaseException, function: Callable[..., Any] | None) -> bool:
    """Whether ``error`` was raised inside ``function`` (a callback a user gave an
    operator): its traceback passes through the function's code."""
    code = getattr(getattr(function, "__func__", function), "__code__", None)
    return isinstance(code, CodeType) and _raised_within(error, frozenset((code,)))


def safe_action(
    observer: abc.ObserverBase[Any],
    action: Callable[..., None],
    *,
    where: str,
    fail: OnError | None = None,
) -> Callable[..., None]:
    """``action`` (an operator's own work run where its exception would reach nobody: a
    scheduler's timer, a callback on another event loop), made to end the stream when it
    raises: ``fail`` (by default ``observer.on_error``) gets the exception as
    :func:`failure_of` makes it, or as it is when ``observer``'s callbacks raised it."""
    end = observer.on_error if fail is None else fail

    def safe(*args: Any) -> None:
        try:
            action(*args)
        except Exception as error:
            end(_theirs_or_ours(error, observer, where))

    return safe


def run_safely(
    loop: asyncio.AbstractEventLoop,
    observer: abc.ObserverBase[Any],
    work: Callable[..., Awaitable[None]],
    *args: Any,
    where: str,
) -> concurrent.futures.Future[None]:
    """Run ``work(*args)`` (an operator's own coroutine function) as a task on ``loop``,
    from any thread; when it raises, end the stream as :func:`safe_action` does."""

    async def safely() -> None:
        try:
            await work(*args)
        except Exception as error:
            observer.on_error(_theirs_or_ours(error, observer, where))

    return asyncio.run_coroutine_threadsafe(safely(), loop)


def safe_callbacks(
    observer: abc.ObserverBase[Any],
    on_next: OnNext,
    on_error: OnError,
    on_completed: OnCompleted,
    *,
    where: str,
) -> Callbacks:
    """An operator's three callbacks (which push into ``observer``), made safe for its
    source: an exception of the operator's own ends the stream with ``observer.on_error``
    (:func:`failure_of`); one raised by ``observer``'s callbacks propagates."""
    return _safe(observer, _codes(observer), on_next, on_error, on_completed, where)


def subscribe_safely(
    source: Observable[Any],
    observer: abc.ObserverBase[Any],
    scheduler: abc.SchedulerBase | None,
    start: Callable[[], Callbacks],
    *,
    where: str,
) -> abc.DisposableBase:
    """Subscribe ``observer`` to ``source`` through the callbacks ``start()`` makes (an
    operator's state for this subscription), made safe as :func:`safe_callbacks` does;
    ``start()`` failing ends the stream the same way."""
    theirs = _codes(observer)
    try:
        on_next, on_error, on_completed = start()
    except Exception as error:
        if _raised_within(error, theirs):
            raise
        observer.on_error(failure_of(error, where))
        return Disposable()
    callbacks = _safe(observer, theirs, on_next, on_error, on_completed, where)
    return source.subscribe(*callbacks, scheduler=scheduler)


def _theirs_or_ours(error: Exception, observer: abc.ObserverBase[Any], where: str) -> Exception:
    return error if raised_by(error, observer) else failure_of(error, where)


def _safe(
    observer: abc.ObserverBase[Any],
    theirs: frozenset[CodeType],
    on_next: OnNext,
    on_error: OnError,
    on_completed: OnCompleted,
    where: str,
) -> Callbacks:
    def failed(error: Exception) -> None:
        if _raised_within(error, theirs):
            raise error
        observer.on_error(failure_of(error, where))  # once: a stopped observer ignores more

    def safe_next(value: Any) -> None:
        try:
            on_next(value)
        except Exception as error:
            failed(error)

    def safe_error(error: Exception) -> None:
        try:
            on_error(error)
        except Exception as own:
            failed(own)

    def safe_completed() -> None:
        try:
            on_completed()
        except Exception as error:
            failed(error)

    return safe_next, safe_error, safe_completed


def _codes(observer: object) -> frozenset[CodeType]:
    """The code of ``observer``'s three callbacks (an AutoDetachObserver's methods, under
    ``Observable.subscribe``)."""
    codes = []
    for name in ("on_next", "on_error", "on_completed"):
        callback = getattr(observer, name, None)
        code = getattr(getattr(callback, "__func__", callback), "__code__", None)
        if isinstance(code, CodeType):
            codes.append(code)
    return frozenset(codes)


def _raised_within(error: BaseException, codes: frozenset[CodeType]) -> bool:
    trace = error.__traceback__
    while trace is not None:
        if trace.tb_frame.f_code in codes:
            return True
        trace = trace.tb_next
    return False
