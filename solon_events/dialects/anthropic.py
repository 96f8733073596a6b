"""The Anthropic Messages API dialect (``"anthropic"``): streamed ``/v1/messages`` events.

Frames are the JSON payloads of the SSE stream: ``message_start``, ``content_block_start`` /
``_delta`` / ``_stop`` keyed by the block ``index``, ``message_delta``, ``message_stop``,
``ping`` and ``error``.

Mapping choices worth knowing:

- TEXT and THINKING events carry the content block ``index``. Client tool calls carry the
  call's position (0, 1, ... in the stream) as ``index``, given by
  :class:`~solon_events.dialects.base.ToolCallAssembler`, so calls never collide.
- Server tools: ``server_tool_use`` opens a SERVER_TOOL_START whose ``sub_type`` is the tool
  name (``"web_search"``, ``"bash_code_execution"``, ...); any other ``<prefix>_tool_use``
  block (``mcp_tool_use``) uses the prefix (``"mcp"``; the MCP server name is in
  ``attrs["server_name"]``). Every ``<prefix>_tool_result`` block is a SERVER_TOOL_RESULT whose
  ``sub_type`` is that of the call it answers (``tool_use_id``), else the prefix; its ``raw``
  is the result block, its ``raw_type`` the block type, ``attrs["is_error"]`` tells failures,
  and its ``tool_call`` is the call with its complete input. Result items carrying a ``url``
  (web search results) are also sent as SEARCH_RESULT events.
- Usage: ``message_delta`` usage is cumulative and is merged over ``message_start``'s usage
  (a field present in the delta wins, ``input_tokens`` included). ``prompt_tokens`` is
  ``input_tokens + cache_creation_input_tokens + cache_read_input_tokens``;
  ``completion_tokens`` is ``output_tokens``; ``source`` is the merged raw usage.
- ``stop_reason`` is the finish reason as Anthropic spells it (``"end_turn"``,
  ``"tool_use"``, ...); ``"refusal"`` also sends CONTENT_FILTER (``sub_type`` = the refusal
  category, ``attrs`` = ``stop_details``).
- A repeated ``message_start`` with the same id is reported as RAW
  (``"message_start:duplicate"``) and changes nothing; one with a new id (streams spliced
  together) closes the open blocks and starts a fresh message.
- Unknown event types, block types and delta types become RAW events whose ``raw_type`` names
  them (``"content_block_start:foo_block"``, ``"content_block_delta:foo_delta"``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from ..event_model.events import EVENT_TYPES
from ..event_model.messages import ChatRequest, OutputFormat, OutputMode
from ..event_model.results import (
    Citation,
    SearchResult,
    Usage,
    new_citation,
    new_search_result,
)
from .anthropic_request import ANTHROPIC_VERSION, DEFAULT_MAX_TOKENS, messages_request
from .base import ChatDialect
from .blocks import Block, OpenBlocks, Opener, field_delta, signature_delta, text_delta
from .context import ChatStreamContext, FrameHandler, dispatch
from .output import claude_output_mode
from .reading import Raw, make_usage
from .request import Endpoint, HttpRequest

__all__ = ["ANTHROPIC_VERSION", "DEFAULT_MAX_TOKENS", "AnthropicDialect"]

_TEXT_DELTA = EVENT_TYPES.TEXT_DELTA  # a module constant: looking up an enum member costs per frame

_STATE_KEY = "anthropic"
_TOOL_USE_SUFFIX = "_tool_use"
_TOOL_RESULT_SUFFIX = "_tool_result"


class AnthropicDialect(ChatDialect):
    """Anthropic Messages API streaming (``POST /v1/messages`` with ``stream: true``)."""

    name = "anthropic"
    assistant_prefill = True  # a trailing assistant turn is continued (no trailing space)

    native_output = True

    def request_for(self, request: ChatRequest, endpoint: Endpoint) -> HttpRequest:
        """The Messages API request (:func:`messages_request`)."""
        return messages_request(request, endpoint)

    def output_mode(self, model: str, output: OutputFormat) -> OutputMode:
        """``"native"`` (``output_config.format``) for a model that takes it (Opus 4.1,
        every Claude from 4.5 on) and a schema it can hold the answer to; ``"tool"`` (a
        forced tool) otherwise, and without a schema."""
        return claude_output_mode(model, output)

    def forced_tool(self, name: str | None) -> dict[str, Any]:
        """``tool_choice``: the tool ``name``, or ``any`` (not with extended thinking,
        which takes ``auto`` only)."""
        return {"tool_choice": {"type": "any"} if name is None else {"type": "tool", "name": name}}

    def parse_frame(self, ctx: ChatStreamContext, frame: Any) -> None:
        """Translate one Anthropic stream event into events on ``ctx``."""
        # Most frames are deltas of an open block: plain lookups find the block and the handler
        # of the delta type; any other shape leaves ``handler`` None (a missing key or a
        # non-object raises on the way) and takes the general path. The commonest, a text
        # delta of a text block, is sent right here.
        text = handler = None
        try:
            if frame["type"] == "content_block_delta":
                index = frame["index"]
                delta = frame["delta"]
                if type(index) is int:  # a bool would find the block of its int
                    stream = ctx.state[_STATE_KEY]
                    block = stream.blocks[index]
                    delta_type = delta["type"]
                    if delta_type == "text_delta" and block.kind == "text":
                        text = delta["text"]
                    else:
                        handler = block.deltas.get(delta_type)
        except (KeyError, TypeError):
            pass
        if type(text) is str:
            if text:
                ctx.send(_TEXT_DELTA, text, index=index, raw=frame)
            return
        if handler is not None:
            handler(stream, ctx, block, index, delta, frame)
            return
        _parse_general(ctx, frame)

    def end_of_stream(self, ctx: ChatStreamContext) -> None:
        """After the completion signal, close blocks the provider left open."""
        stream = ctx.state.get(_STATE_KEY)
        if stream is not None and stream.finished:
            stream.close_all(ctx)


# ---------------------------------------------------------------- stream events


def _parse_general(ctx: ChatStreamContext, frame: Any) -> None:
    """Any frame: check it, then hand it to its event type's handler."""
    dispatch(ctx, frame, "type", _EVENT_HANDLERS, _STATE_KEY, _Stream)


def _on_message_start(ctx: ChatStreamContext, stream: _Stream, frame: Mapping[str, Any]) -> None:
    message = _mapping(frame.get("message"))
    message_id = message.get("id")
    if stream.started and message_id == stream.message_id:
        ctx.send(EVENT_TYPES.RAW, raw_type="message_start:duplicate", raw=frame)
        return
    if stream.started:
        stream.close_all(ctx)
        stream.server_calls.clear()
    stream.started = True
    stream.message_id = message_id
    if isinstance(message_id, str):
        ctx.provider_response_id = message_id
    model = message.get("model")
    if isinstance(model, str):
        ctx.model = model
    stream.usage = dict(_mapping(message.get("usage")))
    ctx.send(EVENT_TYPES.USAGE, usage=_usage(stream.usage), raw=frame)


def _on_message_delta(ctx: ChatStreamContext, stream: _Stream, frame: Mapping[str, Any]) -> None:
    usage = frame.get("usage")
    if isinstance(usage, dict):
        stream.usage.update((k, v) for k, v in usage.items() if v is not None)
        ctx.send(EVENT_TYPES.USAGE, usage=_usage(stream.usage), raw=frame)
    delta = _mapping(frame.get("delta"))
    reason = delta.get("stop_reason")
    if reason == "refusal":
        details = _mapping(delta.get("stop_details"))
        category = details.get("category")
        ctx.send(
            EVENT_TYPES.CONTENT_FILTER,
            text=reason,
            sub_type=category if isinstance(category, str) else None,
            attrs=details,
            raw=frame,
        )
    if isinstance(reason, str):
        stream.finished = True
        ctx.finish(reason)


def _on_message_stop(ctx: ChatStreamContext, stream: _Stream, frame: Mapping[str, Any]) -> None:
    stream.close_all(ctx)
    stream.finished = True
    ctx.finish()


def _on_ping(ctx: ChatStreamContext, stream: _Stream, frame: Mapping[str, Any]) -> None:
    ctx.send(EVENT_TYPES.HEARTBEAT, raw=frame)


def _on_error(ctx: ChatStreamContext, stream: _Stream, frame: Mapping[str, Any]) -> None:
    ctx.fail(frame)


def _on_block_start(ctx: ChatStreamContext, stream: _Stream, frame: Mapping[str, Any]) -> None:
    index = _index(frame.get("index"))
    content = frame.get("content_block")
    block_type = content.get("type") if isinstance(content, dict) else None
    if not isinstance(content, dict) or not isinstance(block_type, str):
        ctx.send(EVENT_TYPES.RAW, raw_type="content_block_start", raw=frame)
        return
    stream.open(ctx, index, block_type, content, frame)


def _on_block_delta(ctx: ChatStreamContext, stream: _Stream, frame: Mapping[str, Any]) -> None:
    index = _index(frame.get("index"))
    block = stream.blocks.get(index)
    delta = _mapping(frame.get("delta"))
    delta_type = _str(delta.get("type"))
    handler = block.deltas.get(delta_type) if block is not None else None
    if handler is None or block is None:
        ctx.send(
            EVENT_TYPES.RAW, index=index, raw_type=f"content_block_delta:{delta_type}", raw=frame
        )
        return
    handler(stream, ctx, block, index, delta, frame)


def _on_block_stop(ctx: ChatStreamContext, stream: _Stream, frame: Mapping[str, Any]) -> None:
    stream.stop(ctx, _index(frame.get("index")), "content_block_stop", frame)


_EVENT_HANDLERS: dict[str, FrameHandler[_Stream]] = {
    "message_start": _on_message_start,
    "content_block_start": _on_block_start,
    "content_block_delta": _on_block_delta,
    "content_block_stop": _on_block_stop,
    "message_delta": _on_message_delta,
    "message_stop": _on_message_stop,
    "ping": _on_ping,
    "error": _on_error,
}


# ---------------------------------------------------------------- blocks

# The deltas of one field of text (as text_delta and signature_delta); a block's start may
# carry the same fields.
_thinking_delta = field_delta("thinking", EVENT_TYPES.THINKING_DELTA)


class _Stream(OpenBlocks):
    """The dialect's state for one step: the current message and its open blocks; how each
    type of block opens, and the deltas each kind takes."""

    __slots__ = ("finished", "message_id", "started", "usage")

    start_raw_type = "content_block_start"

    def __init__(self) -> None:
        super().__init__()
        self.started = False
        self.finished = False
        """Whether the message gave its completion signal (a stop reason, message_stop)."""
        self.message_id: Any = None
        self.usage: dict[str, Any] = {}

    # ------------------------------------------------ openers, by block type

    def open_text(self, ctx: ChatStreamContext, index: int, start: Raw, frame: Raw) -> Block:
        ctx.send(EVENT_TYPES.TEXT_START, index=index, raw=frame)
        text_delta(self, ctx, None, index, start, frame)
        citations = start.get("citations")
        for citation in citations if isinstance(citations, list) else ():
            if isinstance(citation, dict):
                ctx.send(EVENT_TYPES.CITATION, index=index, citation=_citation(citation), raw=frame)
        return _TEXT_BLOCK

    def open_thinking(self, ctx: ChatStreamContext, index: int, start: Raw, frame: Raw) -> Block:
        ctx.send(EVENT_TYPES.THINKING_START, index=index, raw=frame)
        _thinking_delta(self, ctx, None, index, start, frame)
        signature_delta(self, ctx, None, index, start, frame)
        return _THINKING_BLOCK

    def open_redacted(self, ctx: ChatStreamContext, index: int, start: Raw, frame: Raw) -> Block:
        data = start.get("data")
        text = data if isinstance(data, str) else ""
        ctx.send(EVENT_TYPES.THINKING_REDACTED, index=index, text=text, raw=frame)
        return _REDACTED_BLOCK

    def open_tool_use(self, ctx: ChatStreamContext, index: int, start: Raw, frame: Raw) -> Block:
        call_id, name = _opt_str(start.get("id")), _str(start.get("name"))
        block = Block("tool", "tool_use", call_id, name, _TOOL_DELTAS, input=start.get("input"))
        return self.open_call(ctx, index, block, frame)

    def open_server_call(self, ctx: ChatStreamContext, index: int, start: Raw, frame: Raw) -> Block:
        """A ``server_tool_use`` block (``sub_type`` the tool's name), or any other
        ``<prefix>_tool_use`` (``sub_type`` the prefix, ``attrs`` its ``server_name``)."""
        block_type = _str(start.get("type"))
        call_id, name = _opt_str(start.get("id")), _str(start.get("name"))
        attrs: dict[str, Any] = {}
        if block_type == "server_tool_use":
            sub_type = name
        else:
            sub_type = block_type.removesuffix(_TOOL_USE_SUFFIX)
            server_name = start.get("server_name")
            if server_name is not None:
                attrs["server_name"] = server_name
        block = Block("server", block_type, call_id, name, _SERVER_DELTAS, sub_type=sub_type)
        block.input = start.get("input")
        return self.open_call(ctx, index, block, frame, attrs)

    def open_result(self, ctx: ChatStreamContext, index: int, start: Raw, frame: Raw) -> Block:
        """A ``<prefix>_tool_result`` block: the result, whole, and its search results."""
        block_type = _str(start.get("type"))
        call_id = _opt_str(start.get("tool_use_id"))
        block = self.result_block(block_type, call_id, block_type.removesuffix(_TOOL_RESULT_SUFFIX))
        items = start.get("content")
        self.send_result(ctx, index, block, _is_error_result(start), start, items, _search_result)
        return block

    openers: ClassVar[Mapping[str, Opener]] = {
        "text": open_text,
        "thinking": open_thinking,
        "redacted_thinking": open_redacted,
        "tool_use": open_tool_use,
        "server_tool_use": open_server_call,
    }
    suffix_openers = ((_TOOL_RESULT_SUFFIX, open_result), (_TOOL_USE_SUFFIX, open_server_call))

    # ------------------------------------------------ deltas (other than a field of text)

    def citations_delta(
        self, ctx: ChatStreamContext, block: Block, index: int, delta: Raw, frame: Raw
    ) -> None:
        citation = delta.get("citation")
        if isinstance(citation, dict):
            ctx.send(EVENT_TYPES.CITATION, index=index, citation=_citation(citation), raw=frame)

    def tool_args_delta(
        self, ctx: ChatStreamContext, block: Block, index: int, delta: Raw, frame: Raw
    ) -> None:
        self.add_arguments(ctx, index, block, delta.get("partial_json"), frame)

    def server_args_delta(
        self, ctx: ChatStreamContext, block: Block, index: int, delta: Raw, frame: Raw
    ) -> None:
        fragment = delta.get("partial_json")
        if isinstance(fragment, str) and fragment:
            block.fragments.append(fragment)
            self.send_server_arguments(ctx, index, block, fragment, frame)


# The delta handlers of each kind of block, by delta type. Text and thinking blocks gather
# nothing (only tool blocks do): one block of each kind serves them all, which spares building
# one per block.
_TEXT_BLOCK = Block(
    "text", "text", deltas={"text_delta": text_delta, "citations_delta": _Stream.citations_delta}
)
_THINKING_BLOCK = Block(
    "thinking",
    "thinking",
    deltas={"thinking_delta": _thinking_delta, "signature_delta": signature_delta},
)
_REDACTED_BLOCK = Block("redacted", "redacted_thinking")
_TOOL_DELTAS = {"input_json_delta": _Stream.tool_args_delta}
_SERVER_DELTAS = {"input_json_delta": _Stream.server_args_delta}


# ---------------------------------------------------------------- value mapping


def _usage(raw: Mapping[str, Any]) -> Usage:
    """A complete usage snapshot from Anthropic's (merged) usage fields."""
    cache_read = _int(raw.get("cache_read_input_tokens"))
    cache_creation = _int(raw.get("cache_creation_input_tokens"))
    server_tool_use = raw.get("server_tool_use")
    return make_usage(
        prompt_tokens=_int(raw.get("input_tokens")) + cache_read + cache_creation,
        completion_tokens=_int(raw.get("output_tokens")),
        cache_read_input_tokens=cache_read,
        cache_creation_input_tokens=cache_creation,
        server_tool_use=server_tool_use if isinstance(server_tool_use, dict) else None,
        source=dict(raw),
    )


def _citation(raw: Mapping[str, Any]) -> Citation:
    """A Citation from any Anthropic citation location (char, page, block, web, search)."""
    start, end, document = _positions(raw)
    return new_citation(
        _either_str(raw, "url", "source"),
        _either_str(raw, "title", "document_title"),
        _opt_str(raw.get("cited_text")),
        start,
        end,
        document,
        _opt_str(raw.get("file_id")),
        _opt_str(raw.get("type")),
        raw,
    )


def _either_str(raw: Mapping[str, Any], key: str, fallback: str) -> str | None:
    """``raw[key]`` if it is a non-empty string, else ``raw[fallback]`` if it is a string."""
    return _opt_str(raw.get(key)) or _opt_str(raw.get(fallback))


_START_KEYS = ("start_char_index", "start_page_number", "start_block_index")
_END_KEYS = ("end_char_index", "end_page_number", "end_block_index")
_DOCUMENT_KEYS = ("document_index", "search_result_index")
_POSITION_KEYS = frozenset((*_START_KEYS, *_END_KEYS, *_DOCUMENT_KEYS))


def _positions(raw: Mapping[str, Any]) -> tuple[int | None, int | None, int | None]:
    """A citation location's start, end and document index, whatever its kind."""
    if _POSITION_KEYS.isdisjoint(raw):  # a web search result location has none
        return None, None, None
    return (
        _first_int(raw, _START_KEYS),
        _first_int(raw, _END_KEYS),
        _first_int(raw, _DOCUMENT_KEYS),
    )


def _search_result(url: str, raw: Mapping[str, Any]) -> SearchResult:
    """A SearchResult from a search result item ``raw`` whose ``url`` is given."""
    return new_search_result(
        url,
        _opt_str(raw.get("title")),
        None,
        _opt_str(raw.get("page_age")),
        _opt_str(raw.get("type")),
        raw,
    )


def _is_error_result(content: Mapping[str, Any]) -> bool:
    if content.get("is_error") is True:
        return True
    inner = content.get("content")
    inner_type = inner.get("type") if isinstance(inner, dict) else None
    return isinstance(inner_type, str) and inner_type.endswith("_error")


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> int:
    return value if type(value) is int else 0  # JSON's integers: int exactly, never bool


def _index(value: Any) -> int:
    return value if type(value) is int else -1


def _first_int(raw: Mapping[str, Any], keys: tuple[str, ...]) -> int | None:
    for key in keys:
        value = raw.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _opt_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None
