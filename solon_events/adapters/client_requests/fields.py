"""The readers of a request's JSON fields, shared by every protocol's reader.

Each checks a field as it reads it and raises ``ValueError`` naming the field that is
wrong (``messages[2].content[0].text must be a string, not an integer``): the gateway
answers it with HTTP 400 in the protocol's error shape. Sans-I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import orjson

from ..inputs import _kind, _object

__all__ = [
    "body_object",
    "each",
    "field_of",
    "integer",
    "json_text",
    "kind_of",
    "number",
    "optional",
    "stop_sequences",
    "texts",
    "unknown_fields",
]


def body_object(body: Any) -> Mapping[str, Any]:
    """The request body, which must be a JSON object."""
    return _object(body)


def field_of(value: Any, kind: type | tuple[type, ...], where: str) -> Any:
    """``value`` when it is of ``kind``, else a ValueError naming ``where``."""
    if isinstance(value, bool) and kind in (int, float, (int, float)):
        raise ValueError(f"{where} must be a number, not a boolean")
    if not isinstance(value, kind):
        raise ValueError(f"{where} must be {_what(kind)}, not {_kind(value)}")
    return value


def _what(kind: type | tuple[type, ...]) -> str:
    names = {
        str: "a string",
        int: "an integer",
        bool: "a boolean",
        list: "an array",
        dict: "an object",
        Mapping: "an object",
    }
    if isinstance(kind, tuple):
        return "a number" if set(kind) == {int, float} else " or ".join(_what(k) for k in kind)
    return names.get(kind, kind.__name__)


def optional(body: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    """``body[key]`` checked to be of ``kind``; None when absent or null."""
    value = body.get(key)
    if value is None:
        return None
    return field_of(value, kind, f"{where}.{key}" if where else key)


def number(body: Mapping[str, Any], key: str, where: str = "") -> float | None:
    """A numeric field (an int or a float), or None."""
    value = optional(body, key, (int, float), where)
    return None if value is None else value


_INT64 = range(-(2**63), 2**63)


def integer(body: Mapping[str, Any], key: str, where: str = "") -> int | None:
    """An integer field, or None (a float with no fraction is taken: JSON has one number);
    one that a 64-bit integer cannot hold is refused, as no upstream takes it."""
    value = optional(body, key, (int, float), where)
    if value is None:
        return None
    named = f"{where + '.' if where else ''}{key}"
    if value != int(value):
        raise ValueError(f"{named} must be an integer, got {value}")
    if int(value) not in _INT64:
        raise ValueError(f"{named} is out of range: {value:g} does not fit in 64 bits")
    return int(value)


def kind_of(item: Mapping[str, Any], where: str, key: str = "type") -> str | None:
    """What kind of part or item ``item`` is: its ``key`` field, a string (None when it is
    absent or null)."""
    value = item.get(key)
    return None if value is None else field_of(value, str, f"{where}.{key}" if where else key)


def stop_sequences(value: Any, where: str) -> tuple[str, ...]:
    """A stop field: a string or an array of strings."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    items = field_of(value, list, where)
    return tuple(field_of(item, str, f"{where}[{i}]") for i, item in enumerate(items))


def each(
    body: Mapping[str, Any], key: str, read: Callable[[Any, str], Any], *, required: bool = False
) -> list[Any]:
    """``read(item, where)`` of each item of the array ``body[key]`` (none when it is absent;
    ``required``: it must hold one at least)."""
    items = body.get(key)
    if items is None and not required:
        return []
    items = field_of(items, list, key)
    if required and not items:
        raise ValueError(f"{key} must not be empty")
    return [read(item, f"{key}[{i}]") for i, item in enumerate(items)]


def json_text(value: Any) -> str:
    """A tool result's content as text: a string as it is, anything else as JSON."""
    if isinstance(value, str):
        return value
    return orjson.dumps(value).decode()


def texts(parts: Sequence[Any], where: str, kinds: tuple[str, ...] = ("text",)) -> str:
    """The text of content parts ``[{"type": "text", "text": ...}, ...]`` (other kinds
    of part are skipped), joined."""
    out = []
    for i, part in enumerate(parts):
        field_of(part, Mapping, f"{where}[{i}]")
        if part.get("type") in kinds:
            out.append(field_of(part.get("text"), str, f"{where}[{i}].text"))
    return "".join(out)


def unknown_fields(body: Mapping[str, Any], known: Iterable[str]) -> tuple[str, ...]:
    """The body's fields that are not ``known`` (and not null), sorted."""
    known = frozenset(known)
    return tuple(sorted(k for k, v in body.items() if k not in known and v is not None))
