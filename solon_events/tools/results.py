"""The text a tool's result is sent to the model as: JSON for structured values."""

from __future__ import annotations

import dataclasses
import datetime
import enum
from collections.abc import Mapping
from typing import Any

import attrs
import orjson

__all__ = ["format_result"]


def _json_default(value: Any) -> Any:
    if attrs.has(type(value)):
        return attrs.asdict(value, recurse=False)
    if hasattr(type(value), "__pydantic_serializer__") and not isinstance(value, type):
        return value.model_dump(mode="json", by_alias=True)
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):
        try:
            return dump(mode="json")
        except TypeError:
            return dump()
    if isinstance(value, (set, frozenset)):
        return list(value)
    if isinstance(value, Mapping):
        return dict(value)
    return str(value)


def _is_structured(value: Any) -> bool:
    if isinstance(value, type):
        return False
    return (
        isinstance(value, (Mapping, list, tuple, set, frozenset))
        or attrs.has(type(value))
        or dataclasses.is_dataclass(value)
        or callable(getattr(value, "model_dump", None))
    )


def format_result(value: Any) -> str:
    """The text of a tool's result for the model.

    A ``str`` as is; ``None`` as ``""``; a bool as ``true`` / ``false``; an enum member as
    its value; a date or time in ISO 8601; dicts, lists, tuples, sets, dataclasses, attrs
    classes and pydantic models (by alias) as JSON; anything else as ``str(value)``.
    """
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, enum.Enum):
        return format_result(value.value)
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if not _is_structured(value):
        return str(value)
    try:
        return orjson.dumps(value, default=_json_default, option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:
        return str(value)
