"""A dialect that reads an ABORT (the provider stopping the response) after some text
deltas: what the core does with a provider's abort, on any route of the embedded
provider."""

from __future__ import annotations

from typing import Any

from solon_events import ChatEvent, ChatStreamContext, get_dialect
from solon_events.event_model.events import EVENT_TYPES as T


def aborting(dialect: str, after: int) -> Any:
    """``dialect`` as a dialect of one's own that reads an ABORT after ``after`` text
    deltas."""
    base = type(get_dialect(dialect))

    def parse_frame(self: Any, ctx: ChatStreamContext, frame: Any) -> None:
        base.parse_frame(self, ctx, frame)
        recorded = ctx.take()
        for outcome in recorded:  # recorded again, as they were
            ctx.emit(outcome)  # type: ignore[arg-type]
        seen = ctx.state.get("deltas", 0) + sum(
            1 for o in recorded if isinstance(o, ChatEvent) and o.type is T.TEXT_DELTA
        )
        ctx.state["deltas"] = seen
        if seen >= after and not ctx.state.get("aborted"):
            ctx.state["aborted"] = True
            ctx.send(T.ABORT, text="stopped by the provider")

    return type(f"Aborting{base.__name__}", (base,), {"parse_frame": parse_frame})()
