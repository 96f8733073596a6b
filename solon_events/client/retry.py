"""When a failed request is tried again, and after how long (sans-I/O).

Connection errors and the statuses in :data:`RETRYABLE_STATUSES` are retried, at most
``max_retries`` times, and only while nothing of the response has been delivered (the
:class:`~solon_events.client.stream_reader.StreamReader` checks that). The wait is what the
provider asked for (``retry-after-ms``, or ``Retry-After`` in seconds or as an HTTP date),
capped at ``max_retry_after``; else exponential backoff with full jitter: a random wait
between 0 and ``initial_delay * 2 ** (retry - 1)``, capped at ``max_delay``.
"""

from __future__ import annotations

import email.utils
import math
import random
import time
from collections.abc import Callable, Mapping

import attrs

from ..event_model.errors import ChatConnectionError, ChatHttpError

__all__ = ["RETRYABLE_STATUSES", "RetryPolicy", "retry_after_seconds"]

RETRYABLE_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})
"""The HTTP statuses worth another try: timeout, conflict, rate limit, server errors."""


@attrs.frozen(kw_only=True)
class RetryPolicy:
    """How many times a request is retried and how long each wait is (seconds)."""

    max_retries: int = attrs.field(default=2, validator=attrs.validators.ge(0))
    initial_delay: float = attrs.field(default=0.5, validator=attrs.validators.ge(0))
    max_delay: float = attrs.field(default=8.0, validator=attrs.validators.ge(0))
    max_retry_after: float = attrs.field(default=60.0, validator=attrs.validators.ge(0))

    def retries(self, error: BaseException, retries_done: int) -> bool:
        """Whether ``error`` is worth retry number ``retries_done + 1``."""
        if retries_done >= self.max_retries:
            return False
        if isinstance(error, ChatHttpError):
            return error.status in RETRYABLE_STATUSES
        return isinstance(error, ChatConnectionError)

    def delay(
        self,
        retry: int,
        retry_after: float | None = None,
        jitter: Callable[[], float] = random.random,
    ) -> float:
        """The wait before retry number ``retry`` (1, 2, ...): ``retry_after`` when the
        provider gave one (capped), else a full-jitter exponential backoff."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_retry_after)
        ceiling = min(self.max_delay, self.initial_delay * 2.0 ** max(retry - 1, 0))
        return jitter() * ceiling


def retry_after_seconds(
    headers: Mapping[str, str], now: Callable[[], float] = time.time
) -> float | None:
    """The wait a response asks for, in seconds: ``retry-after-ms``, else ``Retry-After``
    as seconds or as an HTTP date (a date in the past is 0); None when absent or unreadable.

    ``headers`` should be case-insensitive (as an
    :class:`~solon_events.client.transport.HttpResponse`'s
    are); a plain dict is searched ignoring case.
    """
    milliseconds = _seconds(_header(headers, "retry-after-ms"))
    if milliseconds is not None:
        return milliseconds / 1000.0
    value = _header(headers, "retry-after")
    if value is None:
        return None
    seconds = _seconds(value)
    if seconds is not None:
        return seconds
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(when.timestamp() - now(), 0.0)


def _seconds(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def _header(headers: Mapping[str, str], name: str) -> str | None:
    value = headers.get(name)
    if value is not None:
        return value
    for key, found in headers.items():
        if key.lower() == name:
            return found
    return None
