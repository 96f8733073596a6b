"""Blocks a provider opens and closes by index: what the dialects of Anthropic's Messages
API (content blocks) and Google's Interactions API (steps) share.

A :class:`Block` is what one open block is (text, thinking, a client tool call, a server
tool call, ...) and what a tool call block has gathered; :class:`OpenBlocks` holds a step's
open blocks by index and sends what ends each: TEXT_END, THINKING_END, the client call's
TOOL_CALL_END (through its :class:`~solon_events.dialects.ToolCallAssembler`), or, for a
server tool call, the call remembered for the result that answers it. The events of a
server tool call and of its result (with the search results it carries), and the handler of
a delta that is one field of text, are written here for both dialects.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs
import orjson

from ..event_model.events import EVENT_TYPES, ChatEventType
from ..event_model.results import SearchResult, ToolCall, new_tool_call
from ..event_model.values import EMPTY_MAPPING
from .context import ChatStreamContext
from .tool_calls import ToolCallAssembler

__all__ = [
    "NO_DELTAS",
    "Block",
    "OpenBlocks",
    "field_delta",
    "open_raw",
    "send_search_results",
    "send_server_result",
    "server_call",
    "start_server_call",
    "started_arguments",
]

NO_DELTAS: Mapping[str, Callable[..., None]] = {}
"""The delta handlers of a block that takes none."""


@attrs.define(eq=False)
class Block:
    """An open block: its ``kind`` (``"text"``, ``"thinking"``, ``"tool"``, ``"server"``, or
    one only its dialect knows), the provider's ``type`` for it, and for a tool call its
    ``id``, ``name``, the ``input`` it started with and the ``fragments`` of input streamed
    since. ``deltas`` maps the delta types the block takes to their handlers (a dialect's
    own business)."""

    kind: str
    type: str
    id: str | None = None
    name: str = ""
    deltas: Mapping[str, Callable[..., None]] = NO_DELTAS
    sub_type: str | None = attrs.field(init=False, default=None)
    input: Any = attrs.field(init=False, default=None)
    fragments: list[str] = attrs.field(init=False, factory=list)


class OpenBlocks:
    """A step's open blocks by index, the client tool calls among them (``tools``) and the
    server tool calls that ended (``server_calls``: call id -> its ``sub_type`` and
    :class:`~solon_events.ToolCall`, for the results that answer them)."""

    __slots__ = ("blocks", "server_calls", "tools")

    def __init__(self) -> None:
        self.blocks: dict[int, Block] = {}
        self.tools = ToolCallAssembler()
        self.server_calls: dict[str | None, tuple[str | None, ToolCall]] = {}

    def close(
        self,
        ctx: ChatStreamContext,
        index: int,
        block: Block,
        frame: Mapping[str, Any] | None = None,
    ) -> None:
        """Send what ends ``block`` (at ``index``), which is no longer open."""
        if block.kind == "text":
            ctx.send(EVENT_TYPES.TEXT_END, index=index, raw=frame)
        elif block.kind == "thinking":
            ctx.send(EVENT_TYPES.THINKING_END, index=index, raw=frame)
        elif block.kind == "tool":
            self.tools.end(ctx, index, arguments_str=started_arguments(block), raw=frame)
        elif block.kind == "server":
            self.server_calls[block.id] = (block.sub_type, server_call(block, index))

    def close_at(self, ctx: ChatStreamContext, index: int) -> None:
        """Close the block open at ``index``, if any (another opens there)."""
        block = self.blocks.pop(index, None)
        if block is not None:
            self.close(ctx, index, block)

    def stop(self, ctx: ChatStreamContext, index: int, raw_type: str, frame: Any) -> None:
        """The provider's stop of the block at ``index`` (its event type ``raw_type``): what
        ends the block, or a RAW event when none is open there (or one known only raw, whose
        type follows ``raw_type`` after a colon)."""
        block = self.blocks.pop(index, None)
        if block is None:
            ctx.send(EVENT_TYPES.RAW, index=index, raw_type=raw_type, raw=frame)
        elif block.kind == "raw":
            ctx.send(EVENT_TYPES.RAW, index=index, raw_type=f"{raw_type}:{block.type}", raw=frame)
        else:
            self.close(ctx, index, block, frame)

    def add_arguments(
        self, ctx: ChatStreamContext, index: int, block: Block, fragment: Any, frame: Any
    ) -> None:
        """A fragment of a client call's arguments (a non-empty string; anything else is
        nothing): gathered on ``block`` and sent through the assembler."""
        if isinstance(fragment, str) and fragment:
            block.fragments.append(fragment)
            self.tools.delta(ctx, index, fragment, raw=frame)

    def close_all(self, ctx: ChatStreamContext) -> None:
        """Close every block still open, in the order they were opened."""
        blocks = self.blocks
        self.blocks = {}
        for index, block in blocks.items():
            self.close(ctx, index, block)


def started_arguments(block: Block) -> str | None:
    """A client call's arguments as JSON text when they came whole with its start; None when
    the streamed fragments (in its assembler) are the call's."""
    if block.fragments or not isinstance(block.input, dict) or not block.input:
        return None
    return orjson.dumps(dict(block.input)).decode()


def server_call(block: Block, index: int) -> ToolCall:
    """A server tool call block as a ToolCall: its streamed input text, else the input it
    started with."""
    if block.fragments:
        text = "".join(block.fragments)
        return new_tool_call(block.id, block.name, None, text, index)
    arguments = dict(block.input) if isinstance(block.input, dict) else {}
    return new_tool_call(block.id, block.name, arguments, "", index)


def open_raw(
    ctx: ChatStreamContext, index: int, block_type: str, raw_type: str, frame: Any
) -> Block:
    """A block of a type the dialect does not know: a RAW event ``raw_type``, and the block
    kept open only to be reported raw at its stop."""
    ctx.send(EVENT_TYPES.RAW, index=index, raw_type=raw_type, raw=frame)
    return Block("raw", block_type)


def start_server_call(
    ctx: ChatStreamContext,
    index: int,
    block: Block,
    frame: Any,
    attrs: Mapping[str, Any] = EMPTY_MAPPING,
) -> None:
    """SERVER_TOOL_START for the server tool call ``block`` opened at ``index``."""
    ctx.send(
        EVENT_TYPES.SERVER_TOOL_START,
        index=index,
        tool_call_id=block.id,
        sub_type=block.sub_type,
        tool_call=server_call(block, index),
        attrs=attrs,
        raw=frame,
    )


def send_server_result(
    ctx: ChatStreamContext,
    index: int,
    call_id: str | None,
    sub_type: str | None,
    result_type: str,
    call: ToolCall | None,
    is_error: bool,
    raw: Any,
) -> None:
    """SERVER_TOOL_RESULT for a server tool's result (of type ``result_type``) answering the
    call ``call_id`` (``call``, whole, when it ended before)."""
    ctx.send(
        EVENT_TYPES.SERVER_TOOL_RESULT,
        index=index,
        tool_call_id=call_id,
        sub_type=sub_type,
        raw_type=result_type,
        tool_call=call,
        attrs={"is_error": is_error},
        raw=raw,
    )


def send_search_results(
    ctx: ChatStreamContext,
    index: int,
    call_id: str | None,
    sub_type: str | None,
    items: Any,
    search_result: Callable[[str, Mapping[str, Any]], SearchResult],
) -> None:
    """A SEARCH_RESULT for each item of a server tool's result (a list) that has a ``url``,
    read by ``search_result(url, item)``."""
    for item in items if isinstance(items, list) else ():
        url = item.get("url") if isinstance(item, dict) else None
        if isinstance(url, str):
            ctx.send(
                EVENT_TYPES.SEARCH_RESULT,
                index=index,
                tool_call_id=call_id,
                sub_type=sub_type,
                search_result=search_result(url, item),
                raw=item,
            )


def field_delta(field: str, event_type: ChatEventType) -> Callable[..., None]:
    """The handler of a delta whose ``field`` is a piece of text: sent as ``event_type`` (when
    a non-empty string). It takes ``(ctx, state, block, index, delta, frame)``."""

    def send_field(
        ctx: ChatStreamContext, state: Any, block: Any, index: int, delta: Any, frame: Any
    ) -> None:
        text = delta.get(field)
        if isinstance(text, str) and text:
            ctx.send(event_type, text, index=index, raw=frame)

    return send_field
