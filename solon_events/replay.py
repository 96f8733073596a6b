"""Run the whole event pipeline over a recorded stream, with no network."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from reactivex import Observable, abc
from reactivex.disposable import CompositeDisposable, Disposable
from reactivex.internal import default_error, noop
from reactivex.scheduler import CurrentThreadScheduler

from .core import stages
from .core.parsing import ParseStage
from .core.stages import Sink
from .dialects.base import ChatDialect, get_dialect
from .event_model.events import ChatEvent
from .event_model.filters import ChatEventFilter
from .recording import replay_recording
from .sources import ReplaySource, tell_source

__all__ = ["ReplaySource", "replay"]


def replay(
    source: ReplaySource,
    dialect: str | ChatDialect | None = "auto",
    event_filter: Callable[[ChatEvent], bool] | None = None,
    partial_arguments: bool = False,
    *,
    accept_unknown_streams: bool = False,
) -> Observable[ChatEvent]:
    """The event stream of a recorded response: parse, normalize, aggregate, guard.

    ``source`` is a path, the bytes or text of a recording (SSE text, one JSON payload
    per line, or an AWS event stream's binary messages, detected automatically), or an
    iterable of frames (SSE ``Frame`` values, JSON strings or decoded payloads). The
    observable is cold: each subscription reads the source again (an iterator source can
    be read only once).

    ``dialect="auto"`` (the default, or None) tells the dialect from the first frames'
    shapes (:func:`~solon_events.dialects.sniff.sniff_dialect`), taking ``"openai"`` when
    they do not tell. A recording made by ``solon-events record``
    (:mod:`solon_events.recording`) replays with each event's arrival time in
    ``attrs["received_at"]``, with ``"auto"`` in the dialect its header names.
    ``partial_arguments=True`` gives every argument delta the arguments parsed so far
    (see :func:`~solon_events.operators.partial_arguments`). A recording whose every frame
    the dialect does not know fails with :class:`~solon_events.ChatProtocolError` naming
    their event types, unless ``accept_unknown_streams=True`` takes it as an empty answer.

    A path (a path object, or a string that holds no frame) that names no file, or names a
    directory, raises ``FileNotFoundError`` or ``IsADirectoryError`` here, at the call.
    """
    told = tell_source(source)
    if told.is_recording:
        return replay_recording(
            told, dialect, event_filter, partial_arguments, accept_unknown_streams
        )
    chosen = None if dialect in (None, "auto") else get_dialect(dialect)  # type: ignore[arg-type]
    ChatEventFilter.guarded(event_filter or ChatEventFilter.DEFAULT)  # validate now

    def pipeline(observer: Sink) -> tuple[Callable[[], None], Callable[[], None]]:
        """What parse() and respond() do, with direct calls: (run, stop) into ``observer``."""
        response_id, head = stages.respond_after_parse(
            observer, event_filter=event_filter, partial_arguments=partial_arguments
        )
        parser = ParseStage(chosen or get_dialect("openai"), head, response_id=response_id)
        parser.accept_unknown_streams = accept_unknown_streams
        parser.start()
        stopped = False

        def run() -> None:
            frames, told_dialect, error = told.read(tell_dialect=chosen is None)
            if chosen is None:
                parser.use_dialect(get_dialect(told_dialect or "openai"))
            if error is not None:
                for frame in frames:  # those read before the error
                    parser.on_next(frame)
                parser.on_error(error)
                return
            on_next = parser.on_next
            while not stopped:
                try:
                    frame = next(frames)
                except StopIteration:
                    parser.on_completed()
                    return
                except Exception as exc:  # reading the source: a missing file, an SSE error
                    parser.on_error(exc)
                    return
                on_next(frame)

        def stop() -> None:
            nonlocal stopped
            stopped = True

        return run, stop

    return _ReplayObservable(pipeline)


class _Callbacks:
    """The three callbacks of a subscription as a :class:`~solon_events.core.stages.Sink`;
    a failure first stops reading the source (``stop``), as Rx's auto-detaching observer
    disposes its subscription."""

    __slots__ = ("_on_error", "on_completed", "on_next", "stop")

    def __init__(
        self,
        on_next: abc.OnNext[ChatEvent] | None,
        on_error: abc.OnError | None,
        on_completed: abc.OnCompleted | None,
    ) -> None:
        self.on_next = on_next or noop
        self._on_error = on_error or default_error
        self.on_completed = on_completed or noop
        self.stop: Callable[[], None] = noop

    def on_error(self, error: Exception) -> None:
        """Stop reading the source, then hand ``error`` on."""
        self.stop()
        self._on_error(error)


class _Stop(abc.DisposableBase):
    """The disposable of a direct subscription: disposing it stops the replay."""

    __slots__ = ("_stop",)

    def __init__(self, stop: Callable[[], None]) -> None:
        self._stop = stop

    def dispose(self) -> None:
        self._stop()


class _ThisThread(threading.local):
    """This thread's current-thread trampoline, looked up once: Rx looks it up on every
    ``schedule_required()``, through the thread and two weak mappings."""

    def __init__(self) -> None:
        self.trampoline = CurrentThreadScheduler.singleton().get_trampoline()


_THIS_THREAD = _ThisThread()


class _ReplayObservable(Observable[ChatEvent]):
    """The observable :func:`replay` returns.

    Subscribed through operators (``replay(...).pipe(...)``) it is an ordinary Rx
    observable whose replay runs on the current-thread trampoline, so that a downstream
    ``take(n)`` stops it early. Subscribed directly outside any trampoline, where no
    downstream operator can dispose it before ``subscribe`` returns, it runs the replay
    at once, without Rx's two trampoline hops and per-event observer wrapper: the cost of
    a short recording is mostly that subscription machinery otherwise.
    """

    def __init__(
        self, pipeline: Callable[[Sink], tuple[Callable[[], None], Callable[[], None]]]
    ) -> None:
        def subscribe(
            observer: abc.ObserverBase[ChatEvent], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            run, stop = pipeline(observer)

            def action(_scheduler: abc.SchedulerBase, _state: Any = None) -> None:
                run()

            schedule = (scheduler or CurrentThreadScheduler.singleton()).schedule
            return CompositeDisposable(schedule(action), Disposable(stop))

        super().__init__(subscribe)
        self._pipeline = pipeline

    def subscribe(
        self,
        on_next: abc.ObserverBase[ChatEvent] | abc.OnNext[ChatEvent] | None = None,
        on_error: abc.OnError | None = None,
        on_completed: abc.OnCompleted | None = None,
        *,
        scheduler: abc.SchedulerBase | None = None,
    ) -> abc.DisposableBase:
        """Subscribe an observer or callbacks, as :meth:`reactivex.Observable.subscribe`."""
        if scheduler is not None or not _THIS_THREAD.trampoline.idle():
            return super().subscribe(on_next, on_error, on_completed, scheduler=scheduler)
        observer: Any = on_next
        if callable(getattr(observer, "on_next", None)):  # an observer, abc.ObserverBase or not
            sink = _Callbacks(observer.on_next, observer.on_error, observer.on_completed)
        else:
            sink = _Callbacks(on_next, on_error, on_completed)  # type: ignore[arg-type]
        run, stop = self._pipeline(sink)
        sink.stop = stop
        run()
        return _Stop(stop)
