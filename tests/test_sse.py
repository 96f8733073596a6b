"""Tests of solon_events.wire.sse (WHATWG event-stream decoding, JSON lines and format sniffing)."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Literal

import orjson
import pytest
from decoding import decode_all
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from recorded import CORPUS, needs_corpus

from solon_events.event_model.errors import ChatProtocolError
from solon_events.wire.sse import (
    DEFAULT_MAX_FRAME_SIZE,
    Frame,
    JSONLinesDecoder,
    SSEDecoder,
    StreamDecoder,
    StreamFormat,
    iter_frames,
)

# A Chat Completions stream as the OpenAI API reference shows it, with a keep-alive comment.
OPENAI_SSE = (
    b": keep-alive\n\n"
    b'data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,'
    b'"delta":{"role":"assistant","content":""},"finish_reason":null}]}\n\n'
    b'data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,'
    b'"delta":{"content":"H\xc3\xa9llo \xf0\x9f\x98\x80"},"finish_reason":null}]}\n\n'
    b'data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,'
    b'"delta":{},"finish_reason":"stop"}]}\n\n'
    b"data: [DONE]\n\n"
)

# An Anthropic Messages stream: every event has an `event:` line before its data.
ANTHROPIC_SSE = (
    b"event: message_start\n"
    b'data: {"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":3}}}\n\n'
    b"event: ping\n"
    b'data: {"type": "ping"}\n\n'
    b"event: content_block_delta\n"
    b'data: {"type":"content_block_delta","index":0,'
    b'"delta":{"type":"text_delta","text":"Hi"}}\n\n'
    b"event: message_stop\n"
    b'data: {"type":"message_stop"}\n\n'
)

# Ollama /api/chat streams one JSON object per line (NDJSON).
OLLAMA_NDJSON = (
    b'{"model":"llama3.2","message":{"role":"assistant","content":"The"},"done":false}\n'
    b'{"model":"llama3.2","message":{"role":"assistant","content":" sky"},"done":false}\n'
    b'{"model":"llama3.2","message":{"role":"assistant","content":""},"done":true,'
    b'"done_reason":"stop","prompt_eval_count":26,"eval_count":2}\n'
)


def sse(*chunks: bytes) -> list[Frame]:
    """Frames of an SSE body given as one or more chunks."""
    return decode_all(SSEDecoder(), chunks)


def one_byte_chunks(body: bytes) -> list[bytes]:
    return [body[i : i + 1] for i in range(len(body))]


def split_at(body: bytes, cuts: Iterable[int]) -> list[bytes]:
    points = sorted({min(max(cut, 0), len(body)) for cut in cuts})
    bounds = [0, *points, len(body)]
    return [body[a:b] for a, b in itertools.pairwise(bounds)]


# --- SSE: line ends ------------------------------------------------------------------------


@pytest.mark.parametrize("end", [b"\n", b"\r\n", b"\r"], ids=["LF", "CRLF", "CR"])
def test_each_line_end_kind_ends_lines_and_events(end: bytes) -> None:
    body = (
        b"event: a" + end + b"data: one" + end + b"data: two" + end + end + b"data: 3" + end + end
    )
    expected = [Frame("one\ntwo", event="a"), Frame("3")]
    assert sse(body) == expected
    assert sse(*one_byte_chunks(body)) == expected


def test_mixed_line_ends_in_one_stream() -> None:
    assert sse(b"data: a\r\ndata: b\rdata: c\n\r\n") == [Frame("a\nb\nc")]


def test_cr_then_lf_across_a_chunk_boundary_is_one_line_end() -> None:
    assert sse(b"data: a\r", b"\ndata: b\r\n\r\n") == [Frame("a\nb")]


def test_cr_then_lf_across_an_empty_chunk_is_still_one_line_end() -> None:
    assert sse(b"data: a\r", b"", b"\ndata: b\n\n") == [Frame("a\nb")]


def test_cr_then_lf_split_between_lines_of_one_chunk_is_two_line_ends() -> None:
    assert sse(b"data: a\rdata: b", b"\n\n") == [Frame("a\nb")]


def test_two_crs_are_a_line_end_and_a_blank_line() -> None:
    assert sse(b"data: a\r", b"\rdata: b\r\r") == [Frame("a"), Frame("b")]


# --- SSE: fields -----------------------------------------------------------------------------


def test_multi_line_data_is_joined_with_lf() -> None:
    assert sse(b'data: {\ndata:   "a": 1\ndata: }\n\n') == [Frame('{\n  "a": 1\n}')]


def test_only_one_space_after_the_colon_is_dropped() -> None:
    assert sse(b"data:x\n\ndata:  x\n\ndata:\n\n") == [Frame("x"), Frame(" x"), Frame("")]


def test_event_id_and_retry_fields() -> None:
    frames = sse(b"event: delta\nid: 42\nretry: 3000\ndata: x\n\n")
    assert frames == [Frame("x", event="delta", id="42", retry=3000)]


def test_event_type_and_retry_are_per_event_but_the_last_event_id_persists() -> None:
    decoder = SSEDecoder()
    frames = decode_all(decoder, [b"event: a\nid: 7\nretry: 10\ndata: 1\n\ndata: 2\n\n"])
    assert frames == [Frame("1", event="a", id="7", retry=10), Frame("2", id="7")]
    assert decoder.last_event_id == "7"
    assert decoder.reconnection_time == 10


def test_empty_id_resets_the_last_event_id_and_an_id_with_nul_is_ignored() -> None:
    frames = sse(b"id: 1\ndata: a\n\nid\ndata: b\n\nid: 2\x003\ndata: c\n\n")
    assert [frame.id for frame in frames] == ["1", None, None]


def test_retry_must_be_ascii_digits() -> None:
    decoder = SSEDecoder()
    frames = decode_all(decoder, [b"retry: 1.5\ndata: a\n\nretry: 12a\ndata: b\n\n"])
    assert [frame.retry for frame in frames] == [None, None]
    assert decoder.reconnection_time is None


def test_a_line_without_colon_is_a_field_with_an_empty_value() -> None:
    assert sse(b"data\n\nevent\ndata\ndata\n\n") == [Frame(""), Frame("\n")]


def test_unknown_fields_are_ignored() -> None:
    assert sse(b"foo: bar\nDATA: no\ndata: yes\n\n") == [Frame("yes")]


def test_comment_lines_are_ignored() -> None:
    assert sse(b": ping\n\n:\ndata: a\n: inside\ndata: b\n\n") == [Frame("a\nb")]
    assert sse(b": keep-alive\n\n" * 5) == []


def test_an_event_without_data_is_not_dispatched_and_resets_its_type() -> None:
    assert sse(b"event: ping\n\nid: 5\nretry: 1\n\ndata: x\n\n") == [Frame("x", id="5")]


def test_blank_lines_without_data_dispatch_nothing() -> None:
    assert sse(b"\n\n\r\n\r\rdata: x\n\n\n\n") == [Frame("x")]


def test_hand_written_openai_stream() -> None:
    frames = sse(OPENAI_SSE)
    assert len(frames) == 4
    assert orjson.loads(frames[1].data)["choices"][0]["delta"]["content"] == "Héllo 😀"
    assert [frame.is_done for frame in frames] == [False, False, False, True]


def test_hand_written_anthropic_stream() -> None:
    frames = sse(ANTHROPIC_SSE)
    assert [frame.event for frame in frames] == [
        "message_start",
        "ping",
        "content_block_delta",
        "message_stop",
    ]
    assert [orjson.loads(frame.data)["type"] for frame in frames] == [
        frame.event for frame in frames
    ]


# --- SSE: BOM, UTF-8 -----------------------------------------------------------------------


def test_a_leading_bom_is_dropped() -> None:
    assert sse(b"\xef\xbb\xbfdata: x\n\n") == [Frame("x")]


def test_a_leading_bom_split_over_chunks_is_dropped() -> None:
    assert sse(b"\xef", b"\xbb", b"\xbf", b"data: x\n\n") == [Frame("x")]


def test_a_bom_after_the_start_is_content() -> None:
    # The second line's field name is "\ufeffdata", an unknown field.
    assert sse(b"data: a\n\n\xef\xbb\xbfdata: b\n\n") == [Frame("a")]
    assert sse(b"data: \xef\xbb\xbfa\n\n") == [Frame("\ufeffa")]


def test_only_one_leading_bom_is_dropped() -> None:
    assert sse(b"\xef\xbb\xbf\xef\xbb\xbfdata: x\n\ndata: y\n\n") == [Frame("y")]


def test_a_lone_partial_bom_is_content() -> None:
    assert sse(b"\xef\xbbdata: x\n\n") == []
    assert decode_all(JSONLinesDecoder(), [b"\xef\xbb"]) == [Frame("\ufffd")]


def test_input_split_inside_multi_byte_characters() -> None:
    body = "data: héllo wörld ✓ 😀\n\n".encode()
    assert sse(*one_byte_chunks(body)) == [Frame("héllo wörld ✓ 😀")]


def test_invalid_utf8_is_replaced_not_raised() -> None:
    assert sse(b"data: a\xff\xe2\x82b\n\ndata: \xf0\x9f\n\n") == [
        Frame("a\ufffd\ufffdb"),
        Frame("\ufffd"),
    ]


# --- SSE: end of stream, [DONE], counters --------------------------------------------------


def test_close_flushes_a_final_event_without_its_blank_line() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\n\ndata: b\n") == [Frame("a")]
    assert decoder.close() == [Frame("b")]


def test_close_flushes_a_final_line_without_its_line_end() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"event: e\ndata: tail") == []
    assert decoder.close() == [Frame("tail", event="e")]
    assert decoder.close() == []


def test_close_drops_a_final_event_without_data() -> None:
    assert sse(b"data: a\n\nevent: e\nid: 1") == [Frame("a")]


def test_done_sentinel() -> None:
    assert Frame("[DONE]").is_done
    assert Frame(" [DONE]\n").is_done
    assert not Frame('{"text": "[DONE]"}').is_done
    assert sse(b"data: [DONE]\n\n")[0].is_done


def test_frames_decoded_counts_dispatched_frames() -> None:
    decoder = SSEDecoder()
    decoder.feed(b": c\n\ndata: 1\n\nevent: x\n\ndata: 2\n\ndata: 3")
    assert decoder.frames_decoded == 2
    decoder.close()
    assert decoder.frames_decoded == 3


# --- size limit ------------------------------------------------------------------------------


def test_default_limit_is_16_mib() -> None:
    assert DEFAULT_MAX_FRAME_SIZE == 16 * 1024 * 1024
    assert SSEDecoder().max_frame_size == DEFAULT_MAX_FRAME_SIZE


def test_a_frame_at_the_limit_is_accepted() -> None:
    assert decode_all(SSEDecoder(max_frame_size=16), [b"data: " + b"x" * 10 + b"\n\n"]) == [
        Frame("x" * 10)
    ]
    assert decode_all(SSEDecoder(max_frame_size=7), [b"data: a\ndata: b\n\n"]) == [Frame("a\nb")]


def test_a_line_over_the_limit_in_one_chunk_raises_naming_the_limit() -> None:
    with pytest.raises(ChatProtocolError, match=r"exceeds the 1 KiB limit \(max_frame_size=1024"):
        SSEDecoder(max_frame_size=1024).feed(b"data: " + b"x" * 2000 + b"\n\n")


def test_the_default_limit_is_named_in_mib() -> None:
    decoder = SSEDecoder()
    with pytest.raises(ChatProtocolError, match="16 MiB limit") as caught:
        decoder.feed(b"data: " + b"x" * DEFAULT_MAX_FRAME_SIZE)
    assert str(DEFAULT_MAX_FRAME_SIZE) in str(caught.value)


def test_a_pending_line_growing_over_the_limit_raises_before_its_end() -> None:
    decoder = SSEDecoder(max_frame_size=100)
    decoder.feed(b"data: ")
    with pytest.raises(ChatProtocolError, match="max_frame_size=100"):
        for _ in range(100):
            decoder.feed(b"x" * 10)


def test_a_comment_over_the_limit_raises_too() -> None:
    with pytest.raises(ChatProtocolError, match="SSE line exceeds"):
        SSEDecoder(max_frame_size=10).feed(b":" + b" " * 20 + b"\n")


def test_an_event_whose_data_lines_exceed_the_limit_raises() -> None:
    decoder = SSEDecoder(max_frame_size=100)
    with pytest.raises(ChatProtocolError, match=r"SSE frame exceeds .*max_frame_size=100"):
        decoder.feed(b"data: " + b"x" * 60 + b"\n" + b"data: " + b"y" * 60 + b"\n")


def test_many_small_events_never_hit_the_limit() -> None:
    frames = decode_all(SSEDecoder(max_frame_size=20), [b"data: 0123456789\n\n" * 1000])
    assert len(frames) == 1000


def test_a_jsonl_line_over_the_limit_raises() -> None:
    with pytest.raises(ChatProtocolError, match="line exceeds the 64-byte limit"):
        decode_all(JSONLinesDecoder(max_frame_size=64), [b'{"a": "', b"x" * 100, b'"}\n'])


def test_a_non_positive_limit_is_refused() -> None:
    with pytest.raises(ValueError, match="max_frame_size"):
        SSEDecoder(max_frame_size=0)


# --- JSON lines -------------------------------------------------------------------------------


def test_json_lines_one_frame_per_non_blank_line() -> None:
    decoder = JSONLinesDecoder()
    frames = decode_all(decoder, [b'{"a":1}\n\n  \n{"b":2}\r\n\r\n[3]\r{"c":4}'])
    assert frames == [Frame('{"a":1}'), Frame('{"b":2}'), Frame("[3]"), Frame('{"c":4}')]
    assert decoder.frames_decoded == 4


def test_json_lines_split_anywhere() -> None:
    body = '{"t":"héllo 😀"}\r\n{"t":2}\r\n'.encode()
    assert decode_all(JSONLinesDecoder(), one_byte_chunks(body)) == [
        Frame('{"t":"héllo 😀"}'),
        Frame('{"t":2}'),
    ]


def test_json_lines_cr_lf_across_chunks_and_bom() -> None:
    frames = decode_all(JSONLinesDecoder(), [b"\xef\xbb", b'\xbf{"a":1}\r', b'\n{"b":2}'])
    assert frames == [Frame('{"a":1}'), Frame('{"b":2}')]


def test_ollama_ndjson() -> None:
    frames = decode_all(JSONLinesDecoder(), [OLLAMA_NDJSON])
    assert [orjson.loads(frame.data)["done"] for frame in frames] == [False, False, True]


@needs_corpus
def test_every_corpus_recording_decodes_to_its_non_blank_lines() -> None:
    paths = sorted(CORPUS.glob("*/*.jsonl"))
    assert paths
    for path in paths:
        body = path.read_bytes()
        lines = [line for line in body.splitlines() if line.strip()]
        frames = decode_all(JSONLinesDecoder(), [body])
        assert len(frames) == len(lines), path
        assert [frame.data.encode() for frame in frames] == lines, path
        decoder = StreamDecoder()
        assert len(decode_all(decoder, split_at(body, range(0, len(body), 1000)))) == len(lines)
        assert decoder.format == "jsonl", path


# --- format sniffing ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        b"data: x\n\n",
        b"data:x\n\n",
        b"data\n\n",
        b"event: e\ndata: x\n\n",
        b"id: 1\ndata: x\n\n",
        b"retry: 5\ndata: x\n\n",
        b": ok\n\ndata: x\n\n",
        b"\xef\xbb\xbf\r\n \n\r\n\t\ndata: x\n\n",
        b"\n\n\ndata: x",
    ],
)
def test_sniffs_sse(body: bytes) -> None:
    for chunks in ([body], one_byte_chunks(body)):
        decoder = StreamDecoder()
        frames = decode_all(decoder, chunks)
        assert decoder.format == "sse"
        assert [frame.data for frame in frames] == ([""] if body.startswith(b"data\n") else ["x"])


@pytest.mark.parametrize("body", [b'{"a":1}\n', b"[1]\n", b'\xef\xbb\xbf\n  \r\n{"a":1}'])
def test_sniffs_json_lines(body: bytes) -> None:
    for chunks in ([body], one_byte_chunks(body)):
        decoder = StreamDecoder()
        frames = decode_all(decoder, chunks)
        assert decoder.format == "jsonl"
        assert len(frames) == 1
        assert decoder.frames_decoded == 1


def test_sniffing_waits_for_enough_bytes() -> None:
    decoder = StreamDecoder()
    assert decoder.feed(b"\xef\xbb\xbf\n da") == []
    assert decoder.format is None
    assert decoder.frames_decoded == 0
    assert decoder.feed(b"ta: x\n\n") == []
    assert decoder.format == "sse"
    assert decoder.close() == []


def test_html_is_not_an_event_stream() -> None:
    page = b"<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head></html>\n"
    with pytest.raises(
        ChatProtocolError, match=r"not an event stream.*starts with '<!DOCTYPE html>"
    ):
        decode_all(StreamDecoder(), [page])
    with pytest.raises(ChatProtocolError, match="<!DOCTYPE html>"):
        decode_all(StreamDecoder(), one_byte_chunks(page))


def test_the_preview_of_an_unknown_body_is_cut_at_80_characters() -> None:
    with pytest.raises(ChatProtocolError) as caught:
        StreamDecoder().feed(b"Internal Server Error " * 10)
    message = str(caught.value)
    assert "'Internal Server Error" in message
    assert message.endswith("...")
    assert len(message) < 160


@pytest.mark.parametrize("body", [b"da", b"hello", b"\xef\xbb", b"ida: x\n", b"datum: x\n"])
def test_other_bodies_are_refused_at_the_latest_on_close(body: bytes) -> None:
    with pytest.raises(ChatProtocolError, match="not an event stream"):
        decode_all(StreamDecoder(), [body])


def test_a_blank_body_yields_no_frames() -> None:
    decoder = StreamDecoder()
    assert decode_all(decoder, [b"\xef\xbb\xbf", b" \r\n\n\t"]) == []
    assert decoder.format is None


def test_leading_blank_space_is_bounded_by_the_limit() -> None:
    decoder = StreamDecoder(max_frame_size=100)
    with pytest.raises(ChatProtocolError, match="max_frame_size=100"):
        for _ in range(20):
            decoder.feed(b" " * 10)


def test_blank_lines_before_the_first_frame_are_not_buffered() -> None:
    decoder = StreamDecoder(max_frame_size=16)
    for _ in range(1000):
        assert decoder.feed(b" \r") == []
    assert decode_all(decoder, [b"\ndata: x\n\n"]) == [Frame("x")]


def test_a_bom_after_a_blank_line_is_not_the_streams_bom() -> None:
    body = b"\r\xef\xbb\xbfdata: x\n\n"
    for chunks in ([body], one_byte_chunks(body)):
        with pytest.raises(ChatProtocolError, match=r"starts with '\\ufeffdata: x"):
            decode_all(StreamDecoder(), chunks)


def test_a_given_format_is_not_sniffed() -> None:
    decoder = StreamDecoder(format="jsonl")
    assert decoder.format == "jsonl"
    assert decode_all(decoder, [b"data: x\n"]) == [Frame("data: x")]
    assert decode_all(StreamDecoder(format="sse"), [b'{"a":1}\n\ndata: x\n\n']) == [Frame("x")]


def test_an_unknown_format_is_refused() -> None:
    with pytest.raises(ValueError, match="format"):
        StreamDecoder(format="xml")  # type: ignore[arg-type]


# --- iter_frames ----------------------------------------------------------------------------


def test_iter_frames_over_bytes_text_and_chunks() -> None:
    expected = [Frame("a"), Frame("é")]
    body = "data: a\n\ndata: é\n\n"
    assert list(iter_frames(body.encode())) == expected
    assert list(iter_frames(body)) == expected
    assert list(iter_frames(one_byte_chunks(body.encode()))) == expected
    assert list(iter_frames(iter(["data: a\n", "\ndata: é\n\n"]))) == expected
    assert list(iter_frames(bytearray(b'{"a":1}\n'))) == [Frame('{"a":1}')]


def test_iter_frames_passes_its_options() -> None:
    assert list(iter_frames(b"data: x\n", format="jsonl")) == [Frame("data: x")]
    with pytest.raises(ChatProtocolError, match="max_frame_size=8"):
        list(iter_frames(b"data: 0123456789\n\n", max_frame_size=8))


def test_iter_frames_text_with_lone_surrogates_raises_nothing_but_replaces() -> None:
    assert list(iter_frames("data: a\ud800b\n\n")) == [Frame("a\ufffd\ufffd\ufffdb")]


def test_iter_frames_checks_and_decodes_nothing_before_the_first_frame_is_asked_for() -> None:
    refused = iter_frames(b"data: x\n\n", format="xml")  # type: ignore[arg-type]
    html = iter_frames(b"<html>")
    with pytest.raises(ValueError, match="format"):
        next(refused)
    with pytest.raises(ChatProtocolError, match="starts with '<html>'"):
        next(html)


# --- properties -----------------------------------------------------------------------------

_field_text = st.text(
    st.characters(exclude_categories=["Cs"], exclude_characters="\r\n\x00"), max_size=12
)
_line_end = st.sampled_from(["\n", "\r\n", "\r"])


@st.composite
def sse_streams(draw: st.DrawFn) -> tuple[bytes, list[Frame]]:
    """A valid event stream and the frames it carries."""
    lines: list[str] = []
    frames: list[Frame] = []
    last_id: str | None = None
    for _ in range(draw(st.integers(0, 6))):
        comment = draw(st.none() | _field_text)
        event = draw(st.none() | _field_text.filter(bool))
        event_id = draw(st.none() | _field_text.filter(bool))
        retry = draw(st.none() | st.integers(0, 10**6))
        data = draw(st.lists(_field_text, min_size=1, max_size=3))
        if comment is not None:
            lines.append(":" + comment)
        if event is not None:
            lines.append("event: " + event)
        if event_id is not None:
            lines.append("id: " + event_id)
            last_id = event_id
        if retry is not None:
            lines.append(f"retry: {retry}")
        lines.extend("data: " + value for value in data)
        lines.append("")
        frames.append(Frame("\n".join(data), event, last_id, retry))
    if draw(st.booleans()) and lines:
        lines.pop()  # the last blank line: close() dispatches the event anyway
    text = ""
    end = ""
    for line in lines:
        # A CR then an LF-ended blank line would read as one CRLF: end that line with CR LF.
        prev, end = end, draw(_line_end)
        if prev == "\r" and not line and end == "\n":
            end = "\r\n"
        text += line + end
    bom = "\ufeff" if draw(st.booleans()) else ""
    return (bom + text).encode(), frames


@st.composite
def jsonl_streams(draw: st.DrawFn) -> tuple[bytes, list[Frame]]:
    """A JSON-lines body with blank lines and mixed line ends, and its frames."""
    payloads = draw(st.lists(st.dictionaries(_field_text, _field_text, max_size=3), max_size=6))
    frames = [Frame(orjson.dumps(payload).decode()) for payload in payloads]
    body = ""
    for frame in frames:
        body += draw(st.sampled_from(["", "\n", " \r\n"])) + frame.data + draw(_line_end)
    return body.encode(), frames


STREAMS = {"sse": (sse_streams(), SSEDecoder), "jsonl": (jsonl_streams(), JSONLinesDecoder)}
"""Each format's streams (with their frames) and its decoder."""


@pytest.mark.parametrize("format", STREAMS)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), cuts=st.lists(st.integers(0, 400), max_size=12))
def test_any_split_of_a_stream_decodes_to_its_frames(
    format: Literal["sse", "jsonl"], data: st.DataObject, cuts: list[int]
) -> None:
    streams, decoder = STREAMS[format]
    body, frames = data.draw(streams)
    assert decode_all(decoder(), [body]) == frames
    assert decode_all(decoder(), split_at(body, cuts)) == frames
    assert list(iter_frames(split_at(body, cuts), format=format)) == frames
    assert list(iter_frames(split_at(body, cuts))) == frames  # the format told from the bytes


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sse_streams())
def test_byte_by_byte_sse_decodes_to_its_frames(stream: tuple[bytes, list[Frame]]) -> None:
    body, frames = stream
    assert sse(*one_byte_chunks(body)) == frames


def outcome(
    decoder: SSEDecoder | JSONLinesDecoder | StreamDecoder, chunks: Iterable[bytes]
) -> list[Frame] | ChatProtocolError:
    """The frames of the chunks, or the ChatProtocolError they raise (any other error escapes)."""
    try:
        return decode_all(decoder, chunks)
    except ChatProtocolError as error:
        return error


def assert_split_invariant(body: bytes, cuts: list[int]) -> None:
    """Each decoder gives the same frames, or a ChatProtocolError, however body is split."""
    for make in (SSEDecoder, JSONLinesDecoder, StreamDecoder):
        whole = outcome(make(max_frame_size=16), [body])
        for chunks in (split_at(body, cuts), one_byte_chunks(body)):
            split = outcome(make(max_frame_size=16), chunks)
            assert isinstance(whole, list) == isinstance(split, list)
            if isinstance(whole, list):
                assert split == whole


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300), st.lists(st.integers(0, 300), max_size=8))
def test_arbitrary_bytes_raise_nothing_but_chat_protocol_error(
    body: bytes, cuts: list[int]
) -> None:
    assert_split_invariant(body, cuts)


_NOISE = [
    b"data",
    b"event",
    b"id",
    b"retry",
    b":",
    b" ",
    b"\r",
    b"\n",
    b"\xef\xbb\xbf",
    b"x",
    b"\xc3",
]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.sampled_from([*_NOISE, b"{", b"<"]), max_size=40),
    st.lists(st.integers(0, 100), max_size=8),
)
def test_line_noise_decodes_the_same_however_it_is_split(
    parts: list[bytes], cuts: list[int]
) -> None:
    assert_split_invariant(b"".join(parts), cuts)


_simple_event = st.builds(
    lambda event, data: (
        (b"" if event is None else b"event: " + event.encode() + b"\n")
        + b"data: "
        + data.encode()
        + b"\n\n"
    ),
    st.none() | _field_text,
    _field_text,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.one_of(
        sse_streams().map(lambda stream: stream[0]),
        jsonl_streams().map(lambda stream: stream[0]),
        st.lists(_simple_event, max_size=6).map(b"".join),
        st.lists(st.sampled_from([*_NOISE, b"{", b"<", b"data: ", b"event: "]), max_size=40).map(
            b"".join
        ),
    ),
    st.sampled_from(["auto", "sse", "jsonl"]),
    st.lists(st.integers(0, 400), max_size=8),
)
def test_a_whole_body_decodes_as_its_pieces_fed_to_a_stream_decoder(
    body: bytes, format: StreamFormat, cuts: list[int]
) -> None:
    try:
        frames: list[Frame] | ChatProtocolError = list(iter_frames(body, format=format))
    except ChatProtocolError as error:
        frames = error
    fed = outcome(StreamDecoder(format=format), split_at(body, cuts))
    if isinstance(fed, list):
        assert frames == fed
    else:  # the error shows the body's start, as much of it as the first piece holds
        assert isinstance(frames, ChatProtocolError)
        assert str(frames) == str(outcome(StreamDecoder(format=format), [body]))


def test_frames_before_an_oversized_line_in_the_same_chunk_are_kept() -> None:
    decoder = SSEDecoder(max_frame_size=64)
    body = b'data: {"a": 1}\n\ndata: ' + b"x" * 100 + b"\n\n"
    frames = decoder.feed(body)
    assert [f.data for f in frames] == ['{"a": 1}']
    with pytest.raises(ChatProtocolError, match="64"):
        decoder.close()


def test_frames_before_oversized_joined_data_in_the_same_chunk_are_kept() -> None:
    decoder = SSEDecoder(max_frame_size=64)
    body = b"data: ok\n\n" + b"data: " + b"y" * 40 + b"\ndata: " + b"z" * 40 + b"\n\n"
    assert [f.data for f in decoder.feed(body)] == ["ok"]
    with pytest.raises(ChatProtocolError):
        decoder.feed(b"data: more\n\n")


def test_jsonl_lines_before_an_oversized_line_are_kept() -> None:
    decoder = JSONLinesDecoder(max_frame_size=32)
    frames = decoder.feed(b'{"a": 1}\n' + b"[" * 50 + b"\n")
    assert [f.data for f in frames] == ['{"a": 1}']
    with pytest.raises(ChatProtocolError):
        decoder.close()


@st.composite
def long_mostly_simple_streams(draw: st.DrawFn) -> tuple[bytes, list[Frame]]:
    """Streams longer than the decoder's windows: mostly one-line events, some of other shapes."""
    payload = st.text(
        st.characters(exclude_categories=["Cs"], exclude_characters="\r\n"), max_size=3000
    )
    body = b""
    frames: list[Frame] = []
    last_id: str | None = None
    for _ in range(draw(st.integers(1, 30))):
        data = draw(payload)
        shape = draw(st.sampled_from(["data", "data", "typed", "typed", "untyped", "two", "id"]))
        if shape == "data":
            body += b"data: " + data.encode() + b"\n\n"
            frames.append(Frame(data, None, last_id))
        elif shape == "typed":
            body += b"event: ev\ndata: " + data.encode() + b"\n\n"
            frames.append(Frame(data, "ev", last_id))
        elif shape == "untyped":
            body += b"event: \ndata: " + data.encode() + b"\n\n"
            frames.append(Frame(data, None, last_id))
        elif shape == "two":
            body += b"data: " + data.encode() + b"\ndata: second\n\n"
            frames.append(Frame(data + "\nsecond", None, last_id))
        else:
            last_id = "n" + str(len(frames))
            body += b"id: " + last_id.encode() + b"\ndata: " + data.encode() + b"\n\n"
            frames.append(Frame(data, None, last_id))
    return body, frames


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(long_mostly_simple_streams(), st.lists(st.integers(0, 90_000), max_size=6))
def test_long_streams_of_mixed_shapes_decode_the_same_whole_or_split(
    stream: tuple[bytes, list[Frame]], cuts: list[int]
) -> None:
    body, frames = stream
    assert sse(body) == frames
    assert sse(*split_at(body, cuts)) == frames
    assert list(iter_frames(body)) == frames


def test_a_long_run_of_simple_events_then_an_open_event() -> None:
    body = b"".join(b"event: e\ndata: %d\n\n" % i for i in range(5000)) + b"data: open\n"
    frames = sse(body)
    assert [f.data for f in frames] == [str(i) for i in range(5000)] + ["open"]
    assert {f.event for f in frames[:-1]} == {"e"}


def test_a_whole_body_over_many_decoding_pieces_gives_every_frame() -> None:
    # Odd-length lines of two-byte characters put piece boundaries inside characters,
    # inside "data: " and between CR and LF.
    body = b"".join(
        b"event: e\r\ndata: " + ("\u00e9" * (i % 97) + str(i)).encode() + b"\r\n\r\n"
        for i in range(20_000)
    )
    assert len(body) > 20 * 64 * 1024
    frames = list(iter_frames(body))
    assert [f.data for f in frames] == ["\u00e9" * (i % 97) + str(i) for i in range(20_000)]
    assert {f.event for f in frames} == {"e"}
    assert list(iter_frames(body.decode())) == frames


# --- a whole body ---------------------------------------------------------------------------


def frame_outcome(
    body: bytes, format: StreamFormat = "auto", max_frame_size: int = DEFAULT_MAX_FRAME_SIZE
) -> tuple[list[str], str | None]:
    """The data of each frame iter_frames gives, and the ChatProtocolError that ended them."""
    data: list[str] = []
    try:
        for frame in iter_frames(body, format=format, max_frame_size=max_frame_size):
            data.append(frame.data)
    except ChatProtocolError as error:
        return data, str(error)
    return data, None


def test_payloads_before_a_line_over_the_limit_far_into_the_body_are_kept() -> None:
    body = b'{"n": 1}\n' * 20_000 + b"[" * 200 + b"\n" + b'{"n": 2}\n'
    data, error = frame_outcome(body, max_frame_size=100)
    assert data == ['{"n": 1}'] * 20_000
    assert error is not None and "line exceeds the 100-byte limit" in error
    sse_body = b"data: 1\n\n" * 20_000 + b"data: " + b"x" * 200 + b"\n\n"
    data, error = frame_outcome(sse_body, max_frame_size=100)
    assert data == ["1"] * 20_000
    assert error is not None and "exceeds the 100-byte limit" in error


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(_simple_event | sse_streams().map(lambda stream: stream[0]), max_size=8),
    st.lists(st.integers(0, 400), max_size=4),
)
def test_events_each_in_a_chunk_of_their_own_decode_as_the_whole_body(
    events: list[bytes], cuts: list[int]
) -> None:
    # A chunk that is one whole data event is decoded at once (the usual chunk of a stream
    # read off a socket): with an event left open, a line held or a CR before it, or not.
    body = b"".join(events)
    pieces = [piece for event in events for piece in split_at(event, cuts)]
    assert sse(*pieces) == sse(*events) == sse(body)
    data = [frame.data for frame in sse(body)]
    assert decode_all(SSEDecoder(data_only=True), pieces) == data
