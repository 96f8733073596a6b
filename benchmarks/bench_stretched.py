"""The target of issue #18: cost per frame on long streams of real frames, flat with length.

Each dialect's recording (see :mod:`benchmarks.recordings`) is stretched to 1,000 ...
1,000,000 frames by repeating its text deltas; the whole replay pipeline (events discarded
by the subscriber) is timed against the baseline of :mod:`benchmarks.bench_dialects`
(split the same bytes into payloads, ``orjson.loads`` each). Target: a ratio of at most
3 (Anthropic, whose small frames decode fastest: 4) at every length.

The fixed cost of a stream (subscribing, the stages, the step and response snapshots, the
events every response has) is reported on its own, in microseconds per stream, for the
empty response: the recording's head and tail with no text delta between them. Beside it,
a typical short answer: the head, 20 text deltas and the tail, against what it would cost
at the long-stream rate (:data:`SHORT_FRAMES` frames at the rate of the longest stretched
row, plus the bare decode of the head and tail; target: at most :data:`SHORT_TARGET`
times that).
"""

from __future__ import annotations

import sys
from typing import Any

from solon_events import ChatEventFilter, replay

from . import recordings
from .bench_dialects import SYNTHETIC, best_of, loops_for, replay_once, split_and_decode

SIZES = (1_000, 10_000, 100_000, 1_000_000)
QUICK_SIZES = (1_000, 10_000, 100_000)
TARGET = {"anthropic": 4.0}
"""The ratio each dialect must stay under; 3 for those not named."""
FLAT = 1.25
"""How much the ratio may grow from the shortest to the longest stream and still be flat."""
SHORT_FRAMES = 20
"""The text deltas of the short answer."""
SHORT_TARGET = 1.5
"""How many times its cost at the long-stream rate a short answer may cost."""


def target(dialect: str) -> float:
    """The highest ratio to the baseline that meets the target for ``dialect``."""
    return TARGET.get(dialect, 3.0)


def _count_events(body: bytes, dialect: str) -> int:
    count = 0

    def on_next(_event: object) -> None:
        nonlocal count
        count += 1

    replay(body, dialect, ChatEventFilter.DEFAULT).subscribe(on_next)
    return count


def measure(body: bytes, dialect: str, repeat: int) -> dict[str, float]:
    """Best-of-``repeat`` CPU seconds of one replay of ``body`` and of the baseline.

    Each round runs each side for about 0.1 s: a short stream's rounds of 20 ms were moved
    by the page faults of the memory a longer stream measured before had just given back.
    """
    replay_once(body, dialect)
    works = {
        "base": lambda: split_and_decode(body),
        "ours": lambda: replay_once(body, dialect),
    }
    return best_of(works, loops_for(works["ours"], 0.1), repeat)


def scaling(sizes: tuple[int, ...]) -> list[dict[str, Any]]:
    """One figure per dialect and length: us per frame of ours and of the baseline."""
    figures = []
    for recording in recordings.recordings():
        for frames in sizes:
            body = recordings.stretched(recording, frames)
            best = measure(body, recording.dialect, 1 if frames >= 1_000_000 else 5)
            del body
            figures.append(
                {
                    "dialect": recording.dialect,
                    "frames": frames,
                    "us_per_frame": best["ours"] * 1e6 / frames,
                    "baseline_us_per_frame": best["base"] * 1e6 / frames,
                    "ratio": best["ours"] / best["base"],
                    "target": target(recording.dialect),
                }
            )
    return figures


def fixed_costs() -> list[dict[str, Any]]:
    """The empty response of each dialect: us per stream, ours and the baseline."""
    bodies = [(r.dialect, r.fixed_frames, recordings.empty(r)) for r in recordings.recordings()]
    bodies.append(("ollama (synthetic)", 1, SYNTHETIC["ollama"](1)))
    figures = []
    for label, frames, body in bodies:
        dialect = label.split()[0]
        best = measure(body, dialect, 15)
        figures.append(
            {
                "dialect": label,
                "frames": frames,
                "events": _count_events(body, dialect),
                "us_per_stream": best["ours"] * 1e6,
                "baseline_us_per_stream": best["base"] * 1e6,
            }
        )
    return figures


def short_answers(scaling: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each dialect's short answer (head, :data:`SHORT_FRAMES` text deltas, tail): us per
    stream, and what it would cost at the long-stream rate (the longest row of
    ``scaling``) plus the bare decode of its head and tail."""
    figures = []
    for recording in recordings.recordings():
        rows = [f for f in scaling if f["dialect"] == recording.dialect]
        if not rows:
            continue
        rate = rows[-1]["us_per_frame"]
        body = recordings.stretched(recording, recording.fixed_frames + SHORT_FRAMES)
        empty = recordings.empty(recording)
        best = measure(body, recording.dialect, 15)
        ends = measure(empty, recording.dialect, 15)["base"]
        budget = SHORT_FRAMES * rate + ends * 1e6
        figures.append(
            {
                "dialect": recording.dialect,
                "frames": recording.fixed_frames + SHORT_FRAMES,
                "us_per_stream": best["ours"] * 1e6,
                "at_long_stream_rate_us": budget,
                "ratio": best["ours"] * 1e6 / budget,
                "target": SHORT_TARGET,
            }
        )
    return figures


def verdicts(scaling: list[dict[str, Any]]) -> dict[str, str]:
    """Per dialect: ``ok``, or what misses the target (the ratio, or its growth)."""
    found: dict[str, str] = {}
    for dialect in dict.fromkeys(f["dialect"] for f in scaling):
        rows = [f for f in scaling if f["dialect"] == dialect]
        worst = max(f["ratio"] for f in rows)
        growth = rows[-1]["ratio"] / rows[0]["ratio"]
        misses = []
        if worst > target(dialect):
            misses.append(f"ratio {worst:.2f} > {target(dialect):g}")
        if growth > FLAT:
            misses.append(f"not flat: x{growth:.2f} from {rows[0]['frames']:,} frames")
        found[dialect] = "; ".join(misses) or "ok"
    return found


def main(quick: bool = False) -> dict[str, Any]:
    """Print the stretched rows and the fixed costs; return them as figures."""
    if recordings.missing("stretched recordings"):
        return {}
    figures = scaling(QUICK_SIZES if quick else SIZES)
    print(f"{'dialect':<20}{'frames':>11}{'us/frame':>10}{'baseline':>10}{'ratio':>8}{'target':>8}")
    for f in figures:
        print(
            f"{f['dialect']:<20}{f['frames']:>11,}{f['us_per_frame']:>10.2f}"
            f"{f['baseline_us_per_frame']:>10.2f}{f['ratio']:>8.2f}{f['target']:>8g}"
        )
    found = verdicts(figures)
    print(f"target (ratio <= target at every length, flat within x{FLAT:g}): ", end="")
    print(", ".join(f"{dialect} {verdict}" for dialect, verdict in found.items()))
    print()
    print("fixed cost per stream (the empty response: the recording's head and tail):")
    print(f"{'dialect':<20}{'frames':>11}{'events':>8}{'us/stream':>11}{'baseline':>10}")
    costs = fixed_costs()
    for c in costs:
        print(
            f"{c['dialect']:<20}{c['frames']:>11}{c['events']:>8}{c['us_per_stream']:>11.1f}"
            f"{c['baseline_us_per_stream']:>10.1f}"
        )
    print()
    print(
        f"a short answer ({SHORT_FRAMES} text deltas with the head and tail) against its cost "
        f"at the long-stream rate (+ the bare decode of head and tail), target <= "
        f"{SHORT_TARGET:g}x:"
    )
    print(f"{'dialect':<20}{'frames':>11}{'us/stream':>11}{'at rate':>10}{'ratio':>8}")
    shorts = short_answers(figures)
    for c in shorts:
        print(
            f"{c['dialect']:<20}{c['frames']:>11}{c['us_per_stream']:>11.1f}"
            f"{c['at_long_stream_rate_us']:>10.1f}{c['ratio']:>8.2f}"
        )
    return {"scaling": figures, "verdicts": found, "fixed_cost": costs, "short_answer": shorts}


if __name__ == "__main__":
    main("--quick" in sys.argv)
