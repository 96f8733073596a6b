"""What :func:`~solon_events.replay` and ``solon-events replay`` are given, told apart and
read as frames and the dialect they are in.

A source is a path (a path object, or a string that names a file), the bytes or text of a
body, or an iterable of frames. A body is a recording made by
:func:`~solon_events.recording.record` (told by its header), an AWS event stream (Bedrock:
told by its first prelude), or SSE or JSON lines (told by the first line). Its frames'
dialect is the one a recording's header names, else the one the first frames' shapes tell
(:func:`~solon_events.dialects.sniff.sniff_dialect`).

:func:`tell_source` checks a source when it is given (a path that names no file fails
there); :meth:`Source.read` reads it, as often as asked, a file anew each time, its frames
decoded as they are taken. This module tells; the decoders of :mod:`solon_events.wire` read
the bytes.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from itertools import chain
from pathlib import Path
from typing import Any, NamedTuple, Union

from .dialects.sniff import sniff_dialect
from .wire.eventstream import is_event_stream, iter_event_stream_frames
from .wire.recordings import HEADER_START, RecordedStep, read_lines, starts_a_recording
from .wire.sse import _format_of, iter_frame_data

__all__ = [
    "ReplaySource",
    "Source",
    "SourceFrames",
    "is_recording",
    "read_recorded",
    "recording_dialect",
    "tell_source",
]

ReplaySource = Union[str, bytes, os.PathLike, Iterable[Any]]  # noqa: UP007
"""A path, the bytes or text of a recording (SSE, JSON lines or an AWS event stream), or an
iterable of frames."""

_BODY_TYPES = (str, bytes, bytearray, memoryview)


class SourceFrames(NamedTuple):
    """A source read: its ``frames`` from the first, the ``dialect`` they are in (None when
    it was not asked for or nothing tells it), and the ``error`` reading raised while the
    dialect was told, in which case ``frames`` are those read before it."""

    frames: Iterator[Any]
    dialect: str | None
    error: Exception | None


class Source:
    """A source told apart (:func:`tell_source`): a file, a body or an iterable of frames;
    :attr:`is_recording` when it is a recording."""

    __slots__ = ("given", "is_recording", "path")

    def __init__(self, given: ReplaySource, path: Path | None, is_recording: bool) -> None:
        self.given = given
        """What was given."""
        self.path = path
        """The file it names, or None."""
        self.is_recording = is_recording
        """Whether it is a recording made by :func:`~solon_events.recording.record`."""

    def body(self) -> bytes | str:
        """The whole body: the file's bytes, read now, or the bytes or text given."""
        if self.path is not None:
            return self.path.read_bytes()
        if isinstance(self.given, str):
            return self.given
        if isinstance(self.given, (bytes, bytearray, memoryview)):
            return bytes(self.given)
        raise TypeError(f"an iterable of frames has no body: {type(self.given).__name__}")

    def recorded(self) -> tuple[dict[str, Any], tuple[RecordedStep, ...]]:
        """A recording's header and steps; a body that is no recording raises
        :class:`~solon_events.event_model.errors.ChatProtocolError`."""
        body = self.body()
        return read_lines(body.encode() if isinstance(body, str) else body)

    def frames(self) -> Iterator[Any]:
        """Every frame, a body's decoded as they are taken, each as its data (the parse
        stage reads nothing else): SSE's, JSON lines' and a recording's as text (a
        recording's every step in a row), an AWS event stream's as the bytes of each
        message's payload; an iterable's frames as they are."""
        given = self.given
        if self.path is None and isinstance(given, Iterable) and not isinstance(given, _BODY_TYPES):
            return iter(given)
        if self.is_recording:
            _header, steps = self.recorded()
            return (frame.data for step in steps for frame in step.frames)
        body = self.body()
        if isinstance(body, bytes) and is_event_stream(body):
            return iter_event_stream_frames(body)
        return iter_frame_data(body)

    def read(self, tell_dialect: bool = True) -> SourceFrames:
        """The frames, and with ``tell_dialect`` the dialect they are in: a recording's
        header names it, else the first frames tell (:func:`recording_dialect`). What
        reading raises (a file that cannot be read, a frame over the size limit) is
        returned, after the frames read before it, never raised."""
        try:
            if tell_dialect and self.is_recording:
                header, steps = self.recorded()
                frames = [frame.data for step in steps for frame in step.frames]
                return SourceFrames(iter(frames), recording_dialect(header, frames), None)
            frames_left = self.frames()
        except Exception as exc:  # a file that cannot be read, an iterable that cannot be
            return SourceFrames(iter(()), None, exc)
        if not tell_dialect:
            return SourceFrames(frames_left, None, None)
        head: list[Any] = []

        def taken() -> Iterator[Any]:
            for frame in frames_left:
                head.append(frame)
                yield frame

        try:
            name = sniff_dialect(taken())
        except Exception as exc:  # reading the source: an SSE error, a frame over the limit
            return SourceFrames(iter(head), None, exc)
        return SourceFrames(chain(head, frames_left), name, None)


def tell_source(source: ReplaySource) -> Source:
    """``source`` told apart, now: a path (a path object, or a string that holds no frame)
    that names no file, or names a directory, raises ``FileNotFoundError`` or
    ``IsADirectoryError``; what is neither a path, a body nor an iterable raises
    ``TypeError``."""
    path = _path_of(source)
    if path is not None:
        with path.open("rb") as file:
            return Source(source, path, starts_a_recording(file.read(len(HEADER_START))))
    if isinstance(source, _BODY_TYPES):
        return Source(source, None, _body_is_recording(source))
    if isinstance(source, Iterable):
        return Source(source, None, False)
    raise TypeError(
        f"replay() takes a path, bytes, text or an iterable of frames, not {type(source).__name__}"
    )


def _path_of(source: Any) -> Path | None:
    """The file ``source`` names; None when it is no path (a string holding frames); a
    path that names no file raises."""
    if isinstance(source, str):
        if _names_a_file(source):
            return Path(source)
        if "\n" in source or "\r" in source or len(source) >= 4096:
            return None  # text
        if _format_of(source.strip().encode(), final=True) != "unknown":
            return None  # the text of a one-frame stream
    elif not isinstance(source, os.PathLike):
        return None
    path = os.fspath(source)
    if os.path.isdir(path):
        raise IsADirectoryError(f"replay(): {path!r} is a directory, not a recorded stream")
    if not os.path.exists(path):
        what = "" if isinstance(source, os.PathLike) else " (nor the text of an event stream)"
        raise FileNotFoundError(f"replay(): the file {path!r} does not exist{what}")
    return Path(path)


def _names_a_file(source: str) -> bool:
    return "\n" not in source and len(source) < 4096 and os.path.isfile(source)


def _body_is_recording(body: str | bytes | bytearray | memoryview) -> bool:
    start = body[: len(HEADER_START)]
    return starts_a_recording(start.encode() if isinstance(start, str) else bytes(start))


def is_recording(source: Any) -> bool:
    """Whether ``source`` (a path, bytes or text) is a recording made by
    :func:`~solon_events.recording.record`; a path that names no file is not one."""
    if isinstance(source, (str, os.PathLike)) and _is_file(source):
        with open(source, "rb") as file:
            return starts_a_recording(file.read(len(HEADER_START)))
    if isinstance(source, _BODY_TYPES):
        return _body_is_recording(source)
    return False


def _is_file(source: str | os.PathLike[str]) -> bool:
    return _names_a_file(source) if isinstance(source, str) else os.path.isfile(source)


def read_recorded(
    source: str | os.PathLike[str] | bytes,
) -> tuple[dict[str, Any], tuple[RecordedStep, ...]]:
    """The header and steps of the recording ``source``: a path, its bytes or its text (a
    string that starts with ``{`` and names no file)."""
    if isinstance(source, str) and not _names_a_file(source) and source.startswith("{"):
        return Source(source, None, True).recorded()
    if isinstance(source, (bytes, bytearray, memoryview)):
        return Source(source, None, True).recorded()
    return Source(source, Path(source), True).recorded()


def recording_dialect(header: Mapping[str, Any], frames: Iterable[Any]) -> str | None:
    """The dialect of a recording's ``frames``: the one its ``header`` names, else the
    one the first frames tell, else None."""
    named = header.get("dialect")
    return named if isinstance(named, str) else sniff_dialect(frames)
