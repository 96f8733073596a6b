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

from .. import errors, results
from ..events import ChatEvent, ChatEventType

__all__ = ["encode_event", "decode_event", "event_from_json", "event_to_json", "to_plain"]

_BLOCK_KINDS: dict[type, str] = {
    results.TextBlock: "text",
    results.ImageBlock: "image",
    results.FileBlock: "file",
}
_BLOCKS_BY_KIND = {kind: cls for cls, kind in _BLOCK_KINDS.items()}
_MIRRORED = ("thinking", "tool_calls", "citations", "search_results", "pending_approval")
_EVENT_FIELDS = tuple(a for a in attrs.fields(ChatEvent) if a.name != "type")


def to_plain(value: Any) -> Any:
    """``value`` as plain JSON data: results as objects of their fields (defaults left out)."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, Mapping):
        return {str(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    if isinstance(value, BaseException):
        return _error_to_plain(value)
    if isinstance(value, results.ChatResponse):
        data = _attrs_to_plain(value, skip=_MIRRORED)
        data.setdefault("text", "")
        if value.pending_approval is not None:
            data["pending_approval"] = value.pending_approval.to_json()
        return data
    if attrs.has(type(value)):
        data = _attrs_to_plain(value)
        kind = _BLOCK_KINDS.get(type(value))
        return {"kind": kind, **data} if kind else data
    return str(value)


def _attrs_to_plain(value: Any, skip: tuple[str, ...] = ()) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for field in attrs.fields(type(value)):
        if field.name in skip:
            continue
        item = getattr(value, field.name)
        if item is None or (not item and item == field.default) or _empty(item):
            continue
        data[field.name] = to_plain(item)
    return data


def _empty(item: Any) -> bool:
    return isinstance(item, (Mapping, tuple, list, str)) and not item


def _error_to_plain(error: BaseException) -> dict[str, Any]:
    data: dict[str, Any] = {"type": type(error).__name__, "message": str(error)}
    for name, item in vars(error).items():
        if name in ("message", "partial_response") or name.startswith("_"):
            continue
        if item is None or _empty(item):
            continue
        data[name] = to_plain(item)
    return data


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


def _usage(value: Any) -> results.Usage | None:
    return None if value is None else results.Usage(**value)


def _tool_call(value: Any) -> results.ToolCall | None:
    return None if value is None else results.ToolCall(**value)


def _citation(value: Any) -> results.Citation | None:
    return None if value is None else results.Citation(**value)


def _search_result(value: Any) -> results.SearchResult | None:
    return None if value is None else results.SearchResult(**value)


def _block(value: Any) -> Any:
    if value is None:
        return None
    fields = dict(value)
    kind = fields.pop("kind", None)
    block_type = _BLOCKS_BY_KIND.get(kind)  # type: ignore[arg-type]
    if block_type is None:
        raise ValueError(f"unknown content block kind {kind!r}")
    return block_type(**fields)


def _message(value: Any) -> results.AssistantMessage | None:
    if value is None:
        return None
    fields = dict(value)
    fields["tool_calls"] = [results.ToolCall(**c) for c in fields.get("tool_calls", ())]
    fields["blocks"] = [_block(b) for b in fields.get("blocks", ())]
    fields["citations"] = [results.Citation(**c) for c in fields.get("citations", ())]
    fields["search_results"] = [results.SearchResult(**s) for s in fields.get("search_results", ())]
    return results.AssistantMessage(**fields)


def _response(value: Any) -> results.ChatResponse | None:
    if value is None:
        return None
    fields = dict(value)
    message = _message(fields.pop("message", None))
    text = fields.pop("text", "")
    usage = _usage(fields.pop("usage", None))
    pending = fields.pop("pending_approval", None)
    if pending is not None:
        from ..approvals import PendingApproval

        fields["pending_approval"] = PendingApproval.from_json(pending)
    if message is None and text:
        message = results.AssistantMessage(text=text)
    return results.ChatResponse(message=message, usage=usage, **fields)


def _error(value: Any) -> BaseException | None:
    if value is None:
        return None
    fields = dict(value)
    name = str(fields.pop("type", "ChatError"))
    message = str(fields.pop("message", ""))
    error_type = getattr(errors, name, None)
    if not (isinstance(error_type, type) and issubclass(error_type, errors.ChatError)):
        error_type = errors.ChatError
    error = error_type.__new__(error_type)
    Exception.__init__(error, message)
    error.__dict__.update(fields)
    error.message = message
    error.provider_error = dict(fields.get("provider_error") or {})
    error.partial_response = None
    return error


_READERS = {
    "response": _response,
    "usage": _usage,
    "error": _error,
    "tool_call": _tool_call,
    "block": _block,
    "citation": _citation,
    "search_result": _search_result,
}
