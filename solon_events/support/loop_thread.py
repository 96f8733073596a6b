"""A private asyncio event loop running in a daemon thread.

A :class:`~solon_events.ChatModel`'s ``stream()`` and ``call()`` requests run here, so
blocking calls work from plain scripts and from Jupyter (whose main thread already runs a
loop) alike, and Observable subscribers receive events on this thread (``astream()`` and
``acall()`` run on the caller's loop instead).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import sys
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Literal, TypeVar

if sys.version_info >= (3, 11):
    from asyncio import timeout as _timeout
else:  # aiohttp depends on async-timeout before 3.11
    from async_timeout import timeout as _timeout

from ..event_model.extras import MissingExtraError

__all__ = [
    "DeadlinePassed",
    "EventLoopThread",
    "IoLoop",
    "cancel_other_tasks",
    "loop_factory",
    "within",
]

_R = TypeVar("_R")


IoLoop = Literal["asyncio", "uvloop"]
"""Which event loop an :class:`EventLoopThread` runs: asyncio's own or uvloop's."""


def loop_factory(kind: IoLoop) -> Callable[[], asyncio.AbstractEventLoop]:
    """What makes a new loop of ``kind``; uvloop is imported here, on first use (an
    ImportError saying which extra to install when it is missing)."""
    if kind == "asyncio":
        return asyncio.new_event_loop
    if kind != "uvloop":
        raise ValueError(f"io_loop must be 'asyncio' or 'uvloop', got {kind!r}")
    try:
        import uvloop
    except ImportError:
        raise MissingExtraError("io_loop='uvloop'", "uvloop", "uvloop") from None
    return uvloop.new_event_loop


class EventLoopThread:
    """An event loop (made by ``new_loop``) in its own daemon thread, started on first use,
    closable."""

    def __init__(
        self,
        name: str = "solon-events-io",
        new_loop: Callable[[], asyncio.AbstractEventLoop] = asyncio.new_event_loop,
    ) -> None:
        self._name = name
        self._new_loop = new_loop
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The running loop (started on first access)."""
        with self._lock:
            if self._loop is None or self._loop.is_closed():
                self._start()
            assert self._loop is not None
            return self._loop

    def _start(self) -> None:
        loop = self._new_loop()
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(loop)
            loop.call_soon(ready.set)
            loop.run_forever()

        thread = threading.Thread(target=run, name=self._name, daemon=True)
        thread.start()
        ready.wait()
        self._loop, self._thread = loop, thread

    @property
    def started(self) -> bool:
        """Whether the loop is running (it starts on first use of :attr:`loop`)."""
        loop = self._loop
        return loop is not None and not loop.is_closed()

    def call_soon(self, callback: Callable[[], object]) -> None:
        """Call ``callback`` on the loop: at once on the loop thread, else as soon as the
        loop gets to it; never when the loop is not running (nothing would run it)."""
        if self.in_loop_thread():
            callback()
            return
        loop = self._loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # closed meanwhile
                loop.call_soon_threadsafe(callback)

    def in_loop_thread(self) -> bool:
        """True when called from the loop's own thread."""
        return self._thread is not None and threading.current_thread() is self._thread

    def submit(self, coro: Coroutine[Any, Any, _R]) -> concurrent.futures.Future[_R]:
        """Run ``coro`` on the loop; a concurrent future of its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro: Coroutine[Any, Any, _R], timeout: float | None = None) -> _R:
        """Run ``coro`` on the loop and block until it is done (never from the loop thread);
        after ``timeout`` seconds, cancel it and raise TimeoutError."""
        if self.in_loop_thread():
            coro.close()
            raise RuntimeError("a blocking call cannot be made from the I/O thread itself")
        future = self.submit(coro)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError(f"the I/O loop's work took more than {timeout} s") from None

    def close(self) -> None:
        """Cancel what still runs on the loop, stop it and join its thread (idempotent).

        Cancelled requests and tool runs report their failure to their subscribers first.
        """
        loop, thread = self._loop, self._thread
        if loop is None or loop.is_closed():
            return
        if thread is not None and thread is not threading.current_thread():
            with contextlib.suppress(Exception):
                asyncio.run_coroutine_threadsafe(cancel_other_tasks(), loop).result(5)
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or loop.is_closed():
            return
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)
            loop.close()


async def cancel_other_tasks(timeout: float = 5.0) -> None:
    """Cancel every other task of the running loop and wait (up to ``timeout``) for them."""
    current = asyncio.current_task()
    tasks = [task for task in asyncio.all_tasks() if task is not current]
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.wait(tasks, timeout=timeout)


class DeadlinePassed(Exception):
    """What :func:`within` raises when its own time ran out."""


async def within(awaitable: Awaitable[_R], seconds: float) -> _R:
    """``await awaitable``, cancelled after ``seconds`` (at once when not positive), which
    then raises :class:`DeadlinePassed`; a TimeoutError of the awaitable's own passes as
    it is.

    Not ``asyncio.wait_for``: before 3.12 it swallows a cancellation (a disposal) that
    arrives as the awaited work completes, and the work would go on.
    """
    deadline = _timeout(max(seconds, 0.0))
    try:
        async with deadline:
            return await awaitable
    except asyncio.TimeoutError:
        expired = deadline.expired  # a method of asyncio.Timeout, a property of async_timeout's
        if not (expired() if callable(expired) else expired):
            raise  # not ours: whatever raised it meant something else
        raise DeadlinePassed from None
