"""The gateway configuration's sections for keys, limits and spend (read by
:mod:`solon_events.serve.config`):

.. code-block:: toml

    [keys.team-a]
    key_sha256 = "9f86d08..."      # solon-events keys hash < key.txt
    models = ["fast"]              # omitted: every model
    rpm = 60                       # requests per minute
    tpm = 100000                   # tokens per minute (input + output)
    max_parallel = 8               # requests in flight
    budget_usd = 25.0              # spend per window (the cost extra, or [prices])
    budget_tokens = 2000000        # tokens per window
    window = "month"               # minute | hour | day | month | total
    output_allowance = 4096        # output tokens reserved when a request names no maximum
    overrun = "finish"             # a stream past its reservation: finish | stop

    [spend_log]
    path = "spend.jsonl"           # a JSON-lines file (several replicas may share it)
    redis_stream = "solon-events:spend"   # or a stream in the top-level redis
    otel = true                    # and OpenTelemetry logs (the otel extra)

    [prices.my-model]              # USD per million tokens, for models genai-prices lacks
    input = 0.15
    output = 0.60

    [limits]
    lease = 60                     # seconds a dead replica's requests still count in flight
    unavailable = "allow"          # Redis down: allow | refuse

:class:`KeyConfig`, :class:`SpendLogConfig`, :class:`PriceConfig` and
:class:`LimitsConfig` are the sections;
:func:`check_access` checks what spans them (a key's models are served, no two keys share
a digest, a Redis stream needs the top-level ``redis``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

from ..client.limits import OUTPUT_ALLOWANCE, WINDOWS, Limits
from ..event_model.pricing import ModelPrice
from .config_reading import Where, flag, one_of, setting, text

if TYPE_CHECKING:
    from .config import GatewayConfig

__all__ = ["KeyConfig", "LimitsConfig", "PriceConfig", "SpendLogConfig", "check_access"]

_DIGEST = re.compile(r"[0-9a-f]{64}")
_V = TypeVar("_V", bound=attrs.AttrsInstance)


def count(value: Any, where: Where) -> int:
    """A whole number, 0 or more."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise where.error(f"must be a whole number, 0 or more, not {value!r}")
    return value


def amount(value: Any, where: Where) -> float:
    """A number, 0 or more."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1e15:
        raise where.error(f"must be a number, 0 or more, not {value!r}")
    return float(value)


def digest(value: Any, where: Where) -> str:
    """A SHA-256 digest in hex (``solon-events keys hash``)."""
    if not isinstance(value, str) or not _DIGEST.fullmatch(value.lower()):
        raise where.error(
            "must be the SHA-256 digest of the key, 64 hex digits (solon-events keys hash "
            "prints it): the key itself is never written in the file"
        )
    return value.lower()


def names(value: Any, where: Where) -> tuple[str, ...]:
    """A list of non-empty strings."""
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise where.error("must be a list of model names")
    return tuple(value)


def _made_of(value_class: type[_V], section: object) -> _V:
    """A ``value_class`` of ``section``'s settings: one of each of its fields' names."""
    fields = attrs.fields(value_class)
    return value_class(**{field.name: getattr(section, field.name) for field in fields})


@attrs.frozen(kw_only=True)
class KeyConfig:
    """One ``[keys.NAME]``: the key's ``name``, its digest (``key_sha256``), the
    ``models`` it may ask for (None: every one), and its limits (see
    :class:`~solon_events.client.limits.Limits`)."""

    name: str
    key_sha256: str = attrs.field(metadata=setting(digest, required=True))
    models: tuple[str, ...] | None = attrs.field(default=None, metadata=setting(names))
    rpm: int | None = attrs.field(default=None, metadata=setting(count))
    tpm: int | None = attrs.field(default=None, metadata=setting(count))
    max_parallel: int | None = attrs.field(default=None, metadata=setting(count))
    budget_usd: float | None = attrs.field(default=None, metadata=setting(amount))
    budget_tokens: int | None = attrs.field(default=None, metadata=setting(count))
    window: str = attrs.field(default="month", metadata=setting(one_of(*WINDOWS)))
    output_allowance: int = attrs.field(default=OUTPUT_ALLOWANCE, metadata=setting(count))
    overrun: str = attrs.field(default="finish", metadata=setting(one_of("finish", "stop")))

    @property
    def limits(self) -> Limits:
        """The key's limits."""
        return _made_of(Limits, self)


@attrs.frozen(kw_only=True)
class SpendLogConfig:
    """``[spend_log]``: where the record of each attempt goes: a JSON-lines file
    (``path``), a stream in the configuration's Redis (``redis_stream``), OpenTelemetry
    logs (``otel``); written every ``interval`` seconds, ``batch`` records at most at a
    time."""

    path: str | None = attrs.field(default=None, metadata=setting(text))
    redis_stream: str | None = attrs.field(default=None, metadata=setting(text))
    otel: bool = attrs.field(default=False, metadata=setting(flag))
    batch: int = attrs.field(default=500, metadata=setting(count))
    interval: float = attrs.field(default=0.5, metadata=setting(amount))


@attrs.frozen(kw_only=True)
class PriceConfig:
    """``[prices.MODEL]``: the price of an upstream model (a deployment's ``model``) in US
    dollars per million tokens: ``input``, ``output``, ``cache_read`` and ``cache_write``
    (default: the input price). It wins over genai-prices' price."""

    name: str
    input: float = attrs.field(metadata=setting(amount, required=True))
    output: float = attrs.field(metadata=setting(amount, required=True))
    cache_read: float | None = attrs.field(default=None, metadata=setting(amount))
    cache_write: float | None = attrs.field(default=None, metadata=setting(amount))

    @property
    def price(self) -> ModelPrice:
        """The price as a :class:`~solon_events.event_model.pricing.ModelPrice`."""
        return _made_of(ModelPrice, self)


def lease(value: Any, where: Where) -> float:
    """A number of seconds above 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1e9:
        raise where.error(f"must be a number of seconds above 0, not {value!r}")
    return float(value)


@attrs.frozen(kw_only=True)
class LimitsConfig:
    """``[limits]``: how the keys' counts are kept in Redis: the seconds a request of a
    replica that died still counts in flight (``lease``; a live replica renews its
    leases), and what a request gets when Redis does not answer (``unavailable``:
    ``"allow"``, logged, or ``"refuse"``, 429). A reload keeps the old ones: they change
    on a restart."""

    lease: float = attrs.field(default=60.0, metadata=setting(lease))
    unavailable: str = attrs.field(default="allow", metadata=setting(one_of("allow", "refuse")))


def check_access(config: GatewayConfig, where: Where) -> None:
    """What spans sections: each key's models are served, no two keys share a digest, a
    spend log in Redis has the top-level ``redis``, the spend log's batch is 1 or more."""
    seen: dict[str, str] = {}
    for name, key in config.keys.items():
        here = where / "keys" / name
        for model in key.models or ():
            if model not in config.models:
                served = ", ".join(config.models)
                raise (here / "models").error(f"{model!r} is not a model served here ({served})")
        other = seen.setdefault(key.key_sha256, name)
        if other != name:
            raise (here / "key_sha256").error(f"the same key as keys.{other}")
    log = config.spend_log
    if log is not None:
        if log.redis_stream is not None and config.redis is None:
            raise (where / "spend_log" / "redis_stream").error(
                "a spend log in Redis needs the top-level redis URL"
            )
        if log.batch < 1:
            raise (where / "spend_log" / "batch").error("must be 1 or more")
        if not log.interval > 0:
            raise (where / "spend_log" / "interval").error("must be more than 0 seconds")


def prices_of(config: GatewayConfig) -> Mapping[str, ModelPrice]:
    """The configuration's prices, by upstream model name."""
    return {name: section.price for name, section in config.prices.items()}
