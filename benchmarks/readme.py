"""The benchmark tables of docs/benchmarks.rst: regenerated from a run's printout, between two
markers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .machine import summary

PAGE = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.rst"
BEGIN = ".. benchmarks-begin (python -m benchmarks --peers --readme writes what follows)"
END = ".. benchmarks-end"
SECTIONS = (
    ("stretched", "Real recordings stretched (the target) and the fixed cost per stream"),
    ("peers", "The same bytes through other libraries"),
    ("e2e", "End to end over loopback"),
    ("memory", "Memory: keeping every event"),
    ("partial", "Partial tool arguments: one long argument streamed in 20-byte fragments"),
    ("breakdown", "Where a corpus replay's time goes"),
)
"""The printed sections the page shows, in order, with their headings."""


def block(figures: dict[str, Any], printed: dict[str, str]) -> str:
    """The generated part of the page: the machine, the picture, each section's printout."""
    lines = [
        BEGIN,
        "",
        f"Measured on: {summary(figures['machine'])}.",
        "",
        ".. image:: ../benchmarks/results/benchmarks.png",
        "   :alt: cost per frame against stream length, and per library",
        "",
    ]
    for key, heading in SECTIONS:
        if key not in printed:
            continue
        lines += [f"{heading}::", ""]
        lines += ["    " + line if line else "" for line in printed[key].rstrip().splitlines()]
        lines.append("")
    lines.append(END)
    return "\n".join(lines)


def update(figures: dict[str, Any], printed: dict[str, str], path: Path = PAGE) -> None:
    """Replace the generated part of ``path`` (appended to its end the first time)."""
    text = path.read_text()
    generated = block(figures, printed)
    if BEGIN in text and END in text:
        start = text.index(BEGIN)
        stop = text.index(END) + len(END)
        text = text[:start] + generated + text[stop:]
    else:
        text = text.rstrip("\n") + "\n\n" + generated + "\n"
    path.write_text(text)
