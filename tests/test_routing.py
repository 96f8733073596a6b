"""Many models as one (solon_events.client.routing): fallback, hedge and race over the embedded
provider on 127.0.0.1 and its fault scenarios (an HTTP status, a dropped connection, a
stall mid-answer, a slow first event), through stream(), astream() and call().
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from routing_runs import acollect, collect, weather_tool
from sockets import wait_for
from stream_invariants import check_invariants

from solon_events import (
    ChatError,
    ChatEvent,
    ChatEventFilter,
    ChatEventType,
    ChatHttpError,
    ChatModel,
    ChatResponse,
    ChatTimeoutError,
    FallbackModel,
    HedgedModel,
    ModelGroup,
    race,
)
from solon_events.devserver import RunningServer

T = ChatEventType
ALL = ChatEventFilter.all()
PROMPT = "one two three"
WORDS = ["one", " two", " three"]


Build = Callable[..., ChatModel]


def quick(make_model: Build, srv: RunningServer, scenario: str, **options: Any) -> ChatModel:
    """A model of ``scenario`` that neither retries nor waits long for its first frame."""
    options.setdefault("max_retries", 0)
    options.setdefault("timeout", 5)
    return make_model(srv, scenario, **options)


def run_edge(edge: str, prompt: Any) -> tuple[list[ChatEvent], BaseException | None]:
    """The prompt's events through ``stream()`` or ``astream()`` (with ALL delivered)."""
    prompt = prompt.event_filter(ALL)
    if edge == "stream":
        return collect(prompt.stream())
    return asyncio.run(acollect(prompt))


def texts(events: list[ChatEvent]) -> list[str]:
    return [e.text or "" for e in events if e.type is T.TEXT_DELTA]


def statuses(events: list[ChatEvent], sub_type: str) -> list[ChatEvent]:
    return [e for e in events if e.type is T.STATUS and e.sub_type == sub_type]


def asked(srv: RunningServer, model: str) -> int:
    """How many requests the provider received for ``model``."""
    return sum(1 for r in srv.requests if isinstance(r.body, dict) and r.body["model"] == model)


# --- fallback

FAULTS = {
    "status": "status:503",
    "rate limit": "status:429",
    "reset": "drop:9",
    "slow first event": "first-delay:30",
}


@pytest.mark.parametrize("edge", ["stream", "astream"])
@pytest.mark.parametrize("fault", list(FAULTS))
def test_fallback_before_the_first_answer_event(
    server: RunningServer, make_model: Build, edge: str, fault: str
) -> None:
    failing = quick(make_model, server, FAULTS[fault], timeout=0.3)
    backup = quick(make_model, server, "echo")
    events, error = run_edge(edge, failing.fallback(backup).prompt(PROMPT))
    assert error is None
    check_invariants(events, None)
    assert texts(events) == WORDS  # once each
    (status,) = statuses(events, "fallback")
    assert status.attrs["model"] == FAULTS[fault] and status.attrs["attempt"] == 0
    assert status.attrs["mode"] == "before_answer"
    assert FAULTS[fault] in (status.text or "") and "asking echo" in (status.text or "")
    first_step = next(i for i, e in enumerate(events) if e.type is T.STEP_START)
    assert events.index(status) < first_step  # announced before the next attempt's events
    if fault in ("status", "rate limit"):
        assert status.attrs["status"] == int(FAULTS[fault].split(":")[1])
        assert status.attrs["error"] == "ChatHttpError"
    if fault == "slow first event":
        assert status.attrs["error"] == "ChatTimeoutError"
    response = events[-1].response
    assert response is not None and response.model == "echo"
    # every attempt is on the response, and its usage is theirs together
    assert [(a.model, a.outcome) for a in response.attempts] == [
        (FAULTS[fault], "failed"),
        ("echo", "answered"),
    ]
    assert isinstance(response.attempts[0].error, ChatError)
    assert response.attempts[0].usage is None  # refused or cut before any usage
    assert response.usage is not None and response.usage == response.attempts[1].usage


@pytest.mark.parametrize("fault", list(FAULTS))
def test_fallback_through_call(server: RunningServer, make_model: Build, fault: str) -> None:
    failing = quick(make_model, server, FAULTS[fault], timeout=0.3)
    backup = quick(make_model, server, "echo")
    response = failing.fallback(backup).prompt(PROMPT).call()
    assert isinstance(response, ChatResponse)
    assert response.text == PROMPT and response.model == "echo"
    assert [a.outcome for a in response.attempts] == ["failed", "answered"]
    acalled = asyncio.run(failing.fallback(backup).prompt(PROMPT).acall())
    assert acalled.text == PROMPT
    assert [a.model for a in acalled.attempts] == [FAULTS[fault], "echo"]


def test_a_chain_announces_each_failure_in_order(server: RunningServer, make_model: Build) -> None:
    chain = quick(make_model, server, "status:500").fallback(
        quick(make_model, server, "status:502"),
        quick(make_model, server, "drop:99"),
        quick(make_model, server, "echo"),
    )
    assert isinstance(chain, FallbackModel) and isinstance(chain, ModelGroup)
    events, error = run_edge("stream", chain.prompt(PROMPT))
    assert error is None
    fallen = statuses(events, "fallback")
    assert [s.attrs["model"] for s in fallen] == ["status:500", "status:502", "drop:99"]
    assert [s.attrs["attempt"] for s in fallen] == [0, 1, 2]
    assert "asking status:502" in (fallen[0].text or "")
    assert texts(events) == WORDS
    check_invariants(events, None)


@pytest.mark.parametrize("edge", ["stream", "astream"])
def test_when_every_model_fails_the_last_failure_ends_the_response(
    server: RunningServer, make_model: Build, edge: str
) -> None:
    chain = quick(make_model, server, "status:503").fallback(
        quick(make_model, server, "status:429")
    )
    events, error = run_edge(edge, chain.prompt(PROMPT))
    assert isinstance(error, ChatHttpError) and error.status == 429
    check_invariants(events, error)  # one step pair, one ERROR, last
    assert [s.attrs["model"] for s in statuses(events, "fallback")] == ["status:503"]
    with pytest.raises(ChatHttpError) as raised:
        chain.prompt(PROMPT).call()
    assert raised.value.status == 429


def test_a_failure_after_the_first_answer_event_does_not_fall_back(
    fresh_server: RunningServer, make_model: Build
) -> None:
    stalling = quick(make_model, fresh_server, "stall:5", idle_timeout=0.3)
    backup = quick(make_model, fresh_server, "echo")
    events, error = run_edge("stream", stalling.fallback(backup).prompt(PROMPT))
    assert isinstance(error, ChatTimeoutError) and error.budget == "idle_timeout"
    assert texts(events) == ["Stalling"]
    assert not statuses(events, "fallback")
    assert asked(fresh_server, "echo") == 0  # never asked: the answer had begun
    check_invariants(events, error)
    cut = quick(make_model, fresh_server, "cut")
    events, error = run_edge("astream", cut.fallback(backup).prompt(PROMPT))
    assert isinstance(error, ChatError) and texts(events) == ["This is", " a cut"]
    assert asked(fresh_server, "echo") == 0


def test_on_takes_exception_classes(server: RunningServer, make_model: Build) -> None:
    slow = quick(make_model, server, "first-delay:30", timeout=0.3)
    backup = quick(make_model, server, "echo")
    only_http = slow.fallback(backup, on=ChatHttpError).prompt(PROMPT)
    events, error = run_edge("stream", only_http)
    assert isinstance(error, ChatTimeoutError)
    assert not statuses(events, "fallback") and not texts(events)
    events, error = run_edge(
        "stream", slow.fallback(backup, on=(ChatHttpError, ChatTimeoutError)).prompt(PROMPT)
    )
    assert error is None and texts(events) == WORDS


def test_on_takes_a_predicate_of_the_error(fresh_server: RunningServer, make_model: Build) -> None:
    def not_a_bad_request(error: BaseException) -> bool:
        return getattr(error, "status", None) != 400

    backup = quick(make_model, fresh_server, "echo")
    bad = quick(make_model, fresh_server, "status:400").fallback(backup, on=not_a_bad_request)
    with pytest.raises(ChatHttpError) as raised:
        bad.prompt(PROMPT).call()
    assert raised.value.status == 400
    assert asked(fresh_server, "echo") == 0
    busy = quick(make_model, fresh_server, "status:503").fallback(backup, on=not_a_bad_request)
    assert busy.prompt(PROMPT).call().text == PROMPT


def test_on_rejects_what_it_cannot_use(server: RunningServer, make_model: Build) -> None:
    model = quick(make_model, server, "echo")
    with pytest.raises(TypeError, match="on takes"):
        model.fallback(model, on="503")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="after"):
        model.hedge(model, after=-1)
    with pytest.raises(TypeError, match="ChatModels"):
        FallbackModel(model, "gpt-4o")  # type: ignore[arg-type]


def test_the_fallback_reason_is_redacted(server: RunningServer, make_model: Build) -> None:
    secret = "sk-test-SECRET-fallback-123"
    leaky = make_model(server, "echo-key:status", api_key=secret, max_retries=0)
    backup = quick(make_model, server, "echo")
    events, error = run_edge("stream", leaky.fallback(backup).prompt(PROMPT))
    assert error is None
    (status,) = statuses(events, "fallback")
    assert "401" in (status.text or "")
    assert secret not in repr(status.attrs) and secret not in (status.text or "")
    assert secret[:12] not in (status.text or "")


def test_a_retry_status_passes_at_once_tagged_with_its_model(
    fresh_server: RunningServer, make_model: Build
) -> None:
    flaky = make_model(fresh_server, "flaky:1:503:10", max_retries=1)
    events, error = run_edge(
        "stream", flaky.fallback(quick(make_model, fresh_server, "echo")).prompt(PROMPT)
    )
    assert error is None
    (retry,) = statuses(events, "retry")
    assert retry.attrs["model"] == "flaky:1:503:10"
    assert events.index(retry) < next(i for i, e in enumerate(events) if e.type is T.STEP_START)
    assert not statuses(events, "fallback")  # the retry succeeded


def test_an_exception_of_the_subscriber_is_no_reason_to_fall_back(
    fresh_server: RunningServer, make_model: Build
) -> None:
    backup = quick(make_model, fresh_server, "echo")
    first = quick(make_model, fresh_server, "slow:3:0.01")
    seen: list[ChatEvent] = []
    errors: list[BaseException] = []
    done = threading.Event()

    class Mine(Exception):
        pass

    def on_next(event: ChatEvent) -> None:
        seen.append(event)
        if event.type is T.TEXT_DELTA:
            raise Mine("the subscriber's own")

    def on_error(error: BaseException) -> None:
        errors.append(error)
        done.set()

    first.fallback(backup).prompt(PROMPT).stream().subscribe(on_next, on_error, done.set)
    assert done.wait(10)
    assert isinstance(errors[0], Mine)
    assert asked(fresh_server, "echo") == 0
    assert not statuses(seen, "fallback")


def test_the_event_filter_applies_to_what_the_group_delivers(
    server: RunningServer, make_model: Build
) -> None:
    group = quick(make_model, server, "status:503").fallback(quick(make_model, server, "echo"))
    events, error = collect(
        group.prompt(PROMPT).event_filter(ChatEventFilter.of(T.TEXT_DELTA)).stream()
    )
    assert error is None
    assert {e.type for e in events} == {
        T.RESPONSE_START,
        T.STATUS,
        T.STEP_START,
        T.TEXT_DELTA,
        T.STEP_END,
        T.RESPONSE_END,
    }
    assert texts(events) == WORDS
    odd = group.prompt(PROMPT).event_filter(lambda e: e.type is T.TEXT_DELTA and e.text != " two")
    events, error = collect(odd.stream())
    assert error is None and texts(events) == ["one", " three"]


def test_every_event_carries_the_response_id(server: RunningServer, make_model: Build) -> None:
    group = quick(make_model, server, "status:503").fallback(quick(make_model, server, "echo"))
    events, _error = run_edge("astream", group.prompt(PROMPT))
    assert len({e.response_id for e in events}) == 1
    assert events[0].response_id and events[0].response_id.startswith("resp_")


def test_tools_run_once_through_a_fallback(server: RunningServer, make_model: Build) -> None:
    calls: list[str] = []
    get_weather = weather_tool(calls)
    group = quick(make_model, server, "status:503").fallback(quick(make_model, server, "weather"))
    response = group.prompt("Weather in Lyon?").tools(get_weather).call()
    assert calls == ["Lyon"]
    assert response.text == "It is 18°C and sunny in Lyon right now."


# --- hedge and race


def _disconnect_after(srv: RunningServer, since: float) -> float:
    """Seconds from ``since`` to the provider's first disconnect after it."""
    assert srv.wait_disconnect(5), "the provider saw no disconnect"
    return min(t for t in srv.disconnect_times if t >= since - 1) - since


@pytest.mark.parametrize("edge", ["stream", "astream"])
def test_a_hedge_asks_the_next_model_when_the_first_is_slow_and_drops_the_loser(
    fresh_server: RunningServer, make_model: Build, edge: str
) -> None:
    slow = quick(make_model, fresh_server, "first-delay:30")
    fast = quick(make_model, fresh_server, "echo")
    hedged = slow.hedge(fast, after=0.3)  # the first request is at the provider by then
    assert isinstance(hedged, HedgedModel)
    seen_at: dict[str, float] = {}
    prompt = hedged.prompt(PROMPT).event_filter(ALL)

    def note(event: ChatEvent) -> None:
        if event.type is T.STATUS and event.sub_type == "hedge":
            seen_at.setdefault("hedge", time.monotonic())

    if edge == "stream":
        events, error = collect(prompt.stream().pipe(_tap(note)))
    else:

        async def read() -> tuple[list[ChatEvent], BaseException | None]:
            out: list[ChatEvent] = []
            async for event in prompt.astream():
                note(event)
                out.append(event)
            return out, None

        events, error = asyncio.run(read())
    assert error is None
    check_invariants(events, None)
    assert texts(events) == WORDS
    (hedge,) = statuses(events, "hedge")
    assert hedge.attrs == {"model": "first-delay:30", "attempt": 0, "winner": "echo"}
    assert events.index(hedge) < next(i for i, e in enumerate(events) if e.type is T.STEP_START)
    # The loser's connection is closed at once: the provider sees it go within 50 ms.
    assert _disconnect_after(fresh_server, seen_at["hedge"]) < 0.05
    assert asked(fresh_server, "first-delay:30") == 1 and asked(fresh_server, "echo") == 1
    response = events[-1].response
    assert response is not None
    assert [(a.model, a.outcome, a.usage) for a in response.attempts] == [
        ("first-delay:30", "cancelled", None),
        ("echo", "answered", response.usage),
    ]


@pytest.mark.parametrize("edge", ["stream", "astream", "call"])
def test_a_hedge_loser_keeps_the_usage_its_model_reported_once_stopped(
    server: RunningServer, make_model: Build, edge: str
) -> None:
    # Anthropic pings for a while before answering: the request was accepted (frames came)
    # but said nothing when the echo answered, so its usage is #32's estimate of its input.
    pinging = quick(make_model, server, "pings-first:0.05:200", dialect="anthropic")
    hedged = pinging.hedge(quick(make_model, server, "echo"), after=0.3)
    response, events = answer_of(edge, hedged)
    if events:
        assert [s.attrs["model"] for s in statuses(events, "hedge")] == ["pings-first:0.05:200"]
    (loser, winner) = response.attempts
    assert (loser.outcome, winner.outcome) == ("cancelled", "answered")
    assert loser.usage is not None and loser.usage.estimated  # marked as #32 marks them
    assert loser.usage.source == {"estimated_by": "heuristic"} and loser.usage.prompt_tokens > 0
    assert winner.usage is not None and not winner.usage.estimated
    assert response.usage is not None and response.usage.estimated
    assert response.usage.prompt_tokens == loser.usage.prompt_tokens + winner.usage.prompt_tokens


def answer_of(edge: str, group: Any) -> tuple[ChatResponse, list[ChatEvent]]:
    """The group's answer to the prompt through ``call()`` (no events), or ``stream()`` or
    ``astream()`` (its events, which end well, with the echo's words once)."""
    if edge == "call":
        return group.prompt(PROMPT).call(), []
    events, error = run_edge(edge, group.prompt(PROMPT))
    assert error is None and texts(events) == WORDS
    response = events[-1].response
    assert response is not None
    return response, events


def _tap(note: Callable[[ChatEvent], None]) -> Any:
    from reactivex import operators as ops

    return ops.do_action(note)


def test_a_hedge_asks_nobody_else_when_the_first_answers_in_time(
    fresh_server: RunningServer, make_model: Build
) -> None:
    first = quick(make_model, fresh_server, "echo")
    second = quick(make_model, fresh_server, "echo", timeout=6)  # same name, another model
    hedged = first.hedge(second, after=5)
    assert hedged.labels[0] != hedged.labels[1]
    response = hedged.prompt(PROMPT).call()
    assert response.text == PROMPT
    assert asked(fresh_server, "echo") == 1
    events, _ = run_edge("astream", hedged.prompt(PROMPT))
    assert not statuses(events, "hedge") and asked(fresh_server, "echo") == 2


def test_a_hedge_falls_back_at_once_when_the_first_fails(
    server: RunningServer, make_model: Build
) -> None:
    hedged = quick(make_model, server, "status:503").hedge(
        quick(make_model, server, "echo"), after=30
    )
    started = time.monotonic()
    response = hedged.prompt(PROMPT).call()
    assert response.text == PROMPT
    assert time.monotonic() - started < 25  # not after the hedge's delay of 30 s


@pytest.mark.parametrize("edge", ["stream", "astream", "call"])
def test_race_asks_every_model_at_once(
    fresh_server: RunningServer, make_model: Build, edge: str
) -> None:
    slow = quick(make_model, fresh_server, "first-delay:30")
    gated = quick(make_model, fresh_server, "gate:first")  # answers once the gate opens
    raced = race(slow, gated)
    assert isinstance(raced, HedgedModel) and raced.policy.after == 0

    def open_gate_once_both_are_asked() -> None:
        # the gate opens once both requests are at the provider, however loaded the machine
        def both() -> bool:
            return asked(fresh_server, "first-delay:30") == asked(fresh_server, "gate:first") == 1

        if wait_for(both, 20):
            fresh_server.open_gate()

    opener = threading.Thread(target=open_gate_once_both_are_asked)
    opener.start()
    try:
        if edge == "call":
            assert raced.prompt(PROMPT).call().text == "After the gate."
        else:
            events, error = run_edge(edge, raced.prompt(PROMPT))
            assert error is None and texts(events) == ["After", " the gate."]
            assert [s.attrs["model"] for s in statuses(events, "hedge")] == ["first-delay:30"]
    finally:
        opener.join()
    assert fresh_server.wait_disconnect(5)  # the loser's connection, closed
    assert asked(fresh_server, "first-delay:30") == 1


def test_groups_nest(server: RunningServer, make_model: Build) -> None:
    hedged = quick(make_model, server, "status:503").hedge(
        quick(make_model, server, "first-delay:30", timeout=0.4), after=0.05
    )
    chain = hedged.fallback(quick(make_model, server, "echo"))
    assert chain.labels == ("hedge(status:503, first-delay:30)", "echo")
    events, error = run_edge("stream", chain.prompt(PROMPT))
    assert error is None and texts(events) == WORDS
    fallen = statuses(events, "fallback")
    # The inner group announces its first failure; its last ends it, which the outer
    # group announces.
    assert [s.attrs["model"] for s in fallen] == ["status:503", "hedge(status:503, first-delay:30)"]
    assert fallen[1].attrs["error"] == "ChatTimeoutError"
    check_invariants(events, None)
    response = events[-1].response
    assert response is not None  # the inner group's attempts in its place
    assert [(a.model, a.outcome) for a in response.attempts] == [
        ("hedge(status:503, first-delay:30)", "failed"),
        ("echo", "answered"),
    ]


def test_disposing_the_response_stops_every_attempt(
    fresh_server: RunningServer, make_model: Build
) -> None:
    raced = race(
        quick(make_model, fresh_server, "first-delay:30"),
        quick(make_model, fresh_server, "first-delay:31"),
    )
    events: list[ChatEvent] = []
    subscription = raced.prompt(PROMPT).stream().subscribe(events.append)
    assert wait_for(
        lambda: asked(fresh_server, "first-delay:30") == asked(fresh_server, "first-delay:31") == 1
    )
    subscription.dispose()
    assert fresh_server.wait_disconnect(5, count=2)
    assert [e.type for e in events] == [T.RESPONSE_START]


def test_leaving_astream_early_stops_every_attempt(
    fresh_server: RunningServer, make_model: Build
) -> None:
    late = quick(make_model, fresh_server, "first-delay:30")
    group = late.hedge(quick(make_model, fresh_server, "slow:50:0.05"), after=0.01)

    async def main() -> list[ChatEvent]:
        seen = []
        async with contextlib_aclosing(group.prompt(PROMPT).astream()) as events:
            async for event in events:
                seen.append(event)
                if event.type is T.TEXT_DELTA:
                    break
        return seen

    seen = asyncio.run(main())
    assert texts(seen) == ["0 "]
    # every request the provider received (the winner's, and the loser's if it got there
    # before it was stopped) lost its client
    assert wait_for(lambda: fresh_server.disconnect_count == len(fresh_server.requests) >= 1)


def contextlib_aclosing(thing: Any) -> Any:
    import contextlib

    return contextlib.aclosing(thing)


def test_a_nested_group_that_answers_lists_its_own_attempts(
    server: RunningServer, make_model: Build
) -> None:
    inner = quick(make_model, server, "status:503").fallback(quick(make_model, server, "echo"))
    response = inner.fallback(quick(make_model, server, "drop:9")).prompt(PROMPT).call()
    assert [(a.model, a.outcome) for a in response.attempts] == [
        ("status:503", "failed"),
        ("echo", "answered"),
    ]
    assert response.usage == response.attempts[1].usage


@pytest.mark.parametrize("edge", ["stream", "astream", "call"])
def test_a_restart_after_a_stall_mid_answer_asks_the_next_model_again(
    server: RunningServer, make_model: Build, edge: str
) -> None:
    stalling = quick(make_model, server, "stall:5", idle_timeout=0.3)
    chain = stalling.fallback(quick(make_model, server, "echo"), mid_stream="restart")
    if edge == "call":
        response = chain.prompt(PROMPT).call()
        assert response.text == PROMPT
        assert [(a.model, a.outcome) for a in response.attempts] == [
            ("stall:5", "failed"),
            ("echo", "answered"),
        ]
        return
    events, error = run_edge(edge, chain.prompt(PROMPT))
    assert error is None
    assert texts(events) == ["Stalling", *WORDS]  # each once: the abandoned text stays shown
    (status,) = statuses(events, "fallback")
    assert status.attrs["mode"] == "restart" and status.attrs["abandoned_text"] == "Stalling"
    assert status.attrs["error"] == "ChatTimeoutError"
    steps = [(e.type, e.step) for e in events if e.type in (T.STEP_START, T.STEP_END)]
    assert steps == [(T.STEP_START, 0), (T.STEP_END, 0), (T.STEP_START, 1), (T.STEP_END, 1)]
    at = events.index(status)
    assert events[at - 1].type is T.STEP_END and events[at + 1].type is T.STEP_START
    assert not [e for e in events if e.type is T.ERROR]
    end = events[-1]
    assert end.type is T.RESPONSE_END and end.response is not None
    assert end.response.text == PROMPT and end.response.model == "echo"


# --- usage: one number, everywhere (#42)


def pinging(make_model: Build, srv: RunningServer, name: str = "pings-first:0.05:200") -> ChatModel:
    """A model that reports its input (Anthropic's message_start), then pings for 10 s
    before answering: failed by its total budget of 0.3 s, it has usage and no answer."""
    return quick(make_model, srv, name, dialect="anthropic", total_timeout=0.3)


@pytest.mark.parametrize("edge", ["stream", "astream"])
@pytest.mark.parametrize("mode", ["before_answer", "restart"])
def test_response_end_usage_is_the_sum_of_every_attempt(
    server: RunningServer, make_model: Build, edge: str, mode: str
) -> None:
    if mode == "restart":  # "Partial answer", then the provider's error frame
        failing = quick(make_model, server, "error-frame", dialect="anthropic")
        chain = failing.fallback(quick(make_model, server, "echo"), mid_stream="restart")
    else:
        chain = pinging(make_model, server).fallback(quick(make_model, server, "echo"))
    events, error = run_edge(edge, chain.prompt(PROMPT))
    assert error is None and texts(events)[-3:] == WORDS
    (status,) = statuses(events, "fallback")
    assert status.attrs["mode"] == mode
    end = events[-1]
    assert end.type is T.RESPONSE_END and end.response is not None
    first, second = end.response.attempts
    assert first.usage is not None and second.usage is not None
    assert first.usage.prompt_tokens > 0 and second.usage.prompt_tokens == 3
    assert end.usage is not None and end.usage == end.response.usage
    assert end.usage.prompt_tokens == first.usage.prompt_tokens + second.usage.prompt_tokens


@pytest.mark.parametrize("edge", ["stream", "astream", "call"])
def test_when_every_model_fails_the_error_keeps_every_attempt_and_its_usage(
    server: RunningServer, make_model: Build, edge: str
) -> None:
    chain = pinging(make_model, server).fallback(
        pinging(make_model, server, "pings-first:0.05:201")
    )
    if edge == "call":
        with pytest.raises(ChatTimeoutError) as caught:
            chain.prompt(PROMPT).call()
        response = caught.value.partial_response  # type: ignore[attr-defined]
        usage = response.usage
    else:
        events, error = run_edge(edge, chain.prompt(PROMPT))
        assert isinstance(error, ChatTimeoutError)
        last = events[-1]
        assert last.type is T.ERROR
        response, usage = last.response, last.usage
        assert usage == response.usage  # type: ignore[union-attr]
    assert [(a.model, a.outcome) for a in response.attempts] == [
        ("pings-first:0.05:200", "failed"),
        ("pings-first:0.05:201", "failed"),
    ]
    counted = [a.usage.prompt_tokens for a in response.attempts if a.usage is not None]
    assert len(counted) == 2 and all(counted)
    assert usage is not None and usage.prompt_tokens == sum(counted)


@pytest.mark.parametrize("edge", ["stream", "astream", "call"])
def test_a_loser_inside_a_nested_group_reports_its_usage(
    server: RunningServer, make_model: Build, edge: str
) -> None:
    # the inner fallback's second model is asked (the first refused) and pings without
    # answering; the echo, asked 0.3 s later, answers first: the inner group is abandoned
    slow = quick(make_model, server, "pings-first:0.05:200", dialect="anthropic")
    inner = quick(make_model, server, "status:503").fallback(slow)
    hedged = inner.hedge(quick(make_model, server, "echo"), after=0.3)
    response, _ = answer_of(edge, hedged)
    loser, winner = response.attempts
    assert (loser.model, loser.outcome) == (
        "fallback(status:503, pings-first:0.05:200)",
        "cancelled",
    )
    assert loser.usage is not None and loser.usage.prompt_tokens > 0
    assert winner.usage is not None
    assert response.usage is not None
    assert response.usage.prompt_tokens == loser.usage.prompt_tokens + winner.usage.prompt_tokens
