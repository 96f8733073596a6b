"""Where cached answers are kept: in memory, in a SQLite file (the standard library's
``sqlite3``), in Redis (:mod:`.redis_store`).

A store maps a key (a request's digest, :func:`~.key.request_key`) to a
:class:`~.answer.StoredAnswer`, each entry for ``ttl`` seconds (None: until the store's
size caps push it out). Every store has the same three coroutine methods, usable from any
event loop: :meth:`CacheStore.get`, :meth:`CacheStore.put` and :meth:`CacheStore.clear`;
and :meth:`CacheStore.close`. An answer larger than ``max_entry_bytes`` (encoded) is not
stored.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Protocol, runtime_checkable

from .answer import StoredAnswer

__all__ = [
    "DEFAULT_MAX_ENTRY_BYTES",
    "CacheStore",
    "MemoryCache",
    "SQLiteCache",
    "default_cache_path",
]

DEFAULT_MAX_ENTRY_BYTES = 8 * 1024 * 1024
"""The largest answer a store keeps by default (encoded: 8 MiB)."""


@runtime_checkable
class CacheStore(Protocol):
    """What keeps cached answers (see the module's documentation)."""

    async def get(self, key: str) -> StoredAnswer | None:
        """The answer kept under ``key``, or None (none, expired, or unreadable)."""

    async def put(self, key: str, answer: StoredAnswer, ttl: float | None) -> bool:
        """Keep ``answer`` under ``key`` for ``ttl`` seconds (None: no expiry); False
        when it was not kept (larger than the store takes)."""

    async def clear(self) -> None:
        """Forget every answer."""

    def close(self) -> None:
        """Let go of what the store holds open (idempotent)."""


def default_cache_path() -> Path:
    """The SQLite file of ``ChatModel(cache=True)``: ``responses.sqlite3`` in
    ``$XDG_CACHE_HOME/solon-events`` (``~/.cache/solon-events`` when unset)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "solon-events" / "responses.sqlite3"


class _Capped:
    """A store's caps: at most ``max_entries`` answers and ``max_bytes`` of them, none
    larger than ``max_entry_bytes``."""

    def __init__(self, max_entries: int, max_bytes: int, max_entry_bytes: int) -> None:
        if max_entries < 1 or max_bytes < 1 or max_entry_bytes < 1:
            raise ValueError("max_entries, max_bytes and max_entry_bytes must be positive")
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.max_entry_bytes = max_entry_bytes

    def _fits(self, size: int) -> bool:
        """Whether an answer of ``size`` bytes may be kept."""
        return size <= self.max_entry_bytes and size <= self.max_bytes


class _Entry:
    __slots__ = ("answer", "expires", "size")

    def __init__(self, answer: StoredAnswer, size: int, expires: float | None) -> None:
        self.answer = answer
        self.size = size
        self.expires = expires


class MemoryCache(_Capped):
    """Answers kept in this process, least recently used first out: at most
    ``max_entries`` answers and ``max_bytes`` of them (about their encoded size:
    :meth:`~.answer.StoredAnswer.size`; they are kept as they are, never encoded), none
    larger than ``max_entry_bytes``. Shared by every model and loop of the process that is given
    it; thread-safe."""

    def __init__(
        self,
        *,
        max_entries: int = 1024,
        max_bytes: int = 256 * 1024 * 1024,
        max_entry_bytes: int = DEFAULT_MAX_ENTRY_BYTES,
    ) -> None:
        super().__init__(max_entries, max_bytes, max_entry_bytes)
        self._entries: collections.OrderedDict[str, _Entry] = collections.OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"MemoryCache({len(self)} answers, {self._bytes} bytes)"

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def size(self) -> int:
        """The encoded size of the answers kept, in bytes."""
        return self._bytes

    async def get(self, key: str) -> StoredAnswer | None:
        """See :meth:`CacheStore.get`."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            if entry.expires is not None and entry.expires <= time.monotonic():
                self._drop(key)
                return None
            self._entries.move_to_end(key)
            return entry.answer

    async def put(self, key: str, answer: StoredAnswer, ttl: float | None) -> bool:
        """See :meth:`CacheStore.put`."""
        size = answer.size()
        if not self._fits(size):
            return False
        expires = None if ttl is None else time.monotonic() + ttl
        with self._lock:
            if key in self._entries:
                self._drop(key)
            self._entries[key] = _Entry(answer, size, expires)
            self._bytes += size
            while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
                self._drop(next(iter(self._entries)))
        return True

    def _drop(self, key: str) -> None:
        entry = self._entries.pop(key)
        self._bytes -= entry.size

    async def clear(self) -> None:
        """See :meth:`CacheStore.clear`."""
        with self._lock:
            self._entries.clear()
            self._bytes = 0

    def close(self) -> None:
        """Nothing to let go of."""


_SCHEMA = """
CREATE TABLE IF NOT EXISTS answers (
    key TEXT PRIMARY KEY,
    data BLOB NOT NULL,
    size INTEGER NOT NULL,
    expires REAL,
    used REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS answers_used ON answers (used);
"""


class SQLiteCache(_Capped):
    """Answers kept in the SQLite file at ``path`` (default :func:`default_cache_path`;
    its folder is made), shared by the processes that open it: at most ``max_entries``
    answers and ``max_bytes`` of them, the least recently read removed first, none larger
    than ``max_entry_bytes``. Reads run on the caller's loop (a few microseconds);
    writes on a worker thread. The file is in WAL mode, so readers never wait for a
    writer."""

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        max_entries: int = 100_000,
        max_bytes: int = 1024 * 1024 * 1024,
        max_entry_bytes: int = DEFAULT_MAX_ENTRY_BYTES,
    ) -> None:
        super().__init__(max_entries, max_bytes, max_entry_bytes)
        self.path = Path(path) if path is not None else default_cache_path()
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._closed = False
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._write_lock:
            connection = self._connection()
            connection.executescript(_SCHEMA)

    def __repr__(self) -> str:
        return f"SQLiteCache({str(self.path)!r})"

    def _connection(self) -> sqlite3.Connection:
        """This thread's connection to the file (one per thread: sqlite3's rule)."""
        connection: sqlite3.Connection | None = getattr(self._local, "connection", None)
        if connection is None:
            if self._closed:
                raise RuntimeError("this SQLiteCache is closed")
            connection = sqlite3.connect(
                self.path, timeout=30.0, isolation_level=None, check_same_thread=False
            )
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=NORMAL")
            self._local.connection = connection
            with self._lock:
                self._connections.append(connection)
        return connection

    async def get(self, key: str) -> StoredAnswer | None:
        """See :meth:`CacheStore.get` (an entry that cannot be read is removed)."""
        connection = self._connection()
        row = connection.execute(
            "SELECT data, expires FROM answers WHERE key = ?", (key,)
        ).fetchone()
        if row is None:
            return None
        data, expires = row
        now = time.time()
        if expires is not None and expires <= now:
            await self._write(self._delete, key)
            return None
        try:
            answer = StoredAnswer.decode(data)
        except ValueError:
            await self._write(self._delete, key)
            return None
        self._write_soon(self._touch, key, now)  # the hit does not wait for it
        return answer

    async def put(self, key: str, answer: StoredAnswer, ttl: float | None) -> bool:
        """See :meth:`CacheStore.put`."""
        data = answer.encode()
        if not self._fits(len(data)):
            return False
        expires = None if ttl is None else time.time() + ttl
        await self._write(self._insert, key, data, expires)
        return True

    async def clear(self) -> None:
        """See :meth:`CacheStore.clear`."""
        await self._write(lambda: self._connection().execute("DELETE FROM answers"))

    async def _write(self, work: object, *args: object) -> None:
        def run() -> None:
            with self._write_lock:
                work(*args)  # type: ignore[operator]

        await asyncio.get_running_loop().run_in_executor(None, run)

    def _write_soon(self, work: object, *args: object) -> None:
        def run() -> None:
            with self._write_lock, contextlib.suppress(sqlite3.Error, RuntimeError):
                work(*args)  # type: ignore[operator]

        asyncio.get_running_loop().run_in_executor(None, run)

    def _delete(self, key: str) -> None:
        self._connection().execute("DELETE FROM answers WHERE key = ?", (key,))

    def _touch(self, key: str, now: float) -> None:
        self._connection().execute("UPDATE answers SET used = ? WHERE key = ?", (now, key))

    def _insert(self, key: str, data: bytes, expires: float | None) -> None:
        connection = self._connection()
        now = time.time()
        connection.execute("BEGIN IMMEDIATE")
        try:
            connection.execute(
                "INSERT OR REPLACE INTO answers (key, data, size, expires, used) "
                "VALUES (?, ?, ?, ?, ?)",
                (key, data, len(data), expires, now),
            )
            connection.execute(
                "DELETE FROM answers WHERE expires IS NOT NULL AND expires <= ?", (now,)
            )
            count, total = connection.execute(
                "SELECT COUNT(*), COALESCE(SUM(size), 0) FROM answers"
            ).fetchone()
            while count > self.max_entries or total > self.max_bytes:
                oldest = connection.execute(
                    "SELECT key, size FROM answers ORDER BY used LIMIT 1"
                ).fetchone()
                if oldest is None:
                    break
                connection.execute("DELETE FROM answers WHERE key = ?", (oldest[0],))
                count, total = count - 1, total - oldest[1]
            connection.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                connection.execute("ROLLBACK")
            raise

    def __len__(self) -> int:
        return int(self._connection().execute("SELECT COUNT(*) FROM answers").fetchone()[0])

    def close(self) -> None:
        """Close every connection to the file (idempotent)."""
        with self._lock:
            self._closed = True
            connections, self._connections = self._connections, []
        for connection in connections:
            with contextlib.suppress(sqlite3.Error):
                connection.close()
        self._local = threading.local()
