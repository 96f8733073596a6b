"""Tool-call arguments parsed as they stream: a stage that puts them on every ARGS_DELTA.

:class:`PartialArgumentsStage` (what ``partial_arguments()`` and the ``partial_arguments=True``
switches run) keeps one :class:`~solon_events.core.partial_json.PartialJsonParser` per open
call and gives each TOOL_CALL_ARGS_DELTA and SERVER_TOOL_ARGS_DELTA a ``tool_call`` whose
``arguments`` are the call's arguments parsed so far. Each delta's text is read once, so
a long argument costs linear time in total. The snapshots are never changed afterwards;
their ``arguments_str`` is empty (the deltas carry the text, TOOL_CALL_END the whole of it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..events import EVENT_TYPES, ChatEvent, ChatEventGroup
from ..results import ToolCall, new_partial_tool_call
from .partial_json import PartialJsonParser

if TYPE_CHECKING:
    from .stages import Sink

__all__ = ["PartialArgumentsStage", "with_partial_arguments"]

_DELTAS = frozenset({EVENT_TYPES.TOOL_CALL_ARGS_DELTA, EVENT_TYPES.SERVER_TOOL_ARGS_DELTA})
_STARTS = frozenset({EVENT_TYPES.TOOL_CALL_START, EVENT_TYPES.SERVER_TOOL_START})
_ENDS = frozenset({EVENT_TYPES.TOOL_CALL_END, EVENT_TYPES.SERVER_TOOL_RESULT})
_STEP_BOUNDARIES = frozenset({EVENT_TYPES.STEP_START, EVENT_TYPES.STEP_END})
_NO_ARGUMENTS: dict[str, Any] = {}


class _Call:
    """One streaming call: who it is, and its arguments' parser."""

    __slots__ = ("id", "index", "last", "name", "parsed", "parser", "readable")

    def __init__(self, id: str | None, name: str, index: int) -> None:
        self.id = id
        self.name = name
        self.index = index
        self.parser = PartialJsonParser()
        self.readable = True  # False once the text turned out not to be JSON (a free-form input)
        self.parsed: Any = None  # the parser's latest snapshot ...
        self.last: ToolCall | None = None  # ... and the ToolCall made of it

    def tool_call(self, fragment: str | None) -> ToolCall:
        """The call with its arguments as parsed once ``fragment`` is added."""
        if self.readable and fragment:
            try:
                self.parser.feed(fragment)
            except ValueError:  # not JSON: no arguments, as ToolCall parses such a text
                self.readable = False
        parsed = self.parser.value() if self.readable else None
        last = self.last
        if last is not None and parsed is self.parsed:
            return last
        arguments = parsed if type(parsed) is dict else _NO_ARGUMENTS
        self.parsed = parsed
        self.last = new_partial_tool_call(self.id, self.name, arguments, self.index)
        return self.last


def _key(event: ChatEvent) -> tuple[bool, Any]:
    """Which call an event belongs to: its index, else its call id, else its item id
    (client and server tools apart)."""
    server = event.type.group is ChatEventGroup.SERVER_TOOL
    if event.index != -1:
        return server, event.index
    return server, event.tool_call_id or event.item_id


class PartialArgumentsStage:
    """Passes every event on to ``down``; argument deltas get the arguments parsed so far.

    Works on a dialect's events as :func:`~solon_events.operators.parse` emits them and on
    normalized ones alike: a delta whose call never started gets a parser of its own, and
    parsers are dropped when their call ends and at every step boundary.
    """

    __slots__ = ("_calls", "_latest", "_push", "on_completed", "on_error")

    def __init__(self, down: Sink) -> None:
        self._push = down.on_next
        self.on_error = down.on_error
        self.on_completed = down.on_completed
        self._calls: dict[tuple[bool, Any], _Call] = {}
        self._latest: dict[bool, tuple[bool, Any]] = {}  # the last call started, per kind

    def on_next(self, event: ChatEvent) -> None:
        """Pass ``event`` on, with ``tool_call`` set when it is an argument delta."""
        kind = event.type
        if kind in _DELTAS:
            tool_call = self._call_of(event).tool_call(event.text)
            if event.tool_call is None:  # a whole call's one delta (TOOL_CALL_CHUNK) has its own
                event = _with_tool_call(event, tool_call)
        elif kind in _STARTS:
            key = _key(event)
            call = event.tool_call
            self._calls[key] = _Call(
                event.tool_call_id or (call.id if call is not None else None),
                call.name if call is not None else "",
                event.index if event.index != -1 or call is None else call.index,
            )
            self._latest[key[0]] = key
        elif kind in _ENDS:
            self._calls.pop(_key(event), None)
        elif kind in _STEP_BOUNDARIES:
            self._calls.clear()
            self._latest.clear()
        self._push(event)

    def _call_of(self, event: ChatEvent) -> _Call:
        key = _key(event)
        if key[1] is None:  # a delta naming no call: the one started last
            key = self._latest.get(key[0], key)
        call = self._calls.get(key)
        if call is None:
            call = self._calls[key] = _Call(event.tool_call_id, "", event.index)
        return call


class _Forward:
    """A sink that hands every event to one function (the renderers' own parsing)."""

    __slots__ = ("on_next",)

    def __init__(self, on_next: Callable[[ChatEvent], Any]) -> None:
        self.on_next = on_next

    def on_error(self, error: Exception) -> None:
        """Nothing to do: the caller sees the stream's error itself."""

    def on_completed(self) -> None:
        """Nothing to do: the caller sees the stream's end itself."""


def with_partial_arguments(on_next: Callable[[ChatEvent], Any]) -> Callable[[ChatEvent], None]:
    """A function that passes each event it is given to ``on_next``, every argument delta
    with the call's arguments parsed so far (as :class:`PartialArgumentsStage` does): how
    the live views show arguments growing whether or not the stream has them already."""
    return PartialArgumentsStage(_Forward(on_next)).on_next


def _with_tool_call(event: ChatEvent, tool_call: ToolCall) -> ChatEvent:
    """``event`` with ``tool_call`` set, its other fields as they are."""
    return event.evolve(tool_call=tool_call)
