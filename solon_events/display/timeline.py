"""``timeline(events)``: a picture of one response, drawn with matplotlib.

Each block (thinking, text, a tool call, a server tool, media, refusal) is a bar on its
lane, from its START to its END, with a tick per delta; steps are shaded and labelled with
their usage; tool results are marked on their call's lane; the first-token delay is
marked from the request. The x axis is real time when the events carry arrival times (a
replayed recording's ``attrs["received_at"]``, or Rx ``timestamp()`` pairs), else event
order. The figure renders in a notebook and saves to PNG or SVG. matplotlib comes with
the ``notebook`` extra: ``pip install 'solon-events[notebook]'``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs

from ..event_model.events import EVENT_TYPES, ChatEvent, ChatEventGroup
from ..event_model.extras import MissingExtraError
from .html import GROUP_COLOURS
from .picture import Picture
from .values import timed_events

__all__ = ["Timeline", "timeline"]

_LANE_ORDER = ("thinking", "text", "refusal", "tool", "server tool", "media")
_LANE_GROUPS = {
    ChatEventGroup.THINKING: "thinking",
    ChatEventGroup.TEXT: "text",
    ChatEventGroup.TOOL_CALL: "tool",
    ChatEventGroup.SERVER_TOOL: "server tool",
    ChatEventGroup.MEDIA: "media",
    ChatEventGroup.SAFETY: "refusal",
}


@attrs.define
class _Bar:
    lane: str
    label: str
    start: float
    end: float
    group: ChatEventGroup
    ticks: list[float] = attrs.field(factory=list)


@attrs.define
class _Layout:
    """What the picture shows, in x units (seconds or event numbers)."""

    timed: bool
    bars: list[_Bar] = attrs.field(factory=list)
    steps: list[tuple[int, float, float, str]] = attrs.field(factory=list)  # step, x0, x1, note
    results: list[tuple[str, float, str]] = attrs.field(factory=list)  # lane, x, text
    first_token: float | None = None
    end: float = 0.0
    title: str = ""


def _block_key(event: ChatEvent) -> tuple[Any, ...]:
    if event.group in (ChatEventGroup.TOOL_CALL, ChatEventGroup.SERVER_TOOL):
        return (event.group, event.step, event.tool_call_id or event.item_id or event.index)
    return (event.group, event.step, event.item_id or event.index)


def _lane(event: ChatEvent) -> str:
    lane = _LANE_GROUPS[event.group]
    if event.group is ChatEventGroup.TOOL_CALL and event.tool_call is not None:
        return f"tool: {event.tool_call.name}"
    if event.group is ChatEventGroup.SERVER_TOOL and event.sub_type:
        return f"server tool: {event.sub_type}"
    return lane


def _layout(events: Iterable[Any]) -> _Layout:
    pairs = timed_events(events)
    timed = bool(pairs) and all(at is not None for at, _ in pairs)
    layout = _Layout(timed)
    open_bars: dict[tuple[Any, ...], _Bar] = {}
    step_start: dict[int, float] = {}
    tool_lanes: dict[str | None, str] = {}
    total_tokens: int | None = None
    for number, (at, event) in enumerate(pairs):
        x = float(at) if timed and at is not None else float(number)
        layout.end = max(layout.end, x)
        t = event.type
        if t is EVENT_TYPES.STEP_START:
            step_start[event.step] = x
        elif t is EVENT_TYPES.STEP_END:
            tokens = f"{event.usage.total_tokens} tokens" if event.usage is not None else ""
            layout.steps.append((event.step, step_start.get(event.step, x), x, tokens))
        elif t is EVENT_TYPES.TOOL_RESULT:
            lane = tool_lanes.get(event.tool_call_id, "tool")
            layout.results.append((lane, x, event.text or ""))
        elif t is EVENT_TYPES.RESPONSE_END and event.usage is not None:
            total_tokens = event.usage.total_tokens
        if event.group not in _LANE_GROUPS or t is EVENT_TYPES.TOOL_RESULT:
            continue
        if layout.first_token is None and t in (EVENT_TYPES.TEXT_DELTA, EVENT_TYPES.THINKING_DELTA):
            layout.first_token = x
        key = _block_key(event)
        bar = open_bars.get(key)
        if bar is None:
            lane = _lane(event)
            bar = _Bar(lane, lane, x, x, event.group)
            open_bars[key] = bar
            layout.bars.append(bar)
        if event.group is ChatEventGroup.TOOL_CALL and event.tool_call is not None:
            bar.lane = bar.label = f"tool: {event.tool_call.name}"
            tool_lanes[event.tool_call_id] = bar.lane
        bar.end = x
        if event.phase.name == "DELTA":
            bar.ticks.append(x)
        if event.phase.name in ("END", "NONE") and t is not EVENT_TYPES.THINKING_SIGNATURE:
            open_bars.pop(key, None)
    span = f"{layout.end:.2f} s" if timed else f"{len(pairs)} events"
    tokens = f", {total_tokens} tokens" if total_tokens is not None else ""
    steps = len(layout.steps)
    layout.title = f"{span}, {steps} step{'s' if steps != 1 else ''}{tokens}"
    return layout


def _figure_class() -> Any:
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise MissingExtraError("timeline() (drawing)", "matplotlib", "notebook") from None
    return Figure


def _draw(layout: _Layout, title: str | None, width: float) -> Any:
    figure_class = _figure_class()
    lanes = sorted(
        {bar.lane for bar in layout.bars} | {lane for lane, _, _ in layout.results},
        key=lambda lane: (_LANE_ORDER.index(lane.split(":")[0]), lane),
    )
    height = 1.4 + 0.45 * max(len(lanes), 1)
    figure = figure_class(figsize=(width, height), layout="constrained")
    axes = figure.add_subplot()
    row = {lane: len(lanes) - 1 - i for i, lane in enumerate(lanes)}
    span = max(layout.end, 1e-9)
    thin = span / 400  # the least visible width of a bar
    for number, (step, x0, x1, note) in enumerate(layout.steps):
        axes.axvspan(x0, x1, color="#888888", alpha=0.06 if number % 2 else 0.12, lw=0)
        axes.axvline(x0, color="#888888", lw=0.8, ls="--")
        label = f"step {step}" + (f"\n{note}" if note else "")
        axes.text(x0, len(lanes) - 0.35, label, fontsize=8, va="bottom", ha="left", color="#555")
    for bar in layout.bars:
        colour = GROUP_COLOURS.get(bar.group, "#6b6b6b")
        y = row[bar.lane]
        axes.broken_barh(
            [(bar.start, max(bar.end - bar.start, thin))],
            (y - 0.3, 0.6),
            facecolors=colour,
            alpha=0.85,
        )
        if bar.ticks:
            axes.vlines(bar.ticks, y - 0.3, y + 0.3, colors="white", lw=0.6, alpha=0.8)
    for lane, x, text in layout.results:
        y = row.get(lane, 0)
        axes.plot([x], [y], marker="D", color="#2f9e6e", markersize=6, zorder=3)
        short = text if len(text) <= 30 else text[:29] + "…"
        axes.annotate(f"→ {short}", (x, y), xytext=(4, -14), textcoords="offset points", fontsize=7)
    if layout.first_token is not None:
        top = len(lanes) - 0.6
        axes.annotate(
            "",
            xy=(layout.first_token, top),
            xytext=(0, top),
            arrowprops={"arrowstyle": "<->", "color": "#c23030", "lw": 0.8},
        )
        delay = (
            f"first token {layout.first_token * 1000:.0f} ms"
            if layout.timed
            else f"first token at event {layout.first_token:.0f}"
        )
        axes.text(0, top + 0.08, delay, fontsize=7, color="#c23030", va="bottom")
    axes.set_yticks(range(len(lanes)), [lane for lane in reversed(lanes)])
    axes.set_ylim(-0.7, len(lanes) + 0.2)
    axes.set_xlim(-span * 0.02, span * 1.04)
    axes.set_xlabel("seconds since the request" if layout.timed else "event number")
    axes.grid(axis="x", alpha=0.3)
    for side in ("top", "right"):
        axes.spines[side].set_visible(False)
    axes.set_title(title or layout.title, fontsize=10, loc="left")
    return figure


class Timeline(Picture):
    """The picture of a response: shows itself in a notebook (PNG) and :meth:`save` writes
    it; :attr:`figure` is the matplotlib ``Figure`` for further drawing."""

    def __init__(self, figure: Any, timed: bool) -> None:
        super().__init__(figure)
        self.timed = timed

    def __repr__(self) -> str:
        axis = "time" if self.timed else "event order"
        return f"<Timeline over {axis}>"


def timeline(events: Iterable[Any], *, title: str | None = None, width: float = 10.0) -> Timeline:
    """The picture of one response's events (ChatEvents, or Rx ``timestamp()`` pairs).

    Over real time when every event has an arrival time, else over event order. Needs
    matplotlib: ``pip install 'solon-events[notebook]'``.
    """
    layout = _layout(events)
    return Timeline(_draw(layout, title, width), layout.timed)
