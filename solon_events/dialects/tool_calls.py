"""Tool calls streamed in fragments, assembled into START, ARGS_DELTA and END events."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..event_model.errors import ChatProtocolError
from ..event_model.events import EVENT_TYPES, ChatEventType
from ..event_model.results import ToolCall, new_tool_call
from .reading import Raw

if TYPE_CHECKING:
    from .context import ChatStreamContext

__all__ = ["ToolCallAssembler", "send_whole_call"]

_TOOL_CALL_START = EVENT_TYPES.TOOL_CALL_START
_TOOL_CALL_ARGS_DELTA = EVENT_TYPES.TOOL_CALL_ARGS_DELTA
_TOOL_CALL_END = EVENT_TYPES.TOOL_CALL_END
_TOOL_CALL_CHUNK = EVENT_TYPES.TOOL_CALL_CHUNK


class _OpenCall:
    """A call started and not yet ended: who it is and the argument text so far."""

    __slots__ = ("fragments", "id", "index", "item_id", "name")

    def __init__(self, id: str | None, name: str, index: int, item_id: str | None) -> None:
        self.id = id
        self.name = name
        self.index = index
        """The call's ``index`` on its events: its position in the step, or the provider's."""
        self.item_id = item_id
        self.fragments: list[str] = []

    def send(
        self, ctx: ChatStreamContext, event_type: ChatEventType, raw: Raw | None, **fields: Any
    ) -> None:
        """Record an event of this call: ``event_type``, stamped with its index, id and item id."""
        ctx.send(
            event_type,
            index=self.index,
            tool_call_id=self.id,
            item_id=self.item_id,
            raw=raw,
            **fields,
        )


class ToolCallAssembler:
    """Streams tool calls whose fragments arrive keyed by a provider key (index or item id).

    ``start`` opens a call, ``delta`` adds an argument fragment, ``end`` closes it with the
    whole :class:`ToolCall`; ``end_all`` closes what is still open. Each call gets the
    next position (0, 1, ...) as its event ``index`` unless the provider gives one. Every
    event is recorded on the dialect's :class:`~solon_events.ChatStreamContext`.
    """

    __slots__ = ("_open", "_started")

    def __init__(self) -> None:
        self._open: dict[Any, _OpenCall] = {}
        self._started = 0

    def __contains__(self, key: Any) -> bool:
        return key in self._open

    def start(
        self,
        ctx: ChatStreamContext,
        key: Any,
        *,
        id: str | None,
        name: str,
        index: int | None = None,
        raw: Raw | None = None,
        item_id: str | None = None,
    ) -> None:
        """Open the call ``key`` and record TOOL_CALL_START."""
        position = self._started if index is None else index
        self._started += 1
        call = self._open[key] = _OpenCall(id, name, position, item_id)
        call.send(ctx, _TOOL_CALL_START, raw, tool_call=new_tool_call(id, name, {}, "", position))

    def delta(
        self,
        ctx: ChatStreamContext,
        key: Any,
        fragment: str,
        *,
        raw: Raw | None = None,
    ) -> None:
        """Record TOOL_CALL_ARGS_DELTA for the open call ``key``; empty fragments are skipped."""
        if not fragment:
            return
        call = self._open.get(key)
        if call is None:
            raise ChatProtocolError(f"arguments for tool call {key!r} that was never started")
        call.fragments.append(fragment)
        call.send(ctx, _TOOL_CALL_ARGS_DELTA, raw, text=fragment)

    def end(
        self,
        ctx: ChatStreamContext,
        key: Any,
        *,
        arguments_str: str | None = None,
        raw: Raw | None = None,
    ) -> ToolCall | None:
        """Close the call ``key`` with TOOL_CALL_END; ``arguments_str`` overrides the fragments."""
        call = self._open.pop(key, None)
        if call is None:
            return None
        text = arguments_str if arguments_str is not None else "".join(call.fragments)
        tool_call = new_tool_call(call.id, call.name, None, text, call.index)
        call.send(ctx, _TOOL_CALL_END, raw, tool_call=tool_call)
        return tool_call

    def end_all(self, ctx: ChatStreamContext) -> None:
        """Close every call still open, in the order they were opened."""
        for key in list(self._open):
            self.end(ctx, key)


def send_whole_call(
    ctx: ChatStreamContext, id: str | None, name: str, arguments: Any, index: int, raw: Any
) -> None:
    """Record TOOL_CALL_CHUNK for a call that came whole in one frame (Gemini's, Ollama's):
    ``arguments`` as JSON text (a str) or as an object (a dict; anything else is none)."""
    if isinstance(arguments, str):
        tool_call = new_tool_call(id, name, None, arguments, index)
    else:
        given = dict(arguments) if isinstance(arguments, dict) else {}
        tool_call = new_tool_call(id, name, given, "", index)
    ctx.send(_TOOL_CALL_CHUNK, index=index, tool_call_id=id, tool_call=tool_call, raw=raw)
