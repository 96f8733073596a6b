"""Rendering events for a terminal (rich) and as JSON lines."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import orjson
from rich.console import Console
from rich.live import Live
from rich.text import Text

from ..core.partial_arguments import ArgumentDeltas, StreamingArguments
from ..event_model.events import EVENT_TYPES, ChatEvent
from ..event_model.results import ChatResponse, Cost, ToolCall, Usage
from .values import ESTIMATED, cached_text, cost_text

__all__ = [
    "LiveRenderer",
    "approval_lines",
    "arguments_text",
    "event_line",
    "event_summary",
    "event_to_json",
    "tool_call_line",
    "tool_progress_line",
    "tool_result_line",
    "usage_line",
]

LONG_ARGUMENTS = 160
"""Characters of a finished call's arguments shown on its line; the rest is counted."""


def usage_line(usage: Usage | None, cost: Cost | None = None) -> str:
    """``usage`` in one short line (each count after "≈" when it is estimated), and
    ``cost`` when it is known."""
    if usage is None:
        return "no usage reported"
    mark = ESTIMATED if usage.estimated else ""
    parts = [
        f"prompt {mark}{usage.prompt_tokens}",
        f"completion {mark}{usage.completion_tokens}",
        f"total {mark}{usage.total_tokens}",
    ]
    if usage.thinking_tokens:
        parts.append(f"thinking {mark}{usage.thinking_tokens}")
    if usage.cache_read_input_tokens:
        parts.append(f"cache read {usage.cache_read_input_tokens}")
    shown = cost_text(cost)
    if shown is not None:
        parts.append(f"cost {shown}")
    return ", ".join(parts)


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "__attrs_attrs__"):
        return {a.name: _plain(getattr(value, a.name)) for a in value.__attrs_attrs__}
    if isinstance(value, BaseException):
        return {"type": type(value).__name__, "message": str(value)}
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def event_to_json(event: ChatEvent, *, with_raw: bool = False) -> bytes:
    """``event`` as one JSON object: its type and every field that is set."""
    data: dict[str, Any] = {"type": event.type.name}
    for attribute in event.__attrs_attrs__:  # type: ignore[attr-defined]
        name = attribute.name
        if name == "type" or (name == "raw" and not with_raw):
            continue
        value = getattr(event, name)
        if value is None or value == attribute.default or (name in ("raw", "attrs") and not value):
            continue
        data[name] = _plain(value)
    return orjson.dumps(data)


def _tool_name(event: ChatEvent) -> str:
    name = event.attrs.get("tool_name") or (event.tool_call.name if event.tool_call else None)
    return str(name or "tool")


def tool_result_line(event: ChatEvent) -> str:
    """A TOOL_RESULT in one line: ``name returned: text  (12 ms)``, ``name failed: error``
    or, for a call denied approval, ``name denied: text``."""
    if event.attrs.get("denied"):
        return f"{_tool_name(event)} denied: {event.text or ''}"
    duration = event.attrs.get("duration")
    took = f"  ({duration * 1000:.0f} ms)" if isinstance(duration, (int, float)) else ""
    outcome = "failed" if event.attrs.get("is_error") else "returned"
    return f"{_tool_name(event)} {outcome}: {event.text or ''}{took}"


def arguments_text(arguments: Mapping[str, Any] | list[Any]) -> str:
    """A call's arguments, or a structured answer (as parsed so far), as indented JSON,
    non-ASCII text as it is."""
    plain = arguments if type(arguments) in (dict, list) else dict(arguments)  # type: ignore[arg-type]
    return orjson.dumps(plain, option=orjson.OPT_INDENT_2).decode()


def tool_call_line(call: ToolCall) -> str:
    """A finished call in one line, ``name({"city":"Paris"})``: arguments longer than
    :data:`LONG_ARGUMENTS` characters are cut there and the rest counted."""
    text = call.arguments_str
    if len(text) > LONG_ARGUMENTS:
        text = f"{text[:LONG_ARGUMENTS]}… {len(text):,} characters"
    return f"{call.name}({text})"


def approval_lines(response: ChatResponse | None) -> list[str]:
    """The calls a paused response waits for approval of, one line each:
    ``name({"city":"Paris"}) id=call_1`` (none when it waits for nothing)."""
    pending = response.pending_approval if response is not None else None
    if pending is None:
        return []
    return [f"{tool_call_line(call)} id={call.id}" for call in pending.tool_calls]


def tool_progress_line(event: ChatEvent) -> str:
    """A tool's progress report (STATUS ``tool_progress``) in one line: ``name: message [2/5]``."""
    progress, total = event.attrs.get("progress"), event.attrs.get("total")
    amount = ""
    if isinstance(progress, (int, float)):
        out_of = f"/{total:g}" if isinstance(total, (int, float)) else ""
        amount = f"[{progress:g}{out_of}]"
    return " ".join(part for part in (f"{_tool_name(event)}:", event.text, amount) if part)


GROUP_STYLES = {
    "LIFECYCLE": "bold",
    "STEP": "magenta",
    "TEXT": "green",
    "THINKING": "dim",
    "TOOL_CALL": "cyan",
    "SERVER_TOOL": "blue",
    "MEDIA": "blue",
    "SAFETY": "red",
    "META": "yellow",
}
"""The colour of each event group's lines in :func:`event_line` (by group name)."""
SUMMARY_LENGTH = 70
"""At most this many characters of an event's text in :func:`event_summary`."""


def _quoted(text: str) -> str:
    shown = text if len(text) <= SUMMARY_LENGTH else text[: SUMMARY_LENGTH - 3] + "..."
    return orjson.dumps(shown).decode()  # quoted, with newlines and controls escaped


def event_summary(event: ChatEvent) -> str:
    """The one field that says most about ``event``, in a few words.

    A delta's text (quoted, escaped, cut to :data:`SUMMARY_LENGTH`), a tool call's name and
    arguments, a tool result, a step's or the response's finish reason and usage, an
    error's message, a citation's URL; else the event's text, ``sub_type`` or ``raw_type``.
    """
    t = event.type
    call = event.tool_call
    if t is EVENT_TYPES.TOOL_RESULT:
        return tool_result_line(event)
    if t is EVENT_TYPES.STATUS and event.sub_type == "tool_progress":
        return tool_progress_line(event)
    if (
        t in (EVENT_TYPES.TOOL_CALL_START, EVENT_TYPES.TOOL_CALL_END, EVENT_TYPES.TOOL_CALL_CHUNK)
        and call is not None
    ):
        arguments = f"({call.arguments_str})" if t is not EVENT_TYPES.TOOL_CALL_START else ""
        return f"{call.name}{arguments} id={call.id}" if call.id else f"{call.name}{arguments}"
    if t in (EVENT_TYPES.STEP_END, EVENT_TYPES.RESPONSE_END):
        response = event.response
        reason = response.finish_reason if response is not None else None
        finish = f"finish={reason}; " if reason else ""
        waiting = approval_lines(response)
        pending = f"; awaiting approval: {', '.join(waiting)}" if waiting else ""
        cost = response.cost if response is not None else None
        cached = response.cached if response is not None else None
        where = f"; {cached_text(cached)}" if cached is not None else ""
        return finish + usage_line(event.usage, cost) + pending + where
    if t is EVENT_TYPES.USAGE:
        return usage_line(event.usage)
    if t is EVENT_TYPES.ERROR:
        return f"{type(event.error).__name__}: {event.error}" if event.error else event.text or ""
    if t is EVENT_TYPES.CITATION and event.citation is not None:
        return str(event.citation.url or event.citation.title or "")
    if t is EVENT_TYPES.SEARCH_RESULT and event.search_result is not None:
        return str(event.search_result.url or event.search_result.title or "")
    if event.block is not None:
        return type(event.block).__name__
    if event.text:
        return _quoted(event.text)
    return str(event.sub_type or event.raw_type or "")


def event_line(event: ChatEvent) -> Text:
    """``event`` as one line, coloured by its group: type, step, index, then
    :func:`event_summary`, e.g. ``TEXT_DELTA            step 0  #0  "Hello"``."""
    index = f"#{event.index}" if event.index >= 0 else ""
    summary = event_summary(event)
    head = f"{event.type.name:<22}step {event.step:<2} {index:<4}{summary and ' '}"
    line = Text(
        head.rstrip(" ") if not summary else head, style=GROUP_STYLES[event.type.group.name]
    )
    line.append(summary)
    return line


class LiveRenderer:
    """Shows a response as it streams: thinking dimmed, the answer typed as it arrives,
    tool calls, their progress and their results (with how long they took) as they happen,
    per-step and total usage at the end.

    On a terminal a tool call's arguments grow in place as they stream (parsed as far as
    they have arrived, indented, the last lines that fit), redrawn at most every
    ``interval`` seconds; once the call is complete, one line shows it. Each argument delta
    costs its own length (what it changed is applied to the call's arguments, see
    :class:`~solon_events.core.partial_arguments.ArgumentDeltas`); a redraw costs the
    arguments, at most once per interval.

    A text block whose TEXT_END brings a final text other than what its deltas said (the
    provider rewrote it; ``ChatResponse.text`` is that final text) is followed by that
    final text, on lines of its own under a note that it replaces what was typed above.

    A structured answer (a step whose STEP_START says ``output``) grows in place on a
    terminal as a call's arguments do, then shows once, indented, under its name; elsewhere
    its text is typed as any answer's is.

    A step that ended with no usage reported is said so only when the response goes on
    (the next event is not an ERROR): a request that failed shows its failure alone.
    """

    def __init__(
        self,
        console: Console | None = None,
        *,
        interval: float = 0.1,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.console = console or Console(highlight=False)
        self._mode: str | None = None
        self._unreported: ChatEvent | None = None  # a STEP_END with no usage, not shown yet
        self._interval = interval
        self._clock = clock
        self._live: Live | None = None  # the growing arguments of the call streaming now
        self._typed: list[str] = []  # what the open text block's deltas typed
        self._drawn_at = 0.0
        # what each argument delta changed, applied to its call's arguments
        self._arguments = ArgumentDeltas(build=True)
        self._answer: StreamingArguments | None = None  # a structured answer, growing

    def _switch(self, mode: str | None) -> None:
        self.close()  # the call's growing arguments (transient) make way for what follows
        if self._mode != mode and self._mode is not None:
            self.console.print()
        self._mode = mode

    def close(self) -> None:
        """Clear a call's arguments still growing (a stream that stopped mid-call), which
        shows the terminal's cursor again."""
        if self._live is not None:
            self._live.stop()
            self._live = None

    def end_line(self) -> None:
        """End a line of text or thinking still open (a response that stopped mid-answer),
        so that what is printed next starts a line of its own."""
        self._switch(None)

    def _grow(self, call: StreamingArguments, title: str = "tool call ") -> None:
        """Redraw the streaming call's arguments (or structured answer) in place (on a
        terminal, throttled)."""
        if not self.console.is_terminal:
            return
        now = self._clock()
        if self._live is None:
            self._switch(None)
            self._live = Live(
                console=self.console,
                auto_refresh=False,
                transient=True,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self._live.start()
        elif now - self._drawn_at < self._interval:
            return
        self._drawn_at = now
        arguments = call.value()
        shown = arguments if type(arguments) in (dict, list) else {}
        lines = arguments_text(shown).splitlines()
        room = max(1, self.console.height - 2)
        if len(lines) > room:
            lines = [f"  … {len(lines) - room + 1} lines above", *lines[-room + 1 :]]
        view = Text(f"… {title}{call.name}(\n", style="cyan")
        view.append("\n".join(lines), style="cyan dim")
        self._live.update(view, refresh=True)

    def __call__(self, event: ChatEvent) -> None:
        """Render one event."""
        unreported, self._unreported = self._unreported, None
        if unreported is not None and event.type is not EVENT_TYPES.ERROR:
            self._step_usage(unreported)
        call = self._arguments.feed(event)
        if call is not None:
            if event.type is EVENT_TYPES.TOOL_CALL_ARGS_DELTA:
                self._grow(call)
            return
        t = event.type
        out = self.console
        answer = self._answer
        if t is EVENT_TYPES.STEP_START:
            name = event.attrs.get("output")
            self._answer = None if name is None else StreamingArguments(None, name, -1, False, True)
        elif answer is not None and out.is_terminal and t is EVENT_TYPES.TEXT_DELTA:
            answer.add(event.text)
            self._grow(answer, "")
        elif answer is not None and out.is_terminal and t is EVENT_TYPES.STEP_END:
            self._answer = None
            self._switch(None)
            value = answer.value()
            if type(value) in (dict, list):
                out.print(Text(f"→ {answer.name}", style="green"))
                out.print(Text(arguments_text(value), style="green"))
        if t is EVENT_TYPES.THINKING_DELTA and event.text:
            if self._mode != "thinking":
                self._switch("thinking")
                out.print("thinking: ", style="dim italic", end="")
            out.print(Text(event.text, style="dim"), end="")
        elif t is EVENT_TYPES.TEXT_DELTA and event.text and not (answer and out.is_terminal):
            self._switch("text")
            self._typed.append(event.text)
            out.print(Text(event.text), end="")
        elif t is EVENT_TYPES.TEXT_START:
            self._typed = []
        elif t is EVENT_TYPES.TEXT_END:
            typed, self._typed = "".join(self._typed), []
            if event.text is not None and event.text != typed:
                self._switch(None)
                out.print(
                    Text("↻ the provider's final text, instead of the above:", style="yellow")
                )
                out.print(Text(event.text))
        elif t is EVENT_TYPES.REFUSAL_DELTA and event.text:
            self._switch("text")
            out.print(Text(event.text, style="red"), end="")
        elif t is EVENT_TYPES.TOOL_CALL_END and event.tool_call is not None:
            self._switch(None)
            out.print(Text(f"→ tool call {tool_call_line(event.tool_call)}", style="cyan"))
        elif t is EVENT_TYPES.TOOL_RESULT:
            self._switch(None)
            if event.attrs.get("is_error") or event.attrs.get("denied"):
                out.print(Text(f"✗ {tool_result_line(event)}", style="red"))
            else:
                out.print(Text(f"← {tool_result_line(event)}", style="green"))
        elif t is EVENT_TYPES.STATUS and event.sub_type == "tool_progress":
            self._switch(None)
            out.print(Text(f"… {tool_progress_line(event)}", style="cyan dim"))
        elif t is EVENT_TYPES.STATUS and event.sub_type == "cache":
            self._switch(None)
            out.print(Text(f"↺ {event.text}", style="green dim"))
        elif t is EVENT_TYPES.SERVER_TOOL_START:
            self._switch(None)
            out.print(Text(f"⚙ server tool {event.sub_type or ''} started", style="cyan"))
        elif t is EVENT_TYPES.CITATION and event.citation is not None:
            self._switch(None)
            out.print(Text(f"[source] {event.citation.url or event.citation.title}", style="blue"))
        elif t is EVENT_TYPES.CONTENT_FILTER:
            self._switch(None)
            out.print(Text(f"content filtered: {event.text or ''}", style="red"))
        elif t is EVENT_TYPES.STEP_END:
            if event.usage is None:
                self._unreported = event  # said when the response goes on, not before a failure
            else:
                self._step_usage(event)
        elif t is EVENT_TYPES.RESPONSE_END:
            self._switch(None)
            for line in approval_lines(event.response):
                out.print(Text(f"⏸ awaiting approval: {line}", style="bold yellow"))
            out.print(
                Text(f"total usage: {usage_line(event.usage, _cost_of(event))}", style="bold")
            )
            cached = event.response.cached if event.response is not None else None
            if cached is not None:
                out.print(Text(cached_text(cached), style="green"))
        elif t is EVENT_TYPES.ERROR:
            self._switch(None)
            out.print(Text(f"error: {event.text}", style="bold red"))

    def _step_usage(self, step_end: ChatEvent) -> None:
        self._switch(None)
        line = usage_line(step_end.usage, _cost_of(step_end))
        self.console.print(Text(f"step {step_end.step} usage: {line}", style="dim"))


def _cost_of(event: ChatEvent) -> Cost | None:
    return event.response.cost if event.response is not None else None
