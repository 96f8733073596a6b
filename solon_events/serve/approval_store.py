"""Where a server keeps the responses paused for tool approval until a client decides.

The gateway (:mod:`solon_events.serve`) puts every
:class:`~solon_events.approvals.PendingApproval` its responses end with into a store,
under the paused response's id, before the client sees the response's end; a later
request that brings decisions (on calls named by their
:func:`~solon_events.approvals.approval_id`) takes it back out and continues the response.
:meth:`ApprovalStore.take` hands a pending approval out once, so that two requests
bringing the same decisions never run a call twice.

:class:`MemoryApprovalStore` keeps them in the process (a continuation must reach the
same process); :class:`RedisApprovalStore` in Redis (the ``redis`` extra), where any
replica sharing it continues what another paused. Both forget a pending approval after
``ttl`` seconds.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Protocol

import orjson

from ..approvals import PendingApproval

if TYPE_CHECKING:
    from .redis_log import RedisStreamLog

__all__ = ["ApprovalStore", "MemoryApprovalStore", "RedisApprovalStore"]

DEFAULT_TTL = 3600.0
"""How long a pending approval is kept by default: an hour."""


class ApprovalStore(Protocol):
    """Pending approvals by response id, each handed out once."""

    async def put(self, pending: PendingApproval) -> None:
        """Keep ``pending`` under its ``response_id``."""

    async def take(self, response_id: str) -> PendingApproval | None:
        """The pending approval kept under ``response_id``, removed; None when there is
        none (never kept, expired, or taken already)."""


class MemoryApprovalStore:
    """Pending approvals in this process's memory, for ``ttl`` seconds; beyond
    ``max_entries`` the oldest are forgotten."""

    def __init__(self, ttl: float = DEFAULT_TTL, max_entries: int = 10_000) -> None:
        if ttl <= 0 or max_entries < 1:
            raise ValueError("ttl and max_entries must be positive")
        self.ttl = ttl
        self.max_entries = max_entries
        self._kept: dict[str, tuple[float, PendingApproval]] = {}

    def __len__(self) -> int:
        return len(self._kept)

    async def put(self, pending: PendingApproval) -> None:
        """Keep ``pending`` under its ``response_id``."""
        now = time.monotonic()
        kept = self._kept
        for response_id in [rid for rid, (until, _) in kept.items() if until <= now]:
            del kept[response_id]
        kept.pop(pending.response_id, None)
        while len(kept) >= self.max_entries:
            del kept[next(iter(kept))]
        kept[pending.response_id] = (now + self.ttl, pending)

    async def take(self, response_id: str) -> PendingApproval | None:
        """The pending approval kept under ``response_id``, removed (None if none)."""
        found = self._kept.pop(response_id, None)
        if found is None or found[0] <= time.monotonic():
            return None
        return found[1]


class RedisApprovalStore:
    """Pending approvals in Redis, through ``log``'s connection and key prefix
    (``<prefix>:approval:<response id>``), for ``ttl`` seconds; taken with ``GETDEL``, so
    that one request only, on any replica, gets each. A Redis failure raises
    :class:`~solon_events.serve.redis_log.StreamLogError`."""

    def __init__(self, log: RedisStreamLog, ttl: float = DEFAULT_TTL) -> None:
        if ttl <= 0:
            raise ValueError("ttl must be positive")
        self.log = log
        self.ttl = ttl

    def key(self, response_id: str) -> str:
        """The Redis key of ``response_id``'s pending approval."""
        return f"{self.log.prefix}:approval:{response_id}"

    async def put(self, pending: PendingApproval) -> None:
        """Keep ``pending`` under its ``response_id``."""
        data = orjson.dumps(pending.to_json())
        await self.log.put_value(self.key(pending.response_id), data, self.ttl)

    async def take(self, response_id: str) -> PendingApproval | None:
        """The pending approval kept under ``response_id``, removed (None if none)."""
        data = await self.log.take_value(self.key(response_id))
        if data is None:
            return None
        return PendingApproval.from_json(orjson.loads(data))
