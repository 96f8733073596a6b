"""Partial tool arguments on the event stream (SPEC §9-10): every dialect, fixtures and corpus."""

from __future__ import annotations

import copy
import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from partial_values import is_prefix, long_args_frames
from reactivex import operators as ops
from recorded import corpus_cases

from solon_events import (
    ArgumentDelta,
    ChatEvent,
    ChatEventFilter,
    ChatEventType,
    ChatModel,
    JsonDelta,
    JsonDeltaBuilder,
    ToolCall,
    argument_deltas,
    partial_arguments,
    replay,
    respond,
)
from solon_events.cli import write_report
from solon_events.core.partial_arguments import ArgumentDeltas, PartialArgumentsStage
from solon_events.devserver import DevServer
from solon_events.devserver.app import ROUTES
from solon_events.devserver.scenarios import REPORT_TOOL, report_arguments
from solon_events.operators import parse

T = ChatEventType
DELTAS = (T.TOOL_CALL_ARGS_DELTA, T.SERVER_TOOL_ARGS_DELTA)
DIALECTS = [dialect for _path, _wire, dialect in ROUTES]


def events_of(
    source: Any, dialect: str, *, may_fail: bool = False, **options: Any
) -> list[ChatEvent]:
    events: list[ChatEvent] = []
    errors: list[Exception] = []
    replay(source, dialect=dialect, event_filter=ChatEventFilter.all(), **options).subscribe(
        events.append, errors.append
    )
    assert may_fail or not errors, errors
    return events


def calls_in(events: list[ChatEvent]) -> dict[tuple[int, bool, int], list[ChatEvent]]:
    """The argument deltas of each call, by (step, server tool?, index)."""
    calls: dict[tuple[int, bool, int], list[ChatEvent]] = {}
    for event in events:
        if event.type in DELTAS:
            key = (event.step, event.type is T.SERVER_TOOL_ARGS_DELTA, event.index)
            calls.setdefault(key, []).append(event)
    return calls


def check_snapshots(deltas: list[ChatEvent], final: dict[str, Any] | None) -> None:
    """Every delta has a ToolCall; its arguments only grow, towards ``final`` when known."""
    snapshots = []
    for delta in deltas:
        assert isinstance(delta.tool_call, ToolCall), delta
        assert isinstance(delta.tool_call.arguments, dict)
        snapshots.append(delta.tool_call.arguments)
    for earlier, later in itertools.pairwise(snapshots):
        assert is_prefix(earlier, later), (earlier, later)
    if final is not None:
        assert snapshots[-1] == final
        assert all(is_prefix(snapshot, final) for snapshot in snapshots)


# --- fixtures: the embedded provider's long, nested argument in each wire format


@pytest.mark.parametrize("dialect", DIALECTS)
def test_each_dialect_streams_the_long_argument_as_growing_snapshots(dialect: str) -> None:
    events = events_of(long_args_frames(dialect), dialect, partial_arguments=True)
    ((_, deltas),) = calls_in(events).items()
    (end,) = [e for e in events if e.type is T.TOOL_CALL_END]
    check_snapshots(deltas, report_arguments(3))
    assert {(d.tool_call.name, d.tool_call.id) for d in deltas} == {  # type: ignore[union-attr]
        (REPORT_TOOL, end.tool_call.id)  # type: ignore[union-attr]
    }
    if dialect != "ollama":  # the one wire that sends a call whole
        assert len(deltas) > 50
        sizes = [len(json.dumps(d.tool_call.arguments)) for d in deltas]  # type: ignore[union-attr]
        assert len(set(sizes)) > len(sizes) // 2  # it visibly grows, delta after delta
    assert events[-1].response is not None
    assert events[-1].response.tool_calls[0].arguments == report_arguments(3)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_off_by_default_and_nothing_else_changes(dialect: str) -> None:
    frames = long_args_frames(dialect)
    on = events_of(frames, dialect, partial_arguments=True)
    off = events_of(frames, dialect)

    def visible(events: list[ChatEvent]) -> list[tuple[Any, ...]]:
        return [
            (e.type, e.text, e.step, e.index, e.item_id, e.tool_call_id, e.response, e.usage)
            + (() if e.type in DELTAS else (e.tool_call,))
            for e in events
        ]

    assert visible(on) == visible(off)
    if dialect != "ollama":  # a whole call's one delta carries the call itself
        assert all(e.tool_call is None for e in off if e.type in DELTAS)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_the_operator_after_respond_gives_the_same_snapshots(dialect: str) -> None:
    frames = long_args_frames(dialect)
    switched = events_of(frames, dialect, partial_arguments=True)
    piped: list[ChatEvent] = []
    replay(frames, dialect=dialect).pipe(partial_arguments()).subscribe(piped.append)
    assert [e.tool_call for e in piped if e.type in DELTAS] == [
        e.tool_call for e in switched if e.type in DELTAS
    ]
    assert [e.tool_call.arguments for e in piped if e.type in DELTAS] == [  # type: ignore[union-attr]
        e.tool_call.arguments  # type: ignore[union-attr]
        for e in switched
        if e.type in DELTAS
    ]


def test_respond_switch_over_parse() -> None:
    import reactivex

    events: list[ChatEvent] = []
    reactivex.from_iterable(long_args_frames("anthropic")).pipe(
        parse("anthropic"), respond(partial_arguments=True)
    ).subscribe(events.append)
    ((_, deltas),) = calls_in(events).items()
    check_snapshots(deltas, report_arguments(3))


def test_snapshots_are_never_changed_by_later_deltas() -> None:
    taken: list[tuple[dict[str, Any], dict[str, Any]]] = []

    def keep(event: ChatEvent) -> None:
        if event.type in DELTAS and event.tool_call is not None:
            taken.append((event.tool_call.arguments, copy.deepcopy(event.tool_call.arguments)))

    replay(long_args_frames("openai"), dialect="openai", partial_arguments=True).subscribe(keep)
    assert len(taken) > 50
    assert all(snapshot == as_delivered for snapshot, as_delivered in taken)


# --- the stage on hand-made events


def _event(kind: ChatEventType, **fields: Any) -> ChatEvent:
    return ChatEvent(kind, **fields)


def run_stage(events: list[ChatEvent]) -> list[ChatEvent]:
    out: list[ChatEvent] = []

    class Down:
        on_next = out.append

        def on_error(self, error: Exception) -> None:  # pragma: no cover
            raise error

        def on_completed(self) -> None:
            pass

    stage = PartialArgumentsStage(Down())
    for event in events:
        stage.on_next(event)
    stage.on_completed()
    return out


def test_free_form_input_has_no_arguments() -> None:
    call = ToolCall(id="c1", name="write_sql", index=0)
    out = run_stage(
        [
            _event(T.TOOL_CALL_START, index=0, tool_call_id="c1", tool_call=call),
            _event(T.TOOL_CALL_ARGS_DELTA, index=0, text="SELECT 1"),
            _event(T.TOOL_CALL_ARGS_DELTA, index=0, text=" FROM t"),
        ]
    )
    assert [e.tool_call.arguments for e in out[1:]] == [{}, {}]  # type: ignore[union-attr]
    assert out[1].tool_call.name == "write_sql" and out[1].tool_call.id == "c1"  # type: ignore[union-attr]


def test_parallel_calls_orphans_and_keyless_deltas() -> None:
    out = run_stage(
        [
            _event(T.TOOL_CALL_START, index=0, tool_call=ToolCall(id="a", name="f", index=0)),
            _event(T.TOOL_CALL_START, index=1, tool_call=ToolCall(id="b", name="g", index=1)),
            _event(T.TOOL_CALL_ARGS_DELTA, index=1, text='{"x": [1, '),
            _event(T.TOOL_CALL_ARGS_DELTA, index=0, text='{"y": "h'),
            _event(T.TOOL_CALL_ARGS_DELTA, text="2]}"),  # no ids: the call started last
            _event(T.TOOL_CALL_ARGS_DELTA, index=7, tool_call_id="z", text='{"o": true'),
            _event(T.STEP_END),
            _event(T.TOOL_CALL_ARGS_DELTA, index=0, text='{"new": 1}'),  # a new step
        ]
    )
    calls = [e.tool_call for e in out if e.type is T.TOOL_CALL_ARGS_DELTA]
    assert [(c.name, c.id, c.arguments) for c in calls] == [  # type: ignore[union-attr]
        ("g", "b", {"x": [1]}),
        ("f", "a", {"y": "h"}),
        ("g", "b", {"x": [1, 2]}),
        ("", "z", {"o": True}),
        ("", None, {"new": 1}),
    ]
    assert all(c.arguments_str == "" for c in calls)  # type: ignore[union-attr]


def test_a_delta_with_its_call_keeps_it() -> None:
    whole = ToolCall(id="c", name="f", arguments_str='{"a": 1}', index=0)
    out = run_stage([_event(T.TOOL_CALL_ARGS_DELTA, index=0, text='{"a": 1}', tool_call=whole)])
    assert out[0].tool_call is whole


# --- the recorded corpus, read in place


@pytest.mark.parametrize(("path", "dialect"), corpus_cases())
def test_corpus_recordings(path: Path, dialect: str) -> None:
    events = events_of(path, dialect, may_fail=True, partial_arguments=True)
    for (_step, server, _index), deltas in calls_in(events).items():
        text = "".join(d.text or "" for d in deltas)
        try:
            whole = json.loads(text) if text.strip() else {}
        except ValueError:  # a free-form input (custom tools, code): no arguments
            whole = {}
        final = whole if isinstance(whole, dict) else {}
        check_snapshots(deltas, final)
        if not server and deltas[-1].tool_call_id is not None:
            ends = [e for e in events if e.type is T.TOOL_CALL_END]
            matching = [e for e in ends if e.tool_call_id == deltas[-1].tool_call_id]
            if matching and matching[0].tool_call is not None:
                assert matching[0].tool_call.arguments == final


# --- a live model against the embedded provider (the demo's write_report tool)


@pytest.mark.parametrize("dialect", ["openai", "gemini"])
def test_chat_prompt_switch_against_the_embedded_provider(dialect: str) -> None:
    path = next(p for p, _wire, name in ROUTES if name == dialect)
    with DevServer.run_in_thread() as server:
        url = server.url + path.replace("{model}", "long-args")
        with ChatModel(url, "long-args", dialect=dialect) as model:
            prompt = model.prompt("Write the report").tools(write_report)
            request = prompt.partial_arguments(True).event_filter(ChatEventFilter.all())
            events = request.stream().pipe(ops.to_list()).run()
    ((_, deltas),) = calls_in(events).items()
    check_snapshots(deltas, report_arguments(4))
    assert events[-1].type is T.RESPONSE_END


# --- path deltas: argument_deltas() and ArgumentDeltas


def rebuilt(deltas: list[ArgumentDelta]) -> dict[tuple[int, bool, Any], Any]:
    """Each call's arguments rebuilt from its deltas, by (step, server tool?, call id)."""
    builders: dict[tuple[int, bool, Any], JsonDeltaBuilder] = {}
    for delta in deltas:
        key = (delta.step, delta.server, delta.tool_call_id)
        builders.setdefault(key, JsonDeltaBuilder()).apply(delta.delta)
    return {key: builder.value() for key, builder in builders.items()}


@pytest.mark.parametrize("dialect", DIALECTS)
def test_argument_deltas_rebuild_each_call_in_every_dialect(dialect: str) -> None:
    frames = long_args_frames(dialect)
    deltas = replay(frames, dialect=dialect).pipe(argument_deltas(), ops.to_list()).run()
    (end,) = [e for e in events_of(frames, dialect) if e.type is T.TOOL_CALL_END]
    assert end.tool_call is not None
    assert rebuilt(deltas) == {(0, False, end.tool_call.id): report_arguments(3)}
    assert {(d.name, d.index) for d in deltas} == {(REPORT_TOOL, end.tool_call.index)}
    assert deltas[0].delta == JsonDelta((), "add", {})
    if dialect != "ollama":  # a whole call's one delta
        assert sum(d.op == "append" for d in deltas) > 20
    text = "".join(e.text or "" for e in events_of(frames, dialect) if e.type in DELTAS)
    assert sum(len(d.value) for d in deltas if isinstance(d.value, str)) <= len(text)


@pytest.mark.parametrize(("path", "dialect"), corpus_cases())
def test_argument_deltas_agree_with_the_snapshots_on_the_corpus(path: Path, dialect: str) -> None:
    """Applied in order, the path deltas give after each argument delta exactly the
    snapshot partial_arguments() gives (JSON inputs; a free-form input's deltas stop)."""
    events = events_of(path, dialect, may_fail=True, partial_arguments=True)
    follow = ArgumentDeltas(build=True)
    compared = 0
    for event in events:
        call = follow.feed(event)
        if call is None:
            continue
        value = call.value()
        snapshot = event.tool_call.arguments  # type: ignore[union-attr]
        assert (value if call.is_json and type(value) is dict else {}) == snapshot
        compared += 1
    assert compared == sum(e.type in DELTAS for e in events)


def test_argument_deltas_name_their_calls_and_follow_steps() -> None:
    events = [
        _event(T.TOOL_CALL_START, index=0, tool_call=ToolCall(id="a", name="f", index=0)),
        _event(T.TOOL_CALL_START, index=1, tool_call=ToolCall(id="b", name="g", index=1)),
        _event(T.TOOL_CALL_ARGS_DELTA, index=1, text='{"x": [1, '),
        _event(T.TOOL_CALL_ARGS_DELTA, index=0, text='{"y": "h'),
        _event(T.TOOL_CALL_ARGS_DELTA, text="2]}"),  # no ids: the call started last
        _event(T.TEXT_DELTA, text="not an argument"),
        _event(T.SERVER_TOOL_START, item_id="ws", sub_type="web_search"),
        _event(T.SERVER_TOOL_ARGS_DELTA, item_id="ws", text='{"q": "rx"}'),
        _event(T.TOOL_CALL_ARGS_DELTA, index=0, text="i"),
        _event(T.STEP_END),
        _event(T.TOOL_CALL_ARGS_DELTA, index=0, step=1, text="free text, not JSON"),
    ]
    import reactivex

    out = reactivex.from_iterable(events).pipe(argument_deltas(), ops.to_list()).run()
    assert [(d.tool_call_id, d.name, d.index, d.server, d.path, d.op, d.value) for d in out] == [
        ("b", "g", 1, False, (), "add", {}),
        ("b", "g", 1, False, ("x",), "add", []),
        ("b", "g", 1, False, ("x", 0), "add", 1),
        ("a", "f", 0, False, (), "add", {}),
        ("a", "f", 0, False, ("y",), "add", "h"),
        ("b", "g", 1, False, ("x", 1), "add", 2),
        (None, "", -1, True, (), "add", {}),
        (None, "", -1, True, ("q",), "add", "rx"),
        ("a", "f", 0, False, ("y",), "append", "i"),
    ]
    assert out[0] == ArgumentDelta((), "add", {}, "b", "g", 1, 0, False)


def test_argument_deltas_of_an_input_that_stops_being_json() -> None:
    follow = ArgumentDeltas(build=True)
    first = follow.feed(_event(T.TOOL_CALL_ARGS_DELTA, index=0, text='{"a": 1, "b": "x'))
    assert first is not None and first.value() == {"a": 1, "b": "x"}
    later = follow.feed(_event(T.TOOL_CALL_ARGS_DELTA, index=0, text='y"} trailing words'))
    assert later is first and [tuple(d) for d in later.deltas] == [(("b",), "append", "y")]
    assert follow.feed(_event(T.TOOL_CALL_ARGS_DELTA, index=0, text="more")).deltas == []  # type: ignore[union-attr]
    assert first.value() == {"a": 1, "b": "xy"} and not first.is_json
    with pytest.raises(ValueError, match="build=True"):
        ArgumentDeltas().feed(_event(T.TOOL_CALL_ARGS_DELTA, index=0, text="{")).value()  # type: ignore[union-attr]


def test_argument_deltas_against_the_embedded_provider() -> None:
    with DevServer.run_in_thread() as server:
        url = server.url + "/v1/messages"
        with ChatModel(url, "long-args", dialect="anthropic") as model:
            prompt = model.prompt("Write the report").tools(write_report)
            deltas = prompt.stream().pipe(argument_deltas(), ops.to_list()).run()
    assert list(rebuilt(deltas).values()) == [report_arguments(4)]
