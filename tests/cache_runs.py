"""Runs of the response cache's tests: identical requests held at the embedded provider's
gate until each one has the answer so far."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from solon_events import ChatEvent, ChatModel
from solon_events.devserver import RunningServer
from solon_events.event_model.events import EVENT_TYPES as T

GATED_ANSWER = "Before the gate. After the gate."
"""What the ``gate`` scenario answers, once its gate is open."""


async def ask(model: ChatModel, told: asyncio.Queue[int] | None = None) -> list[ChatEvent]:
    """One response's events through ``astream()``; ``told`` hears of its first text."""
    events: list[ChatEvent] = []
    async for event in model.prompt("hi").astream():
        events.append(event)
        if told is not None and event.type is T.TEXT_DELTA and len(events) < 10:
            told.put_nowait(1)
    return events


def at_the_gate(
    models: Sequence[ChatModel], server: RunningServer, count: int = 50
) -> list[list[ChatEvent]]:
    """``count`` identical requests at once (to ``models`` in turn), the provider's gate
    opened only once each has the answer so far; every response's events."""

    async def main() -> list[list[ChatEvent]]:
        told: asyncio.Queue[int] = asyncio.Queue()
        tasks = [asyncio.ensure_future(ask(models[i % len(models)], told)) for i in range(count)]
        for _ in range(count):
            await asyncio.wait_for(told.get(), 15)
        server.open_gate()
        return await asyncio.gather(*tasks)

    return asyncio.run(main())
