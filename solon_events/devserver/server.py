"""The embedded provider's lifecycle: :class:`DevServer` (asyncio) and :class:`RunningServer`
(the same server on its own event-loop thread, for blocking code)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, NamedTuple

import orjson
from aiohttp import web
from multidict import CIMultiDict

from ..loop_thread import EventLoopThread
from ..sources import tell_source
from .app import StreamTiming, create_app
from .encoders import Frame

__all__ = ["DevServer", "RecordedRequest", "RunningServer", "load_recording"]

_SHUTDOWN_TIMEOUT = 0.5


class RecordedRequest(NamedTuple):
    """A request the server received: ``path``, ``headers`` (case-insensitive) and ``body``
    (the parsed JSON, or None when it was not JSON)."""

    path: str
    headers: Mapping[str, str]
    body: Any


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

    Observability: :attr:`requests` lists every request received; :attr:`disconnect_count`
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
    ) -> None:
        self.host = host
        self.port = port
        self.pace = pace
        self.recording = Path(recording) if recording is not None else None
        self.recording_frames: list[Frame] = (
            load_recording(self.recording) if self.recording is not None else []
        )
        self.requests: list[RecordedRequest] = []
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
    ) -> RunningServer:
        """Start a server on its own event-loop thread; close it with ``.close()``."""
        loop_thread = EventLoopThread(name="solon-events-devserver")
        server = cls(host, port, pace=pace, recording=recording, timings=timings)
        try:
            loop_thread.run(server.start())
        except BaseException:
            loop_thread.close()
            raise
        return RunningServer(server, loop_thread)

    def __repr__(self) -> str:
        state = "serving" if self._runner is not None else "stopped"
        return f"<DevServer {self.url} {state}>"


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
    def requests(self) -> list[RecordedRequest]:
        """Every request received."""
        return self.server.requests

    @property
    def disconnect_count(self) -> int:
        """How many streams lost their client before the server finished writing."""
        return self.server.disconnect_count

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
