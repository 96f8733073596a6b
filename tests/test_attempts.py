"""The arbiter of many models' attempts, alone (solon_events.core.attempts; sans-I/O)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from solon_events import (
    AssistantMessage,
    Attempt,
    ChatError,
    ChatEvent,
    ChatEventType,
    ToolCall,
)
from solon_events.core.attempts import AttemptArbiter, AttemptPolicy, Continuation
from solon_events.messages import ToolMessage, UserMessage
from solon_events.results import ChatResponse, Usage

T = ChatEventType


class Driver:
    def __init__(self) -> None:
        self.started: list[tuple[int, Continuation | None]] = []
        self.stopped: list[int] = []
        self.timers: list[tuple[float, Callable[[], None]]] = []

    def start(self, index: int, continuation: Continuation | None) -> None:
        self.started.append((index, continuation))

    def stop(self, index: int) -> None:
        self.stopped.append(index)

    def later(self, seconds: float, callback: Callable[[], None]) -> None:
        self.timers.append((seconds, callback))


class Down:
    def __init__(self) -> None:
        self.events: list[ChatEvent] = []
        self.end: Any = None

    def on_next(self, event: ChatEvent) -> None:
        self.events.append(event)

    def on_error(self, error: Exception) -> None:
        self.end = error

    def on_completed(self) -> None:
        self.end = "completed"


def arbiter(members: int = 2, **policy: Any) -> tuple[AttemptArbiter, Driver, Down]:
    driver, down = Driver(), Down()
    made = AttemptArbiter(
        down,
        [f"m{i}" for i in range(members)],
        AttemptPolicy(**policy),
        driver,
        response_id="resp_x",
        messages=(UserMessage(text="weather?"),),
    )
    made.open()
    return made, driver, down


def test_a_fallback_starts_one_member_and_the_next_on_failure() -> None:
    arb, driver, down = arbiter(3)
    assert [i for i, _ in driver.started] == [0] and not driver.timers
    arb.sink(0).on_next(ChatEvent(T.STEP_START))
    arb.sink(0).on_error(ChatError("boom"))
    assert [i for i, _ in driver.started] == [0, 1]
    assert [e.type for e in down.events] == [T.RESPONSE_START, T.STATUS]
    assert down.events[1].attrs["model"] == "m0" and down.events[1].attrs["reason"] == "boom"


def test_a_hedge_starts_the_next_member_when_its_timer_fires() -> None:
    arb, driver, down = arbiter(3, after=0.5)
    assert driver.timers[0][0] == 0.5
    driver.timers[0][1]()
    assert [i for i, _ in driver.started] == [0, 1]
    arb.sink(1).on_next(ChatEvent(T.TEXT_DELTA, text="hi"))
    assert driver.stopped == [0]
    driver.timers[1][1]()  # the third member's timer, after a winner: nothing starts
    assert [i for i, _ in driver.started] == [0, 1]
    assert [e.sub_type for e in down.events if e.type is T.STATUS] == ["hedge"]


def test_a_race_starts_every_member_at_once() -> None:
    _arb, driver, _down = arbiter(3, after=0)
    assert [i for i, _ in driver.started] == [0, 1, 2] and not driver.timers


def test_a_raising_condition_ends_the_response_with_the_failure() -> None:
    def broken(error: BaseException) -> bool:
        raise RuntimeError("bug in the condition")

    arb, driver, down = arbiter(2, on=broken)
    failure = ChatError("boom")
    arb.sink(0).on_error(failure)
    assert down.end is failure and [i for i, _ in driver.started] == [0]


def test_dispose_stops_what_runs_and_delivers_nothing_more() -> None:
    arb, driver, down = arbiter(2, after=0)
    arb.dispose()
    assert sorted(driver.stopped) == [0, 1]
    arb.sink(0).on_next(ChatEvent(T.TEXT_DELTA, text="late"))
    arb.sink(1).on_error(ChatError("late"))
    assert [e.type for e in down.events] == [T.RESPONSE_START] and down.end is None


def test_a_restart_continues_the_conversation_after_the_tool_steps() -> None:
    arb, driver, down = arbiter(2, mid_stream="restart")
    sink = arb.sink(0)
    call = ToolCall(id="c1", name="get_weather", arguments={"city": "Paris"})
    turn = AssistantMessage(text="", tool_calls=(call,))
    sink.on_next(ChatEvent(T.STEP_START, step=0))
    sink.on_next(ChatEvent(T.TOOL_CALL_START, step=0, tool_call_id="c1"))
    sink.on_next(ChatEvent(T.TOOL_CALL_END, step=0, tool_call_id="c1"))
    sink.on_next(
        ChatEvent(
            T.TOOL_RESULT, step=0, tool_call_id="c1", tool_call=call, text="sunny",
            attrs={"tool_name": "get_weather", "is_error": False},
        )
    )  # fmt: skip
    sink.on_next(ChatEvent(T.STEP_END, step=0, response=ChatResponse(message=turn)))
    sink.on_next(ChatEvent(T.STEP_START, step=1))
    sink.on_next(ChatEvent(T.TEXT_DELTA, step=1, text="It is"))
    partial = ChatResponse(message=AssistantMessage(text="It is"))
    sink.on_next(ChatEvent(T.STEP_END, step=1, response=partial))
    failure = ChatError("connection reset")
    sink.on_next(ChatEvent(T.ERROR, step=1, error=failure, usage=Usage(prompt_tokens=3)))
    sink.on_error(failure)
    ((index, continuation),) = driver.started[1:]
    assert index == 1 and continuation is not None
    assert continuation.first_step == 2
    assert continuation.messages == (
        UserMessage(text="weather?"),
        turn,
        ToolMessage(tool_call_id="c1", name="get_weather", content="sunny"),
    )
    assert T.ERROR not in [e.type for e in down.events]  # the response goes on
    status = down.events[-1]
    assert status.attrs["mode"] == "restart" and status.attrs["abandoned_text"] == "It is"
    assert arb.attempts[0].outcome == "failed" and arb.attempts[0].usage == Usage(prompt_tokens=3)


def test_a_tool_failure_is_never_restarted() -> None:
    from solon_events import ToolCallError

    arb, driver, down = arbiter(2, mid_stream="restart")
    sink = arb.sink(0)
    sink.on_next(ChatEvent(T.TEXT_DELTA, text="x"))
    failure = ToolCallError("tool broke", tool_name="t")
    sink.on_next(ChatEvent(T.ERROR, error=failure))
    sink.on_error(failure)
    assert down.end is failure and len(driver.started) == 1
    assert down.events[-1].type is T.ERROR


def test_an_arbiter_needs_members() -> None:
    with pytest.raises(ValueError):
        AttemptArbiter(Down(), [], AttemptPolicy(), Driver(), response_id="r")


def test_the_response_lists_every_attempt_and_sums_their_usage() -> None:
    arb, _driver, down = arbiter(2)
    failure = ChatError("cut off")
    billed = Usage(prompt_tokens=10, completion_tokens=3)
    arb.sink(0).on_next(ChatEvent(T.STEP_START))
    arb.sink(0).on_next(ChatEvent(T.ERROR, usage=billed))  # what it reported before failing
    arb.sink(0).on_error(failure)
    answer = ChatResponse(text="hi", usage=Usage(prompt_tokens=10, completion_tokens=2))
    for event in (
        ChatEvent(T.STEP_START),
        ChatEvent(T.TEXT_DELTA, text="hi"),
        ChatEvent(T.STEP_END),
        ChatEvent(T.RESPONSE_END, response=answer),
    ):
        arb.sink(1).on_next(event)
    arb.sink(1).on_completed()
    response = down.events[-1].response
    assert response is not None and response.text == "hi"
    assert response.attempts == (
        Attempt(model="m0", outcome="failed", error=failure, usage=billed),
        Attempt(model="m1", outcome="answered", usage=answer.usage),
    )
    assert response.usage is not None
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (20, 5)


def test_a_cancelled_loser_is_listed_without_usage() -> None:
    arb, _driver, down = arbiter(2, after=0)
    answer = ChatResponse(text="hi", usage=Usage(prompt_tokens=4, completion_tokens=1))
    arb.sink(1).on_next(ChatEvent(T.TEXT_DELTA, text="hi"))
    arb.sink(1).on_next(ChatEvent(T.RESPONSE_END, response=answer))
    response = down.events[-1].response
    assert response is not None
    assert [(a.model, a.outcome, a.usage) for a in response.attempts] == [
        ("m0", "cancelled", None),
        ("m1", "answered", answer.usage),
    ]
    assert response.usage == answer.usage
