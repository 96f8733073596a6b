"""What a :class:`~solon_events.Router` knows of its deployments, and where it is kept.

For each deployment (named by a stable id: its dialect, endpoint and model), a router
reads before routing a request: whether it cools down (for how long yet, and why), how
many requests it has in flight, and a moving average of its time to the first answer
event (:class:`DeploymentState`); as the request goes, it tells the state when an attempt
starts, answers, ends, and when a deployment is to cool down.

:class:`MemoryRouterState` keeps this in the process (the default); :class:`RedisRouterState`
keeps it in Redis (the ``redis`` extra), so that every process sharing that Redis (the
replicas of a gateway) sees the same cooldowns, counts and averages: a deployment that
answered one replica with 429 is skipped by all of them until its ``Retry-After`` has
passed. Both are safe to use from any thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from .redis_batches import RedisBatches, positive_seconds

if TYPE_CHECKING:
    pass

__all__ = [
    "LATENCY_WEIGHT",
    "DeploymentState",
    "MemoryRouterState",
    "RedisRouterState",
    "RouterState",
]

LATENCY_WEIGHT = 0.2
"""How much each new time to the first answer event counts in a deployment's moving
average (an exponentially weighted one: ``average += LATENCY_WEIGHT * (new - average)``)."""

_log = logging.getLogger(__name__)


@attrs.frozen
class DeploymentState:
    """What a router knows of one deployment when it routes a request.

    ``cooldown``: the seconds it still cools down (0: it may be asked), ``reason`` why
    (the failure that cooled it); ``in_flight``: the requests it is answering (every
    process's, with Redis); ``latency``: the moving average of its seconds to the first
    answer event (None before its first answer).
    """

    cooldown: float = 0.0
    reason: str | None = None
    in_flight: int = 0
    latency: float | None = None

    @property
    def cooling(self) -> bool:
        """Whether it cools down (and is skipped)."""
        return self.cooldown > 0

    def describe(self) -> str:
        """Its state in words: ``cooling down for 12.0 s (HTTP 429 ...)``, or ``healthy,
        2 in flight, 0.31 s to first event``."""
        if self.cooling:
            because = f" ({self.reason})" if self.reason else ""
            return f"cooling down for {self.cooldown:.1f} s{because}"
        parts = ["healthy", f"{self.in_flight} in flight"]
        if self.latency is not None:
            parts.append(f"{self.latency:.2f} s to first event")
        return ", ".join(parts)


class RouterState:
    """Where a router keeps its deployments' state (the base of the two kept here).

    Reads: :meth:`peek` (at once, where the state is at hand) or :meth:`read` (a future).
    Writes never block: :meth:`started` (returns a lease to give back to :meth:`ended`),
    :meth:`answered`, :meth:`cool`.
    """

    def peek(self, ids: Sequence[str]) -> list[DeploymentState] | None:
        """The states of deployments ``ids`` now, or None when they must be :meth:`read`."""
        raise NotImplementedError

    def read(self, ids: Sequence[str]) -> concurrent.futures.Future[list[DeploymentState]]:
        """The states of deployments ``ids``, as a future (never failing: a store that
        cannot be read gives states that know nothing)."""
        future: concurrent.futures.Future[list[DeploymentState]] = concurrent.futures.Future()
        future.set_result(self.peek(ids) or [DeploymentState() for _ in ids])
        return future

    def started(self, id: str) -> object:
        """A request to deployment ``id`` started: a lease for :meth:`ended`."""
        raise NotImplementedError

    def ended(self, id: str, lease: object) -> None:
        """The request of ``lease`` to deployment ``id`` ended."""
        raise NotImplementedError

    def answered(self, id: str, seconds: float) -> None:
        """Deployment ``id`` sent its first answer event ``seconds`` after it was asked."""
        raise NotImplementedError

    def cool(self, id: str, seconds: float, reason: str) -> None:
        """Deployment ``id`` is not to be asked for ``seconds`` (``reason``: why); a longer
        cooldown already running is kept, and ``seconds`` of 0 or less is no cooldown."""
        raise NotImplementedError

    def problem(self) -> concurrent.futures.Future[str | None]:
        """Why the state cannot be kept now (Redis does not answer), or None: a future."""
        future: concurrent.futures.Future[str | None] = concurrent.futures.Future()
        future.set_result(None)
        return future

    def close(self) -> None:
        """Let go of what the state holds (connections, threads)."""


class MemoryRouterState(RouterState):
    """The state of a router's deployments in this process (``clock``: a monotonic clock,
    in seconds)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._cool_until: dict[str, tuple[float, str]] = {}
        self._in_flight: dict[str, int] = {}
        self._latency: dict[str, float] = {}

    def __repr__(self) -> str:
        return "MemoryRouterState()"

    def peek(self, ids: Sequence[str]) -> list[DeploymentState]:
        """The states of deployments ``ids`` now."""
        now = self._clock()
        states = []
        with self._lock:
            for id in ids:
                until, reason = self._cool_until.get(id, (0.0, None))
                left = until - now
                states.append(
                    DeploymentState(
                        cooldown=left if left > 0 else 0.0,
                        reason=reason if left > 0 else None,
                        in_flight=self._in_flight.get(id, 0),
                        latency=self._latency.get(id),
                    )
                )
        return states

    def started(self, id: str) -> object:
        with self._lock:
            self._in_flight[id] = self._in_flight.get(id, 0) + 1
        return id

    def ended(self, id: str, lease: object) -> None:
        with self._lock:
            count = self._in_flight.get(id, 0) - 1
            if count > 0:
                self._in_flight[id] = count
            else:
                self._in_flight.pop(id, None)

    def answered(self, id: str, seconds: float) -> None:
        with self._lock:
            average = self._latency.get(id)
            self._latency[id] = (
                seconds if average is None else average + LATENCY_WEIGHT * (seconds - average)
            )

    def cool(self, id: str, seconds: float, reason: str) -> None:
        until = self._clock() + seconds
        with self._lock:
            if until > self._cool_until.get(id, (0.0, ""))[0]:
                self._cool_until[id] = (until, reason)


# In Redis: the cooldown is a key with an expiry holding the reason; the requests in flight
# a sorted set of leases scored by when each lapses (a process that dies leaves leases
# that lapse, never a count that stays too high); the latency a number, averaged by a
# script so that replicas never lose each other's updates.
_COOL = """
local left = redis.call('PTTL', KEYS[1])
if left < tonumber(ARGV[1]) then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[1])
end
return 1
"""
_AVERAGE = """
local average = redis.call('GET', KEYS[1])
local new = tonumber(ARGV[1])
if average then new = tonumber(average) + tonumber(ARGV[2]) * (new - tonumber(average)) end
redis.call('SET', KEYS[1], tostring(new), 'EX', ARGV[3])
return 1
"""


@attrs.define(eq=False, repr=False)
class RedisRouterState(RedisBatches, RouterState):
    """The state of a router's deployments in Redis, shared by every process that uses
    the same ``url`` (``redis://HOST:PORT/DB``) and ``prefix``; needs the ``redis`` extra.

    ``lease``: the seconds a request counts as in flight at most (a process that died
    mid-request stops counting after it); ``timeout``: the seconds a read may take before
    the router routes without the state (and says so in the log); ``latency_ttl``: the
    seconds a latency average is kept after its last update. Redis is spoken to from a
    loop thread of the state's own; writes are sent in order, several per round trip.
    """

    prefix: str = attrs.field(default="solon-events:router", kw_only=True)
    lease: float = attrs.field(default=600.0, kw_only=True, validator=positive_seconds)
    timeout: float = attrs.field(default=0.5, kw_only=True, validator=positive_seconds)
    latency_ttl: float = attrs.field(default=86400.0, kw_only=True, validator=positive_seconds)
    _leases: Iterator[int] = attrs.field(init=False, factory=itertools.count)
    _process: str = attrs.field(init=False, default="")

    feature = "a router's state in Redis"
    kept = "the deployments' state"

    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        self._process = f"{os.getpid()}-{id(self):x}"

    def __repr__(self) -> str:
        from ..support.redaction import redact_url

        return f"RedisRouterState({redact_url(self.url)!r}, prefix={self.prefix!r})"

    def _going_on(self) -> str:
        return "routing goes on without it"

    def _key(self, kind: str, id: str) -> str:
        return f"{self.prefix}:{kind}:{id}"

    # Reads.

    def peek(self, ids: Sequence[str]) -> None:
        """None: the states are read from Redis (:meth:`read`)."""
        return None

    def read(self, ids: Sequence[str]) -> concurrent.futures.Future[list[DeploymentState]]:
        return self._io.submit(self._read(tuple(ids)))

    async def _read(self, ids: tuple[str, ...]) -> list[DeploymentState]:
        try:
            return await asyncio.wait_for(self._fetch(ids), self.timeout)
        except Exception as error:
            self._warn("read", error)
            return [DeploymentState() for _ in ids]

    async def _fetch(self, ids: tuple[str, ...]) -> list[DeploymentState]:
        now = time.time()
        async with self._redis().pipeline(transaction=False) as pipe:
            for id in ids:
                pipe.get(self._key("cool", id))
                pipe.pttl(self._key("cool", id))
                pipe.zcount(self._key("busy", id), now, "+inf")
                pipe.get(self._key("latency", id))
            replies = await pipe.execute()
        states = []
        for reason, left, busy, latency in zip(*[iter(replies)] * 4):
            cooling = reason is not None and left > 0
            states.append(
                DeploymentState(
                    cooldown=left / 1000 if cooling else 0.0,
                    reason=reason.decode() if cooling else None,
                    in_flight=int(busy),
                    latency=float(latency) if latency is not None else None,
                )
            )
        return states

    def problem(self) -> concurrent.futures.Future[str | None]:
        return self._io.submit(self._problem())

    async def _problem(self) -> str | None:
        from ..support.redaction import redact_url

        try:
            await asyncio.wait_for(self._redis().ping(), self.timeout)
        except Exception as error:
            said = str(error) or type(error).__name__
            return f"Redis at {redact_url(self.url)} does not answer: {said}"
        return None

    # Writes, in order, batched.

    def started(self, id: str) -> object:
        lease = f"{self._process}-{next(self._leases)}"
        self._send("busy", (id, lease))
        return lease

    def ended(self, id: str, lease: object) -> None:
        self._send("free", (id, lease))

    def answered(self, id: str, seconds: float) -> None:
        self._send("latency", (id, seconds))

    def cool(self, id: str, seconds: float, reason: str) -> None:
        if seconds > 0:  # Redis expires keys in whole milliseconds: 0 would become 1
            self._send("cool", (id, seconds, reason))

    async def _write(self, writes: list[tuple[str, tuple[Any, ...]]]) -> None:
        now = time.time()
        client = self._redis()
        async with client.pipeline(transaction=False) as pipe:
            for kind, args in writes:
                key = self._key("busy" if kind in ("busy", "free") else kind, args[0])
                if kind == "busy":
                    pipe.zadd(key, {args[1]: now + self.lease})
                    pipe.zremrangebyscore(key, "-inf", now)
                    pipe.expire(key, int(self.lease) + 1)
                elif kind == "free":
                    pipe.zrem(key, args[1])
                elif kind == "latency":
                    pipe.eval(_AVERAGE, 1, key, args[1], LATENCY_WEIGHT, int(self.latency_ttl))
                else:
                    milliseconds = max(1, round(args[1] * 1000))
                    pipe.eval(_COOL, 1, key, milliseconds, args[2])
            await pipe.execute()
