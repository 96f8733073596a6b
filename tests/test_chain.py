"""The documented chain after ``parse()``: each event folded into the response once, and what
``respond()`` (the same stages, called directly) delivers."""

from __future__ import annotations

from typing import Any

import pytest
import reactivex

from solon_events import ChatAccumulator, ChatEvent, ChatEventFilter, ChatEventType
from solon_events.operators import aggregate, guard, normalize, parse, respond
from solon_events.wire.sse import iter_frames
from tests.recorded import TEXT_DIALECTS, text_body, weather_bodies

DIALECTS = TEXT_DIALECTS


def _bodies(dialect: str) -> list[bytes]:
    return [text_body(dialect, "Hel", "lo"), *weather_bodies(dialect, "sunny")]


def _run(body: bytes, *operators: Any) -> list[Any]:
    seen: list[Any] = []
    reactivex.from_iterable(iter_frames(body)).pipe(*operators).subscribe(
        seen.append, seen.append, lambda: seen.append("completed")
    )
    return seen


@pytest.mark.parametrize("dialect", DIALECTS)
def test_parse_normalize_aggregate_folds_each_event_once_and_delivers_what_respond_does(
    dialect: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    folded: list[ChatEvent] = []
    fold = ChatAccumulator.add

    def add(self: ChatAccumulator, event: ChatEvent) -> None:
        folded.append(event)
        fold(self, event)

    monkeypatch.setattr(ChatAccumulator, "add", add)
    everything = ChatEventFilter.all()
    for body in _bodies(dialect):
        folded.clear()
        chained = _run(
            body,
            parse(dialect, response_id="r"),
            normalize(),
            aggregate(response_id="r"),
            guard(everything),
        )
        folded_by_chain = list(folded)
        folded.clear()
        composed = _run(
            body, parse(dialect, response_id="r"), respond(response_id="r", event_filter=everything)
        )
        assert chained == composed
        assert chained[-1] == "completed"
        assert folded_by_chain, "the parse stage folds the step's events"
        assert len({id(event) for event in folded_by_chain}) == len(folded_by_chain)
        assert folded_by_chain == folded


def test_aggregate_folds_the_steps_of_any_other_source_unless_told_not_to() -> None:
    """After a source that is not parse(), aggregate() folds each step's events itself."""
    events = [
        ChatEvent(ChatEventType.STEP_START),
        ChatEvent(ChatEventType.TEXT_DELTA, text="Hi"),
        ChatEvent(ChatEventType.STEP_END),
    ]
    texts = []
    for fold_steps in (None, True, False):
        seen: list[ChatEvent] = []
        reactivex.from_iterable(events).pipe(
            normalize(), aggregate(fold_steps=fold_steps)
        ).subscribe(seen.append)
        texts.append(seen[-1].response.text if seen[-1].response else None)
    assert texts == ["Hi", "Hi", ""]
