"""Benchmark runs against a model endpoint, in any dialect: ``solon-events bench`` and
:func:`benchmark`.

A run sends requests at each of its loads (:class:`Load`: a Poisson, constant or bursty
rate, or a fixed concurrency) with prompts from a dataset or made up to a length
(:mod:`~solon_events.bench.prompts`), times every request as its events arrive (time to
the first event, the first reasoning and answer tokens, inter-token latencies, time per
output token, end to end: :mod:`~solon_events.bench.metrics`), and says what the client
itself cost (CPU per frame, event loop lag), warning when the client rather than the
server set the figures. Its :class:`BenchResult` prints as a table, saves as JSON
(:mod:`~solon_events.bench.schema`) and plots latency percentiles against load.
"""

from __future__ import annotations

from .load import Load, arrival_times
from .metrics import ClientStats, PointSummary, RequestRecord, Slo, Stats, percentile, summarize
from .prompts import BenchPrompt, Lengths, read_dataset, synthetic_prompts
from .results import BenchResult, PointResult
from .run import BenchSettings, benchmark
from .runner import Endpoint

__all__ = [
    "BenchPrompt",
    "BenchResult",
    "BenchSettings",
    "ClientStats",
    "Endpoint",
    "Lengths",
    "Load",
    "PointResult",
    "PointSummary",
    "RequestRecord",
    "Slo",
    "Stats",
    "arrival_times",
    "benchmark",
    "percentile",
    "read_dataset",
    "summarize",
    "synthetic_prompts",
]
