"""The gateway's connections: how many it holds, and how long a request's head may take.

aiohttp reads a request's head for as long as its client takes, and accepts connections
until the process runs out of file descriptors (then asyncio logs a traceback for every
failed ``accept()``). :class:`ConnectionGuard` sits between the listening socket and
aiohttp's protocol (:meth:`ConnectionGuard.protocol_factory`) and

- closes a connection whose request head has not arrived whole ``header_timeout`` seconds
  after its first byte (or after it opened, when it sends nothing), so that clients
  sending their headers a byte at a time cannot hold connections;
- holds at most ``max_connections`` connections, and never more than half of what the
  process's file-descriptor limit leaves (:func:`connection_cap`: each may need one to
  the upstream); at the cap a new connection takes the place of the one that has waited
  longest for its next request (idle between requests, or still sending its head), or,
  when every one is serving a request, is answered ``503`` with ``Retry-After`` and closed;
- logs these conditions, and a failed ``accept()``, once a minute at most
  (:data:`LOG_INTERVAL`), on the ``solon_events.serve`` logger, never a traceback.

A request's body is read under the gateway's ``body_timeout``
(:class:`~solon_events.serve.Gateway`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

from .deployments import logger

__all__ = ["LOG_INTERVAL", "ConnectionGuard", "connection_cap", "watched"]

LOG_INTERVAL = 60.0
"""How often, at most, each of the conditions the guard meets is logged (seconds)."""
_RESERVED_FDS = 32  # for the process's own files, its listening sockets, Redis, logs
_HEAD_END = b"\r\n\r\n"
_BUSY = b"HTTP/1.1 503 Service Unavailable\r\n"


def connection_cap(max_connections: int) -> int:
    """``max_connections``, lowered to half of what the soft file-descriptor limit leaves
    after a reserve of 32 (each client connection may need one to the upstream); the limit
    is read once, here."""
    try:
        import resource
    except ImportError:  # not a Unix: no limit to read
        return max_connections
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return max_connections
    return max(1, min(max_connections, (soft - _RESERVED_FDS) // 2))


class _Once:
    """A message logged at most once per :data:`LOG_INTERVAL`, saying how many times it
    happened since it was last logged."""

    def __init__(self) -> None:
        self._last: dict[str, float] = {}
        self._count: dict[str, int] = {}

    def warn(self, key: str, message: str, *args: Any) -> None:
        now = time.monotonic()
        self._count[key] = self._count.get(key, 0) + 1
        last = self._last.get(key)
        if last is not None and now - last < LOG_INTERVAL:
            return
        times = self._count.pop(key)
        self._last[key] = now
        suffix = f" ({times} times in the last {LOG_INTERVAL:g} s)" if last is not None else ""
        logger.warning(message + suffix, *args)


class _Watched(asyncio.Protocol):
    """One connection, between its transport and aiohttp's protocol (made once the
    connection is admitted): whether it is waiting for a request head, and since when."""

    def __init__(self, guard: ConnectionGuard, factory: Callable[[], asyncio.Protocol]) -> None:
        self._guard = guard
        self._factory = factory
        self._inner: asyncio.Protocol | None = None
        self.transport: asyncio.Transport | None = None
        self.waiting = True  # for a request's head
        self.served = False  # a request was served: waiting is idling between requests
        self.since = time.monotonic()  # when it began to wait
        self.first_byte: float | None = None  # when the head's first byte came
        self._tail = b""  # the head's last bytes, to find its end across reads

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        if not self._guard._admit(self):
            return
        self._inner = self._factory()
        self._inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        if self.waiting:
            now = time.monotonic()
            if self.first_byte is None:
                self.first_byte = now
            seen = self._tail + data
            if _HEAD_END in seen:
                self.waiting, self._tail = False, b""
            else:
                self._tail = seen[-3:]
        if self._inner is not None:
            self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self._inner.eof_received() if self._inner is not None else None

    def pause_writing(self) -> None:
        if self._inner is not None:
            self._inner.pause_writing()

    def resume_writing(self) -> None:
        if self._inner is not None:
            self._inner.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        self._guard._connections.discard(self)
        if self._inner is not None:
            self._inner.connection_lost(exc)

    def request_done(self) -> None:
        """The request the connection carried was answered: it waits for the next."""
        self.waiting, self.served = True, True
        self.since, self.first_byte, self._tail = time.monotonic(), None, b""

    def request_started(self) -> None:
        """A request's handler runs (its head was read)."""
        self.waiting, self._tail = False, b""


class ConnectionGuard:
    """Caps and times the connections of one listening server (see the module docs):
    ``max_connections`` (lowered by :func:`connection_cap`), ``header_timeout`` seconds
    for a request's head (None: no limit)."""

    def __init__(self, max_connections: int, header_timeout: float | None) -> None:
        self.cap = connection_cap(max_connections)
        """The most connections held at once."""
        if self.cap < max_connections:
            logger.info(
                "the gateway holds %d connections at most, not %d: the file-descriptor "
                "limit (ulimit -n) leaves no more",
                self.cap,
                max_connections,
            )
        self.header_timeout = header_timeout
        self._connections: set[_Watched] = set()
        self._once = _Once()
        self._sweeper: asyncio.Task[None] | None = None

    def protocol_factory(self, factory: Callable[[], asyncio.Protocol]) -> Callable[[], Any]:
        """What ``loop.create_server`` takes: ``factory``'s protocols (aiohttp's), watched."""
        return lambda: _Watched(self, factory)

    @property
    def held(self) -> int:
        """How many connections are held now."""
        return len(self._connections)

    def _admit(self, connection: _Watched) -> bool:
        if len(self._connections) >= self.cap:
            waiting = [c for c in self._connections if c.waiting]
            if not waiting:
                self._once.warn(
                    "busy",
                    "every one of the gateway's %d connections is serving a request: "
                    "new ones are answered 503 (raise --max-connections, or ulimit -n)",
                    self.cap,
                )
                _refuse(connection.transport, self.cap)
                return False
            oldest = min(waiting, key=lambda c: c.first_byte or c.since)
            self._once.warn(
                "evict",
                "the gateway holds its %d connections: the one that waited longest for "
                "its request makes room for a new one",
                self.cap,
            )
            self._close(oldest)
        self._connections.add(connection)
        return True

    def _close(self, connection: _Watched) -> None:
        self._connections.discard(connection)
        if connection.transport is not None:
            connection.transport.abort()

    async def sweep(self) -> None:
        """Close the connections whose request head is late, every quarter of the header
        timeout (a task for as long as the server runs)."""
        if self.header_timeout is None:
            return
        timeout = self.header_timeout
        while True:
            await asyncio.sleep(min(timeout / 4, 1.0))
            now = time.monotonic()
            late = [c for c in self._connections if _late(c, now, timeout)]
            if late:
                self._once.warn(
                    "late",
                    "closed %d connections whose request head did not arrive within %g s",
                    len(late),
                    timeout,
                )
            for connection in late:
                self._close(connection)

    @contextlib.contextmanager
    def accept_errors(self, loop: asyncio.AbstractEventLoop) -> Iterator[None]:
        """While the block runs, ``loop``'s failed ``accept()`` calls (out of file
        descriptors) are logged once a minute in one line, not as a traceback each."""
        previous = loop.get_exception_handler()

        def handle(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
            if context.get("message") == "socket.accept() out of system resource":
                self._once.warn(
                    "accept",
                    "the gateway could not accept a connection: %s (raise ulimit -n, or "
                    "lower --max-connections)",
                    context.get("exception"),
                )
            elif previous is not None:
                previous(loop, context)
            else:
                loop.default_exception_handler(context)

        loop.set_exception_handler(handle)
        try:
            yield
        finally:
            loop.set_exception_handler(previous)


def _late(connection: _Watched, now: float, timeout: float) -> bool:
    """Whether ``connection``'s request head is late: its first byte came ``timeout`` ago,
    or (a new connection) it has sent nothing for that long."""
    if not connection.waiting:
        return False
    if connection.first_byte is not None:
        return now - connection.first_byte > timeout
    return not connection.served and now - connection.since > timeout


def _refuse(transport: asyncio.Transport | None, cap: int) -> None:
    """Answer 503 and close: the gateway serves as many requests as it can hold."""
    if transport is None:
        return
    body = (
        b'{"error": "the gateway is serving as many connections as it holds (%d); try again"}' % cap
    )
    transport.write(
        _BUSY
        + b"Content-Type: application/json\r\nRetry-After: 1\r\nConnection: close\r\n"
        + b"Content-Length: %d\r\n\r\n" % len(body)
        + body
    )
    transport.close()


def watched(transport: asyncio.BaseTransport | None) -> _Watched | None:
    """The guard's view of the connection of ``transport``, if a guard watches it."""
    protocol = transport.get_protocol() if transport is not None else None
    return protocol if isinstance(protocol, _Watched) else None
