"""Clean block boundaries: every delta between its START and END, whatever the provider sent."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..event_model.events import EVENT_TYPES, ChatEvent, ChatEventType, framing_event
from ..event_model.results import ToolCall

__all__ = ["PASSED_THROUGH", "ChatEventNormalizer"]

_TEXT_DELTA = EVENT_TYPES.TEXT_DELTA
_THINKING_DELTA = EVENT_TYPES.THINKING_DELTA
Emit = Callable[[ChatEvent], None]


class _Blocks:
    """The open blocks of one strict group (text or thinking), keyed by (item_id, index)."""

    __slots__ = ("end", "open", "start")

    def __init__(self, start: ChatEventType, end: ChatEventType) -> None:
        self.start = start
        self.end = end
        self.open: dict[tuple[Any, int], ChatEvent] = {}

    def key_of(self, event: ChatEvent) -> tuple[Any, int]:
        """The open block ``event`` belongs to, else the event's own key.

        A key part the event or the block leaves unset (None / -1) matches anything, so a
        keyless delta belongs to the latest block and ``item_id``-only events find the block
        opened with ``item_id`` and ``index``.
        """
        key = (event.item_id, event.index)
        if key in self.open or not self.open:
            return key
        item_id, index = key
        for open_key in reversed(self.open):
            open_item, open_index = open_key
            if (item_id is None or open_item is None or open_item == item_id) and (
                index == -1 or open_index == -1 or open_index == index
            ):
                return open_key
        return key

    def close_all(self, cause: ChatEvent, emit: Emit) -> None:
        if not self.open:
            return
        opened = list(self.open.values())
        self.open.clear()
        for start in opened:
            emit(_closer(self.end, start, cause))


def _closer(end_type: ChatEventType, start: ChatEvent, cause: ChatEvent) -> ChatEvent:
    """The END of the block ``start`` opened, caused by ``cause``."""
    return framing_event(
        end_type,
        cause.step,
        cause.response_id,
        start.provider_response_id,
        start.index,
        start.item_id,
        start.tool_call_id,
    )


def _opener(
    start_type: ChatEventType, cause: ChatEvent, tool_call: ToolCall | None = None
) -> ChatEvent:
    """A synthesized START carrying the ids of the event it is made for."""
    return framing_event(
        start_type,
        cause.step,
        cause.response_id,
        cause.provider_response_id,
        cause.index,
        cause.item_id,
        cause.tool_call_id,
        tool_call,
    )


class ChatEventNormalizer:
    """Completes the block boundaries of one response's events (create one per response).

    TEXT and THINKING are strict: a bare DELTA gets its START, a duplicate START and an END
    with nothing open are dropped, switching between them (or a TOOL_CALL_START) closes the
    open block, STEP_START, STEP_END and the terminal events (RESPONSE_END, ABORT, ERROR)
    close everything first, so no block outlives its step. TOOL_CALL is loose: starts
    are synthesized for orphan deltas, unmatched ENDs are kept, TOOL_CALL_CHUNK expands to
    START, ARGS_DELTA, END. Every other event passes through untouched.

    ``emit``, when given, is where :meth:`apply` passes events when it is called without
    one of its own (``normalizer.apply`` is then an observer's ``on_next``).
    """

    __slots__ = ("_calls", "_emit", "_text", "_thinking", "last_event")

    def __init__(self, emit: Emit | None = None) -> None:
        self._emit = emit
        """Where :meth:`apply` passes events when it is given no ``emit`` of its own."""
        self._text = _Blocks(EVENT_TYPES.TEXT_START, EVENT_TYPES.TEXT_END)
        self._thinking = _Blocks(EVENT_TYPES.THINKING_START, EVENT_TYPES.THINKING_END)
        self._calls: dict[Any, ChatEvent] = {}
        self.last_event: ChatEvent | None = None
        """The latest event applied (closers take its response id and step)."""

    @property
    def open_text(self) -> Mapping[tuple[Any, int], ChatEvent]:
        """The open text blocks: their START events by ``(item_id, index)`` (a live view)."""
        return self._text.open

    @property
    def open_thinking(self) -> Mapping[tuple[Any, int], ChatEvent]:
        """The open thinking blocks, as :attr:`open_text` (a live view)."""
        return self._thinking.open

    @property
    def open_calls(self) -> Mapping[Any, ChatEvent]:
        """The open tool calls: their START events by ``tool_call_id`` (a made-up key for a
        call without one or with one already open; a live view)."""
        return self._calls

    @property
    def has_open(self) -> bool:
        """True while a text, thinking or tool-call block is open."""
        return bool(self._text.open or self._thinking.open or self._calls)

    def apply(self, event: ChatEvent, emit: Emit | None = None) -> None:
        """Pass ``event`` on through ``emit`` (by default the ``emit`` the normalizer was
        made with), with whatever boundaries it needs around it."""
        if emit is None:
            emit = self._emit
            if emit is None:
                raise TypeError("apply() needs an emit: the normalizer was made without one")
        t = event.type
        if t is _TEXT_DELTA or t is _THINKING_DELTA:  # the common case: more of an open block
            blocks = self._text.open if t is _TEXT_DELTA else self._thinking.open
            if (event.item_id, event.index) in blocks:
                self.last_event = event
                emit(event)
                return
        handler = _HANDLERS.get(t)
        if handler is None:
            emit(event)
        else:
            handler(self, event, emit)
        self.last_event = event

    def complete(self, emit: Emit) -> None:
        """Close every block still open (idempotent)."""
        if self.last_event is not None:
            self._close_all(self.last_event, emit)

    # strict groups

    def _text_delta(self, event: ChatEvent, emit: Emit) -> None:
        self._delta(self._text, self._thinking, event, emit)

    def _thinking_delta(self, event: ChatEvent, emit: Emit) -> None:
        self._delta(self._thinking, self._text, event, emit)

    def _text_start(self, event: ChatEvent, emit: Emit) -> None:
        self._start(self._text, self._thinking, event, emit)

    def _thinking_start(self, event: ChatEvent, emit: Emit) -> None:
        self._start(self._thinking, self._text, event, emit)

    def _text_end(self, event: ChatEvent, emit: Emit) -> None:
        self._end(self._text, event, emit)

    def _thinking_end(self, event: ChatEvent, emit: Emit) -> None:
        self._end(self._thinking, event, emit)

    def _delta(self, mine: _Blocks, other: _Blocks, event: ChatEvent, emit: Emit) -> None:
        if mine.key_of(event) not in mine.open:
            other.close_all(event, emit)
            start = _opener(mine.start, event)
            mine.open[(event.item_id, event.index)] = start
            emit(start)
        emit(event)

    def _start(self, mine: _Blocks, other: _Blocks, event: ChatEvent, emit: Emit) -> None:
        if mine.key_of(event) in mine.open:
            return
        other.close_all(event, emit)
        mine.open[(event.item_id, event.index)] = event
        emit(event)

    def _end(self, mine: _Blocks, event: ChatEvent, emit: Emit) -> None:
        key = mine.key_of(event)
        if mine.open.pop(key, None) is not None:
            emit(event)

    # loose tool calls

    def _open_call(self, event: ChatEvent) -> Any:
        """The key of the open call ``event`` belongs to, or None."""
        if event.tool_call_id is not None and event.tool_call_id in self._calls:
            return event.tool_call_id
        for key, start in self._calls.items():
            if event.index != -1 and start.index == event.index:
                return key
            if event.item_id is not None and start.item_id == event.item_id:
                return key
        return None

    def _tool_start(self, event: ChatEvent, emit: Emit) -> Any:
        self._text.close_all(event, emit)
        self._thinking.close_all(event, emit)
        key: Any = event.tool_call_id
        if key is None or key in self._calls:
            key = object()
        self._calls[key] = event
        emit(event)
        return key

    def _tool_delta(self, event: ChatEvent, emit: Emit) -> None:
        if self._calls and (
            self._open_call(event) is not None
            or (event.tool_call_id is None and event.index == -1 and event.item_id is None)
        ):
            emit(event)
            return
        self._tool_start(
            _opener(EVENT_TYPES.TOOL_CALL_START, event, tool_call=event.tool_call), emit
        )
        emit(event)

    def _tool_end(self, event: ChatEvent, emit: Emit) -> None:
        if self._calls:
            key = self._open_call(event)
            if key is None:
                key = next(iter(self._calls))
            del self._calls[key]
        emit(event)

    def _tool_chunk(self, event: ChatEvent, emit: Emit) -> None:
        call = event.tool_call
        raw = event.raw
        ids = (
            event.step,
            event.response_id,
            event.provider_response_id,
            event.index if event.index != -1 or call is None else call.index,
            event.item_id,
            event.tool_call_id or (call.id if call is not None else None),
            call,
        )
        key = self._tool_start(framing_event(EVENT_TYPES.TOOL_CALL_START, *ids, raw=raw), emit)
        text = call.arguments_str if call is not None else (event.text or "")
        emit(framing_event(EVENT_TYPES.TOOL_CALL_ARGS_DELTA, *ids, raw=raw, text=text))
        del self._calls[key]
        emit(framing_event(EVENT_TYPES.TOOL_CALL_END, *ids, raw=raw))

    # closing everything

    def _close_then_emit(self, event: ChatEvent, emit: Emit) -> None:
        self._close_all(event, emit)
        emit(event)

    def _step_start(self, event: ChatEvent, emit: Emit) -> None:
        # what the previous step left open ends in that step, as complete() would end it
        if self.last_event is not None:
            self._close_all(self.last_event, emit)
        emit(event)

    def _close_all(self, cause: ChatEvent, emit: Emit) -> None:
        if self._thinking.open:
            self._thinking.close_all(cause, emit)
        if self._text.open:
            self._text.close_all(cause, emit)
        if self._calls:
            opened = list(self._calls.values())
            self._calls.clear()
            for start in opened:
                emit(_closer(EVENT_TYPES.TOOL_CALL_END, start, cause))


_HANDLERS: dict[ChatEventType, Callable[[ChatEventNormalizer, ChatEvent, Emit], Any]] = {
    EVENT_TYPES.TEXT_DELTA: ChatEventNormalizer._text_delta,
    EVENT_TYPES.THINKING_DELTA: ChatEventNormalizer._thinking_delta,
    EVENT_TYPES.TEXT_START: ChatEventNormalizer._text_start,
    EVENT_TYPES.THINKING_START: ChatEventNormalizer._thinking_start,
    EVENT_TYPES.TEXT_END: ChatEventNormalizer._text_end,
    EVENT_TYPES.THINKING_END: ChatEventNormalizer._thinking_end,
    EVENT_TYPES.TOOL_CALL_START: ChatEventNormalizer._tool_start,
    EVENT_TYPES.TOOL_CALL_ARGS_DELTA: ChatEventNormalizer._tool_delta,
    EVENT_TYPES.TOOL_CALL_END: ChatEventNormalizer._tool_end,
    EVENT_TYPES.TOOL_CALL_CHUNK: ChatEventNormalizer._tool_chunk,
    EVENT_TYPES.STEP_START: ChatEventNormalizer._step_start,
    EVENT_TYPES.STEP_END: ChatEventNormalizer._close_then_emit,
    EVENT_TYPES.RESPONSE_END: ChatEventNormalizer._close_then_emit,
    EVENT_TYPES.ABORT: ChatEventNormalizer._close_then_emit,
    EVENT_TYPES.ERROR: ChatEventNormalizer._close_then_emit,
}
"""How each event type is applied (types not listed pass through untouched)."""

PASSED_THROUGH: frozenset[ChatEventType] = frozenset(ChatEventType) - _HANDLERS.keys()
"""The event types :meth:`ChatEventNormalizer.apply` passes on untouched, closing nothing."""
