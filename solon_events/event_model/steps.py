"""The tool loop's steps as values: when to stop, and how to prepare the next step.

``prompt.stop_when(*conditions)`` ends a response that is still calling tools as soon as
one condition holds over the steps so far; ``prompt.prepare_step(function)`` may change the
model, the tools, the messages or the provider options of each step before it is sent.
``max_steps`` (``ChatModel(max_steps=...)``) stays the backstop: a loop that reaches it
still calling tools fails.

A condition is any callable of the steps so far (a tuple of :class:`StepResult`, oldest
first) that returns a bool; :func:`step_count_is` and :func:`has_tool_call` make the usual
ones. Conditions are asked after each step whose tools ran, before the next step is sent;
the response then ends with that step's response (its tool calls, their results sent as
TOOL_RESULT events) as RESPONSE_END's. A step that calls no tool ends the response anyway.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import attrs

from .events import EVENT_TYPES, ChatEvent
from .messages import Message, ToolMessage
from .results import ChatResponse, ToolCall, Usage

__all__ = [
    "PrepareStep",
    "StepContext",
    "StepResult",
    "StepSettings",
    "StopCondition",
    "has_tool_call",
    "step_count_is",
]


@attrs.frozen(kw_only=True)
class StepResult:
    """One finished step of the tool loop: its number (from 0), the model's response in it
    and the results of the tools it ran (as they went back to the model)."""

    step: int
    response: ChatResponse
    tool_results: tuple[ToolMessage, ...] = ()

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        """The tool calls the model made in this step."""
        return self.response.tool_calls

    @property
    def text(self) -> str:
        """The text the model wrote in this step."""
        return self.response.text

    @property
    def finish_reason(self) -> str | None:
        """Why the model stopped this step (``"tool_calls"`` for a step that called tools)."""
        return self.response.finish_reason

    @property
    def usage(self) -> Usage | None:
        """This step's usage."""
        return self.response.usage


def call_key(call: ToolCall, step: int) -> str:
    """The id a call of step ``step`` is named by: the provider's, else
    ``call_<step>_<index>`` (some providers give calls no id)."""
    return call.id or f"call_{step}_{call.index}"


def call_event(call: ToolCall, step: int) -> ChatEvent:
    """An event naming ``call`` of step ``step`` (named by :func:`call_key`) as that step's
    events named it, with no id when the provider gave the call none: what the front-end
    adapters look a call's protocol id up by."""
    given = None if call.id == f"call_{step}_{call.index}" else call.id
    named = call if given == call.id else attrs.evolve(call, id=given)
    return ChatEvent(
        EVENT_TYPES.TOOL_RESULT, step=step, index=call.index, tool_call_id=given, tool_call=named
    )


StopCondition = Callable[[Sequence[StepResult]], bool]
"""A stop condition: the steps so far (oldest first) -> whether to stop now."""


def step_count_is(count: int) -> StopCondition:
    """Stop once ``count`` steps have run (``step_count_is(1)``: after the first step's
    tools, whatever the model would do next)."""
    if count < 1:
        raise ValueError("step_count_is() takes a count of at least 1")

    def condition(steps: Sequence[StepResult]) -> bool:
        return len(steps) >= count

    condition.__qualname__ = f"step_count_is({count})"
    return condition


def has_tool_call(*names: str) -> StopCondition:
    """Stop once the last step called a tool named one of ``names`` (its tools have run:
    a ``finish`` or ``submit_answer`` tool whose call is the answer)."""
    if not names:
        raise ValueError("has_tool_call() takes at least one tool name")
    wanted = frozenset(names)

    def condition(steps: Sequence[StepResult]) -> bool:
        return bool(steps) and any(call.name in wanted for call in steps[-1].tool_calls)

    condition.__qualname__ = f"has_tool_call({', '.join(map(repr, names))})"
    return condition


@attrs.frozen(kw_only=True)
class StepContext:
    """What a :meth:`~solon_events.ChatPrompt.prepare_step` function is told before a step:
    its number (from 0), the steps so far, the conversation it would send (the prompt's
    messages, then each step's assistant turn and tool results), the model name and the
    tools it would offer."""

    step: int
    steps: tuple[StepResult, ...]
    messages: tuple[Message, ...]
    model: str
    tools: tuple[Any, ...]
    """The prompt's tools (:class:`~solon_events.Tool` values), as ``.tools(...)`` gave them."""


@attrs.frozen(kw_only=True)
class StepSettings:
    """What a :meth:`~solon_events.ChatPrompt.prepare_step` function may change for one step
    (None: as it was).

    ``model``: another model name at the same endpoint. ``tools``: the tools offered and
    run in this step (tools, ``@tool`` functions or tool sets; ``[]`` offers none; the
    prompt's client tools stay). ``messages``: the conversation sent in this step (to drop
    or summarize old turns, say); the steps after it are told the whole conversation again.
    ``options``: provider options merged over the prompt's for this step (``tool_choice``,
    ``temperature``, ...).
    """

    model: str | None = None
    tools: Sequence[Any] | None = None
    messages: Sequence[Message] | None = None
    options: dict[str, Any] | None = None


PrepareStep = Callable[[StepContext], StepSettings | Awaitable[StepSettings | None] | None]
"""A step's preparation: told the :class:`StepContext`, returns the :class:`StepSettings`
of that step (or None to change nothing), or an awaitable of them."""
