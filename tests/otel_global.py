"""The process's global OpenTelemetry providers for the telemetry tests.

The SDK's in-memory exporters stand in for a backend: the global tracer provider sends
every finished span to :data:`EXPORTER`, the global meter provider is read by
:data:`READER` with delta temporality (each read holds only the points recorded since the
previous read). Global providers can be set once per process, so every test module that
needs them calls :func:`install` (the first call installs them) and drains both first.
"""

from __future__ import annotations

from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import Histogram, MeterProvider
from opentelemetry.sdk.metrics.export import AggregationTemporality, InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

EXPORTER = InMemorySpanExporter()
READER = InMemoryMetricReader(preferred_temporality={Histogram: AggregationTemporality.DELTA})
_installed: list[bool] = []


def install() -> None:
    """Install the global providers (once per process) and drain both."""
    if not _installed:
        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(SimpleSpanProcessor(EXPORTER))
        trace.set_tracer_provider(tracer_provider)
        metrics.set_meter_provider(MeterProvider(metric_readers=[READER]))
        _installed.append(True)
    EXPORTER.clear()
    READER.get_metrics_data()
