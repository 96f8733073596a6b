"""A bounded fuzz of every dialect (#13.6): real bodies (the embedded provider's and the
recorded corpus's) with their frames mutated, dropped, repeated or swapped, or the bytes cut
at any point or flipped. Whatever comes in, only a ChatError ever reaches on_error, and the
stream ends with exactly one terminal event (RESPONSE_END or ERROR), last, that matches how
the subscription ended. A few seconds per dialect."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from recorded import CORPUS, CORPUS_DIALECTS, DIALECTS, body_of, text_body, weather_bodies
from sdk_oracles import RECORDING_DIALECTS, recording_paths

from solon_events import ChatError, ChatEvent, ChatEventFilter, ChatEventType, replay
from solon_events.devserver.scenarios import ERROR_FRAME_MESSAGE
from solon_events.devserver.turns import Script, StreamError, Text, TurnUsage
from solon_events.wire.sse import Frame, iter_frames

T = ChatEventType
CORPUS_FOLDERS = {dialect: folder for folder, dialect in CORPUS_DIALECTS.items()}
FUZZ = settings(
    max_examples=120,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def seeds(dialect: str) -> list[bytes]:
    """Whole, valid bodies of ``dialect``: text, a tool call with thinking, an error frame
    (each as the embedded provider sends it, for a dialect it speaks), and the recordings of
    it (the shared corpus's, the public ones in tests/recordings)."""
    bodies = []
    if dialect in DIALECTS:
        error = Script([Text("Partial"), StreamError(ERROR_FRAME_MESSAGE)], TurnUsage(10, 2))
        bodies += [
            text_body(dialect, "Hel", "lo"),
            *weather_bodies(dialect, "18C"),
            body_of(dialect, error),
        ]
    folder = CORPUS / CORPUS_FOLDERS.get(dialect, "-")
    if folder.is_dir():
        bodies += [path.read_bytes() for path in sorted(folder.glob("*.jsonl"))]
    for name, recorded_dialect in RECORDING_DIALECTS.items():
        if recorded_dialect == dialect:
            bodies += [path.read_bytes() for path in recording_paths(name)]
    return bodies


FUZZED = (*DIALECTS, *(d for d in RECORDING_DIALECTS.values() if d not in DIALECTS))
"""The embedded provider's dialects, and those known only from recordings."""
SEEDS = {dialect: seeds(dialect) for dialect in FUZZED}
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)


def paths(value: Any, here: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a JSON value, the value itself first."""
    found = [here]
    if isinstance(value, dict):
        for key, item in value.items():
            found += paths(item, (*here, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += paths(item, (*here, index))
    return found


def replaced(value: Any, path: tuple[Any, ...], new: Any, delete: bool) -> Any:
    """``value`` with the place ``path`` holding ``new``, or deleted."""
    if not path:
        return new
    head, rest = path[0], path[1:]
    copy: Any = dict(value) if isinstance(value, dict) else list(value)
    if delete and not rest:
        del copy[head]
    else:
        copy[head] = replaced(value[head], rest, new, delete)
    return copy


def encode(frames: list[Frame], jsonl: bool) -> bytes:
    if jsonl:
        return b"".join(frame.data.encode() + b"\n" for frame in frames)
    out = []
    for frame in frames:
        event = f"event: {frame.event}\n" if frame.event else ""
        out.append(f"{event}data: {frame.data}\n\n".encode())
    return b"".join(out)


@st.composite
def mutated_bodies(draw: st.DrawFn, dialect: str) -> bytes:
    body = draw(st.sampled_from(SEEDS[dialect]))
    jsonl = body.lstrip()[:1] in (b"{", b"[")
    frames = list(iter_frames(body))
    for _ in range(draw(st.integers(1, 4))):
        if not frames:
            break
        at = draw(st.integers(0, len(frames) - 1))
        kind = draw(st.sampled_from(["value", "delete", "drop", "repeat", "swap", "garble"]))
        frame = frames[at]
        if kind in ("value", "delete"):
            try:
                payload = orjson.loads(frame.data)
            except orjson.JSONDecodeError:
                continue
            where = draw(st.sampled_from(paths(payload)))
            delete = kind == "delete" and bool(where)
            new = None if delete else draw(JSON_VALUES)
            # json writes what orjson cannot (integers past 64 bits, NaN): odd input too
            data = json.dumps(replaced(payload, where, new, delete), ensure_ascii=False)
            frames[at] = Frame(data, frame.event)
        elif kind == "drop":
            del frames[at]
        elif kind == "repeat":
            frames.insert(at, frame)
        elif kind == "swap":
            other = draw(st.integers(0, len(frames) - 1))
            frames[at], frames[other] = frames[other], frame
        else:
            cut = draw(st.integers(0, len(frame.data)))
            frames[at] = Frame(frame.data[:cut] + draw(st.text(max_size=3)), frame.event)
    return encode(frames, jsonl)


@st.composite
def damaged_bytes(draw: st.DrawFn, dialect: str) -> bytes:
    body = draw(st.sampled_from(SEEDS[dialect]))
    if draw(st.booleans()):
        return body[: draw(st.integers(0, len(body)))]  # cut at any byte
    at = draw(st.integers(0, len(body) - 1))
    return body[:at] + bytes([draw(st.integers(0, 255))]) + body[at + 1 :]


def check(body: bytes, dialect: str) -> None:
    events: list[ChatEvent] = []
    errors: list[BaseException] = []
    completed: list[bool] = []
    replay(body, dialect=dialect, event_filter=ChatEventFilter.all()).subscribe(
        events.append, errors.append, lambda: completed.append(True)
    )
    assert all(isinstance(error, ChatError) for error in errors), errors
    assert len(errors) + len(completed) == 1
    terminal = [event for event in events if event.type in (T.RESPONSE_END, T.ERROR)]
    assert len(terminal) == 1 and events[-1] is terminal[0]
    assert (terminal[0].type is T.ERROR) == bool(errors)
    if errors:
        assert terminal[0].error is errors[0]


# Frame mutations work on SSE / JSON-lines frames; Bedrock's binary framing is fuzzed by the
# byte damage below and against botocore in tests/test_eventstream.py.
TEXT_FRAMED = [dialect for dialect in FUZZED if dialect != "bedrock"]


@pytest.mark.parametrize("dialect", TEXT_FRAMED)
@FUZZ
@given(data=st.data())
def test_mutated_frames_fail_only_with_chat_error(dialect: str, data: st.DataObject) -> None:
    check(data.draw(mutated_bodies(dialect)), dialect)


@pytest.mark.parametrize("dialect", FUZZED)
@FUZZ
@given(data=st.data())
def test_bytes_cut_or_flipped_anywhere_fail_only_with_chat_error(
    dialect: str, data: st.DataObject
) -> None:
    check(data.draw(damaged_bytes(dialect)), dialect)


@pytest.mark.parametrize("dialect", FUZZED)
def test_the_seeds_themselves_end_as_recorded(dialect: str) -> None:
    for body in SEEDS[dialect]:
        check(body, dialect)
