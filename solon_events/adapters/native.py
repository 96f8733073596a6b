"""Our own events as JSON objects, and back: the ``/events`` protocol and stored streams.

:func:`event_to_json` turns a :class:`~solon_events.ChatEvent` into a plain JSON object:
``type`` (the type's name), ``step``, and every other field that is set (``text``,
``usage``, ``response``, ``tool_call``, ...), results as objects of their fields,
content blocks tagged with ``kind`` (``"text"``, ``"image"``, ``"file"``) and an error
as ``{"type": <class name>, "message": ..., <its attributes>}``. ``raw`` is left out
unless asked for. :func:`event_from_json` reads such an object back into an equal
event (an error comes back as the same :class:`~solon_events.ChatError` class with the
same message and attributes). Sans-I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
import orjson

from ..event_model.approvals import response_from_json
from ..event_model.events import ChatEvent, ChatEventType
from ..event_model.plain import (
    block_from_plain,
    citation_from_plain,
    error_from_plain,
    search_result_from_plain,
    to_plain,
    tool_call_from_plain,
    usage_from_plain,
)

__all__ = ["encode_event", "decode_event", "event_from_json", "event_to_json", "to_plain"]

_EVENT_FIELDS = tuple(a for a in attrs.fields(ChatEvent) if a.name != "type")


def event_to_json(event: ChatEvent, *, with_raw: bool = False) -> dict[str, Any]:
    """``event`` as a plain JSON object: ``type``, ``step`` and every field that is set."""
    data: dict[str, Any] = {"type": event.type.name, "step": event.step}
    for field in _EVENT_FIELDS:
        name = field.name
        if name == "step" or (name == "raw" and not with_raw):
            continue
        item = getattr(event, name)
        if item is None or item == field.default:
            continue
        data[name] = to_plain(item)
    return data


def encode_event(event: ChatEvent, *, with_raw: bool = False) -> bytes:
    """:func:`event_to_json` serialised (UTF-8 JSON bytes)."""
    return orjson.dumps(event_to_json(event, with_raw=with_raw))


def decode_event(data: bytes | str) -> ChatEvent:
    """The event :func:`encode_event` wrote; ``ValueError`` for anything else."""
    try:
        plain = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"not a JSON event: {exc}") from None
    return event_from_json(plain)


def event_from_json(data: Mapping[str, Any]) -> ChatEvent:
    """The event a :func:`event_to_json` object describes; ``ValueError`` when it is not one."""
    if not isinstance(data, Mapping):
        raise ValueError(f"an event is a JSON object, not {type(data).__name__}")
    name = data.get("type")
    try:
        event_type = ChatEventType[name]  # type: ignore[misc]
    except KeyError:
        raise ValueError(f"unknown event type {name!r}") from None
    fields = {key: _READERS.get(key, _same)(item) for key, item in data.items() if key != "type"}
    try:
        return ChatEvent(event_type, **fields)
    except TypeError as exc:
        raise ValueError(f"not a {name} event: {exc}") from None


def _same(value: Any) -> Any:
    return value


_READERS = {
    "response": response_from_json,
    "usage": usage_from_plain,
    "error": error_from_plain,
    "tool_call": tool_call_from_plain,
    "block": block_from_plain,
    "citation": citation_from_plain,
    "search_result": search_result_from_plain,
}
