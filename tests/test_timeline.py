"""The timeline picture: what it lays out, over time or event order, and the files it saves."""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest
from reactivex import operators as ops

from solon_events import ChatEvent, ChatEventType, replay
from solon_events.display import Timeline, timeline
from solon_events.display.timeline import _layout

ROOT = Path(__file__).resolve().parent.parent
RECORDINGS = ROOT / "examples" / "recordings"
T = ChatEventType
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def events_of(name: str, dialect: str) -> list[ChatEvent]:
    return replay(RECORDINGS / name, dialect=dialect).pipe(ops.to_list()).run()


def test_the_layout_of_a_recorded_tool_loop_is_over_time() -> None:
    events = events_of("tool-loop-openai.jsonl", "openai")
    layout = _layout(events)
    assert layout.timed
    lanes = [(bar.lane, bar.start <= bar.end) for bar in layout.bars]
    assert lanes == [("thinking", True), ("tool: get_weather", True), ("text", True)]
    thinking, tool, text = layout.bars
    assert thinking.end <= tool.start <= tool.end < text.start
    assert len(thinking.ticks) == 4 and len(tool.ticks) == 3 and len(text.ticks) == 4
    assert [(step, note) for step, _, _, note in layout.steps] == [
        (0, "59 tokens"),
        (1, "92 tokens"),
    ]
    step0, step1 = layout.steps
    assert step0[2] <= step1[1]  # step 1 starts after step 0 ends
    assert [(lane, text) for lane, _, text in layout.results] == [
        ("tool: get_weather", "18°C and sunny")
    ]
    first_delta = next(e for e in events if e.type is T.THINKING_DELTA)
    assert layout.first_token == first_delta.attrs["received_at"] > 0
    assert layout.title.endswith("2 steps, 151 tokens")


def test_without_times_the_layout_is_over_event_order() -> None:
    events = [e.evolve(attrs={}) for e in events_of("thinking-anthropic.jsonl", "anthropic")]
    layout = _layout(events)
    assert not layout.timed
    assert [bar.lane for bar in layout.bars] == ["thinking", "text"]
    first = next(i for i, e in enumerate(events) if e.type is T.THINKING_DELTA)
    assert layout.first_token == first
    assert layout.end == len(events) - 1
    assert layout.title.startswith(f"{len(events)} events, 1 step")


def test_rx_timestamps_give_real_time() -> None:
    stamped = (
        replay(RECORDINGS / "text-openai.jsonl", dialect="openai")
        .pipe(ops.map(lambda e: e.evolve(attrs={})), ops.timestamp(), ops.to_list())
        .run()
    )
    layout = _layout(stamped)
    assert layout.timed and [bar.lane for bar in layout.bars] == ["text"]


@pytest.mark.parametrize(
    ("name", "dialect"),
    [
        ("tool-loop-openai.jsonl", "openai"),
        ("thinking-anthropic.jsonl", "anthropic"),
        ("text-openai.jsonl", "openai"),
    ],
)
def test_the_picture_is_saved_as_png_and_svg(name: str, dialect: str, tmp_path: Path) -> None:
    picture = timeline(events_of(name, dialect))
    assert isinstance(picture, Timeline) and picture.timed
    png = picture.save(tmp_path / "timeline.png")
    data = png.read_bytes()
    assert data.startswith(PNG_SIGNATURE) and len(data) > 10_000
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert width >= 1000 and height >= 200
    svg = picture.save(tmp_path / "timeline.SVG")
    root = ElementTree.parse(svg).getroot()
    assert root.tag.endswith("svg")
    assert picture._repr_png_().startswith(PNG_SIGNATURE)
    assert picture.to_bytes("svg").lstrip().startswith(b"<?xml")


def test_the_svg_names_the_lanes_and_the_axis(tmp_path: Path) -> None:
    picture = timeline(events_of("tool-loop-openai.jsonl", "openai"), title="weather")
    svg = picture.to_bytes("svg").decode()
    # matplotlib writes text as glyph paths, with the text itself in comments
    for text in ("tool: get_weather", "thinking", "seconds since the request", "weather"):
        assert f"<!-- {text} -->" in svg


def test_an_unknown_suffix_is_refused(tmp_path: Path) -> None:
    picture = timeline(events_of("text-openai.jsonl", "openai"))
    with pytest.raises(ValueError, match=r"\.png or \.svg"):
        picture.save(tmp_path / "timeline.jpg")
    with pytest.raises(ValueError, match="image_format"):
        picture.to_bytes("gif")


def test_without_matplotlib_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(ImportError, match=r"pip install 'solon-events\[notebook\]'"):
        timeline(events_of("text-openai.jsonl", "openai"))
