"""Property tests: boundary and lifecycle invariants for any event sequence (SPEC §5-7)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

import reactivex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reactivex import Observable
from sinks import Recorder

from solon_events import (
    ChatError,
    ChatEvent,
    ChatEventFilter,
    ChatEventGroup,
    ChatEventNormalizer,
    ChatEventType,
    Citation,
    ToolCall,
    Usage,
    aggregate,
    normalize,
    operators,
)
from solon_events.core import stages

T = ChatEventType

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

CONTENT_KINDS = [
    T.TEXT_START, T.TEXT_DELTA, T.TEXT_END,
    T.THINKING_START, T.THINKING_DELTA, T.THINKING_END, T.THINKING_SIGNATURE, T.THINKING_REDACTED,
    T.TOOL_CALL_START, T.TOOL_CALL_ARGS_DELTA, T.TOOL_CALL_END, T.TOOL_CALL_CHUNK, T.TOOL_RESULT,
    T.USAGE, T.CITATION, T.STATUS, T.HEARTBEAT, T.REFUSAL_DELTA,
]  # fmt: skip


@st.composite
def content_events(draw: st.DrawFn, step: int = 0) -> ChatEvent:
    """One content event with random keys, as a careless provider might send it."""
    kind = draw(st.sampled_from(CONTENT_KINDS))
    fields: dict[str, Any] = {
        "step": step,
        "item_id": draw(st.sampled_from([None, "a", "b"])),
        "index": draw(st.sampled_from([-1, 0, 1])),
        "tool_call_id": draw(st.sampled_from([None, "c1", "c2"])),
    }
    if kind.phase is not kind.phase.START and kind.phase is not kind.phase.END:
        fields["text"] = draw(st.sampled_from([None, "", "x", "yz", "héllo "]))
    if kind in (T.TOOL_CALL_START, T.TOOL_CALL_END, T.TOOL_CALL_CHUNK) and draw(st.booleans()):
        fields["tool_call"] = ToolCall(
            id=fields["tool_call_id"], name="f", arguments_str=draw(st.sampled_from(["", "{}"]))
        )
    if kind is T.USAGE:
        prompt = draw(st.integers(0, 50))
        fields["usage"] = Usage(prompt_tokens=prompt, completion_tokens=draw(st.integers(0, 50)))
    if kind is T.CITATION:
        fields["citation"] = Citation(url="https://example.com")
    return ChatEvent(kind, **fields)


def _matches(event: ChatEvent, key: tuple[Any, int]) -> bool:
    """Whether ``event`` may belong to the block opened with ``key`` (unset parts match)."""
    item_id, index = key
    return (event.item_id is None or item_id is None or event.item_id == item_id) and (
        event.index == -1 or index == -1 or event.index == index
    )


class BoundaryChecker:
    """Follows an output stream and fails on any broken boundary invariant."""

    GROUPS: ClassVar[dict[ChatEventType, tuple[str, str]]] = {
        T.TEXT_START: ("text", "start"), T.TEXT_DELTA: ("text", "delta"),
        T.TEXT_END: ("text", "end"), T.THINKING_START: ("thinking", "start"),
        T.THINKING_DELTA: ("thinking", "delta"), T.THINKING_END: ("thinking", "end"),
    }  # fmt: skip

    def __init__(self) -> None:
        self.open: dict[str, list[tuple[Any, int]]] = {"text": [], "thinking": []}
        self.calls_open = 0
        self.starts = {"text": 0, "thinking": 0, "calls": 0}
        self.ends = {"text": 0, "thinking": 0, "calls": 0}

    def _find(self, group: str, event: ChatEvent) -> int | None:
        blocks = self.open[group]
        exact = (event.item_id, event.index)
        if exact in blocks:
            return blocks.index(exact)
        for position in range(len(blocks) - 1, -1, -1):
            if _matches(event, blocks[position]):
                return position
        return None

    def feed(self, event: ChatEvent) -> None:
        kind = self.GROUPS.get(event.type)
        if kind is not None:
            group, phase = kind
            other = "thinking" if group == "text" else "text"
            if phase == "start":
                assert not self.open[other], f"{group} opened while {other} is open"
                assert self._find(group, event) is None, "a START for a block already open"
                self.open[group].append((event.item_id, event.index))
                self.starts[group] += 1
            elif phase == "delta":
                assert self.open[group], f"{event!r} outside any {group} block"
                assert self._find(group, event) is not None, f"{event!r} outside its block"
            else:
                position = self._find(group, event)
                assert position is not None, f"{event!r} closes no open block"
                del self.open[group][position]
                self.ends[group] += 1
            assert not (self.open["text"] and self.open["thinking"])
        elif event.type is T.TOOL_CALL_START:
            self.calls_open += 1
            self.starts["calls"] += 1
        elif event.type is T.TOOL_CALL_ARGS_DELTA:
            assert self.calls_open > 0, "arguments before their call's START"
        elif event.type is T.TOOL_CALL_END:
            self.calls_open = max(0, self.calls_open - 1)
            self.ends["calls"] += 1
        elif event.type in (T.STEP_END, T.RESPONSE_END):
            self.assert_closed()

    def assert_closed(self) -> None:
        assert self.open == {"text": [], "thinking": []}
        assert self.calls_open == 0
        assert self.starts["text"] == self.ends["text"]
        assert self.starts["thinking"] == self.ends["thinking"]
        assert self.ends["calls"] >= self.starts["calls"]


# the normalizer alone


@SETTINGS
@given(
    st.lists(
        st.one_of(
            content_events(),
            st.sampled_from([ChatEvent(T.STEP_END), ChatEvent(T.RESPONSE_END)]),
        ),
        max_size=40,
    )
)
def test_normalized_content_has_clean_boundaries(events: list[ChatEvent]) -> None:
    normalizer = ChatEventNormalizer()
    checker = BoundaryChecker()
    out: list[ChatEvent] = []

    def emit(event: ChatEvent) -> None:
        checker.feed(event)
        out.append(event)

    for event in events:
        normalizer.apply(event, emit)
    normalizer.complete(emit)
    assert not normalizer.has_open
    checker.assert_closed()
    before = len(out)
    normalizer.complete(emit)
    assert len(out) == before
    inputs = [e for e in events if e.type not in (T.TOOL_CALL_CHUNK,)]
    passed_through = [e for e in out if any(e is i for i in inputs)]
    assert [e.type for e in passed_through] == [
        e.type for e in inputs if any(e is o for o in passed_through)
    ]
    assert sum(e.type is T.TEXT_DELTA for e in out) == sum(e.type is T.TEXT_DELTA for e in events)
    assert sum(e.type is T.THINKING_DELTA for e in out) == sum(
        e.type is T.THINKING_DELTA for e in events
    )


# the whole response level


class Boom(ChatError):
    """The injected failure."""


FAILURES = ("throw", "raise", "error_event", "abort_event")


@st.composite
def responses(draw: st.DrawFn) -> tuple[list[ChatEvent], int | None, str]:
    """A step-bracketed event sequence; where it fails (None: it does not); how it fails."""
    events: list[ChatEvent] = []
    steps = draw(st.integers(1, 3))
    for number in range(steps):
        events.append(ChatEvent(T.STEP_START, step=number))
        events.extend(draw(st.lists(content_events(number), max_size=12)))
        if draw(st.integers(0, 4)):
            events.append(ChatEvent(T.STEP_END, step=number))
    fail_at = draw(st.one_of(st.none(), st.integers(0, len(events))))
    return events, fail_at, draw(st.sampled_from(FAILURES))


def _raising(events: list[ChatEvent], error: Exception) -> Iterator[ChatEvent]:
    yield from events
    raise error


def _source(
    events: list[ChatEvent], fail_at: int | None, error: Exception, how: str
) -> Observable[ChatEvent]:
    """``events``, failing at ``fail_at``: by an Rx error, a raising iterator or an event."""
    if fail_at is None:
        return reactivex.from_iterable(events)
    head, tail = events[:fail_at], events[fail_at:]
    if how == "throw":
        return reactivex.concat(reactivex.from_iterable(head), reactivex.throw(error))
    if how == "raise":
        return reactivex.from_iterable(_raising(head, error))
    step = head[-1].step if head else 0
    upstream = ChatEvent(T.ERROR, error=error, step=step)
    if how == "abort_event":
        upstream = ChatEvent(T.ABORT, step=step)
    return reactivex.from_iterable([*head, upstream, *tail])


def _steps(out: list[ChatEvent]) -> list[list[ChatEvent]]:
    steps: list[list[ChatEvent]] = []
    for event in out:
        if event.type is T.STEP_START:
            steps.append([])
        elif steps:
            steps[-1].append(event)
    return steps


def _text(events: list[ChatEvent]) -> str:
    return "".join(e.text or "" for e in events if e.type is T.TEXT_DELTA)


def _expected_usage(events: list[ChatEvent], upto: int) -> int | None:
    """The sum over steps of each step's latest USAGE prompt tokens (None without usage).

    A step left open is closed by the next STEP_START or by the end.
    """
    total: int | None = None
    latest: int | None = None
    for event in events[:upto]:
        if event.type in (T.STEP_START, T.STEP_END) and latest is not None:
            total = (total or 0) + latest
            latest = None
        elif event.type is T.USAGE and event.usage is not None:
            latest = event.usage.prompt_tokens
    if latest is not None:
        total = (total or 0) + latest
    return total


@SETTINGS
@given(responses())
def test_response_lifecycle_invariants(case: tuple[list[ChatEvent], int | None, str]) -> None:
    events, fail_at, how = case
    error = Boom("injected")
    out: list[ChatEvent] = []
    log: list[Any] = []
    _source(events, fail_at, error, how).pipe(normalize(), aggregate()).subscribe(
        lambda e: (out.append(e), log.append(e.type)),
        lambda exc: log.append(exc),
        lambda: log.append("completed"),
    )

    assert out[0].type is T.RESPONSE_START
    assert [e.type for e in out].count(T.RESPONSE_START) == 1
    terminals = [e for e in out if e.is_terminal]
    assert len(terminals) == 1
    assert terminals[0] is out[-1]
    assert len({e.response_id for e in out}) == 1
    assert out[0].response_id

    checker = BoundaryChecker()
    for event in out:
        checker.feed(event)
    checker.assert_closed()

    brackets = [(e.type, e.step) for e in out if e.type in (T.STEP_START, T.STEP_END)]
    assert brackets == [
        (T.STEP_START if i % 2 == 0 else T.STEP_END, brackets[i - i % 2][1])
        for i in range(len(brackets))
    ]
    assert len(brackets) % 2 == 0

    final = out[-1]
    steps = _steps(out)
    last_text = _text(steps[-1]) if steps else ""
    upto = len(events) if fail_at is None else fail_at
    if fail_at is not None and how == "abort_event":
        assert final.type is T.ABORT
        assert log[-2:] == [T.ABORT, "completed"]
        return
    assert (final.usage.prompt_tokens if final.usage else None) == _expected_usage(events, upto)
    assert final.response is not None
    assert final.response.text == last_text
    if fail_at is None:
        assert final.type is T.RESPONSE_END
        assert log[-1] == "completed"
        assert final.response.usage == final.usage
    else:
        assert final.type is T.ERROR
        assert final.error is error
        assert log[-2:] == [T.ERROR, error]
        assert log[-1] is error
        assert "completed" not in log


FILTERS: list[Any] = [
    None,
    ChatEventFilter.all(),
    ChatEventFilter.of(T.THINKING_DELTA),
    ChatEventFilter.of_groups(ChatEventGroup.TEXT),
    lambda event: event.type is not T.TEXT_DELTA or bool(event.text),
]


@SETTINGS
@given(responses(), st.sampled_from(FILTERS), st.sampled_from([None, "fixed-id"]))
def test_the_composed_respond_stage_delivers_what_the_chained_operators_deliver(
    case: tuple[list[ChatEvent], int | None, str], event_filter: Any, upstream_id: str | None
) -> None:
    """respond()'s stages, composed with direct calls, deliver what the operators
    ``normalize() | aggregate() | guard()`` deliver through Rx subscriptions."""
    events, fail_at, _how = case
    events = [e.evolve(response_id=upstream_id) for e in events]
    composed, chained = Recorder(), Recorder()
    head = stages.RespondStage(
        composed, response_id="r", event_filter=event_filter, fold_steps=False
    )
    for event in events[:fail_at]:
        head.on_next(event)
    if fail_at is None:
        head.on_completed()
    else:
        head.on_error(Boom("injected"))
    source = reactivex.from_iterable(events[:fail_at])
    if fail_at is not None:
        source = reactivex.concat(source, reactivex.throw(Boom("injected")))
    source.pipe(
        operators.normalize(),
        operators.aggregate(response_id="r", fold_steps=False),
        operators.guard(event_filter),
    ).subscribe(chained.on_next, chained.on_error, chained.on_completed)
    assert len(composed.log) == len(chained.log)
    for got, want in zip(composed.log, chained.log, strict=True):
        if isinstance(want, ChatEvent) and want.type is T.ERROR:
            assert got.evolve(error=None) == want.evolve(error=None)
        elif isinstance(want, Exception):
            assert type(got) is type(want)
        else:
            assert got == want
