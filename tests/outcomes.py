"""What one response delivered: every event, then its error or its completion."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from reactivex import Observable

from solon_events import ChatEvent, ChatEventFilter, ChatEventType, ChatPrompt

__all__ = ["Ending", "Outcome", "Watch", "astream_outcome_of", "observed", "outcome_of"]


class Ending:
    """How a subscription ended: its error or its completion; ``done`` is set by either."""

    def __init__(self) -> None:
        self.error: BaseException | None = None
        self.completed = False
        self.done = threading.Event()

    def on_error(self, error: BaseException) -> None:
        self.error = error
        self.done.set()

    def on_completed(self) -> None:
        self.completed = True
        self.done.set()


class Outcome(Ending):
    """Every event of one response (all types), and how it ended."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[ChatEvent] = []

    def of(self, kind: ChatEventType) -> list[ChatEvent]:
        """The events of ``kind``."""
        return [event for event in self.events if event.type is kind]


class Watch(Outcome):
    """An :class:`Outcome` whose ``on_next`` also sets ``seen`` at the first event of
    ``kind`` (for a test that acts, a disposal say, once the response got that far)."""

    def __init__(self, kind: ChatEventType) -> None:
        super().__init__()
        self.kind = kind
        self.seen = threading.Event()

    def on_next(self, event: ChatEvent) -> None:
        self.events.append(event)
        if event.type is self.kind:
            self.seen.set()


def observed(source: Observable[ChatEvent], timeout: float = 10.0) -> Outcome:
    """Subscribe to ``source`` and wait, at most ``timeout``, for its end."""
    outcome = Outcome()
    subscription = source.subscribe(outcome.events.append, outcome.on_error, outcome.on_completed)
    try:
        assert outcome.done.wait(timeout), "the response did not end in time"
    finally:
        subscription.dispose()
    return outcome


def outcome_of(prompt: ChatPrompt, timeout: float = 10.0) -> Outcome:
    """Subscribe to ``prompt`` (every event type) and wait, at most ``timeout``, for its end."""
    return observed(prompt.event_filter(ChatEventFilter.all()).stream(), timeout)


def astream_outcome_of(prompt: ChatPrompt, timeout: float = 10.0) -> tuple[Outcome, list[str]]:
    """``outcome_of`` through ``astream()``, on a loop of its own (``asyncio.run``); and the
    other tasks still on that loop when the response had ended."""

    ours: set[asyncio.Task[Any] | None] = set()

    async def collect() -> tuple[Outcome, list[str]]:
        ours.add(asyncio.current_task())
        outcome = Outcome()
        try:
            async for event in prompt.event_filter(ChatEventFilter.all()).astream():
                outcome.events.append(event)
        except Exception as exc:
            outcome.on_error(exc)
        else:
            outcome.on_completed()
        return outcome, [repr(task) for task in asyncio.all_tasks() if task not in ours]

    async def within() -> tuple[Outcome, list[str]]:
        ours.add(asyncio.current_task())
        return await asyncio.wait_for(collect(), timeout)

    return asyncio.run(within())
