"""What replay() is given (#13.4): a path that names no file fails at the call, and a stream
read in the wrong dialect says which one it is in; ``dialect="auto"`` (the default) tells
the dialect from the first frames."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
import pytest
from outcomes import outcome_of
from recorded import CORPUS, CORPUS_DIALECTS, DIALECTS, needs_corpus, text_body

from solon_events import (
    ChatDialect,
    ChatEvent,
    ChatEventFilter,
    ChatEventType,
    ChatModel,
    ChatProtocolError,
    replay,
)
from solon_events.client.transport import ReplayTransport
from solon_events.devserver.server import load_recording
from solon_events.dialects.sniff import SNIFF_FRAMES, sniff_dialect
from solon_events.recording import FORMAT_KEY
from solon_events.sources import tell_source
from solon_events.wire.eventstream import event_message, iter_event_stream_frames
from solon_events.wire.sse import iter_frames

T = ChatEventType
CORPUS_FILES = sorted(CORPUS.glob("*/*.jsonl")) if CORPUS.is_dir() else []


def run(source: Any, **options: Any) -> tuple[list[ChatEvent], list[BaseException]]:
    events: list[ChatEvent] = []
    errors: list[BaseException] = []
    replay(source, event_filter=ChatEventFilter.all(), **options).subscribe(
        events.append, errors.append
    )
    return events, errors


def kinds(events: list[ChatEvent]) -> list[tuple[Any, ...]]:
    return [(e.type, e.text, e.tool_call_id) for e in events]


# --- a path that names no file


def test_a_string_naming_no_file_says_the_file_does_not_exist(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError, match=r"the file 'missing\.jsonl' does not exist"):
        replay("missing.jsonl")


def test_a_missing_path_fails_at_the_call(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist") as caught:
        replay(tmp_path / "absent.sse")
    assert "absent.sse" in str(caught.value)


@pytest.mark.parametrize("as_path", [True, False])
def test_a_directory_fails_at_the_call(tmp_path: Path, as_path: bool) -> None:
    with pytest.raises(IsADirectoryError, match="is a directory"):
        replay(tmp_path if as_path else str(tmp_path))


def test_a_string_holding_one_frame_is_still_its_text() -> None:
    frame = orjson.dumps(
        {"type": "message_start", "message": {"id": "m", "model": "c", "content": []}}
    ).decode()
    for text in ("data: " + frame, frame):
        _events, errors = run(text, dialect="anthropic")
        assert isinstance(errors[0], ChatProtocolError)  # read as a stream, cut after it
        assert "truncated" in str(errors[0])


def test_a_file_read_by_its_string_path_replays(tmp_path: Path) -> None:
    path = tmp_path / "answer.sse"
    path.write_bytes(text_body("openai", "Hi"))
    events, errors = run(str(path))
    assert not errors and events[-1].response is not None and events[-1].response.text == "Hi"


# --- the wrong dialect


def other_dialects(dialect: str) -> list[tuple[str, str]]:
    return [(dialect, other) for other in DIALECTS if other != dialect]


@pytest.mark.parametrize(
    ("dialect", "wrong"), [pair for d in DIALECTS for pair in other_dialects(d)]
)
def test_a_stream_replayed_in_the_wrong_dialect_says_which_it_is_in(
    dialect: str, wrong: str
) -> None:
    events, errors = run(text_body(dialect, "Hello"), dialect=wrong)
    (error,) = errors
    assert isinstance(error, ChatProtocolError)
    assert str(error).endswith(f'looks like {dialect} frames: pass dialect="{dialect}"'), error
    assert "truncated" not in str(error), error  # the frames are whole, of another dialect
    assert events[-1].type is T.ERROR


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_stream_cut_in_its_own_dialect_gets_no_hint(dialect: str) -> None:
    body = text_body(dialect, "Hello")
    cut = body[: len(body) // 2]
    _events, errors = run(cut, dialect=dialect)
    assert errors and "looks like" not in str(errors[0])


def test_a_response_received_in_the_wrong_dialect_says_which_it_is_in() -> None:
    transport = ReplayTransport(text_body("anthropic", "Hello"))
    with ChatModel("http://recorded/v1/chat/completions", "m", transport=transport) as model:
        outcome = outcome_of(model.prompt("hi"))
    assert isinstance(outcome.error, ChatProtocolError)
    assert 'looks like anthropic frames: pass dialect="anthropic"' in str(outcome.error)


# --- dialect="auto"


@pytest.mark.parametrize("dialect", DIALECTS)
def test_auto_is_the_default_and_tells_every_dialect(dialect: str) -> None:
    body = text_body(dialect, "Hel", "lo")
    told, _ = run(body)
    given, _ = run(body, dialect=dialect)
    assert kinds(told) == kinds(given)
    assert told[-1].type is T.RESPONSE_END and told[-1].response is not None
    assert told[-1].response.text == "Hello"
    binary = dialect == "bedrock"  # AWS event-stream messages, not SSE
    assert sniff_dialect(iter_event_stream_frames(body) if binary else iter_frames(body)) == dialect


@needs_corpus
def test_auto_tells_the_dialect_of_every_recorded_corpus_stream() -> None:
    for path in CORPUS_FILES:
        want = CORPUS_DIALECTS[path.parent.name]
        assert sniff_dialect(iter_frames(path.read_bytes())) == want, path
        told, told_errors = run(path)
        given, given_errors = run(path, dialect=want)
        assert kinds(told) == kinds(given), path
        assert [type(e) for e in told_errors] == [type(e) for e in given_errors], path


def test_frames_that_do_not_tell_are_read_as_openai() -> None:
    odd = [{"id": "x"}] * (SNIFF_FRAMES + 2)
    assert sniff_dialect(odd) is None
    _events, errors = run(odd)
    assert "'openai'" in str(errors[0]) or "truncated" in str(errors[0])


def test_auto_takes_no_more_frames_than_it_needs() -> None:
    taken: list[int] = []
    chunks = [orjson.loads(line[len("data: ") :]) for line in _data_lines("openai")]

    def frames() -> Any:
        for number, frame in enumerate(chunks):
            taken.append(number)
            yield frame

    _events, errors = run(frames())
    assert not errors and taken == list(range(len(chunks)))  # each frame read once


def _data_lines(dialect: str) -> list[bytes]:
    body = text_body(dialect, "Hi")
    return [line for line in body.splitlines() if line.startswith(b"data: {")]


def test_a_source_failing_while_sniffed_fails_after_the_frames_before() -> None:
    chunks = [orjson.loads(line[len("data: ") :]) for line in _data_lines("openai")]

    def frames() -> Any:
        yield {"id": "nothing to tell"}
        yield chunks[0]
        raise OSError("disk gone")

    events, errors = run(frames())
    assert [type(e) for e in errors] == [OSError]
    assert events[-2].type is T.STEP_END


def test_a_recording_without_a_dialect_is_told_by_its_frames(tmp_path: Path) -> None:
    lines = [orjson.dumps({FORMAT_KEY: 1})]
    lines += [
        orjson.dumps({"t": 0.01 * n, "json": orjson.loads(line[len("data: ") :])})
        for n, line in enumerate(_data_lines("anthropic"))
    ]
    path = tmp_path / "rec.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    events, errors = run(path)
    assert not errors and events[-1].response is not None
    assert events[-1].response.text == "Hi"


def test_a_dialect_of_ones_own_claims_nothing_unless_it_says() -> None:
    class Mine(ChatDialect):
        name = "mine"

    assert not Mine().claims({"choices": []})
    assert os.fspath(CORPUS)  # the corpus path is computed once, in tests/recorded.py


# --- one module tells a source: solon_events.sources


def recording_of(dialect: str, header_dialect: str | None) -> bytes:
    header = {FORMAT_KEY: 1, **({"dialect": header_dialect} if header_dialect else {})}
    lines = [orjson.dumps(header), orjson.dumps({"t": 0.0, "step": 0})]
    lines += [
        orjson.dumps({"t": 0.01 * n, "json": orjson.loads(line[len("data: ") :])})
        for n, line in enumerate(_data_lines(dialect))
    ]
    return b"\n".join(lines) + b"\n"


def source_kinds(tmp_path: Path) -> dict[str, tuple[Any, str, bool]]:
    """Every kind of source replay() takes: (the source, its dialect, whether a recording)."""
    sse_file = tmp_path / "answer.sse"
    sse_file.write_bytes(text_body("anthropic", "Hi"))
    recording_file = tmp_path / "answer.jsonl"
    recording_file.write_bytes(recording_of("gemini", "gemini"))
    return {
        "a path object": (sse_file, "anthropic", False),
        "a string naming a file": (str(sse_file), "anthropic", False),
        "SSE text": (text_body("openai", "Hi").decode(), "openai", False),
        "JSON lines bytes": (text_body("ollama", "Hi"), "ollama", False),
        "AWS event-stream bytes": (text_body("bedrock", "Hi"), "bedrock", False),
        "a recording's path": (recording_file, "gemini", True),
        "a recording's bytes": (recording_of("cohere", "cohere"), "cohere", True),
        "a recording's text": (recording_of("openai", "openai").decode(), "openai", True),
        "a recording naming no dialect": (recording_of("anthropic", None), "anthropic", True),
        "an iterable of frames": (
            [orjson.loads(line[len("data: ") :]) for line in _data_lines("cohere")],
            "cohere",
            False,
        ),
    }


def test_every_kind_of_source_is_told_apart_and_read_as_frames_and_its_dialect(
    tmp_path: Path,
) -> None:
    for kind, (given, dialect, recording) in source_kinds(tmp_path).items():
        told = tell_source(given)
        assert told.is_recording is recording, kind
        frames, told_dialect, error = told.read()
        frames = list(frames)
        assert error is None and told_dialect == dialect, kind
        assert frames and sniff_dialect(frames) == dialect, kind
        assert list(told.read(tell_dialect=False).frames) == frames, kind  # read again, alike
        events, errors = run(given)
        assert not errors and events[-1].response is not None, kind
        assert events[-1].response.text == "Hi", kind


def test_a_file_source_is_read_anew_each_time(tmp_path: Path) -> None:
    path = tmp_path / "answer.sse"
    path.write_bytes(text_body("openai", "Hi"))
    told = tell_source(path)
    first = list(told.read().frames)
    path.write_bytes(text_body("anthropic", "Hi"))
    second, dialect, _error = told.read()
    assert dialect == "anthropic" and list(second) != first


def test_reading_a_source_returns_its_error_after_the_frames_before_it() -> None:
    # AWS event-stream messages: one that tells no dialect, then one cut short
    body = event_message("ping", {"p": 1}) + text_body("bedrock", "Hi")[:20]
    frames, dialect, error = tell_source(body).read()
    assert isinstance(error, ChatProtocolError) and dialect is None
    assert [orjson.loads(frame) for frame in frames] == [{"ping": {"p": 1}}]
    _events, errors = run(body)
    assert [str(e) for e in errors] == [str(error)]


def test_a_file_removed_after_it_was_told_fails_when_read(tmp_path: Path) -> None:
    path = tmp_path / "answer.sse"
    path.write_bytes(text_body("openai", "Hi"))
    told, replayed = tell_source(path), replay(path)
    path.unlink()
    frames, _dialect, error = told.read()
    assert isinstance(error, FileNotFoundError) and list(frames) == []
    errors: list[BaseException] = []
    replayed.subscribe(lambda _event: None, errors.append)
    assert isinstance(errors[0], FileNotFoundError)


def test_what_is_no_source_is_refused_at_the_call() -> None:
    with pytest.raises(TypeError, match="not int"):
        tell_source(5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not int"):
        replay(5)  # type: ignore[arg-type]


def test_the_embedded_provider_replays_every_kind_of_body(tmp_path: Path) -> None:
    for dialect in ("openai", "bedrock"):
        path = tmp_path / f"{dialect}.body"
        path.write_bytes(text_body(dialect, "Hi"))
        payloads = load_recording(path)
        assert payloads and all(not isinstance(p, bytes) for p in payloads), dialect
        assert sniff_dialect(payloads) == dialect
    path = tmp_path / "recording.jsonl"
    path.write_bytes(recording_of("anthropic", "anthropic"))
    payloads = [orjson.loads(line)["json"] for line in path.read_bytes().splitlines()[2:]]
    assert load_recording(path) == payloads and len(payloads) > 3
