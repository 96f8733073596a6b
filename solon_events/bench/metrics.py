"""A benchmark's figures: each request's timings, and their summary (sans-I/O).

Times are seconds. A request's are counted from the moment it was sent:

- ``ttfe``: time to the first event, the first frame of the response;
- ``ttft``: time to the first token, the first content delta (reasoning, answer text, tool
  arguments or a refusal);
- ``first_reasoning`` and ``first_answer``: time to the first reasoning delta and to the
  first answer text delta;
- ``itl``: the inter-token latencies, the gaps between successive content deltas;
- ``tpot``: time per output token after the first, ``(e2e - ttft) / (output_tokens - 1)``;
- ``e2e``: end to end, to the response's end (or its failure).

A summary's percentiles are of all the samples (every request's for a per-request figure,
every gap of every request for ``itl``), interpolated linearly between the two nearest
ranks, as numpy's default; summaries merged from several processes are computed again
from their merged samples, never averaged.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

__all__ = [
    "METRICS",
    "PERCENTILES",
    "SLO_METRICS",
    "ClientStats",
    "PointSummary",
    "RequestRecord",
    "Slo",
    "Stats",
    "percentile",
    "summarize",
]

PERCENTILES = (50, 90, 95, 99)
"""The percentiles every summary gives (and the mean, min and max)."""

METRICS = ("ttfe", "ttft", "first_reasoning", "first_answer", "itl", "tpot", "e2e")
"""The summarised timings, in the order tables show them."""

SLO_METRICS = ("ttfe", "ttft", "first_answer", "tpot", "e2e")
"""The timings an SLO can bound."""


@attrs.frozen
class RequestRecord:
    """One request of a benchmark: when it was sent (``start``, and ``scheduled`` for a
    rate's arrivals; seconds from the load point's start), its timings (see the module's
    docs; None when it never came), the ``output_tokens`` (the provider's count, else an
    estimate: ``output_tokens_estimated``), the ``input_tokens`` the provider counted (or
    an estimate), the ``frames`` received, its ``error`` (a kind, ``"http 429"``,
    ``"ChatTimeoutError"``, ...; None when it succeeded) with ``error_message``, its
    ``cost`` in US dollars (None when not priced), and the ``worker`` process that sent it."""

    index: int
    start: float
    scheduled: float | None = None
    ttfe: float | None = None
    ttft: float | None = None
    first_reasoning: float | None = None
    first_answer: float | None = None
    e2e: float | None = None
    itl: tuple[float, ...] = ()
    output_tokens: int = 0
    output_tokens_estimated: bool = False
    input_tokens: int = 0
    frames: int = 0
    error: str | None = None
    error_message: str | None = None
    cost: float | None = None
    worker: int = 0

    @property
    def ok(self) -> bool:
        """Whether the request succeeded."""
        return self.error is None

    @property
    def tpot(self) -> float | None:
        """Time per output token after the first (None below two tokens or without a first
        token)."""
        if self.ttft is None or self.e2e is None or self.output_tokens < 2:
            return None
        return (self.e2e - self.ttft) / (self.output_tokens - 1)

    def to_json(self) -> dict[str, Any]:
        """The record as the results' JSON writes it (``tpot`` included)."""
        data = attrs.asdict(self)
        data["itl"] = list(self.itl)
        data["tpot"] = self.tpot
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RequestRecord:
        """The record :meth:`to_json` wrote."""
        fields = {f.name for f in attrs.fields(cls)}
        values = {k: v for k, v in data.items() if k in fields}
        values["itl"] = tuple(values.get("itl") or ())
        return cls(**values)


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (0-100) of ``values``, interpolated linearly between the
    nearest ranks (numpy's default method); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


@attrs.frozen
class Stats:
    """A sample's ``count``, ``mean``, ``min``, ``max`` and percentiles (``p50``, ``p90``,
    ``p95``, ``p99``); None for an empty sample."""

    count: int = 0
    mean: float | None = None
    min: float | None = None
    max: float | None = None
    p50: float | None = None
    p90: float | None = None
    p95: float | None = None
    p99: float | None = None

    @classmethod
    def of(cls, values: Iterable[float]) -> Stats:
        """The stats of ``values``."""
        ordered = sorted(values)
        if not ordered:
            return cls()
        p50, p90, p95, p99 = (percentile(ordered, q) for q in PERCENTILES)
        return cls(
            len(ordered), math.fsum(ordered) / len(ordered), ordered[0], ordered[-1],
            p50, p90, p95, p99,
        )  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        """The stats as a JSON object."""
        return attrs.asdict(self)


_SLO = re.compile(r"^([a-z_0-9]+)[:=]([0-9.]+)(ms|s)?$")


@attrs.frozen
class Slo:
    """A service-level objective: ``metric`` (one of :data:`SLO_METRICS`) at most
    ``limit`` seconds."""

    metric: str
    limit: float

    @classmethod
    def parse(cls, text: str) -> Slo:
        """``"ttft:500"`` (milliseconds, as vLLM's ``--goodput``), ``"ttft:500ms"`` or
        ``"e2e:2s"``."""
        found = _SLO.match(text.strip().lower())
        if not found or found.group(1) not in SLO_METRICS:
            raise ValueError(
                f"not an SLO: {text!r} (expected METRIC:MILLISECONDS, METRIC among "
                f"{', '.join(SLO_METRICS)}; e.g. ttft:500 or e2e:2s)"
            )
        try:
            value = float(found.group(2))
        except ValueError:
            raise ValueError(f"not an SLO: {text!r}") from None
        return cls(found.group(1), value if found.group(3) == "s" else value / 1000)

    def met(self, record: RequestRecord) -> bool:
        """Whether ``record`` succeeded within this objective (a request of fewer than two
        tokens meets any ``tpot``)."""
        value = getattr(record, self.metric)
        if value is None:
            return self.metric == "tpot" and record.ok
        return record.ok and value <= self.limit

    def __str__(self) -> str:
        return f"{self.metric} <= {self.limit * 1000:g} ms"


@attrs.frozen
class ClientStats:
    """What the benchmark client itself cost, in one process or merged over several:
    its CPU time and wall time (seconds, summed over processes: ``processes``), the frames
    it read, its event loop's lag samples (how late a 10 ms timer fired, seconds), and the
    busiest process's share of a core (``peak_cpu_share``)."""

    cpu_seconds: float = 0.0
    wall_seconds: float = 0.0
    frames: int = 0
    loop_lag: tuple[float, ...] = ()
    processes: int = 1
    peak_cpu_share: float = 0.0
    machine_busy: float | None = None

    @property
    def cpu_per_frame(self) -> float | None:
        """The client's CPU time per frame read (seconds)."""
        return self.cpu_seconds / self.frames if self.frames else None

    def merged(self, other: ClientStats) -> ClientStats:
        """The stats of two sets of processes that ran side by side."""
        busy = [b for b in (self.machine_busy, other.machine_busy) if b is not None]
        return ClientStats(
            self.cpu_seconds + other.cpu_seconds,
            max(self.wall_seconds, other.wall_seconds),
            self.frames + other.frames,
            self.loop_lag + other.loop_lag,
            self.processes + other.processes,
            max(self.peak_cpu_share, other.peak_cpu_share),
            max(busy) if busy else None,
        )

    def to_json(self) -> dict[str, Any]:
        """The stats as the results' JSON writes them (the lag summarised)."""
        return {
            "cpu_seconds": self.cpu_seconds,
            "wall_seconds": self.wall_seconds,
            "frames": self.frames,
            "cpu_per_frame": self.cpu_per_frame,
            "processes": self.processes,
            "peak_cpu_share": self.peak_cpu_share,
            "machine_busy": self.machine_busy,
            "loop_lag": Stats.of(self.loop_lag).to_json(),
            "loop_lag_samples": list(self.loop_lag),
        }


@attrs.frozen
class PointSummary:
    """The summary of one load point's requests (see :func:`summarize`)."""

    requests: int
    completed: int
    errors: Mapping[str, int]
    duration: float
    request_throughput: float
    output_throughput: float
    total_input_tokens: int
    total_output_tokens: int
    estimated_output_requests: int
    metrics: Mapping[str, Stats]
    slos: tuple[Slo, ...] = ()
    slo_met: int | None = None
    goodput: float | None = None
    cost: float | None = None
    schedule_lag: Stats = Stats()

    def to_json(self) -> dict[str, Any]:
        """The summary as the results' JSON writes it."""
        return {
            "requests": self.requests,
            "completed": self.completed,
            "failed": self.requests - self.completed,
            "errors": dict(self.errors),
            "duration": self.duration,
            "request_throughput": self.request_throughput,
            "output_throughput": self.output_throughput,
            "total_input_tokens": self.total_input_tokens,
            "total_output_tokens": self.total_output_tokens,
            "estimated_output_requests": self.estimated_output_requests,
            "slos": {slo.metric: slo.limit for slo in self.slos},
            "slo_met": self.slo_met,
            "goodput": self.goodput,
            "cost": self.cost,
            "schedule_lag": self.schedule_lag.to_json(),
            "metrics": {name: stats.to_json() for name, stats in self.metrics.items()},
        }


def _values(records: Sequence[RequestRecord], name: str) -> list[float]:
    if name == "itl":
        return [gap for r in records for gap in r.itl]
    return [v for r in records if (v := getattr(r, name)) is not None]


def summarize(records: Sequence[RequestRecord], slos: Sequence[Slo] = ()) -> PointSummary:
    """The summary of a load point's ``records``: the completed requests' timings (mean,
    percentiles), the request and output token throughputs over the point's ``duration``
    (from its start to the end of its last request), the errors by kind, the goodput
    (completed requests per second that met every SLO of ``slos``), the output tokens
    (those of failed requests too: they were generated), and the total cost when every
    request was priced."""
    done = [r for r in records if r.ok]
    ends = [r.start + r.e2e for r in records if r.e2e is not None]
    duration = max(ends, default=0.0)
    rate = (lambda n: n / duration) if duration > 0 else (lambda n: 0.0)
    output = sum(r.output_tokens for r in records)
    met = sum(all(slo.met(r) for slo in slos) for r in done) if slos else None
    costs = [r.cost for r in records]
    lags = [r.start - r.scheduled for r in records if r.scheduled is not None]
    return PointSummary(
        requests=len(records),
        completed=len(done),
        errors=dict(sorted(Counter(r.error for r in records if r.error).items())),
        duration=duration,
        request_throughput=rate(len(done)),
        output_throughput=rate(output),
        total_input_tokens=sum(r.input_tokens for r in records),
        total_output_tokens=output,
        estimated_output_requests=sum(r.output_tokens_estimated for r in records),
        metrics={name: Stats.of(_values(done, name)) for name in METRICS},
        slos=tuple(slos),
        slo_met=met,
        goodput=rate(met) if met is not None else None,
        cost=math.fsum(costs) if costs and None not in costs else None,  # type: ignore[arg-type]
        schedule_lag=Stats.of(lags),
    )
