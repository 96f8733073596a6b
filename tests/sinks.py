"""A sink for the tests that drive a stage (or a dialect) directly, without Rx."""

from __future__ import annotations

from typing import Any

from solon_events import ChatEvent

__all__ = ["Recorder"]


class Recorder:
    """A sink (``on_next``, ``on_error``, ``on_completed``) that records what reaches it:
    ``log`` has everything in order (the events, the error, ``"completed"``); ``events``,
    ``errors`` and ``completed`` have each kind apart."""

    def __init__(self) -> None:
        self.log: list[Any] = []
        self.events: list[ChatEvent] = []
        self.errors: list[Exception] = []
        self.completed = False

    def on_next(self, event: ChatEvent) -> None:
        self.events.append(event)
        self.log.append(event)

    def on_error(self, error: Exception) -> None:
        self.errors.append(error)
        self.log.append(error)

    def on_completed(self) -> None:
        self.completed = True
        self.log.append("completed")
