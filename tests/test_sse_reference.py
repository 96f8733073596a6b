"""The decoder against an independent reference (as h11 tests against the standard library).

The reference below is the WHATWG "event stream interpretation" read line by line, written
straight from the specification (https://html.spec.whatwg.org/multipage/server-sent-events.html)
with none of the library's code: decode the whole stream as UTF-8, drop one leading BOM,
cut it into lines at CRLF, LF or CR, and apply each line's field. Two differences from a
browser are the library's documented choices and are written in here too: an empty
``event`` or ``id`` value reads as None, and the end of the stream dispatches an event that
lacks its blank line. Hypothesis then checks that the library's decoders give the
reference's frames for any input, split into chunks anywhere.
"""

from __future__ import annotations

import itertools
from typing import Literal

import pytest
from decoding import decode_all
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solon_events.wire.sse import (
    Frame,
    JSONLinesDecoder,
    SSEDecoder,
    StreamDecoder,
    iter_frame_data,
    iter_frames,
)


def reference_sse(body: bytes) -> list[Frame]:
    """The frames of a whole ``text/event-stream`` body, by the WHATWG rules."""
    text = body.decode("utf-8", "replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    frames: list[Frame] = []
    data: list[str] = []
    event_type = ""
    last_id = ""
    retry: int | None = None

    def dispatch() -> None:
        nonlocal data, event_type, retry
        if data:
            frames.append(Frame("\n".join(data), event_type or None, last_id or None, retry))
        data, event_type, retry = [], "", None

    for line in lines:
        if line == "":
            dispatch()
            continue
        if line.startswith(":"):
            continue
        if ":" in line:
            field, _, value = line.partition(":")
            if value.startswith(" "):
                value = value[1:]
        else:
            field, value = line, ""
        if field == "data":
            data.append(value)
        elif field == "event":
            event_type = value
        elif field == "id":
            if "\0" not in value:
                last_id = value
        elif field == "retry" and value and all(c in "0123456789" for c in value):
            retry = int(value)
    dispatch()  # the library's choice: a last event without its blank line still counts
    return frames


def reference_json_lines(body: bytes) -> list[Frame]:
    """The frames of a whole JSON-lines body: every line with more than blank space."""
    text = body.decode("utf-8", "replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return [Frame(line) for line in lines if line.strip(" \t\x0b\x0c")]


# Bodies made of the pieces the rules turn on, and some that no rule names.
_PIECES = [
    b"data",
    b"event",
    b"id",
    b"retry",
    b"dat",
    b"other",
    b":",
    b": ",
    b" ",
    b"\n",
    b"\r",
    b"\r\n",
    b"\n\n",
    b"x",
    b'{"a": 1}',
    b"12",
    b"\0",
    b"\xc3\xa9",
    b"\xe2\x82",
    b"\xff",
    b"\xef\xbb\xbf",
    b"\t",
]
bodies = st.one_of(
    st.lists(st.sampled_from(_PIECES), max_size=60).map(b"".join),
    st.binary(max_size=120),
)


@st.composite
def split_bodies(draw: st.DrawFn) -> tuple[bytes, list[bytes]]:
    """A body and the chunks it arrives in, cut anywhere (a byte alone, a character split)."""
    body = draw(bodies)
    cuts = sorted(draw(st.lists(st.integers(0, len(body)), max_size=12)))
    bounds = [0, *cuts, len(body)]
    return body, [body[a:b] for a, b in itertools.pairwise(bounds)]


DECODERS = {"sse": (SSEDecoder, reference_sse), "jsonl": (JSONLinesDecoder, reference_json_lines)}
"""Each format's decoder and its reference reading."""


@pytest.mark.parametrize("format", DECODERS)
@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=split_bodies())
def test_each_decoder_agrees_with_the_reference_on_any_input_and_any_split(
    format: Literal["sse", "jsonl"], case: tuple[bytes, list[bytes]]
) -> None:
    decoder, reference = DECODERS[format]
    body, chunks = case
    expected = reference(body)
    assert decode_all(decoder(), chunks) == expected
    assert decode_all(StreamDecoder(format=format), chunks) == expected
    assert list(iter_frames(body, format=format)) == expected
    assert list(iter_frames(chunks, format=format)) == expected
    data = [frame.data for frame in expected]
    assert decode_all(decoder(data_only=True), chunks) == data
    assert list(iter_frame_data(body, format=format)) == data
    assert list(iter_frame_data(chunks, format=format)) == data


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.sampled_from([b'data: {"n": 1}', b"event: e\ndata: 2", b": ping"]), max_size=3000)
)
def test_long_runs_of_simple_events_agree_with_the_reference(events: list[bytes]) -> None:
    """Bodies long enough for the decoder's bulk path (windows of many events at once), and
    short ones, decoded whole at once."""
    body = b"\n\n".join(events) + b"\n\n"
    expected = reference_sse(body)
    assert list(iter_frames(body, format="sse")) == expected
    assert list(iter_frame_data(body)) == [frame.data for frame in expected]
    half = len(body) // 2
    assert decode_all(SSEDecoder(), [body[:half], body[half:]]) == expected
