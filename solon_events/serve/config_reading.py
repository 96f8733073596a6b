"""How the gateway's configuration file is read (:mod:`solon_events.serve.config` and the
modules of its sections): where a value is, for errors (:class:`Where`,
:class:`ConfigError`), the readers of values, and a section read as an attrs class whose
fields declare how their key is read (:func:`setting`, :func:`section`, :func:`sections_of`,
:func:`tables_of`)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import attrs

__all__ = [
    "ConfigError",
    "Reader",
    "Where",
    "environment_name",
    "flag",
    "lines_of",
    "one_of",
    "positive",
    "redis_url",
    "seconds",
    "section",
    "sections_of",
    "setting",
    "shown",
    "tables_of",
    "text",
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


def lines_of(text: str) -> dict[_Path, int]:
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
class Source:
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

    source: Source
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
        raise where.error(f"must be a non-empty string, not {shown(value)}")
    return value


def positive(value: Any, where: Where) -> float:
    """A number greater than 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise where.error(f"must be a number greater than 0, not {shown(value)}")
    return float(value)


def seconds(value: Any, where: Where) -> float:
    """A number of seconds, 0 or more."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise where.error(f"must be a number of seconds (0 or more), not {shown(value)}")
    return float(value)


def one_of(*choices: str) -> Reader:
    """A string among ``choices``."""

    def read(value: Any, where: Where) -> str:
        if value not in choices:
            raise where.error(f"must be one of {', '.join(choices)}, not {shown(value)}")
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


def flag(value: Any, where: Where) -> bool:
    """``true`` or ``false``."""
    if not isinstance(value, bool):
        raise where.error(f"must be true or false, not {shown(value)}")
    return value


def redis_url(value: Any, where: Where) -> str:
    """A ``redis://`` (or ``rediss://``, ``unix://``) URL."""
    if not isinstance(value, str) or not value.startswith(("redis://", "rediss://", "unix://")):
        raise where.error("must be a redis://HOST:PORT/DB URL")
    return value


def section(cls: type[_S], value: Any, where: Where, **given: Any) -> _S:
    """The table ``value`` read as the attrs class ``cls``: each field with a
    :func:`setting` from its key; ``given`` the fields that come from elsewhere (a
    section's name)."""
    if not isinstance(value, Mapping):
        raise where.error(f"must be a table, not {shown(value)}")
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


def shown(value: Any) -> str:
    """``value`` as an error message shows it (its repr, cut at 60 characters)."""
    shown = repr(value)
    return shown if len(shown) <= 60 else shown[:57] + "..."
