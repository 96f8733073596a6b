"""Stable protocol ids for the blocks of a response (text, reasoning, tool calls).

Front-end protocols tie a block's start, deltas and end together by an id, while a
ChatEvent names its block by ``item_id`` / ``index`` (text, thinking) or by
``tool_call_id`` / ``index`` (tool calls), and some providers give neither. A
:class:`BlockIds` hands out one id per block, the same for every event of the block and,
for tool calls, for the call's later result. Sans-I/O: plain Python, shared by the adapters.
"""

from __future__ import annotations

from typing import Any

from ..event_model.events import ChatEvent

__all__ = ["BlockIds"]


class BlockIds:
    """The protocol id of each block of one response, prefixed by ``prefix``.

    ``open()`` gives a new block its id; ``current()`` finds the open block an event
    belongs to (the only open block of its kind when the event names none that is open);
    ``close()`` forgets the block's open state and returns its id. Tool-call ids are
    the provider's own ``tool_call_id`` when it has one.
    """

    def __init__(self, prefix: str) -> None:
        self._prefix = prefix
        self._count = 0
        self._open: dict[tuple[Any, ...], str] = {}
        self._calls: dict[tuple[Any, ...], str] = {}

    @staticmethod
    def _key(kind: str, event: ChatEvent) -> tuple[Any, ...]:
        if kind == "call":
            if event.tool_call_id:
                return (kind, event.tool_call_id)
            return (kind, event.step, event.index)
        return (kind, event.step, event.item_id, event.index)

    def _new_id(self, kind: str, event: ChatEvent) -> str:
        if kind == "call" and event.tool_call_id:
            return event.tool_call_id
        self._count += 1
        return f"{self._prefix}-{kind}-{self._count}"

    def open(self, kind: str, event: ChatEvent, block_id: str | None = None) -> str:
        """Open the block ``event`` starts, under ``block_id`` or a new id; returns the id."""
        key = self._key(kind, event)
        block_id = block_id or self._new_id(kind, event)
        self._open[key] = block_id
        if kind == "call":
            self._calls[key] = block_id
        return block_id

    def current(self, kind: str, event: ChatEvent) -> str | None:
        """The id of the open block ``event`` belongs to, or None when none is open."""
        block_id = self._open.get(self._key(kind, event))
        if block_id is not None:
            return block_id
        of_kind = [v for k, v in self._open.items() if k[0] == kind]
        return of_kind[0] if len(of_kind) == 1 else None

    def close(self, kind: str, event: ChatEvent) -> str | None:
        """Close the block ``event`` ends; its id, or None when no such block is open."""
        key = self._key(kind, event)
        if key not in self._open:
            of_kind = [k for k in self._open if k[0] == kind]
            if len(of_kind) != 1:
                return None
            key = of_kind[0]
        return self._open.pop(key)

    def open_ids(self, kind: str) -> list[str]:
        """The ids of every open block of ``kind``, in the order they were opened."""
        return [v for k, v in self._open.items() if k[0] == kind]

    def call_id(self, event: ChatEvent) -> str:
        """The id of the tool call ``event`` names (a TOOL_RESULT), open or closed."""
        key = self._key("call", event)
        known = self._calls.get(key)
        if known is not None:
            return known
        if event.tool_call is not None and event.tool_call.id:
            return event.tool_call.id
        block_id = self._new_id("call", event)
        self._calls[key] = block_id
        return block_id
