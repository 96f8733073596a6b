"""A benchmark's results: each load point's requests, summary and client cost; as JSON
(:data:`~solon_events.bench.schema.SCHEMA_ID`, documented in the benchmarking guide), as a
table, and as a plot of latency percentiles against load."""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import orjson

from .load import Load
from .metrics import ClientStats, PointSummary, RequestRecord, Slo, Stats, summarize
from .schema import SCHEMA_ID

__all__ = ["CPU_BOUND", "LAG_BOUND", "BenchResult", "PointResult"]

CPU_BOUND = 0.9
"""A client process that used more than this share of a core was saturated: its timings
include its own queueing."""

LAG_BOUND = 0.02
"""An event loop lag (or a send behind schedule) over this many seconds, at the 99th
percentile, means the client, not the server, delayed what it measured."""


@attrs.frozen
class PointResult:
    """One load point: its ``load``, every request's ``records`` (in request order), what
    the client itself cost (``client``) and the SLOs its goodput is counted against."""

    load: Load
    records: tuple[RequestRecord, ...]
    client: ClientStats
    slos: tuple[Slo, ...] = ()

    @functools.cached_property
    def summary(self) -> PointSummary:
        """The summary of :attr:`records` (:func:`~solon_events.bench.metrics.summarize`)."""
        return summarize(self.records, self.slos)

    @property
    def warnings(self) -> list[str]:
        """Why the figures may measure the client rather than the server: a process that
        used a whole core, an event loop that ran late, sends behind their schedule, a busy
        machine; and output tokens that are estimates."""
        said = []
        client = self.client
        if client.peak_cpu_share > CPU_BOUND:
            said.append(
                f"the client was saturated: a process used {client.peak_cpu_share:.0%} of a "
                "core (CPU time near wall time); its timings include its own queueing "
                "(spread the load with --workers)"
            )
        lag = Stats.of(client.loop_lag).p99
        if lag is not None and lag > LAG_BOUND:
            said.append(
                f"the client's event loop ran late: p99 lag {lag * 1000:.1f} ms (over "
                f"{LAG_BOUND * 1000:g} ms); timings are late by as much"
            )
        behind = self.summary.schedule_lag.p99
        if behind is not None and behind > LAG_BOUND and self.load.max_concurrency is None:
            said.append(
                f"requests were sent behind their schedule: p99 {behind * 1000:.1f} ms late"
            )
        if client.machine_busy is not None and client.machine_busy > CPU_BOUND:
            said.append(f"the machine was {client.machine_busy:.0%} busy during the run")
        estimated = self.summary.estimated_output_requests
        if estimated:
            said.append(
                f"{estimated} of {len(self.records)} requests had no output token count "
                "from the provider: theirs are estimated"
            )
        return said

    def to_json(self) -> dict[str, Any]:
        """The point as the results' JSON writes it."""
        return {
            "load": self.load.to_json(),
            "summary": self.summary.to_json(),
            "client": self.client.to_json(),
            "warnings": self.warnings,
            "requests": [record.to_json() for record in self.records],
        }


@attrs.frozen
class BenchResult:
    """A benchmark's results: the ``endpoint`` (URL, dialect, model; never a key), the
    ``settings`` it ran with, and each load point's :class:`PointResult` in ``points``.

    ``to_json()`` / ``save(path)`` write the documented JSON, ``load(path)`` reads it back;
    ``table()`` is the report as a rich renderable (what ``solon-events bench`` prints);
    ``plot()`` draws latency percentiles against load (matplotlib, the ``notebook``
    extra); in a notebook the result shows its table.
    """

    endpoint: Mapping[str, Any]
    settings: Mapping[str, Any]
    points: tuple[PointResult, ...]

    def to_json(self) -> dict[str, Any]:
        """The results as a JSON object (see the benchmarking guide for its schema)."""
        return {
            "schema": SCHEMA_ID,
            "endpoint": dict(self.endpoint),
            "settings": dict(self.settings),
            "points": [point.to_json() for point in self.points],
        }

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write :meth:`to_json` to ``path``; returns the path."""
        target = Path(path)
        target.write_bytes(orjson.dumps(self.to_json(), option=orjson.OPT_INDENT_2) + b"\n")
        return target

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BenchResult:
        """The results :meth:`to_json` wrote (summaries are computed again from the
        requests)."""
        if data.get("schema") != SCHEMA_ID:
            raise ValueError(f"not {SCHEMA_ID} results: schema {data.get('schema')!r}")
        slos = tuple(Slo(name, limit) for name, limit in data["settings"]["slos"].items())
        points = []
        for point in data["points"]:
            client = point["client"]
            points.append(
                PointResult(
                    Load.from_json(point["load"]),
                    tuple(RequestRecord.from_json(r) for r in point["requests"]),
                    ClientStats(
                        cpu_seconds=client["cpu_seconds"],
                        wall_seconds=client["wall_seconds"],
                        frames=client["frames"],
                        loop_lag=tuple(client.get("loop_lag_samples") or ()),
                        processes=client["processes"],
                        peak_cpu_share=client["peak_cpu_share"],
                        machine_busy=client["machine_busy"],
                    ),
                    slos,
                )
            )
        return cls(data["endpoint"], data["settings"], tuple(points))

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> BenchResult:
        """The results saved at ``path``."""
        return cls.from_json(orjson.loads(Path(path).read_bytes()))

    def table(self) -> Any:
        """The report as a rich renderable: each point's latency table, its throughput,
        goodput, errors, client cost and warnings; a sweep's table of the points."""
        from .report import report

        return report(self)

    def __rich__(self) -> Any:
        return self.table()

    def _repr_html_(self) -> str:
        from .report import html_report

        return html_report(self)

    def plot(
        self,
        metrics: Sequence[str] = ("ttft", "itl", "e2e"),
        percentiles: Sequence[str] = ("p50", "p90", "p99"),
        *,
        width: float = 10.0,
    ) -> Any:
        """Latency percentiles against load: one panel per metric (milliseconds), one line
        per percentile, the loads on the x axis (rate or concurrency), with the
        throughput on a second axis of the last panel. Returns a
        :class:`~solon_events.display.picture.Picture` (shows itself in a notebook,
        ``save(path)`` writes PNG or SVG). Needs the ``notebook`` extra (matplotlib)."""
        from .plot import latency_plot

        return latency_plot(self, metrics, percentiles, width)

    def __repr__(self) -> str:
        loads = ", ".join(point.load.label for point in self.points)
        return f"<BenchResult {self.endpoint.get('model')!r}: {loads}>"
