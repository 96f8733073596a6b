"""Keys at the gateway: who may ask for what, and the limits each key is held to.

A gateway with keys (``[keys.NAME]`` sections in its configuration: see
:mod:`solon_events.serve.limits_config`) answers only requests that carry one, the way
their SDK sends it (:func:`credential`: ``Authorization: Bearer``, ``x-api-key``,
``x-goog-api-key``). A key is known by the SHA-256 digest of its value
(:func:`key_digest`, ``solon-events keys hash``): the key itself is never stored, never
logged, and is compared in constant time (:meth:`GatewayKeys.find` compares the digest
with every key's, whichever matches). Each key has its
:class:`~solon_events.client.limiter.Limiter` (counted under ``key:NAME``, in the process
or in the configuration's Redis, so that every replica counts against the same limits)
and may be held to some models (:meth:`GatewayKey.allows`).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable, Mapping

import attrs

from ..client.limiter import Limiter

__all__ = ["GatewayKey", "GatewayKeys", "credential", "key_digest"]


def key_digest(key: str) -> str:
    """The SHA-256 digest of ``key`` (UTF-8), in hex: what ``key_sha256`` holds."""
    return hashlib.sha256(key.encode()).hexdigest()


def credential(headers: Mapping[str, str]) -> str | None:
    """The key a request carries, the way its SDK sends it: ``Authorization: Bearer``
    (OpenAI's, Cohere's, Ollama's and our own clients), ``x-api-key`` (Anthropic's),
    ``x-goog-api-key`` (google-genai's); None when it carries none."""
    scheme, _, given = headers.get("Authorization", "").partition(" ")
    if scheme.lower() == "bearer" and given.strip():
        return given.strip()
    for name in ("x-api-key", "x-goog-api-key"):
        value = headers.get(name)
        if value:
            return value.strip()
    return None


@attrs.frozen(eq=False)
class GatewayKey:
    """One key: its ``name`` (the section's), its ``digest`` (SHA-256, raw bytes), the
    ``models`` it may ask for (None: every one) and its ``limiter``."""

    name: str
    digest: bytes = attrs.field(repr=False)
    models: frozenset[str] | None
    limiter: Limiter

    def allows(self, model: str) -> bool:
        """Whether the key may ask for ``model`` (a name the gateway serves)."""
        return self.models is None or model in self.models


class GatewayKeys:
    """The keys of a gateway (none: every request is answered, as without keys)."""

    def __init__(self, keys: Iterable[GatewayKey] = ()) -> None:
        self.keys: tuple[GatewayKey, ...] = tuple(keys)
        digests = [key.digest for key in self.keys]
        if len(set(digests)) != len(digests):
            raise ValueError("two keys have the same digest")

    def __bool__(self) -> bool:
        return bool(self.keys)

    def __len__(self) -> int:
        return len(self.keys)

    def __repr__(self) -> str:
        return f"GatewayKeys({[key.name for key in self.keys]!r})"

    def find(self, given: str | None) -> GatewayKey | None:
        """The key whose digest is ``given``'s (None: no such key, or nothing given),
        compared with every key's in constant time."""
        if given is None:
            return None
        digest = hashlib.sha256(given.encode()).digest()
        found = None
        for key in self.keys:  # every one, whichever matches
            if hmac.compare_digest(digest, key.digest):
                found = key
        return found

    def get(self, name: str) -> GatewayKey | None:
        """The key named ``name``."""
        for key in self.keys:
            if key.name == name:
                return key
        return None

    def close(self) -> None:
        """Close the keys' limiters (the stores they made)."""
        for key in self.keys:
            key.limiter.close()
