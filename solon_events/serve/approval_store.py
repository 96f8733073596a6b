"""Where a server keeps the responses paused for tool approval until a client decides.

The gateway (:mod:`solon_events.serve`) puts every
:class:`~solon_events.event_model.approvals.PendingApproval` its responses end with into a store,
under the paused response's id, before the client sees the response's end; a later
request that brings decisions (on calls named by their
:func:`~solon_events.event_model.approvals.approval_id`) looks at it (:meth:`ApprovalStore.peek`: a
decision that does not answer its calls leaves it as it was, its time to live included),
then takes it out and continues the response. :meth:`ApprovalStore.take` hands a pending
approval out once, so that two requests bringing the same decisions never run a call twice.

:class:`MemoryApprovalStore` keeps them in the process (a continuation must reach the
same process); :class:`RedisApprovalStore` in Redis (the ``redis`` extra), where any
replica sharing it continues what another paused. Both forget a pending approval after
``ttl`` seconds. In Redis a state is signed (HMAC-SHA256, with a key the application
provides: :func:`approval_key`), its expiry within what is signed, so that whoever can
write to that Redis cannot make a server tool run (an edited state, or one made up, is
refused); and each state taken is marked there, so that one written back after it was
continued is never continued again, on any replica.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import time
from typing import TYPE_CHECKING, Protocol

import orjson

from ..event_model.approvals import PendingApproval, signed, verified

if TYPE_CHECKING:
    from .redis_log import RedisStreamLog

__all__ = [
    "APPROVAL_KEY_ENV",
    "ApprovalStore",
    "MemoryApprovalStore",
    "RedisApprovalStore",
    "approval_key",
]

DEFAULT_TTL = 3600.0
"""How long a pending approval is kept by default: an hour."""

APPROVAL_KEY_ENV = "SOLON_APPROVAL_KEY"
"""The environment variable :func:`approval_key` reads the signing key from."""


def approval_key(given: bytes | str | None = None, token: str | None = None) -> bytes | None:
    """The key the gateway signs the paused responses it keeps in Redis with: ``given``
    (the gateway's ``approval_key``), else the environment's :data:`APPROVAL_KEY_ENV`, else
    one derived from the gateway's ``token`` (every replica of a deployment shares it, and
    it is not in Redis), else None. Give every replica the same one."""
    key = given if given is not None else os.environ.get(APPROVAL_KEY_ENV) or None
    if key is not None:
        return key.encode() if isinstance(key, str) else bytes(key)
    if token:
        return hmac.new(token.encode(), b"solon-events approvals", hashlib.sha256).digest()
    return None


class ApprovalStore(Protocol):
    """Pending approvals by response id, each handed out once."""

    async def put(self, pending: PendingApproval) -> None:
        """Keep ``pending`` under its ``response_id``."""

    async def peek(self, response_id: str) -> PendingApproval | None:
        """The pending approval kept under ``response_id``, left where it is (its time to
        live unchanged); None when there is none."""

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

    def expires_at(self, response_id: str) -> float | None:
        """When (``time.monotonic()``) the pending approval of ``response_id`` is
        forgotten; None when none is kept."""
        found = self._kept.get(response_id)
        return None if found is None else found[0]

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

    async def peek(self, response_id: str) -> PendingApproval | None:
        """The pending approval kept under ``response_id``, left as it is (None if none)."""
        found = self._kept.get(response_id)
        if found is None or found[0] <= time.monotonic():
            return None
        return found[1]

    async def take(self, response_id: str) -> PendingApproval | None:
        """The pending approval kept under ``response_id``, removed (None if none)."""
        found = self._kept.pop(response_id, None)
        if found is None or found[0] <= time.monotonic():
            return None
        return found[1]


class RedisApprovalStore:
    """Pending approvals in Redis, through ``log``'s connection and key prefix
    (``<prefix>:approval:<response id>``), for ``ttl`` seconds, signed with ``key`` (at
    least 16 bytes; :func:`approval_key`); taken with ``GETDEL``, so that one request only,
    on any replica, gets each, and marked taken (``<prefix>:approval-taken:<response id>``,
    until the state expires), so that a state written back is never continued twice. A
    state that fails its signature check (edited, made up, signed with another key) or that
    expired raises ``ValueError``. A Redis failure raises
    :class:`~solon_events.serve.redis_log.StreamLogError`."""

    def __init__(self, log: RedisStreamLog, ttl: float = DEFAULT_TTL, *, key: bytes | str) -> None:
        if ttl <= 0:
            raise ValueError("ttl must be positive")
        self.log = log
        self.ttl = ttl
        self._key = key.encode() if isinstance(key, str) else bytes(key)
        if len(self._key) < 16:
            raise ValueError("the signing key of the approvals has at least 16 bytes")

    def key(self, response_id: str) -> str:
        """The Redis key of ``response_id``'s pending approval."""
        return f"{self.log.prefix}:approval:{response_id}"

    def taken_key(self, response_id: str) -> str:
        """The Redis key that marks ``response_id``'s pending approval taken."""
        return f"{self.log.prefix}:approval-taken:{response_id}"

    async def put(self, pending: PendingApproval) -> None:
        """Keep ``pending`` under its ``response_id``, signed, with its expiry."""
        record = {"expires_at": time.time() + self.ttl, "pending": pending.to_json()}
        data = orjson.dumps(signed(record, self._key))
        await self.log.put_value(self.key(pending.response_id), data, self.ttl)

    async def peek(self, response_id: str) -> PendingApproval | None:
        """The pending approval kept under ``response_id``, left as it is (None if none)."""
        data = await self.log.get_value(self.key(response_id))
        return None if data is None else self._read(response_id, data)[0]

    async def take(self, response_id: str) -> PendingApproval | None:
        """The pending approval kept under ``response_id``, removed and marked taken (None
        if none, or if it was taken before)."""
        data = await self.log.take_value(self.key(response_id))
        if data is None:
            return None
        pending, left = self._read(response_id, data)
        if not await self.log.claim_value(self.taken_key(response_id), left):
            return None  # written back after it was continued: never twice
        return pending

    def _read(self, response_id: str, data: bytes) -> tuple[PendingApproval, float]:
        """The pending approval of a stored record, checked (its signature, its expiry,
        its response id), and the seconds it has left."""
        record = verified(orjson.loads(data), self._key)
        left = float(record.get("expires_at", 0)) - time.time()
        if left <= 0:
            raise ValueError(f"the paused response {response_id} expired")
        pending = PendingApproval.from_json(record.get("pending"))
        if pending.response_id != response_id:
            raise ValueError(f"the state kept for {response_id} is another response's")
        return pending, left
