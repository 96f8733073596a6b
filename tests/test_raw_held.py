"""How an event holds ``raw`` and ``attrs`` (SPEC §2; #18.3): a frame's JSON text, decoded on read.

An event the parse stage makes from a whole frame holds the frame's text, shared by the
frame's events, instead of its decoded dicts and lists: a kept event then gives the
cyclic garbage collector nothing to walk but itself. ``raw`` still reads as a read-only
mapping equal to the frame, every time, through copies, pickles and ``evolve``. ``attrs``
holds a plain copy of its dict (a snapshot), made read-only when read.
"""

from __future__ import annotations

import gc
from types import MappingProxyType
from typing import Any

import orjson
import pytest
from copies import WAYS, copied
from dialect_runs import feed
from hypothesis import given
from hypothesis import strategies as st

from solon_events import ChatEvent, ChatEventFilter, ChatEventType, ChatStreamContext, replay
from solon_events.dialects.base import ChatDialect
from solon_events.event_model.events import with_response_id
from solon_events.event_model.values import EMPTY_MAPPING
from solon_events.wire.sse import Frame

T = ChatEventType


class _Frames(ChatDialect):
    """Each frame: a TEXT_DELTA and a STATUS with the whole frame as raw, a CUSTOM with
    its ``part`` (when it has one) as raw; ``{"done": true}`` finishes."""

    name = "frames"

    def parse_frame(self, ctx: ChatStreamContext, frame: Any) -> None:
        ctx.send(T.TEXT_DELTA, text="t", raw=frame)
        ctx.send(T.STATUS, raw=frame)
        if isinstance(frame.get("part"), dict):
            ctx.send(T.CUSTOM, raw=frame["part"])
        if frame.get("done"):
            ctx.finish("stop")


def _parsed(frames: list[Any]) -> list[ChatEvent]:
    """The events ``_Frames`` makes of ``frames``."""
    return feed(_Frames(), frames)[0]


def _walked(event: ChatEvent) -> list[Any]:
    """The containers ``event`` refers to, but the empty mapping every value shares."""
    return [
        r
        for r in gc.get_referents(event)
        if isinstance(r, (dict, list, MappingProxyType)) and r is not EMPTY_MAPPING
    ]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**62), 2**62) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=12,
)
frames = st.dictionaries(st.text(max_size=4), json_values, max_size=4)


@given(frames, st.sampled_from(["bytes", "str", "frame"]))
def test_raw_of_a_frame_reads_as_the_frame_every_time(payload: dict[str, Any], kind: str) -> None:
    text = orjson.dumps({**payload, "done": True})
    frame = {"bytes": text, "str": text.decode(), "frame": Frame(text.decode())}[kind]
    delta, status = _parsed([frame])[:2]
    expected = orjson.loads(text)
    for event in (delta, status):
        first, second = event.raw, event.raw
        assert first == second == expected and type(first) is MappingProxyType
        with pytest.raises(TypeError):
            first["done"] = False  # type: ignore[index]
        assert _walked(event) == []  # the frame is held as text, not as dicts and lists


def test_the_events_of_one_frame_share_its_text_and_a_part_is_kept_as_given() -> None:
    text = b'{"part": {"a": [1, 2]}, "done": true}'
    delta, status, custom = _parsed([text])
    assert any(r is text for r in gc.get_referents(delta))
    assert any(r is text for r in gc.get_referents(status))
    assert custom.raw == {"a": [1, 2]} and type(custom.raw) is MappingProxyType


def test_raw_read_from_a_frame_cannot_change_the_event() -> None:
    (delta, _status, _custom) = _parsed([b'{"part": {"a": [1]}, "done": true}'])
    delta.raw["part"]["a"].append(2)  # a fresh decode each read: nothing shared
    assert delta.raw == {"part": {"a": [1]}, "done": True}


def test_an_event_holding_a_frame_equals_one_given_the_frame_as_a_dict() -> None:
    text = b'{"x": {"y": [1, "z"]}, "done": true}'
    delta = _parsed([text])[0]
    given_dict = ChatEvent(T.TEXT_DELTA, text="t", raw=orjson.loads(text))
    assert delta == given_dict and given_dict == delta
    assert delta != given_dict.evolve(raw={"x": 1})


@pytest.mark.parametrize("how", WAYS)
def test_an_event_holding_a_frame_copies_and_pickles_to_an_equal_event(how: str) -> None:
    delta = _parsed([b'{"x": [1.5, null], "done": true}'])[0]
    again = copied(delta, how)
    assert again == delta and again.raw == {"x": [1.5, None], "done": True}
    assert type(again.raw) is MappingProxyType


def test_evolve_and_with_response_id_keep_the_frame_held_as_text() -> None:
    delta = _parsed([b'{"x": [1], "done": true}'])[0]
    evolved = delta.evolve(text="other", index=3)
    assert evolved.raw == delta.raw and (evolved.text, evolved.index) == ("other", 3)
    assert _walked(evolved) == []
    stamped = with_response_id(delta, "other")
    assert stamped.raw == delta.raw and _walked(stamped) == []
    assert delta.evolve(raw={"y": 2}).raw == {"y": 2}


def test_a_frame_that_is_not_valid_utf8_is_held_as_decoded() -> None:
    text = '{"s": "caf\u00e9", "done": true}'.encode().replace(b"\xc3\xa9", b"\xe9")
    delta = _parsed([text])[0]
    assert delta.raw == {"s": "caf\ufffd", "done": True}


def test_a_frame_given_decoded_is_held_as_a_read_only_view() -> None:
    delta = _parsed([{"x": 1, "done": True}])[0]
    assert delta.raw == {"x": 1, "done": True} and type(delta.raw) is MappingProxyType


def test_raw_of_the_current_frame_before_any_frame_is_empty() -> None:
    ctx = ChatStreamContext()
    ctx.send(T.STATUS, raw=ctx.frame)
    (event,) = ctx.take()
    assert event.raw == {} and type(event.raw) is MappingProxyType


def test_kept_replay_events_hold_no_provider_containers() -> None:
    chunk = {"id": "c", "choices": [{"index": 0, "delta": {"content": "Hi"}}]}
    last = {"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    body = b"".join(b"data: " + orjson.dumps(p) + b"\n\n" for p in (chunk, chunk, last))
    events: list[ChatEvent] = []
    replay(body + b"data: [DONE]\n\n", "openai", ChatEventFilter.all()).subscribe(events.append)
    deltas = [e for e in events if e.type is T.TEXT_DELTA]
    assert [e.raw for e in deltas] == [chunk, chunk]
    assert all(_walked(e) == [] for e in deltas)


def test_attrs_are_a_snapshot_the_collector_need_not_walk() -> None:
    source = {"received_at": 1.5}
    event = ChatEvent(T.TEXT_DELTA, attrs=source)
    source["received_at"] = 2.0
    assert event.attrs == {"received_at": 1.5} and type(event.attrs) is MappingProxyType
    with pytest.raises(TypeError):
        event.attrs["x"] = 1  # type: ignore[index]
    assert [gc.is_tracked(r) for r in _walked(event)] == [False]  # a dict of atoms, untracked
    assert event.evolve(text="x").attrs == event.attrs and event.attr("received_at") == 1.5
