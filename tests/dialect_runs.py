"""Feeding frames to a dialect, for the dialect tests.

Through ``parse_frame`` the way the parse stage does, or through one of the dialect's own
functions: the general code that a fast path must match event for event.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from solon_events.dialects.base import ChatStreamContext


def feed(
    parse: Callable[[ChatStreamContext, Any], None],
    frames: Iterable[Any],
    *,
    response_id: str,
    step: int = 0,
    end: Callable[[ChatStreamContext], None] | None = None,
) -> tuple[list[Any], ChatStreamContext]:
    """The events (typed loosely for brevity) and the context after ``parse(ctx, frame)`` for
    each frame, numbered from 1, then ``end(ctx)`` if given."""
    events: list[Any] = []
    ctx = ChatStreamContext(events.append, step=step, response_id=response_id)
    for frame in frames:
        ctx.frame_number += 1
        parse(ctx, frame)
    if end is not None:
        end(ctx)
    return events, ctx


def outcome(events: list[Any], ctx: ChatStreamContext) -> tuple[Any, ...]:
    """Everything a caller can see of a run: the events (all fields) and the context."""
    failure = ctx.failure
    return (
        events,
        ctx.provider_response_id,
        ctx.model,
        ctx.finished,
        ctx.finish_reason,
        None if failure is None else (type(failure), str(failure)),
    )
