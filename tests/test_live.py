"""The live view: events pass through; in a kernel the display is updated through its
handle, throttled (the updates counted); outside one the terminal renderer prints."""

from __future__ import annotations

import html as html_module
import io
import itertools
import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from final_texts import BLOCKS, BLOCKS_TEXT, FINAL, rewritten_events
from partial_values import argument_snapshots, forbid_snapshots, is_prefix, long_args_frames
from reactivex import operators as ops
from rich.console import Console

from solon_events import ChatEvent, ChatEventType, ChatModel, ToolCall, ToolContext, replay, tool
from solon_events.devserver import DevServer, RunningServer
from solon_events.devserver.scenarios import report_arguments
from solon_events.display import LiveState, live
from solon_events.display import live as live_module_function
from solon_events.display.live import NotebookView, _Throttle

live_module = __import__("solon_events.display.live", fromlist=["live"])
ROOT = Path(__file__).resolve().parent.parent
LOOP = ROOT / "examples" / "recordings" / "tool-loop-openai.jsonl"
T = ChatEventType
assert live_module_function is live


def in_a_kernel(monkeypatch: pytest.MonkeyPatch) -> FakeHandle:
    """Make live() believe it runs in a kernel; what it shows goes to the returned handle."""
    handle = FakeHandle()
    monkeypatch.setattr(live_module, "in_kernel", lambda: True)
    monkeypatch.setattr(live_module, "_ipython_show", handle.show)
    return handle


def loop_events() -> list[ChatEvent]:
    return replay(LOOP, dialect="openai").pipe(ops.to_list()).run()


class FakeHandle:
    """Collects what the view shows: the first display, then each update."""

    def __init__(self) -> None:
        self.shown: list[str] = []
        self.lock = threading.Lock()

    def show(self, html: str) -> FakeHandle:
        self.shown.append(html)
        return self

    def update(self, obj: Any) -> None:
        with self.lock:
            self.shown.append(obj._repr_html_())


class FakeTime:
    """A clock moved by hand, and timers that fire when it passes their time."""

    def __init__(self) -> None:
        self.now = 0.0
        self.timers: list[list[Any]] = []  # [due, action, cancelled]

    def clock(self) -> float:
        return self.now

    def start_timer(self, delay: float, action: Callable[[], None]) -> Any:
        entry = [self.now + delay, action, False]
        self.timers.append(entry)

        class Timer:
            def cancel(self) -> None:
                entry[2] = True

        return Timer()

    def advance(self, to: float) -> None:
        self.now = to
        for entry in list(self.timers):
            if entry[0] <= to and not entry[2]:
                self.timers.remove(entry)
                entry[1]()


def test_live_state_folds_a_tool_loop() -> None:
    state = LiveState()
    for event in loop_events():
        state.add(event)
    kinds = [segment.kind for segment in state.segments]
    assert kinds == ["thinking", "tool", "note", "text", "note"]
    tool = state.segments[1]
    assert (tool.name, tool.text, tool.result) == (
        "get_weather",
        '{"city":"Paris"}',
        "18°C and sunny",
    )
    assert state.segments[3].text == "It is 18°C and sunny in Paris right now."
    assert state.done and state.total == "prompt 122, completion 29, total 151, thinking 9"
    html = state.html()
    assert "<details><summary>Thinking (" in html
    assert "get_weather({&quot;city&quot;:&quot;Paris&quot;})" in html
    assert "← get_weather returned: 18°C and sunny</span>" in html
    assert "<b>total usage:</b> prompt 122" in html
    assert state.text().splitlines() == [
        "[thinking: 63 characters]",
        'tool get_weather({"city":"Paris"})',
        "  get_weather returned: 18°C and sunny",
        "step 0: prompt 42, completion 17, total 59, thinking 9",
        "It is 18°C and sunny in Paris right now.",
        "step 1: prompt 80, completion 12, total 92",
        "total usage: prompt 122, completion 29, total 151, thinking 9",
    ]


def test_live_state_shows_a_final_text_that_rewrote_the_deltas() -> None:
    state = LiveState()
    for event in rewritten_events():
        state.add(event)
    assert [segment.text for segment in state.segments if segment.kind == "text"] == [FINAL]
    # a final text takes the place of its own block's deltas only
    state = LiveState()
    for event in BLOCKS:
        state.add(event)
    assert [segment.text for segment in state.segments] == [BLOCKS_TEXT]


def test_updates_are_throttled_to_one_per_interval_and_the_end_is_shown() -> None:
    fake = FakeTime()
    handle = FakeHandle()
    view = NotebookView(0.1, handle.show, fake.clock, fake.start_timer)
    view.start()
    texts = [f"w{i} " for i in range(200)]
    render_times: list[float] = []
    original = view._render

    def counted() -> None:
        render_times.append(fake.now)
        original()

    view._throttle._render = counted  # type: ignore[method-assign]
    for i, text in enumerate(texts):  # 200 deltas, 5 ms apart: one second
        fake.advance(i * 0.005)
        view.add(ChatEvent(T.TEXT_DELTA, text=text))
    fake.advance(1.0)
    view.close()
    # the first delta at once, then at most one update per 0.1 s; close() shows the last
    # state at once
    assert 10 <= len(render_times) <= 12
    gaps = [b - a for a, b in itertools.pairwise(render_times[:-1])]
    assert min(gaps) >= 0.1 - 1e-9
    assert "".join(texts).strip() in handle.shown[-1]
    assert len(handle.shown) == len(render_times) + 1  # plus the empty view of start()


def test_a_change_inside_the_interval_is_rendered_when_it_ends() -> None:
    fake = FakeTime()
    renders: list[float] = []
    throttle = _Throttle(lambda: renders.append(fake.now), 0.1, fake.clock, fake.start_timer)
    throttle.changed()  # t=0: at once
    fake.advance(0.03)
    throttle.changed()  # within the interval: a timer for t=0.1
    throttle.changed()  # the same timer
    assert renders == [0.0] and len(fake.timers) == 1
    fake.advance(0.1)
    assert renders == [0.0, 0.1]  # a stalled stream still shows its last delta
    throttle.close()  # nothing new since: no further render
    assert renders == [0.0, 0.1]
    throttle.changed()
    assert renders == [0.0, 0.1]  # closed


def test_close_cancels_the_timer_and_renders_the_last_state() -> None:
    fake = FakeTime()
    renders: list[float] = []
    throttle = _Throttle(lambda: renders.append(fake.now), 0.1, fake.clock, fake.start_timer)
    throttle.changed()
    fake.advance(0.05)
    throttle.changed()
    throttle.close()
    assert renders == [0.0, 0.05]
    fake.advance(1.0)
    assert renders == [0.0, 0.05]  # the cancelled timer did not fire


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    with DevServer.run_in_thread() as running:
        yield running


def test_in_a_kernel_a_real_stream_updates_one_display_throttled(
    server: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    handle = in_a_kernel(monkeypatch)
    with ChatModel(server.url + "/v1/chat/completions", "slow:60:0.005") as model:
        started = time.monotonic()
        passed = model.prompt("count").stream().pipe(live(interval=0.1), ops.to_list()).run()
        elapsed = time.monotonic() - started
    assert [e.type for e in passed].count(T.TEXT_DELTA) == 60
    assert passed[-1].type is T.RESPONSE_END
    updates = len(handle.shown) - 1
    assert 2 <= updates <= elapsed / 0.1 + 3, (updates, elapsed)
    assert "59" in handle.shown[-1] and "total usage" in handle.shown[-1]


def test_a_tool_shows_its_progress_while_it_runs_then_its_result_and_duration(
    server: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    handle = in_a_kernel(monkeypatch)

    @tool
    def get_weather(city: str, ctx: ToolContext) -> str:
        """Current weather in a city, asked of three stations."""
        for station in (1, 2, 3):
            time.sleep(0.3)  # well over the interval: each report is shown
            ctx.progress(station, 3, f"station {station} <b>answered</b>")
        return "18°C and <script>sunny</script>"

    with ChatModel(server.url + "/v1/chat/completions", "weather") as model:
        model.prompt("Weather?").tools(get_weather).stream().pipe(live(interval=0.1)).run()
    shown = "\n".join(handle.shown)
    for station in (1, 2, 3):
        assert (
            f"… get_weather: station {station} &lt;b&gt;answered&lt;/b&gt; [{station}/3]" in shown
        )
    final = handle.shown[-1]
    assert "station 3" not in final  # the result replaces the progress line
    took = re.search(
        r"← get_weather returned: 18°C and &lt;script&gt;sunny&lt;/script&gt;  \((\d+) ms\)", final
    )
    assert took is not None and int(took.group(1)) >= 900
    assert "<script>" not in final


def test_a_failed_tool_is_shown_in_red() -> None:
    call = ToolCall(id="c1", name="get_weather", arguments={"city": "Paris"})
    state = LiveState()
    state.add(ChatEvent(T.TOOL_CALL_END, tool_call_id="c1", tool_call=call))
    state.add(
        ChatEvent(
            T.TOOL_RESULT,
            tool_call_id="c1",
            tool_call=call,
            text="ValueError: no station",
            attrs={"tool_name": "get_weather", "duration": 0.012, "is_error": True},
        )
    )
    html = state.html()
    assert "style='color:#c23030'>✗ get_weather failed: ValueError: no station  (12 ms)" in html


def test_outside_a_kernel_the_terminal_renderer_prints_and_events_pass_unchanged() -> None:
    out = io.StringIO()
    console = Console(file=out, width=200, highlight=False)
    events = loop_events()
    passed = replay(LOOP, dialect="openai").pipe(live(console=console), ops.to_list()).run()
    assert [(e.type, e.text) for e in passed] == [(e.type, e.text) for e in events]
    printed = out.getvalue()
    assert "→ tool call get_weather" in printed
    assert "It is 18°C and sunny in Paris right now." in printed
    assert "total usage: prompt 122" in printed


def test_an_error_is_shown_and_passed_on(monkeypatch: pytest.MonkeyPatch) -> None:
    handle = in_a_kernel(monkeypatch)
    errors: list[Exception] = []
    replay(b'{"id": "x"}\nnot json\n', dialect="openai").pipe(live()).subscribe(
        on_error=errors.append
    )
    assert len(errors) == 1
    assert "ChatProtocolError" in handle.shown[-1]


def test_disposal_shows_the_final_state(monkeypatch: pytest.MonkeyPatch) -> None:
    handle = in_a_kernel(monkeypatch)
    taken = replay(LOOP, dialect="openai").pipe(live(interval=10), ops.take(6), ops.to_list())
    assert len(taken.run()) == 6
    assert "The user wants" in handle.shown[-1]


def test_a_negative_interval_is_refused() -> None:
    with pytest.raises(ValueError, match="interval"):
        live(interval=-1)


@pytest.mark.parametrize("dialect", ["openai", "anthropic", "openai-responses", "gemini"])
def test_the_notebook_view_builds_arguments_from_path_deltas_not_snapshots(
    dialect: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    events = replay(long_args_frames(dialect), dialect=dialect).pipe(ops.to_list()).run()
    expected = iter(argument_snapshots(events))
    forbid_snapshots(monkeypatch)
    state = LiveState()
    compared = 0
    for event in events:
        state.add(event)
        if event.type is T.TOOL_CALL_ARGS_DELTA:
            snapshot = next(expected)
            found = re.search(r"<pre class='se-arguments'>(.*?)</pre>", state.html(), re.S)
            if found:
                assert json.loads(html_module.unescape(found.group(1))) == snapshot
                compared += 1
    assert compared >= 20


def test_long_text_is_kept_in_pieces_and_read_whole() -> None:
    state = LiveState()
    pieces = [f"piece {n}. " for n in range(1000)]
    state.add(ChatEvent(T.TEXT_START))
    for piece in pieces:
        state.add(ChatEvent(T.TEXT_DELTA, text=piece))
    (segment,) = state.segments
    assert len(segment.pieces) == 1000 and segment.length == len("".join(pieces))
    assert segment.text == "".join(pieces) and segment.pieces == ["".join(pieces)]
    state.add(ChatEvent(T.TEXT_END, text="rewritten"))
    assert segment.text == "rewritten" and segment.length == len("rewritten")


@pytest.mark.parametrize("dialect", ["openai", "anthropic", "openai-responses", "gemini"])
def test_a_long_argument_grows_in_the_notebook_view(dialect: str) -> None:
    state = LiveState()
    shown: list[Any] = []
    for event in replay(long_args_frames(dialect), dialect=dialect).pipe(ops.to_list()).run():
        state.add(event)
        if event.type is T.TOOL_CALL_ARGS_DELTA:
            found = re.search(r"<pre class='se-arguments'>(.*?)</pre>", state.html(), re.S)
            if found:  # once the text is long enough to be shown indented
                shown.append(json.loads(html_module.unescape(found.group(1))))
    final = report_arguments(3)
    assert len(shown) >= 20 and all(is_prefix(value, final) for value in shown)
    sizes = [len(json.dumps(value)) for value in shown]
    assert sizes == sorted(sizes) and sizes[0] < sizes[-1]
    assert shown[-1]["sections"][-1]["table"]["rows"]
    end = state.html()
    assert "🔧 <code>write_report</code>" in end
    pre = re.search(r"<pre class='se-arguments'>(.*?)</pre>", end, re.S)
    assert pre is not None and json.loads(html_module.unescape(pre.group(1))) == final
