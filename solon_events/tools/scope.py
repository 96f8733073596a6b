"""A hook around every tool run, found in the running context.

The tool loop runs each tool inside :func:`around_tool`; whoever set :data:`tool_scope` in
the context the response runs in (telemetry does: a tool's ``execute_tool`` span, current
while the tool runs) gets to wrap the run. Unset, a tool runs as it is.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from contextlib import AbstractContextManager
from contextvars import ContextVar

from ..results import ToolCall

__all__ = ["ToolScope", "around_tool", "tool_scope"]

ToolScope = Callable[[ToolCall], AbstractContextManager[object]]
"""Called with the call about to run; the context manager it returns wraps the run (an
exception the tool raised passes through it)."""

tool_scope: ContextVar[ToolScope | None] = ContextVar("solon_events_tool_scope", default=None)
"""The :data:`ToolScope` of the response running in this context, if any."""


def around_tool(call: ToolCall) -> AbstractContextManager[object]:
    """What wraps the run of ``call`` here: the context's :data:`tool_scope`, or nothing."""
    scope = tool_scope.get()
    return contextlib.nullcontext() if scope is None else scope(call)
