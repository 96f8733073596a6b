"""The embedded provider's lifecycle: :class:`DevServer` (asyncio) and :class:`RunningServer`
(the same server on its own event-loop thread, for blocking code)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, NamedTuple, overload

import orjson
from aiohttp import web
from multidict import CIMultiDict

from ..sources import tell_source
from ..support.loop_thread import EventLoopThread
from .app import ServedStream, StreamTiming, create_app
from .encoders import Frame

__all__ = [
    "KEEP_REQUESTS",
    "DevServer",
    "RecordedRequest",
    "RecordedRequests",
    "RunningServer",
    "load_recording",
]

_SHUTDOWN_TIMEOUT = 0.5
KEEP_REQUESTS = 1000
"""How many of the requests it received a server keeps by default (the last ones)."""


class RecordedRequest(NamedTuple):
    """A request the server received: ``path``, ``headers`` (case-insensitive) and ``body``
    (the parsed JSON, or None when it was not JSON)."""

    path: str
    headers: Mapping[str, str]
    body: Any


class RecordedRequests(Sequence[RecordedRequest]):
    """The requests a server received, numbered from 0 in the order they came: ``len()``
    counts every one, an index or a slice is those numbers (a negative one counts from the
    last; a slice gives those of its numbers still kept), iterating gives those kept.
    Only the last ``keep`` are kept (None: all), so that a long-lived server holds no
    more and its garbage collections take no longer (a full collection walks every object
    kept: with 100,000 requests kept it took about 160 ms, every time); asking for an
    older one is an IndexError saying so."""

    def __init__(self, keep: int | None = KEEP_REQUESTS) -> None:
        if keep is not None and keep < 1:
            raise ValueError("keep_requests must be 1 or more, or None to keep all")
        self._kept: deque[RecordedRequest] = deque(maxlen=keep)
        self._count = 0

    def append(self, request: RecordedRequest) -> None:
        """Count and keep ``request`` (the oldest kept one is dropped past ``keep``)."""
        self._kept.append(request)
        self._count += 1

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> RecordedRequest: ...

    @overload
    def __getitem__(self, index: slice) -> list[RecordedRequest]: ...

    def __getitem__(self, index: int | slice) -> RecordedRequest | list[RecordedRequest]:
        first = self._count - len(self._kept)  # the number of the oldest kept
        if isinstance(index, slice):  # those kept of the numbers it names
            numbers = range(*index.indices(self._count))
            return [self._kept[number - first] for number in numbers if number >= first]
        number = index + self._count if index < 0 else index
        if not first <= number < self._count:
            raise IndexError(
                f"request {index} is not kept: {self._count} came, the last "
                f"{len(self._kept)} are kept (DevServer(keep_requests=...))"
            )
        return self._kept[number - first]

    def __iter__(self) -> Iterator[RecordedRequest]:
        return iter(self._kept)

    def __eq__(self, other: object) -> bool:
        """Equal to a list (or tuple) of every request received, in order, or to requests
        of another server that received and kept the same."""
        if isinstance(other, RecordedRequests):
            return self._count == other._count and list(self._kept) == list(other._kept)
        if not isinstance(other, (list, tuple)):
            return NotImplemented
        return len(other) == self._count == len(self._kept) and list(self._kept) == list(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<RecordedRequests: {self._count} received, {len(self._kept)} kept>"


def load_recording(path: str | Path) -> list[Frame]:
    """The frames of a recorded stream, read as :func:`~solon_events.replay` reads it
    (:mod:`solon_events.sources`): a body as a provider sent it (SSE, JSON lines or an AWS
    event stream) or a timed recording (:mod:`solon_events.recording`: every step's frames
    in a row). Each frame is its payload, JSON decoded; one that is not JSON, such as
    ``[DONE]``, is kept as raw text."""
    return [_payload(frame) for frame in tell_source(Path(path)).frames()]


def _payload(text: str | bytes) -> Frame:
    try:
        return orjson.loads(text)  # type: ignore[no-any-return]
    except orjson.JSONDecodeError:
        return text if isinstance(text, str) else text.decode("utf-8", "replace")


class DevServer:
    """A local provider on 127.0.0.1 speaking every wire format of :data:`~.app.ROUTES`, for
    demos and tests.

    Use it as ``async with DevServer() as srv:`` (or ``await srv.start()`` /
    ``await srv.close()``); ``srv.url`` is the base URL. The request's model name picks the
    scenario (see :mod:`solon_events.devserver.scenarios`). ``pace`` is the pause, in
    seconds, between two frames of any stream; ``recording`` is a file of frames that the
    ``replay`` scenario streams (with a recording, unknown model names replay it);
    ``timings`` keeps, in :attr:`stream_timings`, when each stream was received and when
    each of its content parts was written (:class:`~.app.StreamTiming`: the server's own
    account of a latency script, for benchmarks).

    Observability: :attr:`requests` holds the requests received (:class:`RecordedRequests`:
    ``len()`` counts them all, the last ``keep_requests`` are kept, None: all, so that a
    long-lived server neither grows nor slows down); :attr:`disconnect_count`
    counts streams whose client went away before the server finished writing (at the
    ``time.monotonic()`` instants in :attr:`disconnect_times`), and :meth:`wait_disconnect`
    waits for them.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        pace: float = 0.0,
        recording: str | Path | None = None,
        timings: bool = False,
        keep_requests: int | None = KEEP_REQUESTS,
    ) -> None:
        self.host = host
        self.port = port
        self.pace = pace
        self.recording = Path(recording) if recording is not None else None
        self.recording_frames: list[Frame] = (
            load_recording(self.recording) if self.recording is not None else []
        )
        self.requests = RecordedRequests(keep_requests)
        """The requests received (the last ``keep_requests`` of them kept)."""
        self.stream_timings: list[StreamTiming] | None = [] if timings else None
        """With ``timings``, when each stream was received and its parts written."""
        self._attempts: dict[tuple[str, str], int] = {}
        self._disconnects = 0
        self.disconnect_times: list[float] = []
        """When (``time.monotonic()``) each client went away mid-stream, in order."""
        self._condition = threading.Condition()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._gate: asyncio.Event | None = None
        self._gate_open = False
        self._changed: asyncio.Event | None = None
        self._runner: web.AppRunner | None = None
        self._closing = False
        self.served: list[ServedStream] = []
        """Every stream served, with the usage its script bills (:class:`~.app.ServedStream`)."""

    @property
    def url(self) -> str:
        """The base URL, ``http://127.0.0.1:<port>`` (no trailing slash)."""
        return f"http://{self.host}:{self.port}"

    @property
    def disconnect_count(self) -> int:
        """How many streams lost their client before the server finished writing."""
        with self._condition:
            return self._disconnects

    @property
    def disconnects(self) -> int:
        """Alias of :attr:`disconnect_count`."""
        return self.disconnect_count

    async def start(self) -> DevServer:
        """Bind and start serving; :attr:`port` becomes the bound port."""
        if self._runner is not None:
            raise RuntimeError("the DevServer is already started")
        self._loop = asyncio.get_running_loop()
        self._gate = asyncio.Event()
        if self._gate_open:
            self._gate.set()
        self._changed = asyncio.Event()
        self._closing = False
        runner = web.AppRunner(
            create_app(self),
            handler_cancellation=True,
            shutdown_timeout=_SHUTDOWN_TIMEOUT,
            access_log=None,
        )
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.port)
        await site.start()
        self._runner = runner
        self.port = int(runner.addresses[0][1])
        return self

    async def close(self) -> None:
        """Stop serving and drop open connections (idempotent)."""
        runner, self._runner = self._runner, None
        if runner is not None:
            self._closing = True
            await runner.cleanup()

    async def __aenter__(self) -> DevServer:
        return await self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def open_gate(self) -> None:
        """Let every ``gate`` stream go on (thread-safe); the gate stays open."""
        self._set_gate(True)

    def close_gate(self) -> None:
        """Make later ``gate`` streams wait again (thread-safe)."""
        self._set_gate(False)

    def _set_gate(self, is_open: bool) -> None:
        self._gate_open = is_open
        gate, loop = self._gate, self._loop
        if gate is None or loop is None or loop.is_closed():
            return
        action = gate.set if is_open else gate.clear
        if _running_loop() is loop:
            action()
        else:
            loop.call_soon_threadsafe(action)

    async def _gate_opened(self) -> None:
        assert self._gate is not None
        await self._gate.wait()

    async def wait_disconnect(self, timeout: float = 1.0, count: int = 1) -> bool:
        """Wait until :attr:`disconnect_count` reaches ``count``; False on timeout.

        Works from the server's own loop and from any other loop or thread.
        """
        if _running_loop() is not self._loop:
            return await asyncio.to_thread(self.wait_disconnect_blocking, timeout, count)
        try:
            await asyncio.wait_for(self._wait_count(count), timeout)
        except asyncio.TimeoutError:
            return False
        return True

    async def _wait_count(self, count: int) -> None:
        while self.disconnect_count < count:
            assert self._changed is not None
            await self._changed.wait()

    def wait_disconnect_blocking(self, timeout: float = 1.0, count: int = 1) -> bool:
        """Block until :attr:`disconnect_count` reaches ``count``; False on timeout.

        Never call it from the server's own loop thread (it would block the server).
        """
        if self._loop is not None and _running_loop() is self._loop:
            raise RuntimeError("wait_disconnect_blocking() would block the server's own loop")
        with self._condition:
            return self._condition.wait_for(lambda: self._disconnects >= count, timeout)

    def _count_attempt(self, path: str, model: str) -> int:
        """How many requests for ``model`` on ``path`` have come, this one included."""
        key = (path, model)
        self._attempts[key] = self._attempts.get(key, 0) + 1
        return self._attempts[key]

    def _note_served(self, stream: ServedStream) -> None:
        with self._condition:
            self.served.append(stream)

    def served_usage(self) -> dict[str, Any]:
        """The usage the server served, as a provider bills it: the streams written to
        their end (``finished``) and the ``prompt_tokens`` and ``completion_tokens`` they
        reported, in all and by model (``models``); and the streams cut short (their
        client left, or the script cut them: ``cut``), which reported none. Also served
        as JSON at ``GET /devserver/usage``."""
        with self._condition:
            streams = list(self.served)
        totals: dict[str, Any] = {"streams": 0, "finished": 0, "cut": 0, "prompt_tokens": 0,
                                  "completion_tokens": 0, "models": {}}  # fmt: skip
        for stream in streams:
            for where in (totals, totals["models"].setdefault(stream.model, _no_usage())):
                where["streams"] += 1
                if stream.finished:
                    where["finished"] += 1
                    where["prompt_tokens"] += stream.prompt_tokens
                    where["completion_tokens"] += stream.completion_tokens
                else:
                    where["cut"] += 1
        return totals

    def _record(self, path: str, headers: Mapping[str, str], body: Any) -> None:
        self.requests.append(RecordedRequest(path, CIMultiDict(headers), body))

    def _note_disconnect(self) -> None:
        if self._closing:
            return
        with self._condition:
            self._disconnects += 1
            self.disconnect_times.append(time.monotonic())
            self._condition.notify_all()
        if self._changed is not None:
            changed, self._changed = self._changed, asyncio.Event()
            changed.set()

    @classmethod
    def run_in_thread(
        cls,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        pace: float = 0.0,
        recording: str | Path | None = None,
        timings: bool = False,
        keep_requests: int | None = KEEP_REQUESTS,
    ) -> RunningServer:
        """Start a server on its own event-loop thread; close it with ``.close()``."""
        loop_thread = EventLoopThread(name="solon-events-devserver")
        server = cls(
            host,
            port,
            pace=pace,
            recording=recording,
            timings=timings,
            keep_requests=keep_requests,
        )
        try:
            loop_thread.run(server.start())
        except BaseException:
            loop_thread.close()
            raise
        return RunningServer(server, loop_thread)

    def __repr__(self) -> str:
        state = "serving" if self._runner is not None else "stopped"
        return f"<DevServer {self.url} {state}>"


def _no_usage() -> dict[str, Any]:
    return {"streams": 0, "finished": 0, "cut": 0, "prompt_tokens": 0, "completion_tokens": 0}


class RunningServer:
    """A :class:`DevServer` running on its own event-loop thread (for blocking code).

    A context manager; ``.url``, ``.port``, ``.requests``, ``.disconnect_count``,
    ``.disconnect_times``, ``.open_gate()`` and a blocking ``.wait_disconnect()`` mirror
    the server's.
    """

    def __init__(self, server: DevServer, loop_thread: EventLoopThread) -> None:
        self.server = server
        self._loop_thread = loop_thread
        self._closed = False

    @property
    def url(self) -> str:
        """The base URL."""
        return self.server.url

    @property
    def port(self) -> int:
        """The bound port."""
        return self.server.port

    @property
    def requests(self) -> RecordedRequests:
        """The requests received (see :attr:`DevServer.requests`)."""
        return self.server.requests

    @property
    def disconnect_count(self) -> int:
        """How many streams lost their client before the server finished writing."""
        return self.server.disconnect_count

    def served_usage(self) -> dict[str, Any]:
        """The usage the server served (see :meth:`DevServer.served_usage`)."""
        return self.server.served_usage()

    @property
    def disconnect_times(self) -> list[float]:
        """When (``time.monotonic()``) each client went away mid-stream."""
        return self.server.disconnect_times

    def open_gate(self) -> None:
        """Let every ``gate`` stream go on."""
        self.server.open_gate()

    def close_gate(self) -> None:
        """Make later ``gate`` streams wait again."""
        self.server.close_gate()

    def wait_disconnect(self, timeout: float = 1.0, count: int = 1) -> bool:
        """Block until ``disconnect_count`` reaches ``count``; False on timeout."""
        return self.server.wait_disconnect_blocking(timeout, count)

    def close(self) -> None:
        """Stop the server and its thread (idempotent)."""
        if self._closed or self._loop_thread.in_loop_thread():
            return
        self._closed = True
        try:
            self._loop_thread.run(self.server.close())
        finally:
            self._loop_thread.close()

    def __enter__(self) -> RunningServer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<RunningServer {self.url}>"


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
