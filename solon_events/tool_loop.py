"""The steps of one response: a provider request per step, tools run between steps.

Within a tool step the calls are ENDed, the tools run, one TOOL_RESULT per call follows,
then the step's STEP_END (whose response carries the tool calls); the next step's request
carries the assistant turn and the tool results back to the model.
"""

from __future__ import annotations

import asyncio
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
from .tools import Tool, ToolSet

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
    frames: Callable[[HttpRequest], Observable[Frame]]
    tools: ToolSet
    auto_tool_call: bool = True
    max_steps: int = 8
    tool_errors: ToolErrorPolicy = "raise"


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
                if not (calls and plan.auto_tool_call and plan.tools):
                    observer.on_next(step_end)
                    observer.on_completed()
                    return
                nonlocal tool_task
                tool_task = asyncio.ensure_future(run_tools(step, step_end, calls))

            current.disposable = (
                plan.frames(http_request)
                .pipe(parse(plan.dialect, step=step))
                .subscribe(on_next, observer.on_error, on_completed)
            )

        async def run_tools(step: int, step_end: ChatEvent, calls: tuple[ToolCall, ...]) -> None:
            try:
                results = [await call_tool(call) for call in calls]
            except ChatError as exc:
                if not disposed:
                    if exc.partial_response is None:
                        exc.partial_response = step_end.response
                    observer.on_error(exc)
                return
            except asyncio.CancelledError:
                if not disposed:  # not a disposal: the model was closed
                    error = ChatError("the tool loop was cancelled: its ChatModel was closed")
                    error.partial_response = step_end.response
                    observer.on_error(error)
                raise
            if disposed:
                return
            for call, (_tool, text) in zip(calls, results):
                observer.on_next(
                    ChatEvent(
                        _T.TOOL_RESULT,
                        step=step,
                        response_id=response_id,
                        index=call.index,
                        tool_call_id=call.id,
                        tool_call=call,
                        text=text,
                        provider_response_id=step_end.provider_response_id,
                    )
                )
            direct = [text for tool, text in results if tool.return_direct]
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
                ToolMessage(tool_call_id=call.id, name=call.name, content=text)
                for call, (_tool, text) in zip(calls, results)
            )
            start_step(step + 1)

        async def call_tool(call: ToolCall) -> tuple[Tool, str]:
            tool = plan.tools.get(call.name)
            try:
                if tool.is_async:
                    value = await tool.ainvoke(call.arguments)
                else:
                    loop = asyncio.get_running_loop()
                    value = await loop.run_in_executor(None, tool.invoke, call.arguments)
            except ToolCallError:
                raise
            except Exception as exc:
                if plan.tool_errors == "return":
                    return tool, f"Error: {type(exc).__name__}: {exc}"
                raise ToolCallError(
                    f"tool {call.name!r} raised {type(exc).__name__}: {exc}",
                    tool_name=call.name,
                    tool_call_id=call.id,
                ) from exc
            return tool, tool.format_result(value)

        def dispose() -> None:
            nonlocal disposed
            disposed = True
            current.dispose()
            if tool_task is not None:
                tool_task.get_loop().call_soon_threadsafe(tool_task.cancel)

        start_step(0)
        return Disposable(dispose)

    return rx_create(subscribe)


def _with_text(step_end: ChatEvent, extra: str) -> ChatEvent:
    """``step_end`` whose response text ends with ``extra`` (a return-direct result)."""
    response = step_end.response or ChatResponse()
    message = response.message
    if message is None:
        return step_end.evolve(response=attrs.evolve(response, text=extra))
    message = attrs.evolve(message, text=message.text + extra)
    return step_end.evolve(response=attrs.evolve(response, message=message))
