"""Feeding frames to a dialect, for the dialect tests.

Through the parse stage, the way the ``parse`` operator runs a dialect, with the dialect's
own ``parse_frame`` or with one of its functions in its place (the general code that a fast
path must match event for event). The events are the dialect's own: the stage's STEP_START
and STEP_END are left out; the stage itself tells what the dialect recorded besides events
(``finished``, ``finish_reason``, ``failure``, ``model``, ``provider_response_id``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import pytest
from hypothesis import strategies as st
from sinks import Recorder

from solon_events import ChatEvent, ChatEventType, ChatProtocolError
from solon_events.core.parsing import ParseStage
from solon_events.dialects import ChatDialect, ChatStreamContext

DONE = "[DONE]"
"""The sentinel frame, for dialects that take it."""

_BRACKETS = (ChatEventType.STEP_START, ChatEventType.STEP_END)


Shape = list[tuple[str, int, str | None]]


def shape(events: Iterable[ChatEvent]) -> Shape:
    """Each event's type name, index and text: what the dialect tests compare."""
    return [(e.type.name, e.index, e.text) for e in events]


def block(kind: str, index: int, *deltas: str) -> Shape:
    """The :func:`shape` of one content block at ``index``: ``kind``'s START, a DELTA per
    text of ``deltas``, END (``block("TEXT", 0, "Hi")``)."""
    return [(f"{kind}_START", index, None), *((f"{kind}_DELTA", index, d) for d in deltas),
            (f"{kind}_END", index, None)]  # fmt: skip


def of(events: Iterable[ChatEvent], *types: ChatEventType) -> list[ChatEvent]:
    """The events of ``types``, in order."""
    return [e for e in events if e.type in types]


class _Driven(ChatDialect):
    """A dialect whose ``parse_frame`` (and ``end_of_stream``) are the functions given."""

    name = "driven"

    def __init__(
        self,
        parse: Callable[[ChatStreamContext, Any], None],
        end: Callable[[ChatStreamContext], None] | None,
        done: Callable[[ChatStreamContext], None] | None,
    ) -> None:
        self._parse = parse
        self._end = end
        self._done = done

    def parse_frame(self, ctx: ChatStreamContext, frame: Any) -> None:
        self._parse(ctx, frame)

    def claims(self, frame: Any) -> bool:
        return True  # it stands for the dialect whose functions it runs: no hint of another

    def parse_done(self, ctx: ChatStreamContext) -> None:
        (self._done or super().parse_done)(ctx)

    def end_of_stream(self, ctx: ChatStreamContext) -> None:
        if self._end is not None:
            self._end(ctx)


def feed(
    parse: ChatDialect | Callable[[ChatStreamContext, Any], None],
    frames: Iterable[Any],
    *,
    response_id: str | None = None,
    step: int = 0,
    end: Callable[[ChatStreamContext], None] | None = None,
    done: Callable[[ChatStreamContext], None] | None = None,
) -> tuple[list[Any], ParseStage]:
    """The events (typed loosely for brevity) and the parse stage after each frame, then
    the end of the stream when ``end`` is given (the dialect's ``end_of_stream``).

    A :class:`ChatProtocolError` the dialect raised (the stage names the frame) is raised
    here; a provider failure is the stage's ``failure``.
    """
    dialect = parse if isinstance(parse, ChatDialect) else _Driven(parse, end, done)
    recorder = Recorder()
    stage = ParseStage(dialect, recorder, step=step, response_id=response_id)
    for frame in frames:
        stage.on_next(frame)
    if isinstance(stage.failure, ChatProtocolError):
        raise stage.failure
    if end is not None and stage.failure is None:
        stage.on_completed()
    return [e for e in recorder.events if e.type not in _BRACKETS], stage


def outcome(events: list[Any], stage: ParseStage) -> tuple[Any, ...]:
    """Everything a caller can see of a run: the events (all fields) and the stage's state."""
    failure = stage.failure
    return (
        events,
        stage.provider_response_id,
        stage.model,
        stage.finished,
        stage.finish_reason,
        None if failure is None else (type(failure), str(failure)),
    )


Run = Callable[[Iterable[Any]], tuple[list[Any], ParseStage]]
"""A way to feed frames: ``feed`` with a dialect, or with one of its functions."""

ODD_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=5), inner, max_size=2)
    ),
    max_leaves=4,
)
"""Small odd JSON values, to put where a dialect reads a frame."""


@st.composite
def odd_frames(
    draw: st.DrawFn,
    streams: Sequence[list[Any]],
    places: Sequence[tuple[str, ...]],
    names: Sequence[Any],
) -> list[Any]:
    """One of ``streams`` with a few frames changed: at one of ``places`` (a path of keys),
    an odd value or one of ``names`` (the values a fast path looks for)."""
    frames = json.loads(json.dumps(draw(st.sampled_from(streams))))
    for _ in range(draw(st.integers(1, 3))):
        target = frames[draw(st.integers(0, len(frames) - 1))]
        path = draw(st.sampled_from(places))
        for key in path[:-1]:
            target = target.get(key) if isinstance(target, dict) else None
        if isinstance(target, dict):
            target[path[-1]] = draw(ODD_VALUES | st.sampled_from(names))
    return frames


def assert_same_outcome(fast: Run, general: Run, frames: list[Any]) -> None:
    """``frames`` fed both ways give the same :func:`outcome`, or fail alike."""
    try:
        seen = outcome(*fast(frames))
    except ChatProtocolError as exc:
        with pytest.raises(ChatProtocolError) as general_exc:
            general(frames)
        assert str(general_exc.value) == str(exc)
        return
    assert seen == outcome(*general(frames))
