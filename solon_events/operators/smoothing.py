"""``smooth()``: text and thinking re-chunked and released at a steady pace, for typewriter
rendering.

A provider sends text in bursts: a few words, then a pause, then a sentence at once.
``stream().pipe(smooth())`` cuts TEXT_DELTA and THINKING_DELTA text into chunks (words by
default, see :mod:`solon_events.core.chunking`) and releases at most one chunk per
``interval``, on the scheduler's clock, so the text appears as if typed. Nothing is lost,
added or reordered: the chunks' text joined is the deltas' text joined, and every event
comes after all the text that came before it.

* A non-text event (TEXT_END, a tool call, STEP_END, RESPONSE_END, ERROR, ...) first
  releases at once every chunk still waiting and the text not yet cut, then itself: a
  block ends, and the response ends, without waiting for the pace.
* HEARTBEAT, USAGE and RAW events (a USAGE may come between any two deltas), and a delta with
  no text, are not worth a flush: each waits for the chunk that holds the text before it
  and comes right after it.
* The end of the stream, and an error, release what is waiting first.

Each chunk is its delta's event with the chunk as its text (the fields of the delta whose
text completed it). A chunking function or pattern that fails (or cuts nothing) fails the
stream, after what was waiting.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import reactivex
from reactivex import Observable, abc
from reactivex.disposable import Disposable
from reactivex.scheduler import EventLoopScheduler

from ..core.chunking import Chunking, chunker
from ..event_model.events import EVENT_TYPES, ChatEvent
from ..support.safe_callbacks import failure_of, raised_in, safe_action, safe_callbacks

__all__ = ["smooth"]

_TEXT = frozenset({EVENT_TYPES.TEXT_DELTA, EVENT_TYPES.THINKING_DELTA})
_PASSIVE = frozenset({EVENT_TYPES.HEARTBEAT, EVENT_TYPES.USAGE, EVENT_TYPES.RAW})


def _block(event: ChatEvent) -> tuple[Any, ...]:
    """Which block a delta's text belongs to."""
    return event.type, event.step, event.index, event.item_id


class _Smoother:
    """One subscription's state: the chunks and events waiting, the text not cut yet, and
    the timer that releases the next chunk. Every method runs under ``lock``, so the
    observer is called by one thread at a time, in order."""

    def __init__(
        self,
        observer: abc.ObserverBase[ChatEvent],
        scheduler: abc.SchedulerBase,
        interval: timedelta,
        first_chunk: Callable[[str], int],
        chunking: Chunking,
    ) -> None:
        self.lock = threading.RLock()
        self._chunking = chunking if callable(chunking) else None
        self._observer = observer
        self._scheduler = scheduler
        self._interval = interval
        self._first_chunk = first_chunk
        self._waiting: deque[tuple[bool, ChatEvent]] = deque()  # (a chunk?, event)
        self._chunks = 0  # chunks in _waiting
        self._text = ""  # not cut into chunks yet ...
        self._template: ChatEvent | None = None  # ... from this delta's block
        self._after_text: list[tuple[int, ChatEvent]] = []  # passive events at text offsets
        self._timer: abc.DisposableBase | None = None
        self._released_at: Any = None  # when the last chunk went out
        self._due = safe_action(observer, self._release_due, where=_WHERE, fail=self._fail)
        self.stopped = False

    def on_next(self, event: ChatEvent) -> None:
        with self.lock:
            if self.stopped:
                return
            kind = event.type
            if kind in _TEXT and event.text:
                try:
                    self._add_text(event)
                except Exception as error:  # a chunking function or pattern that failed
                    if not (isinstance(error, ValueError) or raised_in(error, self._chunking)):
                        error = failure_of(error, _WHERE)  # not the chunking's: ours
                    self.on_error(error)
                    return
                self._pump()
            elif kind in _PASSIVE or kind in _TEXT:  # a delta with no text is no text either
                if self._text:
                    self._after_text.append((len(self._text), event))
                else:
                    self._wait(False, event)
                    self._pump()
            else:
                self._flush()
                self._observer.on_next(event)

    def on_error(self, error: Exception) -> None:
        with self.lock:
            if not self.stopped:
                self._flush()
                self.stopped = True
                self._observer.on_error(error)

    def on_completed(self) -> None:
        with self.lock:
            if not self.stopped:
                self._flush()
                self.stopped = True
                self._observer.on_completed()

    def dispose(self) -> None:
        with self.lock:
            self.stopped = True
            self._cancel_timer()
            self._waiting.clear()

    def _add_text(self, event: ChatEvent) -> None:
        """Add a delta's text and cut what is complete into waiting chunks."""
        if self._template is not None and _block(self._template) != _block(event):
            self._cut(len(self._text))  # another block's text: the last one's rest goes first
        self._template = event
        self._text += event.text  # type: ignore[operator]
        while self._text:
            end = self._first_chunk(self._text)
            if not end:
                break
            self._cut(end)

    def _cut(self, end: int) -> None:
        """Make the first ``end`` characters of the text a waiting chunk, followed by the
        passive events that came after them."""
        if end:
            assert self._template is not None
            self._wait(True, self._template.evolve(text=self._text[:end]))
            self._text = self._text[end:]
        if self._after_text:
            rest = []
            for offset, event in self._after_text:
                if offset <= end:
                    self._wait(False, event)
                else:
                    rest.append((offset - end, event))
            self._after_text = rest

    def _wait(self, is_chunk: bool, event: ChatEvent) -> None:
        self._waiting.append((is_chunk, event))
        self._chunks += is_chunk

    def _release(self) -> None:
        """Send the first chunk waiting, and the passive events right behind it."""
        waiting = self._waiting
        is_chunk, event = waiting.popleft()
        self._chunks -= is_chunk
        self._observer.on_next(event)
        while waiting and not waiting[0][0]:
            self._observer.on_next(waiting.popleft()[1])

    def _pump(self) -> None:
        """Send what may go now; set the timer for the next chunk."""
        waiting = self._waiting
        while waiting and not waiting[0][0]:  # passive events with no text before them
            self._observer.on_next(waiting.popleft()[1])
        if not self._chunks or self._timer is not None:
            return
        if not self._interval:  # no pace: everything goes now
            while self._chunks:
                self._release()
            return
        now = self._scheduler.now
        if self._released_at is None or now - self._released_at >= self._interval:
            self._released_at = now
            self._release()
            if not self._chunks:
                return
        self._timer = self._scheduler.schedule_relative(
            self._released_at + self._interval - now, self._due
        )

    def _release_due(self, _scheduler: abc.SchedulerBase, _state: Any = None) -> None:
        """The timer's action (``_due``, which ends the stream when it raises)."""
        with self.lock:
            self._timer = None
            if self.stopped or not self._chunks:
                return
            self._released_at = self._scheduler.now
            self._release()
            if self._chunks:
                self._timer = self._scheduler.schedule_relative(self._interval, self._due)

    def _fail(self, error: Exception) -> None:
        """End the stream with ``error``, raised on the scheduler's thread."""
        with self.lock:
            self.stopped = True
            self._observer.on_error(error)

    def _flush(self) -> None:
        """Send every chunk waiting and the text not cut yet, at once."""
        self._cancel_timer()
        self._cut(len(self._text))
        self._template = None
        if self._waiting:
            self._released_at = self._scheduler.now
        while self._waiting:
            self._observer.on_next(self._waiting.popleft()[1])
        self._chunks = 0

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.dispose()
            self._timer = None


_WHERE = "the smooth() operator"


def smooth(
    interval: float | timedelta = 0.01,
    *,
    chunking: Chunking = "word",
    scheduler: abc.SchedulerBase | None = None,
) -> Callable[[Observable[ChatEvent]], Observable[ChatEvent]]:
    """Text and thinking re-chunked and released at most one chunk per ``interval``
    (seconds, default 10 ms), for typewriter rendering; every other event passes.

    ``chunking`` is ``"word"`` (the default: words with their whitespace; Chinese and
    Japanese text by grapheme cluster), ``"line"``, a compiled regular expression (the text
    up to the end of its first match) or a function of the text not released yet that
    returns its first chunk (or None to wait for more). A non-text event first releases
    everything waiting, so a block or the response never ends later than its text (the
    pace only spaces chunks while text keeps coming); the text joined is unchanged. See
    :mod:`solon_events.operators.smoothing`.

    The pace is kept on ``scheduler`` (its clock and its timers; a reactivex
    ``TestScheduler`` runs it in virtual time), by default on a thread of its own per
    subscription (a reactivex ``EventLoopScheduler``); the chunks a timer releases are sent
    from that thread, never two events at once. Disposal stops it at once::

        model.prompt("Tell me a story").stream().pipe(smooth(), text_deltas()).subscribe(
            lambda text: print(text, end="", flush=True))
    """
    pace = interval if isinstance(interval, timedelta) else timedelta(seconds=interval)
    if pace < timedelta(0):
        raise ValueError("interval must be >= 0 seconds")
    first_chunk = chunker(chunking)

    def operator(source: Observable[ChatEvent]) -> Observable[ChatEvent]:
        def subscribe(
            observer: abc.ObserverBase[ChatEvent],
            subscribe_scheduler: abc.SchedulerBase | None = None,
        ) -> abc.DisposableBase:
            own: EventLoopScheduler | None = None
            clock = scheduler
            if clock is None:
                clock = own = EventLoopScheduler(exit_if_empty=True)
            smoother = _Smoother(observer, clock, pace, first_chunk, chunking)
            callbacks = safe_callbacks(
                observer, smoother.on_next, smoother.on_error, smoother.on_completed, where=_WHERE
            )
            subscription = source.subscribe(*callbacks, scheduler=subscribe_scheduler)

            def dispose() -> None:
                smoother.dispose()
                subscription.dispose()
                if own is not None:
                    own.dispose()

            return Disposable(dispose)

        return reactivex.create(subscribe)

    return operator
