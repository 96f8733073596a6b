"""The spans and metrics of one response, recorded from its events as they pass.

A :class:`ResponseRecorder` is made when the stream is subscribed (the chat span starts
then: the request is issued at subscription) and ends the span exactly once: at
RESPONSE_END (status unset), at the failure (status ERROR, ``error.type``) or at disposal
(cancelled: ``solon_events.response.cancelled`` true, status unset, no metrics).

The chat span is made current (:meth:`ResponseRecorder.attach`) around the code that runs
on the response's behalf: its subscription (whose context the I/O loop's task inherits),
the delivery of each event, an ``astream()``'s reads. A tool run by the tool loop in that
context gets a live ``execute_tool`` span (:meth:`ResponseRecorder.start_tool`), current
while the tool runs and ended at its TOOL_RESULT. A TOOL_RESULT of a tool no span was
started for (a replayed or hand-built stream) is recorded after the fact: tools run one
after another between a step's last model event and their TOOL_RESULTs, and each
TOOL_RESULT carries how long its tool ran, so those spans are laid end to end from the
step's last model event, each as long as its tool ran.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from contextvars import Token
from typing import Any

import attrs

from ..event_model.events import EVENT_TYPES, ChatEvent
from ..event_model.results import ChatResponse, ToolCall, Usage
from ..support.redaction import Redactor
from ..tools.scope import ToolScope, tool_scope
from .content import input_messages, output_messages, to_json

__all__ = ["Instruments", "RecorderSettings", "ResponseRecorder", "error_type"]

# Events that are no chunk of the answer: the lifecycle, retries, pings and the failure.
_NOT_A_CHUNK = frozenset(
    {
        EVENT_TYPES.RESPONSE_START,
        EVENT_TYPES.STEP_START,
        EVENT_TYPES.STATUS,
        EVENT_TYPES.HEARTBEAT,
        EVENT_TYPES.STEP_END,
        EVENT_TYPES.RESPONSE_END,
        EVENT_TYPES.ERROR,
    }
)

OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
SYSTEM = "gen_ai.system"  # the older name of gen_ai.provider.name, still read by backends
REQUEST_MODEL = "gen_ai.request.model"
RESPONSE_MODEL = "gen_ai.response.model"
SERVER_ADDRESS = "server.address"
SERVER_PORT = "server.port"
ERROR_TYPE = "error.type"
CANCELLED = "solon_events.response.cancelled"
USAGE_ESTIMATED = "solon_events.usage.estimated"
USAGE_COST = "solon_events.usage.cost"

# Request options (ChatPrompt.options) recorded under gen_ai.request.*.
REQUEST_OPTIONS = {
    "temperature": "gen_ai.request.temperature",
    "top_p": "gen_ai.request.top_p",
    "top_k": "gen_ai.request.top_k",
    "max_tokens": "gen_ai.request.max_tokens",
    "max_completion_tokens": "gen_ai.request.max_tokens",
    "max_output_tokens": "gen_ai.request.max_tokens",
    "frequency_penalty": "gen_ai.request.frequency_penalty",
    "presence_penalty": "gen_ai.request.presence_penalty",
    "seed": "gen_ai.request.seed",
    "stop": "gen_ai.request.stop_sequences",
    "stop_sequences": "gen_ai.request.stop_sequences",
}


def _provider_code(fields: Mapping[str, Any]) -> str | None:
    """The provider's own error code in its error body (``overloaded_error``, ``503``)."""
    nested = fields.get("error")
    if isinstance(nested, Mapping):
        found = _provider_code(nested)
        if found is not None:
            return found
    for key in ("code", "type", "status"):
        value = fields.get(key)
        if (
            isinstance(value, (str, int))
            and not isinstance(value, bool)
            and value not in ("", "error")
        ):
            return str(value)
    return None


def error_type(error: BaseException) -> str:
    """The low-cardinality ``error.type`` of a failure: the HTTP status of a
    ChatHttpError, ``timeout`` for a timeout, the provider's error code for an error the
    provider reported in the stream (``overloaded_error``, ``server_error``), else the
    exception's qualified class name."""
    status = getattr(error, "status", None)
    if isinstance(status, int):
        return str(status)
    if isinstance(error, TimeoutError):
        return "timeout"
    fields = getattr(error, "provider_error", None)
    code = _provider_code(fields) if isinstance(fields, Mapping) else None
    if code is not None:
        return code
    cls = type(error)
    if cls.__module__ == "builtins":
        return cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"


@attrs.frozen
class Instruments:
    """The tracer, the three histograms, and the OpenTelemetry API's ``trace`` and
    ``context`` modules (imported only when telemetry is used) that go with them."""

    tracer: Any
    token_usage: Any
    duration: Any
    time_to_first_chunk: Any
    trace: Any
    context: Any


@attrs.frozen(kw_only=True)
class RecorderSettings:
    """What :func:`~solon_events.telemetry.instrument` was told about the request."""

    model: str | None = None
    provider: str | None = None
    server_address: str | None = None
    server_port: int | None = None
    capture_content: bool = False
    input_messages: tuple[Any, ...] = ()
    options: Mapping[str, Any] = attrs.field(factory=dict)
    redactor: Redactor = attrs.field(factory=Redactor)

    def redacted(self, attributes: dict[str, Any]) -> dict[str, Any]:
        """``attributes`` with every secret the redactor knows masked in their text (the
        provider controls some: the response's model and id, the answer, a tool's
        arguments)."""
        redactor = self.redactor
        if not redactor:
            return attributes
        return {
            key: redactor.value(value) if isinstance(value, (str, list, tuple)) else value
            for key, value in attributes.items()
        }

    def common_attributes(self) -> dict[str, Any]:
        """The attributes every span and metric point of a response shares."""
        shared: dict[str, Any] = {OPERATION: "chat"}
        for key, value in (
            (PROVIDER, self.provider),
            (REQUEST_MODEL, self.model),
            (SERVER_ADDRESS, self.server_address),
            (SERVER_PORT, self.server_port),
        ):
            if value is not None:
                shared[key] = value
        return shared

    def span_attributes(self) -> dict[str, Any]:
        """The chat span's attributes known before the first event."""
        attributes = self.common_attributes()
        if self.provider is not None:
            attributes[SYSTEM] = self.provider
        attributes["gen_ai.request.stream"] = True
        for option, key in REQUEST_OPTIONS.items():
            value = self.options.get(option)
            if isinstance(value, str) and key.endswith("stop_sequences"):
                value = [value]
            if isinstance(value, (bool, int, float, str)) or (
                isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value)
            ):
                attributes[key] = value
        if self.capture_content and self.input_messages:
            attributes["gen_ai.input.messages"] = to_json(input_messages(self.input_messages))
        return self.redacted(attributes)


def _usage_attributes(usage: Usage) -> dict[str, int | bool]:
    attributes: dict[str, int | bool] = {
        "gen_ai.usage.input_tokens": usage.prompt_tokens,
        "gen_ai.usage.output_tokens": usage.completion_tokens,
    }
    if usage.estimated:
        attributes[USAGE_ESTIMATED] = True
    for key, value in (
        ("gen_ai.usage.cache_read.input_tokens", usage.cache_read_input_tokens),
        ("gen_ai.usage.cache_creation.input_tokens", usage.cache_creation_input_tokens),
        ("gen_ai.usage.reasoning.output_tokens", usage.thinking_tokens),
    ):
        if value:
            attributes[key] = value
    return attributes


class ResponseRecorder:
    """The chat span, its tool spans and the metric points of one subscription."""

    def __init__(self, instruments: Instruments, settings: RecorderSettings) -> None:
        self._on = instruments
        self._settings = settings
        self._common = settings.common_attributes()
        name = f"chat {settings.model}" if settings.model else "chat"
        self._span = instruments.tracer.start_span(
            name, kind=instruments.trace.SpanKind.CLIENT, attributes=settings.span_attributes()
        )
        self._started = time.perf_counter()
        self._first_chunk: float | None = None
        self._lock = threading.Lock()
        self._ended = False
        self._tokens_recorded = False
        self._response: ChatResponse | None = None
        self._usage: Usage | None = None
        self._response_id: str | None = None
        self._model_event_ns = time.time_ns()  # when the last non-tool event arrived
        self._tool_cursor_ns: int | None = None  # where the next tool span starts
        self._context = instruments.trace.set_span_in_context(self._span)
        self._live_tools: dict[tuple[str | None, int, str], tuple[Any, int]] = {}
        """Tool spans started and not yet ended, by call: (span, start in ns)."""

    def is_current(self) -> bool:
        """Whether the chat span is the current span here."""
        return self._on.trace.get_current_span() is self._span

    def attach(self, scope: ToolScope) -> tuple[object, Token[ToolScope | None]]:
        """Make the chat span current in this context, and ``scope`` the tool scope (see
        :mod:`solon_events.tools.scope`); :meth:`detach` the tokens in the same context."""
        return self._on.context.attach(self._context), tool_scope.set(scope)

    def detach(self, tokens: tuple[object, Token[ToolScope | None]]) -> None:
        """Undo :meth:`attach`."""
        otel, scope = tokens
        tool_scope.reset(scope)
        self._on.context.detach(otel)

    def start_tool(self, call: ToolCall) -> object:
        """Start the ``execute_tool`` span of ``call`` and make it current in this context;
        returns the token for :meth:`leave_tool`."""
        on = self._on
        start = time.time_ns()
        span = self._start_tool_span(call.name or "tool", call.id, call, start)
        with self._lock:
            self._live_tools[_tool_key(call)] = (span, start)
        return on.context.attach(on.trace.set_span_in_context(span))

    def leave_tool(self, call: ToolCall, token: object, failed: bool) -> None:
        """The tool of ``call`` returned (or raised, ``failed``): its span is no longer
        current here; it ends at the call's TOOL_RESULT (or with the response)."""
        self._on.context.detach(token)
        if failed:
            with self._lock:
                live = self._live_tools.get(_tool_key(call))
            if live is not None:
                self._set_tool_failed(live[0])

    def see(self, event: ChatEvent) -> None:
        """Take in one event of the stream (before it is delivered)."""
        kind = event.type
        if self._first_chunk is None and kind not in _NOT_A_CHUNK:
            self._first_chunk = time.perf_counter() - self._started
        if event.response_id is not None:
            self._response_id = event.response_id
        if kind is EVENT_TYPES.TOOL_RESULT:
            self._tool_span(event)
            return
        if kind is EVENT_TYPES.STATUS and event.sub_type == "tool_progress":
            return
        self._model_event_ns = time.time_ns()
        self._tool_cursor_ns = None
        if kind is EVENT_TYPES.STEP_END and event.response is not None:
            self._response = event.response
        elif kind is EVENT_TYPES.RESPONSE_END:
            self._response = event.response or self._response
            self._usage = event.usage
            self.end(None)
        elif kind is EVENT_TYPES.ERROR or kind is EVENT_TYPES.ABORT:
            self._response = event.response or self._response
            self._usage = event.usage or self._usage

    def _start_tool_span(
        self, name: str, call_id: str | None, call: ToolCall | None, start: int
    ) -> Any:
        """A child span ``execute_tool {name}`` of the chat span, started at ``start``."""
        attributes: dict[str, Any] = {
            OPERATION: "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.type": "function",
        }
        if call_id:
            attributes["gen_ai.tool.call.id"] = call_id
        if self._settings.capture_content and call is not None:
            attributes["gen_ai.tool.call.arguments"] = to_json(call.arguments)
        on = self._on
        return on.tracer.start_span(
            f"execute_tool {name}",
            context=self._context,
            kind=on.trace.SpanKind.INTERNAL,
            attributes=self._settings.redacted(attributes),
            start_time=start,
        )

    def _set_tool_failed(self, span: Any) -> None:
        on = self._on
        span.set_attribute(ERROR_TYPE, "_OTHER")
        span.set_status(on.trace.Status(on.trace.StatusCode.ERROR, "the tool failed"))

    def _tool_span(self, event: ChatEvent) -> None:
        call = event.tool_call
        with self._lock:
            live = self._live_tools.pop(_tool_key(call), None) if call is not None else None
        name = event.attr("tool_name") or (call.name if call is not None else "") or "tool"
        duration = event.attr("duration")
        if live is not None:
            span, start = live
        else:
            start = (
                self._tool_cursor_ns if self._tool_cursor_ns is not None else self._model_event_ns
            )
        now = time.time_ns()
        if isinstance(duration, (int, float)) and duration >= 0:
            end = min(now, start + int(duration * 1e9))
        else:
            end = now
        if live is None:
            self._tool_cursor_ns = end
            span = self._start_tool_span(name, event.tool_call_id, call, start)
        if self._settings.capture_content and event.text is not None and not event.attr("is_error"):
            span.set_attribute("gen_ai.tool.call.result", self._settings.redactor.text(event.text))
        if event.attr("is_error"):
            self._set_tool_failed(span)
        span.end(end_time=end)

    def _end_tools(self) -> None:
        """End the tool spans whose TOOL_RESULT never came (the response ended first)."""
        with self._lock:
            live, self._live_tools = self._live_tools, {}
        for span, _ in live.values():
            span.end()

    def end(self, error: BaseException | None) -> None:
        """End the response: completed (``error`` None) or failed; once only."""
        with self._lock:
            if self._ended:
                return
            self._ended = self._tokens_recorded = True
        duration = time.perf_counter() - self._started
        span = self._span
        metric_attributes = dict(self._common)
        response = self._response
        if response is not None and response.model:
            metric_attributes[RESPONSE_MODEL] = self._settings.redactor.text(response.model)
        span.set_attributes(self._outcome_attributes(response))
        on = self._on
        if self._first_chunk is not None:
            on.time_to_first_chunk.record(self._first_chunk, metric_attributes)
        usage = self._usage or (response.usage if response is not None else None)
        if usage is not None:
            self._record_tokens(usage, metric_attributes)
        if error is not None:
            redactor = self._settings.redactor
            kind = redactor.text(error_type(error))
            metric_attributes[ERROR_TYPE] = kind
            span.set_attribute(ERROR_TYPE, kind)
            span.set_status(on.trace.Status(on.trace.StatusCode.ERROR, redactor.text(str(error))))
        on.duration.record(duration, metric_attributes)
        self._end_tools()
        span.end()

    def _record_tokens(self, usage: Usage, metric_attributes: Mapping[str, Any]) -> None:
        """The token metric's two points (input, output) of ``usage``."""
        record = self._on.token_usage.record
        record(usage.prompt_tokens, {**metric_attributes, "gen_ai.token.type": "input"})
        record(usage.completion_tokens, {**metric_attributes, "gen_ai.token.type": "output"})

    def cancelled_usage(self, usage: Usage | None) -> None:
        """The usage of a response cancelled before its end, known once the request is
        stopped (after :meth:`cancel`): recorded on the token metric, as no event may
        follow a cancellation to carry it."""
        if usage is None:
            return
        with self._lock:
            if not self._ended or self._tokens_recorded:
                return
            self._tokens_recorded = True
        self._record_tokens(usage, self._ended_attributes())

    def retried_usage(self, usage: Usage) -> None:
        """The estimated usage of a request retried after the provider had accepted it
        (see :attr:`UsageReport.retried <solon_events.UsageReport.retried>`), told after
        the response's end: recorded on the token metric."""
        self._record_tokens(usage, self._ended_attributes())

    def _ended_attributes(self) -> dict[str, Any]:
        """The token metric's attributes for usage told after the response's end."""
        attributes = dict(self._common)
        response = self._response
        if response is not None and response.model:
            attributes[RESPONSE_MODEL] = self._settings.redactor.text(response.model)
        return attributes

    def _outcome_attributes(self, response: ChatResponse | None) -> dict[str, Any]:
        attributes: dict[str, Any] = {}
        if self._first_chunk is not None:
            attributes["gen_ai.response.time_to_first_chunk"] = self._first_chunk
        if self._response_id is not None:
            attributes["solon_events.response.id"] = self._response_id
        usage = self._usage or (response.usage if response is not None else None)
        if usage is not None:
            attributes.update(_usage_attributes(usage))
        if response is None:
            return attributes
        cost = response.cost
        if cost is not None and cost.total is not None:
            attributes[USAGE_COST] = float(cost.total)
        if response.model:
            attributes[RESPONSE_MODEL] = response.model
        if response.provider_response_id:
            attributes["gen_ai.response.id"] = response.provider_response_id
        if response.finish_reason:
            attributes["gen_ai.response.finish_reasons"] = [response.finish_reason]
        if self._settings.capture_content:
            attributes["gen_ai.output.messages"] = to_json(output_messages(response))
        return self._settings.redacted(attributes)

    def cancel(self) -> None:
        """The subscriber disposed before the end: a cancellation, not an error."""
        with self._lock:
            if self._ended:
                return
            self._ended = True
        attributes = self._outcome_attributes(self._response)
        attributes[CANCELLED] = True
        self._span.set_attributes(attributes)
        self._span.add_event("cancelled")
        self._end_tools()
        self._span.end()


def _tool_key(call: ToolCall) -> tuple[str | None, int, str]:
    return (call.id, call.index, call.name)
