"""The response pipeline's stages as plain observers (sans-I/O).

A stage has ``on_next``, ``on_error`` and ``on_completed`` and pushes into a downstream
with the same three methods: an Rx observer, or the next stage. Each stage owns its state
and its own shortcuts for the common events. The Rx operators wrap one stage each;
:func:`respond` chains the same three response-level stages with direct calls (each pushes
into the next one's ``on_next``), which is how the library's own pipelines (replay,
ChatModel) run them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import attrs

from ..event_model.errors import ChatError
from ..event_model.events import EVENT_TYPES, ChatEvent, framing_event, with_response_id
from ..event_model.filters import ChatEventFilter
from ..event_model.finish import FinishReason
from ..event_model.results import ChatResponse, with_usage
from .accumulator import ChatAccumulator
from .normalizer import ChatEventNormalizer
from .partial_arguments import PartialArgumentsStage
from .session import ChatStreamSession, new_response_id
from .sink import Sink

__all__ = [
    "AggregateStage",
    "GuardStage",
    "NormalizeStage",
    "RespondStage",
    "Sink",
    "respond",
    "respond_after_parse",
]


class NormalizeStage:
    """Applies a :class:`ChatEventNormalizer`; closes open blocks before completion or error."""

    __slots__ = ("_down", "normalizer", "on_next")

    def __init__(self, down: Sink) -> None:
        self._down = down
        self.normalizer = ChatEventNormalizer(down.on_next)
        self.on_next = self.normalizer.apply

    def on_error(self, error: Exception) -> None:
        self.normalizer.complete(self._down.on_next)
        self._down.on_error(error)

    def on_completed(self) -> None:
        self.normalizer.complete(self._down.on_next)
        self._down.on_completed()


class GuardStage:
    """Delivers what ``ChatEventFilter.guarded(event_filter)`` passes; errors always pass.

    A predicate that raises fails the stream with its exception, as ``ops.filter`` does:
    ``on_error`` once, nothing after it.
    """

    __slots__ = ("on_completed", "on_error", "on_next", "types")

    def __init__(self, down: Sink, event_filter: Callable[[ChatEvent], bool] | None) -> None:
        guarded = ChatEventFilter.guarded(event_filter or ChatEventFilter.DEFAULT)
        push, types, test = down.on_next, guarded.types, guarded.test
        self.types = types
        """The event types delivered, or None when the filter is a predicate."""
        if types is not None:

            def on_next(event: ChatEvent) -> None:
                if event.type in types:
                    push(event)

            self.on_next = on_next
            self.on_error = down.on_error
            self.on_completed = down.on_completed
            return

        # The closures share the flag, not the stage: no reference cycle through the stage,
        # so it is freed as soon as its stream is.
        failed = False

        def on_next_tested(event: ChatEvent) -> None:
            nonlocal failed
            if failed:
                return
            try:
                passed = test(event)
            except Exception as exc:
                failed = True
                down.on_error(exc)
                return
            if passed:
                push(event)

        def on_error(error: Exception) -> None:
            if not failed:
                down.on_error(error)

        def on_completed() -> None:
            if not failed:
                down.on_completed()

        self.on_next = on_next_tested
        self.on_error = on_error
        self.on_completed = on_completed


_RESPONSE_LEVEL = frozenset(
    {
        EVENT_TYPES.STEP_START,
        EVENT_TYPES.STEP_END,
        EVENT_TYPES.RESPONSE_START,
        EVENT_TYPES.RESPONSE_END,
        EVENT_TYPES.ABORT,
        EVENT_TYPES.ERROR,
    }
)
# The step accumulator of every unfolded AggregateStage: it only ever reads it.
_NOTHING_FOLDED = ChatAccumulator()


class AggregateStage:
    """The response level: RESPONSE_START, stamped ids, step responses, usage, one terminal.

    Call :meth:`start` once before the first event (it emits RESPONSE_START). With
    ``fold_steps=False`` step events are not folded here: upstream STEP_ENDs must carry
    their response, a failed step's included (as :func:`parse` does). A failure's
    ``partial_response`` is set to the response the ERROR event carries. ``first_step``:
    the number of the response's first step (a response continued after a pause).
    """

    __slots__ = ("_down", "_fold", "_last_response", "_push", "_step", "_step_open", "ended",
                 "last_event", "session")  # fmt: skip

    def __init__(
        self,
        down: Sink,
        response_id: str | None = None,
        *,
        fold_steps: bool = True,
        first_step: int = 0,
    ) -> None:
        self._down = down
        self._push = down.on_next
        self.session = ChatStreamSession(response_id, first_step)
        self._step = ChatAccumulator() if fold_steps else _NOTHING_FOLDED
        self._step_open = False
        self.last_event: ChatEvent | None = None
        """The latest event below the response level (a synthesized STEP_END takes its ids)."""
        self._last_response: ChatResponse | None = None
        self.ended = False
        self._fold = fold_steps

    def on_next(self, event: ChatEvent) -> None:
        """Fold (when folding), stamp and pass on ``event``; handle the response level."""
        if self.ended:
            return
        if event.type in _RESPONSE_LEVEL:
            self._response_level(event)
            return
        if self._fold:
            self._step.add(event)
        self.last_event = event
        rid = self.session.response_id
        self._push(event if event.response_id is rid else with_response_id(event, rid))

    def start(self) -> None:
        """Emit RESPONSE_START."""
        self.session.mark_response_started()
        session = self.session
        self._down.on_next(
            framing_event(EVENT_TYPES.RESPONSE_START, session.step, session.response_id)
        )

    def _end(self) -> ChatStreamSession | None:
        """Close an open step and mark the response ended: its session, or None when the
        response had ended already."""
        if self.ended:
            return None
        self._close_step()
        self.ended = True
        session = self.session
        session.mark_response_ended()
        return session

    def on_error(self, error: Exception) -> None:
        """Close an open step, emit one ERROR event (with the partial response), then fail."""
        session = self._end()
        if session is None:
            return
        partial = self._partial_response()
        if partial is not None:
            partial = self._with_totals(partial)
            if partial.finish is not FinishReason.ERROR:  # the response failed
                partial = attrs.evolve(partial, finish=FinishReason.ERROR)
        with contextlib.suppress(AttributeError, TypeError):  # what call() users are given
            error.partial_response = partial  # type: ignore[attr-defined]
        provider_error = getattr(error, "provider_error", None)
        self._down.on_next(
            ChatEvent(
                EVENT_TYPES.ERROR,
                response_id=session.response_id,
                step=session.step,
                error=error,
                response=partial,
                usage=session.total_usage,
                raw=dict(provider_error) if provider_error else None,
                text=str(error),
            )
        )
        self._down.on_error(error)

    def on_completed(self) -> None:
        """Close an open step, emit RESPONSE_END with the final response, then complete."""
        session = self._end()
        if session is None:
            return
        response = self._with_totals(self._last_response or self._step.snapshot())
        self._down.on_next(
            framing_event(
                EVENT_TYPES.RESPONSE_END,
                session.step,
                session.response_id,
                response.provider_response_id,
                response=response,
                usage=session.total_usage,
            )
        )
        self._down.on_completed()

    def _with_totals(self, response: ChatResponse) -> ChatResponse:
        """``response`` carrying the response's total usage and cost (every step's so far)."""
        return with_usage(response, self.session.total_usage, self.session.total_cost)

    def _response_level(self, event: ChatEvent) -> None:
        t = event.type
        rid = self.session.response_id
        if t is EVENT_TYPES.STEP_END:
            self._down.on_next(self._step_end(event))
        elif t is EVENT_TYPES.STEP_START:
            self._close_step()
            self._step_open = True
            self.session.next_step()
            self._down.on_next(with_response_id(event, rid))
        elif t is EVENT_TYPES.ABORT:
            self._close_step()
            self.ended = True
            self.session.mark_response_ended()
            if event.usage is None and event.response is None:  # the usage so far, billed
                partial = self._partial_response()
                event = event.evolve(
                    usage=self.session.total_usage,
                    response=self._with_totals(partial) if partial is not None else None,
                )
            self._down.on_next(with_response_id(event, rid))
            self._down.on_completed()
        elif t is EVENT_TYPES.ERROR:
            error = event.error
            if not isinstance(error, Exception):
                error = ChatError(event.text or "the upstream reported an error")
            self.on_error(error)
        # an upstream RESPONSE_START or RESPONSE_END: this stage emits its own

    def _step_end(self, event: ChatEvent) -> ChatEvent:
        """``event`` (a STEP_END) with its response, counted into the total usage."""
        usage = event.usage
        response = event.response
        if response is None:
            response = self._step.snapshot(usage=usage)
            if usage is None:
                usage = response.usage
            event = event.evolve(response=response, usage=usage)
        elif usage is None and response.usage is not None:
            usage = response.usage
            event = event.evolve(usage=usage)
        self.session.accumulate_usage(usage)
        self.session.accumulate_cost(response.cost)
        self._last_response = response
        if self._fold:  # unfolded, the step accumulator stays empty
            self._step = ChatAccumulator()
        self._step_open = False
        return with_response_id(event, self.session.response_id)

    def _close_step(self) -> None:
        if self._step_open:
            last = self.last_event
            self._down.on_next(
                self._step_end(
                    ChatEvent(
                        EVENT_TYPES.STEP_END,
                        step=self.session.step,
                        provider_response_id=last.provider_response_id if last else None,
                    )
                )
            )

    def _partial_response(self) -> ChatResponse | None:
        partial = self._step.snapshot()
        if not partial.is_empty or self._last_response is None:
            return partial
        return self._last_response


class RespondStage:
    """normalize -> aggregate -> guard into ``down``, chained with direct calls; RESPONSE_START
    is emitted at once.

    A composition of :class:`NormalizeStage`, :class:`AggregateStage` and
    :class:`GuardStage`, the very stages the operators ``normalize()``, ``aggregate()`` and
    ``guard()`` run: each event goes through each stage's own ``on_next`` in turn, so the
    composition delivers what the three operators chained deliver.
    """

    __slots__ = ("aggregate", "guard", "normalize", "on_completed", "on_error", "on_next")

    def __init__(
        self,
        down: Sink,
        *,
        response_id: str | None = None,
        event_filter: Callable[[ChatEvent], bool] | None = None,
        fold_steps: bool = True,
        first_step: int = 0,
    ) -> None:
        self.guard = guard = GuardStage(down, event_filter)
        self.aggregate = aggregate = AggregateStage(
            guard, response_id, fold_steps=fold_steps, first_step=first_step
        )
        self.normalize = normalize = NormalizeStage(aggregate)
        self.on_next = normalize.on_next
        self.on_error = normalize.on_error
        self.on_completed = normalize.on_completed
        aggregate.start()


def respond(
    down: Sink,
    *,
    response_id: str | None = None,
    event_filter: Callable[[ChatEvent], bool] | None = None,
    fold_steps: bool = True,
    partial_arguments: bool = False,
    first_step: int = 0,
) -> RespondStage | PartialArgumentsStage:
    """normalize -> aggregate -> guard as one :class:`RespondStage` into ``down``.

    Returns the head to push events into; RESPONSE_START is emitted at once. With
    ``partial_arguments``, a :class:`~solon_events.core.partial_arguments.PartialArgumentsStage`
    in front gives every argument delta the arguments parsed so far. ``first_step`` is
    :class:`AggregateStage`'s.
    """
    head = RespondStage(
        down,
        response_id=response_id,
        event_filter=event_filter,
        fold_steps=fold_steps,
        first_step=first_step,
    )
    return PartialArgumentsStage(head) if partial_arguments else head


def respond_after_parse(
    down: Sink,
    *,
    event_filter: Callable[[ChatEvent], bool] | None = None,
    partial_arguments: bool = False,
    first_step: int = 0,
    response_id: str | None = None,
) -> tuple[str, RespondStage | PartialArgumentsStage]:
    """The response's id (``response_id``, else a new one) and the :func:`respond` head
    for a parse stage's events into ``down``: steps are not folded again (the parse stage
    folds each step's events)."""
    response_id = response_id or new_response_id()
    head = respond(
        down,
        response_id=response_id,
        event_filter=event_filter,
        fold_steps=False,
        partial_arguments=partial_arguments,
        first_step=first_step,
    )
    return response_id, head
