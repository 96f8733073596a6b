"""A response cache: answers stored once as events, replayed into any stream.

``ChatModel(url, model, cache=True)`` keeps every complete answer in a SQLite file
(:func:`~.stores.default_cache_path`) and answers the same request again from it, with no
request to the provider; ``cache="memory"`` keeps them in the process (LRU, capped),
``cache="redis://HOST:PORT/DB"`` in Redis (shared by processes), ``cache="sqlite:PATH"``
in the file at PATH; a :class:`ResponseCache` sets the time to live, the replay pace and
single flight. A :class:`~solon_events.Router` (any model group) takes ``cache=`` too.

What is the same request: :mod:`.key` (the models asked, the conversation, the tools, the
options that change the answer, the structured answer asked for; never a secret, never
whether the answer is streamed). What is stored: a complete answer only (its events,
timed; :class:`~.answer.AnswerRecorder`); never an error, an abort, a cancelled or cut
stream, an answer cut at the token limit or stopped by a content filter, one paused for
approval, nor one during which a tool ran here (a replay would not run it). What a hit
is: the answer's events with their own response id, a STATUS event
(``sub_type="cache"``) after RESPONSE_START, the usage billed zero and the original kept
apart on ``ChatResponse.cached`` (:class:`~solon_events.CachedAnswer`), the usage report
marked ``cached``. A prompt opts out with ``prompt(..., cache=False)`` (or asks afresh
and stores the new answer with ``cache="refresh"``): :meth:`ChatPrompt.cache
<solon_events.ChatPrompt.cache>`.
"""

from __future__ import annotations

import os
from typing import Any

from .answer import AnswerRecorder, ServedAnswer, StoredAnswer
from .flights import Flight, FlightBoard, FlightGone, FlightLead
from .key import request_key
from .redis_store import RedisCache
from .response_cache import CacheMode, Pace, ResponseCache
from .stores import CacheStore, MemoryCache, SQLiteCache, default_cache_path

__all__ = [
    "AnswerRecorder",
    "CacheMode",
    "CacheStore",
    "Flight",
    "FlightBoard",
    "FlightGone",
    "FlightLead",
    "MemoryCache",
    "Pace",
    "RedisCache",
    "ResponseCache",
    "SQLiteCache",
    "ServedAnswer",
    "StoredAnswer",
    "cache_of",
    "default_cache_path",
    "request_key",
    "store_of",
]


def store_of(spec: str) -> CacheStore:
    """The store a string names: ``"memory"`` (a :class:`MemoryCache`), ``"sqlite"`` (a
    :class:`SQLiteCache` at :func:`default_cache_path`), ``"sqlite:PATH"`` (at PATH),
    ``"redis://HOST:PORT/DB"`` (a :class:`RedisCache`); ``ValueError`` for anything else."""
    if spec == "memory":
        return MemoryCache()
    if spec == "sqlite":
        return SQLiteCache()
    if spec.startswith("sqlite:"):
        path = spec[len("sqlite:") :]
        if not path:
            raise ValueError("sqlite:PATH names the file: sqlite:answers.sqlite3")
        return SQLiteCache(os.path.expanduser(path))
    if spec.startswith(("redis://", "rediss://", "unix://")):
        return RedisCache(spec)
    raise ValueError(
        f"a cache is 'memory', 'sqlite', 'sqlite:PATH' or a redis://HOST:PORT/DB URL, not {spec!r}"
    )


def cache_of(cache: Any) -> tuple[ResponseCache | None, bool]:
    """The :class:`ResponseCache` that a model's ``cache=`` argument means, and whether
    the model made it (and closes it): None or False (none), True (a SQLite file at
    :func:`default_cache_path`), a string (:func:`store_of`), a :class:`CacheStore`, or a
    :class:`ResponseCache` (shared, as it is)."""
    if cache is None or cache is False:
        return None, False
    if isinstance(cache, ResponseCache):
        return cache, False
    if cache is True:
        return ResponseCache(SQLiteCache()), True
    if isinstance(cache, str):
        return ResponseCache(store_of(cache)), True
    if isinstance(cache, CacheStore):
        return ResponseCache(cache), False
    raise TypeError(
        "cache is True, False, 'memory', 'sqlite:PATH', a redis:// URL, a CacheStore or a "
        f"ResponseCache, not {type(cache).__name__}"
    )
