"""The ``solon-events`` command: demo, replay and stream, in-process and as a subprocess."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from anthropic_frames import anthropic_text_stream
from recorded import TEXT_DIALECTS, text_body

from solon_events import cli
from solon_events.cli import build_parser, main
from solon_events.devserver import DevServer, RunningServer

ROOT = Path(__file__).resolve().parent.parent
SECRET = "sk-test-SECRET-123"
DIALECTS = TEXT_DIALECTS
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
ANTHROPIC_RECORDING = anthropic_text_stream(
    "msg_01", ["Hello", " there"], input_tokens=12, output_tokens=6, ping=True
)


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


def test_replay_json_is_jsonl(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(recording(tmp_path, ANTHROPIC_RECORDING))
    assert main(["replay", path, "--dialect", "anthropic", "--format", "json"]) == 0
    as_json = capsys.readouterr().out
    assert main(["replay", path, "--dialect", "anthropic", "--format", "jsonl"]) == 0
    lines = as_json.splitlines()
    assert orjson.loads(lines[0])["type"] == "RESPONSE_START"
    strip = re.compile(r'"(response_id|provider_response_id)":"[^"]*",?')
    assert strip.sub("", as_json) == strip.sub("", capsys.readouterr().out)


def test_replay_pretty_is_one_line_per_event(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = recording(tmp_path, ANTHROPIC_RECORDING)
    assert main(["replay", str(path), "--dialect", "anthropic"]) == 0
    lines = capsys.readouterr().out.splitlines()
    types = [line.split()[0] for line in lines]
    assert types == [
        "RESPONSE_START", "STEP_START", "USAGE", "TEXT_START", "TEXT_DELTA", "TEXT_DELTA",
        "TEXT_END", "USAGE", "STEP_END", "RESPONSE_END",
    ]  # fmt: skip
    assert re.fullmatch(r'TEXT_DELTA +step 0 +#0 +"Hello"', lines[4])
    assert re.fullmatch(r'TEXT_DELTA +step 0 +#0 +" there"', lines[5])
    assert lines[1] == "STEP_START            step 0"
    assert lines[-1].split(None, 3)[3] == ("finish=end_turn; prompt 12, completion 6, total 18")


def test_replay_pretty_shows_the_key_field_of_each_event(
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = ROOT / "examples" / "recordings" / "tool-loop-openai.jsonl"
    assert main(["replay", str(path), "--dialect", "openai"]) == 0
    out = capsys.readouterr().out
    assert re.search(r'^TOOL_CALL_END +step 0 .*get_weather\(\{"city": ?"Paris"\}\)', out, re.M)
    assert re.search(r"^TOOL_RESULT +step 0 .*get_weather returned: 18°C and sunny", out, re.M)
    assert re.search(r"^STEP_START +step 1$", out, re.M)
    assert re.search(r"^RESPONSE_END +step 1 +finish=stop; prompt \d+", out, re.M)


def test_replay_reads_a_recordings_dialect_from_its_header(
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = ROOT / "examples" / "recordings" / "thinking-anthropic.jsonl"
    assert main(["replay", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert re.match(r"THINKING_SIGNATURE +step 0", lines[9])
    assert re.match(r"RESPONSE_END +step 0 +finish=end_turn", lines[-1])


def test_replay_tells_the_dialect_of_a_body_from_its_frames(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = recording(tmp_path, ANTHROPIC_RECORDING)
    assert main(["replay", str(path)]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert re.match(r"RESPONSE_END +step 0 +finish=end_turn", last)


def test_replay_of_a_truncated_recording_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = recording(tmp_path, ANTHROPIC_RECORDING[:5])
    assert main(["replay", str(path), "--dialect", "anthropic", "--format", "jsonl"]) == 1
    captured = capsys.readouterr()
    types = [orjson.loads(line)["type"] for line in captured.out.splitlines()]
    assert types[-1] == "ERROR" and "RESPONSE_END" not in types
    (line,) = captured.err.splitlines()
    assert line.startswith("solon-events: error: ") and "truncated" in line


def test_replay_of_a_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(tmp_path / "absent.jsonl")]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"solon-events: error: no such file: {tmp_path / 'absent.jsonl'}\n"


def test_replay_of_a_directory_says_it_is_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["replay", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"solon-events: error: {tmp_path} is a directory, not a recorded stream\n"
    )


# --------------------------------------------------------------------------- stream


@pytest.mark.parametrize(
    ("variable", "path", "header", "value"),
    [
        ("OPENAI_API_KEY", "/v1/chat/completions", "Authorization", f"Bearer {SECRET}"),
        # no --dialect: the URL's path names Anthropic's, whose variable is read
        ("ANTHROPIC_API_KEY", "/v1/messages", "x-api-key", SECRET),
    ],
)
def test_stream_reads_the_key_from_the_environment(
    server: RunningServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    variable: str,
    path: str,
    header: str,
    value: str,
) -> None:
    monkeypatch.setenv(variable, SECRET)
    before = len(server.requests)
    url = server.url + path
    assert main(["stream", "--url", url, "--model", "echo", "streamed from the CLI"]) == 0
    captured = capsys.readouterr()
    assert "streamed from the CLI" in captured.out and "total usage" in captured.out
    assert SECRET not in captured.out and captured.err == ""
    (request,) = server.requests[before:]
    assert request.headers[header] == value


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
    (line,) = captured.err.splitlines()
    assert line.startswith("solon-events: error: HTTP 401") and "Incorrect API key" in line
    assert SECRET not in captured.out + captured.err


@pytest.mark.parametrize("command", ["stream", "record"])
def test_a_failure_is_one_line_on_stderr_and_nothing_on_stdout_says_it(
    server: RunningServer, command: str, tmp_path: Path
) -> None:
    url = server.url + "/v1/chat/completions"
    out = ["--out", str(tmp_path / "r.jsonl")] if command == "record" else []
    done = run_cli(command, "--url", url, "--model", "status:400", *out, "hi")
    assert done.returncode == 1
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"solon-events: error: HTTP 400 from {url}"), done.stderr
    # nothing before the failure either: no "step 0 usage: no usage reported"
    recorded = f"recorded 0 frames in 1 step(s) to {tmp_path / 'r.jsonl'}"
    assert done.stdout.strip() == (recorded if command == "record" else ""), done.stdout


def test_a_key_variable_that_is_not_set_is_said(server: RunningServer) -> None:
    url = server.url + "/v1/chat/completions"
    done = run_cli("stream", "--url", url, "--model", "echo", "--api-key-env", "NO_SUCH_KEY", "hi")
    assert done.returncode == 0, done.stderr
    assert done.stderr == (
        "solon-events: warning: NO_SUCH_KEY is not set: the request is sent without an API key\n"
    )


def test_a_provider_that_wants_a_key_is_said_to_get_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    args = build_parser().parse_args(
        ["stream", "--url", "https://api.anthropic.com/v1/messages", "--model", "m", "hi"]
    )
    with pytest.MonkeyPatch.context() as patch:
        said: list[str] = []
        patch.setattr(cli.common, "warning", said.append)
        assert cli.provider_key(args, args.url) == ("anthropic", None)
        assert said == ["ANTHROPIC_API_KEY is not set: the request is sent without an API key"]
        local = build_parser().parse_args(
            ["stream", "--url", "http://127.0.0.1:9/v1/messages", "--model", "m", "hi"]
        )
        assert cli.provider_key(local, local.url) == ("anthropic", None)
        assert len(said) == 1  # a server on this machine wants no key


@pytest.mark.parametrize("command", ["stream", "record", "serve"])
@pytest.mark.parametrize("flag", [["--api-key", SECRET], [f"--api-key={SECRET}"], ["--api-key"]])
def test_there_is_no_key_flag_and_the_refusal_points_to_the_variables(
    command: str, flag: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    url = ["--url", "http://127.0.0.1:9/v1/chat/completions", "--model", "m"]
    rest = {"stream": ["hi"], "record": ["--out", "r.jsonl", "hi"], "serve": []}[command]
    with pytest.raises(SystemExit) as exited:
        main([command, *url, *flag, *rest])
    assert exited.value.code == 2
    error = capsys.readouterr().err
    assert "there is no --api-key: the API key is read from an environment variable" in error
    for variable in set(cli.KEY_VARIABLES.values()):
        assert variable in error, variable
    assert "--api-key-env NAME" in error and SECRET not in error


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("not-a-url", "--url needs http:// or https:// in front: https://not-a-url"),
        (
            "127.0.0.1:9/v1/chat/completions",
            "--url needs http:// or https:// in front: http://127.0.0.1:9/v1/chat/completions",
        ),
        (  # what it shows is masked as the library masks URLs
            f"api.example.com/v1beta?key={SECRET}",
            "--url needs http:// or https:// in front: https://api.example.com/v1beta?key=***",
        ),
        ("ftp://example.com/v1", "--url must be an http(s) URL, not ftp://example.com/v1"),
    ],
)
def test_a_url_without_its_scheme_is_refused_naming_the_option(
    url: str, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for command in (["stream", "hi"], ["serve"]):
        assert main([command[0], "--url", url, "--model", "m", *command[1:]]) == 2
        (line,) = capsys.readouterr().err.splitlines()
        assert line == f"solon-events: error: {said}"
        assert "api_url" not in line and SECRET not in line


def test_provider_help_names_every_dialects_url_and_key_variable() -> None:
    from solon_events.dialects.base import dialect_names
    from solon_events.dialects.endpoints import dialect_for_url

    assert set(cli.common.URL_SIGNS) == set(dialect_names()) - {"openai"}
    for dialect, signs in cli.common.URL_SIGNS.items():
        for sign in signs.split(" or "):
            assert dialect_for_url("https://example.com/v1/models/m" + sign) == dialect, sign
    parser = build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    for name in ("stream", "record", "serve"):
        shown = " ".join(commands.choices[name].format_help().split())
        for dialect, signs in cli.common.URL_SIGNS.items():
            assert f"{signs}: {dialect}" in shown, (name, dialect)
        for variable in cli.KEY_VARIABLES.values():
            assert variable in shown, (name, variable)
        assert "--api-key " not in shown and "--api-key]" not in shown  # refused, not offered


def test_replay_hints_are_options_not_python(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = recording(tmp_path, ANTHROPIC_RECORDING)
    assert main(["replay", str(path), "--dialect", "openai"]) == 1
    captured = capsys.readouterr()
    assert captured.out.splitlines()[-1].endswith(
        "looks like anthropic frames: pass --dialect anthropic"
    )
    assert captured.err.endswith("looks like anthropic frames: pass --dialect anthropic\n")
    assert "dialect=" not in captured.out + captured.err
    assert cli.command_line_hint("frames do not tell: pass dialect=") == (
        "frames do not tell: pass --dialect"
    )


# --------------------------------------------------------------------------- as a program


def run_cli(*args: str, shell_pipe: str = "", **env: str) -> subprocess.CompletedProcess[str]:
    """``python -m solon_events ARGS`` in a subprocess (``| shell_pipe`` after it, in bash
    with pipefail), its standard output a pipe, never a terminal, with no COLUMNS set."""
    environ = {k: v for k, v in os.environ.items() if k != "COLUMNS"} | env
    command = [sys.executable, "-m", "solon_events", *args]
    if shell_pipe:
        line = " ".join(f"'{part}'" for part in command)
        command = ["bash", "-c", f"set -o pipefail; {line} | {shell_pipe}"]
    return subprocess.run(
        command, capture_output=True, text=True, env=environ, cwd=ROOT, timeout=120
    )


def test_every_option_has_help_and_shows_its_default() -> None:
    parser = build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert set(commands.choices) == {
        *("demo", "replay", "stream", "record", "serve", "bench", "keys", "spend")
    }
    assert parser.description
    for name, command in commands.choices.items():
        assert command.description, name
        for action in command._actions:
            assert action.help, f"{name} {action.dest}"
        text = command.format_help()
        for action in command._actions:
            if action.option_strings and action.default not in (None, False, [], "==SUPPRESS=="):
                assert f"default: {action.default}" in " ".join(text.split()), (name, action)
    assert "(default: pretty)" in commands.choices["replay"].format_help()


def test_help_breaks_lines_between_words_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "50")
    parser = build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    for command in [parser, *commands.choices.values()]:
        text = command.format_help()
        assert not re.search(r"\w-\n", text), text  # never "solon-" at a line's end
    assert "'solon-events record'" in " ".join(commands.choices["replay"].format_help().split())


def test_replay_piped_into_head_ends_quietly(tmp_path: Path) -> None:
    path = tmp_path / "long.txt"
    path.write_bytes(text_body("openai", *["word "] * 20_000))  # far more than a pipe holds
    for fmt in ("pretty", "json"):
        done = run_cli("replay", str(path), "--format", fmt, shell_pipe="head -n 3")
        assert done.returncode == 0, done.stderr
        assert done.stderr == ""
        assert len(done.stdout.splitlines()) == 3


def test_an_error_is_one_line_on_stderr_without_a_traceback(tmp_path: Path) -> None:
    done = run_cli("replay", str(tmp_path / "absent.jsonl"))
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == f"solon-events: error: no such file: {tmp_path / 'absent.jsonl'}\n"
    truncated = recording(tmp_path, ANTHROPIC_RECORDING[:5])
    done = run_cli("replay", str(truncated), "--dialect", "anthropic")
    assert done.returncode == 1
    (line,) = done.stderr.splitlines()
    assert line.startswith("solon-events: error: ") and "Traceback" not in done.stderr


def test_output_that_is_not_a_terminal_is_neither_coloured_nor_wrapped(
    server: RunningServer,
) -> None:
    prompt = " ".join(f"word{n}" for n in range(60))  # some 400 characters
    url = server.url + "/v1/chat/completions"
    done = run_cli("stream", "--url", url, "--model", "echo", prompt, OPENAI_API_KEY="k")
    assert done.returncode == 0, done.stderr
    assert "\x1b[" not in done.stdout
    assert any(prompt in line for line in done.stdout.splitlines())
    replayed = run_cli("replay", "examples/recordings/tool-loop-openai.jsonl")
    assert replayed.returncode == 0 and "\x1b[" not in replayed.stdout
