"""The recording format: a response's frames with their arrival times, as JSON lines.

Bytes to timed frames (:func:`read_lines`) and back (:func:`frame_line`,
:func:`recording_bytes`); :mod:`solon_events.recording` writes recordings of live responses
and replays them, :mod:`solon_events.sources` tells a recording from the other sources
``replay()`` takes. The format itself is described there, in :mod:`solon_events.recording`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs
import orjson

from ..event_model.errors import ChatProtocolError
from .sse import Frame

__all__ = [
    "FORMAT_KEY",
    "HEADER_START",
    "RecordedStep",
    "RecordedToolResult",
    "frame_line",
    "read_lines",
    "recording_bytes",
    "starts_a_recording",
]

FORMAT_KEY = "solon_events_recording"
"""The header's key; its value is the format's version (1)."""

HEADER_START = b'{"' + FORMAT_KEY.encode() + b'"'
"""How a recording's first line starts."""

_VERSION = 1


@attrs.frozen
class RecordedToolResult:
    """What a tool returned between two steps, and when."""

    at: float
    tool_call_id: str | None
    name: str
    text: str


@attrs.frozen
class RecordedStep:
    """One provider request of a recording: when it was sent, its frames and their arrival
    times, and the tool results that followed it."""

    number: int
    sent_at: float
    frames: tuple[Frame, ...] = ()
    times: tuple[float, ...] = ()
    tool_results: tuple[RecordedToolResult, ...] = ()


def starts_a_recording(start: bytes) -> bool:
    """Whether a body starting with ``start`` (its first ``len(HEADER_START)`` bytes or
    more) is a recording."""
    return start.startswith(HEADER_START)


def read_lines(body: bytes) -> tuple[dict[str, Any], tuple[RecordedStep, ...]]:
    """A recording's header and steps; a line that is wrong raises
    :class:`~solon_events.event_model.errors.ChatProtocolError` naming it."""
    lines = [line for line in body.splitlines() if line.strip()]
    if not lines or not starts_a_recording(lines[0]):
        raise ChatProtocolError(
            f"not a solon-events recording: it must start with {{{FORMAT_KEY!r}"
        )
    header = _load(lines[0], 1)
    if header.get(FORMAT_KEY) != _VERSION:
        raise ChatProtocolError(f"unknown recording version {header.get(FORMAT_KEY)!r}")
    steps: list[RecordedStep] = []
    frames: list[Frame] = []
    times: list[float] = []
    results: list[RecordedToolResult] = []
    number, sent_at, marked = 0, 0.0, False

    def end_step(last: bool = False) -> None:
        if frames or results or marked or (last and not steps):
            steps.append(RecordedStep(number, sent_at, tuple(frames), tuple(times), tuple(results)))
        frames.clear()
        times.clear()
        results.clear()

    for line_number, line in enumerate(lines[1:], start=2):
        entry = _load(line, line_number)
        at = entry.get("t")
        if not isinstance(at, (int, float)):
            raise ChatProtocolError(f"line {line_number} of the recording has no time 't'")
        if "step" in entry:
            end_step()
            number, sent_at, marked = int(entry["step"]), float(at), True
        elif "json" in entry:
            frames.append(Frame(orjson.dumps(entry["json"]).decode(), entry.get("event")))
            times.append(float(at))
        elif "data" in entry:
            frames.append(Frame(str(entry["data"]), entry.get("event")))
            times.append(float(at))
        elif isinstance(entry.get("tool_result"), dict):
            result = entry["tool_result"]
            results.append(
                RecordedToolResult(
                    float(at),
                    result.get("tool_call_id"),
                    str(result.get("name") or ""),
                    str(result.get("text") or ""),
                )
            )
        else:
            raise ChatProtocolError(
                f"line {line_number} of the recording is neither a step, a frame nor a tool result"
            )
    end_step(last=True)
    return header, tuple(steps)


def _load(line: bytes, number: int) -> dict[str, Any]:
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise ChatProtocolError(f"line {number} of the recording is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ChatProtocolError(f"line {number} of the recording is not a JSON object")
    return value


def frame_line(at: float, frame: Frame | str | bytes) -> dict[str, Any]:
    """One frame's line, as a dict (a frame of bytes, e.g. an AWS event-stream message's, is
    read as UTF-8 text)."""
    if isinstance(frame, bytes):
        frame = frame.decode("utf-8", "replace")
    data, event = (frame.data, frame.event) if isinstance(frame, Frame) else (frame, None)
    entry: dict[str, Any] = {"t": at}
    if event:
        entry["event"] = event
    try:
        payload = orjson.loads(data)
    except orjson.JSONDecodeError:
        payload = None
    if isinstance(payload, (dict, list)):
        entry["json"] = payload
    else:
        entry["data"] = data
    return entry


def recording_bytes(lines: Iterable[Mapping[str, Any]], header: Mapping[str, Any]) -> bytes:
    """A recording: a header holding ``header``, then ``lines`` (step, frame and tool-result
    lines as dicts, each with its time ``t``, rounded here to microseconds)."""
    out = [orjson.dumps({FORMAT_KEY: _VERSION, **header})]
    out += [orjson.dumps({**line, "t": round(float(line["t"]), 6)}) for line in lines]
    return b"\n".join(out) + b"\n"
