"""The ``solon-events`` command: demo, replay and stream, in-process and as a subprocess."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from solon_events.cli import main
from solon_events.devserver import DevServer, RunningServer

ROOT = Path(__file__).resolve().parent.parent
SECRET = "sk-test-SECRET-123"
DIALECTS = ("openai", "anthropic", "openai-responses", "gemini", "ollama")
THINKING = "The user wants the weather in Paris. I should call get_weather."
TOOL_CALL = 'tool call get_weather({"city":"Paris"})'
TOOL_RESULT = "get_weather returned: 18°C and sunny"
ANSWER = "It is 18°C and sunny in Paris right now."
TOTAL = "total usage: prompt 122, completion 29, total 151"
REPORT_PROMPT = "user: Write the quarterly report."
REPORT_CALL = 'tool call write_report({"title":'
REPORT_RESULT = "write_report returned: 3 sections saved"

# An Anthropic Messages stream (one JSON payload per line), after the public streaming
# reference: message_start, a ping, one text block, message_delta, message_stop.
ANTHROPIC_RECORDING = [
    {
        "type": "message_start",
        "message": {
            "id": "msg_01",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 12, "output_tokens": 1},
        },
    },
    {"type": "ping"},
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hello"}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": " there"}},
    {"type": "content_block_stop", "index": 0},
    {
        "type": "message_delta",
        "delta": {"stop_reason": "end_turn", "stop_sequence": None},
        "usage": {"output_tokens": 6},
    },
    {"type": "message_stop"},
]


@pytest.fixture(autouse=True)
def wide_console(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rich wraps at COLUMNS; keep every rendered line whole."""
    monkeypatch.setenv("COLUMNS", "200")


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    running = DevServer.run_in_thread()
    yield running
    running.close()


def recording(tmp_path: Path, payloads: list[dict[str, object]]) -> Path:
    path = tmp_path / "recording.jsonl"
    path.write_bytes(b"\n".join(orjson.dumps(p) for p in payloads) + b"\n")
    return path


PROGRESS = [f"get_weather: asked station {n} of 3 [{n}/3]" for n in (1, 2, 3)]


def assert_demo_output(out: str) -> None:
    for expected in (THINKING, TOOL_CALL, *PROGRESS, TOOL_RESULT, ANSWER, TOTAL):
        assert expected in out, f"{expected!r} missing from:\n{out}"
    assert out.index(THINKING) < out.index(TOOL_CALL) < out.index(PROGRESS[0])
    assert out.index(PROGRESS[0]) < out.index(PROGRESS[1]) < out.index(PROGRESS[2])
    assert out.index(PROGRESS[2]) < out.index(TOOL_RESULT)
    assert re.search(re.escape(TOOL_RESULT) + r"  \(\d+ ms\)\n", out), out
    assert out.index(TOOL_RESULT) < out.index(ANSWER) < out.index(TOTAL)
    assert "step 0 usage: prompt 42, completion 17, total 59" in out
    assert "step 1 usage: prompt 80, completion 12, total 92" in out
    report = out.index(REPORT_PROMPT)  # the second conversation: a long argument
    assert out.index(TOTAL) < report < out.index(REPORT_CALL) < out.index(REPORT_RESULT)
    assert out.index(REPORT_RESULT) < out.index("The report is written (3 sections saved).")


# --------------------------------------------------------------------------- demo


def test_demo_in_process(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo"]) == 0
    assert_demo_output(capsys.readouterr().out)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_demo_in_each_dialect(capsys: pytest.CaptureFixture[str], dialect: str) -> None:
    assert main(["demo", "--dialect", dialect]) == 0
    out = capsys.readouterr().out
    assert f"embedded {dialect} provider" in out
    assert_demo_output(out)


def run_demo(*args: str, **env: str) -> subprocess.CompletedProcess[bytes]:
    """``solon-events demo ARGS`` in a process of its own, with ``env`` added."""
    env = {**os.environ, "COLUMNS": "200", "PYTHONPATH": str(ROOT), **env}
    done = subprocess.run(
        [sys.executable, "-m", "solon_events.cli", "demo", *args],
        capture_output=True,
        timeout=60,
        cwd=ROOT,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    return done


def test_demo_as_a_subprocess() -> None:
    done = run_demo()
    assert_demo_output(done.stdout.decode("utf-8"))
    assert b"Traceback" not in done.stderr


def test_demo_on_a_terminal_draws_the_long_argument_growing() -> None:
    out = run_demo("--dialect", "anthropic", LINES="300", FORCE_COLOR="1").stdout.decode()
    drawn = [
        re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\r", "", text).split("\n", 1)[1]
        for text in out.split("… tool call write_report(")[1:]
    ]
    assert len(drawn) >= 3  # redrawn every 0.1 s while the argument streams (about 2 s)
    headings = [text.split("→ tool call")[0].count('"heading"') for text in drawn]
    assert headings == sorted(headings) and headings[0] < headings[-1] == 3
    assert_demo_output(re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out))


def test_unknown_dialect_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["demo", "--dialect", "nope"])
    assert exited.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


# --------------------------------------------------------------------------- replay


def test_replay_jsonl(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = recording(tmp_path, ANTHROPIC_RECORDING)
    assert main(["replay", str(path), "--dialect", "anthropic", "--format", "jsonl"]) == 0
    lines = capsys.readouterr().out.splitlines()
    events = [orjson.loads(line) for line in lines]
    types = [e["type"] for e in events]
    assert types[0] == "RESPONSE_START" and types[-1] == "RESPONSE_END"
    assert "HEARTBEAT" not in types
    assert [e["text"] for e in events if e["type"] == "TEXT_DELTA"] == ["Hello", " there"]
    end = events[-1]
    assert end["response"]["text"] == "Hello there"
    assert end["usage"]["prompt_tokens"] == 12 and end["usage"]["completion_tokens"] == 6
    assert end["response"]["finish_reason"] == "end_turn"


def test_replay_all_shows_more_events(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(recording(tmp_path, ANTHROPIC_RECORDING))
    assert main(["replay", path, "--dialect", "anthropic", "--format", "jsonl"]) == 0
    default = [orjson.loads(line)["type"] for line in capsys.readouterr().out.splitlines()]
    assert main(["replay", path, "--dialect", "anthropic", "--format", "jsonl", "--all"]) == 0
    everything = [orjson.loads(line)["type"] for line in capsys.readouterr().out.splitlines()]
    assert len(everything) > len(default)
    assert "HEARTBEAT" in everything
    assert [t for t in everything if t != "HEARTBEAT"] == default


def test_replay_pretty(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = recording(tmp_path, ANTHROPIC_RECORDING)
    assert main(["replay", str(path), "--dialect", "anthropic"]) == 0
    out = capsys.readouterr().out
    assert "TEXT_DELTA" in out and "'Hello'" in out
    assert out.strip().splitlines()[-1].startswith("ChatEvent(RESPONSE_END")


def test_replay_of_a_truncated_recording_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = recording(tmp_path, ANTHROPIC_RECORDING[:5])
    assert main(["replay", str(path), "--dialect", "anthropic", "--format", "jsonl"]) == 1
    captured = capsys.readouterr()
    types = [orjson.loads(line)["type"] for line in captured.out.splitlines()]
    assert types[-1] == "ERROR" and "RESPONSE_END" not in types
    assert "failed:" in captured.err and "truncated" in captured.err


def test_replay_of_a_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(tmp_path / "absent.jsonl")]) == 2
    assert "no such file" in capsys.readouterr().out


# --------------------------------------------------------------------------- stream


def test_stream_reads_the_key_from_the_environment(
    server: RunningServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    before = len(server.requests)
    url = server.url + "/v1/chat/completions"
    assert main(["stream", "--url", url, "--model", "echo", "streamed from the CLI"]) == 0
    out = capsys.readouterr().out
    assert "streamed from the CLI" in out and "total usage" in out
    assert SECRET not in out
    (request,) = server.requests[before:]
    assert request.headers["Authorization"] == f"Bearer {SECRET}"


def test_stream_with_a_named_key_variable(
    server: RunningServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MY_PROVIDER_KEY", SECRET)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    before = len(server.requests)
    url = server.url + "/v1/messages"
    args = ["stream", "--url", url, "--model", "echo", "--dialect", "anthropic"]
    assert main([*args, "--api-key-env", "MY_PROVIDER_KEY", "hello anthropic"]) == 0
    out = capsys.readouterr().out
    assert "hello anthropic" in out and SECRET not in out
    assert server.requests[before].headers["x-api-key"] == SECRET


def test_stream_failure_never_prints_the_key(
    server: RunningServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    url = server.url + "/v1/chat/completions"
    assert main(["stream", "--url", url, "--model", "status:401", "hi"]) == 1
    captured = capsys.readouterr()
    assert "HTTP 401" in captured.out and "Incorrect API key provided" in captured.out
    assert SECRET not in captured.out + captured.err


def test_stream_has_no_key_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["stream", "--url", "http://127.0.0.1:9/x", "--model", "m", "--api-key", "k", "hi"])
    assert "unrecognized arguments" in capsys.readouterr().err


def test_stream_with_a_bad_url(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["stream", "--url", "not-a-url", "--model", "m", "hi"]) == 2
    assert "api_url" in capsys.readouterr().out
