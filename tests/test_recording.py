"""Recordings: ``solon-events record`` and ``recording.record`` against the embedded provider,
replayed to the same response, with arrival times the timeline can use."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from reactivex import operators as ops

from solon_events import ChatEventType, ChatModel, ChatProtocolError, ProviderError, replay, tool
from solon_events.cli import ROUTES, main
from solon_events.devserver import DevServer, RunningServer
from solon_events.recording import (
    RECEIVED_AT,
    is_recording,
    read_recording,
    record,
    write_recording,
)
from solon_events.wire.sse import Frame

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "recordings"
DIALECTS = tuple(ROUTES)
T = ChatEventType


@tool
def get_weather(city: str) -> str:
    """Current weather in a city.

    Args:
        city: The city's name.
    """
    return "18°C and sunny"


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    with DevServer.run_in_thread(pace=0.002) as running:
        yield running


def events_of(source: object, **options: object) -> list:
    return replay(source, **options).pipe(ops.to_list()).run()  # type: ignore[arg-type]


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_recorded_tool_loop_replays_to_the_same_response(
    server: RunningServer, tmp_path: Path, dialect: str
) -> None:
    out = tmp_path / "loop.jsonl"
    seen: list[ChatEventType] = []
    with ChatModel(server.url + ROUTES[dialect], "weather", dialect=dialect) as model:
        live = record(
            model.prompt("Weather in Paris?").tools(get_weather),
            out,
            on_event=lambda e: seen.append(e.type),
        )
    assert live.text == "It is 18°C and sunny in Paris right now."
    assert seen[0] is T.RESPONSE_START and seen[-1] is T.RESPONSE_END

    recording = read_recording(out)
    assert recording.dialect == dialect
    assert [step.number for step in recording.steps] == [0, 1]
    assert [r.text for r in recording.steps[0].tool_results] == ["18°C and sunny"]

    events = events_of(out, dialect="auto")
    assert events[-1].type is T.RESPONSE_END
    assert events[-1].response == live
    assert events[-1].usage == live.usage
    results = [e for e in events if e.type is T.TOOL_RESULT]
    assert [(r.text, r.tool_call.name, r.step) for r in results] == [
        ("18°C and sunny", "get_weather", 0)
    ]
    kinds = [e.type for e in events if e.step == 0]
    assert kinds.index(T.TOOL_RESULT) == kinds.index(T.STEP_END) - 1


def test_replayed_events_carry_the_arrival_times(server: RunningServer, tmp_path: Path) -> None:
    out = tmp_path / "times.jsonl"
    with ChatModel(server.url + ROUTES["openai"], "slow:5:0.05") as model:
        record(model.prompt("count"), out)
    recording = read_recording(out)
    times = recording.times
    assert times == tuple(sorted(times))
    # five deltas, 50 ms apart: the recording spans at least the four gaps between them
    assert times[-1] - times[0] >= 0.2 - 0.01

    events = events_of(out, dialect="auto")
    stamps = [e.attrs[RECEIVED_AT] for e in events]
    assert stamps == sorted(stamps)
    assert events[0].type is T.RESPONSE_START and stamps[0] == 0.0
    deltas = [e.attrs[RECEIVED_AT] for e in events if e.type is T.TEXT_DELTA]
    assert len(deltas) == 5
    assert set(deltas) <= set(times)
    assert deltas[-1] - deltas[0] >= 0.2 - 0.01


def test_the_record_command_then_replay(
    server: RunningServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "cli.jsonl"
    url = server.url + ROUTES["anthropic"]
    argv = ["record", "--url", url, "--model", "echo", "--dialect", "anthropic"]
    assert main([*argv, "--out", str(out), "hello from the command line"]) == 0
    printed = capsys.readouterr().out
    assert "hello from the command line" in printed
    assert f"to {out}" in printed

    header = orjson.loads(out.read_bytes().splitlines()[0])
    assert header["prompt"] == "hello from the command line"
    assert header["model"] == "echo" and header["dialect"] == "anthropic"
    events = events_of(out, dialect="auto")
    assert events[-1].response.text == "hello from the command line"

    assert main(["replay", str(out), "--dialect", "anthropic", "--format", "jsonl"]) == 0
    lines = [orjson.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert lines[-1]["type"] == "RESPONSE_END"


def test_a_failed_response_is_recorded_and_replays_to_the_same_failure(
    server: RunningServer, tmp_path: Path
) -> None:
    out = tmp_path / "failed.jsonl"
    model = ChatModel(server.url + ROUTES["openai"], "error-frame")
    with model, pytest.raises(ProviderError) as live:
        record(model.prompt("hi"), out)
    assert len(read_recording(out).frames) >= 3
    errors: list[Exception] = []
    events = replay(out, dialect="auto").pipe(ops.to_list())
    events.subscribe(on_error=errors.append)
    assert [type(e) for e in errors] == [ProviderError]
    assert str(errors[0]) == str(live.value)
    assert errors[0].partial_response.text == "Partial answer"


def test_the_api_key_is_not_recorded(server: RunningServer, tmp_path: Path) -> None:
    out = tmp_path / "key.jsonl"
    secret = "sk-recording-SECRET-42"
    url = server.url + ROUTES["openai"] + "?key=" + secret
    with ChatModel(url, "echo", api_key=secret) as model:
        record(model.prompt("hi"), out)
    assert secret not in out.read_text()


@pytest.mark.parametrize("dialect", DIALECTS)
def test_an_echoed_key_is_not_recorded(server: RunningServer, tmp_path: Path, dialect: str) -> None:
    """The provider quotes the key in an error frame (#29.16): the recording keeps the frame,
    the key masked, and replays to the same (masked) failure."""
    out = tmp_path / "echo.jsonl"
    secret = "sk-recording-SECRET-0123456789"
    url = server.url + ROUTES[dialect]
    model = ChatModel(url, "echo-key:frame", dialect=dialect, api_key=secret)
    with model, pytest.raises(ProviderError) as live:
        record(model.prompt("hi"), out)
    written = out.read_bytes()
    assert secret.encode() not in written and b"sk-recording" not in written
    assert b"Incorrect API key provided: ***" in written
    errors: list[Exception] = []
    replay(out, dialect="auto").subscribe(on_error=errors.append)
    assert [str(e) for e in errors] == [str(live.value)]


def test_frames_round_trip_through_the_file(tmp_path: Path) -> None:
    out = tmp_path / "hand.jsonl"
    lines = [
        {"t": 0.0, "step": 0},
        {"t": 0.5, "json": {"a": [1, "é"]}, "event": "message_delta"},
        {"t": 0.75, "data": "[DONE]"},
        {"t": 0.8, "data": '"a JSON string"'},
    ]
    write_recording(out, lines, dialect="openai")
    assert is_recording(out) and is_recording(str(out)) and is_recording(out.read_bytes())
    recording = read_recording(out)
    assert recording.frames == (
        Frame('{"a":[1,"é"]}', "message_delta"),
        Frame("[DONE]"),
        Frame('"a JSON string"'),
    )
    assert recording.times == (0.5, 0.75, 0.8)
    assert read_recording(out.read_text()) == recording


def test_plain_json_lines_are_not_taken_for_a_recording(tmp_path: Path) -> None:
    plain = tmp_path / "plain.jsonl"
    plain.write_text('{"type": "message_stop"}\n')
    assert not is_recording(plain)
    assert not is_recording(tmp_path / "missing.jsonl")
    assert not is_recording([b"{}"])


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (b"not json", "line 2 of the recording is not JSON"),
        (b'{"json": {}}', "line 2 of the recording has no time 't'"),
        (b'{"t": 1, "other": 2}', "line 2 of the recording is neither"),
        (b"[1]", "line 2 of the recording is not a JSON object"),
    ],
)
def test_a_malformed_recording_fails_naming_its_line(line: bytes, message: str) -> None:
    body = b'{"solon_events_recording": 1, "dialect": "openai"}\n' + line + b"\n"
    with pytest.raises(ChatProtocolError, match=message):
        read_recording(body)
    errors: list[Exception] = []
    replay(body).subscribe(on_error=errors.append)
    assert len(errors) == 1 and message in str(errors[0])


def test_a_recording_of_no_frame_fails_as_an_empty_stream() -> None:
    errors: list[Exception] = []
    replay(b'{"solon_events_recording": 1, "dialect": "openai"}\n').subscribe(
        on_error=errors.append
    )
    assert [type(e) for e in errors] == [ChatProtocolError]


def test_an_unknown_version_is_refused() -> None:
    with pytest.raises(ChatProtocolError, match="unknown recording version 2"):
        read_recording(b'{"solon_events_recording": 2}\n')


EXAMPLE_ANSWERS = {
    "text-openai.jsonl": "Streams arrive one small delta at a time.",
    "tool-loop-openai.jsonl": "It is 18°C and sunny in Paris right now.",
    "thinking-anthropic.jsonl": "The sky looks blue because",
}


def test_the_example_recordings_replay() -> None:
    assert sorted(p.name for p in EXAMPLES.glob("*.jsonl")) == sorted(EXAMPLE_ANSWERS)
    for name, answer in EXAMPLE_ANSWERS.items():
        events = events_of(EXAMPLES / name, dialect="auto")
        assert events[-1].type is T.RESPONSE_END, name
        assert events[-1].response.text.startswith(answer), name
        assert all(RECEIVED_AT in e.attrs for e in events), name
    thinking = events_of(EXAMPLES / "thinking-anthropic.jsonl", dialect="auto")[-1].response
    assert thinking.thinking.startswith("The user asks why the sky is blue.")


def test_the_devserver_serves_a_recording(tmp_path: Path) -> None:
    with DevServer.run_in_thread(recording=EXAMPLES / "text-openai.jsonl") as running:
        model = ChatModel(running.url + ROUTES["openai"], "replay")
        with model:
            assert model.prompt("hi").call().text == EXAMPLE_ANSWERS["text-openai.jsonl"]
