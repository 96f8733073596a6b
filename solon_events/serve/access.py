"""Who may ask the gateway for what, what each may spend, and the record of what was
spent: :class:`Access`, built from the configuration's ``[keys.NAME]``, ``[spend_log]``
and ``[prices.MODEL]`` sections (:func:`build_access`).

For each request: :meth:`Access.authenticate` finds its key (HTTP 401 in the protocol's
shape when keys are configured and it carries none, or one the gateway does not know);
:meth:`Access.admit` checks the key may ask for the model (403) and reserves the
request's estimate from the key's limiter (429 with ``Retry-After`` when refused). The
:class:`Admission` then charges every attempt of the response to the key (its exact
usage: the provider's count, else the estimate), writes each attempt to the spend log,
stops a stream at the limit when the key says ``overrun = "stop"``, and releases the
reservation when the response ends.
"""

from __future__ import annotations

import logging
import math
import weakref
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from ..client.estimate import token_counter
from ..client.limit_store import LimitStore, MemoryLimitStore, RedisLimitStore
from ..client.limiter import Limiter, Reservation, nanos_of
from ..client.limits import LimitExceededError
from ..client.metering import SpendRecord, price_usage, watch_overrun
from ..client.model import ChatModel
from ..client.spend_log import JsonLinesSpendLog, OtelSpendLog, RedisSpendLog, SpendLog
from ..event_model.events import ChatEvent
from ..event_model.messages import ChatRequest
from ..event_model.pricing import ModelPrice
from ..event_model.results import Usage
from ..support.async_iterators import ending_with
from ._http_error import HttpError
from .keys import GatewayKey, GatewayKeys, credential

if TYPE_CHECKING:
    from ..client.prompt import ChatPrompt
    from ..client.routing import ModelGroup
    from .config import GatewayConfig
    from .limits_config import SpendLogConfig

__all__ = ["Access", "Admission", "build_access", "request_of", "retire"]

_log = logging.getLogger("solon_events.serve")

_MILLION = 1_000_000


class SpendLogs(SpendLog):
    """Several spend logs as one (a file and OpenTelemetry, say)."""

    def __init__(self, logs: list[SpendLog]) -> None:
        super().__init__()
        self.logs = logs

    def __repr__(self) -> str:
        return f"SpendLogs({self.logs!r})"

    def write(self, record: SpendRecord) -> None:
        for log in self.logs:
            log.write(record)

    def flush(self, timeout: float | None = None) -> bool:
        return all([log.flush(timeout) for log in self.logs])

    def close(self) -> None:
        for log in self.logs:
            log.close()


class Access:
    """The gateway's keys (:class:`~solon_events.serve.keys.GatewayKeys`; none: every
    request is answered), its ``spend_log`` (or None) and the ``prices`` of upstream models
    of its own (by model name). ``store`` is where the keys' counts are kept (closed with
    the access when ``own_store``)."""

    def __init__(
        self,
        keys: GatewayKeys | None = None,
        *,
        spend_log: SpendLog | None = None,
        prices: Mapping[str, ModelPrice] | None = None,
        store: LimitStore | None = None,
        own_store: bool = False,
        spend_config: SpendLogConfig | None = None,
    ) -> None:
        self.keys = keys if keys is not None else GatewayKeys()
        self.spend_log = spend_log
        self.prices: Mapping[str, ModelPrice] = dict(prices or {})
        self.store = store
        self._own_store = own_store
        self._spend_config = spend_config
        self._rates: dict[str, tuple[float, float] | None] = {}
        self._unpriced: set[str] = set()

    def __repr__(self) -> str:
        return f"Access({self.keys!r}, spend_log={self.spend_log!r})"

    @property
    def active(self) -> bool:
        """Whether requests are admitted here at all (keys, or a spend log)."""
        return bool(self.keys) or self.spend_log is not None

    def authenticate(self, headers: Mapping[str, str]) -> GatewayKey | None:
        """The key a request carries (None when no key is configured); HTTP 401 when keys
        are configured and it carries none, or one that is not known. The key given is
        never logged nor said back."""
        if not self.keys:
            return None
        found = self.keys.find(credential(headers))
        if found is None:
            raise HttpError(
                401,
                "a valid key is required: send the key you were given as your SDK does "
                "(Authorization: Bearer, x-api-key or x-goog-api-key)",
                {"WWW-Authenticate": "Bearer"},
            )
        return found

    async def admit(
        self,
        key: GatewayKey | None,
        name: str,
        model: ChatModel | ModelGroup,
        request: ChatRequest,
        max_output: int | None = None,
    ) -> Admission:
        """A request of ``key`` for the model served as ``name``, admitted: 403 when the
        key may not ask for it, 429 (with ``Retry-After``) when its limits refuse the
        estimate of ``request`` (``max_output``: the output tokens it asks for at most)."""
        if key is None:
            return Admission(self, None, name, None, 0, model)
        if not key.allows(name):
            raise HttpError(403, f"this key may not use the model {name!r}")
        limiter = key.limiter
        input_tokens, output_tokens = limiter.estimate(request, max_output)
        nanos = 0
        if limiter.limits.budget_usd is not None:
            nanos = self._nanos(model, input_tokens, output_tokens)
        try:
            reservation = await limiter.reserve(input_tokens + output_tokens, nanos)
        except LimitExceededError as error:
            headers = {}
            if error.retry_after is not None:
                headers["Retry-After"] = str(max(1, math.ceil(error.retry_after)))
            raise HttpError(429, error.provider_message or str(error), headers) from None
        return Admission(self, key, name, reservation, input_tokens, model)

    def _nanos(self, model: ChatModel | ModelGroup, input_tokens: int, output: int) -> int:
        """The most a request of ``input_tokens`` and ``output`` tokens may cost on any
        deployment of ``model``."""
        most = 0.0
        for leaf in _leaves(model):
            rates = self._rate(leaf)
            if rates is not None:
                most = max(most, input_tokens * rates[0] + output * rates[1])
        return math.ceil(most)

    def _rate(self, leaf: ChatModel) -> tuple[float, float] | None:
        """A deployment's price per input and per output token, in billionths of a dollar
        (None: it has none)."""
        id = f"{leaf.dialect.name}:{leaf.api_url}#{leaf.model}"
        if id not in self._rates:
            rates = []
            for usage in (Usage(prompt_tokens=_MILLION), Usage(completion_tokens=_MILLION)):
                cost = price_usage(usage, leaf.model, leaf.dialect.name, leaf.api_url, self.prices)
                rates.append(None if cost is None else nanos_of(cost.total) / _MILLION)
            self._rates[id] = None if None in rates else (rates[0], rates[1])  # type: ignore[assignment]
            if self._rates[id] is None and leaf.model not in self._unpriced:
                self._unpriced.add(leaf.model)
                _log.warning(
                    "no price for the model %s: its spend counts 0 USD against budgets "
                    "(give it one in [prices.%s])",
                    leaf.model,
                    leaf.model,
                )
        return self._rates[id]

    def price(self, record: SpendRecord) -> SpendRecord:
        """``record`` priced: the configuration's price of its upstream model, else
        genai-prices' (the cost extra), else as it was."""
        usage = record.usage
        if usage is None:
            return record
        dialect, _, rest = record.deployment.partition(":")
        url, _, model = rest.rpartition("#")
        cost = price_usage(usage, model, dialect, url, self.prices)
        return attrs.evolve(record, cost=cost) if cost is not None else record

    def close(self) -> None:
        """Write what the spend log holds and close it; close the store the access made."""
        if self.spend_log is not None:
            self.spend_log.close()
        if self._own_store and self.store is not None:
            self.store.close()


def request_of(prompt: ChatPrompt, name: str) -> ChatRequest:
    """What ``prompt`` asks (its messages, tools and options), as its estimate counts it."""
    from ..tools import ToolSet

    tools = ToolSet(prompt._tools).specs() + prompt._client_tools
    return ChatRequest(model=name, messages=prompt._messages, tools=tools, options=prompt._options)


def _leaves(model: ChatModel | ModelGroup) -> tuple[ChatModel, ...]:
    return (model,) if isinstance(model, ChatModel) else model.leaves()


@attrs.define(eq=False)
class Admission:
    """One admitted request (see :class:`Access`): :meth:`prompt` makes its attempts
    charged and logged, :meth:`events` watches and ends its response."""

    access: Access
    key: GatewayKey | None
    name: str
    reservation: Reservation | None
    _input_tokens: int
    _model: ChatModel | ModelGroup

    def prompt(self, prompt: ChatPrompt) -> ChatPrompt:
        """``prompt`` whose every attempt is charged to the key and written to the spend
        log (unchanged when there is neither)."""
        if self.reservation is None and self.access.spend_log is None:
            return prompt
        return prompt.on_attempt(self._attempted)

    def _attempted(self, record: SpendRecord) -> None:
        record = self.access.price(record)
        record = attrs.evolve(
            record, key=self.key.name if self.key is not None else None, model=self.name
        )
        if self.reservation is not None:
            self.reservation.charge(record.tokens, record.nanos)
        log = self.access.spend_log
        if log is not None:
            log.write(record)

    def events(self, events: AsyncIterator[ChatEvent]) -> AsyncIterator[ChatEvent]:
        """``events``, stopped at the key's limit when it says so; the reservation is
        released when they end (or are closed, or dropped unread)."""
        reservation = self.reservation
        if reservation is None:
            return events
        limits = reservation.limiter.limits
        if limits.overrun == "stop":
            counter = token_counter(_leaves(self._model)[0].model)
            events = watch_overrun(events, reservation, counter, self._input_tokens)
        ending = ending_with(events, reservation.release)
        weakref.finalize(ending, reservation.release)  # dropped before it started
        return ending

    def release(self) -> None:
        """Release the reservation now (a request that ended before its response)."""
        if self.reservation is not None:
            self.reservation.release()


def build_access(config: GatewayConfig, previous: Access | None = None) -> Access:
    """The access of ``config``: its keys, each with a limiter counting under
    ``key:NAME`` in the configuration's Redis (else in the process), its spend log and
    its prices. The store and the spend log of ``previous`` (the access being replaced)
    are kept when ``config`` keeps them (counts go on across a reload)."""
    from .limits_config import prices_of

    store: LimitStore
    old = previous.store if previous is not None else None
    kept = config.limits
    if config.redis is None:
        store = old if isinstance(old, MemoryLimitStore) else MemoryLimitStore()
    elif isinstance(old, RedisLimitStore) and old.url == config.redis:
        store = old  # [limits] changes on a restart: requests in flight hold this store
    else:
        store = RedisLimitStore(config.redis, lease=kept.lease, unavailable=kept.unavailable)
    keys = GatewayKeys(
        GatewayKey(
            name=name,
            digest=bytes.fromhex(section.key_sha256),
            models=frozenset(section.models) if section.models is not None else None,
            limiter=Limiter(section.limits, name=f"key:{name}", store=store),
        )
        for name, section in config.keys.items()
    )
    same_log = previous is not None and previous._spend_config == config.spend_log
    spend_log = previous.spend_log if same_log and previous is not None else None
    if spend_log is None and config.spend_log is not None:
        spend_log = _spend_log(config.spend_log, config.redis)
    return Access(
        keys,
        spend_log=spend_log,
        prices=prices_of(config),
        store=store,
        own_store=True,
        spend_config=config.spend_log,
    )


def _spend_log(section: SpendLogConfig, redis: str | None) -> SpendLog | None:
    options: dict[str, Any] = {"batch": section.batch, "interval": section.interval}
    logs: list[SpendLog] = []
    if section.path is not None:
        logs.append(JsonLinesSpendLog(section.path, **options))
    if section.redis_stream is not None and redis is not None:
        logs.append(RedisSpendLog(redis, section.redis_stream, **options))
    if section.otel:
        logs.append(OtelSpendLog(**options))
    if not logs:
        return None
    return logs[0] if len(logs) == 1 else SpendLogs(logs)


def retire(old: Access, new: Access) -> None:
    """Close what ``old`` holds that ``new`` does not keep (a spend log replaced)."""
    if old.spend_log is not None and old.spend_log is not new.spend_log:
        old.spend_log.close()
    if old.store is not None and old.store is not new.store and old._own_store:
        old.store.close()
