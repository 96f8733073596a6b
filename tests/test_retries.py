"""Retries before the first frame, and how they show: STATUS events with sub_type="retry"."""

from __future__ import annotations

from typing import Any

import orjson
import reactivex

from solon_events import ChatEvent, ChatEventType, ChatProtocolError, parse

T = ChatEventType


def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return orjson.dumps({"id": "c-1", "object": "chat.completion.chunk", "choices": [choice]})


def retry_status(attempt: int) -> ChatEvent:
    return ChatEvent(
        T.STATUS, sub_type="retry", attrs={"attempt": attempt, "delay": 0.5, "cause": "HTTP 503"}
    )


# --- the parse stage's hook: an event among the frames is relayed, not parsed


def test_an_event_among_the_frames_is_relayed_into_the_step_uncounted() -> None:
    frames: list[Any] = [retry_status(1), retry_status(2), chunk({"content": "Hi"}), "[DONE]"]
    frames.insert(3, chunk({}, "stop"))
    events: list[ChatEvent] = []
    errors: list[Exception] = []
    reactivex.from_iterable(frames).pipe(parse("openai", step=3, response_id="r-1")).subscribe(
        events.append, errors.append
    )
    assert not errors
    types = [e.type for e in events]
    assert types[:3] == [T.STEP_START, T.STATUS, T.STATUS]
    statuses = [e for e in events if e.type is T.STATUS]
    assert [e.attrs["attempt"] for e in statuses] == [1, 2]
    assert all(e.step == 3 and e.response_id == "r-1" for e in statuses)
    assert all(e.sub_type == "retry" and not e.raw for e in statuses)
    end = events[-1]
    assert end.type is T.STEP_END and end.response is not None and end.response.text == "Hi"


def test_relayed_events_are_not_frames() -> None:
    events: list[ChatEvent] = []
    errors: list[Exception] = []
    reactivex.from_iterable([retry_status(1)]).pipe(parse("openai")).subscribe(
        events.append, errors.append
    )
    assert [e.type for e in events] == [T.STEP_START, T.STATUS, T.STEP_END]  # the failed step
    (error,) = errors
    assert isinstance(error, ChatProtocolError) and "without a single frame" in str(error)
