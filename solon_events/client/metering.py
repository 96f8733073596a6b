"""Metering: each request's attempt as a :class:`SpendRecord`, and a limiter's
reservation held and settled around it.

A ChatModel's response is *metered* when its model has a
:class:`~solon_events.client.limiter.Limiter` (``ChatModel(..., limiter=...)``) or its
prompt has an ``on_attempt`` callback (:meth:`~solon_events.ChatPrompt.on_attempt`; a
group's prompt passes its callbacks to each member's attempt). Then:

- before the request, the limiter reserves its estimate (or the response fails at once,
  RESPONSE_START then an ERROR event, with a
  :class:`~solon_events.client.limits.LimitExceededError`: a router moves on to its next
  deployment as it does for a provider's 429);
- as it streams, the time to its first answer event is taken (and with
  ``Limits(overrun="stop")``, its output is counted: past its reservation it reserves
  more, and is stopped when the limit refuses);
- when it ends, however it ended (completed, failed, aborted by the provider, cancelled:
  a hedge's loser, a client gone), its usage (the provider's count, else the estimate
  marked ``estimated``) is charged to the reservation, which is released, and each
  ``on_attempt`` callback gets its :class:`SpendRecord`.

:func:`watch_overrun` does the counting of a response's output for any reservation (the
gateway's, held for a key across every attempt of a response).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import attrs
import orjson
from reactivex import Observable, abc
from reactivex import create as rx_create
from reactivex.disposable import Disposable

from ..core.attempts import NO_ANSWER_YET
from ..core.session import new_response_id
from ..event_model.events import EVENT_TYPES, ChatEvent, framing_event
from ..event_model.pricing import Cost, ModelPrice
from ..event_model.results import Usage, UsageReport
from ..support.async_iterators import aclose
from .estimate import token_counter
from .limiter import EXTENSION, Reservation, nanos_of
from .limits import LimitExceededError

if TYPE_CHECKING:
    from .model import ChatModel
    from .prompt import ChatPrompt

__all__ = [
    "SpendRecord",
    "deployment_id",
    "metered_astream",
    "metered_stream",
    "price_usage",
    "usage_fields",
    "watch_overrun",
]

_log = logging.getLogger(__name__)

_COUNTED = frozenset(
    {
        EVENT_TYPES.TEXT_DELTA,
        EVENT_TYPES.THINKING_DELTA,
        EVENT_TYPES.REFUSAL_DELTA,
        EVENT_TYPES.TOOL_CALL_ARGS_DELTA,
    }
)


@attrs.frozen(kw_only=True)
class SpendRecord:
    """One attempt of a request, as the spend log keeps it.

    ``time``: when it started (Unix time); ``key``: the gateway key's name (None outside
    a gateway, or without keys); ``model``: the model asked for (the name a gateway
    serves, else the upstream model's); ``deployment``: the upstream that was asked
    (:func:`deployment_id`: its dialect, endpoint and model); ``dialect``; ``usage``: the
    provider's count, else an estimate (``usage.estimated``; None when nothing was billed:
    a request refused with an error status); ``cost``: its price (None when unpriced);
    ``outcome``: ``"completed"``, ``"failed"``, ``"aborted"`` or ``"cancelled"``;
    ``error``: the failure's class (and HTTP status); ``ttfe``: the seconds to its first
    answer event (None: none came); ``duration``: seconds; ``response_id``: the
    response's id (every attempt of one response shares it); ``cached``: answered from
    a cache (never counted as spend).
    """

    time: float
    model: str
    deployment: str
    dialect: str
    outcome: str
    duration: float
    key: str | None = None
    usage: Usage | None = None
    cost: Cost | None = None
    error: str | None = None
    ttfe: float | None = None
    response_id: str | None = None
    cached: bool = False

    @property
    def tokens(self) -> int:
        """The tokens it is charged (0 for a cached answer)."""
        if self.cached or self.usage is None:
            return 0
        return self.usage.total_tokens

    @property
    def nanos(self) -> int:
        """The spend it is charged, in billionths of a dollar (0: unpriced, or cached)."""
        if self.cached or self.cost is None:
            return 0
        return nanos_of(self.cost.total)

    def to_json(self) -> dict[str, Any]:
        """The record as a JSON object (a line of the spend log)."""
        return {
            "time": round(self.time, 6),
            "key": self.key,
            "model": self.model,
            "deployment": self.deployment,
            "dialect": self.dialect,
            "outcome": self.outcome,
            "error": self.error,
            "usage": usage_fields(self.usage),
            "cost_usd": _decimal_text(self.cost.total) if self.cost is not None else None,
            "ttfe": None if self.ttfe is None else round(self.ttfe, 6),
            "duration": round(self.duration, 6),
            "response_id": self.response_id,
            "cached": self.cached,
        }

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> SpendRecord:
        """A record read back from :meth:`to_json`'s object (``ValueError`` when it is not
        one)."""
        try:
            usage = value.get("usage")
            cost = value.get("cost_usd")
            return cls(
                time=float(value["time"]),
                key=value.get("key"),
                model=str(value["model"]),
                deployment=str(value.get("deployment", "")),
                dialect=str(value.get("dialect", "")),
                outcome=str(value.get("outcome", "")),
                error=value.get("error"),
                usage=_usage_from(usage) if usage is not None else None,
                cost=Cost(total=Decimal(str(cost))) if cost is not None else None,
                ttfe=value.get("ttfe"),
                duration=float(value.get("duration", 0.0)),
                response_id=value.get("response_id"),
                cached=bool(value.get("cached", False)),
            )
        except (KeyError, TypeError, ValueError, ArithmeticError) as error:
            raise ValueError(f"not a spend record: {error}") from None

    def to_bytes(self) -> bytes:
        """The record as one JSON line (with its newline)."""
        return orjson.dumps(self.to_json(), option=orjson.OPT_APPEND_NEWLINE)


def _decimal_text(amount: Decimal | None) -> str | None:
    if amount is None:
        return None
    return format(amount.normalize(), "f") if amount else "0"


def usage_fields(usage: Usage | None) -> dict[str, Any] | None:
    """A usage as the spend log writes it: ``input_tokens``, ``output_tokens``,
    ``total_tokens``, ``thinking_tokens``, ``cache_read_tokens``, ``cache_write_tokens``,
    ``estimated``."""
    if usage is None:
        return None
    return {
        "input_tokens": usage.prompt_tokens,
        "output_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
        "thinking_tokens": usage.thinking_tokens,
        "cache_read_tokens": usage.cache_read_input_tokens,
        "cache_write_tokens": usage.cache_creation_input_tokens,
        "estimated": usage.estimated,
    }


def _usage_from(fields: Mapping[str, Any]) -> Usage:
    return Usage(
        prompt_tokens=int(fields.get("input_tokens", 0)),
        completion_tokens=int(fields.get("output_tokens", 0)),
        total_tokens=int(fields.get("total_tokens", 0)),
        thinking_tokens=int(fields.get("thinking_tokens", 0)),
        cache_read_input_tokens=int(fields.get("cache_read_tokens", 0)),
        cache_creation_input_tokens=int(fields.get("cache_write_tokens", 0)),
        estimated=bool(fields.get("estimated", False)),
    )


def deployment_id(model: ChatModel) -> str:
    """Where ``model`` sends its requests, named the same in every process (a router's
    deployment's state is kept under it; the spend log's records say it): its dialect,
    its endpoint (scheme, host, port and path: no user info, no query) and its model,
    e.g. ``openai:http://127.0.0.1:8000/v1/chat/completions#gpt-4o-mini``."""
    url = urlsplit(model.api_url)
    port = f":{url.port}" if url.port else ""
    return f"{model.dialect.name}:{url.scheme}://{url.hostname}{port}{url.path}#{model.model}"


@functools.lru_cache(maxsize=512)
def _genai_priced(model: str, dialect: str, api_url: str) -> bool:
    """Whether genai-prices has a price for ``model`` (asked once per model)."""
    from ..event_model.pricing import price

    try:
        return price(Usage(prompt_tokens=1), model, dialect, api_url=api_url).known
    except Exception:  # the extra is missing, or genai-prices failed
        return False


def price_usage(
    usage: Usage,
    model: str,
    dialect: str,
    api_url: str,
    prices: Mapping[str, ModelPrice] | None = None,
) -> Cost | None:
    """What ``usage`` of ``model`` costs: at its price in ``prices`` when it has one,
    else as genai-prices prices it (the ``cost`` extra), else None."""
    custom = prices.get(model) if prices else None
    if custom is not None:
        return custom.cost(usage, model)
    if not _genai_priced(model, dialect, api_url):
        return None
    from ..event_model.pricing import price

    return price(usage, model, dialect, api_url=api_url)


# --- one ChatModel response, metered


class _Attempt:
    """The meter of one ChatModel response: its report, its first answer, its times."""

    def __init__(self, prompt: ChatPrompt) -> None:
        self.prompt = prompt
        self.report: UsageReport | None = None
        self.started = time.time()
        self._began = time.monotonic()
        self.ttfe: float | None = None

    def reported(self, report: UsageReport) -> None:
        self.report = report

    def seen(self, event: ChatEvent) -> None:
        if self.ttfe is None and event.type not in NO_ANSWER_YET:
            self.ttfe = time.monotonic() - self._began

    def record(self) -> SpendRecord | None:
        report = self.report
        if report is None:
            return None
        model = self.prompt._model
        usage = report.usage
        cost = report.cost
        limiter = model.limiter  # a limiter's spend is priced (its prices first)
        priced = limiter is not None and (cost is None or model.model in limiter.prices)
        if usage is not None and limiter is not None and priced:
            dialect, url = model.dialect.name, model.api_url
            cost = price_usage(usage, model.model, dialect, url, limiter.prices)
        return SpendRecord(
            time=self.started,
            model=model.model,
            deployment=deployment_id(model),
            dialect=model.dialect.name,
            usage=usage,
            cost=cost,
            outcome=report.outcome,
            error=_error_name(report.error),
            ttfe=self.ttfe,
            duration=time.monotonic() - self._began,
            response_id=report.response_id,
            cached=getattr(report, "cached", None) is not None,  # a cache's answer: billed 0
        )


def _error_name(error: BaseException | None) -> str | None:
    if error is None:
        return None
    status = getattr(error, "status", None)
    name = type(error).__name__
    return f"{name} {status}" if isinstance(status, int) else name


def _estimate_of(prompt: ChatPrompt) -> tuple[int, int, int]:
    """The input and output tokens a model's request reserves, and their spend."""
    model = prompt._model
    limiter = model.limiter
    assert limiter is not None
    input_tokens, output_tokens = limiter.estimate(prompt._plan().request)
    nanos = 0
    if limiter.limits.budget_usd is not None:
        usage = Usage(prompt_tokens=input_tokens, completion_tokens=output_tokens)
        cost = price_usage(usage, model.model, model.dialect.name, model.api_url, limiter.prices)
        nanos = nanos_of(cost.total) if cost is not None else 0
    return input_tokens, output_tokens, nanos


async def metered_astream(
    prompt: ChatPrompt, plain: Callable[[ChatPrompt], AsyncIterator[ChatEvent]]
) -> AsyncIterator[ChatEvent]:
    """``prompt``'s response (``plain(prompt)``, a ChatModel's own), metered (see the
    module's docs)."""
    model = prompt._model
    limiter = model.limiter
    reservation: Reservation | None = None
    input_tokens = 0
    if limiter is not None:
        input_tokens, output_tokens, nanos = _estimate_of(prompt)
        try:
            reservation = await limiter.reserve(input_tokens + output_tokens, nanos)
        except LimitExceededError as error:
            async for event in _refused(prompt, error):
                yield event
            return  # unreachable: _refused raises
    attempt = _Attempt(prompt)
    events = plain(attrs.evolve(prompt, on_usage=(*prompt._on_usage, attempt.reported)))
    if reservation is not None and limiter is not None and limiter.limits.overrun == "stop":
        events = watch_overrun(events, reservation, token_counter(model.model), input_tokens)
    try:
        async for event in events:
            attempt.seen(event)
            yield event
    finally:
        await aclose(events)
        _settle(prompt, attempt, reservation)


def _settle(prompt: ChatPrompt, attempt: _Attempt, reservation: Reservation | None) -> None:
    """Charge the attempt's usage, release the reservation, tell the callbacks."""
    try:
        record = attempt.record()
    except Exception:  # a pricing failure must not lose the release
        _log.exception("metering a response failed")
        record = None
    if reservation is not None:
        if record is not None:
            reservation.charge(record.tokens, record.nanos)
        reservation.release()
    if record is None:
        return
    for callback in prompt._on_attempt:
        try:
            callback(record)
        except Exception:  # after the end: nothing to fail, so it is logged
            _log.exception("an on_attempt callback raised")


async def _refused(prompt: ChatPrompt, error: LimitExceededError) -> AsyncIterator[ChatEvent]:
    """A response refused before its request: RESPONSE_START, ERROR, then ``error``."""
    response_id = prompt._response_id or new_response_id()
    yield framing_event(EVENT_TYPES.RESPONSE_START, 0, response_id)
    yield ChatEvent(EVENT_TYPES.ERROR, str(error), response_id=response_id, error=error)
    raise error


async def watch_overrun(
    events: AsyncIterator[ChatEvent],
    reservation: Reservation,
    count: Callable[[str], int],
    input_tokens: int,
) -> AsyncIterator[ChatEvent]:
    """``events``, with their output counted (``count``: a token counter) against
    ``reservation``: a response whose ``input_tokens``, output so far and earlier
    attempts' charges pass what it reserved reserves :data:`EXTENSION` more tokens (and
    their spend, at the reservation's rate); when the limit refuses, the response ends
    there with an ERROR event carrying a :class:`LimitExceededError` (``stopped``), and
    ``events`` is closed (its request stopped)."""
    output = 0
    try:
        async for event in events:
            if event.type in _COUNTED:
                output += count(event.text or "")
                used = reservation.charged_tokens + input_tokens + output
                while used > reservation.reserved_tokens:
                    if not await _extended(reservation, used - reservation.reserved_tokens):
                        limiter = reservation.limiter
                        error = LimitExceededError(
                            limiter.name, _refusing(limiter), None, stopped=True
                        )
                        yield ChatEvent(
                            EVENT_TYPES.ERROR,
                            str(error),
                            response_id=event.response_id,
                            step=event.step,
                            error=error,
                        )
                        raise error
            yield event
    finally:
        await aclose(events)


async def _extended(reservation: Reservation, needed: int) -> bool:
    """Whether ``reservation`` could reserve more: :data:`EXTENSION` tokens, else the
    ``needed`` ones (close to the limit), with their spend at the reservation's rate."""
    rate = reservation.reserved_nanos / max(1, reservation.reserved_tokens)
    for tokens in (EXTENSION, needed) if needed < EXTENSION else (needed,):
        if await reservation.extend(tokens, round(tokens * rate)):
            return True
    return False


def _refusing(limiter: Any) -> str:
    """The limit that stops a stream past its reservation (the token one, else spend)."""
    limits = limiter.limits
    if limits.tpm is not None:
        return "tpm"
    return "budget_tokens" if limits.budget_tokens is not None else "budget_usd"


def metered_stream(prompt: ChatPrompt) -> Observable[ChatEvent]:
    """:func:`metered_astream` as a cold Observable: run on the model's I/O thread, where
    its events are delivered (as ``stream()`` delivers them)."""
    model = prompt._model

    def subscribe(
        observer: abc.ObserverBase[ChatEvent], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        async def pump() -> None:
            try:
                async for event in prompt._astream_uncached():
                    observer.on_next(event)
            except asyncio.CancelledError:
                raise
            except Exception as error:
                observer.on_error(error)
                return
            observer.on_completed()

        future = model._io.submit(pump())

        def dispose() -> None:
            future.cancel()

        return Disposable(dispose)

    return rx_create(subscribe)
