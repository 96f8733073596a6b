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
from solon_events.core.attempts import (
    LOSER_REPORT_WAIT,
    AttemptArbiter,
    AttemptPolicy,
    Continuation,
)
from solon_events.event_model.messages import ToolMessage, UserMessage
from solon_events.event_model.results import ChatResponse, Usage

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


def arbiter(
    members: int = 2, prefills: tuple[bool, ...] = (), **policy: Any
) -> tuple[AttemptArbiter, Driver, Down]:
    driver, down = Driver(), Down()
    made = AttemptArbiter(
        down,
        [f"m{i}" for i in range(members)],
        AttemptPolicy(**policy),
        driver,
        response_id="resp_x",
        messages=(UserMessage(text="weather?"),),
        prefills=prefills,
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


def test_response_end_carries_the_sum_of_the_attempts_usage_as_its_own() -> None:
    # #42: the event's usage was the last attempt's alone (40), its response's the sum (163)
    arb, _driver, down = arbiter(2)
    arb.sink(0).on_next(ChatEvent(T.ERROR, usage=Usage(prompt_tokens=123)))
    arb.sink(0).on_error(ChatError("overloaded"))
    answer = ChatResponse(text="hi", usage=Usage(prompt_tokens=40))
    arb.sink(1).on_next(ChatEvent(T.TEXT_DELTA, text="hi"))
    arb.sink(1).on_next(ChatEvent(T.RESPONSE_END, response=answer, usage=answer.usage))
    end = down.events[-1]
    assert end.type is T.RESPONSE_END and end.response is not None
    assert end.usage is end.response.usage and end.usage.prompt_tokens == 163


def test_an_error_after_every_attempt_failed_lists_them_all_with_their_usage() -> None:
    arb, _driver, down = arbiter(2)
    first, last = ChatError("overloaded"), ChatError("overloaded again")
    arb.sink(0).on_next(ChatEvent(T.ERROR, usage=Usage(prompt_tokens=123), error=first))
    arb.sink(0).on_error(first)
    partial = ChatResponse(text="", usage=Usage(prompt_tokens=40))
    arb.sink(1).on_next(ChatEvent(T.ERROR, usage=partial.usage, response=partial, error=last))
    arb.sink(1).on_error(last)
    error = down.events[-1]
    assert error.type is T.ERROR and down.end is last and error.response is not None
    assert [(a.model, a.outcome, a.error) for a in error.response.attempts] == [
        ("m0", "failed", first),
        ("m1", "failed", last),
    ]
    assert [a.usage for a in error.response.attempts] == [Usage(prompt_tokens=123), partial.usage]
    assert error.usage is error.response.usage and error.usage.prompt_tokens == 163
    assert last.partial_response is error.response  # what call() raises says the same


def test_a_winner_failing_mid_answer_lists_the_losers_on_its_error() -> None:
    arb, _driver, down = arbiter(2, after=0)
    arb.sink(1).on_next(ChatEvent(T.TEXT_DELTA, text="hi"))
    arb.usage_reported(0, Usage(prompt_tokens=5))
    failure = ChatError("cut")
    arb.sink(1).on_next(ChatEvent(T.ERROR, usage=Usage(prompt_tokens=7), error=failure))
    assert down.events[-1].type is T.TEXT_DELTA  # held until its on_error
    arb.sink(1).on_error(failure)
    error = down.events[-1]
    assert error.type is T.ERROR and down.end is failure and error.response is not None
    assert [(a.outcome, a.usage) for a in error.response.attempts] == [
        ("cancelled", Usage(prompt_tokens=5)),
        ("failed", Usage(prompt_tokens=7)),
    ]
    assert error.usage is not None and error.usage.prompt_tokens == 12


def test_a_disposed_group_tells_the_sum_of_its_attempts_once_each_has_told_its_own() -> None:
    told: list[Usage | None] = []
    driver, down = Driver(), Down()
    arb = AttemptArbiter(
        down, ["m0", "m1"], AttemptPolicy(after=0), driver, response_id="r", on_stopped=told.append
    )
    arb.open()
    arb.dispose()
    assert sorted(driver.stopped) == [0, 1] and told == []
    arb.usage_reported(0, Usage(prompt_tokens=3))
    assert told == []  # m1 has not told its own yet
    arb.usage_reported(1, Usage(prompt_tokens=4))
    assert [usage.prompt_tokens if usage else None for usage in told] == [7]
    arb.dispose()
    arb.usage_reported(1, Usage(prompt_tokens=4))
    assert len(told) == 1


def test_a_cancelled_loser_has_the_usage_its_model_reports_once_stopped() -> None:
    arb, driver, down = arbiter(2, after=0)
    answer = ChatResponse(text="hi", usage=Usage(prompt_tokens=4, completion_tokens=1))
    arb.sink(1).on_next(ChatEvent(T.TEXT_DELTA, text="hi"))
    assert driver.stopped == [0]
    arb.sink(1).on_next(ChatEvent(T.RESPONSE_END, response=answer))
    arb.sink(1).on_completed()
    # the end waits for the loser's report (at most LOSER_REPORT_WAIT: a timer)
    assert down.events[-1].type is T.TEXT_DELTA and down.end is None
    assert [seconds for seconds, _ in driver.timers] == [LOSER_REPORT_WAIT]
    estimated = Usage(prompt_tokens=4, source={"estimated_by": "heuristic"}, estimated=True)
    arb.usage_reported(0, estimated)  # cancelled before any count: #32's estimate
    response = down.events[-1].response
    assert response is not None and down.end == "completed"
    assert [(a.model, a.outcome, a.usage) for a in response.attempts] == [
        ("m0", "cancelled", estimated),
        ("m1", "answered", answer.usage),
    ]
    assert response.usage is not None and response.usage.estimated  # a sum with an estimate
    assert response.usage.prompt_tokens == 8
    driver.timers[0][1]()  # the timer after it delivers nothing more
    assert [e.type for e in down.events].count(T.RESPONSE_END) == 1


def test_a_loser_that_never_reports_is_listed_without_usage_after_the_wait() -> None:
    arb, driver, down = arbiter(2, after=0)
    answer = ChatResponse(text="hi", usage=Usage(prompt_tokens=4, completion_tokens=1))
    arb.sink(1).on_next(ChatEvent(T.TEXT_DELTA, text="hi"))
    arb.sink(1).on_next(ChatEvent(T.RESPONSE_END, response=answer))
    arb.sink(1).on_completed()
    ((_, wait_over),) = driver.timers
    wait_over()
    response = down.events[-1].response
    assert response is not None and down.end == "completed"
    assert [(a.outcome, a.usage) for a in response.attempts] == [
        ("cancelled", None),
        ("answered", answer.usage),
    ]
    arb.usage_reported(0, Usage(prompt_tokens=1))  # too late: nothing more is delivered
    assert [e.type for e in down.events].count(T.RESPONSE_END) == 1


def test_a_loser_reported_before_the_end_does_not_hold_it() -> None:
    arb, driver, down = arbiter(2, after=0)
    arb.sink(1).on_next(ChatEvent(T.TEXT_DELTA, text="hi"))
    arb.usage_reported(0, Usage(prompt_tokens=2))
    arb.usage_reported(1, Usage(prompt_tokens=9))  # the winner's own: from its events
    answer = ChatResponse(text="hi", usage=Usage(prompt_tokens=4))
    arb.sink(1).on_next(ChatEvent(T.RESPONSE_END, response=answer))
    response = down.events[-1].response
    assert response is not None and not driver.timers
    assert [a.usage for a in response.attempts] == [Usage(prompt_tokens=2), answer.usage]


# --- mid_stream="continue"


def fail_mid_step(arb: AttemptArbiter, index: int, step: int, *said: ChatEvent) -> None:
    """Member ``index`` sends step ``step``'s ``said`` events, then fails (STEP_END with
    the partial text, ERROR)."""
    sink = arb.sink(index)
    sink.on_next(ChatEvent(T.STEP_START, step=step))
    for event in said:
        sink.on_next(event)
    text = "".join(e.text or "" for e in said if e.type is T.TEXT_DELTA)
    thinking = "".join(e.text or "" for e in said if e.type is T.THINKING_DELTA)
    partial = ChatResponse(message=AssistantMessage(text=text, thinking=thinking))
    sink.on_next(ChatEvent(T.STEP_END, step=step, response=partial))
    failure = ChatError("connection reset")
    sink.on_next(ChatEvent(T.ERROR, step=step, error=failure, usage=Usage(prompt_tokens=3)))
    sink.on_error(failure)


def test_a_continuation_sends_the_text_as_a_prefill_and_shows_it_once() -> None:
    arb, driver, down = arbiter(2, prefills=(True, True), mid_stream="continue")
    fail_mid_step(arb, 0, 0, ChatEvent(T.TEXT_DELTA, text="It is "))
    ((index, continuation),) = driver.started[1:]
    assert index == 1 and continuation is not None
    assert continuation.first_step == 1 and continuation.prefill == "It is"  # no trailing space
    assert continuation.messages == (UserMessage(text="weather?"), AssistantMessage(text="It is"))
    status = down.events[-1]
    assert status.attrs["mode"] == "continue" and status.attrs["continued_text"] == "It is "
    sink = arb.sink(1)
    answer = ChatResponse(message=AssistantMessage(text=" sunny."), usage=Usage(prompt_tokens=5))
    for event in (
        ChatEvent(T.STEP_START, step=1),
        ChatEvent(T.TEXT_DELTA, step=1, text=" "),  # shown already: dropped
        ChatEvent(T.TEXT_DELTA, step=1, text="sunny."),
        ChatEvent(T.STEP_END, step=1, response=answer),
        ChatEvent(T.RESPONSE_END, step=1, response=answer),
    ):
        sink.on_next(event)
    sink.on_completed()
    shown = [e.text for e in down.events if e.type is T.TEXT_DELTA]
    assert shown == ["It is ", "sunny."]  # the space the continuation began with, once
    ends = [e.response for e in down.events if e.type in (T.STEP_END, T.RESPONSE_END)]
    assert [r.text for r in ends if r is not None] == ["It is ", "It is sunny.", "It is sunny."]
    final = down.events[-1].response
    assert final is not None and [a.outcome for a in final.attempts] == ["failed", "answered"]
    assert final.usage is not None and final.usage.prompt_tokens == 8


@pytest.mark.parametrize(
    ("said", "prefills", "why"),
    [
        ((ChatEvent(T.THINKING_DELTA, text="Hmm"),), (True, True), "not text alone"),
        (
            (ChatEvent(T.TEXT_DELTA, text="Let me"), ChatEvent(T.TOOL_CALL_START, index=0)),
            (True, True),
            "not text alone",
        ),
        ((ChatEvent(T.TEXT_START), ChatEvent(T.TEXT_DELTA, text="  ")), (True, True), "no text"),
        ((ChatEvent(T.TEXT_DELTA, text="It is"),), (True, False), "no prefill"),
    ],
)
def test_what_cannot_be_continued_is_restarted(
    said: tuple[ChatEvent, ...], prefills: tuple[bool, ...], why: str
) -> None:
    arb, driver, down = arbiter(2, prefills=prefills, mid_stream="continue")
    fail_mid_step(arb, 0, 0, *said)
    ((_, continuation),) = driver.started[1:]
    assert continuation is not None and continuation.prefill == ""
    assert continuation.messages == (UserMessage(text="weather?"),)
    status = down.events[-1]
    assert status.attrs["mode"] == "restart" and status.attrs["not_continued"] == why


def test_a_continuation_that_fails_mid_text_is_continued_again() -> None:
    arb, driver, down = arbiter(3, prefills=(True, True, True), mid_stream="continue")
    fail_mid_step(arb, 0, 0, ChatEvent(T.TEXT_DELTA, text="One"))
    fail_mid_step(arb, 1, 1, ChatEvent(T.TEXT_DELTA, text=" two"))
    continuation = driver.started[2][1]
    assert continuation is not None and continuation.prefill == "One two"
    assert [e.attrs["continued_text"] for e in down.events if e.type is T.STATUS] == [
        "One",
        "One two",
    ]
