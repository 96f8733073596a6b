"""The terminal renderer's tool lines (solon_events.render)."""

from __future__ import annotations

from rich.console import Console

from solon_events.events import ChatEvent, ChatEventType
from solon_events.render import LiveRenderer, tool_progress_line, tool_result_line
from solon_events.results import ToolCall

T = ChatEventType
CALL = ToolCall(id="call_1", name="get_weather", arguments={"city": "Paris"})


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
