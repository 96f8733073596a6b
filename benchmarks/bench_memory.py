"""Memory: what a delivered event and a stream keep alive, and what keeping events costs.

Per dialect, over its recording stretched to N frames (:mod:`benchmarks.recordings`):

- ``B/event``: bytes allocated and still alive (``tracemalloc``) per delivered event when the
  subscriber keeps every event, the body itself excluded;
- ``B/stream``: the same for the empty response, per stream (what one short answer's
  events hold);
- the CPU time of a replay whose subscriber keeps every event (``events.append``, and
  ``ops.to_list()``) against one that discards them, as ratios (target: keeping at most
  1.5 times discarding); and ``gc off``: keeping with the cyclic garbage collector
  disabled, which shows how much of keeping's cost is the collector walking the kept
  events and the provider frames they hold.
"""

from __future__ import annotations

import gc
import sys
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

from reactivex import operators as ops

from solon_events import ChatEventFilter, replay

from . import recordings

FRAMES = 100_000
QUICK_FRAMES = 10_000
KEEP_TARGET = 1.5


def _kept(body: bytes, dialect: str) -> list[Any]:
    events: list[Any] = []
    replay(body, dialect, ChatEventFilter.DEFAULT).subscribe(events.append)
    return events


def retained_bytes(body: bytes, dialect: str) -> tuple[int, int]:
    """Bytes still allocated while the events of one replay of ``body`` are kept; events."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        events = _kept(body, dialect)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    return held, len(events)


def _cpu(work: Callable[[], object], collector: bool = True) -> float:
    """CPU seconds of one run of ``work``; what it returns is dropped after the clock stops
    (freeing is not counted), the collector on or off during it."""
    gc.collect()
    if not collector:
        gc.disable()
    try:
        start = time.process_time()
        kept = work()
        spent = time.process_time() - start
    finally:
        gc.enable()
    del kept
    return spent


def keeping_cost(body: bytes, dialect: str, repeat: int = 5) -> dict[str, float]:
    """Least CPU seconds, over ``repeat`` rounds, of a replay that discards its events, keeps
    them (append, to_list) and keeps them with the collector off. The four take turns in
    each round, so a change in the machine's load reaches them alike."""

    def discard() -> None:
        replay(body, dialect, ChatEventFilter.DEFAULT).subscribe(lambda _e: None)

    def to_list() -> Any:
        return replay(body, dialect, ChatEventFilter.DEFAULT).pipe(ops.to_list()).run()

    def keep() -> Any:
        return _kept(body, dialect)

    runs: dict[str, tuple[Callable[[], object], bool]] = {
        "discard": (discard, True),
        "keep": (keep, True),
        "to_list": (to_list, True),
        "keep_gc_off": (keep, False),
    }
    best = dict.fromkeys(runs, float("inf"))
    for _ in range(repeat):
        for name, (work, collector) in runs.items():
            best[name] = min(best[name], _cpu(work, collector))
    return best


def measure(frames: int) -> list[dict[str, Any]]:
    """One figure per dialect: retained bytes per event and per stream, keeping's cost."""
    figures = []
    for recording in recordings.recordings():
        body = recordings.stretched(recording, frames)
        held, events = retained_bytes(recordings.stretched(recording, 10_000), recording.dialect)
        empty_held, _ = retained_bytes(recordings.empty(recording), recording.dialect)
        cost = keeping_cost(body, recording.dialect)
        figures.append(
            {
                "dialect": recording.dialect,
                "frames": frames,
                "bytes_per_event": held / events,
                "bytes_per_stream": empty_held,
                "discard_us_per_frame": cost["discard"] * 1e6 / frames,
                "keep_ratio": cost["keep"] / cost["discard"],
                "to_list_ratio": cost["to_list"] / cost["discard"],
                "keep_gc_off_ratio": cost["keep_gc_off"] / cost["discard"],
            }
        )
    return figures


def main(quick: bool = False) -> list[dict[str, Any]]:
    """Print the memory table; return its figures."""
    frames = QUICK_FRAMES if quick else FRAMES
    if recordings.missing("memory"):
        return []
    figures = measure(frames)
    print(f"kept vs discarded events over {frames:,} frames (target: keep <= {KEEP_TARGET:g}x)")
    print(
        f"{'dialect':<18}{'B/event':>9}{'B/stream':>10}{'discard us/fr':>15}"
        f"{'keep':>7}{'to_list':>9}{'gc off':>8}"
    )
    for f in figures:
        print(
            f"{f['dialect']:<18}{f['bytes_per_event']:>9.0f}{f['bytes_per_stream']:>10,.0f}"
            f"{f['discard_us_per_frame']:>15.2f}{f['keep_ratio']:>7.2f}"
            f"{f['to_list_ratio']:>9.2f}{f['keep_gc_off_ratio']:>8.2f}"
        )
    return figures


if __name__ == "__main__":
    main("--quick" in sys.argv)
