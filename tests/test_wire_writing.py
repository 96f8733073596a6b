"""Frames to bytes (solon_events.wire.writing): what the encoders write, read back by the
decoders of solon_events.wire.sse."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given
from hypothesis import strategies as st

from solon_events.wire.sse import Frame, iter_frames
from solon_events.wire.writing import json_line, sse_data, sse_event, sse_frame

# JSON objects with any text, the line and paragraph separators and NEL included
_TEXT = st.text(alphabet=st.characters(codec="utf-8"), max_size=30)
_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=8,
)
_OBJECTS = st.dictionaries(_TEXT, _VALUES, max_size=4)
_NAMES = st.text(alphabet="abcdefghijklmnopqrstuvwxyz._-", min_size=1, max_size=20)


@given(_OBJECTS, _NAMES)
def test_a_named_payload_is_one_event_of_that_name(payload: dict[str, Any], name: str) -> None:
    payload = {**payload, "type": name}
    (frame,) = iter_frames(sse_frame(payload, "type"), format="sse")
    assert frame.event == name
    assert orjson.loads(frame.data) == payload
    assert sse_frame(payload, "type") == sse_event(payload)


@given(_OBJECTS)
def test_a_payload_without_its_name_field_is_a_bare_data_event(payload: dict[str, Any]) -> None:
    payload.pop("event_type", None)
    (frame,) = iter_frames(sse_frame(payload, "event_type"), format="sse")
    assert frame.event is None
    assert orjson.loads(frame.data) == payload
    assert sse_frame(payload) == sse_frame(payload, "event_type") == sse_data(payload)


def test_a_string_payload_is_written_as_it_is() -> None:
    assert sse_frame("[DONE]", "type") == sse_data("[DONE]") == b"data: [DONE]\n\n"
    assert list(iter_frames(sse_data("[DONE]"), format="sse")) == [Frame("[DONE]")]


@given(st.lists(_OBJECTS, min_size=1, max_size=4))
def test_json_lines_are_one_object_a_line_whatever_the_text(payloads: list[Any]) -> None:
    body = b"".join(json_line(payload) for payload in payloads)
    lines = body.decode().splitlines()  # str.splitlines breaks at NEL, U+2028, U+2029 too
    assert [orjson.loads(line) for line in lines] == payloads
    frames = list(iter_frames(body, format="jsonl"))
    assert [orjson.loads(frame.data) for frame in frames] == payloads
