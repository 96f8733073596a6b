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

from solon_events import ChatError, ChatEvent, ChatEventFilter, ChatEventType, ChatModel, race
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
        items.append(ChatEvent(T.STEP_END, item_id=src))
        if fails_after is None:
            items += [ChatEvent(T.RESPONSE_END, item_id=src), "completed"]
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

    def start(self, index: int, continuation: Continuation | None) -> None:
        self.started.append(index)
        self.running[index] = 0

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


@settings(max_examples=400)
@given(
    scripts,
    st.sampled_from([None, 1.0, 0.0]),
    st.booleans(),
    st.data(),
)
def test_the_arbiter_shows_one_attempt_once_whatever_the_interleaving(
    drawn: list[tuple[int, int | None, int]], after: float | None, in_flight: bool, data: Any
) -> None:
    plans = [Script(i, a, f if f is None or f <= a else a, n) for i, (a, f, n) in enumerate(drawn)]
    driver, down = FakeDriver(), Down()
    arbiter = AttemptArbiter(
        down,
        [f"m{i}" for i in range(len(plans))],
        AttemptPolicy(after=after),
        driver,
        response_id="resp_1",
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
    if winner is not None:
        assert shown == plans[winner].texts  # each of the winner's deltas, once, in order
    else:
        assert shown == []
    for index in range(len(plans)):
        src = f"a{index}"
        mine = [k for k, e in enumerate(events) if e.item_id == src and e.type is not T.STATUS]
        if index != winner:
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
    "first-delay:30": None,  # runs out of timeout
    "first-delay:0.05": ["Hello", " after a delay."],
    "first-delay:0.15": ["Hello", " after a delay."],
    "slow:2:0.01": ["0 ", "1 "],
    "slow:3:0.02": ["0 ", "1 ", "2 "],
    "echo": ["one", " two", " three"],
}


@pytest.fixture(scope="module")
def models(provider: RunningServer) -> Iterator[dict[str, ChatModel]]:
    built = {
        name: ChatModel(provider.url + "/v1/chat/completions", name, max_retries=0, timeout=0.3)
        for name in MEMBERS
    }
    yield built
    for model in built.values():
        model.close()


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
    prompt = group.prompt("one two three").event_filter(ChatEventFilter.all())
    if edge == "stream":
        events, error = collect(prompt.stream(), timeout=20)
    else:
        events, error = asyncio.run(acollect(prompt))
    check_invariants(events, error)
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
