"""State kept in Redis by a loop thread of its own, its writes sent in order, several per
round trip: what a router's state (:mod:`~solon_events.client.router_state`) and a
limiter's counts (:mod:`~solon_events.client.limit_store`) share.

A :class:`RedisBatches` speaks to Redis (``redis.asyncio``, the ``redis`` extra) only from
its own :class:`~solon_events.support.loop_thread.EventLoopThread`, so that any thread and any
event loop may use it. A write (:meth:`RedisBatches._send`) never blocks: it is queued on
that loop, and the queue is written as one pipeline (:meth:`RedisBatches._write`, a
subclass's), then the next, in order. Reads are the subclass's, submitted to the same
loop. A failure of Redis is logged (at most every 10 s per kind of use), never raised into
the requests that use the state.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import time
from typing import TYPE_CHECKING, Any

import attrs

from ..event_model.extras import require
from ..support.loop_thread import EventLoopThread

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ["RedisBatches", "positive_seconds"]

_log = logging.getLogger(__name__)

WARN_EVERY = 10.0
"""The seconds between two logged failures of the same kind of use."""


def positive_seconds(_instance: Any, attribute: attrs.Attribute[float], value: float) -> None:
    """An attrs validator: a positive number of seconds."""
    if not value > 0:
        raise ValueError(f"{attribute.name} must be a positive number of seconds, not {value!r}")


def _loop_thread() -> EventLoopThread:
    return EventLoopThread(name="solon-events-redis-state")


@attrs.define(eq=False, repr=False)
class RedisBatches:
    """Redis at ``url`` spoken to from a loop thread of its own (see the module's docs);
    ``timeout``: the seconds a connection or a reply may take. ``feature`` names what
    needs the ``redis`` extra, in the error when it is missing."""

    url: str
    timeout: float = attrs.field(default=1.0, kw_only=True, validator=positive_seconds)
    _io: EventLoopThread = attrs.field(init=False, factory=_loop_thread)
    _client: Redis | None = attrs.field(init=False, default=None)
    _pending: list[tuple[str, tuple[Any, ...]]] = attrs.field(init=False, factory=list)
    _flushing: bool = attrs.field(init=False, default=False)
    _idle: asyncio.Event | None = attrs.field(init=False, default=None)
    _warned: dict[str, float] = attrs.field(init=False, factory=dict)

    feature = "state kept in Redis"
    """What needs the ``redis`` extra, as the error when it is missing says."""
    kept = "the state"
    """What is kept in Redis, as the log says: ``could not read the state``."""

    def _going_on(self) -> str:
        """What happens while Redis fails, as the log says."""
        return "it goes on without Redis"

    def __attrs_post_init__(self) -> None:
        require("redis.asyncio", feature=self.feature, extra="redis")

    def _redis(self) -> Redis:
        """The client, made on first use (in the loop thread)."""
        if self._client is None:
            from redis.asyncio import Redis

            self._client = Redis.from_url(
                self.url, socket_connect_timeout=self.timeout, socket_timeout=self.timeout
            )
            self._connected(self._client)
        return self._client

    def _connected(self, client: Redis) -> None:
        """The client was made (register scripts here)."""

    # Writes, in order, batched.

    def _send(self, kind: str, args: tuple[Any, ...]) -> None:
        """Queue a write of ``kind`` (from any thread); it is written in order."""
        if self._io.in_loop_thread():
            self._queue(kind, args)
        else:  # the loop thread starts on first use
            self._io.loop.call_soon_threadsafe(self._queue, kind, args)

    def _queue(self, kind: str, args: tuple[Any, ...]) -> None:
        self._pending.append((kind, args))
        if not self._flushing:
            self._flushing = True
            asyncio.get_running_loop().create_task(self._flush())

    async def _flush(self) -> None:
        if self._idle is None:
            self._idle = asyncio.Event()
        self._idle.clear()
        try:
            while self._pending:
                writes, self._pending = self._pending, []
                try:
                    await asyncio.wait_for(self._write(writes), self.timeout * 4)
                except Exception as error:
                    self._warn("write", error)
        finally:
            self._flushing = False
            self._idle.set()

    async def _write(self, writes: list[tuple[str, tuple[Any, ...]]]) -> None:
        """Write ``writes`` (kind and arguments, in order) as one round trip."""
        raise NotImplementedError

    def flush(self) -> concurrent.futures.Future[None]:
        """A future done once the writes sent so far are written (or given up)."""
        return self._io.submit(self._drained())

    async def _drained(self) -> None:
        while self._flushing and self._idle is not None:
            await self._idle.wait()

    def _warn(self, doing: str, error: BaseException) -> None:
        """Log that Redis failed (at most every :data:`WARN_EVERY` seconds per ``doing``)."""
        now = time.monotonic()
        if now - self._warned.get(doing, -WARN_EVERY) >= WARN_EVERY:
            self._warned[doing] = now
            _log.warning(
                "%r could not %s %s (%s): %s",
                self,
                doing,
                self.kept,
                self._going_on(),
                error or type(error).__name__,
            )

    def close(self) -> None:
        """Write what is pending, then close the connection and the loop thread."""
        if self._io.started:
            try:
                self.flush().result(timeout=self.timeout * 4)
            except Exception:  # closing is best effort
                _log.debug("%r: the last writes were not written", self, exc_info=True)
        client, self._client = self._client, None
        if client is not None and self._io.started:
            try:
                self._io.run(client.aclose(), timeout=2)
            except Exception:  # closing is best effort
                _log.debug("closing %r's Redis client failed", self, exc_info=True)
        self._io.close()
