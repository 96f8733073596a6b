"""HTML for Jupyter: responses, usage, tool calls, events and tables of events.

Everything a model or a provider wrote is escaped (``html.escape``), or rendered from
Markdown with raw HTML and images turned off (markdown-it-py, which rich depends on), so
a model's text never adds markup or script to the page. The result classes and
:class:`~solon_events.ChatEvent` call :func:`to_html` from their ``_repr_html_``.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from html import escape
from typing import Any

import orjson

from ..event_model.events import ChatEvent, ChatEventGroup, ChatEventType
from ..event_model.results import CachedAnswer, ChatResponse, Cost, ToolCall, Usage
from .values import (
    ESTIMATED,
    cached_text,
    event_time,
    key_text,
    money,
    step_count,
    usage_fields,
)

__all__ = ["GROUP_COLOURS", "events_html", "markdown_html", "side_by_side_html", "to_html", "wrap"]

_STYLE = (
    "<style>"
    ".solon-events{font-family:var(--jp-content-font-family,system-ui,sans-serif);"
    "font-size:13px;line-height:1.45;max-width:60em}"
    ".solon-events table{border-collapse:collapse;margin:2px 0}"
    ".solon-events th,.solon-events td{padding:1px 8px;text-align:left;vertical-align:top;"
    "border-bottom:1px solid rgba(127,127,127,.25)}"
    ".solon-events th{font-weight:600;opacity:.75}"
    ".solon-events .se-badge{display:inline-block;padding:0 6px;border-radius:8px;"
    "font-family:monospace;font-size:12px;color:#fff}"
    ".solon-events .se-meta{opacity:.7;font-size:12px}"
    ".solon-events .se-cached{padding:0 6px;border-radius:8px;background:rgba(47,158,110,.15)}"
    ".solon-events pre{white-space:pre-wrap;margin:2px 0}"
    ".solon-events .se-answer p{margin:4px 0}"
    "</style>"
)

GROUP_COLOURS: Mapping[ChatEventGroup, str] = {
    ChatEventGroup.LIFECYCLE: "#5f6b7a",
    ChatEventGroup.STEP: "#8a6d3b",
    ChatEventGroup.TEXT: "#2b7bb9",
    ChatEventGroup.THINKING: "#8e5fb5",
    ChatEventGroup.TOOL_CALL: "#d9822b",
    ChatEventGroup.SERVER_TOOL: "#c0573e",
    ChatEventGroup.MEDIA: "#2f9e6e",
    ChatEventGroup.SAFETY: "#c23030",
    ChatEventGroup.META: "#6b6b6b",
}
"""The colour of each event group, shared by the HTML and the timeline."""

_ROW_LIMIT = 500


@functools.lru_cache(maxsize=1)
def _markdown() -> Any:
    from markdown_it import MarkdownIt

    # Raw HTML in the text comes out escaped; images (which would fetch any URL the model
    # names) are left as text; links keep markdown-it's own check of their scheme.
    return MarkdownIt("commonmark", {"html": False}).disable("image")


def markdown_html(text: str) -> str:
    """``text`` rendered from Markdown, with raw HTML escaped and images off."""
    return str(_markdown().render(text))


def wrap(body: str) -> str:
    """``body`` in the display's container, with its style."""
    return f'<div class="solon-events">{_STYLE}{body}</div>'


def _table(rows: Iterable[tuple[str, str]]) -> str:
    """A two-column table; the cells are HTML already."""
    cells = "".join(f"<tr><th>{name}</th><td>{value}</td></tr>" for name, value in rows)
    return f"<table>{cells}</table>"


def _json(value: Any) -> str:
    try:
        text = orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
    except TypeError:
        text = repr(value)
    return escape(text)


def _usage_body(usage: Usage) -> str:
    mark = ESTIMATED if usage.estimated else ""
    rows = [(escape(name), f"{mark}{value}") for name, value in usage_fields(usage)]
    if usage.estimated:
        rows.append(("", "<span class='se-meta'>≈ estimated: the provider did not count it</span>"))
    return _table(rows)


def _cost_body(cost: Cost) -> str:
    if cost.total is None:
        return f"<span class='se-meta'>unknown: {escape(cost.reason or 'no price')}</span>"
    mark = ESTIMATED if cost.estimated else ""
    parts = (
        ("total", cost.total),
        ("input", cost.input),
        ("cache read", cost.cache_read),
        ("cache write", cost.cache_write),
        ("output", cost.output),
        ("reasoning", cost.reasoning),
    )
    rows = [(name, f"{mark}{money(value)}") for name, value in parts if value is not None]
    if cost.model:
        rows.append(("priced as", escape(f"{cost.model} ({cost.provider})")))
    return _table(rows)


def _tool_calls_body(calls: Sequence[ToolCall], results: Mapping[str, str] | None = None) -> str:
    head = "<tr><th>tool</th><th>arguments</th><th>id</th>"
    head += "<th>result</th></tr>" if results is not None else "</tr>"
    rows = []
    for call in calls:
        row = (
            f"<td><code>{escape(call.name)}</code></td>"
            f"<td><pre>{_json(call.arguments) if call.arguments else escape(call.arguments_str)}"
            f"</pre></td><td class='se-meta'>{escape(call.id or '')}</td>"
        )
        if results is not None:
            row += f"<td><pre>{escape(results.get(call.id or '', ''))}</pre></td>"
        rows.append(f"<tr>{row}</tr>")
    return f"<table>{head}{''.join(rows)}</table>"


def _response_body(response: ChatResponse) -> str:
    parts = []
    message = response.message
    if response.thinking:
        parts.append(
            f"<details><summary>Thinking ({len(response.thinking)} characters)</summary>"
            f"<pre>{escape(response.thinking)}</pre></details>"
        )
    if response.text:
        parts.append(f'<div class="se-answer">{markdown_html(response.text)}</div>')
    if message is not None and message.refusal:
        parts.append(f"<p><b>Refusal:</b> {escape(message.refusal)}</p>")
    if response.tool_calls:
        parts.append(f"<div><b>Tool calls</b>{_tool_calls_body(response.tool_calls)}</div>")
    if response.pending_approval is not None:
        waiting = _tool_calls_body(response.pending_approval.tool_calls)
        parts.append(f"<div><b>⏸ Awaiting approval</b>{waiting}</div>")
    if response.citations:
        items = "".join(
            f"<li>{escape(c.title or c.url or '')} <span class='se-meta'>{escape(c.url or '')}"
            "</span></li>"
            for c in response.citations
        )
        parts.append(f"<div><b>Citations</b><ul>{items}</ul></div>")
    if response.is_empty:
        parts.append("<p class='se-meta'>(empty response)</p>")
    meta = [
        ("finish reason", response.finish_reason),
        ("model", response.model),
        ("provider response id", response.provider_response_id),
    ]
    steps = step_count(response.usage)
    rows = [(name, escape(str(value))) for name, value in meta if value]
    if steps > 1:
        rows.append(("steps", str(steps)))
    if response.usage is not None:
        rows.append(("usage", _usage_body(response.usage)))
    if response.cost is not None and response.cost.total is not None:
        rows.append(("cost", _cost_body(response.cost)))
    if response.cached is not None:
        rows.append(
            ("cached", f"<span class='se-cached'>{escape(cached_text(response.cached))}</span>")
        )
    parts.append(_table(rows))
    return "".join(parts)


def side_by_side_html(columns: Sequence[tuple[str, ChatResponse | BaseException | None]]) -> str:
    """Responses side by side, one column per label (a failure shows its error)."""
    head = "".join(f"<th>{escape(label)}</th>" for label, _ in columns)
    cells = []
    for _, outcome in columns:
        if isinstance(outcome, ChatResponse):
            cells.append(_response_body(outcome))
        elif isinstance(outcome, BaseException):
            cells.append(f"<b>{escape(type(outcome).__name__)}</b>: {escape(str(outcome))}")
        else:
            cells.append("<span class='se-meta'>(no answer)</span>")
    body = "".join(f"<td>{cell}</td>" for cell in cells)
    return wrap(f"<table><tr>{head}</tr><tr>{body}</tr></table>")


def _event_body(event: ChatEvent, at: float | None = None) -> str:
    colour = GROUP_COLOURS.get(event.group, "#6b6b6b")
    badge = f'<span class="se-badge" style="background:{colour}">{event.type.name}</span>'
    fields = {
        "t": None if at is None else f"{at:.3f}s",
        "step": event.step or None,
        "index": None if event.index == -1 else event.index,
        "item_id": event.item_id,
        "tool_call_id": event.tool_call_id,
        "raw_type": event.raw_type,
        "sub_type": event.sub_type,
    }
    meta = [f"{name}={value}" for name, value in fields.items() if value is not None]
    body = f"{badge} <span class='se-meta'>{escape(' '.join(meta))}</span>"
    shown = key_text(event)
    if shown:
        body += f"<pre>{escape(shown)}</pre>"
    if event.response is not None and event.type in (
        ChatEventType.RESPONSE_END,
        ChatEventType.STEP_END,
        ChatEventType.ERROR,
    ):
        label = "partial response" if event.type is ChatEventType.ERROR else "response"
        body += f"<details><summary>{label}</summary>{_response_body(event.response)}</details>"
    return body


def to_html(value: Any) -> str:
    """The HTML of a :class:`~solon_events.ChatResponse`, :class:`~solon_events.Usage`,
    :class:`~solon_events.Cost`, :class:`~solon_events.ToolCall`,
    :class:`~solon_events.ChatEvent` or :class:`~solon_events.CachedAnswer`."""
    if isinstance(value, ChatResponse):
        return wrap(_response_body(value))
    if isinstance(value, Usage):
        return wrap(_usage_body(value))
    if isinstance(value, Cost):
        return wrap(_cost_body(value))
    if isinstance(value, ToolCall):
        return wrap(_tool_calls_body((value,)))
    if isinstance(value, ChatEvent):
        return wrap(_event_body(value, event_time(value)))
    if isinstance(value, CachedAnswer):
        return wrap(f"<span class='se-cached'>{escape(cached_text(value))}</span>")
    raise TypeError(f"no HTML for a {type(value).__name__}")


def events_html(events: Sequence[Any], limit: int = _ROW_LIMIT) -> str:
    """A table of ``events`` (ChatEvents, or Rx ``Timestamp`` pairs of them): time when
    known, type, step, index and the key field of each; at most ``limit`` rows."""
    from .values import timed_events

    timed = timed_events(events)
    with_time = any(at is not None for at, _ in timed)
    head = "<tr><th>#</th>" + ("<th>t (s)</th>" if with_time else "")
    head += "<th>type</th><th>step</th><th>index</th><th></th></tr>"
    rows = []
    for number, (at, event) in enumerate(timed[:limit]):
        colour = GROUP_COLOURS.get(event.group, "#6b6b6b")
        cells = f"<td class='se-meta'>{number}</td>"
        if with_time:
            cells += f"<td class='se-meta'>{'' if at is None else f'{at:.3f}'}</td>"
        cells += (
            f'<td><span class="se-badge" style="background:{colour}">{event.type.name}'
            f"</span></td><td>{event.step}</td>"
            f"<td>{'' if event.index == -1 else event.index}</td>"
            f"<td>{escape(key_text(event, 120))}</td>"
        )
        rows.append(f"<tr>{cells}</tr>")
    more = len(timed) - limit
    tail = f"<p class='se-meta'>… and {more} more events</p>" if more > 0 else ""
    summary = f"<p class='se-meta'>{len(timed)} events</p>"
    return wrap(f"{summary}<table>{head}{''.join(rows)}</table>{tail}{_tools_of(timed)}")


def _tools_of(timed: Sequence[tuple[Any, ChatEvent]]) -> str:
    """The tool calls among the events with their results (TOOL_RESULT), as a table."""
    calls = [e.tool_call for _, e in timed if e.type is ChatEventType.TOOL_CALL_END and e.tool_call]
    if not calls:
        return ""
    results = {
        e.tool_call_id: e.text or ""
        for _, e in timed
        if e.type is ChatEventType.TOOL_RESULT and e.tool_call_id
    }
    return f"<div><b>Tool calls</b>{_tool_calls_body(calls, results)}</div>"
