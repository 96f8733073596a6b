"""Single flight across processes: identical requests in flight on several replicas of a
gateway share one upstream response, through Redis.

:class:`RedisFlights` is a :class:`~solon_events.client.cache.FlightBoard`: the process
that claims a request (``SET NX`` of ``{prefix}:flight:{key}``, with a lease it renews)
leads it and writes every event of its upstream response to a stream of the resumable
streams' event log (:class:`~solon_events.serve.redis_log.RedisStreamLog`); a process that
finds the request claimed reads that stream from its first entry, then its live tail, to
its end. The leader stores the answer, then ends the stream and lets go of the claim, so
a request that comes after finds the answer in the cache. A leader that dies stops
renewing: its followers fail with :class:`~solon_events.serve.redis_log.StreamLogError`
(its writer went away) and the claim expires.

Needs the ``redis`` extra (``pip install 'solon-events[redis]'``).
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator

from ..adapters.native import decode_event, encode_event
from ..client.cache import FlightGone
from ..event_model.errors import ChatError
from ..event_model.events import ChatEvent
from .redis_log import RedisStreamLog, StreamWriter

__all__ = ["RedisFlights"]

_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0
"""


class RedisFlights:
    """Flights shared through Redis at ``url`` (see the module's documentation): claims
    under ``{prefix}:flight:``, event streams kept ``ttl`` seconds after their end; a
    leader silent for ``lease`` seconds counts as gone."""

    def __init__(
        self,
        url: str,
        *,
        prefix: str = "solon-events",
        lease: float = 10.0,
        ttl: float = 60.0,
    ) -> None:
        self.log = RedisStreamLog(url, prefix=prefix, lease=lease, ttl=ttl)  # checks them
        self.lease = lease

    def __repr__(self) -> str:
        return f"RedisFlights({self.log!r})"

    def claim_key(self, key: str) -> str:
        """The Redis key of the claim on the flight of ``key``."""
        return f"{self.log.prefix}:flight:{key}"

    async def claim(self, key: str) -> _RedisLead | None:
        """Lead the flight of ``key`` (its lead), or None when another process leads it."""
        token = uuid.uuid4().hex
        claimed = await self.log.client().set(
            self.claim_key(key), token, nx=True, px=int(self.lease * 1000)
        )
        return _RedisLead(self, key, token) if claimed else None

    async def follow(self, key: str) -> AsyncIterator[ChatEvent]:
        """The events the leader of ``key``'s flight writes, from the first, then its end
        (raising its failure); :class:`~solon_events.client.cache.FlightGone` when there is
        no flight to follow any more."""
        client = self.log.client()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.lease
        while True:
            token = await client.get(self.claim_key(key))
            if token is None:
                raise FlightGone(f"the flight of {key[:12]} is over")
            stream = self.log.key("flight", token.decode() if isinstance(token, bytes) else token)
            if await self.log.exists(stream):
                break
            if loop.time() > deadline:
                raise FlightGone(f"the leader of {key[:12]} wrote nothing for {self.lease} s")
            await asyncio.sleep(0.005)
        failure: BaseException | None = None
        async for entry in self.log.read(stream):
            if entry.outcome is None:
                event = decode_event(entry.data)
                if event.error is not None:
                    failure = event.error
                yield event
            elif entry.outcome == "completed":
                return
            elif entry.outcome == "failed":
                raise failure or ChatError("the shared request failed")
            else:
                raise ChatError("the identical request this one shared was stopped; ask again")

    async def aclose(self) -> None:
        """Close the running loop's Redis client."""
        await self.log.aclose()

    def close(self) -> None:
        """Close the log's own thread, if it made one."""
        self.log.close()


class _RedisLead:
    """The leader's side of one flight: its events to the stream, its claim renewed."""

    def __init__(self, board: RedisFlights, key: str, token: str) -> None:
        self._board = board
        self._claim = board.claim_key(key)
        self._token = token
        self._writer = StreamWriter(board.log, board.log.key("flight", token))
        self._renewing = asyncio.ensure_future(self._renew())

    def put(self, event: ChatEvent) -> None:
        self._writer.put(encode_event(event))

    async def end(self, error: BaseException | None, *, stopped: bool = False) -> None:
        self._writer.end("stopped" if stopped else "failed" if error is not None else "completed")
        try:
            await self._writer.done()
        finally:
            self._renewing.cancel()
            client = self._board.log.client()
            await client.eval(_RELEASE, 1, self._claim, self._token)

    async def _renew(self) -> None:
        client = self._board.log.client()
        every = self._board.lease / 3
        while True:
            await asyncio.sleep(every)
            with contextlib.suppress(Exception):  # the claim then expires: followers see it
                await client.pexpire(self._claim, int(self._board.lease * 1000))
