"""Blocks a provider opens and closes by index: what the dialects of Anthropic's Messages
API (content blocks) and Google's Interactions API (steps) share.

A :class:`Block` is what one open block is (text, thinking, a client tool call, a server
tool call, a server tool's result, ...) and what a tool call block has gathered.
:class:`OpenBlocks`, which each of the two dialects subclasses for its stream's state, holds
a step's open blocks by index and handles them from start to stop: it opens a block by the
opener of its type (a block of an unknown type is reported raw), opens the calls (a client's
TOOL_CALL_START through its :class:`~solon_events.dialects.ToolCallAssembler`, a server
tool's SERVER_TOOL_START), sends a server tool's result with the search results it carries,
and sends what ends each block: TEXT_END, THINKING_END, the client call's TOOL_CALL_END, or,
for a server tool call, the call remembered for the result that answers it. The handler of a
delta that is one field of text (and the two such that both dialects take) is written here
too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import attrs
import orjson

from ..event_model.events import EVENT_TYPES, ChatEventType
from ..event_model.results import SearchResult, ToolCall, new_tool_call
from ..event_model.values import EMPTY_MAPPING
from .context import ChatStreamContext
from .reading import Raw
from .tool_calls import ToolCallAssembler

__all__ = [
    "NO_DELTAS",
    "Block",
    "OpenBlocks",
    "Opener",
    "field_delta",
    "signature_delta",
    "text_delta",
    "send_server",
    "server_call",
    "started_arguments",
]

NO_DELTAS: Mapping[str, Callable[..., None]] = {}
"""The delta handlers of a block that takes none."""

Opener = Callable[..., "Block"]
"""What opens a block of one type: called ``(state, ctx, index, start, frame)`` (a method of
the dialect's :class:`OpenBlocks`), it sends what the start means and returns the block."""


@attrs.define(eq=False)
class Block:
    """An open block: its ``kind`` (``"text"``, ``"thinking"``, ``"tool"``, ``"server"``,
    ``"result"``, ``"raw"``, or one only its dialect knows), the provider's ``type`` for it,
    and for a tool call (or a result) its ``id``, ``name``, ``sub_type``, the ``input`` it
    started with and the ``fragments`` of input streamed since. ``deltas`` maps the delta
    types the block takes to their handlers (a dialect's own business)."""

    kind: str
    type: str
    id: str | None = None
    name: str = ""
    deltas: Mapping[str, Callable[..., None]] = NO_DELTAS
    sub_type: str | None = attrs.field(default=None, kw_only=True)
    input: Any = attrs.field(default=None, kw_only=True)
    fragments: list[str] = attrs.field(init=False, factory=list)


class OpenBlocks:
    """A step's open blocks by index, the client tool calls among them (``tools``) and the
    server tool calls that ended (``server_calls``: call id -> its ``sub_type`` and
    :class:`~solon_events.ToolCall`, for the results that answer them).

    A dialect's subclass says how its blocks open: ``openers`` maps block types to their
    openers (:data:`Opener`), ``suffix_openers`` pairs type endings (``"_tool_use"``) with the
    opener of every other type that ends so; ``start_raw_type`` is the provider's name of a
    block's start, which the RAW event of a block of any other type names."""

    __slots__ = ("blocks", "server_calls", "tools")

    openers: ClassVar[Mapping[str, Opener]] = EMPTY_MAPPING
    suffix_openers: ClassVar[tuple[tuple[str, Opener], ...]] = ()
    start_raw_type: ClassVar[str] = "start"

    def __init__(self) -> None:
        self.blocks: dict[int, Block] = {}
        self.tools = ToolCallAssembler()
        self.server_calls: dict[str | None, tuple[str | None, ToolCall]] = {}

    def open(
        self, ctx: ChatStreamContext, index: int, block_type: str, start: Raw, frame: Raw
    ) -> Block:
        """Open the block ``index`` of ``block_type`` from its ``start`` (closing one open
        there) by the opener of its type or of its suffix; a block of any other type is a
        RAW event, and is kept open only to be reported raw at its stop."""
        self.close_at(ctx, index)
        opener = self.openers.get(block_type)
        if opener is None:
            for suffix, suffix_opener in self.suffix_openers:
                if block_type.endswith(suffix):
                    opener = suffix_opener
                    break
        if opener is None:
            raw_type = f"{self.start_raw_type}:{block_type}"
            ctx.send(EVENT_TYPES.RAW, index=index, raw_type=raw_type, raw=frame)
            block = Block("raw", block_type)
        else:
            block = opener(self, ctx, index, start, frame)
        self.blocks[index] = block
        return block

    def open_call(
        self,
        ctx: ChatStreamContext,
        index: int,
        block: Block,
        frame: Raw,
        attrs: Raw = EMPTY_MAPPING,
    ) -> Block:
        """Open the call ``block`` at ``index`` and return it: a client's (kind ``"tool"``)
        with TOOL_CALL_START, a server tool's (``"server"``) with SERVER_TOOL_START (with
        ``attrs``)."""
        if block.kind == "tool":
            self.tools.start(ctx, index, id=block.id, name=block.name, raw=frame)
        else:
            call = server_call(block, index)
            send_server(
                ctx, EVENT_TYPES.SERVER_TOOL_START, index, block, frame, tool_call=call, attrs=attrs
            )
        return block

    def send_server_arguments(
        self, ctx: ChatStreamContext, index: int, block: Block, text: str, frame: Raw
    ) -> None:
        """SERVER_TOOL_ARGS_DELTA: ``text`` of the arguments of the server tool call
        ``block``."""
        send_server(ctx, EVENT_TYPES.SERVER_TOOL_ARGS_DELTA, index, block, frame, text=text)

    def result_block(self, block_type: str, call_id: str | None, sub_type: str) -> Block:
        """A block of a server tool's result (of ``block_type``) answering the call
        ``call_id``: its ``sub_type`` that of the call, else ``sub_type``."""
        call = self.server_calls.get(call_id)
        return Block("result", block_type, call_id, sub_type=sub_type if call is None else call[0])

    def send_result(
        self,
        ctx: ChatStreamContext,
        index: int,
        block: Block,
        is_error: bool,
        raw: Raw,
        items: Any,
        search_result: Callable[[str, Raw], SearchResult],
    ) -> None:
        """SERVER_TOOL_RESULT for the result ``block`` (with the call it answers, whole, when
        that ended before), then a SEARCH_RESULT for each of its ``items`` (a list) that has a
        ``url``, read by ``search_result(url, item)``."""
        call = self.server_calls.get(block.id)
        send_server(
            ctx,
            EVENT_TYPES.SERVER_TOOL_RESULT,
            index,
            block,
            raw,
            raw_type=block.type,
            tool_call=call[1] if call is not None else None,
            attrs={"is_error": is_error},
        )
        for item in items if isinstance(items, list) else ():
            url = item.get("url") if isinstance(item, dict) else None
            if isinstance(url, str):
                result = search_result(url, item)
                send_server(
                    ctx, EVENT_TYPES.SEARCH_RESULT, index, block, item, search_result=result
                )

    def close(
        self,
        ctx: ChatStreamContext,
        index: int,
        block: Block,
        frame: Raw | None = None,
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


def send_server(
    ctx: ChatStreamContext,
    event_type: ChatEventType,
    index: int,
    block: Block,
    raw: Any,
    **fields: Any,
) -> None:
    """An event of the server tool call (or result) ``block`` at ``index``, with its id and
    ``sub_type``."""
    ctx.send(
        event_type, index=index, tool_call_id=block.id, sub_type=block.sub_type, raw=raw, **fields
    )


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


def field_delta(field: str, event_type: ChatEventType) -> Callable[..., None]:
    """The handler of a delta whose ``field`` is a piece of text: sent as ``event_type`` (when
    a non-empty string). It takes ``(state, ctx, block, index, delta, frame)``, as a delta
    handler that is a method of the dialect's :class:`OpenBlocks` does."""

    def send_field(
        state: Any, ctx: ChatStreamContext, block: Any, index: int, delta: Any, frame: Any
    ) -> None:
        text = delta.get(field)
        if isinstance(text, str) and text:
            ctx.send(event_type, text, index=index, raw=frame)

    return send_field


text_delta = field_delta("text", EVENT_TYPES.TEXT_DELTA)
"""The handler of a delta (or a start) whose ``text`` is text of the answer."""

signature_delta = field_delta("signature", EVENT_TYPES.THINKING_SIGNATURE)
"""The handler of a delta (or a start) whose ``signature`` is a thinking signature."""
