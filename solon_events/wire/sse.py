"""Sans-I/O decoding of model streams: WHATWG server-sent events and JSON lines.

Bytes go in as they arrive, split anywhere (even inside a UTF-8 character or between the CR
and LF of one line end); :class:`Frame` values come out. Each chunk is cut into lines by
bytes methods running in C (CRLF and CR become LF), never byte by byte in Python; a line
still waiting for its end is kept as a list of pieces, so a frame arriving in many small
chunks costs linear time. One line, or one event's data, larger than ``max_frame_size``
bytes raises :class:`~solon_events.event_model.errors.ChatProtocolError` instead of growing without
bound; after that error the decoder is not to be fed again.

One decoder with one API: :class:`StreamDecoder` (``feed`` bytes as they arrive, ``close``
at the end; the transport's stream reader uses it) and :func:`iter_frames` (a whole body or
an iterable of chunks, fed to a StreamDecoder; :func:`~solon_events.replay` and the CLI use
it). Both run the same :class:`SSEDecoder` or :class:`JSONLinesDecoder`. A reader of each
frame's data alone (the parse stage reads nothing else) asks for ``data_only``: each frame is
then its data (a str), and no Frame is built for it (:func:`iter_frame_data`). The decoders
are generic in what they return: ``StreamDecoder()`` is a ``StreamDecoder[Frame]`` and
``StreamDecoder(data_only=True)`` a ``StreamDecoder[str]`` (the same for :class:`SSEDecoder`
and :class:`JSONLinesDecoder`), so a type checker sees which one ``feed`` and ``close`` give.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from itertools import chain, repeat
from typing import Any, Generic, Literal, NamedTuple, TypeVar, overload

from ..event_model.errors import ChatProtocolError

__all__ = [
    "DEFAULT_MAX_FRAME_SIZE",
    "Frame",
    "JSONLinesDecoder",
    "SSEDecoder",
    "StreamDecoder",
    "StreamFormat",
    "iter_frame_data",
    "iter_frames",
]

DEFAULT_MAX_FRAME_SIZE = 16 * 1024 * 1024
"""The default bound, in bytes, on one line and on one event's data (16 MiB)."""

StreamFormat = Literal["auto", "sse", "jsonl"]
"""How a :class:`StreamDecoder` reads its bytes: sniffed (``"auto"``), SSE or JSON lines."""

_BOM = b"\xef\xbb\xbf"
_CR = 13
_LF = 10
_COLON = 0x3A
_SSE_FIELDS = (b"data", b"event", b"id", b"retry")
_NON_BLANK = re.compile(rb"[^ \t\r\n\f\v]")
_LINE_END = re.compile(rb"[\r\n]")
_PREVIEW_CHARS = 80
_ASCII_BLANK = " \t\x0b\x0c"  # bytes.isspace() of a line without its line end
# Runs of simple events are decoded in windows of about this many bytes: str.split and
# str.replace search long separators fastest in haystacks shorter than 30,000 characters.
_WINDOW = 16 * 1024
# iter_frames() feeds a whole body to its decoder in pieces of this size: each piece's frames
# are made at once, and a few hundred at a time stay under the collector's threshold (700 new
# tracked objects), where 64 KiB pieces made it walk them over and over.
_PIECE = 16 * 1024


class Frame(NamedTuple):
    """One payload of a stream: an SSE event (data and fields) or one JSON line (data only).

    ``id`` is the stream's last event ID when the event was dispatched (WHATWG: it persists
    across events until an ``id`` field changes it); ``retry`` is the reconnection time a
    ``retry`` field of this very event set, if any. A named tuple: one is made per frame.
    """

    data: str
    event: str | None = None
    id: str | None = None
    retry: int | None = None

    @property
    def is_done(self) -> bool:
        """Whether this frame is the ``[DONE]`` sentinel that ends OpenAI-style streams."""
        return self.data.strip() == "[DONE]"


_F = TypeVar("_F", bound="Frame | str")
"""What a decoder's ``feed`` and ``close`` return a list of: :class:`Frame`, or with
``data_only`` the data alone (``str``; ``Frame | str`` when ``data_only`` is a plain bool)."""


def _too_large(what: str, limit: int) -> ChatProtocolError:
    return ChatProtocolError(
        f"{what} exceeds the {_format_size(limit)} limit (max_frame_size={limit} bytes)"
    )


def _format_size(size: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size}-byte"


def _check_limit(max_frame_size: int) -> int:
    if max_frame_size < 1:
        raise ValueError(f"max_frame_size must be positive, got {max_frame_size}")
    return max_frame_size


def _decode(raw: bytes) -> str:
    return str(raw, "utf-8", "replace")


# Frame(...) runs the named tuple's Python-level __new__; decoders build frames with this instead.
_tuple_new = tuple.__new__
# Endless repeats hold no state, so one of each serves every caller: repeat() costs about as
# much as a frame.
_FRAME_TYPES = repeat(Frame)
_NONES = repeat(None)


def _make_frames(
    data: list[str], event: Iterable[str | None], last_id: str | None, data_only: bool
) -> Iterable[Any]:
    """Frames of the given data and event types, all with ``last_id`` and no retry (with
    ``data_only``, the data alone)."""
    if data_only:
        return data
    ids = _NONES if last_id is None else repeat(last_id)
    return map(_tuple_new, _FRAME_TYPES, zip(data, event, ids, _NONES))


class _LineDecoder(Generic[_F]):
    """Splits bytes into complete lines; subclasses turn lines into frames.

    Subclasses implement ``_frames(block)``, where ``block`` holds complete lines, each ended
    by one LF (CRLF and CR already turned into LF), and ``_finish()``, called at the end.
    With ``data_only``, each frame is its data alone (a str) instead of a :class:`Frame`.
    """

    _line_name = "line"

    def __init__(
        self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE, *, data_only: bool = False
    ) -> None:
        self.max_frame_size = _check_limit(max_frame_size)
        self.data_only = data_only
        self.frames_decoded = 0
        self._pending: list[bytes] = []
        self._pending_size = 0
        self._skip_lf = False
        self._at_start = True
        self._failure: ChatProtocolError | None = None

    def feed(self, chunk: bytes) -> list[_F]:
        """Decode the next chunk of the stream; returns the frames it completed (their data
        alone with ``data_only``).

        When the chunk holds complete frames before an oversized line, those frames are
        returned first and the ChatProtocolError is raised by the next call.
        """
        if self._failure is not None:
            raise self._failure
        block = self._split(chunk)
        frames = self._frames(block) if block else []
        if self._failure is not None and not frames:
            raise self._failure
        self.frames_decoded += len(frames)
        return frames

    def close(self) -> list[_F]:
        """End the stream: decode a last line without line end and flush a pending frame."""
        if self._failure is not None:
            raise self._failure
        tail = b"".join(self._pending)
        self._pending = []
        self._pending_size = 0
        self._at_start = False
        frames = self._frames(tail + b"\n") if tail else []
        frames.extend(self._finish())
        self.frames_decoded += len(frames)
        return frames

    def _frames(self, block: bytes) -> list[Any]:
        raise NotImplementedError

    def _finish(self) -> list[Any]:
        raise NotImplementedError

    def _split(self, chunk: bytes) -> bytes:
        if not isinstance(chunk, bytes):
            chunk = bytes(chunk)
        if self._skip_lf and chunk:
            self._skip_lf = False
            if chunk[0] == _LF:
                chunk = chunk[1:]
        if self._at_start:
            chunk = self._strip_bom(chunk)
        last_cr = chunk.rfind(b"\r")
        end = max(chunk.rfind(b"\n"), last_cr) + 1
        if not end:
            self._hold(chunk)
            return b""
        block = chunk if end == len(chunk) else chunk[:end]
        if self._pending:
            self._pending.append(block)
            block = b"".join(self._pending)
            self._pending = []
            self._pending_size = 0
        if end < len(chunk):
            try:
                self._hold(chunk[end:])
            except ChatProtocolError as exc:
                self._failure = exc
        elif chunk[-1] == _CR:
            self._skip_lf = True
        if last_cr >= 0:  # held pieces never hold a line end, so the chunk has every CR
            block = block.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        if len(block) > self.max_frame_size + 1:
            block = self._before_oversized_line(block)
        return block

    def _before_oversized_line(self, block: bytes) -> bytes:
        """``block`` up to its first line over the limit (recorded as the failure), if any."""
        start = 0
        for line in block.split(b"\n"):
            if len(line) > self.max_frame_size:
                self._failure = _too_large(self._line_name, self.max_frame_size)
                return block[:start]
            start += len(line) + 1
        return block

    def _strip_bom(self, chunk: bytes) -> bytes:
        head = b"".join(self._pending) + chunk if self._pending else chunk
        self._pending = []
        self._pending_size = 0
        if len(head) < len(_BOM) and _BOM.startswith(head):
            self._hold(head)
            return b""
        self._at_start = False
        return head[len(_BOM) :] if head.startswith(_BOM) else head

    def _hold(self, piece: bytes) -> None:
        if piece:
            self._pending.append(piece)
            self._pending_size += len(piece)
            if self._pending_size > self.max_frame_size:
                raise _too_large(self._line_name, self.max_frame_size)


class SSEDecoder(_LineDecoder[_F]):
    """Incremental decoder of a ``text/event-stream`` body, following the WHATWG rules.

    Fields ``data`` (several lines are joined with LF), ``event``, ``id`` and ``retry``
    (ASCII digits only); one space after the colon is dropped; a line without colon is a
    field with an empty value; lines starting with ``:`` are comments (keep-alives); unknown
    fields are ignored; a blank line dispatches the event, unless it has no ``data`` field.
    Unlike a browser, :meth:`close` also dispatches a last event that lacks its blank line.
    ``last_event_id`` and ``reconnection_time`` hold the stream-wide values the fields set.
    """

    _line_name = "SSE line"

    @overload
    def __init__(
        self: SSEDecoder[Frame], max_frame_size: int = ..., *, data_only: Literal[False] = ...
    ) -> None: ...
    @overload
    def __init__(
        self: SSEDecoder[str], max_frame_size: int = ..., *, data_only: Literal[True]
    ) -> None: ...
    @overload
    def __init__(
        self: SSEDecoder[Frame | str], max_frame_size: int = ..., *, data_only: bool
    ) -> None: ...
    def __init__(
        self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE, *, data_only: bool = False
    ) -> None:
        super().__init__(max_frame_size, data_only=data_only)
        self.last_event_id: str | None = None
        self.reconnection_time: int | None = None
        self._data: list[bytes] = []
        self._data_size = -1
        self._event: str | None = None
        self._retry: int | None = None

    def feed(self, chunk: bytes) -> list[_F]:
        """Decode the next chunk of the stream; returns the frames it completed.

        A chunk that is one whole ``data: X`` event, with nothing held or open before it, is
        its frame at once: read off a socket as it comes, that is most chunks of a stream,
        and the general path costs about four times as much per chunk.
        """
        if (
            chunk[:6] == b"data: "
            and chunk.find(b"\n") == len(chunk) - 2
            and chunk[-1] == _LF
            and chunk.find(b"\r") < 0
            and len(chunk) - 2 <= self.max_frame_size
            and type(chunk) is bytes
            and not self._pending
            and not self._data
            and self._event is None
            and self._retry is None
            and self._failure is None
        ):
            self._at_start = self._skip_lf = False
            self.frames_decoded += 1
            data = [str(chunk[6:-2], "utf-8", "replace")]
            return list(_make_frames(data, _NONES, self.last_event_id, self.data_only))
        return super().feed(chunk)

    def _frames(self, block: bytes) -> list[Any]:
        """The frames of ``block`` (complete lines): the lines of an event left open by the
        previous block, then runs of whole events, then the lines of an event still open."""
        frames: list[Any] = []
        try:
            start = 0
            if self._data or self._event is not None or self._retry is not None:
                end = block.find(b"\n\n")
                start = len(block) if end < 0 else end + 2
                self._lines(block[:start], frames)
            last = block.rfind(b"\n\n", start)
            if last >= 0:
                self._complete_events(block, start, last + 2, frames)
                start = last + 2
            if start < len(block):
                self._lines(block[start:], frames)
        except ChatProtocolError as exc:  # an event's data over the limit: keep what came first
            self._failure = exc
        return frames

    def _finish(self) -> list[Any]:
        frames: list[Any] = []
        self._end_event(frames)
        return frames

    def _complete_events(self, block: bytes, start: int, stop: int, frames: list[Any]) -> None:
        """Decode ``block[start:stop]``: whole events, the last one ended by its blank line.

        No event is open at ``start``. The events go by windows of about ``_WINDOW`` bytes,
        each ending at a blank line; a window made only of ``data: X`` events (or only of
        ``event: Y`` + ``data: X`` ones), most of any provider's stream, is decoded at once,
        any other window line by line.
        """
        view = memoryview(block)  # decoded from without copying
        while start < stop:
            end = _window_end(block, start, stop)
            last_id = self.last_event_id  # an ``id:`` line of a window read line by line sets it
            if not _simple_events(block, view, start, end, last_id, self.data_only, frames):
                self._lines(block[start:end], frames)
            start = end

    def _lines(self, block: bytes, frames: list[Any]) -> None:
        """Decode ``block``, complete lines each ended by LF, one line at a time (WHATWG)."""
        for line in block[:-1].split(b"\n"):
            if line[:6] == b"data: ":
                self._add_data(line[6:])
            elif not line:
                self._end_event(frames)
            elif line[0] != _COLON:
                self._field(line)

    def _field(self, line: bytes) -> None:
        name, colon, value = line.partition(b":")
        if colon and value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            self._add_data(value)
        elif name == b"event":
            self._event = _decode(value) or None
        elif name == b"id":
            if value.find(b"\0") < 0:
                self.last_event_id = _decode(value) or None
        elif name == b"retry" and value.isdigit():
            self._retry = self.reconnection_time = int(value)

    def _add_data(self, value: bytes) -> None:
        self._data_size += len(value) + 1
        if self._data_size > self.max_frame_size:
            raise _too_large("SSE frame", self.max_frame_size)
        self._data.append(value)

    def _end_event(self, frames: list[Any]) -> None:
        if self._data:
            data = _decode(b"\n".join(self._data))
            if self.data_only:
                frames.append(data)
            else:
                frame = (data, self._event, self.last_event_id, self._retry)
                frames.append(_tuple_new(Frame, frame))
        self._reset()

    def _reset(self) -> None:
        self._data.clear()
        self._data_size = -1
        self._event = None
        self._retry = None


def _window_end(block: bytes, start: int, stop: int) -> int:
    """Where the window of events from ``start`` (an event's start) ends: after the last blank
    line within ``_WINDOW`` bytes, else after the first one (an event longer than the window),
    else at ``stop``, the end of what there is."""
    if stop - start <= _WINDOW:
        return stop
    end = block.rfind(b"\n\n", start, start + _WINDOW) + 2
    if end < start + 2:
        found = block.find(b"\n\n", start, stop)
        end = stop if found < 0 else found + 2
    return end


def _simple_events(
    block: bytes,
    view: memoryview,
    start: int,
    end: int,
    last_id: str | None,
    data_only: bool,
    frames: list[Any],
) -> bool:
    """Decode ``block[start:end]`` (``view`` shows ``block``) into ``frames`` as a decoder
    makes them (with its last event id and ``data_only``) if each of its events is
    ``data: X`` or ``event: Y`` then ``data: X`` (one space after each colon, no other line);
    False, decoding nothing, if not.
    """
    if block.startswith(b"data: ", start):
        # Decoding from an offset that is a multiple of 8 takes CPython's fastest ASCII path;
        # the ASCII before the first payload ("\n" or part of "data: ") is cut off after.
        skip = (start + 6) & 7
        data = str(view[start + 6 - skip : end - 2], "utf-8", "replace").split("\n\ndata: ")
        data[0] = data[0][skip:]
        # Each blank line is followed by a data line; a line end elsewhere is another shape.
        if "\n" in "".join(data):
            return False
        frames.extend(_make_frames(data, _NONES, last_id, data_only))
        return True
    if not block.startswith(b"event: ", start):
        return False
    skip = (start + 7) & 7
    text = str(view[start + 7 - skip : end - 2], "utf-8", "replace")
    if "\0" in text:
        return False
    # Y1 \n data: X1 \n\n event: Y2 ... becomes the parts Y1, X1, NUL, Y2, X2, NUL, ...:
    # simple events exactly when every third part, and only those, is a NUL, and no part
    # holds a line end.
    parts = text.replace("\n\nevent: ", "\ndata: \0\ndata: ").split("\ndata: ")
    events = parts[0::3]
    events[0] = events[0][skip:]
    data = parts[1::3]
    ends = parts[2::3]
    names = "".join(events)
    payloads = "".join(data)
    if (
        len(parts) % 3 != 2
        or ends.count("\0") != len(ends)
        or "\n" in names
        or "\0" in names
        or "\n" in payloads
        or "\0" in payloads
    ):
        return False
    types: list[str | None] = [name or None for name in events]
    frames.extend(_make_frames(data, types, last_id, data_only))
    return True


class JSONLinesDecoder(_LineDecoder[_F]):
    """Incremental decoder of JSON lines (NDJSON): each non-blank line is one :class:`Frame`.

    The JSON itself is not parsed here; ``Frame.data`` is the line without its line end.
    """

    @overload
    def __init__(
        self: JSONLinesDecoder[Frame], max_frame_size: int = ..., *, data_only: Literal[False] = ...
    ) -> None: ...
    @overload
    def __init__(
        self: JSONLinesDecoder[str], max_frame_size: int = ..., *, data_only: Literal[True]
    ) -> None: ...
    @overload
    def __init__(
        self: JSONLinesDecoder[Frame | str], max_frame_size: int = ..., *, data_only: bool
    ) -> None: ...
    def __init__(
        self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE, *, data_only: bool = False
    ) -> None:
        super().__init__(max_frame_size, data_only=data_only)

    def _frames(self, block: bytes) -> list[Any]:
        return _json_lines(block, self.data_only)

    def _finish(self) -> list[Any]:
        return []


def _json_lines(block: bytes, data_only: bool) -> list[Any]:
    """The frames of ``block``, complete lines each ended by one LF."""
    lines = block.decode("utf-8", "replace").split("\n")
    lines.pop()  # after the block's last line end
    # When the least line starts above " ", no line is empty or only blank space.
    if not lines or min(lines)[:1] <= " ":
        lines = [line for line in lines if line.strip(_ASCII_BLANK)]
    return list(_make_frames(lines, _NONES, None, data_only))


class StreamDecoder(Generic[_F]):
    """Decodes SSE or JSON lines, sniffing which from the first bytes when ``format="auto"``.

    A first line (after a BOM and blank space) starting with ``data``, ``event``, ``id`` or
    ``retry`` and a colon or line end, or with ``:``, is SSE; one starting with ``{`` or ``[``
    is JSON lines; anything else (an HTML error page, say) raises ``ChatProtocolError``
    showing how the body starts. ``format`` is ``"sse"`` or ``"jsonl"`` once known.
    With ``data_only``, each frame is its data alone (a str) instead of a :class:`Frame`.
    """

    @overload
    def __init__(
        self: StreamDecoder[Frame],
        max_frame_size: int = ...,
        format: StreamFormat = ...,
        *,
        data_only: Literal[False] = ...,
    ) -> None: ...
    @overload
    def __init__(
        self: StreamDecoder[str],
        max_frame_size: int = ...,
        format: StreamFormat = ...,
        *,
        data_only: Literal[True],
    ) -> None: ...
    @overload
    def __init__(
        self: StreamDecoder[Frame | str],
        max_frame_size: int = ...,
        format: StreamFormat = ...,
        *,
        data_only: bool,
    ) -> None: ...
    def __init__(
        self,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        format: StreamFormat = "auto",
        *,
        data_only: bool = False,
    ) -> None:
        if format not in ("auto", "sse", "jsonl"):
            raise ValueError(f"format must be 'auto', 'sse' or 'jsonl', got {format!r}")
        self.max_frame_size = _check_limit(max_frame_size)
        self._decoder: _LineDecoder[Any] | None = None
        self._head = bytearray()
        self._scanned = 0
        self._data_only = data_only
        if format != "auto":
            self._decoder = _make_decoder(format, max_frame_size, data_only)

    @property
    def format(self) -> Literal["sse", "jsonl"] | None:
        """The format being decoded, or None while it is not known yet."""
        if self._decoder is None:
            return None
        return "sse" if isinstance(self._decoder, SSEDecoder) else "jsonl"

    @property
    def frames_decoded(self) -> int:
        """How many frames this decoder has returned so far."""
        return 0 if self._decoder is None else self._decoder.frames_decoded

    def feed(self, chunk: bytes) -> list[_F]:
        """Decode the next chunk of the stream; returns the frames it completed (their data
        alone with ``data_only``)."""
        if self._decoder is not None:
            return self._decoder.feed(chunk)
        if not self._head and isinstance(chunk, bytes):
            fmt = _leading_format(chunk)
            if fmt is not None:  # known from the chunk alone: decode it without copying it
                self._decoder = _make_decoder(fmt, self.max_frame_size, self._data_only)
                return self._decoder.feed(chunk)
        self._head += chunk
        return self._start(final=False)

    def close(self) -> list[_F]:
        """End the stream and flush what is pending; a body of blank space yields nothing."""
        if self._decoder is None:
            frames = self._start(final=True)
            if self._decoder is None:
                return frames
        return self._decoder.close()

    def _start(self, *, final: bool) -> list[Any]:
        fmt = self._sniff(final=final)
        if fmt is None:
            return []
        self._decoder = _make_decoder(fmt, self.max_frame_size, self._data_only)
        head = bytes(self._head)
        self._head = bytearray()
        return self._decoder.feed(head)

    def _sniff(self, *, final: bool) -> Literal["sse", "jsonl"] | None:
        head = self._head
        if not final and len(head) < len(_BOM) and _BOM.startswith(head):
            return None
        line_start = self._drop_blank_lines(len(_BOM) if head.startswith(_BOM) else 0)
        content = bytes(head[self._scanned : self._scanned + _PREVIEW_CHARS * 4])
        fmt = _format_of(content, final=final) if content else None
        if fmt == "unknown":
            if final or len(content) >= _PREVIEW_CHARS or _LINE_END.search(content):
                raise ChatProtocolError(
                    f"not an event stream (SSE or JSON lines): {_preview(content)}"
                )
            fmt = None
        if fmt is None and len(head) - line_start > self.max_frame_size:
            raise _too_large("line", self.max_frame_size)
        return fmt

    def _drop_blank_lines(self, start: int) -> int:
        """Skip the blank space at the head, keeping only its last line end; returns where
        the current line starts.

        Blank lines mean nothing in either format; the kept line end stops bytes that follow
        from passing for a BOM at the start of the stream.
        """
        head = self._head
        seen = max(start, self._scanned)
        found = _NON_BLANK.search(head, seen)
        self._scanned = found.start() if found else len(head)
        cut = max(head.rfind(b"\n", seen, self._scanned), head.rfind(b"\r", seen, self._scanned))
        if cut > start:
            del head[start:cut]
            self._scanned -= cut - start
        return start + 1 if head[start : start + 1] in (b"\n", b"\r") else start


def _make_decoder(fmt: str, max_frame_size: int, data_only: bool) -> _LineDecoder[Any]:
    kind = SSEDecoder if fmt == "sse" else JSONLinesDecoder
    return kind(max_frame_size, data_only=data_only)


def _leading_format(chunk: bytes) -> Literal["sse", "jsonl"] | None:
    """The format of a stream starting with ``chunk`` if, after a BOM, it starts with no blank
    space and with enough to tell; None otherwise (:meth:`StreamDecoder._sniff` decides then).
    """
    start = len(_BOM) if chunk.startswith(_BOM) else 0
    if _NON_BLANK.match(chunk, start) is None:
        return None
    fmt = _format_of(chunk[start : start + _PREVIEW_CHARS * 4], final=False)
    return None if fmt == "unknown" else fmt


def _format_of(content: bytes, *, final: bool) -> Literal["sse", "jsonl", "unknown"] | None:
    """The format a stream starting with ``content`` (blank space removed) is in.

    None means "could still be either": ``content`` is a prefix of an SSE field name.
    """
    if content[:1] in (b"{", b"["):
        return "jsonl"
    if content[:1] == b":":
        return "sse"
    for name in _SSE_FIELDS:
        after = content[len(name) : len(name) + 1]
        if content.startswith(name) and (after in (b":", b"\r", b"\n") or (final and not after)):
            return "sse"
        if not final and len(content) <= len(name) and name.startswith(content):
            return None
    return "unknown"


def _preview(content: bytes) -> str:
    text = _decode(content)
    shown = text[:_PREVIEW_CHARS]
    return f"starts with {shown!r}{'...' if len(text) > len(shown) else ''}"


def iter_frames(
    source: bytes | bytearray | str | Iterable[bytes | str],
    *,
    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
    format: StreamFormat = "auto",
) -> Iterator[Frame]:
    """Yield the frames of a whole body (bytes or text) or of an iterable of chunks.

    Lazy: nothing is read or decoded before the first frame is asked for, and a whole body
    is decoded a piece at a time, so its frames do not all exist at once.
    """
    return chain.from_iterable(_frame_lists(source, max_frame_size, format, False))


def iter_frame_data(
    source: bytes | bytearray | str | Iterable[bytes | str],
    *,
    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
    format: StreamFormat = "auto",
) -> Iterator[str]:
    """The data of each frame :func:`iter_frames` yields (``frame.data``), the same errors
    at the same points, without building the Frames: what a reader of the payloads alone
    needs (:func:`~solon_events.replay` hands them to the parse stage)."""
    return chain.from_iterable(_frame_lists(source, max_frame_size, format, True))


def _pieces(body: bytes) -> Iterator[bytes]:
    """``body`` in pieces of about ``_PIECE`` bytes."""
    if len(body) <= _PIECE:
        yield body
        return
    view = memoryview(body)
    for start in range(0, len(body), _PIECE):
        yield bytes(view[start : start + _PIECE])


def _simple_body(body: bytes, max_frame_size: int, data_only: bool) -> list[Any] | None:
    """The frames of a whole body of simple events (each ``data: X`` or ``event: Y`` then
    ``data: X``, every line ended by LF, the last event by its blank line) that fits in a
    frame: what :class:`StreamDecoder` would decode it into, without building one (a short
    answer's body is mostly that cost); None for any other body."""
    if (
        len(body) > max_frame_size
        or not body.endswith(b"\n\n")
        or not (body.startswith(b"data: ") or body.startswith(b"event: "))
        or body.find(b"\r") >= 0
    ):
        return None
    frames: list[Any] = []
    if _simple_events(body, memoryview(body), 0, len(body), None, data_only, frames):
        return frames
    return None


def _frame_lists(
    source: bytes | bytearray | str | Iterable[bytes | str],
    max_frame_size: int,
    format: StreamFormat,
    data_only: bool,
) -> Iterator[list[Any]]:
    chunks: Iterable[bytes | bytearray | str]
    if isinstance(source, (bytes, bytearray, str)):
        if isinstance(source, str):
            body = source.encode("utf-8", "surrogatepass")
        else:
            body = source if type(source) is bytes else bytes(source)
        if (format == "auto" or format == "sse") and len(body) <= _PIECE:
            frames = _simple_body(body, max_frame_size, data_only)
            if frames is not None:
                yield frames
                return
        chunks = _pieces(body)
    else:
        chunks = source
    decoder = StreamDecoder(max_frame_size, format=format, data_only=data_only)
    for chunk in chunks:
        yield decoder.feed(
            chunk.encode("utf-8", "surrogatepass") if isinstance(chunk, str) else bytes(chunk)
        )
    yield decoder.close()
