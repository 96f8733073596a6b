"""Where a :class:`~solon_events.client.limiter.Limiter` keeps its counts: in the process
(:class:`MemoryLimitStore`) or in Redis (:class:`RedisLimitStore`, the ``redis`` extra),
where every process sharing it (the replicas of a gateway) counts against the same limits.

Both run the same algorithm. A *claim* (:class:`Claim`) asks for a request's place (one
more request in the minute, one more in flight) and for an amount of tokens and spend;
it is granted whole, against every limit at once, or refused with the limit that refused
it and the seconds until it could pass (:class:`Decision`). In Redis the check and the
counting are one Lua script, so that claims from many processes never both take the
last place. Then, never refused: :meth:`LimitStore.adjust` adds (or gives back) tokens
and spend as the usage becomes known, and :meth:`LimitStore.release` ends a request's
time in flight.

The counts, per scope (a limiter's name): the requests in flight, a set of leases that
lapse (in Redis, a process that died stops counting after its lease; a live one renews
its leases); requests and tokens per second over the last 60 seconds (the per-minute
limits' sliding window); tokens and spend per budget period (see
:func:`~solon_events.client.limits.period_of`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import math
import threading
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import attrs

from .limits import Limits, period_of
from .redis_batches import RedisBatches, positive_seconds

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = [
    "Claim",
    "Decision",
    "LimitCounts",
    "LimitStore",
    "MemoryLimitStore",
    "RedisLimitStore",
]


WINDOW = 60
"""The per-minute limits' window, in whole seconds."""

PARALLEL_WAIT = 1.0
"""The Retry-After of a request refused for the requests in flight (when one ends cannot
be known)."""


@attrs.frozen(kw_only=True)
class Claim:
    """What one request asks of a store: under ``scope``, with ``limits``, at Unix time
    ``now``: its place (``counts``: one more request per minute and in flight, as ``id``,
    whose lease lapses at ``lease_until``) and ``tokens`` and ``nanos`` (spend, in
    billionths of a dollar). A claim that does not ``count`` asks for more tokens and
    spend for a request already in (a stream past its reservation)."""

    scope: str
    limits: Limits
    id: str
    now: float
    tokens: int = 0
    nanos: int = 0
    counts: bool = True
    lease_until: float = math.inf


@attrs.frozen(kw_only=True)
class Decision:
    """A store's answer to a :class:`Claim`: ``granted``, else the ``limit`` that refused
    it and the seconds until it could pass (``retry_after``; None when waiting within the
    window does not help). ``second`` and ``period`` say where a granted claim was counted
    (the per-minute window's second, the budget's period): what is adjusted later is
    adjusted there."""

    granted: bool
    limit: str | None = None
    retry_after: float | None = None
    second: int = 0
    period: str = ""


@attrs.frozen(kw_only=True)
class LimitCounts:
    """A scope's counts now: ``in_flight`` requests, ``requests`` and ``tokens`` in the
    last minute, and the budget period's (``period``) ``spent_tokens`` and ``spent_nanos``
    (billionths of a dollar). Counts the limits do not use may not be kept (0)."""

    in_flight: int = 0
    requests: int = 0
    tokens: int = 0
    period: str = ""
    spent_tokens: int = 0
    spent_nanos: int = 0


def _refusal(refusals: list[tuple[str, float | None]]) -> tuple[str, float | None]:
    """The refusal that lasts longest: one that waiting does not lift, else the longest
    wait."""
    for limit, wait in refusals:
        if wait is None:
            return limit, None
    return max(refusals, key=lambda refusal: refusal[1] or 0.0)


class LimitStore:
    """Where a limiter's counts are kept (see the module's docs). :meth:`claim` and
    :meth:`counts` answer at once (an in-process store) or with a future (Redis): use
    :meth:`aclaim` and :meth:`acounts` to await either. Writes never block."""

    def claim(self, claim: Claim) -> Decision | concurrent.futures.Future[Decision]:
        """Grant ``claim`` whole or refuse it."""
        raise NotImplementedError

    async def aclaim(self, claim: Claim) -> Decision:
        """:meth:`claim`, awaited."""
        decided = self.claim(claim)
        if isinstance(decided, Decision):
            return decided
        return await asyncio.wrap_future(decided)

    def adjust(
        self,
        scope: str,
        second: int,
        period: str,
        tokens: int,
        nanos: int,
        *,
        per_minute: bool = True,
    ) -> None:
        """Add ``tokens`` and ``nanos`` (negative: give back) to the counts of a request
        counted at ``second`` (the per-minute window's, unless ``per_minute`` is false:
        no limit counts tokens per minute) and ``period`` (the budget's)."""
        if tokens or nanos:
            self._adjust((scope, second, period, tokens, nanos, per_minute))

    def _adjust(self, change: tuple[str, int, str, int, int, bool]) -> None:
        """:meth:`adjust`'s arguments, in order, as one tuple."""
        raise NotImplementedError

    def release(self, scope: str, id: str) -> None:
        """Request ``id`` is no longer in flight."""
        raise NotImplementedError

    def counts(
        self, scope: str, limits: Limits, now: float
    ) -> LimitCounts | concurrent.futures.Future[LimitCounts]:
        """The counts of ``scope`` at ``now``."""
        raise NotImplementedError

    async def acounts(self, scope: str, limits: Limits, now: float | None = None) -> LimitCounts:
        """:meth:`counts`, awaited (``now``: the time now)."""
        found = self.counts(scope, limits, time.time() if now is None else now)
        if isinstance(found, LimitCounts):
            return found
        return await asyncio.wrap_future(found)

    def close(self) -> None:
        """Let go of what the store holds (connections, threads)."""


@attrs.define
class _Scope:
    in_flight: dict[str, float] = attrs.field(factory=dict)
    requests: dict[int, int] = attrs.field(factory=dict)
    tokens: dict[int, int] = attrs.field(factory=dict)
    spent: dict[str, list[int]] = attrs.field(factory=dict)


def _window(buckets: dict[int, int], second: int) -> tuple[int, list[tuple[int, int]]]:
    """The sum of ``buckets`` within the window ending at ``second`` (older ones
    dropped), and those buckets in time order."""
    for old in [s for s in buckets if s <= second - WINDOW]:
        del buckets[old]
    kept = sorted(buckets.items())
    return sum(value for _, value in kept), kept


def _wait_for(kept: list[tuple[int, int]], excess: int, now: float) -> float:
    """The seconds until ``excess`` has left the window."""
    freed = 0
    for second, value in kept:
        freed += value
        if freed >= excess:
            return second + WINDOW - now
    return float(WINDOW)


class MemoryLimitStore(LimitStore):
    """A limiter's counts in this process (safe from any thread). Requests in flight
    have no lease here: the process that counts them is the one that ends them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._scopes: dict[str, _Scope] = {}

    def __repr__(self) -> str:
        return "MemoryLimitStore()"

    def claim(self, claim: Claim) -> Decision:
        limits, now = claim.limits, claim.now
        second = math.floor(now)
        period, ends = period_of(limits.window, now)
        refusals: list[tuple[str, float | None]] = []
        with self._lock:
            scope = self._scopes.setdefault(claim.scope, _Scope())
            if claim.counts:
                parallel = limits.max_parallel
                if parallel is not None and len(scope.in_flight) + 1 > parallel:
                    refusals.append(("max_parallel", PARALLEL_WAIT))
                if limits.rpm is not None:
                    used, kept = _window(scope.requests, second)
                    if used + 1 > limits.rpm:
                        refusals.append(("rpm", _wait_for(kept, used + 1 - limits.rpm, now)))
            if limits.tpm is not None:
                if claim.tokens > limits.tpm:
                    refusals.append(("tpm", None))
                else:
                    used, kept = _window(scope.tokens, second)
                    if used + claim.tokens > limits.tpm:
                        excess = used + claim.tokens - limits.tpm
                        refusals.append(("tpm", _wait_for(kept, excess, now)))
            spent = scope.spent.setdefault(period, [0, 0])
            for name, index, budget, amount in (
                ("budget_tokens", 0, limits.budget_tokens, claim.tokens),
                ("budget_usd", 1, limits.budget_nanos, claim.nanos),
            ):
                if budget is not None and (
                    spent[index] >= budget or spent[index] + amount > budget
                ):
                    never = ends is None or amount > budget
                    refusals.append((name, None if never else ends - now))  # type: ignore[operator]
            if refusals:
                limit, wait = _refusal(refusals)
                return Decision(granted=False, limit=limit, retry_after=wait)
            if claim.counts:
                scope.in_flight[claim.id] = claim.lease_until
                if limits.rpm is not None:
                    scope.requests[second] = scope.requests.get(second, 0) + 1
            if limits.tpm is not None:
                scope.tokens[second] = scope.tokens.get(second, 0) + claim.tokens
            spent[0] += claim.tokens
            spent[1] += claim.nanos
            for old in [p for p in scope.spent if p != period]:
                del scope.spent[old]
        return Decision(granted=True, second=second, period=period)

    def _adjust(self, change: tuple[str, int, str, int, int, bool]) -> None:
        scope, second, period, tokens, nanos, per_minute = change
        with self._lock:
            state = self._scopes.setdefault(scope, _Scope())
            if per_minute:
                state.tokens[second] = state.tokens.get(second, 0) + tokens
            spent = state.spent.get(period)
            if spent is not None:
                spent[0] += tokens
                spent[1] += nanos

    def release(self, scope: str, id: str) -> None:
        with self._lock:
            state = self._scopes.get(scope)
            if state is not None:
                state.in_flight.pop(id, None)

    def counts(self, scope: str, limits: Limits, now: float) -> LimitCounts:
        second = math.floor(now)
        period, _ends = period_of(limits.window, now)
        with self._lock:
            state = self._scopes.setdefault(scope, _Scope())
            requests, _ = _window(state.requests, second)
            tokens, _ = _window(state.tokens, second)
            spent = state.spent.get(period, [0, 0])
            return LimitCounts(
                in_flight=len(state.in_flight),
                requests=requests,
                tokens=tokens,
                period=period,
                spent_tokens=spent[0],
                spent_nanos=spent[1],
            )


# The claim, in one script: the same steps as MemoryLimitStore.claim. Numbers that are not
# whole go back as strings (Redis makes a Lua number an integer).
_CLAIM = """
local now = tonumber(ARGV[1])
local second = tonumber(ARGV[16])
local tokens = tonumber(ARGV[4])
local nanos = tonumber(ARGV[5])
local counts = ARGV[6] == '1'
local max_parallel = tonumber(ARGV[7])
local rpm = tonumber(ARGV[8])
local tpm = tonumber(ARGV[9])
local budget_tokens = tonumber(ARGV[10])
local budget_nanos = tonumber(ARGV[11])
local ends = tonumber(ARGV[12])
local window = tonumber(ARGV[14])
local refusals = {}

local function buckets(key)
  local flat = redis.call('HGETALL', key)
  local used, kept = 0, {}
  for i = 1, #flat, 2 do
    local at = tonumber(flat[i])
    if at <= second - window then
      redis.call('HDEL', key, flat[i])
    else
      local value = tonumber(flat[i + 1])
      used = used + value
      kept[#kept + 1] = {at, value}
    end
  end
  return used, kept
end

local function wait_for(kept, excess)
  table.sort(kept, function(a, b) return a[1] < b[1] end)
  local freed = 0
  for _, bucket in ipairs(kept) do
    freed = freed + bucket[2]
    if freed >= excess then return bucket[1] + window - now end
  end
  return window
end

if counts then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
  if max_parallel >= 0 and redis.call('ZCARD', KEYS[1]) + 1 > max_parallel then
    refusals[#refusals + 1] = {'max_parallel', tonumber(ARGV[15])}
  end
  if rpm >= 0 then
    local used, kept = buckets(KEYS[2])
    if used + 1 > rpm then refusals[#refusals + 1] = {'rpm', wait_for(kept, used + 1 - rpm)} end
  end
end
if tpm >= 0 then
  if tokens > tpm then
    refusals[#refusals + 1] = {'tpm', -1}
  else
    local used, kept = buckets(KEYS[3])
    if used + tokens > tpm then
      refusals[#refusals + 1] = {'tpm', wait_for(kept, used + tokens - tpm)}
    end
  end
end
local function budget(field, limit, amount, name)
  if limit < 0 then return end
  local spent = tonumber(redis.call('HGET', KEYS[4], field) or '0')
  if spent >= limit or spent + amount > limit then
    if ends < 0 or amount > limit then
      refusals[#refusals + 1] = {name, -1}
    else
      refusals[#refusals + 1] = {name, ends - now}
    end
  end
end
budget('tokens', budget_tokens, tokens, 'budget_tokens')
budget('nanos', budget_nanos, nanos, 'budget_usd')

if #refusals > 0 then
  local chosen = refusals[1]
  for _, refusal in ipairs(refusals) do
    if refusal[2] < 0 then chosen = refusal break end
    if refusal[2] > chosen[2] then chosen = refusal end
  end
  return {chosen[1], tostring(chosen[2])}
end
if counts then
  redis.call('ZADD', KEYS[1], ARGV[3], ARGV[2])
  redis.call('EXPIRE', KEYS[1], math.ceil(tonumber(ARGV[3]) - now) + 1)
  if rpm >= 0 then
    redis.call('HINCRBY', KEYS[2], ARGV[16], 1)
    redis.call('EXPIRE', KEYS[2], 2 * window)
  end
end
if tpm >= 0 then
  redis.call('HINCRBY', KEYS[3], ARGV[16], ARGV[4])
  redis.call('EXPIRE', KEYS[3], 2 * window)
end
redis.call('HINCRBY', KEYS[4], 'tokens', ARGV[4])
redis.call('HINCRBY', KEYS[4], 'nanos', ARGV[5])
local keep = tonumber(ARGV[13])
if keep > 0 then redis.call('EXPIRE', KEYS[4], keep) end
return {'', ARGV[16]}
"""

_SPEND_KEPT = 86400.0
"""How long a budget period's counts are kept in Redis after it ended (for reading)."""

_LATE_KEPT = 35 * 86400
"""The expiry of a budget period's counts made again by a charge after they lapsed."""


@attrs.define(eq=False, repr=False)
class RedisLimitStore(RedisBatches, LimitStore):
    """A limiter's counts in Redis, shared by every process that uses the same ``url``
    (``redis://HOST:PORT/DB``) and ``prefix``; needs the ``redis`` extra.

    ``lease``: the seconds a request counts as in flight after its last renewal (this
    store renews the leases of its process's requests every third of it: a process that
    died stops counting after at most ``lease`` seconds); ``timeout``: the seconds a
    claim may wait for Redis; ``unavailable``: what a claim Redis cannot answer gets
    (``"allow"``: granted, and logged; ``"refuse"``: refused as ``"unavailable"``).
    Redis is spoken to from a loop thread of the store's own; writes are sent in order,
    several per round trip.
    """

    prefix: str = attrs.field(default="solon-events:limits", kw_only=True)
    lease: float = attrs.field(default=60.0, kw_only=True, validator=positive_seconds)
    unavailable: str = attrs.field(default="allow", kw_only=True)
    _script: Any = attrs.field(init=False, default=None)
    _held: dict[tuple[str, str], float] = attrs.field(init=False, factory=dict)
    _renewing: asyncio.TimerHandle | None = attrs.field(init=False, default=None)

    feature = "limits kept in Redis"
    kept = "the limits' counts"

    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        if self.unavailable not in ("allow", "refuse"):
            raise ValueError(f"unavailable must be 'allow' or 'refuse', not {self.unavailable!r}")

    def __repr__(self) -> str:
        from ..support.redaction import redact_url

        return f"RedisLimitStore({redact_url(self.url)!r}, prefix={self.prefix!r})"

    def _going_on(self) -> str:
        return "limits go on " + ("refusing" if self.unavailable == "refuse" else "allowing")

    def _connected(self, client: Redis) -> None:
        self._script = client.register_script(_CLAIM)

    def key(self, scope: str, kind: str) -> str:
        """The Redis key of ``scope``'s ``kind`` of count (``in_flight``, ``requests``,
        ``tokens``, ``spent:PERIOD``); a scope's keys share a hash slot."""
        safe = scope.replace("{", "(").replace("}", ")")
        return f"{self.prefix}:{{{safe}}}:{kind}"

    # Claims.

    def claim(self, claim: Claim) -> concurrent.futures.Future[Decision]:
        return self._io.submit(self._claim(claim))

    async def _claim(self, claim: Claim) -> Decision:
        limits, scope = claim.limits, claim.scope
        period, ends = period_of(limits.window, claim.now)
        lease_until = min(claim.lease_until, claim.now + self.lease)

        def limit(value: int | None) -> int:
            return -1 if value is None else value

        keys = [
            self.key(scope, "in_flight"),
            self.key(scope, "requests"),
            self.key(scope, "tokens"),
            self.key(scope, f"spent:{period}"),
        ]
        args = [
            repr(claim.now),
            claim.id,
            repr(lease_until),
            claim.tokens,
            claim.nanos,
            1 if claim.counts else 0,
            limit(limits.max_parallel),
            limit(limits.rpm),
            limit(limits.tpm),
            limit(limits.budget_tokens),
            limit(limits.budget_nanos),
            -1 if ends is None else repr(ends),
            0 if ends is None else math.ceil(ends - claim.now + _SPEND_KEPT),
            WINDOW,
            repr(PARALLEL_WAIT),
            str(math.floor(claim.now)),
        ]
        try:
            self._redis()  # its socket_timeout bounds the wait
            name, value = await self._script(keys=keys, args=args)
        except Exception as error:
            self._warn("claim", error)
            if self.unavailable == "refuse":
                return Decision(granted=False, limit="unavailable", retry_after=1.0)
            return Decision(granted=True, second=math.floor(claim.now), period=period)
        name = name.decode() if isinstance(name, bytes) else str(name)
        value = value.decode() if isinstance(value, bytes) else str(value)
        if name:
            wait = float(value)
            return Decision(granted=False, limit=name, retry_after=None if wait < 0 else wait)
        if claim.counts:
            self._held[(scope, claim.id)] = claim.lease_until
            self._schedule_renewal()
        return Decision(granted=True, second=int(value), period=period)

    # Writes, in order, batched.

    def _adjust(self, change: tuple[str, int, str, int, int, bool]) -> None:
        self._send("adjust", change)

    def release(self, scope: str, id: str) -> None:
        self._send("release", (scope, id))

    def _queue(self, kind: str, args: tuple[Any, ...]) -> None:
        if kind == "release":
            self._held.pop(args, None)  # type: ignore[call-overload]
        super()._queue(kind, args)

    async def _write(self, writes: list[tuple[str, tuple[Any, ...]]]) -> None:
        async with self._redis().pipeline(transaction=False) as pipe:
            for kind, args in writes:
                if kind == "release":
                    scope, id = args
                    pipe.zrem(self.key(scope, "in_flight"), id)
                elif kind == "renew":
                    scope, leases = args
                    pipe.zadd(self.key(scope, "in_flight"), leases, xx=True)
                else:
                    scope, second, period, tokens, nanos, per_minute = args
                    if per_minute and tokens:
                        per_second = self.key(scope, "tokens")
                        pipe.hincrby(per_second, str(second), tokens)
                        pipe.expire(per_second, 2 * WINDOW)
                    spent = self.key(scope, f"spent:{period}")
                    pipe.hincrby(spent, "tokens", tokens)
                    pipe.hincrby(spent, "nanos", nanos)
                    if period != "total":  # made again by a late charge: it still lapses
                        pipe.expire(spent, _LATE_KEPT, nx=True)
            await pipe.execute()

    # Leases.

    def _schedule_renewal(self) -> None:
        if self._renewing is None:
            loop = asyncio.get_running_loop()
            self._renewing = loop.call_later(self.lease / 3, self._renew)

    def _renew(self) -> None:
        self._renewing = None
        if not self._held:
            return
        now = time.time()
        by_scope: dict[str, dict[str, float]] = {}
        for (scope, id), until in self._held.items():
            by_scope.setdefault(scope, {})[id] = min(until, now + self.lease)
        for scope, leases in by_scope.items():
            self._queue("renew", (scope, leases))
        self._schedule_renewal()

    # Reads.

    def counts(
        self, scope: str, limits: Limits, now: float
    ) -> concurrent.futures.Future[LimitCounts]:
        return self._io.submit(self._counts(scope, limits, now))

    async def _counts(self, scope: str, limits: Limits, now: float) -> LimitCounts:
        period, _ends = period_of(limits.window, now)
        second = math.floor(now)
        async with self._redis().pipeline(transaction=False) as pipe:
            pipe.zcount(self.key(scope, "in_flight"), now, "+inf")
            pipe.hgetall(self.key(scope, "requests"))
            pipe.hgetall(self.key(scope, "tokens"))
            pipe.hmget(self.key(scope, f"spent:{period}"), "tokens", "nanos")
            in_flight, requests, tokens, (spent_tokens, spent_nanos) = await pipe.execute()

        def within(buckets: dict[bytes, bytes]) -> int:
            return sum(int(v) for s, v in buckets.items() if int(s) > second - WINDOW)

        return LimitCounts(
            in_flight=int(in_flight),
            requests=within(requests),
            tokens=within(tokens),
            period=period,
            spent_tokens=int(spent_tokens or 0),
            spent_nanos=int(spent_nanos or 0),
        )

    def live_leases(self) -> Iterable[tuple[str, str]]:
        """The (scope, id) of this process's requests in flight, whose leases it renews."""
        return list(self._held)
