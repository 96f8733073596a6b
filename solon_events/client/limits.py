"""What a :class:`~solon_events.client.limiter.Limiter` holds requests to: :class:`Limits`,
the windows its budgets are counted in, and the error of a request it refused.

Requests per minute (``rpm``) and tokens per minute (``tpm``) are counted over a sliding
window: the 60 whole seconds up to now (a request made at 12:00:30.7 counts until
12:01:30). Budgets (``budget_usd``, ``budget_tokens``) are counted per calendar
``window`` in UTC: the current minute, hour, day or month, or the ``total`` of all time;
a new window starts from nothing. ``max_parallel`` caps the requests in flight.

Tokens are input and output together (``Usage.total_tokens``); spend is in US dollars,
counted in billionths of a dollar (:data:`NANOS_PER_USD`) so that sums are exact.
"""

from __future__ import annotations

import datetime
import math
from typing import Literal, get_args

import attrs

from ..event_model.errors import ChatHttpError

__all__ = [
    "LIMIT_NAMES",
    "NANOS_PER_USD",
    "OUTPUT_ALLOWANCE",
    "WINDOWS",
    "LimitExceededError",
    "Limits",
    "Overrun",
    "Window",
    "period_of",
]

Window = Literal["minute", "hour", "day", "month", "total"]
"""The calendar window a budget is counted in (UTC); ``total``: all time."""

WINDOWS: tuple[Window, ...] = get_args(Window)
"""Every window's name."""

Overrun = Literal["finish", "stop"]
"""What a stream that runs past its reservation does when no more can be reserved:
finish and be charged (``"finish"``), or be stopped at the limit (``"stop"``)."""

LIMIT_NAMES = ("max_parallel", "rpm", "tpm", "budget_tokens", "budget_usd")
"""The limits' names, as :attr:`LimitExceededError.limit` gives them."""

NANOS_PER_USD = 1_000_000_000
"""Spend is counted in billionths of a US dollar."""

OUTPUT_ALLOWANCE = 4096
"""The output tokens reserved for a request that names no maximum of its own."""


def _optional_count(
    _instance: object, attribute: attrs.Attribute[int | None], value: object
) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{attribute.name} must be a whole number, 0 or more, or None")


def _optional_amount(
    _instance: object, attribute: attrs.Attribute[float | None], value: object
) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise ValueError(f"{attribute.name} must be a number, 0 or more, or None")
    if not math.isfinite(value):
        raise ValueError(f"{attribute.name} must be a finite number")


def _one_of(*choices: str):  # type: ignore[no-untyped-def]
    def check(_instance: object, attribute: attrs.Attribute[str], value: object) -> None:
        if value not in choices:
            raise ValueError(f"{attribute.name} must be one of {', '.join(choices)}, not {value!r}")

    return check


@attrs.frozen(kw_only=True)
class Limits:
    """The limits a :class:`~solon_events.client.limiter.Limiter` holds requests to (None:
    no such limit).

    ``rpm``: requests per minute; ``tpm``: tokens (input and output) per minute;
    ``max_parallel``: requests in flight; ``budget_usd``: US dollars spent per ``window``
    (prices from the ``cost`` extra, or the limiter's own); ``budget_tokens``: tokens per
    ``window`` (``"minute"``, ``"hour"``, ``"day"``, ``"month"``, ``"total"``; default
    ``"month"``). ``output_allowance``: the output tokens reserved for a request that names
    no maximum (``max_tokens`` and its kin). ``overrun``: what a stream that runs past its
    reservation does when no more can be reserved: ``"finish"`` (default: it goes on, and
    is charged what it used) or ``"stop"`` (it is stopped at the limit with an ERROR
    event carrying a :class:`LimitExceededError`).
    """

    rpm: int | None = attrs.field(default=None, validator=_optional_count)
    tpm: int | None = attrs.field(default=None, validator=_optional_count)
    max_parallel: int | None = attrs.field(default=None, validator=_optional_count)
    budget_usd: float | None = attrs.field(default=None, validator=_optional_amount)
    budget_tokens: int | None = attrs.field(default=None, validator=_optional_count)
    window: Window = attrs.field(default="month", validator=_one_of(*WINDOWS))
    output_allowance: int = attrs.field(default=OUTPUT_ALLOWANCE)
    overrun: Overrun = attrs.field(default="finish", validator=_one_of("finish", "stop"))

    @output_allowance.validator
    def _check_allowance(self, attribute: attrs.Attribute[int], value: object) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError("output_allowance must be a whole number of tokens, 0 or more")

    @property
    def budget_nanos(self) -> int | None:
        """``budget_usd`` in billionths of a dollar (None: no such budget)."""
        if self.budget_usd is None:
            return None
        return round(self.budget_usd * NANOS_PER_USD)

    @property
    def limits_tokens(self) -> bool:
        """Whether any limit counts tokens (a reservation must estimate them)."""
        return self.tpm is not None or self.budget_tokens is not None

    def describe(self) -> str:
        """The limits in words: ``60 requests/min, 100000 tokens/min, 25.0 USD/month``."""
        per = " in total" if self.window == "total" else f"/{self.window}"
        said = (
            (self.rpm, " requests/min"),
            (self.tpm, " tokens/min"),
            (self.max_parallel, " in flight"),
            (self.budget_usd, " USD" + per),
            (self.budget_tokens, " tokens" + per),
        )
        return ", ".join(f"{value}{unit}" for value, unit in said if value is not None) or (
            "no limits"
        )


_WHAT = {
    "max_parallel": "requests in flight",
    "rpm": "requests per minute",
    "tpm": "tokens per minute",
    "budget_tokens": "token budget",
    "budget_usd": "spend budget (USD)",
}


class LimitExceededError(ChatHttpError):
    """A request a :class:`~solon_events.client.limiter.Limiter` refused (before it was
    sent), or a stream it stopped at the limit (``Limits(overrun="stop")``): HTTP 429 as a
    provider's rate limit reads, so that routers and fallbacks treat it as one.

    ``limit``: which limit (one of :data:`LIMIT_NAMES`); ``scope``: the limiter's name;
    ``retry_after``: the seconds until the request could pass (None when waiting does not
    help within the window: a request larger than the limit itself, a ``total`` budget
    spent).
    """

    def __init__(
        self, scope: str, limit: str, retry_after: float | None, *, stopped: bool = False
    ) -> None:
        what = _WHAT.get(limit, limit)
        if stopped:
            said = f"{scope}: stopped at the {what} limit"
        elif retry_after is None:
            said = f"{scope}: over the {what} limit"
        else:
            said = f"{scope}: over the {what} limit; retry after {retry_after:.1f} s"
        super().__init__(
            429,
            said,
            retry_after=retry_after,
            provider_error={"type": "rate_limit_error", "limit": limit},
        )
        self.scope = scope
        self.limit = limit
        self.stopped = stopped


def period_of(window: Window, now: float) -> tuple[str, float | None]:
    """The calendar period of ``window`` that holds Unix time ``now`` (UTC): its name
    (``"month:2026-12"``, ``"day:2026-12-06"``, ``"total"``) and when it ends (None for
    ``total``)."""
    if window == "total":
        return "total", None
    moment = datetime.datetime.fromtimestamp(now, datetime.timezone.utc)
    if window == "minute":
        start = moment.replace(second=0, microsecond=0)
        end = start + datetime.timedelta(minutes=1)
        name = start.strftime("%Y-%m-%dT%H:%M")
    elif window == "hour":
        start = moment.replace(minute=0, second=0, microsecond=0)
        end = start + datetime.timedelta(hours=1)
        name = start.strftime("%Y-%m-%dT%H")
    elif window == "day":
        start = moment.replace(hour=0, minute=0, second=0, microsecond=0)
        end = start + datetime.timedelta(days=1)
        name = start.strftime("%Y-%m-%d")
    elif window == "month":
        start = moment.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
        end = (
            start.replace(year=start.year + 1, month=1)
            if start.month == 12
            else (start.replace(month=start.month + 1))
        )
        name = start.strftime("%Y-%m")
    else:
        raise ValueError(f"window must be one of {', '.join(WINDOWS)}, not {window!r}")
    return f"{window}:{name}", end.timestamp()
