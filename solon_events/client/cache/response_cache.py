"""The response cache of a model: a store, a time to live, a replay pace, single flight;
and the way a prompt's response goes through it.

:meth:`ResponseCache.events` is a prompt's response through the cache on the caller's
loop (what ``astream()`` runs); :meth:`ResponseCache.observable` the same on a model's
I/O thread (what ``stream()`` and ``call()`` run). A hit replays the stored answer (see
:class:`~.answer.ServedAnswer`) as fast as it can, or at the pace it was recorded at; a
miss asks the model and stores the answer once it completed (:class:`~.answer.AnswerRecorder`
says what may be stored). With single flight, a miss joins the identical request in
flight, if any, in this process (a :class:`~.flights.Flight`) or, with a
:class:`~.flights.FlightBoard`, in another one.

A store that fails (Redis away, a full disk) never fails a response: the lookup is a miss
and the answer is not stored; the failure is logged (once a minute per store).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Literal, cast

import attrs
from reactivex import Observable, abc
from reactivex import create as rx_create
from reactivex.disposable import Disposable

from ...core.session import new_response_id
from ...event_model.errors import ChatError, StructuredOutputError
from ...event_model.events import ChatEvent
from ...event_model.filters import ChatEventFilter
from ...event_model.results import CachedAnswer, Cost, Usage, UsageOutcome, UsageReport
from ...support.safe_callbacks import run_safely
from .answer import AnswerRecorder, ServedAnswer, StoredAnswer
from .flights import Flight, FlightBoard, FlightGone, FlightLead
from .key import request_key
from .stores import CacheStore

if TYPE_CHECKING:
    from ...support.loop_thread import EventLoopThread
    from ..prompt import ChatPrompt

__all__ = ["CacheMode", "Pace", "ResponseCache"]

Pace = Literal["fast", "recorded"]
"""How a hit is replayed: ``"fast"`` (every event at once) or ``"recorded"`` (each event
after the time it took the first time: a typewriter demo)."""

CacheMode = bool | Literal["refresh"]
"""A prompt's use of its model's cache: True (read, and store a miss), False (neither),
``"refresh"`` (ask the model, and store its answer)."""

Run = Callable[["ChatPrompt"], AsyncIterator[ChatEvent]]
"""A prompt's response without the cache, on the running loop."""

_log = logging.getLogger(__name__)
_RECORDED = ChatEventFilter.DEFAULT
_ZERO = Usage()


class ResponseCache:
    """A model's response cache (``ChatModel(cache=...)``, ``Router(cache=...)``).

    ``store``: where answers are kept (:class:`~.stores.MemoryCache`,
    :class:`~.stores.SQLiteCache`, :class:`~.redis_store.RedisCache`, or any
    :class:`~.stores.CacheStore`). ``ttl``: seconds an answer is kept (None: until the
    store's caps push it out). ``pace``: how a hit is replayed (:data:`Pace`).
    ``single_flight``: True to share one upstream response between identical requests in
    flight in this process, or a :class:`~.flights.FlightBoard` to share them between
    processes too (off by default in the library: two identical requests may be meant to
    get two samples). ``hits``, ``misses`` and ``stored`` count what happened.
    """

    def __init__(
        self,
        store: CacheStore,
        *,
        ttl: float | None = None,
        pace: Pace = "fast",
        single_flight: bool | FlightBoard = False,
    ) -> None:
        if not isinstance(store, CacheStore):
            raise TypeError(f"store must be a CacheStore, not {type(store).__name__}")
        if ttl is not None and (isinstance(ttl, bool) or not ttl > 0):
            raise ValueError(f"ttl must be a number of seconds above 0 or None, not {ttl!r}")
        if pace not in ("fast", "recorded"):
            raise ValueError(f"pace must be 'fast' or 'recorded', not {pace!r}")
        self.store = store
        self.ttl = ttl
        self.pace: Pace = pace
        self.board: FlightBoard | None = None
        if isinstance(single_flight, FlightBoard):
            self.board = single_flight
        elif not isinstance(single_flight, bool):
            raise TypeError("single_flight is True, False or a FlightBoard")
        self.single_flight = bool(single_flight)
        self.hits = 0
        self.misses = 0
        self.stored = 0
        self._flights: dict[str, Flight] = {}
        self._lock = threading.Lock()
        self._logged: dict[str, float] = {}

    def __repr__(self) -> str:
        return (
            f"ResponseCache({self.store!r}, ttl={self.ttl!r}, pace={self.pace!r}, "
            f"single_flight={self.single_flight!r})"
        )

    def key(self, prompt: ChatPrompt) -> str | None:
        """The key ``prompt``'s answer is kept under, or None when it is not cached (its
        mode is False, or it cannot be: see :mod:`~.key`)."""
        if prompt._cache is False:
            return None
        return request_key(prompt)

    def close(self) -> None:
        """Close the store."""
        self.store.close()

    # --- a prompt's response through the cache

    async def events(self, prompt: ChatPrompt, key: str, run: Run) -> AsyncIterator[ChatEvent]:
        """``prompt``'s response (under ``key``) through the cache, on the running loop:
        ``run`` asks the model."""
        deliver = _delivery(prompt._event_filter)
        read = prompt._cache is True
        if read:
            served = await self._hit(prompt, key)
            if served is not None:
                async with _closing(self._replay(prompt, served, deliver)) as hit:
                    async for event in hit:
                        yield event
                return
        if read and self.single_flight:
            async with _closing(self._shared(prompt, key, run, deliver)) as shared:
                async for event in shared:
                    yield event
            return
        self.misses += 1
        recorder = AnswerRecorder()
        async with _closing(run(_recording(prompt))) as asked:
            async for event in asked:
                recorder.add(event)
                if deliver(event):
                    yield event
        if recorder.refusal() is None:
            await self._store(key, recorder.answer())

    def observable(
        self, prompt: ChatPrompt, key: str, run: Run, io: EventLoopThread
    ) -> Observable[ChatEvent]:
        """:meth:`events` as a cold Observable delivered on ``io``'s loop (a model's I/O
        thread); disposal stops it (and the request). Closing the model ends a response
        in flight with a ChatError."""

        def subscribe(
            observer: abc.ObserverBase[ChatEvent], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            disposed = threading.Event()

            async def pump() -> None:
                try:
                    async with _closing(self.events(prompt, key, run)) as events:
                        async for event in events:
                            observer.on_next(event)
                except asyncio.CancelledError:
                    if not disposed.is_set():  # the model is closing
                        observer.on_error(ChatError("this ChatModel is closed"))
                    raise
                observer.on_completed()

            future = run_safely(io.loop, observer, pump, where="the response cache")

            def dispose() -> None:
                disposed.set()
                future.cancel()

            return Disposable(dispose)

        return rx_create(subscribe)

    # --- hits

    async def _lookup(self, key: str) -> StoredAnswer | None:
        try:
            return await self.store.get(key)
        except Exception as error:
            self._failed("reading", error)
            return None

    async def _hit(self, prompt: ChatPrompt, key: str) -> list[tuple[float, ChatEvent]] | None:
        """The stored answer of ``key`` as ``prompt``'s client gets it (each event with
        its time), or None (a miss)."""
        answer = await self._lookup(key)
        if answer is None:
            return None
        served = ServedAnswer(
            prompt._response_id or new_response_id(),
            key=key,
            created=answer.created,
            settle=prompt._output,
        )
        try:
            timed = [
                (t, out) for t, e in zip(answer.times, answer.events) for out in served.convert(e)
            ]
        except StructuredOutputError:  # a stored answer that no longer fits: ask again
            return None
        self.hits += 1
        return timed

    async def _replay(
        self,
        prompt: ChatPrompt,
        served: list[tuple[float, ChatEvent]],
        deliver: Callable[[ChatEvent], bool],
    ) -> AsyncIterator[ChatEvent]:
        paced = (prompt._cache_pace or self.pace) == "recorded"
        loop = asyncio.get_running_loop()
        start = loop.time()
        outcome: UsageOutcome = "cancelled"
        try:
            for t, event in served:
                if paced:
                    delay = start + t - loop.time()
                    if delay > 0:
                        await asyncio.sleep(delay)
                if deliver(event):
                    yield event
            outcome = "completed"
        finally:
            response = served[-1][1].response
            cached = response.cached if response is not None else None
            _report(prompt, served[0][1].response_id or "", outcome, cached)

    # --- misses

    async def _store(self, key: str, answer: StoredAnswer) -> None:
        try:
            if await self.store.put(key, answer, self.ttl):
                self.stored += 1
        except Exception as error:
            self._failed("writing", error)

    def _failed(self, doing: str, error: Exception) -> None:
        """Log a store's failure (once a minute for each kind)."""
        now = time.monotonic()
        if now - self._logged.get(doing, -120.0) >= 60.0:
            self._logged[doing] = now
            _log.warning(
                "the response cache failed %s %r: %s: %s (a miss, not stored)",
                doing,
                self.store,
                type(error).__name__,
                error,
            )

    # --- single flight

    async def _shared(
        self, prompt: ChatPrompt, key: str, run: Run, deliver: Callable[[ChatEvent], bool]
    ) -> AsyncIterator[ChatEvent]:
        flight, owner = await self._flight(prompt, key, run)
        served = None
        if not owner:
            served = ServedAnswer(
                prompt._response_id or new_response_id(),
                key=key,
                created=flight.created,
                shared=True,
                settle=prompt._output,
            )
        outcome: UsageOutcome = "cancelled"
        cached: CachedAnswer | None = None
        try:
            async with _closing(flight.follow()) as events:
                async for event in events:
                    for out in (event,) if served is None else served.convert(event):
                        if out.response is not None and out.response.cached is not None:
                            cached = out.response.cached
                        if deliver(out):
                            yield out
            outcome = "completed"
        except Exception:
            outcome = "failed"
            raise
        finally:
            if served is not None:
                cached = cached or CachedAnswer(key=key, created=flight.created, shared=True)
                _report(prompt, served.response_id, outcome, cached)

    async def _flight(self, prompt: ChatPrompt, key: str, run: Run) -> tuple[Flight, bool]:
        """The flight of ``key`` joined (started when there is none: then its upstream
        runs here for ``prompt`` unless another process leads it), and whether
        ``prompt`` owns it (its upstream runs for ``prompt``)."""
        with self._lock:
            flight = self._flights.get(key)
            started = flight is None
            if flight is None:
                flight = self._flights[key] = Flight(key)
            flight.join()
        if not started:
            self.hits += 1
            return flight, False
        lead: FlightLead | None = None
        if self.board is not None:
            try:
                lead = await self.board.claim(key)
                flight.owned = lead is not None
            except Exception as error:  # the board is away: lead here alone
                self._failed("claiming a flight on", error)
        if flight.owned:
            self.misses += 1
            work = self._lead(flight, prompt, key, run, lead)
        else:
            self.hits += 1
            work = self._relay(flight, key)
        task = asyncio.get_running_loop().create_task(work)
        loop = asyncio.get_running_loop()
        flight.on_stop(lambda: _cancel_soon(loop, task))
        return flight, flight.owned

    def _forget(self, key: str, flight: Flight) -> None:
        with self._lock:
            if self._flights.get(key) is flight:
                del self._flights[key]

    async def _lead(
        self, flight: Flight, prompt: ChatPrompt, key: str, run: Run, lead: FlightLead | None
    ) -> None:
        """Run the upstream of ``flight`` for ``prompt``, publishing every event (to the
        board's other processes too); store the answer once it completed."""
        recorder = AnswerRecorder()
        try:
            async with _closing(run(_recording(prompt))) as asked:
                async for event in asked:
                    recorder.add(event)
                    flight.push(event)
                    if lead is not None:
                        lead.put(event)
        except asyncio.CancelledError:
            self._forget(key, flight)
            flight.end(ChatError("stopped: every request sharing it left"))
            if lead is not None:
                asyncio.get_running_loop().create_task(_ended(lead, None, stopped=True))
            raise
        except Exception as error:
            self._forget(key, flight)
            flight.end(error)
            if lead is not None:
                await _ended(lead, error)
            return
        flight.end()  # this process's clients have the whole answer
        if recorder.refusal() is None:
            await self._store(key, recorder.answer())
        if lead is not None:  # then the others'; a request that comes after hits
            await _ended(lead, None)
        self._forget(key, flight)

    async def _relay(self, flight: Flight, key: str) -> None:
        """Pass on the events of the flight another process leads (or, should it be over
        and gone already, its stored answer)."""
        assert self.board is not None
        try:
            try:
                async with _closing(self.board.follow(key)) as events:
                    async for event in events:
                        flight.push(event)
            except FlightGone:
                answer = await self._lookup(key)
                if answer is None:
                    raise ChatError(
                        "the identical request this one shared ended elsewhere without an "
                        "answer to share; ask again"
                    ) from None
                for event in answer.events:
                    flight.push(event)
        except asyncio.CancelledError:
            flight.end(ChatError("stopped: every request sharing it left"))
            raise
        except Exception as error:
            flight.end(error)
        else:
            flight.end()
        finally:
            self._forget(key, flight)


def _closing(events: AsyncIterator[ChatEvent]) -> contextlib.aclosing[Any]:
    """``aclosing()`` of an async generator of events (typed as its iterator)."""
    return contextlib.aclosing(cast(AsyncGenerator[ChatEvent, None], events))


async def _ended(lead: FlightLead, error: BaseException | None, *, stopped: bool = False) -> None:
    try:
        await lead.end(error, stopped=stopped)
    except Exception as failure:
        _log.warning("the shared flight's end could not be published: %s", failure)


def _cancel_soon(loop: asyncio.AbstractEventLoop, task: asyncio.Task[None]) -> None:
    with contextlib.suppress(RuntimeError):  # its loop is closed: it is over
        loop.call_soon_threadsafe(task.cancel)


def _recording(prompt: ChatPrompt) -> ChatPrompt:
    """``prompt`` delivering what an answer keeps as well as what its filter passes."""
    user = prompt._event_filter
    if user is None:
        return prompt
    types = getattr(user, "types", None)
    recorded = _RECORDED.or_(user) if isinstance(types, frozenset) else ChatEventFilter.all()
    return attrs.evolve(prompt, event_filter=recorded)


def _delivery(event_filter: Callable[[ChatEvent], bool] | None) -> Callable[[ChatEvent], bool]:
    """What ``event_filter`` delivers, lifecycle and step events always (as a model's
    response delivers them)."""
    guarded = ChatEventFilter.guarded(event_filter or ChatEventFilter.DEFAULT)
    types = guarded.types
    if types is not None:
        return lambda event: event.type in types
    return cast(Callable[[ChatEvent], bool], guarded.test)


def _report(
    prompt: ChatPrompt, response_id: str, outcome: UsageOutcome, cached: CachedAnswer | None
) -> None:
    """Tell ``prompt``'s usage hooks of a response no provider was asked for: billed
    zero, ``cached`` keeping what the original used."""
    model = prompt._model
    hooks: list[Callable[[UsageReport], Any]] = []
    on_usage = getattr(model, "on_usage", None)  # a ChatModel's (a group has none)
    if on_usage is not None:
        hooks.append(on_usage)
    hooks.extend(prompt._on_usage)
    if not hooks:
        return
    report = UsageReport(
        response_id=response_id,
        model=model.model,
        outcome=outcome,
        usage=_ZERO,
        cost=Cost(total=Decimal(0)) if getattr(model, "pricing", False) else None,
        cached=cached,
    )
    for hook in hooks:
        try:
            hook(report)
        except Exception:
            _log.exception("an on_usage hook raised")
