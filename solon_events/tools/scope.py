"""A hook around every tool run of a response, found in the running context.

The tool loop runs each tool inside :func:`around_tool`; whoever set a :class:`ToolScope`
in :data:`tool_scope` in the context the response runs in (telemetry does: a tool's
``execute_tool`` span, current while the tool runs) gets to wrap the run. The first
response run that uses a scope owns it: a response started inside one of its tools (a
tool that asks another model) inherits the context, not the scope. Unset, a tool runs as
it is.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from contextlib import AbstractContextManager
from contextvars import ContextVar

from ..event_model.results import ToolCall

__all__ = ["ToolScope", "around_tool", "tool_scope"]


class ToolScope:
    """What wraps each tool run of one response: ``wrap(call)`` is the context manager
    around the run of ``call`` (an exception the tool raised passes through it)."""

    __slots__ = ("owner", "wrap")

    def __init__(self, wrap: Callable[[ToolCall], AbstractContextManager[object]]) -> None:
        self.wrap = wrap
        self.owner: object = None
        """The response run that uses it (the first one that asked)."""


tool_scope: ContextVar[ToolScope | None] = ContextVar("solon_events_tool_scope", default=None)
"""The :class:`ToolScope` of the response running in this context, if any."""


def around_tool(call: ToolCall, owner: object) -> AbstractContextManager[object]:
    """What wraps the run of ``call`` by ``owner`` (a response's run) here: the context's
    :data:`tool_scope` if it is ``owner``'s (or nobody's yet: then it becomes
    ``owner``'s), else nothing."""
    scope = tool_scope.get()
    if scope is None:
        return contextlib.nullcontext()
    if scope.owner is None:
        scope.owner = owner
    elif scope.owner is not owner:
        return contextlib.nullcontext()
    return scope.wrap(call)
