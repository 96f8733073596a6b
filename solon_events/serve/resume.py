"""The gateway's resumable streams: a response written to a Redis log, read by any client.

A :class:`StoredResponse` runs one model response in this process and writes each of its
encoded SSE events to the log (a stream per response and protocol), then the protocol's
closing event and the end entry. Clients, the one that asked included, read the stream
with :func:`send_entries`, each event framed with its entry id (``id:``), so that a
client that lost its connection continues after the last id it saw, on any process.
A stop request cancels the model request and ends the stream with the protocol's
abort event. Needs the ``redis`` extra; :mod:`solon_events.serve` uses it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Protocol

from ..event_model.events import EVENT_TYPES, ChatEvent
from .redis_log import Outcome, RedisStreamLog, StreamLogError, StreamWriter

__all__ = ["StoredResponse", "send_entries"]


class Wire(Protocol):
    """What the gateway's protocols offer (see ``serve._Wire``)."""

    kind: str
    closing: bytes

    def encode(self, event: ChatEvent) -> list[bytes]: ...

    def fail(self, error: BaseException | None, text: str | None = None) -> list[bytes]: ...


class Writable(Protocol):
    async def write(self, data: bytes) -> None: ...


class StoredResponse:
    """One model response, written to ``log`` as ``wire`` encodes it, on the running loop.

    ``started`` is set once the response id is known and its first entry is written (or
    writing failed: ``failure``); ``on_end`` is called once, when it has ended.
    """

    def __init__(
        self, log: RedisStreamLog, wire: Wire, on_end: Callable[[StoredResponse], None]
    ) -> None:
        self.log = log
        self.wire = wire
        self.response_id: str | None = None
        self.key: str | None = None
        self.failure: BaseException | None = None
        self.started = asyncio.Event()
        self._on_end = on_end
        self._writer: StreamWriter | None = None
        self._reading: asyncio.Future[None] | None = None
        self._starting: asyncio.Future[None] | None = None
        self._ended = False

    @property
    def ended(self) -> bool:
        """Whether the response has ended (``on_end`` was called)."""
        return self._ended

    def run(self, events: AsyncIterator[ChatEvent]) -> None:
        """Read ``events`` (a model's ``astream()``) in a task of their own on this loop."""
        self._reading = asyncio.ensure_future(self._read(events))

    async def _read(self, events: AsyncIterator[ChatEvent]) -> None:
        try:
            async for event in events:
                self._feed(event)
        except asyncio.CancelledError:  # stopped: stop() or _lost() says what follows
            pass
        except Exception as exc:  # after its ERROR event
            self._fail(exc)
        else:
            self._end("completed")

    def _cancel(self) -> None:
        """Stop reading the model's events (which closes its request's connection)."""
        if self._reading is not None:
            self._reading.cancel()

    def _feed(self, event: ChatEvent) -> None:
        if self._ended:
            return
        if self._writer is None:
            self.response_id = event.response_id or "unknown"
            self.key = self.log.key(self.wire.kind, self.response_id)
            self._writer = StreamWriter(self.log, self.key, on_failure=self._lost)
            self._starting = asyncio.ensure_future(self._started())
        for data in self.wire.encode(event):
            self._writer.put(data)

    async def _started(self) -> None:
        assert self._writer is not None
        await self._writer.written.wait()
        self.failure = self._writer.failure
        self.started.set()

    def _fail(self, error: BaseException) -> None:
        if self._writer is None:  # failed before its first event: nothing to store
            self.failure = error
            self.started.set()
            self._finish()
            return
        for data in self.wire.fail(error):
            self._writer.put(data)
        self._end("failed")

    def _end(self, outcome: Outcome) -> None:
        if self._ended or self._writer is None:
            return
        if self.wire.closing:
            self._writer.put(self.wire.closing)
        self._writer.end(outcome)
        self._finish()

    def _finish(self) -> None:
        if not self._ended:
            self._ended = True
            self._on_end(self)

    def stop(self) -> None:
        """Cancel the model request; the stream ends with the protocol's abort event."""
        if self._ended:
            return
        self._cancel()
        if self._writer is not None:
            abort = ChatEvent(
                EVENT_TYPES.ABORT, text="stopped on request", response_id=self.response_id
            )
            for data in self.wire.encode(abort):
                self._writer.put(data)
        self._end("stopped")

    def _lost(self, error: BaseException) -> None:
        """Writing failed (Redis went away): stop the model request, nothing more."""
        self.failure = error
        self._cancel()
        self._ended = True
        self._on_end(self)

    async def done(self) -> None:
        """Wait until the stream's end is written (or writing failed)."""
        if self._writer is not None:
            await self._writer.done()


async def send_entries(
    log: RedisStreamLog, key: str, after: str | None, response: Writable, wire: Wire
) -> None:
    """Write ``key``'s stream after ``after`` to ``response``, each event with its id; a
    stream that cannot be read whole ends with ``wire``'s error event."""
    try:
        async for entry in log.read(key, after):
            if entry.outcome is not None:
                return
            await response.write(b"id: " + entry.id.encode() + b"\n" + entry.data)
    except StreamLogError as exc:
        closing = [wire.closing] if wire.closing else []
        for data in [*wire.fail(exc), *closing]:
            await response.write(data)
