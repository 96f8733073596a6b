"""Structured output: streaming an object as text, or as a forced tool's arguments (#43).

One object (a list of cities, each with a name, numbers, a list and a note with escapes and
non-ASCII text) of about 10 KB, 100 KB and 1 MB streams from an OpenAI Chat Completions
provider in 20-byte fragments, two ways:

- as text (``"native"`` and ``"prompted"`` modes): ``delta.content`` chunks;
- as a forced tool's arguments (``"tool"`` mode): ``delta.tool_calls[0].function.arguments``
  chunks, read as text by :class:`~solon_events.dialects.output_tool.OutputToolDialect`.

Each row is the whole pipeline over the frames held in memory (``replay()``: the frames
decoded, parsed by the dialect, normalized and aggregated), the object grown from each text
delta as path deltas (``PartialJsonParser(track_deltas=True)``, what the live views draw),
and at the end the answer read and checked against its schema (jsonschema); the baseline
is the bare decode of the same frames (``orjson.loads`` each). Each cell is CPU time (the
best of a few rounds); the cost per KB flat from 10 KB to 1 MB is linear, and the last lines
are the tool route's cost over the text route's, and each row's spread of cost per KB.

``python -m benchmarks.bench_structured`` runs it alone.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import orjson

from solon_events import ChatEventType, PartialJsonParser, replay
from solon_events.core.structured import answer_value
from solon_events.dialects import get_dialect
from solon_events.dialects.base import ChatDialect
from solon_events.dialects.output_tool import OutputToolDialect
from solon_events.tools.output import OutputType

SIZES = (10_000, 100_000, 1_000_000)
"""The object's sizes in bytes (of its JSON text)."""
FRAGMENT = 20
"""Bytes per streamed fragment."""
ROUND_TIME = 1.0
ROUNDS = 30
NAME = "Cities"
SCHEMA = {
    "type": "object",
    "properties": {
        "cities": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "population": {"type": "integer"},
                    "area": {"type": "number"},
                    "landmarks": {"type": "array", "items": {"type": "string"}},
                    "note": {"type": "string"},
                },
                "required": ["name", "population", "area", "landmarks", "note"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["cities"],
    "additionalProperties": False,
}


def answer(size: int) -> str:
    """The JSON text of an object of about ``size`` bytes."""
    city = {
        "name": "Saint-Étienne",
        "population": 172_565,
        "area": 79.97,
        "landmarks": ["Cité du design", 'Musée d\'art "moderne"'],
        "note": "Line one\nline two, a tab\t and ünïcode",
    }
    per_city = len(json.dumps(city)) + 1
    return json.dumps({"cities": [city] * max(1, round(size / per_city))})


def fragments(text: str) -> list[str]:
    return [text[start : start + FRAGMENT] for start in range(0, len(text), FRAGMENT)]


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return orjson.dumps({"id": "c1", "object": "chat.completion.chunk", "choices": [choice]})


_USAGE = orjson.dumps(
    {"id": "c1", "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 10}}
)


def text_frames(text: str) -> list[bytes]:
    """Chat Completions chunks that say ``text`` as the answer's content."""
    body = [_chunk({"role": "assistant", "content": ""})]
    body += [_chunk({"content": piece}) for piece in fragments(text)]
    return [*body, _chunk({}, "stop"), _USAGE, b"[DONE]"]


def tool_frames(text: str) -> list[bytes]:
    """Chat Completions chunks that say ``text`` as the arguments of a call of the tool."""
    start = {"index": 0, "id": "call_1", "type": "function",
             "function": {"name": NAME, "arguments": ""}}  # fmt: skip
    body = [_chunk({"role": "assistant", "tool_calls": [start]})]
    body += [
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
        for piece in fragments(text)
    ]
    return [*body, _chunk({}, "tool_calls"), _USAGE, b"[DONE]"]


def decode_only(frames: Sequence[bytes], _dialect: ChatDialect, _check: OutputType) -> Any:
    """The baseline: each frame's JSON decoded."""
    for frame in frames:
        if frame != b"[DONE]":
            orjson.loads(frame)
    return None


def pipeline(frames: Sequence[bytes], dialect: ChatDialect, check: OutputType) -> Any:
    """The frames through the whole pipeline, the object grown as path deltas, then read
    and checked."""
    parser = PartialJsonParser(track_deltas=True)
    grown = [0]
    end: list[Any] = []
    delta, response_end = ChatEventType.TEXT_DELTA, ChatEventType.RESPONSE_END

    def on_event(event: Any) -> None:
        if event.type is delta:
            parser.feed(event.text)
            grown[0] += len(parser.deltas())
        elif event.type is response_end:
            end.append(event.response)

    replay(frames, dialect=dialect).subscribe(on_event)
    (response,) = end
    return check.check(answer_value(response.text))


ROWS: tuple[tuple[str, Callable[[str], list[bytes]], bool, Callable[..., Any]], ...] = (
    ("bare decode of the text frames", text_frames, False, decode_only),
    ("as text (native, prompted)", text_frames, False, pipeline),
    ("bare decode of the tool frames", tool_frames, True, decode_only),
    ("as a forced tool's arguments", tool_frames, True, pipeline),
)
"""Each row: its label, the frames, whether read through the output tool, and the work."""


def measure(work: Callable[[], Any]) -> float:
    best, spent = math.inf, 0.0
    for _ in range(ROUNDS):
        start = time.process_time()
        work()
        took = time.process_time() - start
        best, spent = min(best, took), spent + took
        if spent >= ROUND_TIME:
            break
    return best


def run(sizes: Sequence[int] = SIZES) -> list[dict[str, Any]]:
    """Every row at every size: ``seconds`` and ``us_per_kb`` (of the object's text)."""
    openai = get_dialect("openai")
    through_tool = OutputToolDialect(openai, NAME)
    check = OutputType.of(SCHEMA, NAME)
    rows = []
    for size in sizes:
        text = answer(size)
        expected = json.loads(text)
        for label, make, tool, work in ROWS:
            frames = make(text)
            dialect = through_tool if tool else openai
            if work is pipeline:
                assert work(frames, dialect, check) == expected
            seconds = measure(lambda: work(frames, dialect, check))  # noqa: B023
            rows.append(
                {
                    "row": label,
                    "size": size,
                    "bytes": len(text),
                    "seconds": seconds,
                    "us_per_kb": seconds * 1e6 / (len(text) / 1000),
                }
            )
    return rows


def _kb(size: int) -> str:
    return f"{size / 1e6:g} MB" if size >= 1_000_000 else f"{size / 1e3:g} KB"


def table(rows: Sequence[dict[str, Any]], sizes: Sequence[int] = SIZES) -> str:
    """µs per KB by size for each row, the tool route over the text route, the spreads."""
    labels = [label for label, *_rest in ROWS]
    width = max(map(len, labels)) + 2
    lines = ["µs per KB (flat = linear)", f"{'':{width}}" + "".join(f"{_kb(s):>12}" for s in sizes)]
    cell = {(row["row"], row["size"]): row for row in rows}
    for label in labels:
        lines.append(
            f"{label:{width}}"
            + "".join(f"{cell[label, size]['us_per_kb']:>12,.1f}" for size in sizes)
        )
    ratios = [
        f"{_kb(size)} {cell[labels[3], size]['seconds'] / cell[labels[1], size]['seconds']:.2f}x"
        for size in sizes
    ]
    lines.append("tool route / text route: " + ", ".join(ratios))
    lines.append(f"cost per KB, largest / smallest, {_kb(sizes[0])} to {_kb(sizes[-1])}:")
    for label in labels:
        per_kb = [cell[label, size]["us_per_kb"] for size in sizes]
        lines.append(f"  {label} {max(per_kb) / min(per_kb):.2f}x")
    return "\n".join(lines)


def main(quick: bool = False) -> list[dict[str, Any]]:
    """Print the table; return its rows."""
    sizes = SIZES[:2] if quick else SIZES
    print(
        f"one object streamed in {FRAGMENT}-byte fragments from Chat Completions, as text and "
        "as a forced tool's arguments: the whole pipeline, the object grown as path deltas, "
        f"checked at the end; CPU time, the best of up to {ROUNDS} rounds within {ROUND_TIME:g} s"
    )
    rows = run(sizes)
    print(table(rows, sizes))
    return rows


if __name__ == "__main__":
    main()
