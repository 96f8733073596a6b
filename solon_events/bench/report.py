"""A benchmark's report: the table ``solon-events bench`` prints (rich), and the same as
HTML for a notebook."""

from __future__ import annotations

import html
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text

from .metrics import METRICS, PointSummary, Stats

if TYPE_CHECKING:
    from .load import Load
    from .results import BenchResult, PointResult

__all__ = ["METRIC_NAMES", "html_report", "metric_rows", "point_lines", "report", "sweep_rows"]

METRIC_NAMES = {
    "ttfe": "time to first event",
    "ttft": "time to first token",
    "first_reasoning": "first reasoning token",
    "first_answer": "first answer token",
    "itl": "inter-token latency",
    "tpot": "time per output token",
    "e2e": "end to end",
}
"""Each timing's name in the report."""

_COLUMNS = ("mean", "p50", "p90", "p95", "p99")


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value * 1000:.1f}"


def metric_rows(summary: PointSummary) -> list[list[str]]:
    """The latency table's rows: each timing that has samples, its mean and percentiles
    in milliseconds."""
    rows = []
    for name in METRICS:
        stats: Stats = summary.metrics[name]
        if stats.count:
            rows.append([METRIC_NAMES[name], *(_ms(getattr(stats, c)) for c in _COLUMNS)])
    return rows


def point_lines(point: PointResult) -> list[str]:
    """The lines under a point's table: requests and errors, throughput, goodput, cost,
    what the client cost."""
    summary = point.summary
    failed = summary.requests - summary.completed
    errors = ", ".join(f"{kind}: {count}" for kind, count in summary.errors.items())
    lines = [
        f"requests: {summary.completed} completed, {failed} failed"
        + (f" ({errors})" if errors else "")
        + f" in {summary.duration:.2f} s",
        f"throughput: {summary.request_throughput:.2f} req/s, "
        f"{summary.output_throughput:.1f} output tok/s "
        f"({summary.total_output_tokens} output tokens)",
    ]
    if summary.slos:
        limits = ", ".join(str(slo) for slo in summary.slos)
        lines.append(
            f"goodput: {summary.goodput:.2f} req/s ({summary.slo_met} of {summary.requests} "
            f"requests within {limits})"
        )
    if summary.cost is not None:
        lines.append(
            f"cost: ${summary.cost:.6f} (${summary.cost / summary.requests:.6f} a request)"
        )
    client = point.client
    per_frame = client.cpu_per_frame
    lag = Stats.of(client.loop_lag)
    lines.append(
        "client: "
        + (f"{per_frame * 1e6:.1f} µs CPU per frame, " if per_frame is not None else "")
        + f"{client.peak_cpu_share:.0%} of a core at most, loop lag p99 "
        + f"{_ms(lag.p99)} ms"
        + (f", {client.processes} processes" if client.processes > 1 else "")
    )
    return lines


def _short(load: Load) -> str:
    if load.concurrency is not None:
        return f"conc {load.concurrency}"
    return f"{load.rate:g}/s" + ("" if load.kind == "poisson" else f" {load.kind}")


def sweep_rows(result: BenchResult) -> list[list[str]]:
    """A sweep's table: one row per load point (load, req/s, output tok/s, TTFT p50/p99,
    ITL p50/p99, E2E p99, errors)."""
    rows = []
    for point in result.points:
        s = point.summary
        m = s.metrics
        rows.append(
            [
                _short(point.load),
                f"{s.request_throughput:.2f}",
                f"{s.output_throughput:.1f}",
                _ms(m["ttft"].p50),
                _ms(m["ttft"].p99),
                _ms(m["itl"].p50),
                _ms(m["itl"].p99),
                _ms(m["e2e"].p99),
                str(s.requests - s.completed),
            ]
        )
    return rows


_SWEEP_COLUMNS = (
    "load", "req/s", "tok/s", "TTFT\np50", "TTFT\np99", "ITL\np50", "ITL\np99", "E2E\np99", "err"
)  # fmt: skip


def _point_table(point: PointResult) -> Table:
    table = Table(
        title=f"{point.load.label} (ms)", box=box.SIMPLE_HEAD, title_justify="left", pad_edge=False
    )
    table.add_column("")
    for column in _COLUMNS:
        table.add_column(column, justify="right")
    for row in metric_rows(point.summary):
        table.add_row(*row)
    return table


def _renderables(result: BenchResult) -> Iterator[Any]:
    for point in result.points:
        yield _point_table(point)
        for line in point_lines(point):
            yield Text(line, no_wrap=True, overflow="ignore")
        for warning in point.warnings:
            yield Text(f"warning: {warning}", style="yellow")
        yield Text("")
    if len(result.points) > 1:
        sweep = Table(title="sweep (ms)", box=box.SIMPLE_HEAD, title_justify="left", pad_edge=False)
        for i, column in enumerate(_SWEEP_COLUMNS):
            sweep.add_column(column, justify="left" if i == 0 else "right", no_wrap=True)
        for row in sweep_rows(result):
            sweep.add_row(*row)
        yield sweep


def report(result: BenchResult) -> Group:
    """The whole report as one rich renderable."""
    return Group(*_renderables(result))


def _html_table(header: list[str], rows: list[list[str]], caption: str) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row) + "</tr>" for row in rows
    )
    return (
        f"<table><caption>{html.escape(caption)}</caption><thead><tr>{head}</tr></thead>"
        f"<tbody>{body}</tbody></table>"
    )


def html_report(result: BenchResult) -> str:
    """The report as HTML (a notebook's display of a result)."""
    parts = []
    for point in result.points:
        parts.append(
            _html_table(["", *_COLUMNS], metric_rows(point.summary), f"{point.load.label} (ms)")
        )
        lines = point_lines(point) + [f"warning: {w}" for w in point.warnings]
        parts.append("<br>".join(html.escape(line) for line in lines))
    if len(result.points) > 1:
        parts.append(_html_table(list(_SWEEP_COLUMNS), sweep_rows(result), "sweep (ms)"))
    return "<div>" + "".join(parts) + "</div>"
