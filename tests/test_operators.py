"""The Rx operators on hand-built event streams (SPEC §6-7)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest
import reactivex
from reactivex import Observable
from reactivex import operators as ops
from reactivex.subject import Subject

from solon_events import (
    AssistantMessage,
    ChatError,
    ChatEvent,
    ChatEventFilter,
    ChatEventType,
    ChatResponse,
    ProviderError,
    Usage,
    aggregate,
    final_response,
    guard,
    normalize,
    reduce_response,
    text_deltas,
)

T = ChatEventType


class Collected:
    """What a subscriber saw: items, then an error or completion."""

    def __init__(self) -> None:
        self.items: list[Any] = []
        self.error: BaseException | None = None
        self.completed = False
        self.log: list[str] = []

    def on_next(self, item: Any) -> None:
        self.items.append(item)
        self.log.append(item.type.name if isinstance(item, ChatEvent) else "item")

    def on_error(self, error: BaseException) -> None:
        self.error = error
        self.log.append("on_error")

    def on_completed(self) -> None:
        self.completed = True
        self.log.append("on_completed")

    @property
    def types(self) -> list[ChatEventType]:
        return [e.type for e in self.items]

    def of(self, event_type: ChatEventType) -> list[ChatEvent]:
        return [e for e in self.items if e.type is event_type]


def collect(source: Observable[Any]) -> Collected:
    seen = Collected()
    source.subscribe(seen.on_next, seen.on_error, seen.on_completed)
    return seen


def pipeline(events: Iterable[ChatEvent] | Observable[ChatEvent]) -> Observable[ChatEvent]:
    source = events if isinstance(events, Observable) else reactivex.from_iterable(list(events))
    return source.pipe(normalize(), aggregate())


def step(number: int, *content: ChatEvent, end: bool = True, **end_fields: Any) -> list[ChatEvent]:
    events = [ChatEvent(T.STEP_START, step=number), *content]
    if end:
        events.append(ChatEvent(T.STEP_END, step=number, **end_fields))
    return events


def text(value: str, number: int = 0) -> ChatEvent:
    return ChatEvent(T.TEXT_DELTA, text=value, step=number)


U1 = Usage(prompt_tokens=10, completion_tokens=2, source={"step": 0})
U2 = Usage(prompt_tokens=30, completion_tokens=5, source={"step": 1})


# aggregate


def test_response_start_first_and_response_id_on_every_event() -> None:
    seen = collect(pipeline(step(0, text("Hel"), text("lo"))))
    assert seen.types == [
        T.RESPONSE_START, T.STEP_START, T.TEXT_START, T.TEXT_DELTA, T.TEXT_DELTA, T.TEXT_END,
        T.STEP_END, T.RESPONSE_END,
    ]  # fmt: skip
    assert seen.completed and seen.error is None
    rid = seen.items[0].response_id
    assert isinstance(rid, str) and rid
    assert all(e.response_id == rid for e in seen.items)


def test_step_end_gets_the_folded_step_response() -> None:
    seen = collect(pipeline(step(0, text("Hello"), ChatEvent(T.USAGE, usage=U1))))
    (end,) = seen.of(T.STEP_END)
    assert end.response is not None
    assert end.response.text == "Hello"
    assert end.response.usage is U1
    assert end.usage is U1


def test_step_end_keeps_the_response_it_carries() -> None:
    carried = ChatResponse(message=AssistantMessage(text="carried"), usage=U1, finish_reason="stop")
    seen = collect(pipeline(step(0, text("ignored"), response=carried)))
    (end,) = seen.of(T.STEP_END)
    assert end.response is carried
    assert end.usage is U1
    (last,) = seen.of(T.RESPONSE_END)
    assert last.response is not None
    assert last.response.text == "carried"
    assert last.response.finish_reason == "stop"


@pytest.mark.parametrize("end_type", [T.STEP_END, T.RESPONSE_END])
def test_one_steps_usage_is_the_same_object_on_its_end_and_response(end_type: Any) -> None:
    seen = collect(pipeline(step(0, text("x"), usage=U1)))
    (end,) = seen.of(end_type)
    assert end.usage is U1
    assert end.response is not None
    assert end.response.usage is U1


def test_usage_is_added_across_steps() -> None:
    events = [
        *step(0, ChatEvent(T.TOOL_CALL_CHUNK), usage=U1),
        *step(1, text("done", 1), ChatEvent(T.USAGE, usage=U2, step=1)),
    ]
    seen = collect(pipeline(events))
    ends = seen.of(T.STEP_END)
    assert [e.usage for e in ends] == [U1, U2]
    (last,) = seen.of(T.RESPONSE_END)
    total = U1 + U2
    assert last.usage == total
    assert last.response is not None
    assert last.response.usage == total
    assert (last.usage.prompt_tokens, last.usage.completion_tokens) == (40, 7)
    assert last.response.text == "done"


def test_response_end_without_usage() -> None:
    seen = collect(pipeline(step(0, text("x"))))
    (last,) = seen.of(T.RESPONSE_END)
    assert last.usage is None
    assert last.response is not None
    assert last.response.usage is None


def test_an_open_step_is_closed_before_the_response_ends() -> None:
    seen = collect(pipeline(step(0, text("unfinished"), end=False)))
    assert seen.types[-3:] == [T.TEXT_END, T.STEP_END, T.RESPONSE_END]
    (end,) = seen.of(T.STEP_END)
    assert end.response is not None
    assert end.response.text == "unfinished"
    assert seen.items[-1].response.text == "unfinished"


def test_a_new_step_start_closes_the_open_step() -> None:
    events = [*step(0, text("a"), end=False), *step(1, text("b", 1))]
    seen = collect(pipeline(events))
    steps = [(e.type.name, e.step) for e in seen.items if e.type in (T.STEP_START, T.STEP_END)]
    assert steps == [("STEP_START", 0), ("STEP_END", 0), ("STEP_START", 1), ("STEP_END", 1)]
    assert [e.response.text for e in seen.of(T.STEP_END)] == ["a", "b"]
    assert seen.items[-1].response.text == "b"


def test_upstream_response_start_is_not_repeated() -> None:
    seen = collect(pipeline([ChatEvent(T.RESPONSE_START), *step(0, text("x"))]))
    assert seen.types.count(T.RESPONSE_START) == 1
    assert seen.types.count(T.RESPONSE_END) == 1


def test_error_gives_one_error_event_then_on_error_with_the_same_exception() -> None:
    failure = ProviderError(
        "provider error: Overloaded",
        provider_error={"type": "overloaded_error", "message": "Overloaded"},
    )
    source = reactivex.concat(
        reactivex.from_iterable(
            [
                *step(0, text("first"), usage=U1),
                *step(1, text("par", 1), text("tial", 1), end=False),
            ]
        ),
        reactivex.throw(failure),
    )
    seen = collect(pipeline(source))
    assert seen.error is failure
    assert not seen.completed
    assert T.RESPONSE_END not in seen.types
    assert seen.log[-2:] == ["ERROR", "on_error"]
    assert seen.types.count(T.ERROR) == 1
    error = seen.items[-1]
    assert error.error is failure
    assert error.response is not None
    assert error.response.text == "partial"
    assert error.usage is U1
    assert dict(error.raw) == {"type": "overloaded_error", "message": "Overloaded"}
    assert seen.types[-3:] == [T.TEXT_END, T.STEP_END, T.ERROR]


def test_error_before_any_step() -> None:
    failure = ChatError("no connection")
    seen = collect(reactivex.throw(failure).pipe(normalize(), aggregate()))
    assert seen.types == [T.RESPONSE_START, T.ERROR]
    assert seen.items[1].error is failure
    assert seen.items[1].response is None or seen.items[1].response.is_empty
    assert len(seen.items[1].raw) == 0
    assert seen.error is failure


def test_upstream_error_event_fails_the_response() -> None:
    failure = ChatError("reported")
    seen = collect(pipeline([*step(0, text("x"), end=False), ChatEvent(T.ERROR, error=failure)]))
    assert seen.types.count(T.ERROR) == 1
    assert seen.log[-5:] == ["TEXT_DELTA", "TEXT_END", "STEP_END", "ERROR", "on_error"]
    assert seen.error is failure
    assert seen.items[-1].response.text == "x"


def test_abort_is_the_terminal_event() -> None:
    events = [
        *step(0, text("x"), ChatEvent(T.TOOL_CALL_START, tool_call_id="c"), end=False),
        ChatEvent(T.ABORT),
        text("late"),
    ]
    seen = collect(pipeline(events))
    assert seen.completed
    assert seen.types[-4:] == [T.TOOL_CALL_START, T.TOOL_CALL_END, T.STEP_END, T.ABORT]
    assert seen.types.count(T.TEXT_START) == seen.types.count(T.TEXT_END) == 1
    assert T.RESPONSE_END not in seen.types


# guard and selection helpers


def test_guard_default_hides_heartbeat_and_raw_only() -> None:
    events = step(0, ChatEvent(T.HEARTBEAT), ChatEvent(T.RAW), text("x"), ChatEvent(T.STATUS))
    seen = collect(pipeline(events).pipe(guard()))
    assert T.HEARTBEAT not in seen.types
    assert T.RAW not in seen.types
    assert T.STATUS in seen.types and T.TEXT_DELTA in seen.types


def test_guard_always_delivers_lifecycle_and_step() -> None:
    seen = collect(pipeline(step(0, text("x"))).pipe(guard(ChatEventFilter.of(T.TEXT_DELTA))))
    assert seen.types == [T.RESPONSE_START, T.STEP_START, T.TEXT_DELTA, T.STEP_END, T.RESPONSE_END]


def test_a_filter_that_hides_error_still_gets_on_error() -> None:
    failure = ChatError("boom")
    source = reactivex.concat(reactivex.from_iterable(step(0, text("x"))), reactivex.throw(failure))
    hide_errors = ChatEventFilter(lambda e: e.type is not T.ERROR)
    seen = collect(pipeline(source).pipe(guard(hide_errors)))
    assert T.ERROR not in seen.types
    assert seen.error is failure
    seen = collect(pipeline(source).pipe(guard(ChatEventFilter.of(T.TEXT_DELTA))))
    assert T.ERROR not in seen.types
    assert seen.error is failure


def test_a_filter_that_raises_fails_the_stream_once_with_its_exception() -> None:
    def no_refusal(event: ChatEvent) -> bool:
        if event.type is T.REFUSAL_DELTA:
            raise ValueError("a bug in the filter")
        return True

    events = step(0, text("x"), ChatEvent(T.REFUSAL_DELTA, text="no"), text("y"))
    seen = collect(pipeline(events).pipe(guard(no_refusal)))
    assert isinstance(seen.error, ValueError)
    assert seen.log == ["RESPONSE_START", "STEP_START", "TEXT_START", "TEXT_DELTA", "on_error"]
    assert not seen.completed


def test_text_deltas() -> None:
    events = step(
        0, text("a"), text(""), ChatEvent(T.TEXT_DELTA), ChatEvent(T.STATUS, text="s"), text("b")
    )
    seen = collect(pipeline(events).pipe(text_deltas()))
    assert seen.items == ["a", "b"]
    assert seen.completed


def test_final_response() -> None:
    seen = collect(pipeline(step(0, text("answer"))).pipe(final_response()))
    assert len(seen.items) == 1
    assert isinstance(seen.items[0], ChatResponse)
    assert seen.items[0].text == "answer"
    assert seen.completed


def test_filter_map_first_run_returns_the_response() -> None:
    response = (
        pipeline(step(0, text("Hi "), text("there")))
        .pipe(
            ops.filter(lambda e: e.type is T.RESPONSE_END),
            ops.map(lambda e: e.response),
            ops.first(),
        )
        .run()
    )
    assert isinstance(response, ChatResponse)
    assert response.text == "Hi there"


# reduce_response


def r(value: str) -> ChatResponse:
    return ChatResponse(message=AssistantMessage(text=value))


def test_reduce_response_prefers_the_first_response_end() -> None:
    events = [
        ChatEvent(T.STEP_END, response=r("step")),
        ChatEvent(T.RESPONSE_END, response=r("final")),
        ChatEvent(T.RESPONSE_END, response=r("second")),
    ]
    assert reduce_response(events) == r("final")


def test_reduce_response_falls_back_to_the_last_step_end() -> None:
    events = [ChatEvent(T.STEP_END, response=r("one")), ChatEvent(T.STEP_END, response=r("two"))]
    assert reduce_response(events) == r("two")
    assert reduce_response(iter(events)) == r("two")


def test_reduce_response_ignores_what_follows_a_terminal_event() -> None:
    events = [
        ChatEvent(T.STEP_END, response=r("before")),
        ChatEvent(T.ERROR, error=ChatError("x"), response=r("partial")),
        ChatEvent(T.STEP_END, response=r("after")),
        ChatEvent(T.RESPONSE_END, response=r("late")),
    ]
    assert reduce_response(events) == r("before")
    aborted = [ChatEvent(T.ABORT), ChatEvent(T.RESPONSE_END, response=r("late"))]
    assert reduce_response(aborted) is None


def test_reduce_response_never_uses_a_deltas_response() -> None:
    events = [ChatEvent(T.TEXT_DELTA, text="x", response=r("delta"))]
    assert reduce_response(events) is None
    assert reduce_response([]) is None


def test_reduce_response_of_a_pipeline() -> None:
    events: list[ChatEvent] = []
    pipeline(step(0, text("all"))).subscribe(events.append)
    assert reduce_response(events) == events[-1].response
    assert reduce_response(events[:-1]) == events[-2].response


# normalize


def test_normalize_emits_closers_on_completion_and_on_error() -> None:
    seen = collect(reactivex.from_iterable([text("x")]).pipe(normalize()))
    assert seen.types == [T.TEXT_START, T.TEXT_DELTA, T.TEXT_END]
    assert seen.completed
    failure = ChatError("x")
    source = reactivex.concat(reactivex.from_iterable([text("x")]), reactivex.throw(failure))
    seen = collect(source.pipe(normalize()))
    assert seen.log == ["TEXT_START", "TEXT_DELTA", "TEXT_END", "on_error"]
    assert seen.error is failure


# Rx behaviour


def test_resubscribing_gives_the_same_types_with_a_fresh_response_id() -> None:
    one = pipeline(step(0, text("a"), text("b")))
    first, second = collect(one), collect(one)
    assert first.types == second.types
    rid1, rid2 = first.items[0].response_id, second.items[0].response_id
    assert rid1 != rid2
    assert all(e.response_id == rid2 for e in second.items)
    assert first.items[-1].response.text == second.items[-1].response.text == "ab"


def test_disposing_mid_stream_delivers_nothing_more() -> None:
    subject: Subject[ChatEvent] = Subject()
    seen = Collected()
    subscription = subject.pipe(normalize(), aggregate(), guard()).subscribe(
        seen.on_next, seen.on_error, seen.on_completed
    )
    subject.on_next(ChatEvent(T.STEP_START))
    subject.on_next(text("one"))
    subject.on_next(ChatEvent(T.TOOL_CALL_START, tool_call_id="c"))
    subject.on_next(text("two"))
    delivered = list(seen.log)
    assert delivered[-1] == "TEXT_DELTA"
    subscription.dispose()
    subject.on_next(text("three"))
    subject.on_next(ChatEvent(T.STEP_END))
    subject.on_completed()
    assert seen.log == delivered
    assert not seen.completed


def test_disposing_before_an_error_delivers_nothing_more() -> None:
    subject: Subject[ChatEvent] = Subject()
    seen = Collected()
    subscription = subject.pipe(normalize(), aggregate()).subscribe(
        seen.on_next, seen.on_error, seen.on_completed
    )
    subject.on_next(text("x"))
    delivered = list(seen.log)
    subscription.dispose()
    subject.on_error(ChatError("late"))
    assert seen.log == delivered
    assert seen.error is None


def test_take_n() -> None:
    seen = collect(pipeline(step(0, text("a"), text("b"), text("c"))).pipe(ops.take(4)))
    assert seen.types == [T.RESPONSE_START, T.STEP_START, T.TEXT_START, T.TEXT_DELTA]
    assert seen.completed


def test_take_n_on_a_hot_source_stops_delivery() -> None:
    subject: Subject[ChatEvent] = Subject()
    seen = collect(subject.pipe(normalize(), aggregate(), ops.take(3)))
    subject.on_next(ChatEvent(T.STEP_START))
    subject.on_next(text("a"))
    subject.on_next(text("b"))
    subject.on_completed()
    assert seen.types == [T.RESPONSE_START, T.STEP_START, T.TEXT_START]
    assert seen.log[-1] == "on_completed"
    assert seen.log.count("on_completed") == 1


@pytest.mark.parametrize("n", [1, 2, 5])
def test_each_subscription_has_its_own_state(n: int) -> None:
    one = pipeline(step(0, text("a"), usage=U1))
    totals = [collect(one).items[-1].usage for _ in range(n)]
    assert all(total is U1 for total in totals)


def test_aggregate_with_a_given_response_id_stamps_it() -> None:
    seen = collect(
        reactivex.from_iterable(step(0, text("x"))).pipe(normalize(), aggregate(response_id="r1"))
    )
    assert {e.response_id for e in seen.items} == {"r1"}
    assert seen.types[-1] is T.RESPONSE_END


def test_upstream_error_event_without_an_exception_fails_with_a_chat_error() -> None:
    seen = collect(pipeline([*step(0, text("x")), ChatEvent(T.ERROR, text="server said no")]))
    assert isinstance(seen.error, ChatError)
    assert "server said no" in str(seen.error)
    assert seen.items[-1].error is seen.error
