"""OpenTelemetry traces and metrics of chat responses, per the GenAI semantic conventions.

Needs the ``otel`` extra (``pip install 'solon-events[otel]'``): the OpenTelemetry API
only. Nothing is exported until the application installs an SDK (``opentelemetry-sdk``,
or a distribution) and sets the global tracer and meter providers, or passes its own.

:func:`instrument` is a pipeable operator over any event stream (a model's, a replay's);
``ChatModel(..., telemetry=True)`` applies it to every request of the model. Per response:

- a span ``chat {model}`` (kind CLIENT), started when the stream is subscribed, with
  ``gen_ai.operation.name``, ``gen_ai.provider.name`` (and the older ``gen_ai.system``),
  ``gen_ai.request.model``, ``gen_ai.request.stream``, the request options
  (``gen_ai.request.temperature``, ``max_tokens``, ...), ``server.address`` / ``server.port``,
  ``gen_ai.response.model``, ``gen_ai.response.id``, ``gen_ai.response.finish_reasons``,
  ``gen_ai.usage.input_tokens`` / ``output_tokens`` / ``cache_read.input_tokens`` /
  ``cache_creation.input_tokens`` / ``reasoning.output_tokens`` (totals over the tool loop's
  steps), ``gen_ai.response.time_to_first_chunk`` and ``solon_events.response.id``;
- a child span ``execute_tool {name}`` (kind INTERNAL) per tool run by the tool loop, with
  ``gen_ai.tool.name``, ``gen_ai.tool.call.id`` and ``gen_ai.tool.type``;
- the chat span is the current span wherever the response runs code on its user's behalf:
  the subscriber's callbacks (``stream()`` delivers on the model's I/O thread), the request
  itself (an instrumented HTTP client's spans) and the tools, each of which runs with its
  own ``execute_tool`` span current (a sync tool in the executor too), so spans made there
  are children of the response's. ``astream()`` makes it current while it reads, parses and
  runs tools, but not in the consumer's loop body, which keeps the consumer's own context
  (a span left current across a ``yield`` would stay current in the consumer's task after
  it leaves the loop early). A model asked inside a tool (an agent as a tool) is a child of
  that tool's span, and records its own tools in its own response;
- the histograms ``gen_ai.client.operation.duration`` (s),
  ``gen_ai.client.operation.time_to_first_chunk`` (s) and ``gen_ai.client.token.usage``
  (``{token}``, one point per ``gen_ai.token.type``: ``input``, ``output``).

A failure sets the span's status to ERROR and ``error.type`` (the HTTP status of a
:class:`~solon_events.ChatHttpError`, ``timeout``, the provider's code for an error reported
in the stream, else the exception's class), also on the duration metric. Disposing the
subscription (or ``take(n)``) before the end is a cancellation: the span ends with
``solon_events.response.cancelled`` true, an event ``cancelled`` and no error status, and
no duration is recorded; a ChatModel's response (``telemetry=True``) records on the token
metric the usage it had so far (the provider's count and an estimate of what it did not
count), once the request is stopped, as no event can carry it.

An estimated usage (:attr:`Usage.estimated <solon_events.Usage.estimated>`) sets
``solon_events.usage.estimated`` true on the span; a priced response (``ChatModel(...,
pricing=True)``) sets ``solon_events.usage.cost``, its total cost in US dollars.

Given the model's :class:`~solon_events.support.redaction.Redactor` (``ChatModel(...,
telemetry=True)`` passes its own), every text attribute and the error status pass it: the
provider controls some of them (``gen_ai.response.model``, ``gen_ai.response.id``, the
answer, a tool's arguments, its error code), and a key it echoes there is masked.

No prompt, answer or tool text is recorded unless ``capture_content=True`` (or the
environment variable ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``): then the
chat span has ``gen_ai.input.messages`` and ``gen_ai.output.messages``, and each tool span
``gen_ai.tool.call.arguments`` and ``gen_ai.tool.call.result`` (JSON text).
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, TypeVar

import reactivex
from reactivex import Observable, abc
from reactivex.disposable import Disposable

from .._version import __version__
from ..core.stages import Sink
from ..event_model.events import ChatEvent
from ..event_model.extras import MissingExtraError, install_hint
from ..event_model.results import ToolCall, UsageReport
from ..support.redaction import Redactor
from ..support.safe_callbacks import safe_callbacks
from ..tools.scope import ToolScope
from .recorder import Instruments, RecorderSettings, ResponseRecorder, error_type

__all__ = [
    "CAPTURE_CONTENT_ENV",
    "INSTALL_HINT",
    "PROVIDER_NAMES",
    "Instrument",
    "RecordingStage",
    "error_type",
    "instrument",
]

INSTALL_HINT = install_hint("otel")
"""What to run for telemetry."""

CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""The environment variable that opts in to recording content when ``capture_content``
is not given (``true`` to record)."""

PROVIDER_NAMES: Mapping[str, str] = {
    "openai": "openai",
    "openai-responses": "openai",
    "anthropic": "anthropic",
    "gemini": "gcp.gemini",
    "ollama": "ollama",
    "bedrock": "aws.bedrock",
    "cohere": "cohere",
    "google-interactions": "gcp.gemini",
}
"""``gen_ai.provider.name`` for each dialect name; any other name is recorded as given."""

# Bucket boundaries the conventions advise for the two time histograms and the tokens.
_SECONDS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92]
_TOKENS = [4.0**n for n in range(14)]

_log = logging.getLogger(__name__)


def _otel() -> tuple[Any, Any]:
    """The ``opentelemetry.trace`` and ``opentelemetry.metrics`` modules, or a clear error."""
    try:
        from opentelemetry import metrics, trace
    except ImportError:
        raise MissingExtraError("telemetry", "the OpenTelemetry API", "otel") from None
    return trace, metrics


# name -> (unit, description, bucket boundaries) of the histograms, as the conventions say.
_HISTOGRAMS = {
    "token_usage": (
        "gen_ai.client.token.usage",
        "{token}",
        "Number of input and output tokens used.",
        _TOKENS,
    ),
    "duration": ("gen_ai.client.operation.duration", "s", "GenAI operation duration.", _SECONDS),
    "time_to_first_chunk": (
        "gen_ai.client.operation.time_to_first_chunk",
        "s",
        "Time to receive the first chunk of a streamed response.",
        _SECONDS,
    ),
}


def _instruments(tracer_provider: Any, meter_provider: Any) -> Instruments:
    trace, metrics = _otel()
    from opentelemetry import context

    tracer = trace.get_tracer("solon_events", __version__, tracer_provider=tracer_provider)
    meter = metrics.get_meter("solon_events", __version__, meter_provider=meter_provider)
    histograms = {
        field: meter.create_histogram(
            name, unit=unit, description=description, explicit_bucket_boundaries_advisory=bounds
        )
        for field, (name, unit, description, bounds) in _HISTOGRAMS.items()
    }
    return Instruments(tracer=tracer, trace=trace, context=context, **histograms)


def _capture_from_env() -> bool:
    return os.environ.get(CAPTURE_CONTENT_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def instrument(
    *,
    model: str | None = None,
    provider: str | None = None,
    server_address: str | None = None,
    server_port: int | None = None,
    capture_content: bool | None = None,
    input_messages: Iterable[Any] = (),
    options: Mapping[str, Any] | None = None,
    tracer_provider: Any = None,
    meter_provider: Any = None,
    redactor: Redactor | None = None,
) -> Instrument:
    """Record each subscription of an event stream as a GenAI ``chat`` span with metrics.

    Events pass through unchanged. ``model`` is the requested model (the span is named
    ``chat {model}``), ``provider`` a dialect name (mapped by :data:`PROVIDER_NAMES`) or a
    ``gen_ai.provider.name`` value, ``server_address`` / ``server_port`` where the request
    goes, ``input_messages`` the conversation sent and ``options`` the request options
    (recorded as ``gen_ai.request.*`` where the conventions name them). Spans and metrics
    go to the global tracer and meter providers unless ``tracer_provider`` /
    ``meter_provider`` are given. ``capture_content`` (default: the
    ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` environment variable) records
    the conversation, the answer and the tools' arguments and results. ``redactor`` masks
    the secrets it knows in every text recorded (``ChatModel(..., telemetry=True)`` passes
    the model's).

    >>> from solon_events import replay
    >>> from solon_events.telemetry import instrument
    >>> events = replay("examples/recordings/text-openai.jsonl")
    >>> answer = events.pipe(instrument(model="gpt-4o-mini", provider="openai")).run()
    """
    instruments = _instruments(tracer_provider, meter_provider)
    settings = RecorderSettings(
        model=model,
        provider=PROVIDER_NAMES.get(provider, provider) if provider is not None else None,
        server_address=server_address,
        server_port=server_port,
        capture_content=_capture_from_env() if capture_content is None else bool(capture_content),
        input_messages=tuple(input_messages),
        options=dict(options or {}),
        redactor=redactor or Redactor(),
    )
    return Instrument(instruments, settings)


class Instrument:
    """What :func:`instrument` returns: an operator (call it on an observable), whose
    :meth:`stage` does the same without Rx."""

    def __init__(self, instruments: Instruments, settings: RecorderSettings) -> None:
        self._instruments = instruments
        self._settings = settings

    def stage(self, down: Sink) -> RecordingStage:
        """A :class:`RecordingStage` in front of ``down`` (a stage or an observer),
        recording one response."""
        return RecordingStage(ResponseRecorder(self._instruments, self._settings), down)

    def __call__(self, source: Observable[ChatEvent]) -> Observable[ChatEvent]:
        def subscribe(
            observer: abc.ObserverBase[ChatEvent], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            stage = self.stage(observer)
            callbacks = safe_callbacks(
                observer,
                stage.on_next,
                stage.on_error,
                stage.on_completed,
                where="the instrument() operator",
            )
            with stage.current():  # what the subscription schedules inherits the span
                subscription = source.subscribe(*callbacks, scheduler=scheduler)

            def dispose() -> None:
                stage.cancel()
                subscription.dispose()

            return Disposable(dispose)

        return reactivex.create(subscribe)


class RecordingStage:
    """Records every event it passes on into ``down`` (a span started when it is made);
    :meth:`cancel` before the end records a cancellation. ``down`` sees every event with
    the chat span current."""

    __slots__ = ("_down", "_recorder", "_tool_scope")

    def __init__(self, recorder: ResponseRecorder, down: Sink) -> None:
        self._recorder = recorder
        self._down = down
        self._tool_scope = ToolScope(self._run_tool)

    def on_next(self, event: ChatEvent) -> None:
        """Record ``event``, pass it on."""
        _safely(self._recorder.see, event)
        if self._recorder.is_current():
            self._down.on_next(event)
        else:
            with self.current():
                self._down.on_next(event)

    def on_error(self, error: Exception) -> None:
        """Record the failure, pass it on."""
        _safely(self._recorder.end, error)
        with self.current():
            self._down.on_error(error)

    def on_completed(self) -> None:
        """Record the end, pass it on."""
        _safely(self._recorder.end, None)
        with self.current():
            self._down.on_completed()

    def cancel(self) -> None:
        """The response was left before its end (nothing after its end)."""
        _safely(self._recorder.cancel)

    def usage_reported(self, report: UsageReport) -> None:
        """The response's :class:`~solon_events.UsageReport` (a ChatModel's run tells it):
        a cancelled response's usage goes to the token metric, and so does each retried
        request's (the events carry neither to the metric)."""
        if report.outcome == "cancelled":
            _safely(self._recorder.cancelled_usage, report.usage)
        for usage in report.retried:
            _safely(self._recorder.retried_usage, usage)

    @contextlib.contextmanager
    def current(self) -> Iterator[None]:
        """The chat span current in this context while the block runs (and every tool the
        tool loop runs in it recorded as its child); nothing is left current after it,
        whatever it raises."""
        recorder = self._recorder
        tokens = _safely(recorder.attach, self._tool_scope)
        try:
            yield
        finally:
            if tokens is not None:
                _safely(recorder.detach, tokens)

    @contextlib.contextmanager
    def _run_tool(self, call: ToolCall) -> Iterator[None]:
        """Around a tool's run: its ``execute_tool`` span, current."""
        recorder = self._recorder
        token = _safely(recorder.start_tool, call)
        failed = False
        try:
            yield
        except Exception:
            failed = True
            raise
        finally:
            if token is not None:
                _safely(recorder.leave_tool, call, token, failed)


_T = TypeVar("_T")


def _safely(record: Callable[..., _T], *args: Any) -> _T | None:
    """Telemetry never breaks the stream it watches: a failure to record is logged (and
    gives None)."""
    try:
        return record(*args)
    except Exception:
        with contextlib.suppress(Exception):
            _log.exception("solon_events.telemetry could not record an event")
        return None
