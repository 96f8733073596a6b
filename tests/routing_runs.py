"""What the tests of many models as one share: a stream() or astream() run to its end, a
tool that notes its calls."""

from __future__ import annotations

import threading
from typing import Any

from solon_events import ChatError, ChatEvent, Tool, tool

__all__ = ["acollect", "collect", "weather_tool"]


def collect(stream: Any, timeout: float = 10.0) -> tuple[list[ChatEvent], BaseException | None]:
    """Every event of one subscription of ``stream`` and the failure it ended with."""
    events: list[ChatEvent] = []
    errors: list[BaseException] = []
    done = threading.Event()

    def on_error(error: BaseException) -> None:
        errors.append(error)
        done.set()

    subscription = stream.subscribe(events.append, on_error, done.set)
    assert done.wait(timeout), "the stream did not end"
    subscription.dispose()
    return events, errors[0] if errors else None


async def acollect(prompt: Any) -> tuple[list[ChatEvent], BaseException | None]:
    """Every event of ``prompt.astream()`` and the ChatError it ended with."""
    events: list[ChatEvent] = []
    try:
        async for event in prompt.astream():
            events.append(event)
    except ChatError as error:
        return events, error
    return events, None


def weather_tool(cities: list[str]) -> Tool:
    """A ``get_weather`` tool that notes each city it is asked about."""

    @tool
    def get_weather(city: str) -> str:
        """Current weather in a city.

        Args:
            city: The city's name.
        """
        cities.append(city)
        return "18°C and sunny"

    return get_weather
