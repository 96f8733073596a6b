"""A benchmark's latency percentiles drawn against its load (matplotlib, the ``notebook``
extra)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..display.picture import Picture
from ..event_model.extras import MissingExtraError
from .metrics import METRICS
from .report import METRIC_NAMES

if TYPE_CHECKING:
    from .results import BenchResult

__all__ = ["latency_plot"]

_PERCENTILES = ("mean", "p50", "p90", "p95", "p99")


def latency_plot(
    result: BenchResult, metrics: Sequence[str], percentiles: Sequence[str], width: float
) -> Picture:
    """The picture of :meth:`BenchResult.plot <solon_events.bench.results.BenchResult.plot>`."""
    unknown = [m for m in metrics if m not in METRICS] + [
        p for p in percentiles if p not in _PERCENTILES
    ]
    if unknown or not metrics or not percentiles:
        raise ValueError(
            f"plot() draws metrics among {', '.join(METRICS)} at {', '.join(_PERCENTILES)}; "
            f"got {unknown or 'none'}"
        )
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise MissingExtraError("BenchResult.plot()", "matplotlib", "notebook") from None
    points = sorted(result.points, key=lambda p: p.load.value)
    loads = [p.load.value for p in points]
    kinds = {p.load.kind == "concurrency" for p in points}
    x_label = (
        "concurrency"
        if kinds == {True}
        else "request rate (req/s)"
        if kinds == {False}
        else "load (req/s or concurrency)"
    )
    figure = Figure(figsize=(width, 3.2 * len(metrics)), layout="constrained")
    axes = figure.subplots(len(metrics), 1, squeeze=False)[:, 0]
    for axis, metric in zip(axes, metrics):
        for percentile in percentiles:
            values = [getattr(p.summary.metrics[metric], percentile) for p in points]
            shown = [(x, v * 1000) for x, v in zip(loads, values) if v is not None]
            if shown:
                axis.plot(*zip(*shown), marker="o", label=percentile)
        axis.set_ylabel(f"{METRIC_NAMES[metric]} (ms)")
        axis.set_xlabel(x_label)
        axis.grid(True, alpha=0.3)
        axis.legend(loc="upper left", fontsize="small")
    throughput = axes[-1].twinx()
    throughput.plot(
        loads,
        [p.summary.output_throughput for p in points],
        color="grey",
        linestyle="--",
        marker=".",
        label="output tok/s",
    )
    throughput.set_ylabel("output tok/s")
    throughput.legend(loc="lower right", fontsize="small")
    figure.suptitle(f"{result.endpoint.get('model')} at {result.endpoint.get('url')}")
    return Picture(figure)
