"""The gateway's configuration file: ``solon-events serve --config gateway.toml``.

The file's shape, which the docs own (:doc:`/guides/routing`): a top-level ``redis`` URL
(optional), and one ``[models.NAME]`` section per name clients ask for, with its
``strategy`` and one ``[[models.NAME.deployments]]`` table per deployment (``upstream``,
``model``, ``api_key_env``, ``weight``); and the sections of keys, limits and spend
(``[keys.NAME]``, ``[spend_log]``, ``[prices.MODEL]``, ``[limits]``: see
:mod:`solon_events.serve.limits_config`).

:func:`load_config` reads a file into a :class:`GatewayConfig` (:func:`parse_config` a
text), or raises :class:`ConfigError` naming the file, the line and the key that is wrong
and why. Keys are never in the file: a deployment names the environment variable that
holds its key (``api_key_env``), read when the gateway builds its models.

Each section is an attrs class whose fields declare how their key is read
(:func:`setting`); an unknown key is an error naming the known ones. A new key is one
more field with its reader; a new kind of section one more class, read with
:func:`sections_of` (named tables, like ``[models.NAME]``) or :func:`tables_of` (arrays
of tables, like ``[[models.NAME.deployments]]``).

Reading TOML needs Python 3.11's ``tomllib``, or on Python 3.10 the ``toml`` extra
(``tomli``).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from ..client.router import COOLDOWN, STRATEGIES, Strategy
from ..event_model.extras import require
from .config_reading import (
    ConfigError,
    Source,
    Where,
    environment_name,
    flag,
    lines_of,
    one_of,
    positive,
    redis_url,
    seconds,
    section,
    sections_of,
    setting,
    shown,
    tables_of,
    text,
)
from .limits_config import KeyConfig, LimitsConfig, PriceConfig, SpendLogConfig, check_access

__all__ = [
    "CACHE_STORES",
    "ConfigError",
    "DeploymentConfig",
    "GatewayConfig",
    "ModelConfig",
    "Where",
    "load_config",
    "parse_config",
    "parse_upstream",
    "sections_of",
    "setting",
    "tables_of",
]


CACHE_STORES = ("memory", "sqlite:PATH", "redis")
"""What a model's ``cache`` names: the process's memory, a SQLite file, the top-level
``redis``."""


def cache_store(value: Any, where: Where) -> str:
    """``"memory"``, ``"sqlite:PATH"`` or ``"redis"``."""
    if value in ("memory", "redis") or (
        isinstance(value, str) and value.startswith("sqlite:") and len(value) > len("sqlite:")
    ):
        return str(value)
    raise where.error(f"must be one of {', '.join(CACHE_STORES)}, not {shown(value)}")


def parse_upstream(value: str) -> tuple[str, str]:
    """``DIALECT:URL`` as its dialect and URL; ``ValueError`` saying what is expected."""
    from ..dialects.base import dialect_names

    dialect, _, url = value.partition(":")
    if dialect not in dialect_names() or not url.startswith(("http://", "https://")):
        raise ValueError(
            f"must be DIALECT:URL with a dialect of {', '.join(dialect_names())} and an "
            f"http(s) URL, not {value!r}"
        )
    return dialect, url


def upstream(value: Any, where: Where) -> str:
    """``DIALECT:URL``: ``openai:http://127.0.0.1:8000/v1/chat/completions``."""
    try:
        parse_upstream(text(value, where))
    except ValueError as exc:
        raise where.error(str(exc)) from None
    return str(value)


# --- the sections


@attrs.frozen(kw_only=True)
class DeploymentConfig:
    """One ``[[models.NAME.deployments]]``: the ``upstream`` (``DIALECT:URL``), its
    ``model``, the environment variable holding its key (``api_key_env``; none for an
    upstream without a key), its ``weight`` (the ``weighted`` strategy's; default 1)."""

    upstream: str = attrs.field(metadata=setting(upstream, required=True))
    model: str = attrs.field(metadata=setting(text, required=True))
    api_key_env: str | None = attrs.field(default=None, metadata=setting(environment_name))
    weight: float = attrs.field(default=1.0, metadata=setting(positive))

    @property
    def dialect(self) -> str:
        """The dialect of ``upstream``."""
        return parse_upstream(self.upstream)[0]

    @property
    def url(self) -> str:
        """The endpoint of ``upstream``."""
        return parse_upstream(self.upstream)[1]


@attrs.frozen(kw_only=True)
class ModelConfig:
    """One ``[models.NAME]``: the ``name`` clients ask for, the ``strategy`` of its
    deployments (default ``weighted``), the ``deployments``, how long a failed one is
    skipped when it gave no ``Retry-After`` (``cooldown``, seconds; default 5) and the
    ``hedge`` strategy's delay (``hedge_after``, seconds; default 1). ``cache`` keeps its
    complete answers (:data:`CACHE_STORES`; none by default) for ``cache_ttl`` seconds (by
    default until the store's size caps push them out), identical requests in flight
    sharing one upstream response unless ``single_flight = false`` (see
    :doc:`/guides/caching`)."""

    name: str
    strategy: Strategy = attrs.field(default="weighted", metadata=setting(one_of(*STRATEGIES)))
    deployments: tuple[DeploymentConfig, ...] = attrs.field(
        metadata=setting(tables_of(DeploymentConfig), required=True)
    )
    cooldown: float = attrs.field(default=COOLDOWN, metadata=setting(seconds))
    hedge_after: float = attrs.field(default=1.0, metadata=setting(seconds))
    cache: str | None = attrs.field(default=None, metadata=setting(cache_store))
    cache_ttl: float | None = attrs.field(default=None, metadata=setting(positive))
    single_flight: bool = attrs.field(default=True, metadata=setting(flag))


def _spend_log(value: Any, where: Where) -> SpendLogConfig:
    return section(SpendLogConfig, value, where)


def _limits(value: Any, where: Where) -> LimitsConfig:
    return section(LimitsConfig, value, where)


@attrs.frozen(kw_only=True)
class GatewayConfig:
    """A whole configuration: the ``models`` clients ask for by name (in file order; the
    first also serves the routes that name none), an optional ``redis`` URL (the routers'
    shared state, resumable streams, the keys' limits), the ``keys`` requests must carry
    (none: every request is answered), the ``spend_log``, the ``prices`` of models and
    how the ``limits`` are kept (see :mod:`solon_events.serve.limits_config`), and the
    ``path`` it was read from."""

    models: Mapping[str, ModelConfig] = attrs.field(
        metadata=setting(sections_of(ModelConfig), required=True)
    )
    redis: str | None = attrs.field(default=None, metadata=setting(redis_url))
    keys: Mapping[str, KeyConfig] = attrs.field(
        factory=dict, metadata=setting(sections_of(KeyConfig))
    )
    spend_log: SpendLogConfig | None = attrs.field(default=None, metadata=setting(_spend_log))
    prices: Mapping[str, PriceConfig] = attrs.field(
        factory=dict, metadata=setting(sections_of(PriceConfig))
    )
    limits: LimitsConfig = attrs.field(factory=LimitsConfig, metadata=setting(_limits))
    path: str | None = None


def parse_config(text: str, path: str | None = None) -> GatewayConfig:
    """The configuration in TOML ``text`` (``path``: the file it came from, for errors)."""
    toml = _toml()
    try:
        document = toml.loads(text)
    except toml.TOMLDecodeError as exc:
        message = str(exc)
        found = re.search(r"\(at line (\d+), column \d+\)", message)
        line = int(found.group(1)) if found else None
        reason = message[: found.start()].strip() if found else message
        raise ConfigError(f"not valid TOML: {reason}", path=path, line=line) from None
    where = Where(Source(path, lines_of(text)))
    config = section(GatewayConfig, document, where, path=path)
    if not config.models:
        raise (where / "models").error("must name at least one model: [models.NAME]")
    for name, model in config.models.items():
        at = where / "models" / name
        if model.cache == "redis" and config.redis is None:
            raise (at / "cache").error('"redis" needs the top-level redis = "redis://..." URL')
        if model.cache is None and model.cache_ttl is not None:
            raise (at / "cache_ttl").error("has no cache to apply to: set cache too")
    check_access(config, where)
    return config


def load_config(path: str | Path) -> GatewayConfig:
    """The configuration in the TOML file at ``path``."""
    name = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot be read: {exc}", path=name) from None
    return parse_config(text, name)


def _toml() -> Any:
    if sys.version_info >= (3, 11):
        import tomllib

        return tomllib
    return require("tomli", feature="a gateway configuration file (TOML)", extra="toml")
