"""ChatPrompt: a prepared request to a :class:`~solon_events.ChatModel` (or a group of
them), and the four ways to run it: :meth:`ChatPrompt.stream` (a cold Observable, on the
model's I/O thread), :meth:`ChatPrompt.astream` (on the caller's loop), :meth:`ChatPrompt.call`
and :meth:`ChatPrompt.acall`. See :mod:`solon_events.client.model` for the threads and loops.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Any

import attrs
from reactivex import Observable, abc
from reactivex import create as rx_create
from reactivex.disposable import Disposable

from ..core import stages
from ..dialects.base import HttpRequest
from ..event_model.approvals import ApprovalDecision, PendingApproval
from ..event_model.errors import ChatError
from ..event_model.events import EVENT_TYPES, ChatEvent
from ..event_model.messages import ChatRequest, Message, OutputMode, ToolSpec
from ..event_model.results import ChatResponse, UsageReport
from ..event_model.steps import PrepareStep, StopCondition
from ..support.redaction import Redactor
from ..support.safe_callbacks import failure_of, raised_by
from ..tools import Tool, ToolSet
from ..wire.sse import Frame
from .metering import SpendRecord, metered_astream, metered_stream
from .output import OutputRequest
from .tool_loop import Emit, ResponseRun, StepPlan

if TYPE_CHECKING:
    from .cache import CacheMode, Pace, ResponseCache
    from .model import ChatModel, _Lifecycle

__all__ = ["ChatPrompt"]

EventFilter = Callable[[ChatEvent], bool]


@attrs.define(eq=False, repr=False)
class _ResponsePipeline:
    """One subscription of :meth:`ChatPrompt.stream`: a :class:`ResponseRun` as a task on
    the I/O loop, every event through ``respond()`` into the observer.

    Every failure passes the model's :class:`~solon_events.support.redaction.Redactor` before the
    ERROR event is built from it: the one point where secrets leave the errors. However
    the run ends, the observer gets its end: should the run's own way to end it fail (a
    callback of the subscriber that raised on the ERROR event, a bug), the pipeline fails
    the observer itself.
    """

    _plan: StepPlan
    _event_filter: EventFilter | None
    _observer: stages.Sink
    _lifecycle: _Lifecycle
    _redactor: Redactor
    _partial_arguments: bool = False
    _run: ResponseRun | None = attrs.field(init=False, default=None)
    _task: asyncio.Task[None] | None = attrs.field(init=False, default=None)
    _ended: bool = attrs.field(init=False, default=False)
    on_next: Callable[[ChatEvent], None] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.on_next = self._observer.on_next

    def start(self) -> None:
        """Start the steps (on the I/O loop); RESPONSE_START is emitted at once."""
        if self._ended:
            return
        try:
            run = self._open()
        except Exception as error:  # RESPONSE_START's receiver raised
            self._end_failed(error)
            return
        if self._ended:  # disposed on RESPONSE_START (take(1)): no request is sent
            run.stop()
            return
        self._task = asyncio.get_running_loop().create_task(self._drive(run))

    async def _drive(self, run: ResponseRun) -> None:
        """Run ``run``'s steps to their end (a task on the I/O loop); make sure the
        observer has its end."""
        try:
            async with contextlib.aclosing(run.steps()) as steps:
                async for _ in steps:
                    pass
        except Exception as error:
            self._end_failed(error)
        else:
            if not self._ended:
                self._end_failed(ChatError("the response ended without its end"))

    def _end_failed(self, error: Exception) -> None:
        """The response's own way to its end raised ``error``: end it here, through the
        stages if they still can (ERROR event, then ``on_error``), else directly. After the
        observer's end, ``error`` is its callbacks' (or ours after them): the loop's
        exception handler reports it."""
        if self._ended:
            asyncio.get_running_loop().call_exception_handler(
                {"message": "a stream() response raised after its end", "exception": error}
            )
            return
        if not raised_by(error, self._observer):
            error = failure_of(error, "the response")
        if self._run is not None:
            with contextlib.suppress(Exception):
                self._run.fail(error)
        if not self._ended:
            self.on_error(self._redactor.error(error))

    def _open(self) -> ResponseRun:
        if self._run is None:
            self._run = _response_run(
                self._plan,
                self,
                self._event_filter,
                self._partial_arguments,
                self._redactor,
                paced=False,
                theirs=lambda error: raised_by(error, self._observer),
            )
        return self._run

    def fail(self, error: ChatError | None = None) -> None:
        """End the response with ``error`` unless it has ended (by default: the model is
        closing)."""
        if self._ended:
            return
        if self._task is not None:
            self._task.cancel()
        self._open().fail(error)

    def on_error(self, error: Exception) -> None:
        self._end()
        self._observer.on_error(error)

    def on_completed(self) -> None:
        self._end()
        self._observer.on_completed()

    def _end(self) -> None:
        self._ended = True
        self._lifecycle.release(self)

    def dispose(self) -> None:
        """Stop the response: nothing more is delivered; the request is cancelled."""
        self._end()
        self._lifecycle.call_soon(self._stop)

    def _stop(self) -> None:
        if self._run is not None:
            self._run.stop()
        if self._task is not None:
            self._task.cancel()


def _response_run(
    plan: StepPlan,
    down: stages.Sink,
    event_filter: EventFilter | None,
    partial_arguments: bool,
    redactor: Redactor,
    *,
    paced: bool = True,
    theirs: Callable[[BaseException], bool] = lambda _error: False,
) -> ResponseRun:
    """A response's run into ``down``, through ``respond()`` (RESPONSE_START emitted);
    ``theirs`` tells the exceptions the subscriber raised (see :class:`ResponseRun`)."""
    response_id, head = stages.respond_after_parse(
        down,
        event_filter=event_filter,
        partial_arguments=partial_arguments,
        first_step=plan.resume.step if plan.resume is not None else plan.first_step,
        response_id=plan.response_id,
    )
    return ResponseRun(
        plan, head, response_id=response_id, redact=redactor.error, paced=paced, theirs=theirs
    )


class _Gathered:
    """The end of an :meth:`ChatPrompt.astream` pipeline: events gathered in a list for
    the generator to yield, and how the response ended."""

    __slots__ = ("ended", "error", "events", "on_next")

    def __init__(self) -> None:
        self.events: list[ChatEvent] = []
        self.on_next = self.events.append
        self.error: Exception | None = None
        self.ended = False

    def on_error(self, error: Exception) -> None:
        self.error = error
        self.ended = True

    def on_completed(self) -> None:
        self.ended = True


class _CallerRun:
    """An :meth:`ChatPrompt.astream` in flight, as its model sees it: closing the model
    fails it, on its own loop (its task is cancelled only while it waits for the steps,
    never while the caller's code runs)."""

    def __init__(self, run: ResponseRun, loop: asyncio.AbstractEventLoop) -> None:
        self.run = run
        self._loop = loop
        self._task = asyncio.current_task()
        self.waiting = False
        self.aborted = False

    def fail(self) -> None:
        """The model is closing (from any thread): fail the response on its loop."""
        with contextlib.suppress(RuntimeError):  # the loop is closed: nothing runs it
            self._loop.call_soon_threadsafe(self._abort)

    def _abort(self) -> None:
        if self.run.ended:
            return
        self.aborted = True
        if self.waiting and self._task is not None:
            self._task.cancel()

    def uncancel(self) -> None:
        """Take back the cancellation :meth:`_abort` asked for."""
        uncancel = getattr(self._task, "uncancel", None)  # Python 3.11+
        if uncancel is not None:
            uncancel()

    def release(self) -> None:
        """The response has ended: let go of its task. A task cancelled in the response
        keeps the CancelledError, whose traceback keeps the frame that holds this run: a
        reference cycle that kept each such response's buffers until Python's cyclic
        collector ran."""
        self._task = None


@attrs.frozen
class ChatPrompt:
    """A prepared request; every chained method returns a new prompt.

    Terminal methods: :meth:`call`, :meth:`acall`, :meth:`stream`, :meth:`astream`.
    """

    _model: ChatModel
    _messages: tuple[Message, ...]
    _tools: tuple[Tool, ...] = ()
    _options: Mapping[str, Any] = attrs.field(factory=dict)
    _event_filter: EventFilter | None = None
    _auto_tool_call: bool = True
    _partial_arguments: bool = False
    # Sees every raw frame received, in order (solon_events.recording.record sets it).
    _frame_tap: Callable[[Frame | str | bytes], Any] | None = None
    _client_tools: tuple[ToolSpec, ...] = ()
    _stop_when: tuple[StopCondition, ...] = ()
    _prepare_step: PrepareStep | None = None
    _resume: PendingApproval | None = None
    _decisions: Mapping[str, ApprovalDecision] = attrs.field(factory=dict)
    # The response's id and its first step's number when this prompt is one attempt of a
    # response (solon_events.client.routing).
    _response_id: str | None = None
    _first_step: int = 0
    _on_usage: tuple[Callable[[UsageReport], Any], ...] = ()
    _output: OutputRequest | None = None
    _options_for: Callable[[str], Mapping[str, Any]] | None = None
    _cache: CacheMode = True
    _cache_pace: Pace | None = None
    _on_attempt: tuple[Callable[[SpendRecord], Any], ...] = ()

    def tools(self, *tools: Tool | ToolSet | Callable[..., Any]) -> ChatPrompt:
        """Add tools (``@tool`` functions, plain typed functions, or sets such as McpTools)."""
        added = tuple(ToolSet(tools).values())
        return attrs.evolve(self, tools=self._tools + added)

    def client_tools(self, *specs: ToolSpec) -> ChatPrompt:
        """Tools the model may call that run elsewhere (in a browser, say): never here.

        A step that calls one runs this prompt's own tools among its calls, then ends the
        response with the calls as they are, for the caller to answer in a later request.
        """
        for spec in specs:
            if not isinstance(spec, ToolSpec):
                raise TypeError(f"a client tool is a ToolSpec, not {type(spec).__name__}")
        return attrs.evolve(self, client_tools=self._client_tools + specs)

    def options(self, **provider_options: Any) -> ChatPrompt:
        """Provider options merged into the request body (temperature, max_tokens, ...)."""
        return attrs.evolve(self, options={**self._options, **provider_options})

    def dialect_options(self, options_for: Callable[[str], Mapping[str, Any]]) -> ChatPrompt:
        """Provider options written for each model's own dialect: ``options_for(name)``
        gives those of the dialect ``name`` (``"openai"``, ``"anthropic"``, ...), under the
        ones :meth:`options` sets. A group of models of different providers (a router, a
        fallback chain) so sends each its own words for the same settings."""
        if not callable(options_for):
            raise TypeError("options_for must be a function of a dialect's name")
        return attrs.evolve(self, options_for=options_for)

    def event_filter(self, event_filter: EventFilter) -> ChatPrompt:
        """Deliver only what ``event_filter`` passes (guarded: lifecycle always passes)."""
        if not callable(event_filter):
            raise TypeError("event_filter must be a callable such as a ChatEventFilter")
        return attrs.evolve(self, event_filter=event_filter)

    def auto_tool_call(self, flag: bool = True) -> ChatPrompt:
        """Whether tool calls are executed and sent back automatically (default True)."""
        return attrs.evolve(self, auto_tool_call=bool(flag))

    def stop_when(self, *conditions: StopCondition) -> ChatPrompt:
        """End the tool loop as soon as one of ``conditions`` holds over the steps so far
        (:func:`~solon_events.step_count_is`, :func:`~solon_events.has_tool_call`, or any
        callable of a tuple of :class:`~solon_events.StepResult`); asked after each step
        whose tools ran. ``max_steps`` stays the backstop. See
        :mod:`solon_events.event_model.steps`."""
        for condition in conditions:
            if not callable(condition):
                raise TypeError(f"a stop condition is a callable, not {type(condition).__name__}")
        return attrs.evolve(self, stop_when=self._stop_when + conditions)

    def prepare_step(self, function: PrepareStep | None) -> ChatPrompt:
        """Call ``function`` before each step (the first included) with a
        :class:`~solon_events.StepContext`; the :class:`~solon_events.StepSettings` it
        returns (or None) change that step's model name, tools, messages or options. It runs
        on the I/O loop between steps: keep it quick, or make it ``async``."""
        if function is not None and not callable(function):
            raise TypeError(f"prepare_step takes a callable, not {type(function).__name__}")
        return attrs.evolve(self, prepare_step=function)

    def approve(self, call_id: str, *, arguments: Mapping[str, Any] | None = None) -> ChatPrompt:
        """Approve the pending tool call ``call_id`` of the paused response this prompt
        continues (``model.prompt(pending)``): it runs, with ``arguments`` instead of the
        model's when given. See :mod:`solon_events.event_model.approvals`."""
        if arguments is not None and not isinstance(arguments, Mapping):
            raise TypeError(f"arguments must be a mapping, not {type(arguments).__name__}")
        decision = ApprovalDecision(
            approved=True, arguments=None if arguments is None else dict(arguments)
        )
        return self._decide(call_id, decision)

    def deny(self, call_id: str, reason: str | None = None) -> ChatPrompt:
        """Deny the pending tool call ``call_id`` of the paused response this prompt
        continues: it does not run, and the model reads a tool result saying so (with
        ``reason``). See :mod:`solon_events.event_model.approvals`."""
        if reason is not None and not isinstance(reason, str):
            raise TypeError(f"reason must be a string, not {type(reason).__name__}")
        return self._decide(call_id, ApprovalDecision(approved=False, reason=reason))

    def _decide(self, call_id: str, decision: ApprovalDecision) -> ChatPrompt:
        pending = self._resume
        if pending is None:
            raise ValueError(
                "approve() and deny() continue a response paused for approval: "
                "model.prompt(response.pending_approval).approve(call_id)"
            )
        known = [call.id for call in pending.tool_calls]
        if call_id not in known:
            listed = ", ".join(map(repr, known))
            raise ValueError(f"no pending tool call {call_id!r}; the pending calls are {listed}")
        return attrs.evolve(self, decisions={**self._decisions, call_id: decision})

    @property
    def pending_calls(self) -> tuple[str, ...]:
        """The ids of the pending tool calls not decided yet (``()`` unless this prompt
        continues a paused response)."""
        if self._resume is None:
            return ()
        calls = self._resume.tool_calls
        return tuple(call.id or "" for call in calls if call.id not in self._decisions)

    def on_usage(self, callback: Callable[[UsageReport], Any]) -> ChatPrompt:
        """Call ``callback`` with the :class:`~solon_events.UsageReport` of each response
        to this prompt, once it has ended however it ended (a cancellation included), after
        the model's own ``on_usage``. For usage per request (an attempt of a fallback, a
        hedged request's loser); see ``ChatModel(on_usage=...)``."""
        if not callable(callback):
            raise TypeError(f"on_usage takes a callable, not {type(callback).__name__}")
        return attrs.evolve(self, on_usage=(*self._on_usage, callback))

    def on_attempt(self, callback: Callable[[SpendRecord], Any]) -> ChatPrompt:
        """Call ``callback`` with a :class:`~solon_events.client.metering.SpendRecord`
        for each request the response makes of a model (every attempt of a group's
        response: fallbacks, hedges, the losers cancelled), once it has ended, however it
        ended: its usage and cost, its outcome, its times, where it was sent. It runs
        where the attempt ran; what it raises is logged."""
        if not callable(callback):
            raise TypeError(f"on_attempt takes a callable, not {type(callback).__name__}")
        return attrs.evolve(self, on_attempt=(*self._on_attempt, callback))

    def output(
        self,
        output: Any,
        *,
        mode: OutputMode | None = None,
        retries: int = 0,
        name: str | None = None,
        strict: bool | None = None,
    ) -> ChatPrompt:
        """Ask for the answer in the shape of ``output``: a pydantic model, an attrs class,
        a dataclass, a TypedDict (or ``list[...]`` of them) or a JSON schema (a mapping).

        Each dialect asks in its ``mode`` (``"native"``, ``"tool"`` or ``"prompted"``;
        None: the dialect's default for the model, see :doc:`/guides/structured_output`); the
        answer streams as the last step's text (in ``"tool"`` mode too), and the
        response's ``output`` is the answer checked: an instance of the type, or the JSON
        value for a schema. An answer that does not fit is asked again up to ``retries``
        times, with what was wrong (each retry a STATUS event, ``sub_type``
        ``"output_retry"``, its step's usage kept); after that the response fails with
        :class:`~solon_events.StructuredOutputError`, as it does at once when the model
        refuses. ``name`` names the schema to the provider (the type's name by default);
        ``strict``: hold the answer to the schema where the provider can (None: where
        the schema can be made strict; True: a ValueError when it cannot). An
        :class:`~solon_events.event_model.messages.OutputFormat` is asked for as it is and never
        checked (what the gateway does for its clients).
        ``model.prompt(text, output=X)`` is ``model.prompt(text).output(X)``.
        """
        request = OutputRequest.of(output, mode=mode, retries=retries, name=name, strict=strict)
        return attrs.evolve(self, output=request)

    def cache(self, mode: CacheMode = True, *, pace: Pace | None = None) -> ChatPrompt:
        """How this prompt uses its model's response cache (``ChatModel(cache=...)``; a
        model without one ignores it): True (the default) answers from the cache when it
        holds the answer and stores a new one; False neither reads nor stores
        (``prompt(..., cache=False)``); ``"refresh"`` asks the model and stores its
        answer. ``pace`` replays a hit ``"fast"`` or at its ``"recorded"`` pace (default:
        the cache's). See :mod:`solon_events.client.cache`."""
        if mode is not True and mode is not False and mode != "refresh":
            raise ValueError(f"cache is True, False or 'refresh', not {mode!r}")
        if pace is not None and pace not in ("fast", "recorded"):
            raise ValueError(f"pace must be 'fast' or 'recorded', not {pace!r}")
        return attrs.evolve(self, cache=mode, cache_pace=pace)

    def _cached(self) -> tuple[ResponseCache, str] | None:
        """The model's cache and this prompt's key in it, when it goes through one."""
        model = self._model
        cache: ResponseCache | None = getattr(model, "cache", None)
        if cache is None or self._cache is False or getattr(model, "closed", False):
            return None
        key = cache.key(self)
        return None if key is None else (cache, key)

    def partial_arguments(self, flag: bool = True) -> ChatPrompt:
        """Whether every tool-call argument delta carries the arguments parsed so far
        (default off; see :func:`~solon_events.operators.partial_arguments`)."""
        return attrs.evolve(self, partial_arguments=bool(flag))

    def _plan(self) -> StepPlan:
        undecided = self.pending_calls
        if undecided:
            raise ValueError(
                "every pending tool call must be approved or denied before the response "
                f"goes on; not decided: {', '.join(map(repr, undecided))}"
            )
        model = self._model
        budgets = model.budgets
        toolset = ToolSet(self._tools)
        request = ChatRequest(
            model=model.model,
            messages=self._messages,
            tools=toolset.specs() + self._client_tools,
            options=(
                {**self._options_for(model.dialect.name), **self._options}
                if self._options_for is not None
                else self._options
            ),
            output=self._output.format if self._output is not None else None,
        )
        return StepPlan(
            request=request,
            dialect=model.dialect,
            build=model.build_http_request,
            read=self._read,
            tools=toolset,
            auto_tool_call=self._auto_tool_call,
            max_steps=model.max_steps,
            tool_errors=model.tool_errors,
            client_tools=frozenset(spec.name for spec in self._client_tools),
            total_timeout=budgets.total_timeout,
            tool_timeout=budgets.tool_timeout,
            stop_when=self._stop_when,
            prepare_step=self._prepare_step,
            resume=self._resume,
            decisions=self._decisions,
            response_id=self._response_id,
            first_step=self._first_step,
            accounting=model._accounting,
            on_usage=((model.on_usage,) if model.on_usage else ()) + self._on_usage,
            output=self._output,
            accept_unknown_streams=model.accept_unknown_streams,
        )

    def _read(
        self, http: HttpRequest, emit: Emit, paced: bool, deadline: float | None
    ) -> AsyncGenerator[None, None]:
        reader = self._model._reader
        tap = self._frame_tap
        if tap is None:  # the parse stage reads each frame's data alone: no Frame needed
            return reader.read(http, emit, paced, data_only=True, deadline=deadline)

        def tapped(item: Frame | str | bytes | ChatEvent) -> None:
            if not isinstance(item, ChatEvent):  # not a retry's STATUS event
                tap(item)
            emit(item)

        return reader.read(http, tapped, paced, deadline=deadline)

    @property
    def _metered(self) -> bool:
        """Whether the response is metered (:mod:`solon_events.client.metering`)."""
        return bool(self._on_attempt) or self._model.limiter is not None

    def stream(self) -> Observable[ChatEvent]:
        """A cold Observable of the response's events; each subscription is a new request
        (or a replay of the model's cache: :meth:`cache`).

        Events are delivered on the model's I/O thread. Subscribed after the model was
        closed, it fails at once (RESPONSE_START, ERROR, then ``on_error``).
        """
        cached = self._cached()
        if cached is not None:
            cache, key = cached
            return cache.observable(self, key, _asked, _io_thread(self._model))
        return self._stream_uncached()

    def _stream_uncached(self) -> Observable[ChatEvent]:
        """:meth:`stream`, asked of the model (metered when the model has a limiter or
        the prompt ``on_attempt`` callbacks)."""
        if self._metered and not self._model.closed:
            return metered_stream(self)
        plan = self._plan()
        event_filter = self._event_filter
        partial_arguments = self._partial_arguments
        model = self._model

        instrument = model._instrument(self._messages, self._options) if model.telemetry else None

        def subscribe(
            observer: abc.ObserverBase[ChatEvent], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            lifecycle = model._lifecycle
            if instrument is None:
                pipeline = _ResponsePipeline(
                    plan, event_filter, observer, lifecycle, model._redactor, partial_arguments
                )
                if not lifecycle.admit(pipeline):
                    pipeline.fail(ChatError("this ChatModel is closed"))
                return Disposable(pipeline.dispose)
            recording = instrument.stage(observer)
            pipeline = _ResponsePipeline(
                _told_usage(plan, recording.usage_reported),
                event_filter,
                recording,
                lifecycle,
                model._redactor,
                partial_arguments,
            )
            with recording.current():  # what the subscription schedules inherits the span
                if not lifecycle.admit(pipeline):
                    pipeline.fail(ChatError("this ChatModel is closed"))

            def dispose() -> None:
                recording.cancel()
                pipeline.dispose()

            return Disposable(dispose)

        return rx_create(subscribe)

    def call(self) -> ChatResponse:
        """Block until the response is complete and return it; raises its ChatError."""
        if self._model._io.in_loop_thread():
            raise RuntimeError("call() would block the I/O thread; use acall() or stream()")
        done = threading.Event()
        outcome: dict[str, Any] = {}

        def on_next(event: ChatEvent) -> None:
            if event.type is EVENT_TYPES.RESPONSE_END:
                outcome["response"] = event.response

        def on_error(error: Exception) -> None:
            outcome["error"] = error
            done.set()

        subscription = self.stream().subscribe(on_next, on_error, done.set)
        try:
            done.wait()
        finally:
            subscription.dispose()
        return _outcome(outcome)

    async def acall(self) -> ChatResponse:
        """The response, awaited on the caller's event loop (as :meth:`astream` runs it)."""
        response = None
        async for event in self.astream():
            if event.type is EVENT_TYPES.RESPONSE_END:
                response = event.response
        return _outcome({"response": response})

    def astream(self) -> AsyncIterator[ChatEvent]:
        """The response's events as an async iterator, run on the caller's loop.

        The request is sent from the running loop (the transport's pool for that loop)
        and read in the iterating task itself: each chunk of the body is decoded, parsed
        and its events yielded before the next read, with no thread hop, queue or task
        switch per event. Tools run between steps on the same loop (sync tools in its
        default executor). Raises the response's ChatError after its ERROR event; leaving
        the loop early (``break``, then ``aclose()``, or a cancellation) closes the
        request's connection at once. A model with a cache may answer from it
        (:meth:`cache`).
        """
        cached = self._cached()
        if cached is not None:
            cache, key = cached
            return cache.events(self, key, _asked)
        return self._astream_uncached()

    def _astream_uncached(self) -> AsyncIterator[ChatEvent]:
        """:meth:`astream`, asked of the model (metered when the model has a limiter or
        the prompt ``on_attempt`` callbacks)."""
        if self._metered:
            return metered_astream(self, ChatPrompt._plain_astream)
        return self._plain_astream()

    async def _plain_astream(self) -> AsyncIterator[ChatEvent]:
        """:meth:`astream`, asked of the model, unmetered."""
        model = self._model
        gathered = _Gathered()
        down: stages.Sink = gathered
        recording = None
        plan = self._plan()
        if model.telemetry:
            recording = down = model._instrument(self._messages, self._options).stage(gathered)
            plan = _told_usage(plan, recording.usage_reported)
        run = _response_run(
            plan, down, self._event_filter, self._partial_arguments, model._redactor
        )
        caller = _CallerRun(run, asyncio.get_running_loop())
        lifecycle = model._lifecycle
        events = gathered.events
        broken: Exception | None = None
        try:
            if not lifecycle.enter(caller):
                run.fail(ChatError("this ChatModel is closed"))
            else:
                async with contextlib.aclosing(run.steps()) as steps:
                    step = steps.__aiter__()
                    while not caller.aborted:
                        caller.waiting = True
                        try:
                            if recording is None:
                                await step.__anext__()
                            else:  # the chat span current while we run, not the consumer
                                with recording.current():
                                    await step.__anext__()
                        except StopAsyncIteration:
                            break
                        except asyncio.CancelledError:
                            if not caller.aborted:
                                raise
                            caller.uncancel()
                            break
                        except Exception as error:  # the run's own way to its end failed
                            broken = error
                            break
                        finally:
                            caller.waiting = False
                        for event in events:
                            yield event
                        events.clear()
                if caller.aborted:
                    run.fail()
                elif not gathered.ended:  # make sure the response has its end
                    failure = failure_of(
                        broken or ChatError("the response ended without its end"), "the response"
                    )
                    with contextlib.suppress(Exception):
                        run.fail(failure)
                    if not gathered.ended:
                        gathered.on_error(model._redactor.error(failure))
                elif broken is not None:
                    asyncio.get_running_loop().call_exception_handler(
                        {
                            "message": "an astream() response raised after its end",
                            "exception": broken,
                        }
                    )
            for event in events:
                yield event
            events.clear()
            if gathered.error is not None:
                raise gathered.error
        finally:
            lifecycle.release(caller)
            caller.release()
            if recording is not None and not gathered.ended:
                recording.cancel()
            if not run.ended:  # left early: reported cancelled, with the usage so far
                run.stop()


def _asked(prompt: ChatPrompt) -> AsyncIterator[ChatEvent]:
    """``prompt``'s response asked of its model (never of its cache)."""
    return prompt._astream_uncached()


def _io_thread(model: Any) -> Any:
    """The I/O thread a model's ``stream()`` delivers on (a group's: its first model's)."""
    leaves = getattr(model, "leaves", None)
    return leaves()[0]._io if leaves is not None else model._io


def _told_usage(plan: StepPlan, hook: Callable[[UsageReport], Any]) -> StepPlan:
    """``plan`` whose usage report is told ``hook`` too (a subscription's telemetry)."""
    return attrs.evolve(plan, on_usage=(*plan.on_usage, hook))


def _outcome(outcome: Mapping[str, Any]) -> ChatResponse:
    if "error" in outcome:
        raise outcome["error"]
    response = outcome.get("response")
    if response is None:
        raise ChatError("the response ended without a result")
    assert isinstance(response, ChatResponse)
    return response
