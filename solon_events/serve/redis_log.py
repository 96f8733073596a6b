"""Response streams kept in Redis Streams, to be read again from any process.

Needs the ``redis`` extra (``pip install 'solon-events[redis]'``). A :class:`RedisStreamLog`
keeps each response as one Redis stream of entries (``XADD`` with a bounded ``MAXLEN``,
an expiry once the response ended); each entry holds one payload and its sequence number,
and a last entry marks the end and how it ended. A reader gets every entry after a given
id and then the live tail, in order; it detects what it cannot deliver (entries trimmed
away, a writer that went away without ending the stream, Redis failing) and raises
:class:`StreamLogError` rather than wait forever or skip silently.

The library side: :func:`tee_to_redis` is a pipeable operator that writes every ChatEvent
of a stream to a log as it passes; :func:`read_from_redis` reads one back as an
``Observable[ChatEvent]``, events equal to the originals (see
:mod:`solon_events.adapters.native`) and ending the same way. The gateway
(:mod:`solon_events.serve`) stores its encoded protocol events in the same log.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Literal, TypeVar

import attrs
from reactivex import Observable, abc
from reactivex import create as rx_create
from reactivex.disposable import Disposable

from ..adapters.native import decode_event, encode_event
from ..event_model.errors import ChatError
from ..event_model.events import ChatEvent
from ..event_model.extras import MissingExtraError
from ..support.loop_clients import LoopClients
from ..support.loop_thread import EventLoopThread
from ..support.redaction import redact_url
from ..support.safe_callbacks import run_safely, safe_action, safe_callbacks

try:
    from redis.asyncio import Redis
    from redis.asyncio.retry import Retry
    from redis.backoff import ExponentialBackoff
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import RedisError, ResponseError
    from redis.exceptions import TimeoutError as RedisTimeoutError
except ModuleNotFoundError as exc:  # tests/test_extras.py runs it without the extra
    raise MissingExtraError("resumable streams (Redis)", "redis", "redis") from exc

__all__ = [
    "Entry",
    "Outcome",
    "RedisStreamLog",
    "StreamLogError",
    "read_from_redis",
    "tee_to_redis",
]

Outcome = Literal["completed", "failed", "stopped"]
"""How a stream ended: normally, with a failure, or stopped on request."""

_BLOCK_MS = 1000
_T = TypeVar("_T")


class StreamLogError(ChatError):
    """A stream could not be written or read as a whole: unknown, trimmed, abandoned by its
    writer, or Redis failed (the message says which)."""


@attrs.frozen
class Entry:
    """One entry of a stream: its Redis id, its payload, and (last entry) how it ended."""

    id: str
    data: bytes
    outcome: Outcome | None = None


class RedisStreamLog:
    """Streams of payloads in Redis, one stream per key, shared by every process.

    ``url``: ``redis://HOST:PORT/DB``. ``maxlen`` bounds each stream (entries; older ones
    are trimmed, which a reader then reports); ``ttl``: seconds a stream is kept after it
    ends; ``lease``: seconds without a sign of life after which a stream that has not
    ended counts as abandoned. A reader waiting for a live stream's next entry holds one
    Redis connection (``max_connections`` per process and loop). Stop requests travel on
    pub/sub channels.

    ``reconnect_for`` (5 s, at most half the lease): seconds Redis may be unreachable (a
    restart) while a stream is written or read: its writes, renewals and reads are tried
    again meanwhile, and a reader skips an entry written twice by a write tried again;
    past that time they fail with :class:`StreamLogError`. A stream's first entry is not
    waited for: a response that cannot start is refused at once (its client may ask again
    elsewhere). With a Redis that keeps its writes (``appendfsync always``), a restart
    within ``reconnect_for`` loses no stream.

    Usable from any event loop (one client per loop) and, through :meth:`run`, from
    threads without one (a private loop thread).
    """

    def __init__(
        self,
        url: str = "redis://127.0.0.1:6379/0",
        *,
        prefix: str = "solon-events",
        maxlen: int = 100_000,
        ttl: float = 3600.0,
        lease: float = 10.0,
        max_connections: int = 2000,
        reconnect_for: float | None = None,
    ) -> None:
        if maxlen < 1 or ttl <= 0 or lease <= 0 or max_connections < 2:
            raise ValueError("maxlen, ttl, lease and max_connections must be positive")
        if reconnect_for is None:
            reconnect_for = min(5.0, lease / 2)
        if not 0 <= reconnect_for < lease:
            raise ValueError("reconnect_for must be 0 or more, and less than the lease")
        self.url = url
        self.prefix = prefix
        self.maxlen = maxlen
        self.ttl = ttl
        self.lease = lease
        self.max_connections = max_connections
        self.reconnect_for = reconnect_for
        self._clients = LoopClients(self._connect)
        self._io: EventLoopThread | None = None
        self._writers: set[StreamWriter] = set()
        self._tee_failures: list[BaseException] = []

    def __repr__(self) -> str:
        return f"RedisStreamLog({redact_url(self.url)!r}, prefix={self.prefix!r})"

    def key(self, kind: str, response_id: str) -> str:
        """The stream key of ``response_id``'s stream of ``kind`` (a protocol name)."""
        return f"{self.prefix}:{kind}:{response_id}"

    def _stop_channel(self, response_id: str) -> str:
        return f"{self.prefix}:stop:{response_id}"

    def client(self) -> Redis:
        """The Redis client of the running event loop (made on first use)."""
        return self._clients.get()

    def _connect(self) -> Redis:
        return Redis.from_url(
            self.url,
            socket_connect_timeout=2,
            socket_timeout=_BLOCK_MS / 1000 + 4,
            retry=Retry(ExponentialBackoff(cap=0.5, base=0.05), 2),
            max_connections=self.max_connections,
        )

    def _failed(self, doing: str, exc: BaseException) -> StreamLogError:
        return StreamLogError(f"Redis at {redact_url(self.url)} failed {doing}: {exc}")

    async def _again(
        self, doing: str, call: Callable[[], Awaitable[_T]], *, patient: bool = True
    ) -> _T:
        """``call()``; while Redis cannot be reached, tried again for ``reconnect_for``
        seconds (not ``patient``: not at all) before a :class:`StreamLogError` says so."""
        deadline: float | None = None
        pause = 0.05
        while True:
            try:
                return await call()
            except (RedisConnectionError, RedisTimeoutError) as exc:
                now = time.monotonic()
                if deadline is None:
                    deadline = now + (self.reconnect_for if patient else 0.0)
                if now >= deadline:
                    raise self._failed(doing, exc) from None
                await asyncio.sleep(min(pause, deadline - now))
                pause = min(2 * pause, 0.5)
            except RedisError as exc:
                raise self._failed(doing, exc) from None

    # Writing.

    async def append(self, key: str, data: bytes, seq: int) -> str:
        """Add entry number ``seq`` (from 0) holding ``data``; its id. Redis out of reach
        is waited for (``reconnect_for``) once the stream has its first entry."""

        async def add() -> Any:
            return await self.client().xadd(
                key, {"d": data, "n": seq}, maxlen=self.maxlen, approximate=True
            )

        entry_id = await self._again(f"writing to {key}", add, patient=seq > 0)
        return _text(entry_id)

    async def keep_alive(self, key: str, *, patient: bool = True) -> None:
        """Renew ``key``'s lease (its writer is alive) and its expiry."""

        async def renew() -> None:
            async with self.client().pipeline(transaction=False) as pipe:
                pipe.set(key + ":live", b"1", px=int(self.lease * 1000))
                pipe.expire(key, int(self.ttl + self.lease))
                await pipe.execute()

        await self._again(f"renewing {key}", renew, patient=patient)

    async def finish(self, key: str, seq: int, outcome: Outcome) -> str:
        """End ``key`` with entry ``seq`` marking its ``outcome``; it expires after ``ttl``."""

        async def end() -> Any:
            async with self.client().pipeline(transaction=False) as pipe:
                pipe.xadd(key, {"n": seq, "e": outcome}, maxlen=self.maxlen, approximate=True)
                pipe.expire(key, int(self.ttl))
                pipe.delete(key + ":live")
                return (await pipe.execute())[0]

        return _text(await self._again(f"ending {key}", end, patient=seq > 0))

    async def put_value(self, key: str, data: bytes, ttl: float) -> None:
        """Keep ``data`` under ``key`` (a plain value, not a stream) for ``ttl`` seconds."""
        try:
            await self.client().set(key, data, px=max(1, int(ttl * 1000)))
        except RedisError as exc:
            raise self._failed(f"writing {key}", exc) from None

    async def get_value(self, key: str) -> bytes | None:
        """The value kept under ``key``, left as it is; None when there is none."""
        try:
            value = await self.client().get(key)
        except RedisError as exc:
            raise self._failed(f"reading {key}", exc) from None
        return None if value is None else value if isinstance(value, bytes) else value.encode()

    async def claim_value(self, key: str, ttl: float) -> bool:
        """Set ``key`` for ``ttl`` seconds unless it is set (``SET NX``): True for the one
        caller, on any replica, that set it."""
        try:
            return bool(await self.client().set(key, b"1", px=max(1, int(ttl * 1000)), nx=True))
        except RedisError as exc:
            raise self._failed(f"claiming {key}", exc) from None

    async def take_value(self, key: str) -> bytes | None:
        """The value kept under ``key``, removed in the same step (``GETDEL``: one caller
        gets it); None when there is none."""
        try:
            value = await self.client().getdel(key)
        except RedisError as exc:
            raise self._failed(f"taking {key}", exc) from None
        return None if value is None else value if isinstance(value, bytes) else value.encode()

    # Reading.

    async def exists(self, key: str) -> bool:
        """Whether ``key`` holds a stream."""
        try:
            return bool(await self.client().exists(key))
        except RedisError as exc:
            raise self._failed(f"looking up {key}", exc) from None

    async def ended(self, key: str) -> bool:
        """Whether ``key``'s stream has its end entry."""
        client: Any = self.client()  # redis-py's reply types are too loose to index
        try:
            last = await client.xrevrange(key, count=1)
        except RedisError as exc:
            raise self._failed(f"reading {key}", exc) from None
        return bool(last) and b"e" in last[0][1]

    async def read(self, key: str, after: str | None = None) -> AsyncIterator[Entry]:
        """Every entry of ``key`` after id ``after`` (from the first when None), then the
        live tail, up to and including the end entry. Raises :class:`StreamLogError` for
        an unknown stream or id, a gap, an abandoned stream or a Redis failure (Redis out
        of reach longer than ``reconnect_for``)."""
        client: Any = self.client()
        doing = f"reading {key}"
        expected = await self._again(doing, lambda: self._first_expected(client, key, after))
        last = after or "0-0"
        quiet_since = time.monotonic()
        while True:
            found = await self._again(
                doing, functools.partial(client.xread, {key: last}, count=512, block=_BLOCK_MS)
            )
            if not found:
                if time.monotonic() - quiet_since >= _BLOCK_MS / 1000 and not (
                    await self._again(doing, lambda: client.exists(key + ":live"))
                ):
                    if await self._again(doing, functools.partial(self._unread, client, key, last)):
                        continue
                    raise StreamLogError(
                        f"the stream {key} stopped without an end: its writer went away"
                    )
                continue
            quiet_since = time.monotonic()
            for raw_id, fields in found[0][1]:
                entry_id = _text(raw_id)
                seq = int(fields[b"n"])
                if seq < expected:  # written twice: a write tried again after Redis came back
                    continue
                if seq != expected:
                    raise StreamLogError(
                        f"the stream {key} no longer holds entries {expected} to {seq - 1} "
                        f"(trimmed by maxlen={self.maxlen})"
                    )
                expected, last = seq + 1, entry_id
                outcome = fields.get(b"e")
                if outcome is not None:
                    yield Entry(entry_id, b"", _text(outcome))  # type: ignore[arg-type]
                    return
                yield Entry(entry_id, fields[b"d"])

    async def _first_expected(self, client: Any, key: str, after: str | None) -> int:
        if not await client.exists(key):
            raise StreamLogError(f"no stream {key}: unknown, or expired after it ended")
        if after is None:
            return 0
        try:
            found = await client.xrange(key, min=after, max=after, count=1)
        except ResponseError:  # not an entry id; Redis out of reach is tried again (_again)
            found = None
        if not found:
            raise StreamLogError(f"the stream {key} holds no entry {after!r} to resume after")
        return int(found[0][1][b"n"]) + 1

    async def _unread(self, client: Any, key: str, last: str) -> bool:
        return bool(await client.xrange(key, min="(" + last, count=1))

    # Stopping.

    async def request_stop(self, response_id: str) -> int:
        """Ask whichever process runs ``response_id`` to stop it; how many listened."""
        try:
            return int(await self.client().publish(self._stop_channel(response_id), b"stop"))
        except RedisError as exc:
            raise self._failed("publishing a stop request", exc) from None

    async def stop_requests(self, ready: Callable[[], None] | None = None) -> AsyncIterator[str]:
        """The response ids every :meth:`request_stop` names, as they are published.

        ``ready`` is called once the subscription is in place."""
        pubsub = self.client().pubsub()
        try:
            await pubsub.psubscribe(self._stop_channel("*"))
            if ready is not None:
                ready()
            offset = len(self._stop_channel(""))
            while True:
                message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=5.0)
                if message is not None and message.get("type") == "pmessage":
                    yield _text(message["channel"])[offset:]
        except RedisError as exc:
            raise self._failed("listening for stop requests", exc) from None
        finally:
            with contextlib.suppress(Exception):
                await pubsub.aclose()

    # Closing, and use from threads.

    async def drain(self) -> None:
        """Wait until every stream this log writes on the running loop has ended."""
        loop = asyncio.get_running_loop()
        mine = [w for w in self._writers if w.loop is loop]
        await asyncio.gather(*(w.done() for w in mine), return_exceptions=True)

    def flush(self) -> None:
        """Wait until every stream the operators write (:func:`tee_to_redis`) has ended;
        raises :class:`StreamLogError` when one of their writes failed since the last
        flush (each failure is raised once)."""
        self.io.run(self.drain())
        failures, self._tee_failures = self._tee_failures, []
        if failures:
            more = f" (and {len(failures) - 1} more streams failed)" if len(failures) > 1 else ""
            raise StreamLogError(f"{failures[0]}{more}")

    async def aclose(self) -> None:
        """Close the running loop's client."""
        await self._clients.aclose()

    @property
    def io(self) -> EventLoopThread:
        """The private loop thread for use without an event loop (started on first use)."""
        if self._io is None:
            self._io = EventLoopThread(name="solon-events-redis")
        return self._io

    def close(self) -> None:
        """Close the private loop thread's client and stop the thread (idempotent)."""
        if self._io is None:
            return
        with contextlib.suppress(Exception):
            self._io.run(self.aclose())
        self._io.close()
        self._io = None

    def __enter__(self) -> RedisStreamLog:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


# The library side: ChatEvents to a log and back.


class StreamWriter:
    """Writes one stream of ``log`` in order, from any thread, on the loop it was made on.

    :meth:`put` queues a payload; :meth:`end` queues the end entry. The writer renews the
    stream's lease while it waits, so a silent stream does not look abandoned. ``written``
    is set once the first entry (or a failure) happened; ``failure`` holds the
    :class:`StreamLogError` that stopped it, and ``on_failure`` is called with it.
    """

    def __init__(
        self,
        log: RedisStreamLog,
        key: str,
        on_failure: Callable[[BaseException], None] | None = None,
    ) -> None:
        self.log = log
        self.key = key
        self.failure: BaseException | None = None
        self.written = asyncio.Event()
        self._on_failure = on_failure
        self._queue: asyncio.Queue[tuple[bytes, Outcome | None]] = asyncio.Queue()
        self._ended = False
        self.loop = asyncio.get_running_loop()
        self._task = asyncio.ensure_future(self._run())
        log._writers.add(self)
        self._task.add_done_callback(lambda _: log._writers.discard(self))

    def put(self, data: bytes) -> None:
        """Queue one payload (ignored once the end is queued)."""
        if not self._ended:
            self._queue.put_nowait((data, None))

    def end(self, outcome: Outcome) -> None:
        """Queue the end entry (once)."""
        if not self._ended:
            self._ended = True
            self._queue.put_nowait((b"", outcome))

    async def done(self) -> None:
        """Wait until the end entry is written (or writing failed)."""
        await asyncio.shield(self._task)

    async def _run(self) -> None:
        seq = 0
        try:
            await self.log.keep_alive(self.key, patient=False)
            while True:
                try:
                    data, outcome = await asyncio.wait_for(self._queue.get(), self.log.lease / 3)
                except asyncio.TimeoutError:
                    await self.log.keep_alive(self.key, patient=seq > 0)
                    continue
                if outcome is not None:
                    await self.log.finish(self.key, seq, outcome)
                    return
                await self.log.append(self.key, data, seq)
                seq += 1
                self.written.set()
        except StreamLogError as exc:
            self.failure = exc
            if self._on_failure is not None:
                self._on_failure(exc)
        finally:
            self.written.set()


_TEE = "the tee_to_redis() operator"


def tee_to_redis(
    log: RedisStreamLog, response_id: str | None = None
) -> Callable[[Observable[ChatEvent]], Observable[ChatEvent]]:
    """A pipeable operator writing every ChatEvent (``raw`` included) to ``log`` as it
    passes, under :meth:`RedisStreamLog.key` ``("events", response_id)`` (by default the
    response id of the first event), and then how the stream ended (disposal ends it as
    stopped). Events pass on unchanged and undelayed; the writes happen in order on the
    log's own loop thread. The stream ends once its end is written (its completion or
    error then comes from that thread). A write that failed fails the stream with
    :class:`StreamLogError`: at its next event, or instead of its completion when no event
    followed; :meth:`RedisStreamLog.flush` raises it too. A failure of the operator's own,
    on either thread, fails the stream with a ChatError naming it.
    """

    def operator(source: Observable[ChatEvent]) -> Observable[ChatEvent]:
        def subscribe(
            observer: abc.ObserverBase[ChatEvent], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            loop = log.io.loop
            writers: list[StreamWriter] = []
            broken: list[Exception] = []  # the tee's own failure on the log's loop
            ending: list[concurrent.futures.Future[None]] = []

            def write(data: bytes, outcome: Outcome | None, rid: str | None) -> None:
                if not writers:
                    key = log.key("events", response_id or rid or "")
                    writers.append(StreamWriter(log, key, on_failure=log._tee_failures.append))
                if outcome is None:
                    writers[0].put(data)
                else:
                    writers[0].end(outcome)

            safe_write = safe_action(observer, write, where=_TEE, fail=broken.append)

            def on_next(event: ChatEvent) -> None:
                failure = broken[0] if broken else writers[0].failure if writers else None
                if failure is not None:
                    observer.on_error(failure)  # type: ignore[arg-type]
                    return
                data = encode_event(event, with_raw=True)
                loop.call_soon_threadsafe(safe_write, data, None, event.response_id)
                observer.on_next(event)

            async def end(outcome: Outcome, error: Exception | None) -> None:
                write(b"", outcome, None)
                writer = writers[0]
                await writer.done()
                failure = error or writer.failure or (broken[0] if broken else None)
                if failure is not None:
                    observer.on_error(failure)  # type: ignore[arg-type]
                else:
                    observer.on_completed()

            def on_error(error: Exception) -> None:
                ending.append(run_safely(loop, observer, end, "failed", error, where=_TEE))

            def on_completed() -> None:
                ending.append(run_safely(loop, observer, end, "completed", None, where=_TEE))

            callbacks = safe_callbacks(observer, on_next, on_error, on_completed, where=_TEE)
            subscription = source.subscribe(*callbacks, scheduler=scheduler)

            def dispose() -> None:
                subscription.dispose()
                loop.call_soon_threadsafe(safe_write, b"", "stopped", None)

            return Disposable(dispose)

        return rx_create(subscribe)

    return operator


def read_from_redis(
    log: RedisStreamLog, response_id: str, after: str | None = None
) -> Observable[ChatEvent]:
    """The ChatEvents :func:`tee_to_redis` wrote for ``response_id`` (after entry id
    ``after``, or all), then the live tail; completes, or fails with the stream's ERROR
    event's error, as the original did. Delivered on the log's loop thread; disposal
    stops reading. A stream that cannot be read whole fails with :class:`StreamLogError`;
    an entry that is no ChatEvent, with a :class:`~solon_events.ChatError` naming the
    stream.
    """

    def subscribe(
        observer: abc.ObserverBase[ChatEvent], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        async def run() -> None:
            error: BaseException | None = None
            try:
                async for entry in log.read(log.key("events", response_id), after):
                    if entry.outcome is None:
                        event = decode_event(entry.data)
                        if event.error is not None:
                            error = event.error
                        observer.on_next(event)
                    elif entry.outcome == "failed":
                        observer.on_error(error or ChatError("the stream failed"))  # type: ignore[arg-type]
                        return
                    else:
                        observer.on_completed()
                        return
            except StreamLogError as exc:
                observer.on_error(exc)

        where = f"reading {log.key('events', response_id)} from Redis"
        future = run_safely(log.io.loop, observer, run, where=where)

        def dispose() -> None:
            future.cancel()

        return Disposable(dispose)

    return rx_create(subscribe)
