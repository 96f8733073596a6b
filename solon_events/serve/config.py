"""The gateway's configuration file: ``solon-events serve --config gateway.toml``.

The file's shape, which the docs own (:doc:`/guides/routing`): a top-level ``redis`` URL
(optional), and one ``[models.NAME]`` section per name clients ask for, with its
``strategy`` and one ``[[models.NAME.deployments]]`` table per deployment (``upstream``,
``model``, ``api_key_env``, ``weight``).

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
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

from ..client.router import COOLDOWN, STRATEGIES, Strategy
from ..extras import require

if TYPE_CHECKING:
    from .limits_config import KeyConfig, PriceConfig, SpendLogConfig

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

_S = TypeVar("_S")
Reader = Callable[[Any, "Where"], Any]
"""How a key's value is read: the TOML value and where it is, to the field's value (or a
:class:`ConfigError` from ``where.error(...)``)."""


class ConfigError(ValueError):
    """A gateway configuration that cannot be used: ``path`` (the file, or None for a
    text), ``line`` (1-based, or None when the file does not say), ``key`` (the dotted
    path of what is wrong, ``models.fast.deployments[1].weight``; empty for the whole
    file) and ``reason``. Its message reads ``gateway.toml:12: models.fast...: reason``.
    """

    def __init__(
        self, reason: str, *, path: str | None = None, line: int | None = None, key: str = ""
    ) -> None:
        self.reason = reason
        self.path = path
        self.line = line
        self.key = key
        where = path or "<config>"
        if line is not None:
            where += f":{line}"
        super().__init__(f"{where}: {key}: {reason}" if key else f"{where}: {reason}")


# --- where a value is, for errors


_HEADER = re.compile(r"\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(?:#.*)?$")
_NAME = r"""(?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*')"""
_KEY = re.compile(rf"\s*({_NAME}(?:\s*\.\s*{_NAME})*)\s*=")
_PART = re.compile(_NAME)

_Path = tuple[str | int, ...]


def _parts(dotted: str) -> tuple[str, ...]:
    return tuple(part.strip("\"'") for part in _PART.findall(dotted))


def _lines_of(text: str) -> dict[_Path, int]:
    """The line where each table and key of ``text`` is defined (arrays of tables
    numbered from 0), as far as a line-by-line reading tells: enough to point at a key."""
    found: dict[_Path, int] = {}
    counts: dict[tuple[str, ...], int] = {}
    table: _Path = ()
    for number, line in enumerate(text.splitlines(), 1):
        header = _HEADER.match(line)
        if header is not None:
            brackets, dotted = header.groups()
            names = _parts(dotted)
            if brackets == "[[":
                index = counts.get(names, 0)
                counts[names] = index + 1
                table = (*names, index)
            else:
                table = names
            found.setdefault(table, number)
            continue
        key = _KEY.match(line)
        if key is not None:
            found.setdefault((*table, *_parts(key.group(1))), number)
    return found


@attrs.frozen
class _Source:
    path: str | None
    lines: Mapping[_Path, int]

    def line_of(self, keys: _Path) -> int | None:
        """The line of ``keys``, else of the nearest table that holds it."""
        while keys:
            line = self.lines.get(keys)
            if line is not None:
                return line
            keys = keys[:-1]
        return None


@attrs.frozen
class Where:
    """Where a value is in the file: for the errors of the readers."""

    source: _Source
    keys: _Path = ()

    def __truediv__(self, key: str | int) -> Where:
        return Where(self.source, (*self.keys, key))

    @property
    def key(self) -> str:
        """The dotted path: ``models.fast.deployments[0].weight``."""
        text = ""
        for key in self.keys:
            if isinstance(key, int):
                text += f"[{key}]"
            else:
                text += f".{key}" if text else key
        return text

    def error(self, reason: str) -> ConfigError:
        """A :class:`ConfigError` about the value here."""
        return ConfigError(
            reason, path=self.source.path, line=self.source.line_of(self.keys), key=self.key
        )


# --- readers


def setting(read: Reader, *, required: bool = False) -> dict[str, Any]:
    """The metadata of a section's field read from the key of the same name (with ``-``
    for ``_`` accepted too) by ``read``; ``required``: the key must be given."""
    return {"read": read, "required": required}


def text(value: Any, where: Where) -> str:
    """A non-empty string."""
    if not isinstance(value, str) or not value:
        raise where.error(f"must be a non-empty string, not {_shown(value)}")
    return value


def positive(value: Any, where: Where) -> float:
    """A number greater than 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise where.error(f"must be a number greater than 0, not {_shown(value)}")
    return float(value)


def seconds(value: Any, where: Where) -> float:
    """A number of seconds, 0 or more."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise where.error(f"must be a number of seconds (0 or more), not {_shown(value)}")
    return float(value)


def one_of(*choices: str) -> Reader:
    """A string among ``choices``."""

    def read(value: Any, where: Where) -> str:
        if value not in choices:
            raise where.error(f"must be one of {', '.join(choices)}, not {_shown(value)}")
        return str(value)

    return read


def environment_name(value: Any, where: Where) -> str:
    """The name of an environment variable (never a key itself)."""
    if not isinstance(value, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", value):
        raise where.error(
            "must be the name of an environment variable (letters, digits and _), "
            "not a value: keys are never written in the file"
        )
    return value


def redis_url(value: Any, where: Where) -> str:
    """A ``redis://`` (or ``rediss://``, ``unix://``) URL."""
    if not isinstance(value, str) or not value.startswith(("redis://", "rediss://", "unix://")):
        raise where.error("must be a redis://HOST:PORT/DB URL")
    return value


def flag(value: Any, where: Where) -> bool:
    """``true`` or ``false``."""
    if not isinstance(value, bool):
        raise where.error(f"must be true or false, not {_shown(value)}")
    return value


CACHE_STORES = ("memory", "sqlite:PATH", "redis")
"""What a model's ``cache`` names: the process's memory, a SQLite file, the top-level
``redis``."""


def cache_store(value: Any, where: Where) -> str:
    """``"memory"``, ``"sqlite:PATH"`` or ``"redis"``."""
    if value in ("memory", "redis") or (
        isinstance(value, str) and value.startswith("sqlite:") and len(value) > len("sqlite:")
    ):
        return str(value)
    raise where.error(f"must be one of {', '.join(CACHE_STORES)}, not {_shown(value)}")


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


def section(cls: type[_S], value: Any, where: Where, **given: Any) -> _S:
    """The table ``value`` read as the attrs class ``cls``: each field with a
    :func:`setting` from its key; ``given`` the fields that come from elsewhere (a
    section's name)."""
    if not isinstance(value, Mapping):
        raise where.error(f"must be a table, not {_shown(value)}")
    fields = {f.name: f for f in attrs.fields(cls) if "read" in f.metadata}  # type: ignore[arg-type]
    values: dict[str, Any] = dict(given)
    for key, item in value.items():
        name = key.replace("-", "_")
        field = fields.get(name)
        if field is None:
            known = ", ".join(sorted(fields))
            raise (where / key).error(f"unknown key (known here: {known})")
        values[name] = field.metadata["read"](item, where / key)
    for name, field in fields.items():
        if field.metadata["required"] and name not in values:
            raise where.error(f"{name} is required")
    return cls(**values)


def sections_of(cls: type[_S]) -> Reader:
    """A table of named sections (``[models.NAME]``) read as ``cls``, whose field
    ``name`` is the section's name: a mapping from name to section, in file order."""

    def read(value: Any, where: Where) -> Mapping[str, _S]:
        if not isinstance(value, Mapping):
            raise where.error(f"must be a table of [{where.key}.NAME] sections")
        return {name: section(cls, item, where / name, name=name) for name, item in value.items()}

    return read


def tables_of(cls: type[_S]) -> Reader:
    """An array of tables (``[[models.NAME.deployments]]``) read as ``cls``, at least one."""

    def read(value: Any, where: Where) -> tuple[_S, ...]:
        if not isinstance(value, list) or not value:
            raise where.error(f"must be one or more [[{where.key}]] tables")
        return tuple(section(cls, item, where / i) for i, item in enumerate(value))

    return read


def _shown(value: Any) -> str:
    shown = repr(value)
    return shown if len(shown) <= 60 else shown[:57] + "..."


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


def _keys(value: Any, where: Where) -> Mapping[str, KeyConfig]:
    from .limits_config import KeyConfig

    return sections_of(KeyConfig)(value, where)  # type: ignore[no-any-return]


def _spend_log(value: Any, where: Where) -> SpendLogConfig:
    from .limits_config import SpendLogConfig

    return section(SpendLogConfig, value, where)


def _prices(value: Any, where: Where) -> Mapping[str, PriceConfig]:
    from .limits_config import PriceConfig

    return sections_of(PriceConfig)(value, where)  # type: ignore[no-any-return]


@attrs.frozen(kw_only=True)
class GatewayConfig:
    """A whole configuration: the ``models`` clients ask for by name (in file order; the
    first also serves the routes that name none), an optional ``redis`` URL (the routers'
    shared state, resumable streams, the keys' limits), the ``keys`` requests must carry
    (none: every request is answered), the ``spend_log`` and the ``prices`` of models
    (see :mod:`solon_events.serve.limits_config`), and the ``path`` it was read from."""

    models: Mapping[str, ModelConfig] = attrs.field(
        metadata=setting(sections_of(ModelConfig), required=True)
    )
    redis: str | None = attrs.field(default=None, metadata=setting(redis_url))
    keys: Mapping[str, KeyConfig] = attrs.field(factory=dict, metadata=setting(_keys))
    spend_log: SpendLogConfig | None = attrs.field(default=None, metadata=setting(_spend_log))
    prices: Mapping[str, PriceConfig] = attrs.field(factory=dict, metadata=setting(_prices))
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
    where = Where(_Source(path, _lines_of(text)))
    config = section(GatewayConfig, document, where, path=path)
    if not config.models:
        raise (where / "models").error("must name at least one model: [models.NAME]")
    for name, model in config.models.items():
        at = where / "models" / name
        if model.cache == "redis" and config.redis is None:
            raise (at / "cache").error('"redis" needs the top-level redis = "redis://..." URL')
        if model.cache is None and model.cache_ttl is not None:
            raise (at / "cache_ttl").error("has no cache to apply to: set cache too")
    from .limits_config import check_access

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
