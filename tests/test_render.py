"""The terminal renderer's tool lines and a long argument growing as it streams
(solon_events.display.render)."""

from __future__ import annotations

import io
import json
import re

import pytest
from final_texts import BLOCKS, FINAL, STREAMED, rewritten_events
from partial_values import argument_snapshots, forbid_snapshots, is_prefix, long_args_frames
from rich.console import Console

from solon_events import replay
from solon_events.devserver.app import ROUTES
from solon_events.devserver.scenarios import report_arguments
from solon_events.display.render import (
    LONG_ARGUMENTS,
    LiveRenderer,
    tool_call_line,
    tool_progress_line,
    tool_result_line,
)
from solon_events.event_model.events import ChatEvent, ChatEventType
from solon_events.event_model.results import ToolCall

T = ChatEventType
CALL = ToolCall(id="call_1", name="get_weather", arguments={"city": "Paris"})
DIALECTS = [dialect for _path, _wire, dialect in ROUTES]


def result(text: str, **attrs: object) -> ChatEvent:
    return ChatEvent(T.TOOL_RESULT, tool_call=CALL, tool_call_id="call_1", text=text, attrs=attrs)


def progress(text: str | None, **attrs: object) -> ChatEvent:
    return ChatEvent(T.STATUS, sub_type="tool_progress", tool_call=CALL, text=text, attrs=attrs)


def test_tool_result_lines() -> None:
    ok = result("18°C", tool_name="get_weather", duration=0.0123, is_error=False)
    assert tool_result_line(ok) == "get_weather returned: 18°C  (12 ms)"
    failed = result(
        "Error: RuntimeError: offline", tool_name="get_weather", duration=2.5, is_error=True
    )
    assert tool_result_line(failed) == "get_weather failed: Error: RuntimeError: offline  (2500 ms)"
    assert tool_result_line(result("18°C")) == "get_weather returned: 18°C"  # a replayed result


def test_tool_progress_lines() -> None:
    assert tool_progress_line(progress("page 2", progress=2.0, total=5.0)) == (
        "get_weather: page 2 [2/5]"
    )
    assert tool_progress_line(progress(None, progress=0.5, total=None)) == "get_weather: [0.5]"
    assert tool_progress_line(progress("starting")) == "get_weather: starting"


def test_the_live_renderer_shows_progress_and_failures() -> None:
    console = Console(record=True, width=200, force_terminal=False)
    render = LiveRenderer(console)
    render(progress("page 1", tool_name="get_weather", progress=1.0, total=2.0))
    render(result("Error: offline", tool_name="get_weather", duration=0.001, is_error=True))
    render(ChatEvent(T.STATUS, sub_type="retry", text="retrying"))
    assert console.export_text() == (
        "… get_weather: page 1 [1/2]\n✗ get_weather failed: Error: offline  (1 ms)\n"
    )


def test_a_step_with_no_usage_is_said_only_when_the_response_goes_on() -> None:
    """A request that failed shows its failure alone (the ERROR event is the next one);
    a step that ended with no usage and was followed by more says so, in its place."""
    for after, shown in (
        (ChatEvent(T.RESPONSE_END), "step 0 usage: no usage reported\ntotal usage: no usage"),
        (ChatEvent(T.STEP_START, step=1), "step 0 usage: no usage reported\n"),
        (ChatEvent(T.ERROR, text="connection refused"), "error: connection refused\n"),
    ):
        console = Console(record=True, width=200, force_terminal=False)
        render = LiveRenderer(console)
        render(ChatEvent(T.TEXT_DELTA, text="Hi"))
        render(ChatEvent(T.STEP_END, step=0))
        render(after)
        assert console.export_text().startswith(f"Hi\n{shown}"), (after.type, console.export_text())


NOTE = "↻ the provider's final text, instead of the above:"


def test_a_final_text_that_rewrites_the_deltas_is_shown_after_them() -> None:
    console = Console(record=True, width=200, force_terminal=False)
    render = LiveRenderer(console)
    for event in rewritten_events():
        render(event)
    shown = console.export_text()
    assert shown.startswith(f"{STREAMED}\n{NOTE}\n{FINAL}\n"), shown
    # only a final text that differs from what the deltas typed is shown
    console = Console(record=True, width=200, force_terminal=False)
    render = LiveRenderer(console)
    for event in BLOCKS:
        render(event)
    assert console.export_text() == (
        f"Sunny. Warm\n{NOTE}\n Warm and dry.\n{NOTE}\n Bye.\n See you."
    )


# ------------------------------------------------------------ a long argument as it streams

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\r")


def long_args_events(dialect: str) -> list[ChatEvent]:
    events: list[ChatEvent] = []
    replay(long_args_frames(dialect), dialect=dialect).subscribe(events.append)
    return events


def terminal() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=True, width=300, height=300, highlight=False), out


def successive_renders(render: LiveRenderer, out: io.StringIO, dialect: str) -> list[str]:
    """What each argument delta drew (its plain text), the events rendered one by one."""
    drawn = []
    for event in long_args_events(dialect):
        before = len(out.getvalue())
        render(event)
        new = ANSI.sub("", out.getvalue()[before:])
        if event.type is T.TOOL_CALL_ARGS_DELTA and new:
            drawn.append(new)
    return drawn


@pytest.mark.parametrize("dialect", [d for d in DIALECTS if d != "ollama"])  # whole calls
def test_a_long_argument_grows_in_place_on_a_terminal(dialect: str) -> None:
    console, out = terminal()
    render = LiveRenderer(console, interval=0)
    drawn = successive_renders(render, out, dialect)
    final = report_arguments(3)
    assert len(drawn) >= 20
    values = []
    for text in drawn:
        head, arguments = text.lstrip("\n").split("\n", 1)
        assert head == "… tool call write_report("
        values.append(json.loads(arguments))  # the arguments parsed so far, indented
    assert all(is_prefix(value, final) for value in values)
    sizes = [len(json.dumps(value)) for value in values]
    assert sizes == sorted(sizes) and sizes[0] < 200 < len(json.dumps(final)) - 200 < sizes[-1]
    assert values[-1]["sections"][-1]["table"]["rows"]  # drawn until the end
    printed = ANSI.sub("", out.getvalue())
    line = next(line for line in printed.splitlines() if line.startswith("→ tool call"))
    assert line.startswith('→ tool call write_report({"title":')
    assert re.search(r"… 1,[0-9]{3} characters\)$", line), line


@pytest.mark.parametrize("dialect", ["openai", "anthropic", "gemini"])
def test_the_growing_arguments_are_built_from_path_deltas_not_snapshots(
    dialect: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each redraw shows what partial_arguments() would (redrawing after every delta here),
    while no snapshot of the arguments is ever taken."""
    expected = argument_snapshots(long_args_events(dialect))
    forbid_snapshots(monkeypatch)
    console, out = terminal()
    drawn = successive_renders(LiveRenderer(console, interval=0), out, dialect)
    shown = [json.loads(text.lstrip("\n").split("\n", 1)[1]) for text in drawn]
    assert shown == [value if value else {} for value in expected]


def test_the_growing_arguments_are_redrawn_at_most_once_per_interval() -> None:
    console, out = terminal()
    now = [0.0]
    render = LiveRenderer(console, interval=0.1, clock=lambda: now[0])
    assert len(successive_renders(render, out, "openai")) == 1  # the clock stood still
    console, out = terminal()
    render = LiveRenderer(console, interval=0.1, clock=lambda: now[0])
    calls = 0

    def ticking() -> float:
        nonlocal calls
        calls += 1
        return calls * 0.0625  # each delta 62.5 ms after the last: every other one is drawn

    render._clock = ticking
    deltas = sum(e.type is T.TOOL_CALL_ARGS_DELTA for e in long_args_events("openai"))
    assert len(successive_renders(render, out, "openai")) in (deltas // 2, deltas // 2 + 1)


def test_off_a_terminal_only_the_finished_call_is_printed() -> None:
    out = io.StringIO()
    render = LiveRenderer(Console(file=out, width=200, highlight=False), interval=0)
    for event in long_args_events("anthropic"):
        render(event)
    printed = out.getvalue()
    assert "… tool call" not in printed and "\x1b" not in printed
    assert printed.count("→ tool call write_report(") == 1


def test_tool_call_lines_cut_long_arguments() -> None:
    assert tool_call_line(CALL) == 'get_weather({"city":"Paris"})'
    long = ToolCall(id="c", name="write", arguments_str='{"text": "' + "x" * 500 + '"}')
    line = tool_call_line(long)
    assert line == "write(" + long.arguments_str[:LONG_ARGUMENTS] + "… 512 characters)"


def test_a_stream_stopped_mid_call_clears_its_growing_arguments() -> None:
    console, out = terminal()
    render = LiveRenderer(console, interval=0)
    events = long_args_events("openai")
    end = next(i for i, e in enumerate(events) if e.type is T.TOOL_CALL_END)
    for event in events[: end - 5]:
        render(event)
    assert console._live_stack  # the arguments are being drawn in place
    before = len(out.getvalue())
    render.close()
    render.close()
    assert not console._live_stack
    assert out.getvalue()[before:].endswith("\x1b[2K")  # its lines erased
