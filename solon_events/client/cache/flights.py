"""Single flight: identical requests in flight share one upstream response.

A :class:`Flight` is one upstream response that several clients follow: each gets every
event from the first (:meth:`Flight.follow`, from any event loop or thread), however late
it joined, then the response's end or its failure. The upstream is stopped when the last
client leaves before its end.

A :class:`FlightBoard` shares flights between processes (the replicas of a gateway): the
process that claims a request leads it (:meth:`FlightBoard.claim` gives its
:class:`FlightLead`, which publishes every event), the others follow what it publishes
(:meth:`FlightBoard.follow`). :mod:`solon_events.serve.shared_flights` keeps a board in
Redis, on the resumable streams' event log.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator, Callable
from typing import Protocol, runtime_checkable

from ...event_model.errors import ChatError
from ...event_model.events import ChatEvent

__all__ = ["Flight", "FlightBoard", "FlightGone", "FlightLead"]


class FlightGone(ChatError):
    """The flight another process led is over and left nothing to follow (a board's
    :meth:`FlightBoard.follow`, before any event)."""


class Flight:
    """One upstream response shared by the clients that :meth:`join` it (see the module's
    documentation). ``created`` is when it started (Unix time); ``owned`` whether its
    upstream runs here for the client that started it (False: it relays another
    process's)."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.created = time.time()
        self.owned = True
        self.events: list[ChatEvent] = []
        self.ended = False
        self.error: BaseException | None = None
        self._lock = threading.Lock()
        self._wakers: dict[int, Callable[[], None]] = {}
        self._clients = 0
        self._stop: Callable[[], None] | None = None

    def __repr__(self) -> str:
        state = "ended" if self.ended else f"{len(self.events)} events"
        return f"Flight({self.key[:12]}, {state}, {self._clients} clients)"

    @property
    def clients(self) -> int:
        """How many clients follow it now."""
        return self._clients

    def on_stop(self, stop: Callable[[], None]) -> None:
        """Call ``stop`` (from any thread) when the last client leaves before the end."""
        self._stop = stop

    def join(self) -> None:
        """One more client follows it (:meth:`follow` then counts it out)."""
        with self._lock:
            self._clients += 1

    def push(self, event: ChatEvent) -> None:
        """The upstream's next event (from the thread that runs it)."""
        with self._lock:
            self.events.append(event)
            wakers = tuple(self._wakers.values())
        for wake in wakers:
            wake()

    def end(self, error: BaseException | None = None) -> None:
        """The upstream's end: completed (None) or failed with ``error``."""
        with self._lock:
            if self.ended:
                return
            self.ended = True
            self.error = error
            wakers = tuple(self._wakers.values())
        for wake in wakers:
            wake()

    async def follow(self) -> AsyncIterator[ChatEvent]:
        """Every event of the flight from the first, as they come; then its end (raising
        its failure). Call :meth:`join` first; leaving (the end, ``aclose()``, a
        cancellation) counts the client out."""
        loop = asyncio.get_running_loop()
        ready = asyncio.Event()
        here = threading.get_ident()

        def wake() -> None:
            if threading.get_ident() == here:
                ready.set()
            else:
                with contextlib.suppress(RuntimeError):  # its loop is closed
                    loop.call_soon_threadsafe(ready.set)

        token = id(wake)
        with self._lock:
            self._wakers[token] = wake
        seen = 0
        try:
            while True:
                ready.clear()
                with self._lock:
                    new = self.events[seen:]
                    ended = self.ended
                seen += len(new)
                for event in new:
                    yield event
                if ended and seen == len(self.events):
                    if self.error is not None:
                        raise self.error
                    return
                await ready.wait()
        finally:
            with self._lock:
                self._wakers.pop(token, None)
                self._clients -= 1
                stop = self._stop if self._clients == 0 and not self.ended else None
            if stop is not None:
                stop()


@runtime_checkable
class FlightLead(Protocol):
    """The process that leads a flight publishes its events for the others."""

    def put(self, event: ChatEvent) -> None:
        """Publish the flight's next event."""

    async def end(self, error: BaseException | None, *, stopped: bool = False) -> None:
        """Publish the end: completed (None), failed with ``error``, or ``stopped``
        (every client left); the flight is no longer claimed."""


@runtime_checkable
class FlightBoard(Protocol):
    """Flights shared between processes (see the module's documentation)."""

    async def claim(self, key: str) -> FlightLead | None:
        """Lead the flight of ``key`` (its :class:`FlightLead`), or None when another
        process leads it."""

    def follow(self, key: str) -> AsyncIterator[ChatEvent]:
        """The events another process's flight of ``key`` publishes, from its first,
        then its end (raising its failure); :class:`FlightGone` before any event when it
        is over and gone."""
