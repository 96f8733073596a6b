"""A member of a frame's JSON text held for later (#18.3): ``held_member`` / ``read_held``, and
``Usage.source`` and a USAGE event's ``raw`` holding Gemini's ``usageMetadata`` that way.

Every Gemini frame carries a new cumulative usage snapshot; a kept USAGE event holding the
snapshot's decoded dicts and lists would give the cyclic garbage collector four more
objects to walk per frame. Held as part of the frame's text, the snapshot still reads as an
equal value every time, through equality, copies, pickles, ``evolve`` and ``+``.
"""

from __future__ import annotations

import gc
from types import MappingProxyType
from typing import Any

import attrs
import orjson
import pytest
from copies import WAYS, copied
from hypothesis import given
from hypothesis import strategies as st

from solon_events import ChatEvent, ChatEventFilter, ChatEventType, Usage, replay
from solon_events.dialects.gemini import gemini_usage
from solon_events.event_model.values import held_member, read_held

T = ChatEventType

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**62), 2**62) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=12,
)
objects = st.dictionaries(st.text(max_size=4), json_values, max_size=4)

USAGE = {
    "promptTokenCount": 9,
    "candidatesTokenCount": 23,
    "totalTokenCount": 217,
    "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 9}],
    "thoughtsTokenCount": 185,
}
FRAME = {
    "candidates": [{"content": {"parts": [{"text": "Hi"}], "role": "model"}, "index": 0}],
    "usageMetadata": USAGE,
    "modelVersion": "gemini-3-pro-preview",
    "responseId": "r1",
}


def _held_usage() -> Usage:
    return gemini_usage(USAGE, held_member(orjson.dumps(FRAME), "usageMetadata"))


@given(objects, st.text(max_size=4), json_values, st.sampled_from(["bytes", "str"]))
def test_a_held_member_reads_as_the_member_every_time(
    payload: dict[str, Any], key: str, value: Any, kind: str
) -> None:
    text = orjson.dumps({**payload, key: value})
    held = held_member(text if kind == "bytes" else text.decode(), key)
    first, second = read_held(held), read_held(held)
    assert first == second == value
    if isinstance(value, (dict, list)):
        assert first is not second  # decoded afresh: a reader cannot change what is held


@given(json_values | st.tuples(json_values, json_values, json_values))
def test_anything_else_reads_as_itself(value: Any) -> None:
    assert read_held(value) is value


def test_the_collector_stops_tracking_a_held_member() -> None:
    held = held_member(orjson.dumps(FRAME).decode(), "usageMetadata")
    gc.collect()
    assert not gc.is_tracked(held)


def test_usage_holding_a_member_equals_usage_holding_the_dict() -> None:
    held, given = _held_usage(), gemini_usage(USAGE)
    assert held == given and given == held
    assert held.source == USAGE and held.source is not held.source
    assert repr(held) == repr(given)
    assert held != attrs.evolve(given, source={"other": 1})
    for usage in (held, given):  # unhashable, held or not (read-only mappings are)
        with pytest.raises(TypeError):
            hash(usage)


def test_usage_built_by_keyword_holds_what_it_is_given() -> None:
    held = held_member(orjson.dumps(FRAME), "usageMetadata")
    usage = Usage(prompt_tokens=9, completion_tokens=208, source=held)
    assert usage.total_tokens == 217 and usage.source == USAGE
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        usage.source = None  # type: ignore[misc]


@pytest.mark.parametrize("how", WAYS)
def test_usage_holding_a_member_copies_and_pickles_to_an_equal_usage(how: str) -> None:
    usage = _held_usage()
    again = copied(usage, how)
    assert again == usage and again.source == USAGE


def test_usage_holding_a_member_evolves_and_adds_as_before() -> None:
    usage = _held_usage()
    evolved = attrs.evolve(usage, prompt_tokens=1)
    assert evolved.prompt_tokens == 1 and evolved.source == USAGE
    other = Usage(prompt_tokens=1, source={"b": 2})
    total = usage + other + usage
    assert total.source == {"steps": [USAGE, {"b": 2}, USAGE]}
    assert total == gemini_usage(USAGE) + other + gemini_usage(USAGE)


def _replayed(frames: list[dict[str, Any]]) -> list[ChatEvent]:
    body = b"".join(b"data: " + orjson.dumps(frame) + b"\n\n" for frame in frames)
    events: list[ChatEvent] = []
    replay(body, "gemini", ChatEventFilter.all()).subscribe(events.append)
    return events


def _containers(value: Any) -> list[Any]:
    return [r for r in gc.get_referents(value) if isinstance(r, (dict, list))]


def test_gemini_usage_events_hold_their_snapshot_as_frame_text() -> None:
    later = {**USAGE, "candidatesTokenCount": 30, "totalTokenCount": 224}
    last = {**FRAME, "usageMetadata": later}
    last["candidates"] = [{**FRAME["candidates"][0], "finishReason": "STOP"}]  # type: ignore[index]
    events = _replayed([FRAME, last])
    usages = [e for e in events if e.type is T.USAGE]
    assert [e.raw for e in usages] == [USAGE, later]
    assert [e.usage.source for e in usages] == [USAGE, later]  # type: ignore[union-attr]
    assert all(type(e.raw) is MappingProxyType for e in usages)
    for event in usages:
        assert _containers(event) == [] and _containers(event.usage) == []
    assert usages[0].usage == gemini_usage(USAGE)
    (end,) = [e for e in events if e.type is T.STEP_END]
    assert end.usage == gemini_usage(later)  # type: ignore[union-attr]
