"""What the displays show of a value, independent of how it is drawn: an event's key
text, its arrival time, the fields of a usage (each count after "≈" when the usage is
estimated), a cost when it is known, the number of steps behind it, and where a cached
answer came from."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from datetime import datetime
from decimal import Decimal
from typing import Any

from ..event_model.events import EVENT_TYPES, ChatEvent
from ..event_model.results import CachedAnswer, Cost, Usage

__all__ = [
    "ESTIMATED",
    "cached_text",
    "cost_text",
    "event_time",
    "key_text",
    "money",
    "step_count",
    "timed_events",
    "usage_fields",
    "usage_text",
]

ESTIMATED = "≈"
"""What stands before a count or a cost that is estimated."""

RECEIVED_AT = "received_at"  # solon_events.recording.RECEIVED_AT, without importing it


def event_time(event: ChatEvent) -> float | None:
    """The arrival time a replayed recording stamped on ``event`` (seconds), if any."""
    value = event.attrs.get(RECEIVED_AT)
    return float(value) if isinstance(value, (int, float)) else None


def timed_events(items: Iterable[Any]) -> list[tuple[float | None, ChatEvent]]:
    """``items`` as (seconds, event) pairs.

    An item is a :class:`~solon_events.ChatEvent` (its time is ``attrs["received_at"]``,
    from a replayed recording) or what Rx's ``timestamp()`` makes of one (``.value`` and a
    datetime ``.timestamp``, counted from the first item's). A time is None when unknown.
    """
    pairs: list[tuple[float | None, ChatEvent]] = []
    first: datetime | None = None
    for item in items:
        if isinstance(item, ChatEvent):
            pairs.append((event_time(item), item))
            continue
        value, stamp = getattr(item, "value", None), getattr(item, "timestamp", None)
        if not isinstance(value, ChatEvent):
            raise TypeError(
                f"expected ChatEvents or Rx timestamp() pairs of them, got {type(item).__name__}"
            )
        if isinstance(stamp, datetime):
            first = first or stamp
            pairs.append(((stamp - first).total_seconds(), value))
        elif isinstance(stamp, (int, float)):
            pairs.append((float(stamp), value))
        else:
            pairs.append((event_time(value), value))
    return pairs


def _shorten(text: str, limit: int | None) -> str:
    if limit is None or len(text) <= limit:
        return text
    return text[: limit - 1] + "…"


def key_text(event: ChatEvent, limit: int | None = None) -> str:
    """The field that says most about ``event``: its text, the tool call, the usage, the
    error or the answer; at most ``limit`` characters."""
    t = event.type
    call = event.tool_call
    if (
        t in (EVENT_TYPES.TOOL_CALL_START, EVENT_TYPES.TOOL_CALL_END, EVENT_TYPES.TOOL_CALL_CHUNK)
        and call is not None
    ):
        text = (
            f"{call.name}({call.arguments_str})"
            if t is not EVENT_TYPES.TOOL_CALL_START
            else call.name
        )
    elif t is EVENT_TYPES.TOOL_RESULT:
        name = call.name if call is not None else "tool"
        text = f"{name} → {event.text or ''}"
    elif t is EVENT_TYPES.ERROR and event.error is not None:
        text = f"{type(event.error).__name__}: {event.error}"
    elif event.text is not None:
        text = event.text
    elif t is EVENT_TYPES.USAGE and event.usage is not None:
        usage = event.usage
        text = f"prompt {usage.prompt_tokens}, completion {usage.completion_tokens}"
    elif event.citation is not None:
        text = event.citation.url or event.citation.title or ""
    else:
        text = event.response.text if t is EVENT_TYPES.RESPONSE_END and event.response else ""
    if event.usage is not None:
        text = f"{event.usage.total_tokens} tokens  {text}".rstrip()
    return _shorten(text, limit)


def usage_fields(usage: Usage) -> list[tuple[str, int]]:
    """The counters of ``usage`` worth showing: the three totals, then any non-zero other."""
    fields = [
        ("prompt", usage.prompt_tokens),
        ("completion", usage.completion_tokens),
        ("total", usage.total_tokens),
    ]
    optional = [
        ("thinking", usage.thinking_tokens),
        ("cache read", usage.cache_read_input_tokens),
        ("cache creation", usage.cache_creation_input_tokens),
    ]
    fields += [(name, value) for name, value in optional if value]
    fields += [
        (str(name), int(value))
        for name, value in usage.server_tool_use.items()
        if isinstance(value, (int, float)) and value
    ]
    return fields


def usage_text(usage: Usage) -> str:
    """``usage``'s counters in one line (``prompt 9, completion 5, total 14``), each after
    "≈" when the usage is estimated."""
    mark = ESTIMATED if usage.estimated else ""
    return ", ".join(f"{name} {mark}{value}" for name, value in usage_fields(usage))


def money(amount: Decimal) -> str:
    """``amount`` of US dollars as ``$0.000435``: every digit the price gives, no exponent."""
    return "$" + format(amount.normalize(), "f")


def cost_text(cost: Cost | None) -> str | None:
    """A known cost's total (``$0.000435``, after "≈" when the usage was estimated); None
    when there is no cost or its price is unknown."""
    if cost is None or cost.total is None:
        return None
    return (ESTIMATED if cost.estimated else "") + money(cost.total)


def cached_text(cached: CachedAnswer) -> str:
    """Where a response that no provider was asked for came from, in one line: ``cached
    (stored 12 s ago; the original used prompt 9, completion 5, total 14)`` or ``shared
    with an identical request in flight (...)``."""
    if cached.shared:
        where = "shared with an identical request in flight"
    else:
        where = f"cached (stored {_age(time.time() - cached.created)} ago"
    used = f"the original used {usage_text(cached.usage)}" if cached.usage is not None else ""
    if cached.shared:
        return f"{where} ({used})" if used else where
    return f"{where}; {used})" if used else f"{where})"


def _age(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 172800:
        return f"{seconds / 3600:.0f} h"
    return f"{seconds / 86400:.0f} days"


def step_count(usage: Usage | None) -> int:
    """How many steps' usages were added into ``usage`` (1 for a single step, 0 for none)."""
    if usage is None:
        return 0
    source = usage.source
    if isinstance(source, Mapping) and set(source) == {"steps"}:
        return len(source["steps"])
    return 1
