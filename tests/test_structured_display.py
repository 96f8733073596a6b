"""A structured answer as the renderers show it (issue #43): the terminal's live renderer
grows the object in place and shows it once, indented, under its name; the notebook's
live view draws it indented as it grows. The events come from the embedded provider."""

from __future__ import annotations

import io
import json
import re

import pydantic
import pytest
from partial_values import is_prefix
from rich.console import Console

from solon_events import ChatEvent, ChatEventType, ChatModel
from solon_events.cli import ROUTES
from solon_events.devserver import RunningServer
from solon_events.display.live import LiveState
from solon_events.display.render import LiveRenderer

T = ChatEventType
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\r")


class City(pydantic.BaseModel):
    name: str
    population: int
    landmarks: list[str]


WHOLE = {"name": "Paris", "population": 3, "landmarks": ["Lyon", "Nantes"]}


def answer_events(server: RunningServer, mode: str) -> list[ChatEvent]:
    with ChatModel(server.url + ROUTES["anthropic"], "weather", dialect="anthropic") as model:
        events: list[ChatEvent] = []
        model.prompt("Paris?").output(City, mode=mode).stream().subscribe(events.append)
        model.prompt("wait").call()  # the stream above has ended once this answers
    return events


@pytest.mark.parametrize("mode", ["native", "tool"])
def test_on_a_terminal_the_object_grows_in_place_then_shows_once(
    server: RunningServer, mode: str
) -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=200, height=200, highlight=False)
    render = LiveRenderer(console, interval=0)
    drawn = []
    for event in answer_events(server, mode):
        before = len(out.getvalue())
        render(event)
        new = ANSI.sub("", out.getvalue()[before:])
        if event.type is T.TEXT_DELTA and new:
            drawn.append(new)
    values = []
    for text in drawn:
        head, body = text.lstrip("\n").split("\n", 1)
        assert head == "… City("
        values.append(json.loads(body))
    assert len(values) > 3 and values[-1] == WHOLE
    assert all(is_prefix(value, WHOLE) for value in values)
    printed = ANSI.sub("", out.getvalue())
    shown = printed[printed.index("→ City\n") + len("→ City\n") :]
    assert json.loads(shown[: shown.index("}") + 1]) == WHOLE


def test_off_a_terminal_the_answer_is_typed_as_text(server: RunningServer) -> None:
    out = io.StringIO()
    render = LiveRenderer(Console(file=out, width=200, highlight=False), interval=0)
    for event in answer_events(server, "native"):
        render(event)
    assert json.dumps(WHOLE, separators=(",", ":")) in out.getvalue()
    assert "→ City" not in out.getvalue()


def test_the_notebook_view_draws_the_object_as_it_grows(server: RunningServer) -> None:
    state = LiveState()
    drawn = []
    for event in answer_events(server, "tool"):
        state.add(event)
        if event.type is T.TEXT_DELTA:
            drawn.append(state.html())
    bodies = [re.search(r"<pre class='se-arguments'>(.*?)</pre>", h, re.S) for h in drawn]
    values = [json.loads(b.group(1).replace("&quot;", '"')) for b in bodies if b]
    assert len(values) > 3 and values[-1] == WHOLE
    assert all(is_prefix(value, WHOLE) for value in values)
    assert "🧩 <code>City</code>" in drawn[-1]
    assert json.dumps(WHOLE, separators=(",", ":")) in state.text()
