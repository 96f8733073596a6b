"""The live view: ``stream().pipe(live())`` renders a response in place as it arrives.

In a Jupyter kernel (JupyterLab, classic Notebook, VS Code) it shows one output through an
IPython display handle, updated at most every ``interval`` seconds (0.1 by default) and
once more at the end: the answer growing as Markdown, thinking in a collapsed block, tool
calls with their arguments, their progress reports while they run and their results with
how long each took, each step's usage and the total. No widget
extension is needed. Anywhere else it prints the stream with the terminal renderer of
``solon-events stream`` (:class:`solon_events.display.render.LiveRenderer`). Events pass through
unchanged.

Folding an event in costs its own size (text is kept in pieces, a tool call's arguments
grow by what each delta changed); a render costs the response so far, at most once per
interval.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from html import escape
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from ..core.partial_arguments import ArgumentDeltas, StreamingArguments
from ..event_model.events import EVENT_TYPES, ChatEvent
from ..event_model.steps import call_event
from .html import markdown_html, wrap
from .render import (
    LONG_ARGUMENTS,
    approval_lines,
    arguments_text,
    tool_progress_line,
    tool_result_line,
)
from .values import cached_text, cost_text, usage_text

if TYPE_CHECKING:
    from reactivex import Observable
    from rich.console import Console

__all__ = ["LiveState", "live"]


@attrs.define
class _Segment:
    """One piece of the response in the order it arrived: a text or thinking block, a tool
    call (with its latest progress report while it runs, its result once known) or a note
    (a step's usage, an error). Its text is kept in pieces, joined when read."""

    kind: str  # "text", "output" (a structured answer), "thinking", "refusal", "tool", ...
    step: int
    pieces: list[str] = attrs.Factory(list)
    key: Any = None
    name: str = ""
    result: str | None = None
    progress: str | None = None  # tool_progress_line of the latest report
    outcome: str | None = None  # tool_result_line of the result (with its duration)
    failed: bool = False
    length: int = attrs.field(init=False, default=0)  # the text's length
    # a tool call's arguments (a structured answer), parsed as far as they have arrived
    streaming: StreamingArguments | None = None
    arguments: Any = None  # a complete call's arguments

    def __attrs_post_init__(self) -> None:
        self.length = sum(map(len, self.pieces))

    @property
    def text(self) -> str:
        """The segment's text (its pieces joined)."""
        pieces = self.pieces
        if len(pieces) > 1:
            pieces[:] = ["".join(pieces)]
        return pieces[0] if pieces else ""

    @text.setter
    def text(self, text: str) -> None:
        self.pieces = [text] if text else []
        self.length = len(text)

    def add(self, text: str) -> None:
        """Add ``text`` at the end (at the cost of ``text`` alone)."""
        self.pieces.append(text)
        self.length += len(text)

    def shown_arguments(self) -> Any:
        """The call's arguments as far as known: complete, or rebuilt from their deltas."""
        if self.arguments is not None:
            return self.arguments
        return self.streaming.value() if self.streaming is not None else None


class LiveState:
    """The response so far, folded from its events (sans-I/O): what the live view shows."""

    def __init__(self) -> None:
        self.segments: list[_Segment] = []
        self.done = False
        self.total: str | None = None
        self._typed = 0  # the characters the open text block's deltas added
        # what each argument delta changed, applied to its call's arguments
        self._arguments = ArgumentDeltas(build=True)
        self._answers: dict[int, str] = {}  # the steps asked for a structured answer: its name

    def _append(self, kind: str, event: ChatEvent, text: str) -> None:
        last = self.segments[-1] if self.segments else None
        if last is not None and last.kind == kind and last.step == event.step:
            last.add(text)
        else:
            self.segments.append(_Segment(kind, event.step, [text]))

    def _tool(self, event: ChatEvent) -> _Segment:
        key = event.tool_call_id or (event.tool_call.id if event.tool_call else None)
        key = key or f"{event.step}:{event.index}"
        for segment in reversed(self.segments):
            if segment.kind == "tool" and segment.key == key:
                return segment
        name = event.tool_call.name if event.tool_call is not None else "tool"
        segment = _Segment("tool", event.step, [], key, name)
        self.segments.append(segment)
        return segment

    def add(self, event: ChatEvent) -> None:
        """Fold one event in."""
        call = self._arguments.feed(event)
        t = event.type
        if t is EVENT_TYPES.TEXT_DELTA and event.text:
            name = self._answers.get(event.step)
            if name is None:
                self._append("text", event, event.text)
            else:
                self._answer(event, name)
            self._typed += len(event.text)
        elif t is EVENT_TYPES.STEP_START and event.attrs.get("output"):
            self._answers[event.step] = str(event.attrs["output"])
        elif t is EVENT_TYPES.TEXT_START:
            self._typed = 0
        elif t is EVENT_TYPES.TEXT_END:
            self._final_text(event)
        elif t is EVENT_TYPES.THINKING_DELTA and event.text:
            self._append("thinking", event, event.text)
        elif t is EVENT_TYPES.REFUSAL_DELTA and event.text:
            self._append("refusal", event, event.text)
        elif t is EVENT_TYPES.TOOL_CALL_START:
            self._tool(event)
        elif t is EVENT_TYPES.TOOL_CALL_ARGS_DELTA and event.text:
            segment = self._tool(event)
            segment.add(event.text)
            segment.streaming = call
        elif t is EVENT_TYPES.TOOL_CALL_END and event.tool_call is not None:
            segment = self._tool(event)
            segment.text = event.tool_call.arguments_str
            segment.name = event.tool_call.name
            segment.arguments = event.tool_call.arguments
            segment.streaming = None
        elif t is EVENT_TYPES.STATUS and event.sub_type == "tool_progress":
            self._tool(event).progress = tool_progress_line(event)
        elif t is EVENT_TYPES.TOOL_RESULT:
            segment = self._tool(event)
            segment.result = event.text or ""
            segment.outcome = tool_result_line(event)
            segment.failed = bool(event.attrs.get("is_error") or event.attrs.get("denied"))
        elif t is EVENT_TYPES.STEP_END and event.usage is not None:
            self.segments.append(_Segment("note", event.step, [f"step {event.step}: " + _u(event)]))
        elif t is EVENT_TYPES.RESPONSE_END:
            self.done = True
            self._awaiting(event)
            if event.usage is not None:
                self.total = _u(event)
            cached = event.response.cached if event.response is not None else None
            if cached is not None:
                self.segments.append(_Segment("note", event.step, [cached_text(cached)]))
        elif t is EVENT_TYPES.ERROR:
            self.done = True
            message = f"{type(event.error).__name__}: {event.error}" if event.error else "error"
            self.segments.append(_Segment("error", event.step, [message]))

    def _answer(self, event: ChatEvent, name: str) -> None:
        """A structured answer's delta: its text, and the object parsed so far."""
        last = self.segments[-1] if self.segments else None
        if last is None or last.kind != "output" or last.step != event.step:
            streaming = StreamingArguments(None, name, -1, False, build=True)
            last = _Segment("output", event.step, [], name=name, streaming=streaming)
            self.segments.append(last)
        last.add(event.text or "")
        assert last.streaming is not None
        last.streaming.add(event.text)

    def _awaiting(self, event: ChatEvent) -> None:
        """A response paused for approval: each waiting call says so, and a note names them."""
        pending = event.response.pending_approval if event.response is not None else None
        if pending is None:
            return
        for call in pending.tool_calls:
            self._tool(
                call_event(call, pending.step)
            ).progress = f"awaiting approval (id {call.id})"
        waiting = ", ".join(approval_lines(event.response))
        self.segments.append(_Segment("note", event.step, [f"⏸ awaiting approval: {waiting}"]))

    def _final_text(self, event: ChatEvent) -> None:
        """A block's final text (TEXT_END's, the provider's rewrite of what its deltas
        said) takes the place of what they typed, as it does in the response."""
        typed, self._typed = self._typed, 0
        if event.text is None:
            return
        last = self.segments[-1] if self.segments else None
        if typed and last is not None and last.kind in ("text", "output"):
            text = last.text
            last.text = text[: len(text) - typed] + event.text
        elif event.text:
            self._append("text", event, event.text)

    def text(self) -> str:
        """The response so far as plain text (what a front end without HTML shows)."""
        lines = [line for segment in self.segments for line in _text_lines(segment)]
        if self.total is not None:
            lines.append(f"total usage: {self.total}")
        elif not self.done:
            lines.append("…")
        return "\n".join(line for line in lines if line)

    def html(self) -> str:
        """The response so far as HTML (everything from the model escaped)."""
        parts = []
        for segment in self.segments:
            if segment.kind == "text":
                parts.append(f'<div class="se-answer">{markdown_html(segment.text)}</div>')
            elif segment.kind == "output":
                parts.append(_answer_html(segment))
            elif segment.kind == "thinking":
                parts.append(
                    f"<details><summary>Thinking ({len(segment.text)} characters)</summary>"
                    f"<pre>{escape(segment.text)}</pre></details>"
                )
            elif segment.kind == "refusal":
                parts.append(f"<p><b>Refusal:</b> {escape(segment.text)}</p>")
            elif segment.kind == "tool":
                parts.append(_tool_html(segment))
            elif segment.kind == "error":
                parts.append(f"<p style='color:#c23030'><b>{escape(segment.text)}</b></p>")
            else:
                parts.append(f"<p class='se-meta'>{escape(segment.text)}</p>")
        if self.total is not None:
            parts.append(f"<p class='se-meta'><b>total usage:</b> {escape(self.total)}</p>")
        elif not self.done:
            parts.append("<p class='se-meta'>…</p>")
        return wrap("".join(parts))


def _text_lines(segment: _Segment) -> list[str]:
    """A segment's lines in :meth:`LiveState.text`."""
    if segment.kind == "thinking":
        return [f"[thinking: {len(segment.text)} characters]"]
    if segment.kind != "tool":
        return [segment.text]
    after = segment.outcome if segment.outcome is not None else segment.progress
    head = f"tool {segment.name or 'tool'}({segment.text})"
    return [head] if after is None else [head, f"  {after}"]


def _tool_html(segment: _Segment) -> str:
    """A tool call: its name and arguments (on one line, or indented below it when they are
    long, as parsed so far while they stream), then its result (how long it took, whether it
    failed) or, while it runs, its latest progress report."""
    name = escape(segment.name or "tool")
    arguments = ""
    shown = segment.shown_arguments() if segment.length > LONG_ARGUMENTS else None
    if type(shown) is dict and shown:
        call = f"🔧 <code>{name}</code>"
        arguments = f"<pre class='se-arguments'>{escape(arguments_text(shown))}</pre>"
    else:
        call = f"🔧 <code>{name}({escape(segment.text)})</code>"
    if segment.outcome is not None:
        style = " style='color:#c23030'" if segment.failed else ""
        mark = "✗" if segment.failed else "←"
        outcome = escape(segment.outcome)
        line = f"<p>{call}<br><span class='se-tool-result'{style}>{mark} {outcome}</span></p>"
    elif segment.progress is not None:
        line = f"<p>{call}<br><span class='se-meta'>… {escape(segment.progress)}</span></p>"
    else:
        line = f"<p>{call}</p>"
    return line + arguments


def _answer_html(segment: _Segment) -> str:
    """A structured answer: its name, then the object as far as it has arrived, indented
    (its text as it came when it is not JSON)."""
    streaming = segment.streaming
    value = streaming.value() if streaming is not None and streaming.is_json else None
    if not isinstance(value, (dict, list)):
        return f'<div class="se-answer"><pre>{escape(segment.text)}</pre></div>'
    head = f"<p>🧩 <code>{escape(segment.name)}</code></p>"
    return f"{head}<pre class='se-arguments'>{escape(arguments_text(value))}</pre>"


def _u(event: ChatEvent) -> str:
    assert event.usage is not None
    cost = cost_text(event.response.cost) if event.response is not None else None
    return usage_text(event.usage) + (f"; cost {cost}" if cost else "")


class DisplayHandle(Protocol):
    """What the notebook view updates: IPython's ``DisplayHandle`` has this method."""

    def update(self, obj: Any) -> None: ...


class _Throttle:
    """Calls ``render`` at most once per ``interval`` seconds, the last state always shown:
    a change within the interval is rendered by a timer when it ends."""

    def __init__(
        self,
        render: Callable[[], None],
        interval: float,
        clock: Callable[[], float] = time.monotonic,
        start_timer: Callable[[float, Callable[[], None]], Any] | None = None,
    ) -> None:
        self._render = render
        self._interval = interval
        self._clock = clock
        self._start_timer = start_timer or _thread_timer
        self._lock = threading.Lock()
        self._last: float | None = None
        self._timer: Any = None
        self._dirty = False
        self._closed = False

    def changed(self) -> None:
        """The state changed: render now, or when the interval since the last render ends."""
        with self._lock:
            if self._closed:
                return
            now = self._clock()
            if self._last is None or now - self._last >= self._interval:
                self._render_locked(now)
            else:
                self._dirty = True
                if self._timer is None:
                    self._timer = self._start_timer(self._interval - (now - self._last), self._due)

    def _due(self) -> None:
        with self._lock:
            self._timer = None
            if self._dirty and not self._closed:
                self._render_locked(self._clock())

    def _render_locked(self, now: float) -> None:
        self._dirty = False
        self._last = now
        self._render()

    def close(self) -> None:
        """Render the last state (if not shown yet) and stop."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            if self._dirty or self._last is None:
                self._render_locked(self._clock())


def _thread_timer(delay: float, action: Callable[[], None]) -> threading.Timer:
    timer = threading.Timer(delay, action)
    timer.daemon = True
    timer.start()
    return timer


class NotebookView:
    """The live view in a kernel: one display, updated through its handle (throttled)."""

    def __init__(
        self,
        interval: float = 0.1,
        show: Callable[[str], DisplayHandle] | None = None,
        clock: Callable[[], float] = time.monotonic,
        start_timer: Callable[[float, Callable[[], None]], Any] | None = None,
    ) -> None:
        self.state = LiveState()
        self._show = show or _ipython_show
        self._handle: DisplayHandle | None = None
        self._throttle = _Throttle(self._render, interval, clock, start_timer)
        # the throttle's timer renders on its own thread: never while an event is folded in
        self._folding = threading.Lock()

    def start(self) -> None:
        """Show the (empty) view: call it where the output belongs, on the cell's thread."""
        if self._handle is None:
            self._handle = self._show(self.state.html())

    def _render(self) -> None:
        with self._folding:
            html = self.state.html()
            text = self.state.text() if self._handle is not None else ""
        if self._handle is None:
            self._handle = self._show(html)
        else:
            self._handle.update(_HTML(html, text))

    def add(self, event: ChatEvent) -> None:
        """Fold ``event`` in and update the display (throttled)."""
        with self._folding:
            self.state.add(event)
        self._throttle.changed()

    def close(self) -> None:
        """Show the final state."""
        self._throttle.close()


class _HTML:
    """HTML for IPython's display machinery (what ``IPython.display.HTML`` would be), with
    plain text for front ends that show no HTML."""

    def __init__(self, html: str, text: str = "…") -> None:
        self.data = html
        self.text = text

    def _repr_html_(self) -> str:
        return self.data

    def __repr__(self) -> str:
        return self.text


def _ipython_show(html: str) -> DisplayHandle:
    from IPython.display import display

    handle = display(_HTML(html), display_id=True)
    assert handle is not None
    return handle  # type: ignore[no-any-return]


class TerminalView:
    """The live view outside a kernel: the terminal renderer, event by event."""

    def __init__(self, console: Console | None = None) -> None:
        from .render import LiveRenderer

        self._render = LiveRenderer(console)
        self._closed = False

    def add(self, event: ChatEvent) -> None:
        """Print what ``event`` adds."""
        self._render(event)

    def close(self) -> None:
        """End the output's last line."""
        if not self._closed:
            self._closed = True
            self._render.close()
            self._render.console.print()


def in_kernel() -> bool:
    """Whether this runs inside a Jupyter kernel (IPython with a kernel attached)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None  # type: ignore[attr-defined]
    return shell is not None and getattr(shell, "kernel", None) is not None


def live(
    *, interval: float = 0.1, console: Console | None = None
) -> Callable[[Observable[ChatEvent]], Observable[ChatEvent]]:
    """A pipeable operator that renders the stream in place and passes every event on.

    ``model.prompt("...").stream().pipe(live())``: in a Jupyter kernel, one output updated
    at most every ``interval`` seconds and once at the end; elsewhere the terminal renderer
    (on ``console``, default stdout). Each subscription gets its own view; completion, an
    error or disposal shows the final state.
    """
    import reactivex
    from reactivex.disposable import CompositeDisposable, Disposable

    from ..support.safe_callbacks import safe_callbacks

    if interval < 0:
        raise ValueError("interval must be >= 0 seconds")

    def operator(source: Observable[ChatEvent]) -> Observable[ChatEvent]:
        def subscribe(observer: Any, scheduler: Any = None) -> Any:
            view: NotebookView | TerminalView
            if in_kernel():
                view = NotebookView(interval)
                view.start()
            else:
                view = TerminalView(console)

            def on_next(event: ChatEvent) -> None:
                view.add(event)
                observer.on_next(event)

            def on_error(error: Exception) -> None:
                view.close()
                observer.on_error(error)

            def on_completed() -> None:
                view.close()
                observer.on_completed()

            callbacks = safe_callbacks(
                observer, on_next, on_error, on_completed, where="the live() operator"
            )
            subscription = source.subscribe(*callbacks, scheduler=scheduler)
            return CompositeDisposable(subscription, Disposable(view.close))

        return reactivex.create(subscribe)

    return operator
