"""The payloads of a whole recorded body, for a reader of each frame's data alone.

:func:`~solon_events.sse.iter_frames` decodes every payload to text and wraps it in a
:class:`~solon_events.sse.Frame`. A JSON parser reads UTF-8 bytes directly, and text that is
not ASCII costs it a second encoding, so :func:`iter_payloads` hands the common shapes over
as the payload's bytes: each JSON line, and each ``data: X`` event of an SSE body made only of
such events. Everything else (CR line ends, comments, ``event``/``id``/``retry`` fields,
multi-line data, a last event without its blank line, a frame over the size limit, a body
of no known format) goes through ``iter_frames`` from that point on, so the payloads, their
order and the errors are the same as iter_frames gives.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import chain

from .sse import (
    _ASCII_BLANK,
    _BOM,
    _PIECE,
    DEFAULT_MAX_FRAME_SIZE,
    Frame,
    StreamFormat,
    _whole_body_format,
    _window_end,
    iter_frames,
)

__all__ = ["iter_payloads"]

_BLANK = _ASCII_BLANK.encode()  # what JSONLinesDecoder strips to tell a blank line
_DATA = b"data: "
_NEXT_DATA = b"\n\ndata: "


def iter_payloads(
    source: bytes | bytearray | str | Iterable[bytes | str],
    *,
    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
    format: StreamFormat = "auto",
) -> Iterator[bytes | Frame]:
    """The frames of ``source`` as :func:`~solon_events.sse.iter_frames` gives them, except that
    a payload it can cut straight out of a whole body comes as bytes rather than a Frame.

    Such bytes are the payload exactly as received: ``Frame.data`` is them decoded as UTF-8
    with invalid sequences replaced. Lazy, a window of the body at a time, like iter_frames.
    An iterable of chunks gives iter_frames' Frames.
    """
    if not isinstance(source, (bytes, bytearray, str)):
        return iter_frames(source, max_frame_size=max_frame_size, format=format)
    body = source.encode("utf-8", "surrogatepass") if isinstance(source, str) else bytes(source)
    return chain.from_iterable(_payload_lists(body, max_frame_size, format))


def _payload_lists(
    body: bytes, max_frame_size: int, format: StreamFormat
) -> Iterator[list[bytes] | Iterator[Frame]]:
    start = len(_BOM) if body.startswith(_BOM) else 0
    known = _whole_body_format(body, start, format)
    if known is None or max_frame_size < 1 or body.find(b"\r") >= 0:
        yield iter_frames(body, max_frame_size=max_frame_size, format=format)
        return
    format = known
    cut = _json_lines if format == "jsonl" else _data_events
    first, end = start, len(body)
    while start < end:
        payloads, stop = cut(body, start, end, max_frame_size)
        if payloads is None:
            # From the middle, a blank line first keeps iter_frames from taking bytes there
            # for a BOM.
            rest = body if start == first else b"\n" + body[start:]
            yield iter_frames(rest, max_frame_size=max_frame_size, format=format)
            return
        yield payloads
        start = stop


def _json_lines(
    body: bytes, start: int, end: int, max_frame_size: int
) -> tuple[list[bytes] | None, int]:
    """The non-blank lines of the lines from ``start`` to about ``_PIECE`` bytes on, and where
    they stop; None if one of them is over the limit.
    """
    stop = body.find(b"\n", start + _PIECE) + 1 or end
    lines = body[start:stop].split(b"\n")
    if not lines[-1]:  # after the last line end
        lines.pop()
    if stop - start > max_frame_size and max(map(len, lines)) > max_frame_size:
        return None, start
    # When the least line starts above " ", no line is empty or only blank space.
    if min(lines)[:1] <= b" ":
        lines = [line for line in lines if line.strip(_BLANK)]
    return lines, stop


def _data_events(
    body: bytes, start: int, end: int, max_frame_size: int
) -> tuple[list[bytes] | None, int]:
    """The payloads of the ``data: X`` events from ``start`` to about ``_WINDOW`` bytes on, and
    where they stop; None unless every event there is one such line and its blank line.
    """
    stop = _window_end(body, start, end)
    if not body.startswith(_DATA, start) or body[stop - 2 : stop] != b"\n\n":
        return None, start
    payloads = body[start + len(_DATA) : stop - 2].split(_NEXT_DATA)
    # Each event has exactly two line ends when its data holds none.
    if body.count(b"\n", start, stop) != 2 * len(payloads) or (
        stop - start > max_frame_size and max(map(len, payloads)) + len(_DATA) > max_frame_size
    ):  # the limit bounds each line, "data: " included
        return None, start
    return payloads, stop
