"""Blocks a provider opens and closes by index: what the dialects of Anthropic's Messages
API (content blocks) and Google's Interactions API (steps) share.

A :class:`Block` is what one open block is (text, thinking, a client tool call, a server
tool call, ...) and what a tool call block has gathered; :class:`OpenBlocks` holds a step's
open blocks by index and sends what ends each: TEXT_END, THINKING_END, the client call's
TOOL_CALL_END (through its :class:`~solon_events.dialects.ToolCallAssembler`), or, for a
server tool call, the call remembered for the result that answers it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import orjson

from ..events import EVENT_TYPES
from ..results import ToolCall, new_tool_call
from .context import ChatStreamContext
from .tool_calls import ToolCallAssembler

__all__ = ["NO_DELTAS", "Block", "OpenBlocks", "server_call", "started_arguments"]

NO_DELTAS: Mapping[str, Callable[..., None]] = {}
"""The delta handlers of a block that takes none."""


class Block:
    """An open block: its ``kind`` (``"text"``, ``"thinking"``, ``"tool"``, ``"server"``, or
    one only its dialect knows), the provider's ``type`` for it, and for a tool call its
    ``id``, ``name``, the ``input`` it started with and the ``fragments`` of input streamed
    since. ``deltas`` maps the delta types the block takes to their handlers (a dialect's
    own business)."""

    __slots__ = ("deltas", "fragments", "id", "input", "kind", "name", "sub_type", "type")

    def __init__(
        self,
        kind: str,
        type: str,
        id: str | None = None,
        name: str = "",
        deltas: Mapping[str, Callable[..., None]] = NO_DELTAS,
    ) -> None:
        self.kind = kind
        self.type = type
        self.id = id
        self.name = name
        self.deltas = deltas
        self.sub_type: str | None = None
        self.input: Any = None
        self.fragments: list[str] = []


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
