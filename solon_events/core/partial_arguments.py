"""Tool-call arguments parsed as they stream: as snapshots, or as path deltas.

:class:`PartialArgumentsStage` (what ``partial_arguments()`` and the ``partial_arguments=True``
switches run) keeps one :class:`~solon_events.core.partial_json.PartialJsonParser` per open
call and gives each TOOL_CALL_ARGS_DELTA and SERVER_TOOL_ARGS_DELTA a ``tool_call`` whose
``arguments`` are the call's arguments parsed so far. Each delta's text is read once, but
each snapshot copies the containers still open and an open string: a long string argument
costs quadratic time in all. The snapshots are never changed afterwards; their
``arguments_str`` is empty (the deltas carry the text, TOOL_CALL_END the whole of it).

:class:`ArgumentDeltas` (what ``argument_deltas()`` and the live views run) tells instead
what each delta changed in the call's arguments, as
:class:`~solon_events.core.partial_json.JsonDelta` values (a new member or item, text
added to a string), at the cost of the delta alone; with ``build=True`` it also keeps each
call's arguments (:class:`~solon_events.core.json_deltas.JsonDeltaBuilder`) for a view
that redraws them when it likes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import attrs

from ..event_model.events import EVENT_TYPES, ChatEvent, ChatEventGroup
from ..event_model.results import ToolCall, new_partial_tool_call
from .json_deltas import JsonDeltaBuilder
from .partial_json import JsonDelta, JsonPath, PartialJsonParser

if TYPE_CHECKING:
    from .sink import Sink

__all__ = [
    "ArgumentDelta",
    "ArgumentDeltas",
    "PartialArgumentsStage",
    "StreamingArguments",
]

_DELTAS = frozenset({EVENT_TYPES.TOOL_CALL_ARGS_DELTA, EVENT_TYPES.SERVER_TOOL_ARGS_DELTA})
_STARTS = frozenset({EVENT_TYPES.TOOL_CALL_START, EVENT_TYPES.SERVER_TOOL_START})
_ENDS = frozenset({EVENT_TYPES.TOOL_CALL_END, EVENT_TYPES.SERVER_TOOL_RESULT})
_STEP_BOUNDARIES = frozenset({EVENT_TYPES.STEP_START, EVENT_TYPES.STEP_END})
_NO_ARGUMENTS: dict[str, Any] = {}


class _Call:
    """One streaming call: who it is, and its arguments' parser (snapshots)."""

    __slots__ = ("id", "index", "last", "name", "parsed", "parser", "readable")

    def __init__(self, id: str | None, name: str, index: int, server: bool) -> None:
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


CallT = TypeVar("CallT")


class _Calls(Generic[CallT]):
    """The calls streaming in a response, each with what ``new(id, name, index, server)``
    makes for it, followed through their events: a call starts at its START (or at its
    first delta, when it never started), ends at its END, and every call ends at a step
    boundary. A delta naming no call belongs to the one of its kind started last."""

    __slots__ = ("_calls", "_latest", "_new")

    def __init__(self, new: Callable[[str | None, str, int, bool], CallT]) -> None:
        self._new = new
        self._calls: dict[tuple[bool, Any], CallT] = {}
        self._latest: dict[bool, tuple[bool, Any]] = {}  # the last call started, per kind

    def follow(self, event: ChatEvent) -> CallT | None:
        """The call an argument delta belongs to; None for any other event (which may
        start or end calls)."""
        kind = event.type
        if kind in _DELTAS:
            key = _key(event)
            if key[1] is None:  # a delta naming no call: the one started last
                key = self._latest.get(key[0], key)
            found = self._calls.get(key)
            if found is None:
                found = self._calls[key] = self._new(event.tool_call_id, "", event.index, key[0])
            return found
        if kind in _STARTS:
            key = _key(event)
            call = event.tool_call
            self._calls[key] = self._new(
                event.tool_call_id or (call.id if call is not None else None),
                call.name if call is not None else "",
                event.index if event.index != -1 or call is None else call.index,
                key[0],
            )
            self._latest[key[0]] = key
        elif kind in _ENDS:
            self._calls.pop(_key(event), None)
        elif kind in _STEP_BOUNDARIES:
            self._calls.clear()
            self._latest.clear()
        return None


class PartialArgumentsStage:
    """Passes every event on to ``down``; argument deltas get the arguments parsed so far.

    Works on a dialect's events as :func:`~solon_events.operators.parse` emits them and on
    normalized ones alike: a delta whose call never started gets a parser of its own, and
    parsers are dropped when their call ends and at every step boundary.
    """

    __slots__ = ("_calls", "_push", "on_completed", "on_error")

    def __init__(self, down: Sink) -> None:
        self._push = down.on_next
        self.on_error = down.on_error
        self.on_completed = down.on_completed
        self._calls = _Calls(_Call)

    def on_next(self, event: ChatEvent) -> None:
        """Pass ``event`` on, with ``tool_call`` set when it is an argument delta."""
        call = self._calls.follow(event)
        if call is not None:
            tool_call = call.tool_call(event.text)
            if event.tool_call is None:  # a whole call's one delta (TOOL_CALL_CHUNK) has its own
                event = _with_tool_call(event, tool_call)
        self._push(event)


class StreamingArguments:
    """One call's arguments as they stream, as :class:`ArgumentDeltas` follows them.

    ``id``, ``name`` and ``index`` are the call's (from its START), ``server`` tells a
    server tool's call;
    :attr:`deltas` are what the latest argument delta changed, and :meth:`value` the
    arguments so far (with ``ArgumentDeltas(build=True)``).
    """

    __slots__ = ("_builder", "_parser", "deltas", "id", "index", "name", "server")

    def __init__(
        self, id: str | None, name: str, index: int, server: bool, build: bool = False
    ) -> None:
        self.id = id
        self.name = name
        self.index = index
        self.server = server
        self.deltas: list[JsonDelta] = []
        """What the latest argument delta changed (empty when it changed nothing that shows
        yet: a cut number, or an input that is not JSON)."""
        self._parser: PartialJsonParser | None = PartialJsonParser(track_deltas=True)
        self._builder = JsonDeltaBuilder() if build else None

    def add(self, fragment: str | None) -> list[JsonDelta]:
        """Read the next piece of the arguments' text; returns (and keeps in :attr:`deltas`)
        what it changed."""
        parser = self._parser
        if parser is None or not fragment:
            self.deltas = []
            return self.deltas
        try:
            parser.feed(fragment)
        except ValueError:  # not JSON (a free-form input): what came before it stands
            self._parser = None
        self.deltas = deltas = parser.deltas()
        if self._builder is not None:
            self._builder.extend(deltas)
        return deltas

    @property
    def is_json(self) -> bool:
        """False once the arguments' text turned out not to be JSON (a free-form tool's
        input): no more deltas come, and :meth:`value` stays what came before."""
        return self._parser is not None

    def value(self) -> Any:
        """The arguments so far, rebuilt from the deltas (None before anything showed):
        the builder's own value, which later deltas change (copy it to keep it).
        Needs ``ArgumentDeltas(build=True)``."""
        if self._builder is None:
            raise ValueError("value() needs ArgumentDeltas(build=True)")
        return self._builder.value()


class ArgumentDeltas:
    """Follows a response's events; each argument delta's call, with what it changed.

    ``feed(event)`` returns, for a TOOL_CALL_ARGS_DELTA or SERVER_TOOL_ARGS_DELTA, its
    call's :class:`StreamingArguments` whose :attr:`~StreamingArguments.deltas` are what
    the event's text changed in the arguments (None for any other event). Each delta's
    text is read once and what it changed is told, never the arguments so far: a long
    argument costs linear time in all, however long its strings. Calls are keyed as
    :class:`PartialArgumentsStage` keys them (sans-I/O: feed it the events in order).

    >>> from solon_events import ChatEvent, ChatEventType
    >>> deltas = ArgumentDeltas(build=True)
    >>> start = ChatEvent(ChatEventType.TOOL_CALL_START, tool_call_id="c1", index=0)
    >>> deltas.feed(start) is None
    True
    >>> for text in ['{"city": "Par', 'is", "days": 3}']:
    ...     call = deltas.feed(ChatEvent(ChatEventType.TOOL_CALL_ARGS_DELTA, text=text, index=0))
    ...     print(call.id, [tuple(delta) for delta in call.deltas], call.value())
    c1 [((), 'add', {}), (('city',), 'add', 'Par')] {'city': 'Par'}
    c1 [(('city',), 'append', 'is'), (('days',), 'add', 3)] {'city': 'Paris', 'days': 3}
    """

    __slots__ = ("_calls",)

    def __init__(self, *, build: bool = False) -> None:
        self._calls = _Calls(
            lambda id, name, index, server: StreamingArguments(id, name, index, server, build)
        )

    def feed(self, event: ChatEvent) -> StreamingArguments | None:
        """Follow ``event``: for an argument delta, its call with what the delta changed."""
        call = self._calls.follow(event)
        if call is not None:
            call.add(event.text)
        return call


@attrs.frozen(slots=True)
class ArgumentDelta:
    """What one argument delta changed in a tool call's arguments, at one path: what
    :func:`~solon_events.operators.argument_deltas` emits.

    ``path``, ``op`` and ``value`` are the :class:`~solon_events.JsonDelta`'s (``op``
    ``"add"``: ``value`` appears at ``path``; ``"append"``: text added to the string at
    ``path``); the call is told by ``tool_call_id``, ``name``, ``index`` and ``step``;
    ``server`` is True for a server tool's call (SERVER_TOOL_ARGS_DELTA).
    """

    path: JsonPath
    op: str
    value: Any
    tool_call_id: str | None = None
    name: str = ""
    index: int = -1
    step: int = 0
    server: bool = False

    @property
    def delta(self) -> JsonDelta:
        """The change alone, as ``(path, op, value)``."""
        return JsonDelta(self.path, self.op, self.value)


def _with_tool_call(event: ChatEvent, tool_call: ToolCall) -> ChatEvent:
    """``event`` with ``tool_call`` set, its other fields as they are."""
    return event.evolve(tool_call=tool_call)
