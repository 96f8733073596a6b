"""Results as plain JSON data, and back: what our own JSON (:mod:`solon_events.adapters.native`)
and a pending approval's JSON (:meth:`~solon_events.event_model.approvals.PendingApproval.to_json`)
write and read.

:func:`to_plain` writes a value as objects of its fields (defaults left out), content blocks
tagged with ``kind`` and an error as ``{"type": <class name>, "message": ..., <its
attributes>}``; the ``*_from_plain`` readers read them back. A response's pending approval is
written by its own ``to_json()`` and read by :mod:`solon_events.event_model.approvals`, which
builds on
this module. Sans-I/O.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

import attrs

from . import errors, results

__all__ = [
    "attempt_from_plain",
    "block_from_plain",
    "cached_from_plain",
    "citation_from_plain",
    "cost_from_plain",
    "error_from_plain",
    "message_from_plain",
    "response_from_plain",
    "search_result_from_plain",
    "to_plain",
    "tool_call_from_plain",
    "usage_from_plain",
]

_BLOCK_KINDS: dict[type, str] = {
    results.TextBlock: "text",
    results.ImageBlock: "image",
    results.FileBlock: "file",
}
_BLOCKS_BY_KIND = {kind: cls for cls, kind in _BLOCK_KINDS.items()}
_MIRRORED = ("thinking", "tool_calls", "citations", "search_results", "pending_approval")


def to_plain(value: Any) -> Any:
    """``value`` as plain JSON data: results as objects of their fields (defaults left out)."""
    if isinstance(value, enum.Enum):  # a FinishReason: its value
        return value.value
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


def usage_from_plain(value: Any) -> results.Usage | None:
    """The :class:`~solon_events.Usage` :func:`to_plain` wrote (None for None)."""
    return None if value is None else results.Usage(**value)


def cost_from_plain(value: Any) -> results.Cost | None:
    """The :class:`~solon_events.Cost` :func:`to_plain` wrote (its amounts as decimal
    strings; None for None)."""
    if value is None:
        return None
    fields = dict(value)
    for name in _AMOUNTS:
        if fields.get(name) is not None:
            fields[name] = Decimal(str(fields[name]))
    return results.Cost(**fields)


_AMOUNTS = ("total", "input", "output", "cache_read", "cache_write", "reasoning")


def cached_from_plain(value: Any) -> results.CachedAnswer | None:
    """The :class:`~solon_events.CachedAnswer` :func:`to_plain` wrote (None for None)."""
    if value is None:
        return None
    fields = dict(value)
    fields["usage"] = usage_from_plain(fields.get("usage"))
    fields["cost"] = cost_from_plain(fields.get("cost"))
    return results.CachedAnswer(**fields)


def attempt_from_plain(value: Any) -> results.Attempt:
    """The :class:`~solon_events.Attempt` :func:`to_plain` wrote."""
    fields = dict(value)
    fields["usage"] = usage_from_plain(fields.get("usage"))
    fields["error"] = error_from_plain(fields.get("error"))
    return results.Attempt(**fields)


def tool_call_from_plain(value: Any) -> results.ToolCall | None:
    """The :class:`~solon_events.ToolCall` :func:`to_plain` wrote (None for None)."""
    return None if value is None else results.ToolCall(**value)


def citation_from_plain(value: Any) -> results.Citation | None:
    """The :class:`~solon_events.Citation` :func:`to_plain` wrote (None for None)."""
    return None if value is None else results.Citation(**value)


def search_result_from_plain(value: Any) -> results.SearchResult | None:
    """The :class:`~solon_events.SearchResult` :func:`to_plain` wrote (None for None)."""
    return None if value is None else results.SearchResult(**value)


def block_from_plain(value: Any) -> Any:
    """The content block :func:`to_plain` wrote, by its ``kind`` (None for None)."""
    if value is None:
        return None
    fields = dict(value)
    kind = fields.pop("kind", None)
    block_type = _BLOCKS_BY_KIND.get(kind)  # type: ignore[arg-type]
    if block_type is None:
        raise ValueError(f"unknown content block kind {kind!r}")
    return block_type(**fields)


def message_from_plain(value: Any) -> results.AssistantMessage | None:
    """The :class:`~solon_events.AssistantMessage` :func:`to_plain` wrote (None for None)."""
    if value is None:
        return None
    fields = dict(value)
    fields["tool_calls"] = [results.ToolCall(**c) for c in fields.get("tool_calls", ())]
    fields["blocks"] = [block_from_plain(b) for b in fields.get("blocks", ())]
    fields["citations"] = [results.Citation(**c) for c in fields.get("citations", ())]
    fields["search_results"] = [results.SearchResult(**s) for s in fields.get("search_results", ())]
    return results.AssistantMessage(**fields)


def response_from_plain(value: Any, pending_approval: Any = None) -> results.ChatResponse | None:
    """The :class:`~solon_events.ChatResponse` :func:`to_plain` wrote (None for None), with
    ``pending_approval`` (read by :func:`solon_events.event_model.approvals.response_from_json`)."""
    if value is None:
        return None
    fields = dict(value)
    message = message_from_plain(fields.pop("message", None))
    text = fields.pop("text", "")
    usage = usage_from_plain(fields.pop("usage", None))
    fields.pop("pending_approval", None)  # read by solon_events.event_model.approvals
    if "cost" in fields:
        fields["cost"] = cost_from_plain(fields["cost"])
    if "cached" in fields:
        fields["cached"] = cached_from_plain(fields["cached"])
    if "attempts" in fields:
        fields["attempts"] = tuple(attempt_from_plain(a) for a in fields["attempts"])
    if message is None and text:
        message = results.AssistantMessage(text=text)
    return results.ChatResponse(
        message=message, usage=usage, pending_approval=pending_approval, **fields
    )


def error_from_plain(value: Any) -> BaseException | None:
    """The error :func:`to_plain` wrote: the same :class:`~solon_events.ChatError` class
    (a ChatError for a name that is not one), message and attributes (None for None)."""
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
