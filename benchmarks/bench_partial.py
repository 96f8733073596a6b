"""Partial tool arguments: the cost of parsing one long argument as it streams (#16).

One ``write_report`` argument (the devserver's ``long-args`` scenario: a report of sections
with paragraphs, a table, escapes and non-ASCII text) of about 1 KB, 10 KB, 100 KB and 1 MB
arrives in 20-byte fragments. After each fragment every parser gives the value so far:

- ours: one :class:`~solon_events.core.partial_json.PartialJsonParser` fed each fragment,
  ``value()`` after each (what ``partial_arguments()`` does); also fed each fragment with
  ``value()`` only at the end (the parsing alone);
- jiter (the official OpenAI and Anthropic SDKs): ``from_json(buffer,
  partial_mode="trailing-strings")`` on the accumulated bytes, after each fragment;
- ``partial-json-parser``: ``loads(buffer)`` on the accumulated text;
- LangChain: ``langchain_core.utils.json.parse_partial_json(buffer)``.

Each cell is the CPU time of the whole argument (best of a few rounds) and its cost per KB:
a parser whose cost per KB stays flat from 1 KB to 1 MB is linear. Our parsing is; a
snapshot after each fragment also copies the open containers' members (the snapshot is a
fresh plain list that later fragments never change): the sections so far, about a thousand
per fragment on average at 1 MB, which is what grows there. The peers re-read the
whole buffer on each fragment, which is quadratic: a size whose projected time (from the
smaller sizes) exceeds the budget is skipped and its projection printed. A peer that is not
installed (the ``bench`` extra) is listed as such; one whose final value differs from
``json.loads`` is listed with the difference.

A second table (#35) streams one *string* argument (``{"path": ..., "content": "..."}``,
the content 10 KB to 1 MB of text with escapes and non-ASCII, in 20-byte fragments): a
snapshot after each fragment copies the open string, which is quadratic, while path
deltas (``PartialJsonParser(track_deltas=True)`` and ``deltas()``; applied to a
``JsonDeltaBuilder``; ``ArgumentDeltas`` over the argument delta events, as the live
views run it) cost each fragment alone. Its last line is the spread of each row's cost
per KB from 10 KB to 1 MB (the largest over the smallest; 1.0x is perfectly linear).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from typing import Any

from solon_events import ChatEvent, ChatEventType
from solon_events.core.json_deltas import JsonDeltaBuilder
from solon_events.core.partial_arguments import ArgumentDeltas
from solon_events.core.partial_json import PartialJsonParser
from solon_events.devserver.scenarios import report_arguments

from .machine import version

SIZES = (1_000, 10_000, 100_000, 1_000_000)
"""The argument's sizes in bytes (its JSON text is ASCII: bytes and characters alike)."""
FRAGMENT = 20
"""Bytes per streamed fragment."""
BUDGET = 10.0
"""Seconds one round of one cell may be projected to take before the size is skipped."""
QUICK_BUDGET = 1.0
ROUND_TIME = 1.0
"""A cell's rounds stop once they have taken this long in all (at least one round)."""
ROUNDS = 100
"""At most this many rounds per cell (the small sizes: their best is steadier)."""

Parse = Callable[[Sequence[str]], Any]
"""Parses an argument's fragments in order, the value so far after each; returns the last."""


def argument(size: int) -> str:
    """The JSON text of a ``write_report`` argument of about ``size`` bytes."""
    per_section = len(json.dumps(report_arguments(10))) / 10
    return json.dumps(report_arguments(max(1, round(size / per_section))))


def fragments(text: str, size: int = FRAGMENT) -> list[str]:
    """``text`` cut every ``size`` characters."""
    return [text[start : start + size] for start in range(0, len(text), size)]


def ours(pieces: Sequence[str]) -> Any:
    """Our parser, a snapshot after each fragment."""
    parser = PartialJsonParser()
    value = None
    for piece in pieces:
        parser.feed(piece)
        value = parser.value()
    return value


def ours_feed_only(pieces: Sequence[str]) -> Any:
    """Our parser fed each fragment, its value read once at the end."""
    parser = PartialJsonParser()
    for piece in pieces:
        parser.feed(piece)
    return parser.value()


def _jiter() -> Parse:
    from jiter import from_json

    def parse(pieces: Sequence[str]) -> Any:
        buffer = b""
        value = None
        for piece in pieces:
            buffer += piece.encode()
            value = from_json(buffer, partial_mode="trailing-strings")
        return value

    return parse


def _partial_json_parser() -> Parse:
    from partial_json_parser import loads

    return _reparsing(loads)


def _langchain() -> Parse:
    from langchain_core.utils.json import parse_partial_json

    return _reparsing(parse_partial_json)


def _reparsing(loads: Callable[[str], Any]) -> Parse:
    """A parser that reads the whole accumulated text after each fragment."""

    def parse(pieces: Sequence[str]) -> Any:
        buffer = ""
        value = None
        for piece in pieces:
            buffer += piece
            value = loads(buffer)
        return value

    return parse


PARSERS: tuple[tuple[str, str | None, Callable[[], Parse]], ...] = (
    ("solon_events, value() each fragment", None, lambda: ours),
    ("solon_events, value() at the end", None, lambda: ours_feed_only),
    ('jiter partial_mode="trailing-strings"', "jiter", _jiter),
    ("partial-json-parser loads", "partial-json-parser", _partial_json_parser),
    ("LangChain parse_partial_json", "langchain-core", _langchain),
)
"""Each parser: its label, the package it comes from (None: ours) and how to get it."""


def measure(parse: Parse, pieces: Sequence[str]) -> tuple[float, Any]:
    """The best CPU time of ``parse`` over ``pieces`` (a few rounds), and its result."""
    best = math.inf
    spent = 0.0
    value = None
    for _ in range(ROUNDS):
        start = time.process_time()
        value = parse(pieces)
        took = time.process_time() - start
        best = min(best, took)
        spent += took
        if spent >= ROUND_TIME:
            break
    return best, value


def projection(done: Sequence[tuple[int, float]], size: int) -> float:
    """The time a parser would take on ``size`` bytes, from its last two measured sizes
    (growing at least linearly), or from its last one if only one."""
    (last_size, last_time) = done[-1]
    exponent = 2.0
    if len(done) > 1:
        before_size, before_time = done[-2]
        if before_time > 0 and last_time > 0:
            exponent = math.log(last_time / before_time) / math.log(last_size / before_size)
            exponent = max(1.0, exponent)
    return last_time * (size / last_size) ** exponent


def run(sizes: Sequence[int] = SIZES, budget: float = BUDGET) -> list[dict[str, Any]]:
    """Every parser on every size: one row per (parser, size) with ``seconds`` and
    ``us_per_kb``, or ``projected`` (skipped), ``error`` or ``missing``."""
    texts = {size: argument(size) for size in sizes}
    rows: list[dict[str, Any]] = []
    for label, package, load in PARSERS:
        try:
            parse = load()
        except ImportError:
            rows.append({"parser": label, "missing": package})
            continue
        done: list[tuple[int, float]] = []
        for size in sizes:
            text = texts[size]
            row: dict[str, Any] = {"parser": label, "size": size, "bytes": len(text)}
            rows.append(row)
            if done and (projected := projection(done, len(text))) > budget:
                row["projected"] = projected
                continue
            try:
                seconds, value = measure(parse, fragments(text))
            except Exception as exc:  # a peer that cannot parse it: shown, not fatal
                row["error"] = f"{type(exc).__name__}: {exc}"[:80]
                break
            if value != json.loads(text):
                row["error"] = "its final value differs from json.loads"
                break
            row["seconds"] = seconds
            row["us_per_kb"] = seconds * 1e6 / (len(text) / 1000)
            done.append((len(text), seconds))
    return rows


def _cell(row: dict[str, Any] | None, key: str) -> str:
    if row is None:
        return ""
    if "projected" in row:
        return f"skip ~{row['projected']:.0f} s"
    if "error" in row:
        return "failed"
    value = row[key]
    return f"{value * 1e3:,.1f}" if key == "seconds" else f"{value:,.0f}"


def _kb(size: int) -> str:
    return f"{size / 1e6:g} MB" if size >= 1_000_000 else f"{size / 1e3:g} KB"


def _two_tables(
    rows: Sequence[dict[str, Any]], labels: Sequence[str], sizes: Sequence[int]
) -> list[str]:
    """The rows as two tables, µs per KB and total ms: a line per label, a column per size
    (a row marked ``missing`` fills its label's line)."""
    width = max(len(label) for label in labels) + 2
    header = f"{'':{width}}" + "".join(f"{_kb(size):>14}" for size in sizes)
    lines = []
    for title, key in (("µs per KB (flat = linear)", "us_per_kb"), ("total ms", "seconds")):
        lines += [title, header]
        for label in labels:
            mine = [row for row in rows if row["parser"] == label]
            if mine and "missing" in mine[0]:
                lines.append(f"{label:{width}}not installed ({mine[0]['missing']})")
                continue
            cells = [mine[i] if i < len(mine) else None for i in range(len(sizes))]
            lines.append(f"{label:{width}}" + "".join(f"{_cell(c, key):>14}" for c in cells))
        lines.append("")
    return lines


def table(rows: Sequence[dict[str, Any]], sizes: Sequence[int] = SIZES) -> str:
    """The rows as two tables (µs per KB, total ms) and the peers' versions and failures."""
    lines = _two_tables(rows, [label for label, _package, _load in PARSERS], sizes)
    for row in rows:
        if "error" in row:
            lines.append(f"{row['parser']} failed at {row['bytes']:,} bytes: {row['error']}")
    ours_fast = _ratios(rows)
    if ours_fast:
        lines.append(ours_fast)
    versions = [f"{package} {version(package)}" for _l, package, _f in PARSERS if package]
    lines.append("versions: " + ", ".join(versions))
    return "\n".join(lines)


def _ratios(rows: Sequence[dict[str, Any]]) -> str:
    """How many times slower than ours (value() each fragment) the fastest peer is, by size."""
    ours_label = PARSERS[0][0]
    mine = {row["size"]: row["seconds"] for row in rows
            if row["parser"] == ours_label and "seconds" in row}  # fmt: skip
    peer_labels = {label for label, package, _load in PARSERS if package}
    parts = []
    for size, seconds in mine.items():
        peers = [row for row in rows if row["parser"] in peer_labels and row.get("size") == size]
        times = [(row["seconds"], "") for row in peers if "seconds" in row]
        times += [(row["projected"], "~") for row in peers if "projected" in row]
        if times:
            fastest, about = min(times)
            parts.append(f"{_kb(size)} {about}{fastest / seconds:,.1f}x")
    if not parts:
        return ""
    return "fastest peer / ours (value() each fragment; ~ projected): " + ", ".join(parts)


STRING_SIZES = (10_000, 100_000, 1_000_000)
"""The string argument's sizes in bytes (its content's text, before JSON escaping)."""
_LINE = 'Line of notes: a "quoted" word, a tab\t, café ünïcode; '
"""The content's text, repeated: escapes and non-ASCII, as a file's text has them."""


def string_argument(size: int) -> str:
    """The JSON text of a ``write_file`` argument whose content is ``size`` characters."""
    content = (_LINE * (size // len(_LINE) + 1))[:size]
    return json.dumps({"path": "notes/meeting.txt", "content": content})


def snapshots(pieces: Sequence[str]) -> Any:
    """A snapshot (``value()``) after each fragment, as ``partial_arguments()`` takes."""
    return ours(pieces)


def path_deltas(pieces: Sequence[str]) -> Any:
    """``deltas()`` after each fragment; the value read once at the end."""
    parser = PartialJsonParser(track_deltas=True)
    for piece in pieces:
        parser.feed(piece)
        parser.deltas()
    return parser.value()


def built_from_deltas(pieces: Sequence[str]) -> Any:
    """``deltas()`` after each fragment, applied to a ``JsonDeltaBuilder``."""
    parser = PartialJsonParser(track_deltas=True)
    builder = JsonDeltaBuilder()
    for piece in pieces:
        parser.feed(piece)
        builder.extend(parser.deltas())
    return builder.value()


def argument_deltas_over_events(pieces: Sequence[str]) -> Any:
    """``ArgumentDeltas(build=True)`` fed one TOOL_CALL_ARGS_DELTA event per fragment (the
    events made beforehand), as the live views run it."""
    return _over_events(_events(pieces))


def _events(pieces: Sequence[str]) -> list[ChatEvent]:
    delta = ChatEventType.TOOL_CALL_ARGS_DELTA
    return [ChatEvent(ChatEventType.TOOL_CALL_START, index=0, tool_call_id="call_1")] + [
        ChatEvent(delta, index=0, text=piece) for piece in pieces
    ]


def _over_events(events: Sequence[ChatEvent]) -> Any:
    follow = ArgumentDeltas(build=True)
    call = None
    for event in events:
        call = follow.feed(event) or call
    return call.value() if call is not None else None


STRING_ROWS: tuple[tuple[str, Parse], ...] = (
    ("snapshot, value() each fragment", snapshots),
    ("path deltas, deltas() each fragment", path_deltas),
    ("path deltas applied (JsonDeltaBuilder)", built_from_deltas),
    ("ArgumentDeltas over the delta events", argument_deltas_over_events),
)
"""The string table's rows: label, and what parses the fragments."""


def string_run(sizes: Sequence[int] = STRING_SIZES) -> list[dict[str, Any]]:
    """Every row of the string table at every size: ``seconds`` and ``us_per_kb`` (of the
    argument's JSON text)."""
    rows: list[dict[str, Any]] = []
    for size in sizes:
        text = string_argument(size)
        pieces = fragments(text)
        expected = json.loads(text)
        events = _events(pieces)
        for label, parse in STRING_ROWS:
            if parse is argument_deltas_over_events:  # time the views' work, not making events
                seconds, value = measure(
                    lambda _pieces, events=events: _over_events(events), pieces
                )
            else:
                seconds, value = measure(parse, pieces)
            row: dict[str, Any] = {"parser": label, "size": size, "bytes": len(text)}
            if value != expected:
                row["error"] = "its final value differs from json.loads"
            else:
                row["seconds"] = seconds
                row["us_per_kb"] = seconds * 1e6 / (len(text) / 1000)
            rows.append(row)
    return rows


def string_table(rows: Sequence[dict[str, Any]], sizes: Sequence[int] = STRING_SIZES) -> str:
    """The string table: µs per KB and total ms by size, then each row's spread."""
    labels = [label for label, _parse in STRING_ROWS]
    lines = _two_tables(rows, labels, sizes)
    spreads = []
    for label in labels:
        per_kb = [row["us_per_kb"] for row in rows if row["parser"] == label and "us_per_kb" in row]
        if len(per_kb) > 1:
            spreads.append(f"{label} {max(per_kb) / min(per_kb):.2f}x")
    lines.append(f"cost per KB, largest / smallest, {_kb(sizes[0])} to {_kb(sizes[-1])}:")
    lines += [f"  {spread}" for spread in spreads]
    lines += [f"{row['parser']} failed at {row['bytes']:,} bytes: {row['error']}"
              for row in rows if "error" in row]  # fmt: skip
    return "\n".join(lines)


def main(quick: bool = False, only_strings: bool = False) -> list[dict[str, Any]]:
    """Print the partial-arguments tables; return their rows."""
    rows: list[dict[str, Any]] = []
    if not only_strings:
        print(
            f"one write_report argument streamed in {FRAGMENT}-byte fragments, the value so "
            f"far after each; CPU time, the best of up to {ROUNDS} rounds within "
            f"{ROUND_TIME:g} s"
        )
        rows = run(SIZES, QUICK_BUDGET if quick else BUDGET)
        print(table(rows))
        print()
    print(
        f"one string argument (a file's content) streamed in {FRAGMENT}-byte fragments: "
        "snapshots against path deltas; CPU time as above"
    )
    strings = string_run(STRING_SIZES[:2] if quick else STRING_SIZES)
    print(string_table(strings, STRING_SIZES[:2] if quick else STRING_SIZES))
    return rows + [{"table": "string", **row} for row in strings]


if __name__ == "__main__":
    import sys

    main(quick="--quick" in sys.argv, only_strings="strings" in sys.argv)
