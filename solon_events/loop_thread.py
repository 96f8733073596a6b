"""A private asyncio event loop running in a daemon thread.

All of a :class:`~solon_events.ChatModel`'s network I/O runs here, so blocking calls work
from plain scripts and from Jupyter (whose main thread already runs a loop) alike, and
Observable subscribers receive events on this thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["EventLoopThread"]

_R = TypeVar("_R")


class EventLoopThread:
    """An event loop in its own daemon thread, started on first use, closable."""

    def __init__(self, name: str = "solon-events-io") -> None:
        self._name = name
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
        loop = asyncio.new_event_loop()
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(loop)
            loop.call_soon(ready.set)
            loop.run_forever()

        thread = threading.Thread(target=run, name=self._name, daemon=True)
        thread.start()
        ready.wait()
        self._loop, self._thread = loop, thread

    def in_loop_thread(self) -> bool:
        """True when called from the loop's own thread."""
        return self._thread is not None and threading.current_thread() is self._thread

    def submit(self, coro: Coroutine[Any, Any, _R]) -> concurrent.futures.Future[_R]:
        """Run ``coro`` on the loop; a concurrent future of its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro: Coroutine[Any, Any, _R]) -> _R:
        """Run ``coro`` on the loop and block until it is done (never from the loop thread)."""
        if self.in_loop_thread():
            coro.close()
            raise RuntimeError("a blocking call cannot be made from the I/O thread itself")
        return self.submit(coro).result()

    def close(self) -> None:
        """Stop the loop and join its thread (idempotent)."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or loop.is_closed():
            return
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)
            loop.close()
