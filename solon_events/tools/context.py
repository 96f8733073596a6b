"""What a running tool may ask for: its call, and a way to report progress.

A tool asks for a :class:`ToolContext` by declaring a parameter annotated with it (any
name; ``ToolContext | None`` too). That parameter is not part of the tool's schema: the
tool loop passes a context for the call being run, and a direct :meth:`Tool.invoke` a
context that reports nowhere.
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from typing import Any

import attrs

from ..event_model.results import ToolCall

__all__ = ["ToolContext", "ToolProgress", "is_context_annotation"]


@attrs.frozen
class ToolProgress:
    """One progress report: ``progress`` so far, out of ``total`` when known, and a message."""

    progress: float
    total: float | None = None
    message: str | None = None


class ToolContext:
    """The call a tool is running for, and :meth:`progress` to tell the user how it goes.

    In a tool loop each report becomes a ``STATUS`` event (``sub_type="tool_progress"``)
    delivered before the call's ``TOOL_RESULT``. Reporting is thread-safe: sync tools run in
    a worker thread and may report from it.
    """

    __slots__ = ("_report", "_tool_call")

    def __init__(
        self,
        tool_call: ToolCall | None = None,
        report: Callable[[ToolProgress], None] | None = None,
    ) -> None:
        self._tool_call = tool_call
        self._report = report

    @property
    def tool_call(self) -> ToolCall | None:
        """The call being run (None outside a tool loop)."""
        return self._tool_call

    def progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Report how far the tool has got: ``progress`` out of ``total`` (when known).

        ``message`` is a short text for the user, e.g. ``"page 3 of 10"``.
        """
        if self._report is not None:
            self._report(ToolProgress(float(progress), _float(total), message))

    def __repr__(self) -> str:
        name = self._tool_call.name if self._tool_call is not None else None
        return f"ToolContext(tool={name!r})"


def _float(value: float | None) -> float | None:
    return None if value is None else float(value)


def is_context_annotation(hint: Any) -> bool:
    """Whether a parameter annotated ``hint`` asks for the :class:`ToolContext`."""
    if hint is ToolContext:
        return True
    if typing.get_origin(hint) is typing.Annotated:
        return is_context_annotation(typing.get_args(hint)[0])
    args = typing.get_args(hint)
    return type(None) in args and len(args) == 2 and ToolContext in args
