"""The figures of a run as one picture (the ``notebook`` extra's matplotlib).

Left: cost per frame of each dialect's stretched recording against its length, ours and
the baseline (flat lines are the target). Right (when the run has them): the peers,
microseconds per frame on a log scale, one bar per library and dialect.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError as exc:
        raise RuntimeError(
            "plotting the benchmarks needs matplotlib: pip install 'solon-events[notebook]'"
        ) from exc
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def picture(figures: dict[str, Any], path: Path) -> Path:
    """Draw the scaling and peers figures of a run into ``path`` (PNG or SVG)."""
    plt = _pyplot()
    scaling = figures.get("stretched", {}).get("scaling", [])
    peers = [f for f in figures.get("peers", []) if "us_per_frame" in f]
    if peers:
        fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5.2), width_ratios=(1, 1.25))
    else:  # a run without --peers: the scaling figure alone
        fig, left = plt.subplots(figsize=(7, 5.2))
    dialects = list(dict.fromkeys(f["dialect"] for f in scaling))
    colors = dict(zip(dialects, plt.rcParams["axes.prop_cycle"].by_key()["color"]))
    for dialect in dialects:
        rows = [f for f in scaling if f["dialect"] == dialect]
        frames = [f["frames"] for f in rows]
        color = colors[dialect]
        left.plot(frames, [f["us_per_frame"] for f in rows], "o-", color=color, label=dialect)
        left.plot(frames, [f["baseline_us_per_frame"] for f in rows], ":", color=color)
    left.set_xscale("log")
    left.set_ylim(bottom=0)
    left.set_xlabel("frames in the stream (a real recording stretched)")
    left.set_ylabel("CPU µs per frame")
    left.set_title("solon_events replay (solid) vs split + orjson.loads (dotted)")
    left.legend(fontsize="small")
    left.grid(alpha=0.3)

    if peers:
        labels = [f"{f['dialect']}  {f['peer']}" for f in peers]
        values = [f["us_per_frame"] for f in peers]
        bar_colors = ["tab:green" if f["peer"] == "solon_events" else "tab:gray" for f in peers]
        positions = range(len(peers))
        right.barh(list(positions), values, color=bar_colors)
        right.set_yticks(list(positions), labels, fontsize="small")
        right.invert_yaxis()
        right.set_xscale("log")
        right.set_xlabel("CPU µs per frame (log scale)")
        right.set_title("the same bytes through each library")
        for position, value in zip(positions, values):
            right.text(value, position, f" {value:.1f}", va="center", fontsize="x-small")
        right.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
