"""Rich display: the HTML of responses, usage, tool calls, events and event tables, parsed
and asserted; a model's text never adds markup; IPython's terminal text."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from IPython.lib.pretty import pretty
from reactivex import operators as ops

from solon_events import (
    AssistantMessage,
    ChatEvent,
    ChatEventType,
    ChatResponse,
    ToolCall,
    Usage,
    replay,
)
from solon_events.display import EventTable, event_table
from solon_events.display.html import events_html, to_html

ROOT = Path(__file__).resolve().parent.parent
LOOP = ROOT / "examples" / "recordings" / "tool-loop-openai.jsonl"
T = ChatEventType
HOSTILE = (
    '<script>alert("x")</script> <img src=x onerror=alert(1)> '
    '<a href="javascript:alert(2)">link</a> [md](javascript:alert(3)) '
    "![pixel](http://tracker.example/p.png) </div></details><b onclick=x>bold</b> &amp; &"
)
# What the display itself writes, and what markdown-it makes of a model's Markdown.
ALLOWED_TAGS = {
    "div", "style", "table", "tr", "th", "td", "p", "pre", "code", "details", "summary",
    "span", "b", "ul", "li", "em", "strong", "a", "h1", "h2", "h3", "h4", "h5", "h6",
    "ol", "blockquote", "hr", "br",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {"class", "style", "href", "start", "title"}


@attrs.define
class Node:
    tag: str
    attributes: dict[str, str | None]
    children: list[Any] = attrs.field(factory=list)

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def find_all(self, tag: str) -> list[Node]:
        found = [self] if self.tag == tag else []
        for child in self.children:
            if isinstance(child, Node):
                found += child.find_all(tag)
        return found

    def walk(self) -> list[Node]:
        return [self] + [n for c in self.children if isinstance(c, Node) for n in c.walk()]


class TreeBuilder(HTMLParser):
    """A strict little DOM: every element closed, in order (void elements excepted)."""

    VOID = frozenset({"br", "hr", "img", "input", "meta", "link"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attributes: list[tuple[str, str | None]]) -> None:
        node = Node(tag, dict(attributes))
        self.stack[-1].children.append(node)
        if tag not in self.VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag: str, attributes: list[tuple[str, str | None]]) -> None:
        self.stack[-1].children.append(Node(tag, dict(attributes)))

    def handle_endtag(self, tag: str) -> None:
        assert self.stack[-1].tag == tag, f"</{tag}> closes <{self.stack[-1].tag}>"
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def parse(html: str) -> Node:
    builder = TreeBuilder()
    builder.feed(html)
    builder.close()
    assert builder.stack == [builder.root], "unclosed elements"
    return builder.root


def assert_safe(root: Node) -> None:
    for node in root.walk()[1:]:
        assert node.tag in ALLOWED_TAGS, f"<{node.tag}> in the output"
        assert set(node.attributes) <= ALLOWED_ATTRIBUTES, node.attributes
        href = (node.attributes.get("href") or "").strip().lower()
        assert not href.startswith(("javascript:", "vbscript:", "data:")), href
    for style in root.find_all("style"):
        assert "solon-events" in style.text()


def recorded_events() -> list[ChatEvent]:
    return replay(LOOP, dialect="openai").pipe(ops.to_list()).run()


def rows_of(table: Node) -> dict[str, str]:
    rows = {}
    for row in table.find_all("tr"):
        cells = [c for c in row.children if isinstance(c, Node)]
        if len(cells) == 2 and cells[0].tag == "th":
            rows.setdefault(cells[0].text(), cells[1].text())
    return rows


def test_a_response_shows_answer_thinking_tool_calls_usage_and_steps() -> None:
    response = recorded_events()[-1].response
    assert response is not None
    thinking = "Let me *think* about <b>this</b>."
    call = ToolCall(id="call_1", name="get_weather", arguments_str='{"city": "Paris"}', index=0)
    message = attrs.evolve(
        response.message, thinking=thinking, tool_calls=(call,), text="**Bold** answer"
    )
    root = parse(to_html(attrs.evolve(response, message=message)))
    assert_safe(root)
    answer = [d for d in root.find_all("div") if d.attributes.get("class") == "se-answer"]
    assert answer and answer[0].find_all("strong")[0].text() == "Bold"
    details = root.find_all("details")
    assert len(details) == 1 and "open" not in details[0].attributes  # collapsed
    assert details[0].find_all("summary")[0].text() == f"Thinking ({len(thinking)} characters)"
    assert details[0].find_all("pre")[0].text() == thinking  # shown as text, not rendered
    tool_table = next(t for t in root.find_all("table") if "arguments" in t.text())
    cells = [td.text() for td in tool_table.find_all("td")]
    assert cells[0] == "get_weather" and '"city": "Paris"' in cells[1] and cells[2] == "call_1"
    summary = rows_of(root)
    assert summary["finish reason"] == "stop"
    assert summary["model"] == "weather"
    assert summary["steps"] == "2"
    usage = rows_of([t for t in root.find_all("table") if "prompt" in t.text()][-1])
    assert (usage["prompt"], usage["completion"], usage["total"]) == ("122", "29", "151")
    assert usage["thinking"] == "9"


def test_a_models_text_never_adds_markup() -> None:
    call = ToolCall(id=HOSTILE, name=HOSTILE, arguments_str=HOSTILE)
    response = ChatResponse(
        message=AssistantMessage(text=HOSTILE, thinking=HOSTILE, tool_calls=(call,)),
        finish_reason=HOSTILE,
        model=HOSTILE,
    )
    event = ChatEvent(T.TEXT_DELTA, text=HOSTILE, item_id=HOSTILE, raw_type=HOSTILE)
    end = ChatEvent(T.RESPONSE_END, response=response, usage=Usage(prompt_tokens=1))
    for html in (
        to_html(response),
        to_html(call),
        to_html(event),
        to_html(end),
        events_html([event, end]),
    ):
        root = parse(html)
        assert_safe(root)
        assert not root.find_all("script") and not root.find_all("img")
        assert "alert" in root.text()  # the text is there, as text


@settings(max_examples=150, deadline=None)
@given(
    text=st.text(alphabet=st.sampled_from(list("<>&\"'/=` *_[]()!:#-\n\\abcjsript")), max_size=80),
    anything=st.text(max_size=40),
)
def test_any_text_stays_text(text: str, anything: str) -> None:
    call = ToolCall(name=anything, arguments_str=text)
    response = ChatResponse(
        message=AssistantMessage(text=text, thinking=anything, tool_calls=(call,))
    )
    for html in (to_html(response), to_html(ChatEvent(T.TEXT_DELTA, text=text))):
        assert_safe(parse(html))


def test_usage_and_tool_call_tables() -> None:
    usage = Usage(prompt_tokens=10, completion_tokens=5, cache_read_input_tokens=4)
    rows = rows_of(parse(to_html(usage)))
    assert rows == {"prompt": "10", "completion": "5", "total": "15", "cache read": "4"}
    root = parse(to_html(ToolCall(id="c1", name="f", arguments_str='{"a": [1, 2]}')))
    cells = [td.text() for td in root.find_all("td")]
    assert cells[0] == "f" and cells[2] == "c1"
    assert '"a": [' in cells[1]


def test_an_event_shows_its_type_fields_and_response() -> None:
    events = recorded_events()
    delta = next(e for e in events if e.type is T.TEXT_DELTA)
    root = parse(delta._repr_html_())
    assert_safe(root)
    badge = root.find_all("span")[0]
    assert badge.text() == "TEXT_DELTA" and "background" in (badge.attributes["style"] or "")
    meta = root.find_all("span")[1].text()
    assert "step=1" in meta and "t=0." in meta  # the recording's arrival time
    assert root.find_all("pre")[0].text() == delta.text
    end = parse(events[-1]._repr_html_())
    assert end.find_all("summary")[0].text() == "response"
    assert "It is 18°C and sunny" in end.find_all("details")[0].text()


def test_an_event_table_has_one_row_per_event_with_times() -> None:
    events = recorded_events()
    table = event_table(events)
    assert isinstance(table, EventTable) and len(table) == len(events)
    assert list(table) == events and table[0] is events[0]
    assert table.times[0] == 0.0 and all(t is not None for t in table.times)
    root = parse(table._repr_html_())
    assert_safe(root)
    events_table, tools_table = root.find_all("table")
    rows = events_table.find_all("tr")
    assert len(rows) == len(events) + 1
    # the tool calls among the events, each with its result
    call_row = [td.text() for td in tools_table.find_all("tr")[1].find_all("td")]
    assert call_row[0] == "get_weather" and '"city"' in call_row[1]
    assert call_row[-1] == "18°C and sunny"
    header = [th.text() for th in rows[0].find_all("th")]
    assert header[:3] == ["#", "t (s)", "type"]
    result_row = next(r for r in rows if "TOOL_RESULT" in r.text())
    assert "get_weather → 18°C and sunny" in result_row.text()


def test_an_event_table_of_rx_timestamps_and_a_long_list() -> None:
    timestamped = replay(LOOP, dialect="openai").pipe(ops.timestamp(), ops.to_list()).run()
    table = event_table(timestamped)
    assert table.times[0] == 0.0 and table.times[-1] is not None
    assert [e.type for e in table] == [e.type for e in recorded_events()]
    many = [ChatEvent(T.TEXT_DELTA, text=str(i)) for i in range(620)]
    root = parse(events_html(many, limit=100))
    assert len(root.find_all("tr")) == 101  # no tool calls: no second table
    assert "and 520 more events" in root.text()
    assert "t (s)" not in root.text()  # no times known
    with pytest.raises(TypeError, match="ChatEvents or Rx timestamp"):
        event_table([1, 2])


def test_ipython_terminal_text() -> None:
    events = recorded_events()
    response = events[-1].response
    text = pretty(response)
    assert text.splitlines()[0] == "ChatResponse  finish=stop  model=weather  2 steps"
    assert "  text: It is 18°C and sunny in Paris right now." in text
    assert "  usage: prompt 122, completion 29, total 151, thinking 9" in text
    assert pretty(response.usage) == "Usage(prompt 122, completion 29, total 151, thinking 9)"
    call = ToolCall(id="c1", name="f", arguments_str="{}")
    assert pretty(call) == "ToolCall f({})  id=c1"
    assert pretty(events[3]) == repr(events[3])
    assert pretty(events[-1]).startswith(repr(events[-1]) + "\n  ChatResponse")
    lines = pretty(event_table(events)).splitlines()
    assert lines[0] == f"{len(events)} events"
    assert "TOOL_RESULT" in next(line for line in lines if "get_weather →" in line)


def test_plain_reprs_are_unchanged() -> None:
    assert repr(Usage(prompt_tokens=1)).startswith("Usage(prompt_tokens=1, ")
    assert repr(ChatEvent(T.TEXT_DELTA, text="hi")) == "ChatEvent(TEXT_DELTA, text='hi')"


def test_html_of_something_else_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="no HTML for a int"):
        to_html(3)
