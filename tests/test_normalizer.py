"""ChatEventNormalizer: every boundary rule of SPEC §5."""

from __future__ import annotations

import pytest

from solon_events import ChatEvent, ChatEventNormalizer, ChatEventType, ToolCall, Usage

T = ChatEventType


def run(*events: ChatEvent, complete: bool = False) -> list[ChatEvent]:
    """Every event the normalizer emits for ``events`` (then ``complete()`` if asked)."""
    normalizer = ChatEventNormalizer()
    out: list[ChatEvent] = []
    for event in events:
        normalizer.apply(event, out.append)
    if complete:
        normalizer.complete(out.append)
    return out


def types(events: list[ChatEvent]) -> list[ChatEventType]:
    return [e.type for e in events]


# strict text and thinking


def test_bare_text_delta_gets_a_start_carrying_its_ids() -> None:
    delta = ChatEvent(
        T.TEXT_DELTA,
        text="hi",
        item_id="msg_1",
        index=2,
        step=3,
        response_id="r",
        provider_response_id="p",
    )
    out = run(delta)
    assert types(out) == [T.TEXT_START, T.TEXT_DELTA]
    start = out[0]
    assert (start.item_id, start.index, start.step) == ("msg_1", 2, 3)
    assert (start.response_id, start.provider_response_id) == ("r", "p")
    assert start.text is None
    assert out[1] is delta


def test_bare_thinking_delta_gets_a_start() -> None:
    out = run(ChatEvent(T.THINKING_DELTA, text="hmm", index=0, step=1))
    assert types(out) == [T.THINKING_START, T.THINKING_DELTA]
    assert (out[0].index, out[0].step) == (0, 1)


def test_explicit_boundaries_pass_through_as_they_are() -> None:
    events = [
        ChatEvent(T.TEXT_START, index=0),
        ChatEvent(T.TEXT_DELTA, text="a", index=0),
        ChatEvent(T.TEXT_DELTA, text="b", index=0),
        ChatEvent(T.TEXT_END, index=0),
    ]
    out = run(*events)
    assert out == events
    assert all(o is e for o, e in zip(out, events))


def test_later_deltas_do_not_reopen() -> None:
    out = run(*[ChatEvent(T.TEXT_DELTA, text=c) for c in "abc"])
    assert types(out) == [T.TEXT_START, T.TEXT_DELTA, T.TEXT_DELTA, T.TEXT_DELTA]


def test_duplicate_start_is_dropped() -> None:
    out = run(
        ChatEvent(T.TEXT_START, index=0),
        ChatEvent(T.TEXT_START, index=0),
        ChatEvent(T.TEXT_DELTA, text="a", index=0),
        ChatEvent(T.THINKING_START),
        ChatEvent(T.THINKING_START),
    )
    assert types(out) == [
        T.TEXT_START, T.TEXT_DELTA, T.TEXT_END, T.THINKING_START,
    ]  # fmt: skip


def test_start_after_a_synthesized_start_is_a_duplicate() -> None:
    out = run(ChatEvent(T.TEXT_DELTA, text="a", index=0), ChatEvent(T.TEXT_START, index=0))
    assert types(out) == [T.TEXT_START, T.TEXT_DELTA]


def test_end_with_no_open_block_is_dropped() -> None:
    assert run(ChatEvent(T.TEXT_END)) == []
    assert run(ChatEvent(T.THINKING_END, index=3)) == []
    out = run(ChatEvent(T.TEXT_DELTA, text="a"), ChatEvent(T.TEXT_END), ChatEvent(T.TEXT_END))
    assert types(out) == [T.TEXT_START, T.TEXT_DELTA, T.TEXT_END]


def test_end_of_another_key_is_dropped() -> None:
    out = run(ChatEvent(T.TEXT_START, index=0), ChatEvent(T.TEXT_END, index=1))
    assert types(out) == [T.TEXT_START]


def test_switching_from_thinking_to_text_closes_thinking() -> None:
    out = run(
        ChatEvent(T.THINKING_DELTA, text="hmm", index=0, item_id="rs"),
        ChatEvent(T.TEXT_DELTA, text="answer", index=1, step=2, response_id="r"),
    )
    assert types(out) == [
        T.THINKING_START, T.THINKING_DELTA, T.THINKING_END, T.TEXT_START, T.TEXT_DELTA,
    ]  # fmt: skip
    closer = out[2]
    assert (closer.index, closer.item_id) == (0, "rs")
    assert (closer.step, closer.response_id) == (2, "r")


def test_switching_from_text_to_thinking_closes_text() -> None:
    out = run(ChatEvent(T.TEXT_DELTA, text="a"), ChatEvent(T.THINKING_START, index=1))
    assert types(out) == [T.TEXT_START, T.TEXT_DELTA, T.TEXT_END, T.THINKING_START]


def test_tool_call_start_closes_text_and_thinking() -> None:
    call = ToolCall(id="c1", name="f")
    out = run(
        ChatEvent(T.TEXT_DELTA, text="let me check", index=0),
        ChatEvent(T.TOOL_CALL_START, tool_call_id="c1", index=1, tool_call=call),
    )
    assert types(out) == [T.TEXT_START, T.TEXT_DELTA, T.TEXT_END, T.TOOL_CALL_START]
    assert out[2].index == 0
    out = run(
        ChatEvent(T.THINKING_DELTA, text="hmm"),
        ChatEvent(T.TOOL_CALL_START, tool_call_id="c1", tool_call=call),
    )
    assert types(out) == [T.THINKING_START, T.THINKING_DELTA, T.THINKING_END, T.TOOL_CALL_START]


def test_step_end_closes_everything_first() -> None:
    out = run(
        ChatEvent(T.TOOL_CALL_START, tool_call_id="c1", index=1),
        ChatEvent(T.TEXT_DELTA, text="a", index=0),
        ChatEvent(T.STEP_END, step=4, response_id="r"),
    )
    assert types(out) == [
        T.TOOL_CALL_START, T.TEXT_START, T.TEXT_DELTA, T.TEXT_END, T.TOOL_CALL_END, T.STEP_END,
    ]  # fmt: skip
    for closer in out[3:5]:
        assert (closer.step, closer.response_id) == (4, "r")
    assert out[4].tool_call_id == "c1"


def test_response_end_closes_everything_first() -> None:
    out = run(ChatEvent(T.THINKING_DELTA, text="x"), ChatEvent(T.RESPONSE_END))
    assert types(out) == [T.THINKING_START, T.THINKING_DELTA, T.THINKING_END, T.RESPONSE_END]


def test_complete_closes_what_is_open_and_is_idempotent() -> None:
    normalizer = ChatEventNormalizer()
    out: list[ChatEvent] = []
    normalizer.apply(ChatEvent(T.TEXT_DELTA, text="a", index=0), out.append)
    normalizer.apply(ChatEvent(T.TOOL_CALL_ARGS_DELTA, text="{", tool_call_id="c"), out.append)
    normalizer.apply(ChatEvent(T.THINKING_DELTA, text="b", index=2), out.append)
    assert normalizer.has_open
    before = len(out)
    normalizer.complete(out.append)
    closers = out[before:]
    assert sorted(t.name for t in types(closers)) == ["THINKING_END", "TOOL_CALL_END"]
    assert not normalizer.has_open
    normalizer.complete(out.append)
    assert len(out) == before + 2


def test_complete_with_nothing_open_emits_nothing() -> None:
    assert run(complete=True) == []
    assert run(ChatEvent(T.USAGE, usage=Usage()), complete=True) == [
        ChatEvent(T.USAGE, usage=Usage())
    ]
    assert types(run(ChatEvent(T.TEXT_START), ChatEvent(T.TEXT_END), complete=True)) == [
        T.TEXT_START,
        T.TEXT_END,
    ]


def test_two_text_blocks_keyed_by_index_are_open_at_once() -> None:
    out = run(
        ChatEvent(T.TEXT_DELTA, text="a", index=0),
        ChatEvent(T.TEXT_DELTA, text="b", index=1),
        ChatEvent(T.TEXT_DELTA, text="c", index=0),
        ChatEvent(T.TEXT_END, index=0),
        ChatEvent(T.TEXT_DELTA, text="d", index=1),
        complete=True,
    )
    assert [(e.type.name, e.index) for e in out] == [
        ("TEXT_START", 0), ("TEXT_DELTA", 0), ("TEXT_START", 1), ("TEXT_DELTA", 1),
        ("TEXT_DELTA", 0), ("TEXT_END", 0), ("TEXT_DELTA", 1), ("TEXT_END", 1),
    ]  # fmt: skip


def test_two_text_blocks_keyed_by_item_id_are_open_at_once() -> None:
    out = run(
        ChatEvent(T.TEXT_START, item_id="m1"),
        ChatEvent(T.TEXT_START, item_id="m2"),
        ChatEvent(T.TEXT_DELTA, text="a", item_id="m1"),
        ChatEvent(T.TEXT_DELTA, text="b", item_id="m2"),
        ChatEvent(T.TEXT_END, item_id="m2"),
        ChatEvent(T.TEXT_END, item_id="m1"),
    )
    assert [(e.type.name, e.item_id) for e in out] == [
        ("TEXT_START", "m1"), ("TEXT_START", "m2"), ("TEXT_DELTA", "m1"), ("TEXT_DELTA", "m2"),
        ("TEXT_END", "m2"), ("TEXT_END", "m1"),
    ]  # fmt: skip


def test_keyless_events_belong_to_the_latest_block() -> None:
    out = run(
        ChatEvent(T.TEXT_START, index=0),
        ChatEvent(T.TEXT_DELTA, text="a"),
        ChatEvent(T.TEXT_END),
        ChatEvent(T.TEXT_END),
    )
    assert types(out) == [T.TEXT_START, T.TEXT_DELTA, T.TEXT_END]


def test_events_giving_part_of_the_key_find_their_block() -> None:
    out = run(
        ChatEvent(T.TEXT_START, item_id="msg", index=0),
        ChatEvent(T.TEXT_DELTA, text="a", item_id="msg"),
        ChatEvent(T.TEXT_DELTA, text="b", index=0),
        ChatEvent(T.TEXT_START, item_id="msg"),
        ChatEvent(T.TEXT_END, item_id="msg"),
    )
    assert types(out) == [T.TEXT_START, T.TEXT_DELTA, T.TEXT_DELTA, T.TEXT_END]


# loose tool calls


def test_orphan_args_delta_gets_a_start_with_its_ids() -> None:
    delta = ChatEvent(
        T.TOOL_CALL_ARGS_DELTA, text='{"a"', tool_call_id="c1", index=0, step=2, response_id="r"
    )
    out = run(delta, ChatEvent(T.TOOL_CALL_ARGS_DELTA, text=":1}", index=0))
    assert types(out) == [T.TOOL_CALL_START, T.TOOL_CALL_ARGS_DELTA, T.TOOL_CALL_ARGS_DELTA]
    start = out[0]
    assert (start.tool_call_id, start.index, start.step, start.response_id) == ("c1", 0, 2, "r")


def test_keyless_args_deltas_belong_to_the_open_call() -> None:
    out = run(
        ChatEvent(T.TOOL_CALL_ARGS_DELTA, text="{"),
        ChatEvent(T.TOOL_CALL_ARGS_DELTA, text="}"),
        complete=True,
    )
    assert types(out) == [
        T.TOOL_CALL_START, T.TOOL_CALL_ARGS_DELTA, T.TOOL_CALL_ARGS_DELTA, T.TOOL_CALL_END,
    ]  # fmt: skip


def test_parallel_starts_are_all_kept() -> None:
    events = [
        ChatEvent(T.TOOL_CALL_START, tool_call_id="a", index=0),
        ChatEvent(T.TOOL_CALL_START, tool_call_id="b", index=1),
        ChatEvent(T.TOOL_CALL_ARGS_DELTA, text="{}", index=0),
        ChatEvent(T.TOOL_CALL_ARGS_DELTA, text="{}", tool_call_id="b"),
        ChatEvent(T.TOOL_CALL_END, tool_call_id="b"),
        ChatEvent(T.TOOL_CALL_END, index=0),
    ]
    normalizer = ChatEventNormalizer()
    out: list[ChatEvent] = []
    for event in events:
        normalizer.apply(event, out.append)
    assert out == events
    assert not normalizer.has_open


def test_unmatched_end_is_kept() -> None:
    end = ChatEvent(T.TOOL_CALL_END, tool_call_id="x", tool_call=ToolCall(id="x", name="f"))
    assert run(end) == [end]


def test_end_with_unknown_id_closes_the_earliest_open_call() -> None:
    out = run(
        ChatEvent(T.TOOL_CALL_START, tool_call_id="a"),
        ChatEvent(T.TOOL_CALL_START, tool_call_id="b"),
        ChatEvent(T.TOOL_CALL_END, tool_call_id="zzz"),
        complete=True,
    )
    assert [(e.type.name, e.tool_call_id) for e in out] == [
        ("TOOL_CALL_START", "a"), ("TOOL_CALL_START", "b"), ("TOOL_CALL_END", "zzz"),
        ("TOOL_CALL_END", "b"),
    ]  # fmt: skip


def test_step_end_and_complete_end_open_calls() -> None:
    out = run(
        ChatEvent(T.TOOL_CALL_START, tool_call_id="a", index=0, item_id="fc_a"),
        ChatEvent(T.TOOL_CALL_START, tool_call_id="b", index=1),
        ChatEvent(T.STEP_END, step=1),
    )
    assert [(e.type.name, e.tool_call_id, e.index) for e in out] == [
        ("TOOL_CALL_START", "a", 0), ("TOOL_CALL_START", "b", 1), ("TOOL_CALL_END", "a", 0),
        ("TOOL_CALL_END", "b", 1), ("STEP_END", None, -1),
    ]  # fmt: skip
    assert out[2].item_id == "fc_a"
    out = run(ChatEvent(T.TOOL_CALL_START, tool_call_id="a"), complete=True)
    assert [(e.type.name, e.tool_call_id) for e in out] == [
        ("TOOL_CALL_START", "a"), ("TOOL_CALL_END", "a"),
    ]  # fmt: skip


def test_tool_call_chunk_expands_to_start_delta_end() -> None:
    call = ToolCall(id="c1", name="get_weather", arguments_str='{"city":"Paris"}', index=2)
    chunk = ChatEvent(T.TOOL_CALL_CHUNK, tool_call=call, step=1, response_id="r", raw={"frame": 1})
    out = run(ChatEvent(T.TEXT_DELTA, text="hi"), chunk)
    assert types(out) == [
        T.TEXT_START, T.TEXT_DELTA, T.TEXT_END,
        T.TOOL_CALL_START, T.TOOL_CALL_ARGS_DELTA, T.TOOL_CALL_END,
    ]  # fmt: skip
    start, delta, end = out[3:]
    for event in (start, delta, end):
        assert (event.tool_call_id, event.index, event.step, event.response_id) == ("c1", 2, 1, "r")
        assert event.tool_call == call
        assert event.raw["frame"] == 1
    assert delta.text == '{"city":"Paris"}'


def test_tool_call_chunk_closes_its_own_call() -> None:
    normalizer = ChatEventNormalizer()
    out: list[ChatEvent] = []
    normalizer.apply(ChatEvent(T.TOOL_CALL_START, tool_call_id="a", index=0), out.append)
    normalizer.apply(ChatEvent(T.TOOL_CALL_CHUNK, tool_call=ToolCall(name="g")), out.append)
    assert normalizer.has_open
    normalizer.complete(out.append)
    assert [(e.type.name, e.tool_call_id) for e in out] == [
        ("TOOL_CALL_START", "a"), ("TOOL_CALL_START", None), ("TOOL_CALL_ARGS_DELTA", None),
        ("TOOL_CALL_END", None), ("TOOL_CALL_END", "a"),
    ]  # fmt: skip


def test_tool_result_passes_through_and_closes_nothing() -> None:
    result = ChatEvent(T.TOOL_RESULT, tool_call_id="c1", text="sunny")
    out = run(ChatEvent(T.TEXT_DELTA, text="a"), result)
    assert types(out) == [T.TEXT_START, T.TEXT_DELTA, T.TOOL_RESULT]
    assert out[2] is result


# everything else


def test_signature_keeps_the_thinking_block_open() -> None:
    out = run(
        ChatEvent(T.THINKING_DELTA, text="a", index=0),
        ChatEvent(T.THINKING_SIGNATURE, text="sig", index=0),
        ChatEvent(T.THINKING_DELTA, text="b", index=0),
        ChatEvent(T.THINKING_END, index=0),
    )
    assert types(out) == [
        T.THINKING_START, T.THINKING_DELTA, T.THINKING_SIGNATURE, T.THINKING_DELTA, T.THINKING_END,
    ]  # fmt: skip


def test_other_events_pass_through_without_closing() -> None:
    others = [
        ChatEvent(T.USAGE, usage=Usage(prompt_tokens=1)),
        ChatEvent(T.STATUS, text="in_progress"),
        ChatEvent(T.HEARTBEAT),
        ChatEvent(T.RAW, raw_type="x"),
        ChatEvent(T.CUSTOM),
        ChatEvent(T.THINKING_REDACTED, text="data"),
        ChatEvent(T.REFUSAL_DELTA, text="no"),
        ChatEvent(T.SERVER_TOOL_START, sub_type="web_search"),
        ChatEvent(T.MEDIA_DONE),
    ]
    out = run(ChatEvent(T.TEXT_DELTA, text="a"), *others, ChatEvent(T.TEXT_DELTA, text="b"))
    assert types(out) == [T.TEXT_START, T.TEXT_DELTA, *types(others), T.TEXT_DELTA]
    assert all(o is e for o, e in zip(out[2:-1], others))


# identity on synthesized events


def test_synthesized_end_carries_the_blocks_ids_and_the_causes_step() -> None:
    out = run(
        ChatEvent(T.TEXT_DELTA, text="a", item_id="m", index=3, step=0, provider_response_id="p"),
        ChatEvent(T.STEP_END, step=5, response_id="resp"),
    )
    end = out[2]
    assert end.type is T.TEXT_END
    assert (end.item_id, end.index, end.provider_response_id) == ("m", 3, "p")
    assert (end.step, end.response_id) == (5, "resp")


def test_complete_uses_the_last_seen_event_for_step_and_response_id() -> None:
    out = run(
        ChatEvent(T.TOOL_CALL_START, tool_call_id="c", index=1, item_id="fc", step=0),
        ChatEvent(T.USAGE, step=7, response_id="last"),
        complete=True,
    )
    end = out[-1]
    assert end.type is T.TOOL_CALL_END
    assert (end.tool_call_id, end.index, end.item_id) == ("c", 1, "fc")
    assert (end.step, end.response_id) == (7, "last")


def test_has_open() -> None:
    normalizer = ChatEventNormalizer()
    sink: list[ChatEvent] = []
    assert not normalizer.has_open
    normalizer.apply(ChatEvent(T.TEXT_DELTA, text="a"), sink.append)
    assert normalizer.has_open
    normalizer.apply(ChatEvent(T.TEXT_END), sink.append)
    assert not normalizer.has_open
    normalizer.apply(ChatEvent(T.TOOL_CALL_START, tool_call_id="c"), sink.append)
    assert normalizer.has_open
    normalizer.apply(ChatEvent(T.TOOL_CALL_END, tool_call_id="c"), sink.append)
    assert not normalizer.has_open


def test_terminal_events_close_everything_first() -> None:
    for terminal in (ChatEvent(T.ABORT, step=2), ChatEvent(T.ERROR, step=2)):
        out = run(
            ChatEvent(T.TEXT_DELTA, text="a"),
            ChatEvent(T.TOOL_CALL_START, tool_call_id="c"),
            terminal,
        )
        assert types(out) == [
            T.TEXT_START, T.TEXT_DELTA, T.TEXT_END, T.TOOL_CALL_START, T.TOOL_CALL_END,
            terminal.type,
        ]  # fmt: skip
        assert out[-1] is terminal
        assert out[-2].step == 2


def test_a_new_step_closes_what_the_previous_step_left_open() -> None:
    out = run(
        ChatEvent(T.STEP_START, step=0),
        ChatEvent(T.THINKING_DELTA, text="a", step=0),
        ChatEvent(T.TOOL_CALL_START, tool_call_id="c", step=0),
        ChatEvent(T.STEP_START, step=1),
    )
    assert [(e.type.name, e.step) for e in out] == [
        ("STEP_START", 0), ("THINKING_START", 0), ("THINKING_DELTA", 0), ("THINKING_END", 0),
        ("TOOL_CALL_START", 0), ("TOOL_CALL_END", 0), ("STEP_START", 1),
    ]  # fmt: skip


def test_apply_emits_through_the_emit_it_was_made_with() -> None:
    out: list[ChatEvent] = []
    normalizer = ChatEventNormalizer(out.append)
    normalizer.apply(ChatEvent(T.TEXT_DELTA, text="a", index=0))
    elsewhere: list[ChatEvent] = []
    normalizer.apply(ChatEvent(T.TEXT_DELTA, text="b", index=0), elsewhere.append)
    assert [(e.type, e.text) for e in out] == [(T.TEXT_START, None), (T.TEXT_DELTA, "a")]
    assert [(e.type, e.text) for e in elsewhere] == [(T.TEXT_DELTA, "b")]
    with pytest.raises(TypeError, match="needs an emit"):
        ChatEventNormalizer().apply(ChatEvent(T.TEXT_DELTA, text="c", index=0))
