"""Where a stage of the response pipeline pushes: :class:`Sink`."""

from __future__ import annotations

from typing import Any, Protocol

from ..event_model.events import ChatEvent

__all__ = ["Sink"]


class Sink(Protocol):
    """Where a stage pushes: an observer of events."""

    def on_next(self, event: ChatEvent, /) -> Any: ...

    def on_error(self, error: Exception, /) -> Any: ...

    def on_completed(self) -> Any: ...
