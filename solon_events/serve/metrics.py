"""The gateway's metrics in the Prometheus text format (``GET /metrics``).

Needs the ``metrics`` extra (``pip install 'solon-events[metrics]'``: ``prometheus_client``).
Each gateway keeps its own registry (:attr:`GatewayMetrics.registry`); every metric is
labelled with the ``model`` a client asked for and the ``deployment`` that answered (its
label; empty until one did, or when none did):

==============================================  =========  ====================================
metric                                          type       what
==============================================  =========  ====================================
``solon_gateway_requests_total``                counter    responses, by ``route`` and
                                                           ``outcome`` (``completed``,
                                                           ``failed``, ``cancelled``)
``solon_gateway_errors_total``                  counter    failed responses, by ``type`` (the
                                                           error's class; ``ChatHttpError_429``
                                                           for an HTTP status)
``solon_gateway_attempts_total``                counter    the deployments asked or skipped, by
                                                           ``outcome`` (``answered``,
                                                           ``failed``, ``cancelled``,
                                                           ``skipped``)
``solon_gateway_time_to_first_event_seconds``   histogram  from the request to the first answer
                                                           event
``solon_gateway_request_duration_seconds``      histogram  from the request to the response's end
``solon_gateway_tokens_total``                  counter    tokens, by ``direction`` (``in``,
                                                           ``out``)
``solon_gateway_cost_usd_total``                counter    the price of those tokens, where
                                                           genai-prices (the ``cost`` extra)
                                                           knows the deployment's model
``solon_gateway_in_flight``                     gauge      responses running now
==============================================  =========  ====================================

:meth:`GatewayMetrics.observed` wraps a response's events: it notes them as they pass,
and gives them on unchanged.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from ..event_model.errors import ChatHttpError
from ..event_model.events import EVENT_TYPES, ChatEvent
from ..event_model.extras import require
from ..event_model.results import ChatResponse
from ..support.async_iterators import aclose

__all__ = ["GatewayMetrics", "error_type"]

_NO_ANSWER = frozenset(
    {
        EVENT_TYPES.RESPONSE_START,
        EVENT_TYPES.STEP_START,
        EVENT_TYPES.STATUS,
        EVENT_TYPES.HEARTBEAT,
        EVENT_TYPES.USAGE,
        EVENT_TYPES.RAW,
    }
)
_WATCHED = frozenset({EVENT_TYPES.STATUS, EVENT_TYPES.RESPONSE_END, EVENT_TYPES.ERROR})
_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
_DURATION_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)


def error_type(error: BaseException) -> str:
    """How ``solon_gateway_errors_total`` names a failure: its class, with the HTTP status
    of a :class:`~solon_events.ChatHttpError` (``ChatHttpError_429``)."""
    name = type(error).__name__
    return f"{name}_{error.status}" if isinstance(error, ChatHttpError) else name


class GatewayMetrics:
    """The metrics of one gateway, in a registry of their own (``registry``: a
    ``prometheus_client.CollectorRegistry`` to use instead). ``model_of(model, label)``
    names the upstream model of a deployment (for its price)."""

    def __init__(
        self,
        registry: Any = None,
        *,
        model_of: Callable[[str, str], str | None] = lambda _model, _label: None,
    ) -> None:
        prometheus = require(
            "prometheus_client",
            feature="the gateway's metrics",
            extra="metrics",
            package="prometheus-client",
        )
        self._prometheus = prometheus
        self.registry = registry if registry is not None else prometheus.CollectorRegistry()
        """The ``prometheus_client.CollectorRegistry`` the metrics are in."""
        self._model_of = model_of
        self._unpriced: set[str] = set()
        on = {"registry": self.registry}
        labels = ("model", "deployment")
        self.requests = prometheus.Counter(
            "solon_gateway_requests", "Responses", ("route", *labels, "outcome"), **on
        )
        self.errors = prometheus.Counter(
            "solon_gateway_errors", "Failed responses", ("route", *labels, "type"), **on
        )
        self.attempts = prometheus.Counter(
            "solon_gateway_attempts", "Deployments asked or skipped", (*labels, "outcome"), **on
        )
        self.first_event = prometheus.Histogram(
            "solon_gateway_time_to_first_event_seconds",
            "Seconds from the request to the first answer event",
            labels,
            buckets=_LATENCY_BUCKETS,
            **on,
        )
        self.duration = prometheus.Histogram(
            "solon_gateway_request_duration_seconds",
            "Seconds from the request to the end of the response",
            labels,
            buckets=_DURATION_BUCKETS,
            **on,
        )
        self.tokens = prometheus.Counter(
            "solon_gateway_tokens", "Tokens in and out", (*labels, "direction"), **on
        )
        self.cost = prometheus.Counter(
            "solon_gateway_cost_usd", "The price of the tokens, in US dollars", labels, **on
        )
        self.in_flight = prometheus.Gauge(
            "solon_gateway_in_flight", "Responses running", labels, **on
        )

    def exposition(self) -> tuple[bytes, str]:
        """The registry in the Prometheus text format, and its content type."""
        prometheus = self._prometheus
        return prometheus.generate_latest(self.registry), prometheus.CONTENT_TYPE_LATEST

    async def observed(
        self, events: AsyncIterator[ChatEvent], route: str, model: str
    ) -> AsyncIterator[ChatEvent]:
        """``events``, unchanged, noted as they pass (a response to a request on ``route``
        for ``model``)."""
        request = _Request(self, route, model)
        try:
            async for event in events:
                if request.waiting and event.type not in _NO_ANSWER:
                    request.answered()
                if event.type in _WATCHED:
                    request.note(event)
                yield event
        except BaseException as error:
            request.end(error)
            raise
        else:
            request.end(None)
        finally:
            await aclose(events)


class _Request:
    """What the metrics note of one response."""

    def __init__(self, metrics: GatewayMetrics, route: str, model: str) -> None:
        self.metrics = metrics
        self.route = route
        self.model = model
        self.deployment = ""
        self.started = time.perf_counter()
        self.waiting = True
        self.response: ChatResponse | None = None
        self.error: BaseException | None = None
        self.ended = False
        metrics.in_flight.labels(model, "").inc()

    def _move_to(self, deployment: str) -> None:
        in_flight = self.metrics.in_flight
        in_flight.labels(self.model, self.deployment).dec()
        in_flight.labels(self.model, deployment).inc()
        self.deployment = deployment

    def answered(self) -> None:
        self.waiting = False
        seconds = time.perf_counter() - self.started
        self.metrics.first_event.labels(self.model, self.deployment).observe(seconds)

    def note(self, event: ChatEvent) -> None:
        if event.type is EVENT_TYPES.STATUS:
            if event.sub_type == "routed":
                self._move_to(str(event.attrs.get("model", "")))
        elif event.type is EVENT_TYPES.RESPONSE_END:
            self.response = event.response
        elif event.error is not None:
            self.error = event.error
            if self.response is None:
                self.response = event.response

    def end(self, raised: BaseException | None) -> None:
        if self.ended:
            return
        self.ended = True
        metrics, model = self.metrics, self.model
        response = self.response
        if response is not None and not self.deployment:
            for attempt in response.attempts:
                if attempt.outcome == "answered":
                    self._move_to(attempt.model)
        deployment = self.deployment
        metrics.in_flight.labels(model, deployment).dec()
        error = self.error or (raised if isinstance(raised, Exception) else None)
        if error is not None:
            outcome = "failed"
            metrics.errors.labels(self.route, model, deployment, error_type(error)).inc()
        elif response is None:
            outcome = "cancelled"
        else:
            outcome = "completed"
        metrics.requests.labels(self.route, model, deployment, outcome).inc()
        metrics.duration.labels(model, deployment).observe(time.perf_counter() - self.started)
        if response is None:
            return
        for attempt in response.attempts:
            metrics.attempts.labels(model, attempt.model, attempt.outcome).inc()
        usage = response.usage
        if usage is None:
            return
        metrics.tokens.labels(model, deployment, "in").inc(usage.prompt_tokens)
        metrics.tokens.labels(model, deployment, "out").inc(usage.completion_tokens)
        price = response.cost
        if price is None:
            upstream = metrics._model_of(model, deployment)
            if upstream is not None and upstream not in metrics._unpriced:
                price = usage.cost(upstream)
                if price.total is None:  # not asked again: genai-prices does not know it
                    metrics._unpriced.add(upstream)
        if price is not None and price.total is not None:
            metrics.cost.labels(model, deployment).inc(float(price.total))
