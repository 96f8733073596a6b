"""The steps of one response: a provider request per step, tools run between steps.

Within a tool step the calls are ENDed, the tools run, one TOOL_RESULT per call follows,
then the step's STEP_END (whose response carries the tool calls); the next step's request
carries the assistant turn and the tool results back to the model.

A TOOL_RESULT's ``attrs`` say which tool ran (``tool_name``), how long it took
(``duration``, seconds) and whether it failed (``is_error``: with ``tool_errors="return"``
its text is the error the model reads). A tool that asks for a
:class:`~solon_events.tools.ToolContext` reports progress as STATUS events
(``sub_type="tool_progress"``, ``attrs`` ``tool_name``, ``progress``, ``total``; ``text`` the
message) delivered while it runs, before its TOOL_RESULT.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Literal

import attrs
from reactivex import Observable, abc
from reactivex import create as rx_create
from reactivex.disposable import Disposable, SerialDisposable

from .dialects.base import ChatDialect, HttpRequest
from .errors import ChatError, ToolCallError
from .events import TYPES, ChatEvent
from .messages import ChatRequest, Message, ToolMessage
from .operators import parse
from .results import ChatResponse, ToolCall
from .sse import Frame
from .tools import Tool, ToolContext, ToolSet
from .tools.context import ToolProgress

__all__ = ["ToolErrorPolicy", "response_steps"]

_T = TYPES
ToolErrorPolicy = Literal["raise", "return"]
"""What a raising tool does: fail the response ("raise") or send the error text back."""


@attrs.frozen(kw_only=True)
class StepPlan:
    """What every step of one response shares."""

    request: ChatRequest
    dialect: ChatDialect
    build: Callable[[ChatRequest], HttpRequest]
    frames: Callable[[HttpRequest], Observable[Frame | bytes | ChatEvent]]
    tools: ToolSet
    auto_tool_call: bool = True
    max_steps: int = 8
    tool_errors: ToolErrorPolicy = "raise"
    client_tools: frozenset[str] = frozenset()
    """Tools that run elsewhere: a step calling one ends the response after its own tools."""


def response_steps(plan: StepPlan, *, response_id: str | None = None) -> Observable[ChatEvent]:
    """A cold observable of every step's events (STEP_START ... STEP_END, repeated).

    ``response_id`` is put on every event (as the pipeline's :func:`aggregate` will).
    """

    def subscribe(
        observer: abc.ObserverBase[ChatEvent], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        current = SerialDisposable()
        messages: list[Message] = list(plan.request.messages)
        disposed = False
        tool_task: asyncio.Future[None] | None = None

        def start_step(step: int) -> None:
            request = attrs.evolve(plan.request, messages=tuple(messages))
            try:
                http_request = plan.build(request)
            except ChatError as exc:
                observer.on_error(exc)
                return
            held: list[ChatEvent] = []

            def on_next(event: ChatEvent) -> None:
                if event.type is _T.STEP_END:
                    held.append(event)
                else:
                    observer.on_next(event)

            def on_completed() -> None:
                step_end = held[0]
                response = step_end.response
                calls = response.tool_calls if response is not None else ()
                ours = tuple(c for c in calls if c.name not in plan.client_tools)
                if not (ours and plan.auto_tool_call and plan.tools):
                    observer.on_next(step_end)
                    observer.on_completed()
                    return
                nonlocal tool_task
                last = len(ours) < len(calls)
                tool_task = asyncio.ensure_future(run_tools(step, step_end, ours, last))

            def on_error(error: Exception) -> None:
                if held:  # the failed step's STEP_END, with its partial response
                    observer.on_next(held[0])
                observer.on_error(error)

            current.disposable = (
                plan.frames(http_request)
                .pipe(parse(plan.dialect, step=step))
                .subscribe(on_next, on_error, on_completed)
            )

        async def run_tools(
            step: int, step_end: ChatEvent, calls: tuple[ToolCall, ...], last: bool
        ) -> None:
            try:
                results = [await call_tool(call, step) for call in calls]
            except ChatError as exc:
                if not disposed:
                    observer.on_next(step_end)
                    observer.on_error(exc)
                return
            except asyncio.CancelledError:
                if not disposed:  # not a disposal: the model was closed
                    observer.on_next(step_end)
                    observer.on_error(
                        ChatError("the tool loop was cancelled: its ChatModel was closed")
                    )
                raise
            if disposed:
                return
            for result in results:
                observer.on_next(_tool_result_event(result, step, response_id, step_end))
            direct = [result.text for result in results if result.tool.return_direct]
            if direct:
                observer.on_next(
                    ChatEvent(
                        _T.TEXT_DELTA, step=step, response_id=response_id, text="\n".join(direct)
                    )
                )
                observer.on_next(_with_text(step_end, "\n".join(direct)))
                observer.on_completed()
                return
            observer.on_next(step_end)
            if last:  # the step also called client tools: the caller answers those
                observer.on_completed()
                return
            if step + 1 >= plan.max_steps:
                observer.on_error(
                    ChatError(
                        f"the tool loop reached its limit of {plan.max_steps} steps "
                        "with the model still calling tools"
                    )
                )
                return
            assert step_end.response is not None and step_end.response.message is not None
            messages.append(step_end.response.message)
            messages.extend(
                ToolMessage(
                    tool_call_id=result.call.id,
                    name=result.call.name,
                    content=result.text,
                    is_error=result.failed,
                )
                for result in results
            )
            start_step(step + 1)

        def deliver(event: ChatEvent) -> None:
            if not disposed:
                observer.on_next(event)

        async def call_tool(call: ToolCall, step: int) -> ToolRun:
            tool = plan.tools.get(call.name)
            relay = _ProgressRelay(asyncio.get_running_loop(), deliver, call, step, response_id)
            context = ToolContext(call, relay)
            started = time.perf_counter()
            try:
                if tool.is_async:
                    value = await tool.ainvoke(call.arguments, context)
                else:
                    loop = asyncio.get_running_loop()
                    value = await loop.run_in_executor(None, tool.invoke, call.arguments, context)
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
            return ToolRun(tool, call, text, failed, time.perf_counter() - started)

        def dispose() -> None:
            nonlocal disposed
            disposed = True
            current.dispose()
            if tool_task is not None:
                tool_task.get_loop().call_soon_threadsafe(tool_task.cancel)

        start_step(0)
        return Disposable(dispose)

    return rx_create(subscribe)


@attrs.frozen
class ToolRun:
    """One tool call, run: the text for the model, whether it failed, how long it took."""

    tool: Tool
    call: ToolCall
    text: str
    failed: bool
    duration: float


def _tool_result_event(
    run: ToolRun, step: int, response_id: str | None, step_end: ChatEvent
) -> ChatEvent:
    """The TOOL_RESULT of one call: its text, and which tool ran, how long, whether it failed."""
    return ChatEvent(
        _T.TOOL_RESULT,
        step=step,
        response_id=response_id,
        index=run.call.index,
        tool_call_id=run.call.id,
        tool_call=run.call,
        text=run.text,
        provider_response_id=step_end.provider_response_id,
        attrs={"tool_name": run.call.name, "duration": run.duration, "is_error": run.failed},
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
        _T.STATUS,
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
