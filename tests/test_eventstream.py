"""The AWS event-stream decoder, against botocore's own on the same bytes at every split."""

from __future__ import annotations

import itertools
import struct
import uuid
import zlib
from typing import Any

import orjson
import pytest
from botocore.eventstream import EventStreamBuffer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solon_events.event_model.errors import ChatProtocolError
from solon_events.wire.eventstream import (
    EventStreamDecoder,
    EventStreamFrameDecoder,
    encode_message,
    event_message,
    exception_message,
    is_event_stream,
    iter_event_stream_frames,
    message_frame,
)

HEADER_VALUES = st.one_of(
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.text(max_size=40),
    st.binary(max_size=40),
    st.builds(uuid.UUID, st.binary(min_size=16, max_size=16).map(lambda b: b.hex())),
)
HEADERS = st.dictionaries(st.text(min_size=1, max_size=20), HEADER_VALUES, max_size=5)
MESSAGES = st.lists(st.tuples(HEADERS, st.binary(max_size=200)), max_size=6)


def botocore_messages(body: bytes, splits: list[int]) -> list[tuple[dict[str, Any], bytes]]:
    """botocore's decoding of ``body`` fed in the pieces ``splits`` cut it into."""
    buffer = EventStreamBuffer()
    out = []
    for piece in pieces(body, splits):
        buffer.add_data(piece)
        out += [(message.headers, message.payload) for message in buffer]
    return out


def ours(body: bytes, splits: list[int]) -> list[tuple[dict[str, Any], bytes]]:
    decoder = EventStreamDecoder()
    out = []
    for piece in pieces(body, splits):
        out += [(message.headers, message.payload) for message in decoder.feed(piece)]
    out += [(message.headers, message.payload) for message in decoder.close()]
    return out


def pieces(body: bytes, splits: list[int]) -> list[bytes]:
    cuts = sorted({0, len(body), *(cut % (len(body) + 1) for cut in splits)})
    return [body[a:b] for a, b in itertools.pairwise(cuts)]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(MESSAGES, st.lists(st.integers(min_value=0), max_size=12))
def test_the_decoder_agrees_with_botocore_at_any_split(
    messages: list[tuple[dict[str, Any], bytes]], splits: list[int]
) -> None:
    body = b"".join(encode_message(headers, payload) for headers, payload in messages)
    assert ours(body, splits) == botocore_messages(body, splits)
    assert len(ours(body, splits)) == len(messages)


@settings(max_examples=30, deadline=None)
@given(MESSAGES.filter(bool))
def test_the_decoder_agrees_with_botocore_byte_by_byte_and_at_every_single_cut(
    messages: list[tuple[dict[str, Any], bytes]],
) -> None:
    body = b"".join(encode_message(headers, payload) for headers, payload in messages)
    expected = botocore_messages(body, [])
    assert ours(body, list(range(len(body)))) == expected
    for cut in range(len(body) + 1):
        assert ours(body, [cut]) == expected


def test_every_header_type_decodes_as_botocore_does() -> None:
    # Byte, short, integer and timestamp headers, which encode_message does not write.
    def header(name: bytes, kind: int, value: bytes) -> bytes:
        return bytes([len(name)]) + name + bytes([kind]) + value

    headers = b"".join(
        [
            header(b"byte", 2, struct.pack("!b", -7)),
            header(b"short", 3, struct.pack("!h", -300)),
            header(b"integer", 4, struct.pack("!i", 70000)),
            header(b"timestamp", 8, struct.pack("!q", 1_700_000_000_000)),
            header(b"true", 0, b""),
            header(b"false", 1, b""),
            header(b"bytes", 6, struct.pack("!H", 3) + b"\x00\x01\x02"),
            header(b"string", 7, struct.pack("!H", 5) + "héllo".encode()[:5]),
            header(b"uuid", 9, bytes(range(16))),
        ]
    )
    body = raw_message(headers, b"payload")
    assert ours(body, []) == botocore_messages(body, [])
    (message,) = EventStreamDecoder().feed(body)
    assert message.headers["short"] == -300 and message.headers["timestamp"] == 1_700_000_000_000


def raw_message(headers: bytes, payload: bytes) -> bytes:
    lengths = struct.pack("!II", 16 + len(headers) + len(payload), len(headers))
    body = lengths + struct.pack("!I", zlib.crc32(lengths)) + headers + payload
    return body + struct.pack("!I", zlib.crc32(body))


def three_messages() -> bytes:
    return b"".join(
        event_message("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": t}})
        for t in ("a", "b", "c")
    )


def test_a_stream_cut_inside_a_message_names_it() -> None:
    body = three_messages()
    for cut in (len(body) - 1, len(body) - 20, len(body) // 3 * 2 + 5):
        decoder = EventStreamDecoder()
        decoder.feed(body[:cut])
        with pytest.raises(ChatProtocolError, match=r"event-stream message 3: the stream ended"):
            decoder.close()
    decoder = EventStreamDecoder()
    assert len(decoder.feed(body[: len(body) // 3 * 2 + 3])) == 2
    with pytest.raises(ChatProtocolError, match=r"message 3: .*3 bytes of its 12-byte prelude"):
        decoder.close()


@pytest.mark.parametrize("where", ["prelude", "headers", "payload", "message crc"])
def test_a_corrupted_message_is_a_crc_error_naming_it(where: str) -> None:
    body = bytearray(three_messages())
    second = len(
        event_message("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "a"}})
    )
    offset = {"prelude": 2, "headers": 14, "payload": -10, "message crc": -1}[where]
    at = second + offset if offset >= 0 else 2 * second + offset
    body[at] ^= 0x40
    problem = "prelude CRC32 mismatch" if where == "prelude" else "message CRC32 mismatch"
    with pytest.raises(ChatProtocolError, match=rf"event-stream message 2: {problem}"):
        EventStreamDecoder().feed(bytes(body))


def test_an_oversized_message_is_refused_from_its_prelude() -> None:
    big = event_message("contentBlockDelta", {"delta": {"text": "x" * 5000}})
    decoder = EventStreamDecoder(max_message_size=4096)
    decoder.feed(three_messages())
    with pytest.raises(ChatProtocolError, match=r"message 4: \d+ bytes exceeds the limit of 4096"):
        decoder.feed(big[:12])  # refused before its bytes are gathered


def test_inconsistent_lengths_are_refused() -> None:
    lengths = struct.pack("!II", 20, 10)  # 10 bytes of headers cannot fit in 20
    prelude = lengths + struct.pack("!I", zlib.crc32(lengths))
    with pytest.raises(ChatProtocolError, match="message 1: inconsistent lengths"):
        EventStreamDecoder().feed(prelude + bytes(8))


def test_malformed_headers_are_a_protocol_error() -> None:
    body = raw_message(b"\x03abc\x0f", b"{}")  # value type 15 does not exist
    with pytest.raises(ChatProtocolError, match=r"message 1: malformed headers.*type 15"):
        EventStreamDecoder().feed(body)


def test_a_body_that_is_not_an_event_stream_is_shown() -> None:
    with pytest.raises(ChatProtocolError, match=r"not an AWS event stream.*'data: \{\"choices"):
        EventStreamDecoder().feed(b'data: {"choices": []}\n\n')
    assert not is_event_stream(b'data: {"choices": []}\n\n')
    assert not is_event_stream(b"\x00" * 11)
    assert is_event_stream(three_messages())


def test_messages_become_botocore_shaped_frames() -> None:
    frames = list(iter_event_stream_frames(three_messages()))
    assert next(orjson.loads(f) for f in frames) == {
        "contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": "a"}}
    }
    (frame,) = EventStreamFrameDecoder().feed(exception_message("throttlingException", "slow"))
    assert orjson.loads(frame) == {"throttlingException": {"message": "slow"}}
    error = encode_message(
        {":message-type": "error", ":error-code": "InternalFailure", ":error-message": "boom"}
    )
    (message,) = EventStreamDecoder().feed(error)
    assert orjson.loads(message_frame(message)) == {
        "error": {"code": "InternalFailure", "message": "boom"}
    }
    (empty,) = EventStreamDecoder().feed(encode_message({":event-type": "messageStart"}))
    assert orjson.loads(message_frame(empty)) == {"messageStart": {}}


def test_frames_of_a_long_body_come_lazily_in_pieces() -> None:
    body = three_messages() * 2000  # about 0.2 MB: several 64 KiB pieces
    frames = iter_event_stream_frames(body)
    assert next(frames).startswith(b'{"contentBlockDelta"')
    assert sum(1 for _ in frames) == 6000 - 1
