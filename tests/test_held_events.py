"""An event a dialect holds back (``ChatStreamContext.hold``): sent once, the latest held,
just before the STEP_END of its step, however the step ends (#48).

Gemini repeats its cumulative usage on every frame; the dialect sends the step's first
snapshot at once and holds the later ones. Here a small dialect drives the parse stage the
way Gemini's does, through every ending: completion, a cut stream, a provider failure, an
ABORT, another provider response, a cancellation, and a failure the caller reports.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sinks import Recorder

from solon_events import ChatEvent, ChatEventType, ChatProtocolError, ProviderError, Usage
from solon_events.core.parsing import ParseStage
from solon_events.dialects import ChatDialect, ChatStreamContext

T = ChatEventType


def _usage_event(ctx: ChatStreamContext, total: int, _source: Any) -> ChatEvent:
    return ctx.event(T.USAGE, usage=Usage(prompt_tokens=1, completion_tokens=total - 1))


class _Holding(ChatDialect):
    """Frames are dicts: ``text`` -> TEXT_DELTA, ``usage`` (a total) -> held USAGE,
    ``finish`` -> the completion signal, ``error`` -> a provider failure, ``abort`` ->
    ABORT, ``next`` -> another provider response."""

    name = "holding"

    def parse_frame(self, ctx: ChatStreamContext, frame: Any) -> None:
        if "next" in frame:
            ctx.next_response()
        if "text" in frame:
            ctx.send(T.TEXT_DELTA, text=frame["text"])
        if "usage" in frame:
            ctx.hold(_usage_event, frame["usage"])
        if frame.get("finish"):
            ctx.finish("stop")
        if "error" in frame:
            ctx.fail(frame["error"])
        if frame.get("abort"):
            ctx.send(T.ABORT)


def _drive(frames: list[dict[str, Any]], *, end: bool = True) -> tuple[Recorder, ParseStage]:
    sink = Recorder()
    stage = ParseStage(_Holding(), sink, response_id="r")
    stage.start()
    for frame in frames:
        stage.on_next(frame)
    if end:
        stage.on_completed()
    return sink, stage


def _seen(sink: Recorder) -> list[tuple[str, Any]]:
    """Each event's type name and its total usage (USAGE, STEP_END) or text."""
    seen: list[tuple[str, Any]] = []
    for event in sink.events:
        if event.type in (T.USAGE, T.STEP_END):
            seen.append((event.type.name, event.usage.total_tokens if event.usage else None))
        else:
            seen.append((event.type.name, event.text))
    return seen


def test_the_latest_held_comes_once_before_the_step_end() -> None:
    sink, _ = _drive([{"text": "a", "usage": 3}, {"text": "b", "usage": 5}, {"finish": True}])
    assert _seen(sink) == [
        ("STEP_START", None),
        ("TEXT_DELTA", "a"),
        ("TEXT_DELTA", "b"),
        ("USAGE", 5),
        ("STEP_END", 5),
    ]
    assert sink.completed


@pytest.mark.parametrize(
    ("last", "failure"),
    [
        pytest.param({}, ChatProtocolError, id="cut-short"),
        pytest.param({"error": {"message": "overloaded"}}, ProviderError, id="provider-error"),
    ],
)
def test_a_failed_step_keeps_the_latest_held(last: dict[str, Any], failure: type) -> None:
    sink, _ = _drive([{"text": "a", "usage": 3}, {"usage": 8, **last}])
    assert _seen(sink)[-2:] == [("USAGE", 8), ("STEP_END", 8)]
    assert [type(e) for e in sink.errors] == [failure]


def test_a_failure_the_caller_reports_keeps_the_latest_held() -> None:
    sink, stage = _drive([{"text": "a", "usage": 4}], end=False)
    stage.on_error(ConnectionResetError("peer left"))
    assert _seen(sink)[-2:] == [("USAGE", 4), ("STEP_END", 4)]


def test_an_abort_ends_the_step_with_the_latest_held() -> None:
    sink, _ = _drive([{"text": "a", "usage": 6}, {"abort": True}], end=False)
    assert [name for name, _ in _seen(sink)] == [
        "STEP_START", "TEXT_DELTA", "USAGE", "STEP_END", "ABORT",
    ]  # fmt: skip
    assert sink.completed


def test_another_response_ends_the_first_step_with_its_own_latest() -> None:
    sink, _ = _drive(
        [
            {"text": "a", "usage": 3},
            {"usage": 4, "finish": True},
            {"next": True, "text": "b", "usage": 9},
            {"finish": True},
        ]
    )
    assert [(e.type.name, e.step) for e in sink.events if e.type in (T.USAGE, T.STEP_END)] == [
        ("USAGE", 0),
        ("STEP_END", 0),
        ("USAGE", 1),
        ("STEP_END", 1),
    ]
    assert [e.usage.total_tokens for e in sink.events if e.type is T.USAGE] == [4, 9]


def test_a_cancelled_step_is_settled_with_the_latest_held_and_sends_nothing() -> None:
    sink, stage = _drive([{"text": "a", "usage": 3}, {"usage": 7}], end=False)
    before = len(sink.events)
    assert stage.settled().usage.total_tokens == 7
    assert len(sink.events) == before


@given(st.lists(st.integers(1, 10_000), min_size=1, max_size=30), st.booleans())
def test_one_usage_per_step_and_it_is_the_last_held(totals: list[int], finish: bool) -> None:
    frames: list[dict[str, Any]] = [{"text": "x", "usage": n} for n in totals]
    sink, _ = _drive([*frames, {"finish": finish}])
    usages = [e.usage.total_tokens for e in sink.events if e.type is T.USAGE]
    assert usages == [totals[-1]]
    assert sink.events[-1].type is T.STEP_END and sink.events[-1].usage.total_tokens == totals[-1]
    assert bool(sink.errors) is not finish
