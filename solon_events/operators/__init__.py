"""The RxPY operators of the event pipeline.

``frames.pipe(parse(dialect), normalize(), aggregate(), guard(event_filter))`` folds each
event into the response once: ``parse()`` folds each step, and ``aggregate()`` after it
(directly or through ``normalize()``) takes each step's response from its STEP_END.
``respond()`` runs the same three stages with direct calls between them (a hypothesis test
checks that it delivers what the three operators chained deliver).

Each operator creates its state when it is subscribed, so one pipeline can be subscribed
many times, each subscription a fresh response. Disposal stops delivery at once: nothing,
not even a synthesized closer, is emitted after it. An operator that fails (an exception
inside its own code, whichever callback runs it) ends the stream with its subscriber's
``on_error``, a :class:`~solon_events.ChatError` naming the operator (the exception its
``__cause__``), never by raising into its source; what the subscriber itself raises from
its callbacks goes up to the source unchanged, as with RxPY's own operators.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import reactivex
from reactivex import Observable, abc
from reactivex import operators as ops

from ..core import stages
from ..core.parsing import ParseStage
from ..core.partial_arguments import ArgumentDelta, ArgumentDeltas, PartialArgumentsStage
from ..core.stages import AggregateStage, GuardStage, NormalizeStage, Sink
from ..core.structured import JsonAnswer, Schema
from ..dialects.base import ChatDialect, get_dialect
from ..event_model.events import EVENT_TYPES, ChatEvent
from ..event_model.filters import ChatEventFilter
from ..event_model.results import ChatResponse
from ..support.safe_callbacks import Callbacks, subscribe_safely
from .smoothing import smooth

__all__ = [
    "aggregate",
    "argument_deltas",
    "final_response",
    "guard",
    "normalize",
    "parse",
    "partial_arguments",
    "partial_json",
    "reduce_response",
    "respond",
    "smooth",
    "text_deltas",
]

Operator = Callable[[Observable[Any]], Observable[ChatEvent]]


class _FoldedSteps(Observable[ChatEvent]):
    """Events whose steps each end with a STEP_END carrying the step's folded response:
    what ``parse()`` gives, and ``normalize()`` or ``partial_arguments()`` pass on, so an
    ``aggregate()`` after them does not fold the steps' events a second time."""


def parse(
    dialect: str | ChatDialect,
    *,
    step: int = 0,
    response_id: str | None = None,
    accept_unknown_streams: bool = False,
) -> Operator:
    """Provider frames -> the events of one step, bracketed by STEP_START and STEP_END.

    Frames are :class:`~solon_events.wire.sse.Frame` values, JSON text or decoded payloads.
    The step's accumulator folds every event; STEP_END carries the step's snapshot as
    ``response`` and its usage. A source that ends without the provider's completion
    signal, or with no frame at all, fails with :class:`ChatProtocolError`, as does one
    whose every frame the dialect does not know (only RAW events: no content, usage or
    finish reason), naming their event types, unless ``accept_unknown_streams=True``
    takes it as an empty answer; a malformed frame fails naming its number; a
    provider-reported failure fails with its error.

    Example::

        frames = reactivex.from_iterable(iter_frames(Path("answer.sse").read_bytes()))
        frames.pipe(parse("openai")).subscribe(print)
        # STEP_START, TEXT_DELTA 'Hel', TEXT_DELTA 'lo', ..., STEP_END (with the response)
    """
    the_dialect = get_dialect(dialect)

    def make(observer: abc.ObserverBase[ChatEvent]) -> Sink:
        stage = ParseStage(the_dialect, observer, step=step, response_id=response_id)
        stage.accept_unknown_streams = accept_unknown_streams
        stage.start()
        return stage

    return _stage_operator(make, "parse()", folds_steps=True)


def _operator(
    start: Callable[[abc.ObserverBase[Any]], Callbacks],
    name: str,
    observable: Callable[..., Observable[Any]] = reactivex.create,
) -> Callable[[Observable[Any]], Observable[Any]]:
    """The operator ``name`` whose callbacks ``start(observer)`` makes, fresh state for
    each subscription, run safely (see :mod:`solon_events.support.safe_callbacks`); its
    observable made by ``observable(subscribe)``."""
    where = f"the {name} operator"

    def operator(source: Observable[Any]) -> Observable[Any]:
        def subscribe(
            observer: abc.ObserverBase[Any], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            return subscribe_safely(
                source, observer, scheduler, lambda: start(observer), where=where
            )

        return observable(subscribe)

    return operator


def _stage_operator(
    make: Callable[[abc.ObserverBase[ChatEvent]], Sink],
    name: str,
    *,
    folds_steps: bool = False,
    keeps_steps: bool = False,
) -> Operator:
    """The operator ``name`` that runs ``make(observer)``, a fresh stage per subscription.

    Its observable is a :class:`_FoldedSteps` when the stage folds each step into its
    STEP_END (``folds_steps``), or passes on the STEP_ENDs of a source that is one
    (``keeps_steps``).
    """

    def start(observer: abc.ObserverBase[ChatEvent]) -> Callbacks:
        stage = make(observer)
        return stage.on_next, stage.on_error, stage.on_completed

    def operator(source: Observable[ChatEvent]) -> Observable[ChatEvent]:
        folded = folds_steps or (keeps_steps and isinstance(source, _FoldedSteps))
        return _operator(start, name, _FoldedSteps if folded else reactivex.create)(source)

    return operator


def normalize() -> Operator:
    """Complete block boundaries with a :class:`ChatEventNormalizer`.

    On completion and on error the closers of still-open blocks are emitted first.

    Example::

        reactivex.of(ChatEvent(ChatEventType.TEXT_DELTA, text="Hi")).pipe(normalize())
        # TEXT_START, TEXT_DELTA 'Hi', TEXT_END
    """
    return _stage_operator(NormalizeStage, "normalize()", keeps_steps=True)


def aggregate(*, response_id: str | None = None, fold_steps: bool | None = None) -> Operator:
    """The response level: RESPONSE_START, stamped ids, step responses, usage, one terminal event.

    Emits RESPONSE_START first and stamps the response id on every event; gives every
    STEP_END a ``response`` and adds step usages across steps; closes a step left open
    before the terminal event. On completion it emits RESPONSE_END (the final step's
    response carrying the total usage); on failure one ERROR event (the error, the best
    partial response, the total usage and the provider's error fields as ``raw``) and then
    the same exception through ``on_error``.

    Each subscription gets a fresh response id, unless ``response_id`` is given (pass
    the same id to :func:`parse` and events need no re-stamping). Each event is folded into
    its response once: after :func:`parse` (directly or through :func:`normalize`), whose
    STEP_ENDs carry their response, nothing is folded here; after any other source each
    step's events are. ``fold_steps`` says which, whatever the source.

    Example::

        frames.pipe(parse("anthropic"), normalize(), aggregate())
        # RESPONSE_START, STEP_START, ..., STEP_END, RESPONSE_END (the final response)
    """

    def operator(source: Observable[ChatEvent]) -> Observable[ChatEvent]:
        fold = not isinstance(source, _FoldedSteps) if fold_steps is None else fold_steps

        def make(observer: abc.ObserverBase[ChatEvent]) -> Sink:
            stage = AggregateStage(observer, response_id, fold_steps=fold)
            stage.start()
            return stage

        return _stage_operator(make, "aggregate()")(source)

    return operator


def guard(event_filter: Callable[[ChatEvent], bool] | None = None) -> Operator:
    """Deliver through ``ChatEventFilter.guarded(event_filter)`` (default: DEFAULT).

    LIFECYCLE and STEP events (but HEARTBEAT) always pass; errors always reach
    ``on_error`` whatever the filter says about ERROR events.

    Example::

        events.pipe(guard(ChatEventFilter.of(ChatEventType.TEXT_DELTA)))
        # RESPONSE_START, STEP_START, the TEXT_DELTAs, STEP_END, RESPONSE_END
    """
    ChatEventFilter.guarded(event_filter or ChatEventFilter.DEFAULT)  # validate now
    return _stage_operator(lambda observer: GuardStage(observer, event_filter), "guard()")


def respond(
    *,
    response_id: str | None = None,
    event_filter: Callable[[ChatEvent], bool] | None = None,
    partial_arguments: bool = False,
) -> Operator:
    """``normalize()``, ``aggregate()`` and ``guard(event_filter)`` composed into one operator.

    The same stages with direct calls between them instead of three subscriptions; what
    :func:`~solon_events.replay` and :class:`~solon_events.ChatModel` use. It expects
    :func:`parse` upstream: steps end with their response and failures carry their
    ``partial_response``, so events are not folded a second time. ``partial_arguments=True``
    does what :func:`partial_arguments` does, in front of them.

    Example::

        frames.pipe(parse("gemini"), respond(event_filter=ChatEventFilter.all()))
        # what parse, normalize, aggregate and guard chained give, in one subscription
    """
    ChatEventFilter.guarded(event_filter or ChatEventFilter.DEFAULT)  # validate now
    return _stage_operator(
        lambda observer: stages.respond(
            observer,
            response_id=response_id,
            event_filter=event_filter,
            fold_steps=False,
            partial_arguments=partial_arguments,
        ),
        "respond()",
    )


def partial_arguments() -> Operator:
    """Every TOOL_CALL_ARGS_DELTA and SERVER_TOOL_ARGS_DELTA gets a ``tool_call`` whose
    ``arguments`` are the call's arguments parsed so far.

    The snapshot is a :class:`~solon_events.ToolCall` (id, name, index, and ``arguments``
    as a dict that later deltas never change; its ``arguments_str`` is empty, the deltas
    carry the text). Each delta is parsed once, by a
    :class:`~solon_events.PartialJsonParser` per call, so a long argument costs linear
    time; an input that is not JSON (a free-form tool's) has ``{}``. Use it anywhere after
    :func:`parse`::

        replay("call.jsonl").pipe(
            partial_arguments(),
            ops.filter(lambda e: e.type is ChatEventType.TOOL_CALL_ARGS_DELTA),
            ops.map(lambda e: e.tool_call.arguments),
        ).subscribe(print)  # {} {'city': ''} {'city': 'Par'} {'city': 'Paris'} ...
    """
    return _stage_operator(PartialArgumentsStage, "partial_arguments()", keeps_steps=True)


def argument_deltas() -> Callable[[Observable[ChatEvent]], Observable[ArgumentDelta]]:
    """Argument deltas -> what each changed in its call's arguments, path by path.

    Each TOOL_CALL_ARGS_DELTA and SERVER_TOOL_ARGS_DELTA becomes the
    :class:`~solon_events.ArgumentDelta` values it makes: a member or item that appears
    (``op`` ``"add"``, its ``value`` complete for a number or literal, as far as it came for
    a string, empty for an object or array), or text added to a string (``"append"``),
    each at its ``path`` inside the arguments and naming its call. Where
    :func:`partial_arguments` snapshots the arguments after each delta (which costs the
    open containers and an open string every time), these cost the delta alone, so a view
    of a long argument stays linear; applied in order with a
    :class:`~solon_events.JsonDeltaBuilder` per call they rebuild the arguments. Other
    events make nothing; an input that is not JSON (a free-form tool's) makes nothing from
    where it stops being JSON::

        model.prompt("Write the report").tools(write_report).stream().pipe(
            argument_deltas()
        ).subscribe(lambda d: print(d.tool_call_id, d.path, d.op, repr(d.value)))
        # call_1 () add {}   call_1 ('title',) add 'Quart'   call_1 ('title',) append 'erly'
    """

    def start(observer: abc.ObserverBase[ArgumentDelta]) -> Callbacks:
        calls = ArgumentDeltas()

        def on_next(event: ChatEvent) -> None:
            call = calls.feed(event)
            if call is None:
                return
            for path, op, value in call.deltas:
                observer.on_next(
                    ArgumentDelta(
                        path, op, value, call.id, call.name, call.index, event.step, call.server
                    )
                )

        return on_next, observer.on_error, observer.on_completed

    return _operator(start, "argument_deltas()")


def partial_json(schema: Schema = None) -> Callable[[Observable[ChatEvent]], Observable[Any]]:
    """A response's TEXT_DELTAs -> successive partial values of its JSON answer.

    For a response asked for JSON (``response_format``, a JSON schema, or any answer that
    is JSON): each time the answer's value grows, its partial value (as
    :meth:`~solon_events.PartialJsonParser.value` gives it: plain dicts and lists that
    later text never changes). Only the last step's text counts, and a Markdown code fence
    around the JSON is skipped. On completion the whole answer is checked: ``schema`` may
    be an attrs class (the last value emitted is then an instance of it) or a JSON schema
    (a mapping); both need ``pip install 'solon-events[structured]'`` (an ImportError saying
    so at the call). Without ``schema``, a response asked for a structured answer
    (``prompt(..., output=City)``) ends with its checked ``output`` (a ``City``). An answer
    that is not JSON, is cut short or does not fit fails the stream with ``ValueError``::

        model.prompt("List three cities as JSON").stream().pipe(partial_json()).subscribe(print)
    """
    JsonAnswer(schema)  # check the schema, and that its extra is installed, now

    def start(observer: abc.ObserverBase[Any]) -> Callbacks:
        answer = JsonAnswer(schema)
        checked: list[Any] = []  # the response's structured output, checked by the model

        def on_next(event: ChatEvent) -> None:
            if answer.add(event):
                observer.on_next(answer.value)
            elif event.type is EVENT_TYPES.RESPONSE_END and schema is None:
                output = event.response.output if event.response is not None else None
                if output is not None:
                    checked.append(output)

        def on_completed() -> None:
            try:
                whole = answer.finish()
            except ValueError as error:
                observer.on_error(error)
                return
            if checked:
                whole = checked[0]
            if whole is not answer.value:  # an attrs instance, a number ended by the end
                observer.on_next(whole)
            observer.on_completed()

        return on_next, observer.on_error, on_completed

    return _operator(start, "partial_json()")


def _text_deltas(observer: abc.ObserverBase[str]) -> Callbacks:
    push = observer.on_next

    def on_next(event: ChatEvent) -> None:
        if event.type is EVENT_TYPES.TEXT_DELTA and event.text:
            push(event.text)

    return on_next, observer.on_error, observer.on_completed


def _response_ends(observer: abc.ObserverBase[ChatResponse]) -> Callbacks:
    def on_next(event: ChatEvent) -> None:
        if event.type is EVENT_TYPES.RESPONSE_END:
            observer.on_next(event.response or ChatResponse())

    return on_next, observer.on_error, observer.on_completed


def text_deltas() -> Callable[[Observable[ChatEvent]], Observable[str]]:
    """TEXT_DELTA events that carry text -> their text.

    Example::

        replay("answer.jsonl").pipe(text_deltas()).subscribe(print)  # 'Hel', 'lo', ...
    """
    return _operator(_text_deltas, "text_deltas()")


def final_response() -> Callable[[Observable[ChatEvent]], Observable[ChatResponse]]:
    """RESPONSE_END -> its ChatResponse, then completes.

    Example::

        replay("answer.jsonl").pipe(final_response()).subscribe(lambda r: print(r.text))
    """
    return reactivex.compose(_operator(_response_ends, "final_response()"), ops.take(1))


def reduce_response(events: Iterable[ChatEvent]) -> ChatResponse | None:
    """The response of an event sequence, without Rx.

    The first RESPONSE_END's response; without one, the last STEP_END's response; events
    after a terminal event change nothing; a delta's response is never used; None if none.

    Example::

        events = []
        replay("answer.jsonl").subscribe(events.append)
        reduce_response(events).text  # 'Hello'
    """
    last_step: ChatResponse | None = None
    for event in events:
        t = event.type
        if t is EVENT_TYPES.RESPONSE_END and event.response is not None:
            return event.response
        if t.is_terminal:
            break
        if t is EVENT_TYPES.STEP_END and event.response is not None:
            last_step = event.response
    return last_step
