"""Sans-I/O decoding of AWS event-stream framing (``application/vnd.amazon.eventstream``).

Amazon Bedrock's ``ConverseStream`` answers with binary messages, not SSE. Each message is a
12-byte prelude (total length, headers length, both big-endian uint32, and the prelude's
CRC32), typed headers (``:event-type``, ``:message-type``, ``:content-type``, ...), the
payload, and the CRC32 of everything before it. :class:`EventStreamDecoder` takes bytes as
they arrive, split anywhere, and returns whole :class:`EventStreamMessage` values; a bad
CRC, inconsistent lengths, a message over the size limit or a stream cut inside a message
raise :class:`~solon_events.event_model.errors.ChatProtocolError` naming the message's number (1 for
the first). After such an error the decoder is not to be fed again.

:class:`EventStreamFrameDecoder` is the same decoder as the stream reader and ``replay()``
use it: each message becomes one frame, the JSON text ``{"<event type>": <payload>}``, which
is how botocore hands ConverseStream events to its callers (``{"contentBlockDelta":
{...}}``); an exception message becomes ``{"<exception type>": <payload>}`` (e.g.
``{"throttlingException": {"message": ...}}``) and an error message ``{"error": {"code",
"message"}}``, for the dialect to turn into a provider failure. :func:`encode_message` writes
a message (the embedded provider and the tests use it).
"""

from __future__ import annotations

import struct
import uuid
import zlib
from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

import orjson

from ..event_model.errors import ChatProtocolError

__all__ = [
    "CONTENT_TYPE",
    "DEFAULT_MAX_MESSAGE_SIZE",
    "EventStreamDecoder",
    "EventStreamFrameDecoder",
    "EventStreamMessage",
    "encode_message",
    "event_message",
    "exception_message",
    "is_event_stream",
    "iter_event_stream_frames",
    "message_frame",
]

CONTENT_TYPE = "application/vnd.amazon.eventstream"
"""The content type of an AWS event stream."""

DEFAULT_MAX_MESSAGE_SIZE = 16 * 1024 * 1024
"""The default bound, in bytes, on one whole message (16 MiB)."""

_PREVIEW = 80  # bytes of a body shown when it is not an event stream at all
_PRELUDE = struct.Struct("!III")
_PRELUDE_LENGTH = 12
_CRC_LENGTH = 4
_MIN_MESSAGE = _PRELUDE_LENGTH + _CRC_LENGTH
_U8 = struct.Struct("!B")
_U16 = struct.Struct("!H")
_U32 = struct.Struct("!I")
_INTEGERS = {2: struct.Struct("!b"), 3: struct.Struct("!h"), 4: struct.Struct("!i"),
             5: struct.Struct("!q"), 8: struct.Struct("!q")}  # fmt: skip
# Header value types: 0 true, 1 false, 2 byte, 3 short, 4 integer, 5 long, 6 byte array,
# 7 string, 8 timestamp (ms since the epoch, as an int), 9 uuid (16 bytes).
_BYTES, _STRING, _UUID = 6, 7, 9

HeaderValue = bool | int | bytes | str
"""A header's value: a bool, an int (byte, short, integer, long, timestamp), bytes (byte
array, uuid) or a str."""


class EventStreamMessage(NamedTuple):
    """One decoded message: its headers by name and its payload bytes."""

    headers: dict[str, HeaderValue]
    payload: bytes

    @property
    def message_type(self) -> str:
        """``:message-type``: ``"event"`` (the default), ``"exception"`` or ``"error"``."""
        value = self.headers.get(":message-type", "event")
        return value if isinstance(value, str) else "event"


def _crc(data: bytes | memoryview, start: int = 0) -> int:
    return zlib.crc32(data, start) & 0xFFFFFFFF


class EventStreamDecoder:
    """Bytes of an AWS event stream in, whole messages out (sans-I/O).

    ``max_message_size`` bounds one message's total length, checked from its prelude
    before its bytes are gathered.
    """

    __slots__ = ("_buffer", "max_message_size", "messages_decoded")

    def __init__(self, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE) -> None:
        if max_message_size < _MIN_MESSAGE:
            raise ValueError(f"max_message_size must be at least {_MIN_MESSAGE} bytes")
        self.max_message_size = max_message_size
        self.messages_decoded = 0
        """How many messages this decoder has returned so far."""
        self._buffer = bytearray()

    def feed(self, chunk: bytes) -> list[EventStreamMessage]:
        """Decode the next chunk of the stream; returns the messages it completed."""
        buffer = self._buffer
        buffer += chunk
        messages: list[EventStreamMessage] = []
        start, end = 0, len(buffer)
        view = memoryview(buffer)
        try:
            while end - start >= _PRELUDE_LENGTH:
                total = self._check_prelude(view, start)
                if end - start < total:
                    break
                messages.append(self._message(view, start, total))
                start += total
        finally:
            view.release()
        if start:
            del buffer[:start]
        return messages

    def close(self) -> list[EventStreamMessage]:
        """End the stream: bytes of an unfinished message raise ``ChatProtocolError``."""
        pending = len(self._buffer)
        if pending:
            if pending >= _PRELUDE_LENGTH:
                total = _PRELUDE.unpack_from(self._buffer)[0]
                what = f"{pending} of its {total} bytes"
            else:
                what = f"{pending} bytes of its 12-byte prelude"
            raise self._error(f"the stream ended inside it ({what}; truncated)")
        return []

    def _error(self, problem: str) -> ChatProtocolError:
        return ChatProtocolError(f"event-stream message {self.messages_decoded + 1}: {problem}")

    def _check_prelude(self, view: memoryview, start: int) -> int:
        """The checked total length of the message whose prelude starts at ``start``."""
        total, headers_length, prelude_crc = _PRELUDE.unpack_from(view, start)
        actual = _crc(view[start : start + 8])
        if actual != prelude_crc and not self.messages_decoded and not start:
            shown = str(view[:_PREVIEW], "utf-8", "replace")
            raise ChatProtocolError(
                f"not an AWS event stream ({CONTENT_TYPE}): the body starts with {shown!r}"
            )
        if actual != prelude_crc:
            raise self._error(
                f"prelude CRC32 mismatch (sent {prelude_crc:#010x}, computed {actual:#010x})"
            )
        if total < _MIN_MESSAGE or headers_length > total - _MIN_MESSAGE:
            raise self._error(
                f"inconsistent lengths (total {total} bytes, headers {headers_length} bytes)"
            )
        if total > self.max_message_size:
            raise self._error(
                f"{total} bytes exceeds the limit of {self.max_message_size} bytes (max_frame_size)"
            )
        return total

    def _message(self, view: memoryview, start: int, total: int) -> EventStreamMessage:
        crc_at = start + total - _CRC_LENGTH
        sent = _U32.unpack_from(view, crc_at)[0]
        actual = _crc(view[start:crc_at])
        if actual != sent:
            raise self._error(
                f"message CRC32 mismatch (sent {sent:#010x}, computed {actual:#010x})"
            )
        headers_length = _U32.unpack_from(view, start + 4)[0]
        headers_start = start + _PRELUDE_LENGTH
        payload_start = headers_start + headers_length
        try:
            headers = _headers(view, headers_start, payload_start)
        except (struct.error, UnicodeDecodeError, ValueError) as exc:
            raise self._error(f"malformed headers ({exc})") from None
        self.messages_decoded += 1
        return EventStreamMessage(headers, bytes(view[payload_start:crc_at]))


def _headers(view: memoryview, at: int, end: int) -> dict[str, HeaderValue]:
    headers: dict[str, HeaderValue] = {}
    while at < end:
        name_length = view[at]
        name = str(view[at + 1 : at + 1 + name_length], "utf-8")
        at += 1 + name_length
        if at >= end:
            raise ValueError(f"header {name!r} has no value")
        kind = view[at]
        at += 1
        value: HeaderValue
        if kind == 0 or kind == 1:
            value = kind == 0
        elif kind in _INTEGERS:
            integer = _INTEGERS[kind]
            value = integer.unpack_from(view, at)[0]
            at += integer.size
        elif kind in (_BYTES, _STRING):
            length = _U16.unpack_from(view, at)[0]
            raw = bytes(view[at + 2 : at + 2 + length])
            if len(raw) != length:
                raise ValueError(f"header {name!r} is cut short")
            value = raw if kind == _BYTES else raw.decode()
            at += 2 + length
        elif kind == _UUID:
            value = bytes(view[at : at + 16])
            if len(value) != 16:
                raise ValueError(f"header {name!r} is cut short")
            at += 16
        else:
            raise ValueError(f"header {name!r} has an unknown value type {kind}")
        if at > end:
            raise ValueError(f"header {name!r} runs past the headers")
        if name in headers:
            raise ValueError(f"header {name!r} is repeated")
        headers[name] = value
    return headers


# ---------------------------------------------------------------- messages as frames


def message_frame(message: EventStreamMessage) -> bytes:
    """The frame of one message: the JSON text ``{"<type>": <payload>}`` (see the module)."""
    headers = message.headers
    kind = message.message_type
    if kind == "error":
        body = {"code": headers.get(":error-code"), "message": headers.get(":error-message")}
        return orjson.dumps({"error": {k: v for k, v in body.items() if isinstance(v, str)}})
    name = headers.get(":exception-type" if kind == "exception" else ":event-type")
    key = orjson.dumps(name if isinstance(name, str) else kind)
    payload = message.payload
    if not payload.strip():
        return b"{" + key + b":{}}"
    if payload.lstrip()[:1] in (b"{", b"["):
        return b"{" + key + b":" + payload + b"}"
    return b"{" + key + b":" + orjson.dumps(payload.decode("utf-8", "replace")) + b"}"


class EventStreamFrameDecoder:
    """Bytes of an AWS event stream in, one frame per message out (see :func:`message_frame`).

    The frame decoder a dialect whose provider speaks this framing gives the stream reader;
    ``max_frame_size`` bounds one message.
    """

    __slots__ = ("_messages",)

    def __init__(self, max_frame_size: int = DEFAULT_MAX_MESSAGE_SIZE) -> None:
        self._messages = EventStreamDecoder(max(max_frame_size, _MIN_MESSAGE))

    @property
    def frames_decoded(self) -> int:
        """How many frames this decoder has returned so far."""
        return self._messages.messages_decoded

    def feed(self, chunk: bytes) -> list[bytes]:
        """Decode the next chunk of the stream; returns the frames it completed."""
        return [message_frame(message) for message in self._messages.feed(chunk)]

    def close(self) -> list[bytes]:
        """End the stream; a message cut short raises ``ChatProtocolError``."""
        return [message_frame(message) for message in self._messages.close()]


def is_event_stream(body: bytes | bytearray | memoryview) -> bool:
    """Whether ``body`` starts like an AWS event stream: a 12-byte prelude whose CRC holds."""
    if len(body) < _MIN_MESSAGE:
        return False
    total, headers_length, prelude_crc = _PRELUDE.unpack_from(body)
    if total < _MIN_MESSAGE or headers_length > total - _MIN_MESSAGE:
        return False
    return _crc(bytes(body[:8])) == prelude_crc


def iter_event_stream_frames(
    body: bytes, *, max_frame_size: int = DEFAULT_MAX_MESSAGE_SIZE
) -> Iterator[bytes]:
    """The frames of a whole event-stream body, decoded lazily, a piece at a time."""
    decoder = EventStreamFrameDecoder(max_frame_size)
    piece = 64 * 1024
    for start in range(0, len(body), piece):
        yield from decoder.feed(body[start : start + piece])
    yield from decoder.close()


# ---------------------------------------------------------------- encoding


def _header_bytes(name: str, value: HeaderValue | uuid.UUID) -> bytes:
    raw_name = name.encode()
    head = _U8.pack(len(raw_name)) + raw_name
    if isinstance(value, bool):
        return head + (b"\x00" if value else b"\x01")
    if isinstance(value, int):
        return head + b"\x05" + _INTEGERS[5].pack(value)
    if isinstance(value, uuid.UUID):
        return head + b"\x09" + value.bytes
    if isinstance(value, str):
        data = value.encode()
        return head + b"\x07" + _U16.pack(len(data)) + data
    return head + b"\x06" + _U16.pack(len(value)) + bytes(value)


def encode_message(headers: Mapping[str, Any], payload: bytes = b"") -> bytes:
    """One event-stream message of ``headers`` (bool, int as a long, str, bytes, UUID) and
    ``payload``, with both CRCs."""
    header_bytes = b"".join(_header_bytes(name, value) for name, value in headers.items())
    total = _MIN_MESSAGE + len(header_bytes) + len(payload)
    lengths = _U32.pack(total) + _U32.pack(len(header_bytes))
    prelude_crc = _crc(lengths)
    body = lengths + _U32.pack(prelude_crc) + header_bytes + payload
    return body + _U32.pack(_crc(body))


def event_message(event_type: str, payload: Mapping[str, Any]) -> bytes:
    """An ``event`` message of ``event_type`` with a JSON payload, as AWS services send."""
    return encode_message(
        {
            ":event-type": event_type,
            ":content-type": "application/json",
            ":message-type": "event",
        },
        orjson.dumps(payload),
    )


def exception_message(exception_type: str, message: str, **fields: Any) -> bytes:
    """An ``exception`` message of ``exception_type`` (``"throttlingException"``, ...)."""
    return encode_message(
        {
            ":exception-type": exception_type,
            ":content-type": "application/json",
            ":message-type": "exception",
        },
        orjson.dumps({"message": message, **fields}),
    )
