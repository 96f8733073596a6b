"""Properties of many models as one, across any fault sequence (SPEC section 11): the
subscriber sees each text delta of the winning attempt once, no event of another attempt
after it was abandoned, and each abandoned attempt announced before the next one's events.

Two ways: the arbiter alone (sans-I/O), fed every interleaving hypothesis draws of its
attempts' events, failures, hedge timers and events still in flight after a stop; and
whole groups over the embedded provider's fault scenarios on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from routing_runs import acollect, collect
from stream_invariants import check_invariants

from solon_events import (
    ChatError,
    ChatEvent,
    ChatEventFilter,
    ChatEventType,
    ChatModel,
    ChatResponse,
    race,
)
from solon_events.client.routing import FallbackModel, HedgedModel
from solon_events.core.attempts import AttemptArbiter, AttemptPolicy, Continuation
from solon_events.devserver import DevServer, RunningServer

T = ChatEventType


# --- the arbiter alone


class Script:
    """What one fake attempt sends: a step, its texts, then an end or a failure."""

    def __init__(self, index: int, answers: int, fails_after: int | None, noise: int) -> None:
        src = f"a{index}"
        items: list[Any] = [ChatEvent(T.STEP_START, item_id=src)]
        items += [ChatEvent(T.STATUS, sub_type="retry", item_id=src)] * noise
        items += [ChatEvent(T.USAGE, item_id=src)] * min(noise, 1)
        texts = [f"{index}.{j}" for j in range(answers)]
        shown = texts if fails_after is None else texts[:fails_after]
        if shown:
            items.append(ChatEvent(T.TEXT_START, item_id=src))
            items += [ChatEvent(T.TEXT_DELTA, text=t, item_id=src) for t in shown]
            items.append(ChatEvent(T.TEXT_END, item_id=src))
        partial = ChatResponse(text="".join(shown))
        items.append(ChatEvent(T.STEP_END, item_id=src, response=partial))
        if fails_after is None:
            answer = ChatResponse(text="".join(texts))
            items += [ChatEvent(T.RESPONSE_END, item_id=src, response=answer), "completed"]
        else:
            error = ChatError(f"attempt {index} failed")
            items += [ChatEvent(T.ERROR, item_id=src, error=error), error]
        self.items = items
        self.texts = shown
        self.answers = bool(shown) or fails_after is None


class FakeDriver:
    def __init__(self) -> None:
        self.arbiter: AttemptArbiter | None = None
        self.running: dict[int, int] = {}  # attempt -> position in its script
        self.stopped: set[int] = set()
        self.timers: list[Callable[[], None]] = []
        self.started: list[int] = []
        self.first_step: dict[int, int] = {}  # attempt -> the number of its first step

    def start(self, index: int, continuation: Continuation | None) -> None:
        self.started.append(index)
        self.running[index] = 0
        self.first_step[index] = continuation.first_step if continuation else 0

    def stop(self, index: int) -> None:
        self.stopped.add(index)

    def later(self, seconds: float, callback: Callable[[], None]) -> None:
        self.timers.append(callback)


class Down:
    def __init__(self) -> None:
        self.events: list[ChatEvent] = []
        self.ends: list[Any] = []

    def on_next(self, event: ChatEvent) -> None:
        assert not self.ends, "an event after the end"
        self.events.append(event)

    def on_error(self, error: Exception) -> None:
        self.ends.append(error)

    def on_completed(self) -> None:
        self.ends.append("completed")


scripts = st.lists(
    st.tuples(
        st.integers(0, 3),  # answer texts
        st.one_of(st.none(), st.integers(0, 3)),  # fails after that many texts
        st.integers(0, 2),  # STATUS/USAGE before the answer
    ),
    min_size=2,
    max_size=4,
)


@settings(max_examples=600)
@given(
    scripts,
    st.sampled_from([None, 1.0, 0.0]),
    st.sampled_from(["never", "restart", "continue"]),
    st.booleans(),
    st.data(),
)
def test_the_arbiter_shows_one_attempt_once_whatever_the_interleaving(
    drawn: list[tuple[int, int | None, int]],
    after: float | None,
    mid_stream: Any,
    in_flight: bool,
    data: Any,
) -> None:
    plans = [Script(i, a, f if f is None or f <= a else a, n) for i, (a, f, n) in enumerate(drawn)]
    if after is not None:  # hedges and races never take over mid-answer
        mid_stream = "never"
    prefills = data.draw(st.lists(st.booleans(), min_size=len(plans), max_size=len(plans)))
    driver, down = FakeDriver(), Down()
    arbiter = AttemptArbiter(
        down,
        [f"m{i}" for i in range(len(plans))],
        AttemptPolicy(after=after, mid_stream=mid_stream),
        driver,
        response_id="resp_1",
        prefills=prefills,
    )
    driver.arbiter = arbiter
    arbiter.open()
    stopped_at: dict[int, int] = {}  # attempt -> how many events down had when it was stopped
    for _ in range(200):
        for index in driver.stopped:
            stopped_at.setdefault(index, len(down.events))
        live = [
            i
            for i, pos in driver.running.items()
            if pos < len(plans[i].items) and (in_flight or i not in driver.stopped)
        ]
        choices = [("event", i) for i in live] + [("timer", t) for t in range(len(driver.timers))]
        if not choices:
            break
        kind, which = data.draw(st.sampled_from(choices))
        if kind == "timer":
            driver.timers.pop(which)()
            continue
        item = plans[which].items[driver.running[which]]
        driver.running[which] += 1
        if isinstance(item, ChatEvent):  # numbered from the step the attempt starts at
            item = item.evolve(step=driver.first_step[which])
        sink = arbiter.sink(which)
        if item == "completed":
            sink.on_completed()
        elif isinstance(item, Exception):
            sink.on_error(item)
        else:
            sink.on_next(item)
    assert len(down.ends) <= 1
    events = down.events
    assert events[0].type is T.RESPONSE_START
    assert [e.type for e in events].count(T.RESPONSE_START) == 1
    assert all(e.response_id == "resp_1" for e in events if e.item_id is None)
    winner = arbiter.winner
    shown = [e.text for e in events if e.type is T.TEXT_DELTA]
    # the attempts that answered, in turn (one unless another took over mid-answer)
    answered = list(dict.fromkeys(e.item_id for e in events if e.type is T.TEXT_DELTA))
    took_over = [e for e in events if e.type is T.STATUS and e.attrs.get("mode") in MID_STREAM]
    if mid_stream == "never" or not took_over:
        if winner is not None:
            assert shown == plans[winner].texts  # each of the winner's deltas, once, in order
        else:
            assert shown == []
    else:  # each answering attempt's deltas once, in order, one attempt after the other
        assert shown == [t for src in answered for t in plans[int(src[1:])].texts]
        assert len(took_over) >= len(answered) - 1
    if down.ends == ["completed"] and mid_stream != "never":
        # the final text is each delta since the last restart, once (continued text kept)
        restarts = [k for k, e in enumerate(events) if e.attrs.get("mode") == "restart"]
        since = restarts[-1] if restarts else 0
        kept = "".join(e.text or "" for e in events[since:] if e.type is T.TEXT_DELTA)
        assert events[-1].response is not None and events[-1].response.text == kept
    took_over_from = {e.attrs["attempt"] for e in took_over}
    for index in range(len(plans)):
        src = f"a{index}"
        mine = [k for k, e in enumerate(events) if e.item_id == src and e.type is not T.STATUS]
        if index != winner and index not in took_over_from:
            # a failed attempt that ended the response shows its steps and ERROR only
            ended_it = (
                down.ends
                and isinstance(down.ends[0], ChatError)
                and (str(down.ends[0]) == f"attempt {index} failed")
            )
            kinds = {events[k].type for k in mine}
            assert kinds <= ({T.STEP_START, T.USAGE, T.STEP_END, T.ERROR} if ended_it else set())
        if index in stopped_at:
            assert all(k < stopped_at[index] for k in mine), "an event after its stop"
        announced = [
            k
            for k, e in enumerate(events)
            if e.type is T.STATUS
            and e.sub_type in ("fallback", "hedge")
            and e.attrs["attempt"] == index
        ]
        if announced:
            assert all(k < announced[0] for k in mine)
            later = [
                i for i in driver.started if driver.started.index(i) > driver.started.index(index)
            ]
            for other in later:
                theirs = [k for k, e in enumerate(events) if e.item_id == f"a{other}"]
                if events[announced[0]].sub_type == "fallback":
                    assert all(k > announced[0] for k in theirs if events[k].type is not T.STATUS)
    if down.ends == ["completed"]:
        assert winner is not None and events[-1].type is T.RESPONSE_END
        assert events[-1].item_id == f"a{winner}"


MID_STREAM = ("restart", "continue")


# --- whole groups over the embedded provider


@pytest.fixture(scope="module")
def provider() -> Iterator[RunningServer]:
    running = DevServer.run_in_thread()
    yield running
    running.close()


MEMBERS = {
    "status:503": None,
    "status:429": None,
    "drop:100000": None,
    "first-delay:30": None,  # runs out of its time to the first frame (the only one given one)
    "first-delay:0.05": ["Hello", " after a delay."],
    "first-delay:0.15": ["Hello", " after a delay."],
    "slow:2:0.01": ["0 ", "1 "],
    "slow:3:0.02": ["0 ", "1 ", "2 "],
    "echo": ["one", " two", " three"],
}


@pytest.fixture(scope="module")
def models(provider: RunningServer) -> Iterator[dict[str, ChatModel]]:
    # Whether a member answers or fails must not hang on the machine's load: only the one
    # that cannot answer for 30 s has a short time to its first frame.
    built = {
        name: ChatModel(
            provider.url + "/v1/chat/completions",
            name,
            max_retries=0,
            timeout=0.3 if name == "first-delay:30" else 30,
        )
        for name in MEMBERS
    }
    yield built
    for model in built.values():
        model.close()


def answered(group: Any, edge: str) -> tuple[list[ChatEvent], BaseException | None]:
    """The group's response to the prompt through ``stream()`` or ``astream()``, every event
    delivered, its stream invariants checked."""
    prompt = group.prompt("one two three").event_filter(ChatEventFilter.all())
    if edge == "stream":
        events, error = collect(prompt.stream(), timeout=20)
    else:
        events, error = asyncio.run(acollect(prompt))
    check_invariants(events, error)
    return events, error


@settings(max_examples=40)
@given(
    st.lists(st.sampled_from(sorted(MEMBERS)), min_size=2, max_size=4, unique=True),
    st.sampled_from(["fallback", "hedge", "race"]),
    st.sampled_from(["stream", "astream"]),
)
def test_any_fault_sequence_shows_the_winner_once_and_no_loser(
    models: dict[str, ChatModel], names: list[str], how: str, edge: str
) -> None:
    members = [models[name] for name in names]
    if how == "fallback":
        group: Any = FallbackModel(*members)
    elif how == "hedge":
        group = HedgedModel(*members, after=0.05)
    else:
        group = race(*members)
    events, error = answered(group, edge)
    answering = [name for name in names if MEMBERS[name] is not None]
    if error is None:
        winner = events[-1].response.model  # type: ignore[union-attr]
        assert winner in answering
        assert [e.text for e in events if e.type is T.TEXT_DELTA] == MEMBERS[winner]
        # every answer event is the winner's: one provider response id
        ids = {e.provider_response_id for e in events if e.provider_response_id}
        assert ids == {events[-1].provider_response_id}
        announced = [e.attrs["model"] for e in events if e.type is T.STATUS]
        assert winner not in announced
        if how == "fallback":
            assert announced == names[: names.index(winner)]
    else:  # every member failed (``on`` lets every ChatError fall back)
        assert not answering
        assert not [e for e in events if e.type is T.TEXT_DELTA]


# A continuation (mid_stream="continue"): the stall members say "Stalling", then fail (their
# idle budget runs out) unless asked to continue that text; the Anthropic and Ollama ones
# take it as a prefill, the Chat Completions ones restart it.
CONTINUING = {
    "stall:5@anthropic": ("stall:5", "/v1/messages", "anthropic"),
    "stall:0@ollama": ("stall:0", "/api/chat", "ollama"),
    "stall:5@openai": ("stall:5", "/v1/chat/completions", "openai"),
    "echo@openai": ("echo", "/v1/chat/completions", "openai"),
    "status:503@anthropic": ("status:503", "/v1/messages", "anthropic"),
    "drop:100000@ollama": ("drop:100000", "/api/chat", "ollama"),
}
WHOLE_ANSWERS = {"Stalling and done.", "one two three"}


@pytest.fixture(scope="module")
def continuing(provider: RunningServer) -> Iterator[dict[str, ChatModel]]:
    built = {
        key: ChatModel(provider.url + route, name, dialect=dialect, max_retries=0, idle_timeout=0.3)
        for key, (name, route, dialect) in CONTINUING.items()
    }
    yield built
    for model in built.values():
        model.close()


@settings(max_examples=30)
@given(
    st.lists(st.sampled_from(sorted(CONTINUING)), min_size=2, max_size=4, unique=True),
    st.sampled_from(["stream", "astream"]),
)
def test_any_fault_sequence_continued_shows_each_delta_once(
    continuing: dict[str, ChatModel], keys: list[str], edge: str
) -> None:
    group = FallbackModel(*(continuing[key] for key in keys), mid_stream="continue")
    events, error = answered(group, edge)
    statuses = [e for e in events if e.type is T.STATUS and e.sub_type == "fallback"]
    for status in statuses:  # each abandoned attempt announced before what follows it
        later = events[events.index(status) + 1 :]
        assert not [e for e in later if e.attrs.get("model") == status.attrs["model"]]
    if error is None:
        restarts = [k for k, e in enumerate(events) if e.attrs.get("mode") == "restart"]
        since = events[restarts[-1] if restarts else 0 :]
        kept = "".join(e.text or "" for e in since if e.type is T.TEXT_DELTA)
        final = events[-1].response
        assert final is not None
        # the continued text and its continuation, each delta once: the whole answer
        assert final.text == kept and kept in WHOLE_ANSWERS
        assert [a.outcome for a in final.attempts][-1] == "answered"
    else:
        assert isinstance(error, ChatError)
