"""A limiter: requests, tokens, requests in flight and spend held to :class:`Limits`, in the
process or across processes on Redis.

``Limiter(Limits(rpm=60, tpm=100_000))`` (or ``Limiter(rpm=60, tpm=100_000)``) limits what
goes through it; give it to a model (``ChatModel(..., limiter=limiter)``: each request of
the model, a router's deployment's included) or use it directly, as the gateway does for
each key. Every request **reserves, then settles**:

1. Before it is sent, :meth:`Limiter.reserve` claims its place (one request in the
   minute, one in flight) and an estimate of its tokens and spend: its input tokens as
   :mod:`~solon_events.client.estimate` counts them, plus its maximum output tokens (the
   request's ``max_tokens`` or kin, else :attr:`Limits.output_allowance`), priced. The
   claim is granted against every limit at once, or refused with a
   :class:`~solon_events.client.limits.LimitExceededError` (HTTP 429, with the seconds
   until it could pass); with ``wait``, the limiter waits for capacity that long before it
   refuses.
2. As each attempt of the request ends (every retry, fallback and hedge loser included,
   cancelled or failed), :meth:`Reservation.charge` counts its exact usage (the
   provider's count, else the estimate marked on ``Usage.estimated``); what was reserved
   is spent first.
3. When the request ends, :meth:`Reservation.release` gives back what was reserved and
   not used, and its place in flight. An attempt that ends later (a hedge loser's usage)
   is still charged.

With Redis (``store="redis://..."``) every process sharing it counts against the same
limits, atomically (a Lua script): N processes never let through more than the limit.
A reservation whose process died is no longer in flight after the store's lease (60 s by
default); what it reserved stays counted (the most it could have used).

**Worst-case overrun.** A claim is granted only while everything counted so far (usage
settled, reservations outstanding) plus its estimate fits the limit, so the limit is
exceeded only by what the requests in flight use beyond what they reserved: at most the
sum, over the requests in flight when the limit was reached, of (usage - reservation).
A request that names its maximum output reserves it, and can exceed its reservation only
by the error of the input estimate; one that does not can exceed it by its output beyond
the allowance. With ``Limits(overrun="stop")`` a stream that reaches its reservation
reserves more in steps (:data:`EXTENSION`) and is stopped when the limit refuses, with
an ERROR event carrying a :class:`~solon_events.client.limits.LimitExceededError`: each
stream in flight then exceeds the limit by at most one step of what it had streamed
before it was stopped (the deltas already on their way).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import math
import os
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from ..event_model.messages import ChatRequest
from ..event_model.pricing import ModelPrice
from .estimate import request_tokens, token_counter
from .limit_store import (
    Claim,
    Decision,
    LimitCounts,
    LimitStore,
    MemoryLimitStore,
    RedisLimitStore,
)
from .limits import LimitExceededError, Limits

__all__ = [
    "EXTENSION",
    "MAX_OUTPUT_OPTIONS",
    "Limiter",
    "Reservation",
    "max_output_tokens",
]

EXTENSION = 256
"""The tokens a stream past its reservation reserves at a time (``overrun="stop"``)."""

MAX_OUTPUT_OPTIONS = (
    "max_tokens",
    "max_completion_tokens",
    "max_output_tokens",
    "maxOutputTokens",
    "num_predict",
    "maxTokens",
)
"""The request options that name the most output tokens a request may get, in any
dialect's words (Gemini's ``generationConfig``, Ollama's ``options`` and Bedrock's
``inferenceConfig`` are looked into)."""

_NESTED = ("generationConfig", "options", "inferenceConfig")

_POLL_FIRST = 0.02
_POLL_MOST = 0.5


def max_output_tokens(options: Mapping[str, Any]) -> int | None:
    """The most output tokens request ``options`` allow (None: they do not say)."""
    for name in MAX_OUTPUT_OPTIONS:
        value = options.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
    for outer in _NESTED:
        inner = options.get(outer)
        if isinstance(inner, Mapping):
            found = max_output_tokens(inner)
            if found is not None:
                return found
    return None


class Limiter:
    """Holds requests to ``limits`` (see :mod:`solon_events.client.limiter`).

    ``limits``: a :class:`~solon_events.client.limits.Limits`, or its fields as keywords
    (``Limiter(rpm=60)``). ``name``: the scope its counts are kept under (limiters of the
    same name and store share counts: the replicas of a gateway, the workers of a batch
    run) and how errors name it. ``store``: where the counts are kept: this process (None,
    or a :class:`~solon_events.client.limit_store.MemoryLimitStore` to share between
    limiters), Redis (a ``redis://`` URL, or a
    :class:`~solon_events.client.limit_store.RedisLimitStore`). ``wait``: the seconds a
    request may wait for capacity before it is refused (0, the default: refused at once;
    ``math.inf``: as long as it takes); a request that could not pass within ``wait``
    (a budget spent until the end of its window) is refused at once. ``prices``: the
    price of models by name (:class:`~solon_events.event_model.pricing.ModelPrice`), for the spend
    of those genai-prices does not price (or to price them your way). ``clock``: Unix
    time, in seconds.
    """

    def __init__(
        self,
        limits: Limits | None = None,
        *,
        name: str = "limiter",
        store: LimitStore | str | None = None,
        wait: float = 0.0,
        prices: Mapping[str, ModelPrice] | None = None,
        clock: Callable[[], float] = time.time,
        **fields: Any,
    ) -> None:
        if limits is None:
            limits = Limits(**fields)
        elif fields:
            raise TypeError("give the limits as Limits(...) or as keywords, not both")
        if not isinstance(limits, Limits):
            raise TypeError(f"limits must be a Limits, not {type(limits).__name__}")
        if not isinstance(wait, (int, float)) or isinstance(wait, bool) or not wait >= 0:
            raise ValueError(f"wait must be a number of seconds, 0 or more, not {wait!r}")
        if not name or not isinstance(name, str):
            raise ValueError("name must be a non-empty string")
        self._own_store = not isinstance(store, LimitStore)
        self.limits = limits
        self.name = name
        self.store: LimitStore = _store_of(store)
        self.wait = float(wait)
        self.prices: Mapping[str, ModelPrice] = dict(prices or {})
        """Model prices of the limiter's own, by model name."""
        self._clock = clock
        self._ids = itertools.count()
        self._process = f"{os.getpid()}-{id(self):x}"

    def __repr__(self) -> str:
        return f"Limiter({self.name!r}, {self.limits.describe()}, store={self.store!r})"

    def estimate(self, request: ChatRequest, output: int | None = None) -> tuple[int, int]:
        """What ``request`` reserves: its estimated input tokens and the output tokens
        it may get (``output``, else its options' maximum, else the allowance)."""
        if output is None:
            output = max_output_tokens(request.options)
        if output is None:
            output = self.limits.output_allowance
        if not self.limits.limits_tokens and self.limits.budget_usd is None:
            return 0, output  # nothing counts tokens: no need to count the input
        return request_tokens(request, token_counter(request.model)), output

    async def reserve(
        self, tokens: int = 0, nanos: int = 0, *, wait: float | None = None
    ) -> Reservation:
        """A reservation of one request's place and of ``tokens`` and ``nanos`` (spend,
        in billionths of a dollar), granted against every limit; waits for capacity up to
        ``wait`` seconds (None: the limiter's), else raises
        :class:`~solon_events.client.limits.LimitExceededError`."""
        waiting = self.wait if wait is None else wait
        deadline = time.monotonic() + waiting
        pause = _POLL_FIRST
        id = f"{self._process}-{next(self._ids)}"
        while True:
            now = self._clock()
            claim = Claim(
                scope=self.name, limits=self.limits, id=id, now=now, tokens=tokens, nanos=nanos
            )
            decision = await _decided(
                self.store,
                claim,
                lambda late: Reservation(
                    self, id, late.second, late.period, tokens, nanos
                ).release(),
            )
            if decision.granted:
                return Reservation(self, id, decision.second, decision.period, tokens, nanos)
            left = deadline - time.monotonic()
            retry_after = decision.retry_after
            limit = decision.limit or "unknown"
            if retry_after is None or left <= 0:
                raise LimitExceededError(self.name, limit, retry_after)
            if limit == "max_parallel":  # when one ends is not known: look again soon
                sleep = min(pause, left)
                pause = min(pause * 2, _POLL_MOST)
            elif retry_after > left:
                raise LimitExceededError(self.name, limit, retry_after)
            else:
                sleep = retry_after
            await asyncio.sleep(sleep)

    async def counts(self) -> LimitCounts:
        """The counts now (every process's, with Redis)."""
        return await self.store.acounts(self.name, self.limits, self._clock())

    def close(self) -> None:
        """Let go of the store the limiter made itself (a Redis connection)."""
        if self._own_store:
            self.store.close()


def _store_of(store: LimitStore | str | None) -> LimitStore:
    """The store a limiter is given: itself, a new one in the process (None), or in the
    Redis at a ``redis://`` URL."""
    if isinstance(store, LimitStore):
        return store
    if isinstance(store, str):
        return RedisLimitStore(store)
    if store is not None:
        raise TypeError(f"store is a LimitStore or a redis:// URL, not {type(store).__name__}")
    return MemoryLimitStore()


class Reservation:
    """One request's hold on a :class:`Limiter` (see the module's docs); safe from any
    thread. ``tokens`` and ``nanos``: what it reserved and has not used yet (spend in
    billionths of a dollar); ``reserved_tokens`` and ``reserved_nanos``: all it reserved,
    the extensions' included; ``charged_tokens`` and ``charged_nanos``: the usage of the
    attempts charged so far; ``released``: whether :meth:`release` was called."""

    def __init__(
        self, limiter: Limiter, id: str, second: int, period: str, tokens: int, nanos: int
    ) -> None:
        self.limiter = limiter
        self.id = id
        self.tokens, self.nanos = tokens, nanos
        self.reserved_tokens, self.reserved_nanos = tokens, nanos
        self.charged_tokens = self.charged_nanos = 0
        self.released = False
        self._where = (second, period)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        state = "released" if self.released else "held"
        return (
            f"Reservation({self.limiter.name!r}, {state}, reserved {self.reserved_tokens} "
            f"tokens, charged {self.charged_tokens})"
        )

    def charge(self, tokens: int, nanos: int = 0) -> None:
        """Count an attempt's usage: ``tokens`` and ``nanos`` (what was reserved is used
        first; the rest is added to the counts)."""
        tokens, nanos = max(0, tokens), max(0, nanos)
        with self._lock:
            from_tokens = min(tokens, self.tokens)
            from_nanos = min(nanos, self.nanos)
            self.tokens -= from_tokens
            self.nanos -= from_nanos
            self.charged_tokens += tokens
            self.charged_nanos += nanos
        self._adjust(tokens - from_tokens, nanos - from_nanos)

    async def extend(self, tokens: int, nanos: int = 0) -> bool:
        """Reserve ``tokens`` and ``nanos`` more for this request (a stream past its
        reservation), if every limit allows: whether they were granted."""
        limiter = self.limiter
        claim = Claim(
            scope=limiter.name,
            limits=limiter.limits,
            id=self.id,
            now=limiter._clock(),
            tokens=tokens,
            nanos=nanos,
            counts=False,
        )
        decision = await _decided(
            limiter.store,
            claim,
            lambda late: self._give_back(late, tokens, nanos),
        )
        if not decision.granted:
            return False
        with self._lock:
            if self.released:  # ended meanwhile: nothing is held for it any more
                give_back = True
            else:
                give_back = False
                self.tokens += tokens
                self.nanos += nanos
                self.reserved_tokens += tokens
                self.reserved_nanos += nanos
        if give_back:
            self._give_back(decision, tokens, nanos)
        return not give_back

    def _give_back(self, decision: Decision, tokens: int, nanos: int) -> None:
        """Take back an extension granted when nothing could hold it any more."""
        limiter = self.limiter
        limiter.store.adjust(
            limiter.name,
            decision.second,
            decision.period,
            -tokens,
            -nanos,
            per_minute=limiter.limits.tpm is not None,
        )

    def release(self) -> None:
        """The request has ended: give back what it reserved and did not use, and its
        place in flight (once; later attempts' charges still count)."""
        with self._lock:
            if self.released:
                return
            self.released = True
            tokens, nanos = self.tokens, self.nanos
            self.tokens = self.nanos = 0
        self._adjust(-tokens, -nanos)
        self.limiter.store.release(self.limiter.name, self.id)

    def _adjust(self, tokens: int, nanos: int) -> None:
        if tokens or nanos:
            limiter = self.limiter
            second, period = self._where
            limiter.store.adjust(
                limiter.name,
                second,
                period,
                tokens,
                nanos,
                per_minute=limiter.limits.tpm is not None,
            )


async def _decided(
    store: LimitStore, claim: Claim, granted_late: Callable[[Decision], None]
) -> Decision:
    """``store``'s decision on ``claim``; when the caller is cancelled while the store
    decides, a claim granted after all is handed to ``granted_late`` (to give it back), so
    that nothing stays counted for a request that is not made."""
    decided = store.claim(claim)
    if isinstance(decided, Decision):
        return decided
    try:
        return await asyncio.shield(asyncio.wrap_future(decided))
    except asyncio.CancelledError:

        def late(future: concurrent.futures.Future[Decision]) -> None:
            if not future.cancelled() and future.exception() is None:
                decision = future.result()
                if decision.granted:
                    granted_late(decision)

        decided.add_done_callback(late)
        raise


def nanos_of(amount: Any) -> int:
    """A dollar amount (a Decimal, a float) in billionths of a dollar (0 when unknown)."""
    if amount is None:
        return 0
    value = float(amount) * 1_000_000_000
    return round(value) if math.isfinite(value) and value > 0 else 0
