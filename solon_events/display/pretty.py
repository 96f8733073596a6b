"""Plain text for IPython's terminal (``_repr_pretty_``): short, readable summaries.

The values' own ``repr()`` stays as it is; this is what IPython shows instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..event_model.events import ChatEvent, ChatEventType
from ..event_model.results import CachedAnswer, ChatResponse, Cost, ToolCall, Usage
from .values import (
    ESTIMATED,
    cached_text,
    cost_text,
    key_text,
    money,
    step_count,
    timed_events,
    usage_text,
)

__all__ = ["events_text", "to_text"]

_INDENT = "  "
_WITH_RESPONSE = (ChatEventType.STEP_END, ChatEventType.RESPONSE_END, ChatEventType.ERROR)


def _shorten(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _cost(cost: Cost) -> str:
    if cost.total is None:
        return f"unknown ({cost.reason})" if cost.reason else "unknown"
    mark = ESTIMATED if cost.estimated else ""
    parts = [
        f"{name} {mark}{money(value)}"
        for name, value in (
            ("input", cost.input),
            ("cache read", cost.cache_read),
            ("cache write", cost.cache_write),
            ("output", cost.output),
            ("reasoning", cost.reasoning),
        )
        if value
    ]
    return f"{mark}{money(cost.total)}" + (f" ({', '.join(parts)})" if parts else "")


def _call(call: ToolCall) -> str:
    return f"{call.name}({call.arguments_str})" + (f"  id={call.id}" if call.id else "")


def _response(response: ChatResponse) -> list[str]:
    head = ["ChatResponse"]
    if response.finish_reason:
        head.append(f"finish={response.finish_reason}")
    if response.model:
        head.append(f"model={response.model}")
    steps = step_count(response.usage)
    if steps > 1:
        head.append(f"{steps} steps")
    if response.cached is not None:
        head.append("cached")
    lines = ["  ".join(head)]
    if response.thinking:
        lines.append(
            f"{_INDENT}thinking ({len(response.thinking)} chars): {_shorten(response.thinking, 60)}"
        )
    if response.text:
        lines.append(f"{_INDENT}text: {response.text}")
    lines += [f"{_INDENT}tool call: {_call(call)}" for call in response.tool_calls]
    if response.pending_approval is not None:
        waiting = response.pending_approval.tool_calls
        lines += [f"{_INDENT}awaiting approval: {_call(call)}" for call in waiting]
    if response.message is not None and response.message.refusal:
        lines.append(f"{_INDENT}refusal: {response.message.refusal}")
    if response.usage is not None:
        lines.append(f"{_INDENT}usage: {usage_text(response.usage)}")
    if cost_text(response.cost) is not None:
        assert response.cost is not None
        lines.append(f"{_INDENT}cost: {_cost(response.cost)}")
    if response.cached is not None:
        lines.append(f"{_INDENT}{cached_text(response.cached)}")
    return lines


def to_text(value: Any) -> str:
    """The terminal summary of a :class:`~solon_events.ChatResponse`,
    :class:`~solon_events.Usage`, :class:`~solon_events.Cost`,
    :class:`~solon_events.ToolCall` or :class:`~solon_events.ChatEvent`."""
    if isinstance(value, ChatResponse):
        return "\n".join(_response(value))
    if isinstance(value, Usage):
        return f"Usage({usage_text(value)})"
    if isinstance(value, Cost):
        return f"Cost({_cost(value)})"
    if isinstance(value, ToolCall):
        return f"ToolCall {_call(value)}"
    if isinstance(value, CachedAnswer):
        return f"CachedAnswer: {cached_text(value)}"
    if isinstance(value, ChatEvent):
        if value.response is None or not value.is_type(*_WITH_RESPONSE):
            return repr(value)
        return "\n".join([repr(value), *(_INDENT + line for line in _response(value.response))])
    raise TypeError(f"no text summary for a {type(value).__name__}")


def events_text(events: Sequence[Any], limit: int = 500) -> str:
    """One line per event (time when known, type, step, index, key field)."""
    timed = timed_events(events)
    lines = [f"{len(timed)} events"]
    for number, (at, event) in enumerate(timed[:limit]):
        when = f"{at:8.3f}s " if at is not None else ""
        index = "" if event.index == -1 else str(event.index)
        text = key_text(event, 80).replace("\n", " ")
        lines.append(
            f"{number:4d} {when}{event.type.name:<22} {event.step:>3} {index:>3}  {text}".rstrip()
        )
    if len(timed) > limit:
        lines.append(f"… and {len(timed) - limit} more events")
    return "\n".join(lines)
