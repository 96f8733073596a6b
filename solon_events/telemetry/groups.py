"""The span of a response asked of several models (a fallback chain, a hedge, a race).

A :class:`GroupSpan` is the parent of the response's attempts: each attempt of a member
whose ChatModel records telemetry is its own ``chat {model}`` span (with its metrics)
started under it, so a trace shows every attempt, a failed one with status ERROR and its
``error.type``, a hedge's loser ended as cancelled (``solon_events.response.cancelled``).
The group's span records no metric (the attempts' do: nothing is counted twice). It is
named ``chat {kind}({labels})`` and has ``gen_ai.operation.name`` (``chat``),
``gen_ai.request.model`` (the first member's model), ``solon_events.group.kind``,
``solon_events.group.models`` (the members' labels) and ``solon_events.response.id``; at
its end ``solon_events.group.winner`` (the label of the attempt delivered) and
``solon_events.group.attempts`` (how many were started), one span event per attempt
(``attempt``: its model, outcome and error type; a :class:`~solon_events.Router`'s
deployments that cool down are there too, as ``skipped`` with ``error.type``
``solon_events.client.router.CoolingDownError``), and like a chat span, status ERROR with
``error.type`` when the response failed, ``solon_events.response.cancelled`` when it was
disposed before its end.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from ..core.attempts import Attempt
from . import _instruments
from .recorder import CANCELLED, ERROR_TYPE, OPERATION, REQUEST_MODEL, error_type

__all__ = ["GroupSpan"]

_T = TypeVar("_T")


class GroupSpan:
    """The span of one response of a model group, started now under the current span.

    ``options`` are a ChatModel's telemetry options (``tracer_provider``, ...); ``kind``
    the group's (``fallback``, ``hedge``, ``race``), ``labels`` its members', ``model`` the
    first member's model name. :meth:`run` calls what starts an attempt with this span
    current; :meth:`end` or :meth:`cancel` ends it, once.
    """

    def __init__(
        self,
        options: Mapping[str, Any],
        *,
        kind: str,
        labels: Sequence[str],
        model: str,
        response_id: str,
        redact: Callable[[str], str],
    ) -> None:
        self._on = on = _instruments(options.get("tracer_provider"), options.get("meter_provider"))
        self._redact = redact
        self._span = on.tracer.start_span(
            f"chat {kind}({', '.join(labels)})",
            kind=on.trace.SpanKind.INTERNAL,
            attributes={
                OPERATION: "chat",
                REQUEST_MODEL: model,
                "solon_events.group.kind": kind,
                "solon_events.group.models": list(labels),
                "solon_events.response.id": response_id,
            },
        )
        self._context = on.trace.set_span_in_context(self._span)
        self._ended = False

    def run(self, start: Callable[..., _T], *args: Any) -> _T:
        """``start(*args)`` with this span current (an attempt's span becomes its child)."""
        with self.current():
            return start(*args)

    @contextlib.contextmanager
    def current(self) -> Iterator[None]:
        """This span current while the block runs."""
        token = self._on.context.attach(self._context)
        try:
            yield
        finally:
            self._on.context.detach(token)

    def end(
        self,
        attempts: Sequence[Attempt],
        winner: str | None,
        error: BaseException | None = None,
        *,
        cancelled: bool = False,
    ) -> None:
        """End the span: the response completed, failed with ``error``, or was
        ``cancelled``; ``attempts`` and ``winner`` are the arbiter's."""
        if self._ended:
            return
        self._ended = True
        span, on, redact = self._span, self._on, self._redact
        for attempt in attempts:
            fields: dict[str, Any] = {"model": attempt.model, "outcome": attempt.outcome}
            if attempt.error is not None:
                fields[ERROR_TYPE] = redact(error_type(attempt.error))
            span.add_event("attempt", fields)
        started = [attempt for attempt in attempts if attempt.outcome != "skipped"]
        span.set_attribute("solon_events.group.attempts", len(started))
        if winner is not None:
            span.set_attribute("solon_events.group.winner", winner)
        if cancelled:
            span.set_attribute(CANCELLED, True)
            span.add_event("cancelled")
        elif error is not None:
            kind = redact(error_type(error))
            span.set_attribute(ERROR_TYPE, kind)
            span.set_status(on.trace.Status(on.trace.StatusCode.ERROR, redact(str(error))))
        span.end()
