"""Cached answers kept in Redis, shared by every process that reads it (the replicas of a
gateway, say). Needs the ``redis`` extra (``pip install 'solon-events[redis]'``)."""

from __future__ import annotations

from typing import Any

from ...event_model.extras import require
from ...support.loop_clients import LoopClients
from ...support.redaction import redact_url
from .answer import StoredAnswer
from .stores import DEFAULT_MAX_ENTRY_BYTES

__all__ = ["RedisCache"]


class RedisCache:
    """Answers kept in Redis at ``url`` (``redis://HOST:PORT/DB``), each under
    ``{prefix}:cache:{key}`` as one string value with its expiry (``PX``). How much Redis
    keeps in all is Redis's own ``maxmemory`` and eviction policy (``allkeys-lru`` suits a
    cache); an answer larger than ``max_entry_bytes`` is not stored. One client per event
    loop, made on first use."""

    def __init__(
        self,
        url: str = "redis://127.0.0.1:6379/0",
        *,
        prefix: str = "solon-events",
        max_entry_bytes: int = DEFAULT_MAX_ENTRY_BYTES,
    ) -> None:
        if not url.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError("url must be a redis://HOST:PORT/DB URL")
        if max_entry_bytes < 1:
            raise ValueError("max_entry_bytes must be positive")
        require("redis.asyncio", feature="the Redis cache", extra="redis")
        self.url = url
        self.prefix = prefix
        self.max_entry_bytes = max_entry_bytes
        self._clients: LoopClients[Any] = LoopClients(self._connect)

    def __repr__(self) -> str:
        return f"RedisCache({redact_url(self.url)!r}, prefix={self.prefix!r})"

    def key(self, key: str) -> str:
        """The Redis key of the answer kept under ``key``."""
        return f"{self.prefix}:cache:{key}"

    def _connect(self) -> Any:
        from redis.asyncio import Redis

        return Redis.from_url(self.url, socket_connect_timeout=2, socket_timeout=5)

    async def get(self, key: str) -> StoredAnswer | None:
        """See :meth:`~.stores.CacheStore.get` (an entry that cannot be read is a miss)."""
        data = await self._clients.get().get(self.key(key))
        if data is None:
            return None
        try:
            return StoredAnswer.decode(data)
        except ValueError:
            return None

    async def put(self, key: str, answer: StoredAnswer, ttl: float | None) -> bool:
        """See :meth:`~.stores.CacheStore.put`."""
        data = answer.encode()
        if len(data) > self.max_entry_bytes:
            return False
        px = None if ttl is None else max(1, int(ttl * 1000))
        await self._clients.get().set(self.key(key), data, px=px)
        return True

    async def clear(self) -> None:
        """Forget every answer under this prefix."""
        client = self._clients.get()
        async for name in client.scan_iter(match=self.key("*"), count=500):
            await client.delete(name)

    async def aclose(self) -> None:
        """Close the running loop's client."""
        await self._clients.aclose()

    def close(self) -> None:
        """Let go of the clients (their connections close with them)."""
        self._clients.clear()
