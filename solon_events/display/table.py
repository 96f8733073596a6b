"""A list of events that shows itself as a table in Jupyter and in IPython's terminal."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, overload

from ..event_model.events import ChatEvent
from .html import events_html
from .pretty import events_text
from .values import timed_events

__all__ = ["EventTable", "event_table"]


class EventTable(Sequence[ChatEvent]):
    """A read-only sequence of events with a rich display: one row per event (its time
    when known, type, step, index and key field).

    Build it from ChatEvents or from Rx ``timestamp()`` pairs of them; indexing gives the
    events, :attr:`times` their times in seconds (None when unknown).
    """

    def __init__(self, events: Iterable[Any]) -> None:
        pairs = timed_events(events)
        self._events = tuple(event for _, event in pairs)
        self.times: tuple[float | None, ...] = tuple(at for at, _ in pairs)

    @overload
    def __getitem__(self, index: int) -> ChatEvent: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[ChatEvent]: ...

    def __getitem__(self, index: int | slice) -> ChatEvent | Sequence[ChatEvent]:
        return self._events[index]

    def __len__(self) -> int:
        return len(self._events)

    def __iter__(self) -> Iterator[ChatEvent]:
        return iter(self._events)

    def _pairs(self) -> list[Any]:
        return [_Timed(event, at) for at, event in zip(self.times, self._events)]

    def _repr_html_(self) -> str:
        return events_html(self._pairs())

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(events_text(self._pairs()))

    def __repr__(self) -> str:
        return f"EventTable({len(self)} events)"


class _Timed:
    """An event with a time in seconds, as :func:`~.values.timed_events` reads one."""

    __slots__ = ("timestamp", "value")

    def __init__(self, value: ChatEvent, timestamp: float | None) -> None:
        self.value = value
        self.timestamp = timestamp


def event_table(events: Iterable[Any]) -> EventTable:
    """``events`` (ChatEvents or Rx ``timestamp()`` pairs) as an :class:`EventTable`."""
    return EventTable(events)
