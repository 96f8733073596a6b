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
"""

from __future__ import annotations

from collections.abc import Callable
from types import CodeType
from typing import Any

from reactivex import Observable, abc
from reactivex.disposable import Disposable

from .errors import ChatError

__all__ = ["failure_of", "raised_by", "safe_callbacks", "subscribe_safely"]

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


def raised_by(error: BaseException, observer: abc.ObserverBase[Any]) -> bool:
    """Whether ``error`` was raised inside one of ``observer``'s callbacks (its traceback
    passes through them): the subscriber's own exception, not ours."""
    return _raised_within(error, _codes(observer))


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


def _codes(observer: abc.ObserverBase[Any]) -> frozenset[CodeType]:
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
