"""The steps of one response: a provider request per step, tools run between steps.

Within a tool step the calls are ENDed, the tools run, one TOOL_RESULT per call follows,
then the step's STEP_END (whose response carries the tool calls); the next step's request
carries the assistant turn and the tool results back to the model.

A TOOL_RESULT's ``attrs`` say which tool ran (``tool_name``), how long it took
(``duration``, seconds) and whether it failed (``is_error``: with ``tool_errors="return"``
its text is the error the model reads). A tool that runs longer than ``tool_timeout`` is
cancelled (a sync one's thread cannot be stopped: it runs on, its result dropped) and fails
as a raising tool does, with a :class:`~solon_events.event_model.errors.ToolCallError` saying so.
``total_timeout`` covers the whole response: every step's request, its retries and their
waits, and the tools run between steps; running out while tools run fails the response
with a :class:`~solon_events.event_model.errors.ChatTimeoutError` naming the tool. A tool that asks
for a
:class:`~solon_events.tools.ToolContext` reports progress as STATUS events
(``sub_type="tool_progress"``, ``attrs`` ``tool_name``, ``progress``, ``total``; ``text`` the
message) delivered while it runs, before its TOOL_RESULT. Each tool runs in the response's
context (contextvars; a sync tool in the executor too), wrapped by the context's
:func:`~solon_events.tools.scope.around_tool` (telemetry's tool span).

Before each step, the plan's ``prepare_step`` may change that step's model name, tools,
messages or options; after each step whose tools ran, the plan's ``stop_when`` conditions
may end the response there (see :mod:`solon_events.event_model.steps`). A hook that raises fails the
response with a :class:`~solon_events.event_model.errors.ChatError` naming it.

A call whose tool requires approval is not run: the step's other calls run, then the
response ends with the step's response carrying a
:class:`~solon_events.event_model.approvals.PendingApproval`; a plan whose ``resume`` is one
finishes
the paused step first (the ``decisions`` made: an approved call runs, a denied one sends
the model a tool result saying so) and steps on from there.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import logging
import threading
import time
import weakref
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from typing import Any, Literal

import attrs

from ..core.parsing import ParseStage, StepSettlement
from ..core.stages import Sink
from ..dialects.base import ChatDialect, HttpRequest
from ..dialects.output import output_mode
from ..dialects.output_tool import OutputToolDialect
from ..event_model.approvals import CONTINUED, ApprovalDecision, PendingApproval, denied_text
from ..event_model.errors import ChatError, ChatTimeoutError, StructuredOutputError, ToolCallError
from ..event_model.events import EVENT_TYPES, ChatEvent
from ..event_model.messages import ChatRequest, Message, ToolMessage, to_messages
from ..event_model.results import (
    AssistantMessage,
    ChatResponse,
    Cost,
    ToolCall,
    Usage,
    UsageOutcome,
    UsageReport,
)
from ..event_model.steps import (
    PrepareStep,
    StepContext,
    StepResult,
    StepSettings,
    StopCondition,
    call_key,
)
from ..support.loop_thread import DeadlinePassed, within
from ..support.safe_callbacks import failure_of
from ..tools import Tool, ToolContext, ToolSet
from ..tools.context import ToolProgress
from ..tools.scope import around_tool
from .output import OutputRequest
from .stream_reader import Emit, downstream_error

__all__ = ["ResponseRun", "StepPlan", "ToolErrorPolicy"]

_STEP_END = EVENT_TYPES.STEP_END
_ABORT = EVENT_TYPES.ABORT
_log = logging.getLogger(__name__)
ToolErrorPolicy = Literal["raise", "return"]
"""What a raising tool does: fail the response ("raise") or send the error text back."""


Read = Callable[[HttpRequest, Emit, bool, "float | None"], AsyncGenerator[None, None]]
"""``read(request, emit, paced, deadline)``: send ``request``, ``emit`` each frame of its
body (a retry's STATUS event too) on the running loop, yielding after each batch when
``paced``, within the response's ``deadline`` (loop time; None: no limit) (as
:meth:`~solon_events.client.stream_reader.StreamReader.read` does)."""


@attrs.frozen(kw_only=True)
class StepPlan:
    """What every step of one response shares."""

    request: ChatRequest
    dialect: ChatDialect
    build: Callable[[ChatRequest], HttpRequest]
    read: Read
    tools: ToolSet
    auto_tool_call: bool = True
    max_steps: int = 8
    tool_errors: ToolErrorPolicy = "raise"
    client_tools: frozenset[str] = frozenset()
    """Tools that run elsewhere: a step calling one ends the response after its own tools."""
    total_timeout: float | None = None
    """Seconds for the whole response (every step, retry and tool run); None: no limit."""
    tool_timeout: float | None = None
    """Seconds for each tool run; None: no limit."""
    stop_when: tuple[StopCondition, ...] = ()
    """Conditions over the steps so far: the first that holds ends the response."""
    prepare_step: PrepareStep | None = None
    """Changes each step's model name, tools, messages or options before it is sent."""
    resume: PendingApproval | None = None
    """A response paused for approval, continued here (its paused step first)."""
    decisions: Mapping[str, ApprovalDecision] = attrs.field(factory=dict)
    """What was decided for each of ``resume``'s pending calls, by their ids."""
    response_id: str | None = None
    """The response's id (None: a new one): an attempt of a response asked of several
    models stamps the response's (see :mod:`solon_events.client.routing`)."""
    first_step: int = 0
    """The number of the response's first step (an attempt that takes over a response
    after its earlier steps)."""
    accounting: Callable[[ChatRequest], StepSettlement] | None = None
    """Settles each step's usage (and price) at its end, made for the step's request."""
    on_usage: tuple[Callable[[UsageReport], Any], ...] = ()
    """Told the response's :class:`UsageReport` once it has ended, however it ended."""
    output: OutputRequest | None = None
    """The structured answer asked for: the last step's answer is settled by it (and asked
    again, up to its retries, when it does not fit)."""
    accept_unknown_streams: bool = False
    """Whether a step whose every frame its dialect does not know ends as an empty answer
    (see :attr:`ParseStage.accept_unknown_streams`)."""


class _StepEnd:
    """Between a step's :class:`ParseStage` and the response's head: passes every event on
    but the step's STEP_END, which is held (tools may run before it), and notes how the
    step's frames ended (each STEP_END's response in ``ended``; an ABORT, after the held
    STEP_END, then ``aborted`` is called)."""

    __slots__ = ("aborted", "error", "on_next", "step_end")

    def __init__(
        self,
        head: Sink,
        ended: list[ChatResponse | None],
        aborted: Callable[[], Callable[[], None] | None],
    ) -> None:
        self.step_end: ChatEvent | None = None
        self.error: Exception | None = None
        self.aborted = False
        push = head.on_next

        def on_next(event: ChatEvent) -> None:
            kind = event.type
            if kind is _STEP_END:
                if self.step_end is not None:  # another provider response began
                    push(self.step_end)
                self.step_end = event
                ended.append(event.response)
            elif kind is _ABORT:
                held, self.step_end = self.step_end, None
                if held is not None:
                    push(held)
                self.aborted = True
                push(event)
                callback = aborted()  # a weak reference: the run holds this, not back
                if callback is not None:
                    callback()
            else:
                push(event)

        self.on_next = on_next

    def on_error(self, error: Exception) -> None:
        self.error = error

    def on_completed(self) -> None:
        pass


def _not_theirs(_error: BaseException) -> bool:
    return False


@attrs.define(eq=False, repr=False)
class ResponseRun:
    """Every step of one response, on the running loop: each step's request read through
    ``plan.read`` into a :class:`ParseStage`, tools run between steps, every event pushed
    into ``head`` (the response's :func:`~solon_events.core.stages.respond` stage, whose
    RESPONSE_START is already out), which ends with ``on_completed`` or ``on_error``.

    The one driver of both of ChatModel's edges: :meth:`ChatPrompt.stream` runs
    :meth:`steps` as a task on the I/O loop, :meth:`ChatPrompt.astream` iterates it in the
    caller's own task. ``redact`` is applied to every failure before ``head`` sees it.
    An exception raised into a step's read by what ``head`` pushes into ends ``head`` as a
    ChatError naming the response, unless ``theirs`` says the subscriber raised it from its
    own callbacks (then it is passed on as it is); whatever else :meth:`steps` raises, its
    caller ends ``head`` with (see :func:`~solon_events.support.safe_callbacks.failure_of`).
    ``paced``: :meth:`steps` yields after each batch of events, for a caller that hands
    them on between batches (astream); a run whose ``head`` delivers them itself (a task,
    stream()) passes False and saves the round trip through the generators per chunk.
    """

    _plan: StepPlan
    _head: Sink
    _response_id: str | None = attrs.field(kw_only=True)
    _redact: Callable[[Exception], Exception] = attrs.field(kw_only=True)
    _paced: bool = attrs.field(kw_only=True, default=True)
    _theirs: Callable[[BaseException], bool] = attrs.field(kw_only=True, default=_not_theirs)
    _parser: ParseStage | None = attrs.field(init=False, default=None)
    _ending: _StepEnd | None = attrs.field(init=False, default=None)
    _held: ChatEvent | None = attrs.field(init=False, default=None)
    """A step's STEP_END while its tools run."""
    _progressed: asyncio.Future[None] | None = attrs.field(init=False, default=None)
    _running: ToolCall | None = attrs.field(init=False, default=None)
    """The tool call running now."""
    _ended_steps: list[ChatResponse | None] = attrs.field(init=False, factory=list)
    """The response of every step that ended, in order (for the usage report)."""
    _retried: list[tuple[Usage, Cost | None]] = attrs.field(init=False, factory=list)
    """The usage and price of each request retried after the provider accepted it."""
    ended: bool = attrs.field(init=False, default=False)
    """Whether ``head`` has ended, or :meth:`stop` was called."""
    _answers: int = attrs.field(init=False, default=0)
    """How many structured answers were settled (the first and its retries)."""

    async def steps(self) -> AsyncGenerator[None, None]:
        """Run the steps; yields whenever events were pushed into ``head`` (after each
        chunk of a body that gave frames, after a tool's progress report). Closing it
        early (or cancelling its task) closes the request's connection and cancels the
        running tools; nothing more is pushed then."""
        plan = self._plan
        loop = asyncio.get_running_loop()
        total = plan.total_timeout
        deadline = None if total is None else loop.time() + total
        messages: list[Message] = list(plan.request.messages)
        finished: list[StepResult] = []
        step = plan.first_step
        if plan.resume is not None:  # a paused response: its decided calls first
            try:
                _continuing(plan.resume)
            except ChatError as exc:
                self._fail(exc)
                return
            resumed = self._resumed(plan.resume, messages, finished)
            step = plan.resume.step
            async for _ in self._run_tools(resumed, deadline):
                yield
            if self._after_tools(resumed, finished, messages):
                return
            step += 1
        while not self.ended:
            try:
                request, toolset = await self._prepare(step, finished, messages)
            except ChatError as exc:
                self._fail(exc)
                return
            if self.ended:
                return
            try:
                http_request = plan.build(request)
            except Exception as exc:  # a request that cannot even be built
                self._fail(failure_of(exc, "building the request"))
                return
            self._ending = ending = _StepEnd(
                self._head, self._ended_steps, weakref.WeakMethod(self._aborted)
            )
            dialect, marks = _reading(plan.dialect, request)
            self._parser = parser = ParseStage(
                dialect, ending, step=step, response_id=self._response_id
            )
            parser.accept_unknown_streams = plan.accept_unknown_streams
            if plan.accounting is not None:
                parser.accounting = plan.accounting(request)
                parser.retried = self._retried
            parser.start(marks)
            try:
                async with contextlib.aclosing(
                    plan.read(http_request, parser.on_next, self._paced, deadline)
                ) as body:
                    async for _ in body:
                        yield
                        if ending.aborted:  # the provider stopped: read no further
                            break
            except Exception as exc:
                parser.on_error(self._failure(exc))
            else:
                parser.on_completed()
            if self.ended:
                return
            step_end = ending.step_end
            if ending.error is not None or step_end is None:
                self._held = step_end
                self._fail(ending.error or ChatError("the step ended without its STEP_END"))
                return
            response = step_end.response
            calls = response.tool_calls if response is not None else ()
            ours = tuple(c for c in calls if c.name not in plan.client_tools)
            if not (ours and plan.auto_tool_call and toolset):
                if plan.output is None or calls:
                    self._complete(step_end)
                    return
                if self._settled(plan.output, step_end, messages):
                    return
                step += 1
                continue
            self._held = step_end
            try:
                waiting = _waiting_for_approval(ours, step, toolset)
            except ChatError as exc:
                self._fail(exc)
                return
            tools = _StepTools(
                step, step_end, response or ChatResponse(), calls, ours, toolset, waiting
            )
            async for _ in self._run_tools(tools, deadline):
                yield
            if self._after_tools(tools, finished, messages):
                return
            step += 1

    def _settled(self, output: OutputRequest, step_end: ChatEvent, messages: list[Message]) -> bool:
        """Settle the answer of the step that ends with ``step_end``: complete the response
        with its ``output`` (True), or, when it does not fit and retries are left, push a
        STATUS ``output_retry`` and the step's end, and ask again (False); else fail."""
        response = step_end.response or ChatResponse()
        self._answers += 1
        try:
            value = output.settle(response, self._answers)
        except StructuredOutputError as error:
            if error.refusal is not None or self._answers > output.retries:
                self._held = step_end
                self._fail(error)
                return True
            self._head.on_next(
                ChatEvent(
                    EVENT_TYPES.STATUS,
                    step=step_end.step,
                    response_id=self._response_id,
                    sub_type="output_retry",
                    text=str(error),
                    attrs={"attempt": self._answers, "path": error.path, "reason": error.reason},
                )
            )
            self._head.on_next(step_end)
            messages.append(response.message or AssistantMessage(text=response.text))
            messages.append(output.feedback(error))
            return False
        self._complete(step_end.evolve(response=attrs.evolve(response, output=value)))
        return True

    def _resumed(
        self, pending: PendingApproval, messages: list[Message], finished: list[StepResult]
    ) -> _StepTools:
        """The paused step of ``pending`` reopened (its STEP_START pushed, ``sub_type``
        "resumed"), the steps before it in ``finished`` and their turns in ``messages``."""
        *before, paused = pending.steps
        for earlier in before:
            finished.append(earlier)
            assert earlier.response.message is not None
            _add_turn(messages, earlier.response.message)
            messages.extend(earlier.tool_results)
        step, rid = paused.step, self._response_id
        # Its response again (without its usage: the paused response counted it).
        response = attrs.evolve(paused.response, usage=None, pending_approval=None)
        calls = response.tool_calls
        ours = tuple(c for c in calls if c.name not in self._plan.client_tools)
        waiting = {call_key(c, step) for c in pending.tool_calls}
        ran = [call_key(c, step) for c in ours if call_key(c, step) not in waiting]
        first = ChatEvent(EVENT_TYPES.STEP_START, step=step, response_id=rid, sub_type="resumed")
        step_end = ChatEvent(
            _STEP_END,
            step=step,
            response_id=rid,
            sub_type="resumed",
            response=response,
            provider_response_id=response.provider_response_id,
        )
        self._head.on_next(first)
        self._held = step_end
        tools = _StepTools(
            step,
            step_end,
            response,
            calls,
            ours,
            self._plan.tools,
            frozenset(),
            earlier=dict(zip(ran, paused.tool_results, strict=False)),
            decided=tuple(c for c in ours if call_key(c, step) in waiting),
        )
        return tools

    async def _run_tools(
        self, tools: _StepTools, deadline: float | None
    ) -> AsyncGenerator[None, None]:
        """Run the step's tools that need no approval (or, resumed, its decided calls),
        yielding when a tool reports progress; their runs go to ``tools.results``. Fails
        the response (and ends) when the budget runs out or a tool raises."""
        to_run = tools.to_run()
        if not to_run:
            tools.results = []
            return
        loop = asyncio.get_running_loop()
        running = asyncio.ensure_future(self._call_tools(to_run, tools))
        try:
            while not (running.done() or self.ended):
                left = None if deadline is None else deadline - loop.time()
                if left is not None and left <= 0:
                    break
                self._progressed = loop.create_future()
                await asyncio.wait(
                    (running, self._progressed),
                    timeout=left,
                    return_when=asyncio.FIRST_COMPLETED,
                )
                yield
        finally:
            self._progressed = None
            if not running.done():
                running.cancel()
        if not running.done():  # the total budget ran out first
            self._fail(self._tools_out_of_time(tools.step))
            return
        try:
            tools.results = running.result()
        except ChatError as exc:
            self._fail(exc)

    def _after_tools(
        self, tools: _StepTools, finished: list[StepResult], messages: list[Message]
    ) -> bool:
        """Push the step's tool results, then end the response (True) or move on to the
        next step (False): with the calls waiting for approval, a stop condition, a
        return-direct tool, client tools, or ``max_steps`` reached, it ends here."""
        if self.ended or tools.results is None:
            return True
        plan, step, step_end, response = self._plan, tools.step, tools.step_end, tools.response
        push = self._head.on_next
        rid = self._response_id
        for result in tools.results:
            push(_tool_result_event(result, step, rid, step_end))
        tool_messages = tools.tool_messages()
        finished.append(StepResult(step=step, response=response, tool_results=tool_messages))
        if tools.waiting:
            pending = PendingApproval(
                response_id=rid or "",
                messages=plan.request.messages,
                steps=finished,
                tool_calls=[
                    attrs.evolve(c, id=call_key(c, step))
                    for c in tools.ours
                    if call_key(c, step) in tools.waiting
                ],
            )
            paused = attrs.evolve(response, pending_approval=pending)
            self._complete(step_end.evolve(response=paused))
            return True
        try:
            stop = self._stops(finished)
        except ChatError as exc:
            self._fail(exc)
            return True
        self._held = None
        direct = [r.text for r in tools.results if r.tool is not None and r.tool.return_direct]
        if direct:
            push(
                ChatEvent(
                    EVENT_TYPES.TEXT_DELTA, step=step, response_id=rid, text="\n".join(direct)
                )
            )
            self._complete(_with_text(step_end, "\n".join(direct)))
            return True
        if stop or len(tools.ours) < len(tools.calls):  # a condition held, or client tools
            self._complete(step_end)
            return True
        push(step_end)
        if step + 1 >= plan.max_steps:
            self._fail(
                ChatError(
                    f"the tool loop reached its limit of {plan.max_steps} steps "
                    "with the model still calling tools"
                )
            )
            return True
        assert response.message is not None
        _add_turn(messages, response.message)
        messages.extend(tool_messages)
        return False

    async def _prepare(
        self, step: int, finished: list[StepResult], messages: list[Message]
    ) -> tuple[ChatRequest, ToolSet]:
        """The request of step ``step`` and the tools it runs, as the plan's
        ``prepare_step`` changes them (a ChatError if it raises or returns something else)."""
        plan = self._plan
        request = attrs.evolve(plan.request, messages=tuple(messages))
        if plan.prepare_step is None:
            return request, plan.tools
        context = StepContext(
            step=step,
            steps=tuple(finished),
            messages=request.messages,
            model=request.model,
            tools=tuple(plan.tools.values()),
        )
        try:
            settings = plan.prepare_step(context)
            if inspect.isawaitable(settings):
                settings = await settings
            if settings is None:
                return request, plan.tools
            if not isinstance(settings, StepSettings):
                raise TypeError(f"it returned {type(settings).__name__}, not StepSettings or None")
            toolset = plan.tools
            changes: dict[str, Any] = {}
            if settings.tools is not None:
                toolset = ToolSet(settings.tools)
                client = tuple(
                    spec for spec in plan.request.tools if spec.name in plan.client_tools
                )
                changes["tools"] = toolset.specs() + client
            if settings.messages is not None:
                changes["messages"] = to_messages(settings.messages)
            if settings.model is not None:
                if not isinstance(settings.model, str) or not settings.model:
                    raise TypeError(f"its model must be a model name, not {settings.model!r}")
                changes["model"] = settings.model
            if settings.options:
                changes["options"] = {**request.options, **settings.options}
            return attrs.evolve(request, **changes), toolset
        except Exception as exc:
            raise ChatError(
                f"prepare_step failed before step {step}: {type(exc).__name__}: {exc}"
            ) from exc

    def _stops(self, finished: list[StepResult]) -> bool:
        """Whether a stop condition holds over the steps so far (a ChatError if one raises)."""
        steps = tuple(finished)
        for condition in self._plan.stop_when:
            try:
                if condition(steps):
                    return True
            except Exception as exc:
                name = getattr(condition, "__qualname__", repr(condition))
                raise ChatError(
                    f"the stop condition {name} raised {type(exc).__name__}: {exc}"
                ) from exc
        return False

    def _failure(self, error: Exception) -> Exception:
        """What ``head`` fails with for ``error``, raised into a step's read: a ChatError
        or the subscriber's own exception as it is, else a ChatError caused by it."""
        error = downstream_error(error)  # type: ignore[assignment]
        return error if self._theirs(error) else failure_of(error, "the response")

    def _tools_out_of_time(self, step: int) -> ChatTimeoutError:
        running = self._running
        what = f"tool {running.name!r}" if running is not None else "the tools"
        return ChatTimeoutError(
            f"total_timeout of {self._plan.total_timeout} s ran out for the whole response "
            f"while {what} ran (step {step})",
            budget="total_timeout",
        )

    def _complete(self, step_end: ChatEvent) -> None:
        self.ended = True
        self._head.on_next(step_end)
        self._head.on_completed()
        self._report("completed")

    def _fail(self, error: Exception) -> None:
        """End the response with ``error``: a held STEP_END first, then ERROR."""
        if self.ended:
            return
        self.ended = True
        held, self._held = self._held, None
        if held is not None:
            self._head.on_next(held)
        error = self._redact(error)
        self._head.on_error(error)
        self._report("failed", error)

    def _aborted(self) -> None:
        """The provider stopped the response (its ABORT is out): it has ended (unless
        the ABORT's delivery disposed it already: :meth:`stop` reported it then)."""
        if not self.ended:
            self.ended = True
            self._report("aborted")

    def _report(
        self,
        outcome: UsageOutcome,
        error: BaseException | None = None,
        in_flight: ChatResponse | None = None,
    ) -> None:
        """Tell the plan's ``on_usage`` hooks the response's usage (once, at its end)."""
        hooks = self._plan.on_usage
        if not hooks:
            return
        responses = [*self._ended_steps, in_flight] if in_flight else self._ended_steps
        steps = tuple(r.usage if r is not None else None for r in responses)
        retried = tuple(one for one, _ in self._retried)
        usage: Usage | None = None
        for one in (*steps, *retried):
            if one is not None:
                usage = one if usage is None else usage + one
        costs = [r.cost for r in responses if r is not None] + [c for _, c in self._retried]
        cost: Cost | None = None
        for one_cost in costs:
            if one_cost is not None:
                cost = one_cost if cost is None else cost + one_cost
        report = UsageReport(
            response_id=self._response_id,
            model=self._plan.request.model,
            outcome=outcome,
            usage=usage,
            steps=steps,
            retried=retried,
            cost=cost,
            error=error,
        )
        for hook in hooks:
            try:
                hook(report)
            except Exception:  # after the end: nothing to fail, so it is logged
                _log.exception("an on_usage hook raised")

    def fail(self, error: Exception | None = None) -> None:
        """End the response now with ``error`` (by default: the model was closed), unless
        it has ended: a step being read ends with its partial response. Cancel or close
        :meth:`steps` too, to stop the request."""
        if self.ended:
            return
        if error is None:
            what = "tool loop" if self._held is not None else "response"
            error = ChatError(f"the {what} was cancelled: its ChatModel was closed")
        parser, ending = self._parser, self._ending
        if parser is not None and ending is not None and not parser.closed:
            parser.on_error(error)  # the step's STEP_END, with what came so far
            self._held = ending.step_end
        self._fail(error)

    def stop(self) -> None:
        """Push nothing more into ``head`` (a disposal); cancel or close :meth:`steps`
        too to stop the request. A response that had not ended is reported cancelled, with
        the usage of the step being read so far (see :meth:`ParseStage.settled`)."""
        if self.ended:
            return
        self.ended = True
        if self._ending is not None and self._ending.aborted:  # disposed by its ABORT's end
            self._report("aborted")
            return
        in_flight = None
        parser = self._parser
        if parser is not None and not parser.closed:
            parser.closed = True
            try:
                in_flight = parser.settled()
            except Exception:  # a disposal never fails: the report has what is known
                _log.exception("settling the usage of a cancelled step failed")
        self._report("cancelled", in_flight=in_flight)

    async def _call_tools(self, calls: tuple[ToolCall, ...], tools: _StepTools) -> list[ToolRun]:
        """Run ``calls`` in turn; resumed, as decided: a denied call is not run, an approved
        one runs (with the arguments given instead, if any)."""
        step, toolset = tools.step, tools.toolset
        decisions = self._plan.decisions if tools.decided is not None else None
        runs = []
        for call in calls:
            decision = decisions[call_key(call, step)] if decisions is not None else None
            if decision is not None and not decision.approved:
                text = denied_text(decision.reason)
                runs.append(ToolRun(toolset.get(call.name, None), call, text, False, 0.0, True))
                continue
            if decision is not None and decision.arguments is not None:
                call = attrs.evolve(call, arguments=dict(decision.arguments), arguments_str="")
            runs.append(await self._call_tool(call, step, toolset))
        return runs

    def _deliver(self, event: ChatEvent) -> None:
        """A running tool's progress report: pushed at once, and :meth:`steps` yields."""
        if self.ended:
            return
        try:
            self._head.on_next(event)
        except Exception as error:  # the subscriber's, or a bug: not the running tool's
            self._fail(self._failure(error))
        progressed = self._progressed
        if progressed is not None and not progressed.done():
            progressed.set_result(None)

    async def _call_tool(self, call: ToolCall, step: int, tools: ToolSet) -> ToolRun:
        plan = self._plan
        tool = tools.get(call.name)
        loop = asyncio.get_running_loop()
        relay = _ProgressRelay(loop, self._deliver, call, step, self._response_id)
        context = ToolContext(call, relay)
        started = time.perf_counter()
        self._running = call
        try:
            with around_tool(call, self):
                if tool.is_async:
                    run = tool.ainvoke(call.arguments, context)
                else:  # in the executor, in this context (as asyncio.to_thread runs it)
                    run = loop.run_in_executor(
                        None, contextvars.copy_context().run, tool.invoke, call.arguments, context
                    )
                value = await self._within_tool_timeout(run, call)
            text, failed = tool.format_result(value), False
        except ToolCallError as exc:
            if plan.tool_errors == "raise":
                exc.tool_call_id = exc.tool_call_id or call.id
                raise
            text, failed = f"Error: {exc}", True
        except Exception as exc:
            if plan.tool_errors == "raise":
                raise ToolCallError(
                    f"tool {call.name!r} raised {type(exc).__name__}: {exc}",
                    tool_name=call.name,
                    tool_call_id=call.id,
                ) from exc
            text, failed = f"Error: {type(exc).__name__}: {exc}", True
        finally:
            relay.close()
            self._running = None
        return ToolRun(tool, call, text, failed, time.perf_counter() - started)

    async def _within_tool_timeout(self, run: Awaitable[Any], call: ToolCall) -> Any:
        """``await run`` (a tool's), cancelled after ``tool_timeout``: a ToolCallError then."""
        seconds = self._plan.tool_timeout
        if seconds is None:
            return await run
        try:
            return await within(run, seconds)
        except DeadlinePassed:
            raise ToolCallError(
                f"tool {call.name!r} ran out of its tool_timeout of {seconds} s",
                tool_name=call.name,
                tool_call_id=call.id,
            ) from None


def _reading(
    dialect: ChatDialect, request: ChatRequest
) -> tuple[ChatDialect, Mapping[str, Any] | None]:
    """The dialect that reads a step's frames (in ``"tool"`` mode, the output tool's call
    read as text), and what the step's STEP_START says of a structured answer (its
    ``attrs``: ``output``, the answer's name, and ``output_mode``)."""
    mode = output_mode(dialect, request)
    if mode is None:
        return dialect, None
    assert request.output is not None
    name = request.output.name
    marks = {"output": name, "output_mode": mode}
    return (OutputToolDialect(dialect, name) if mode == "tool" else dialect), marks


@attrs.frozen
class ToolRun:
    """One tool call, run: the text for the model, whether it failed, how long it took
    (or denied, not run: its text says so)."""

    tool: Tool | None
    call: ToolCall
    text: str
    failed: bool
    duration: float
    denied: bool = False

    def message(self) -> ToolMessage:
        """The tool result sent back to the model."""
        call = self.call
        return ToolMessage(
            tool_call_id=call.id, name=call.name, content=self.text, is_error=self.failed
        )


def _or_empty(earlier: Mapping[str, ToolMessage] | None) -> Mapping[str, ToolMessage]:
    return earlier or {}


@attrs.define(eq=False)
class _StepTools:
    """One step's tool calls on their way to results: ``ours`` (the calls run here, of
    ``calls``), those ``waiting`` for approval (by :func:`call_key`), and, for a resumed
    step, the ``decided`` calls and the tool results of those that ran before the pause."""

    step: int
    step_end: ChatEvent
    response: ChatResponse
    calls: tuple[ToolCall, ...]
    ours: tuple[ToolCall, ...]
    toolset: ToolSet
    waiting: frozenset[str]
    earlier: Mapping[str, ToolMessage] = attrs.field(
        kw_only=True, default=None, converter=_or_empty
    )
    decided: tuple[ToolCall, ...] | None = attrs.field(kw_only=True, default=None)
    results: list[ToolRun] | None = attrs.field(init=False, default=None)
    """The runs, once the tools have run."""

    def to_run(self) -> tuple[ToolCall, ...]:
        """The calls to run now."""
        if self.decided is not None:
            return self.decided
        if not self.waiting:
            return self.ours
        return tuple(c for c in self.ours if call_key(c, self.step) not in self.waiting)

    def tool_messages(self) -> tuple[ToolMessage, ...]:
        """The step's tool results for the model so far, in the order of its calls."""
        step = self.step
        made = {call_key(run.call, step): run.message() for run in self.results or ()}
        made.update(self.earlier)
        return tuple(made[key] for c in self.ours if (key := call_key(c, step)) in made)


def _waiting_for_approval(
    calls: tuple[ToolCall, ...], step: int, toolset: ToolSet
) -> frozenset[str]:
    """The keys (:func:`call_key`) of the calls whose tools want a person's approval; a
    ChatError when a tool's predicate raises."""
    waiting = set()
    for call in calls:
        tool = toolset.get(call.name, None)
        if tool is None or tool.requires_approval is False:
            continue
        try:
            needed = tool.needs_approval(call.arguments)
        except Exception as exc:
            raise ChatError(
                f"the requires_approval predicate of tool {call.name!r} raised "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        if needed:
            waiting.add(call_key(call, step))
    return frozenset(waiting)


def _tool_result_event(
    run: ToolRun, step: int, response_id: str | None, step_end: ChatEvent
) -> ChatEvent:
    """The TOOL_RESULT of one call: its text, and which tool ran, how long, whether it failed."""
    return ChatEvent(
        EVENT_TYPES.TOOL_RESULT,
        step=step,
        response_id=response_id,
        index=run.call.index,
        tool_call_id=run.call.id,
        tool_call=run.call,
        text=run.text,
        provider_response_id=step_end.provider_response_id,
        attrs=(
            {"tool_name": run.call.name, "duration": run.duration, "is_error": run.failed}
            if not run.denied
            else {"tool_name": run.call.name, "duration": 0.0, "is_error": False, "denied": True}
        ),
    )


class _ProgressRelay:
    """A running call's progress reports, from any thread, as STATUS events on the loop.

    Made on the loop's thread; a report from another thread (a sync tool's worker, an MCP
    client's loop) is handed over in order, ahead of the call's own completion. Reports that
    arrive after the call returned are dropped, so that none follows its result.
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        deliver: Callable[[ChatEvent], None],
        call: ToolCall,
        step: int,
        response_id: str | None,
    ) -> None:
        self._loop, self._deliver = loop, deliver
        self._call, self._step, self._response_id = call, step, response_id
        self._thread = threading.get_ident()
        self._open = True

    def __call__(self, progress: ToolProgress) -> None:
        if threading.get_ident() == self._thread:
            self._emit(progress)
        elif self._open and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._emit, progress)

    def _emit(self, progress: ToolProgress) -> None:
        if self._open:
            self._deliver(_progress_event(progress, self._call, self._step, self._response_id))

    def close(self) -> None:
        """Drop every report from now on."""
        self._open = False


def _progress_event(
    progress: ToolProgress, call: ToolCall, step: int, response_id: str | None
) -> ChatEvent:
    """The STATUS event of a progress report from inside a running tool."""
    return ChatEvent(
        EVENT_TYPES.STATUS,
        sub_type="tool_progress",
        text=progress.message,
        step=step,
        response_id=response_id,
        index=call.index,
        tool_call_id=call.id,
        tool_call=call,
        attrs={"tool_name": call.name, "progress": progress.progress, "total": progress.total},
    )


def _with_text(step_end: ChatEvent, extra: str) -> ChatEvent:
    """``step_end`` whose response text ends with ``extra`` (a return-direct result)."""
    response = step_end.response or ChatResponse()
    message = response.message
    if message is None:
        return step_end.evolve(response=attrs.evolve(response, text=extra))
    message = attrs.evolve(message, text=message.text + extra)
    return step_end.evolve(response=attrs.evolve(response, message=message))


def _add_turn(messages: list[Message], turn: AssistantMessage) -> None:
    """Append a step's assistant ``turn`` to the conversation; a turn that continues a
    trailing assistant turn without tool calls (a prefill: ``mid_stream="continue"``, or
    a conversation that ends with one) is merged into it, its text after the prefill's,
    so that no two assistant turns follow each other."""
    last = messages[-1] if messages else None
    if isinstance(last, AssistantMessage) and not last.tool_calls:
        messages[-1] = attrs.evolve(turn, text=last.text + turn.text)
    else:
        messages.append(turn)


def _continuing(pending: PendingApproval) -> None:
    """Check that ``pending`` may be continued, and claim it: what would run is what the
    approver was shown, and it was not continued before in this process (else a
    :class:`~solon_events.ChatError`, before any tool runs)."""
    pending.check_continuation()
    if not CONTINUED.claim(pending.response_id):
        raise ChatError(
            f"the paused response {pending.response_id} was continued already: a pending "
            "approval continues once"
        )
