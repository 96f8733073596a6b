"""The OpenAI Responses API dialect (``"openai-responses"``): ``POST /v1/responses`` streaming.

The stream is a sequence of typed events (``response.created``, ``response.output_item.added``,
``response.output_text.delta``, ..., ``response.completed``); there is no ``[DONE]`` sentinel.
The same format is spoken by Azure OpenAI, xAI and LM Studio, whose variations are read too.

How the events map:

- ``response.created`` / ``in_progress`` / ``queued`` -> STATUS (text = the response status);
  ``response.completed`` -> USAGE and completion with the response status;
  ``response.incomplete`` -> USAGE and completion with ``incomplete_details.reason``
  (plus CONTENT_FILTER when that reason is ``content_filter``); ``response.failed`` and
  ``error`` -> provider failure (the first error's fields win) with finish reason ``failed``.
- Message items: TEXT_START / TEXT_END at ``content_part.added`` / ``done`` (closed at the
  item's end at the latest), TEXT_DELTA per ``output_text.delta``, CITATION per
  ``output_text.annotation.added``, REFUSAL_DELTA per ``refusal.delta``.
- Reasoning items: THINKING_DELTA for reasoning summary text (``sub_type="summary"``) and raw
  reasoning text (``sub_type="reasoning"``); consecutive parts are separated by a
  ``"\\n\\n"`` THINKING_DELTA, as the provider separates its summary parts. An item's
  ``encrypted_content`` -> THINKING_REDACTED once, at the item's end.
- ``function_call`` and ``custom_tool_call`` items -> TOOL_CALL_START / ARGS_DELTA / END with
  ``tool_call_id`` = the item's ``call_id``; a custom tool's free-form input is the call's
  ``arguments_str`` (``arguments`` is ``{}`` unless the input is a JSON object).
- Built-in tool items (``web_search_call``, ``file_search_call``, ``code_interpreter_call``,
  ``image_generation_call``, ``mcp_call``, ``mcp_list_tools``, ``mcp_approval_request``,
  ``local_shell_call``, ``shell_call``, ``computer_call``, ``apply_patch_call``, and any other
  ``*_call`` item) -> SERVER_TOOL_START when the item is added and SERVER_TOOL_RESULT (raw =
  the finished item) when it is done, with ``sub_type`` = the item type without ``_call``.
  Code, MCP argument and shell command deltas -> SERVER_TOOL_ARGS_DELTA. Web search sources
  and file search results -> SEARCH_RESULT; image generation partial images ->
  MEDIA_PARTIAL and the final image -> MEDIA_DONE, each with an ImageBlock. A
  ``*_call_output`` item -> SERVER_TOOL_RESULT of its call.
- A built-in tool's progress events (``response.web_search_call.searching``, ...) -> STATUS
  (text = the progress word, ``sub_type`` = the tool). The other boundary events
  (``reasoning_summary_part.added``, ``*_code.done``, ``mcp_call_arguments.done``,
  ``shell_call_command.added`` / ``done``) carry nothing new and emit nothing.
- Every ``*.done`` event and ``response.completed``'s ``output`` only *complete* what was
  streamed: text, arguments, thinking and annotations never sent as deltas are sent from
  them, and nothing already sent is sent twice (servers that stream nothing but whole items
  still produce every event).
- Anything else -> RAW with ``raw_type`` = the event type.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

import attrs

from ..event_model.events import EVENT_TYPES, ChatEventType
from ..event_model.messages import ChatRequest, OutputFormat, OutputMode
from ..event_model.results import (
    Citation,
    ImageBlock,
    SearchResult,
    ToolCall,
    Usage,
    new_citation,
    new_search_result,
    new_tool_call,
)
from .base import ChatDialect
from .context import ChatStreamContext, identify
from .openai_responses_request import responses_request
from .reading import expect_object, image_mime, make_usage
from .request import Endpoint, HttpRequest
from .tool_calls import ToolCallAssembler

__all__ = ["OpenAIResponsesDialect"]

_Frame = Mapping[str, Any]
_THINKING_DELTA = EVENT_TYPES.THINKING_DELTA

_STATE = "openai_responses"  # the key of this dialect's _StepState in ctx.state
_TEXT_DELTA = "response.output_text.delta"
_SUMMARY_DELTA = "response.reasoning_summary_text.delta"
_REASONING_DELTA = "response.reasoning_text.delta"
_PART_SEPARATOR = "\n\n"  # between two thinking parts (summary parts, reasoning texts)

_SERVER_TOOLS = {
    "web_search_call": "web_search",
    "file_search_call": "file_search",
    "code_interpreter_call": "code_interpreter",
    "image_generation_call": "image_generation",
    "mcp_call": "mcp",
    "mcp_list_tools": "mcp_list_tools",
    "mcp_approval_request": "mcp_approval_request",
    "local_shell_call": "local_shell",
    "shell_call": "shell",
    "computer_call": "computer",
    "apply_patch_call": "apply_patch",
}
"""Built-in tool item types and their ``sub_type``; other ``*_call`` items drop ``_call``."""

_PROGRESSING = "web_search file_search code_interpreter image_generation mcp mcp_list_tools"
_PROGRESS_TOOLS = {k: v for k, v in _SERVER_TOOLS.items() if v in _PROGRESSING.split()}
"""Tools whose progress events are ``response.<item type>.<progress word>``."""

_PROGRESS_WORDS = ("in_progress", "searching", "interpreting", "generating", "completed", "failed")
_PROGRESS_EVENTS = {
    f"response.{tool}.{word}": (word, sub_type)
    for tool, sub_type in _PROGRESS_TOOLS.items()
    for word in _PROGRESS_WORDS
}
"""The documented progress events, read without parsing their type: type -> (word, tool)."""

_SERVER_TOOL_ARGUMENT_KEYS = ("action", "code", "queries", "operation", "server_label")
_TOKEN_KEYS = frozenset(
    (
        "input_tokens",
        "output_tokens",
        "total_tokens",
        "input_tokens_details",
        "output_tokens_details",
    )
)


@attrs.define(eq=False)
class _StreamingPart:
    """The part the previous frame streamed into: text, thinking, a call's arguments or a
    built-in tool's code, arguments or command.

    A delta frame of the same part (same event type, ``item_id``, part index and
    ``output_index``) changes no state but the part's sent count, which waits in
    ``pending`` until a frame takes the general path to a handler not in ``_KEEPS_STREAMING_PART``.
    """

    kind: str
    """The event type of the part's deltas."""
    key: str
    part_key: tuple[str, str, int] | None
    """The part's key in ``_StepState.sent``; None for a part whose sent count nobody reads."""
    field: str = attrs.field(kw_only=True)
    """The event field holding ``part``."""
    part: int = attrs.field(kw_only=True)
    index: int = attrs.field(kw_only=True)
    event: ChatEventType = attrs.field(kw_only=True)
    sub_type: str | None = attrs.field(kw_only=True, default=None)
    calls: ToolCallAssembler | None = attrs.field(kw_only=True, default=None)
    """The assembler to send arguments through (for a call's arguments)."""
    streamed: list[str] | None = attrs.field(kw_only=True, default=None)
    """A text part's deltas so far (``_StepState.streamed``), which the fast path extends."""
    pending: int = attrs.field(init=False, default=0)
    """Characters sent on the fast path, not yet counted in ``_StepState.sent``."""


class _OutputItem(NamedTuple):
    """An output item, as its ``output_item`` events give it."""

    key: str
    """Its key in the step: its id, or one made for it (see ``_key_at``)."""
    item: _Frame
    output_index: int
    """-1 when not given."""


class _StepState:
    """Per-step parsing state (kept in ``ctx.state``; the dialect object is shared)."""

    __slots__ = (
        "by_index",
        "calls",
        "closed_calls",
        "done_items",
        "finished",
        "formats",
        "open_text",
        "open_thinking",
        "sent",
        "server_started",
        "streamed",
        "streaming_part",
        "thinking_part",
    )

    def __init__(self) -> None:
        self.calls = ToolCallAssembler()
        self.closed_calls: set[str] = set()
        self.sent: dict[tuple[str, str, int], int] = {}
        """How much of each part was sent: characters of text, count of annotations."""
        self.streamed: dict[tuple[str, str, int], list[str]] = {}
        """Each text part's deltas, to tell whether its final text extends them."""
        self.open_text: set[str] = set()
        self.open_thinking: set[str] = set()
        self.thinking_part: tuple[str, str, int] | None = None
        """The thinking part last sent into, to separate the next one from it."""
        self.server_started: set[str] = set()
        self.done_items: set[str] = set()
        self.by_index: dict[int, str] = {}
        """output_index -> the key of the item added there: an item is keyed by its position
        first, since some servers send another ``item_id`` on every event of one item."""
        self.formats: dict[str, str] = {}
        """image generation item key -> output format."""
        self.streaming_part: _StreamingPart | None = None
        """The part the previous frame streamed into, if it did."""
        self.finished = False
        """Whether the response gave its completion signal (completed, incomplete, failed)."""


def _stream(ctx: ChatStreamContext) -> _StepState:
    return ctx.state_of(_STATE, _StepState)


class OpenAIResponsesDialect(ChatDialect):
    """OpenAI Responses API streaming (``/v1/responses``, ``stream: true``) and compatibles."""

    name = "openai-responses"
    native_output = True

    def request_for(self, request: ChatRequest, endpoint: Endpoint) -> HttpRequest:
        """A streaming Responses request (:func:`responses_request`)."""
        return responses_request(request, endpoint)

    def output_mode(self, model: str, output: OutputFormat) -> OutputMode:
        """``"native"``: ``text.format`` (``json_schema``, strict where the schema can be
        made so; ``json_object`` without a schema)."""
        return "native"

    def forced_tool(self, name: str | None) -> dict[str, Any]:
        """``tool_choice``: the function ``name``, or ``"required"``."""
        return {"tool_choice": "required" if name is None else {"type": "function", "name": name}}

    def parse_frame(self, ctx: ChatStreamContext, frame: Any) -> None:
        """Translate one Responses streaming event into events on ``ctx``."""
        # Most frames are deltas of the part the previous frame streamed into: plain lookups
        # recognize them; any other shape leaves ``text`` None (a missing key or a non-object
        # raises on the way) and takes the general path.
        text = None
        try:
            streaming_part = ctx.state[_STATE].streaming_part
            if streaming_part is not None and frame["type"] == streaming_part.kind:
                key = frame["item_id"]
                index = frame["output_index"]
                delta = frame["delta"]
                part = frame[streaming_part.field]
                # the same part: equal ids, the indexes ints (JSON's 0.0 is no index)
                if (
                    key == streaming_part.key
                    and index == streaming_part.index
                    and part == streaming_part.part
                    and type(index) is int
                    and type(part) is int
                    and type(delta) is str
                    and delta
                ):
                    text = delta
        except (KeyError, TypeError):
            pass
        if text is not None:
            streaming_part.pending += len(text)
            if streaming_part.streamed is not None:
                streaming_part.streamed.append(text)
            if streaming_part.calls is None:
                ctx.send(
                    streaming_part.event,
                    text=text,
                    index=index,
                    item_id=key,
                    sub_type=streaming_part.sub_type,
                    raw=frame,
                )
            else:
                streaming_part.calls.delta(ctx, key, text, raw=frame)
            return
        _parse_general(ctx, frame)


def _parse_general(ctx: ChatStreamContext, frame: Any) -> None:
    """Any frame: check it, then hand it to its event type's handler."""
    expect_object(frame)
    kind = frame.get("type")
    if kind == "response.created" and _finished(ctx):
        # a recording of several responses in a row (a tool loop): one step each
        ctx.next_response()
    step_state = ctx.state.get(_STATE)
    handler = _HANDLERS.get(kind) if isinstance(kind, str) else None
    if (
        step_state is not None
        and step_state.streaming_part is not None
        and handler not in _KEEPS_STREAMING_PART
    ):
        _settle_streaming_part(step_state)
    if handler is not None:
        handler(ctx, step_state if step_state is not None else _stream(ctx), frame)
    elif not _progress(ctx, kind, frame):
        ctx.send(EVENT_TYPES.RAW, raw_type=kind if isinstance(kind, str) else None, raw=frame)


def _settle_streaming_part(step_state: _StepState) -> None:
    """Count what the fast path sent into the streaming part, and forget that part."""
    streaming_part = step_state.streaming_part
    if streaming_part is not None:
        step_state.streaming_part = None
        if streaming_part.part_key is not None:
            _sent(step_state, streaming_part.part_key, streaming_part.pending)


# response lifecycle


def _on_status(ctx: ChatStreamContext, step_state: _StepState, frame: _Frame) -> None:
    response = _identify(ctx, frame)
    status = response.get("status")
    if not isinstance(status, str) or not status:
        status = str(frame.get("type", "")).rpartition(".")[2]
    ctx.send(EVENT_TYPES.STATUS, text=status, raw_type=frame.get("type"), raw=frame)


def _on_completed(ctx: ChatStreamContext, step_state: _StepState, frame: _Frame) -> None:
    response = _identify(ctx, frame)
    _complete_output(ctx, step_state, response, frame)
    _usage(ctx, response, frame)
    status = response.get("status")
    _finish(ctx, step_state, status if isinstance(status, str) and status else "completed")


def _on_incomplete(ctx: ChatStreamContext, step_state: _StepState, frame: _Frame) -> None:
    response = _identify(ctx, frame)
    _complete_output(ctx, step_state, response, frame)
    _usage(ctx, response, frame)
    details = response.get("incomplete_details")
    reason = details.get("reason") if isinstance(details, dict) else None
    if reason == "content_filter":
        ctx.send(EVENT_TYPES.CONTENT_FILTER, text=reason, raw=frame)
    _finish(ctx, step_state, reason if isinstance(reason, str) and reason else "incomplete")


def _on_failed(ctx: ChatStreamContext, step_state: _StepState, frame: _Frame) -> None:
    response = _identify(ctx, frame)
    step_state.calls.end_all(ctx)
    _usage(ctx, response, frame)
    error = response.get("error")
    ctx.fail(error if isinstance(error, dict) and error else "the response failed")
    _finish(ctx, step_state, "failed")


def _on_error(ctx: ChatStreamContext, step_state: _StepState, frame: _Frame) -> None:
    error = frame.get("error")
    if not isinstance(error, dict):
        error = {k: v for k, v in frame.items() if k not in ("type", "sequence_number")}
    ctx.fail(error if error else "an error event without details")
    _finish(ctx, step_state, "failed")


def _finish(ctx: ChatStreamContext, step_state: _StepState, reason: str) -> None:
    step_state.finished = True
    ctx.finish(reason)


def _finished(ctx: ChatStreamContext) -> bool:
    """Whether the step's response gave its completion signal."""
    step_state = ctx.state.get(_STATE)
    return step_state is not None and step_state.finished


def _identify(ctx: ChatStreamContext, frame: _Frame) -> _Frame:
    """The frame's ``response`` object; sets the provider's response id and model from it."""
    response = frame.get("response")
    if not isinstance(response, dict):
        return {}
    identify(ctx, response.get("id"), response.get("model"))
    return response


def _complete_output(
    ctx: ChatStreamContext, step_state: _StepState, response: _Frame, frame: _Frame
) -> None:
    """Send what the final ``output`` holds and was never streamed; close open calls."""
    output = response.get("output")
    if isinstance(output, list):
        for position, item in enumerate(output):
            if isinstance(item, dict):
                _finish_item(ctx, step_state, item, position, frame)
    step_state.calls.end_all(ctx)


def _usage(ctx: ChatStreamContext, response: _Frame, frame: _Frame) -> None:
    usage = response.get("usage")
    if isinstance(usage, dict):
        ctx.send(EVENT_TYPES.USAGE, usage=_usage_of(usage), raw=frame)


def _usage_of(usage: _Frame) -> Usage:
    """A Usage from a response's ``usage``: its token counts, the ``reasoning_tokens`` and
    ``cached_tokens`` of their details, and any other count (a built-in tool's) as
    ``server_tool_use``."""
    inputs = usage.get("input_tokens_details")
    outputs = usage.get("output_tokens_details")
    return make_usage(
        prompt_tokens=_int(usage.get("input_tokens")),
        completion_tokens=_int(usage.get("output_tokens")),
        total_tokens=_int(usage.get("total_tokens")),
        thinking_tokens=_int(outputs.get("reasoning_tokens")) if isinstance(outputs, dict) else 0,
        cache_read_input_tokens=_int(inputs.get("cached_tokens"))
        if isinstance(inputs, dict)
        else 0,
        server_tool_use={
            key: value for key, value in usage.items() if key not in _TOKEN_KEYS and _int(value)
        },
        source=usage,
    )


# output items


def _on_item_added(ctx: ChatStreamContext, step_state: _StepState, frame: _Frame) -> None:
    item = frame.get("item")
    if not isinstance(item, dict):
        ctx.send(EVENT_TYPES.RAW, raw_type=frame.get("type"), raw=frame)
        return
    index = _index(frame.get("output_index"))
    key = _key_at(step_state, item.get("id"), index)
    if index >= 0:
        step_state.by_index[index] = key
    kind = item.get("type")
    if kind in ("function_call", "custom_tool_call"):
        _start_call(ctx, step_state, key, item, frame)
    elif kind in ("message", "reasoning"):
        return
    elif isinstance(kind, str) and (sub_type := _server_sub_type(kind)) is not None:
        _start_server_tool(ctx, step_state, _OutputItem(key, item, index), sub_type, frame)
    elif not (isinstance(kind, str) and kind.endswith("_call_output")):
        ctx.send(EVENT_TYPES.RAW, raw_type=frame.get("type"), sub_type=_str(kind), raw=frame)


def _on_item_done(ctx: ChatStreamContext, step_state: _StepState, frame: _Frame) -> None:
    item = frame.get("item")
    if not isinstance(item, dict):
        ctx.send(EVENT_TYPES.RAW, raw_type=frame.get("type"), raw=frame)
        return
    _finish_item(ctx, step_state, item, _index(frame.get("output_index")), frame)


def _finish_item(
    ctx: ChatStreamContext, step_state: _StepState, item: _Frame, index: int, frame: _Frame
) -> None:
    """Complete and close one output item; an item already finished is skipped."""
    key = _key_at(step_state, item.get("id"), index)
    if key in step_state.done_items:
        return
    step_state.done_items.add(key)
    out = _OutputItem(key, item, index)
    kind = item.get("type")
    if kind == "message":
        _finish_message(ctx, step_state, out, frame)
    elif kind == "reasoning":
        _finish_reasoning(ctx, step_state, out, frame)
    elif kind == "function_call":
        _finish_call(ctx, step_state, key, item, item.get("arguments"), frame)
    elif kind == "custom_tool_call":
        _finish_call(ctx, step_state, key, item, item.get("input"), frame)
    elif isinstance(kind, str) and (sub_type := _server_sub_type(kind)) is not None:
        _finish_server_tool(ctx, step_state, out, sub_type, frame)
    elif isinstance(kind, str) and kind.endswith("_call_output"):
        ctx.send(
            EVENT_TYPES.SERVER_TOOL_RESULT,
            item_id=key,
            tool_call_id=_str(item.get("call_id")),
            index=index,
            sub_type=kind[: -len("_call_output")],
            raw=item,
        )
    else:
        ctx.send(EVENT_TYPES.RAW, raw_type=frame.get("type"), sub_type=_str(kind), raw=frame)


def _finish_message(
    ctx: ChatStreamContext, step_state: _StepState, out: _OutputItem, frame: _Frame
) -> None:
    key, item, index = out
    content = item.get("content")
    if isinstance(content, list):
        for part_index, part in enumerate(content):
            if isinstance(part, dict):
                _complete_part(ctx, step_state, key, index, part_index, part, frame)
    _close_text(ctx, step_state, key, index, frame)


def _finish_reasoning(
    ctx: ChatStreamContext, step_state: _StepState, out: _OutputItem, frame: _Frame
) -> None:
    key, item, index = out
    for kind, parts in (("summary", item.get("summary")), ("reasoning", item.get("content"))):
        if isinstance(parts, list):
            for part_index, part in enumerate(parts):
                if isinstance(part, dict):
                    text = _catch_up(step_state, (kind, key, part_index), part.get("text"))
                    _thinking(ctx, step_state, key, index, (kind, key, part_index), text, frame)
    if key in step_state.open_thinking:
        step_state.open_thinking.discard(key)
        ctx.send(EVENT_TYPES.THINKING_END, item_id=key, index=index, raw=frame)
    encrypted = item.get("encrypted_content")
    if isinstance(encrypted, str) and encrypted:
        ctx.send(EVENT_TYPES.THINKING_REDACTED, text=encrypted, item_id=key, index=index, raw=frame)


# text, refusal and annotations


def _on_part_added(ctx: ChatStreamContext, step_state: _StepState, frame: _Frame) -> None:
    part = frame.get("part")
    if isinstance(part, dict) and part.get("type") == "output_text":
        index = _index(frame.get("output_index"))
        _open_text(ctx, step_state, _frame_key(step_state, frame), index, frame)


def _on_part_done(ctx: ChatStreamContext, step_state: _StepState, frame: _Frame) -> None:
    part = frame.get("part")
    if not isinstance(part, dict):
        return
    index = _index(frame.get("output_index"))
    key = _frame_key(step_state, frame)
    _complete_part(ctx, step_state, key, index, _index(frame.get("content_index")), part, frame)
    if part.get("type") == "output_text":
        _close_text(ctx, step_state, key, index, frame)


def _complete_part(
    ctx: ChatStreamContext,
    step_state: _StepState,
    key: str,
    index: int,
    part_index: int,
    part: _Frame,
    frame: _Frame,
) -> None:
    """Send what a finished content part holds beyond what was streamed of it."""
    kind = part.get("type")
    if kind == "output_text":
        _final_text(ctx, step_state, key, index, ("text", key, part_index), part.get("text"), frame)
        annotations = part.get("annotations")
        if isinstance(annotations, list):
            sent = step_state.sent.get(("annotation", key, part_index), 0)
            for annotation in annotations[sent:]:
                _annotation(ctx, step_state, key, index, part_index, annotation, frame)
    elif kind == "refusal":
        _refusal(
            ctx,
            key,
            index,
            _catch_up(step_state, ("refusal", key, part_index), part.get("refusal")),
            frame,
        )
    elif kind == "reasoning_text":
        part_key = ("reasoning", key, part_index)
        _thinking(
            ctx,
            step_state,
            key,
            index,
            part_key,
            _catch_up(step_state, part_key, part.get("text")),
            frame,
        )


def _on_text_delta(ctx: ChatStreamContext, step_state: _StepState, frame: _Frame) -> None:
    delta = frame.get("delta")
    if type(delta) is str and delta:
        key = _frame_key(step_state, frame)
        part = _index(frame.get("content_index"))
        part_key = ("text", key, part)
        _sent(step_state, part_key, len(delta))
        streamed = step_state.streamed.setdefault(part_key, [])
        streamed.append(delta)
        index = _index(frame.get("output_index"))
        _open_text(ctx, step_state, key, index, frame)
        step_state.streaming_part = _StreamingPart(
            _TEXT_DELTA,
            key,
            part_key,
            field="content_index",
            part=part,
            index=index,
            event=EVENT_TYPES.TEXT_DELTA,
            streamed=streamed,
        )
        ctx.send(EVENT_TYPES.TEXT_DELTA, text=delta, item_id=key, index=index, raw=frame)


def _on_text_done(ctx: ChatStreamContext, step_state: _StepState, frame: _Frame) -> None:
    key = _frame_key(step_state, frame)
    part_key = ("text", key, _index(frame.get("content_index")))
    _final_text(
        ctx, step_state, key, _index(frame.get("output_index")), part_key, frame.get("text"), frame
    )


def _final_text(
    ctx: ChatStreamContext,
    step_state: _StepState,
    key: str,
    index: int,
    part_key: tuple[str, str, int],
    full: Any,
    frame: _Frame,
) -> None:
    """A text part's final text (a ``*.done`` event or the completed output).

    What extends the streamed deltas is sent as one more delta. A final text that does not
    extend them (a server that rewrote the text) closes the block with a TEXT_END carrying
    that text, which the step's response takes instead of the deltas: never a splice.
    """
    if not isinstance(full, str):
        return
    streamed = step_state.streamed.get(part_key)
    if streamed is None or full.startswith(_joined(streamed)):
        _text(ctx, step_state, key, index, _catch_up(step_state, part_key, full), frame)
        return
    streamed[:] = [full]
    step_state.sent[part_key] = len(full)
    _open_text(ctx, step_state, key, index, frame)
    step_state.open_text.discard(key)
    ctx.send(EVENT_TYPES.TEXT_END, text=full, item_id=key, index=index, raw=frame)


def _joined(fragments: list[str]) -> str:
    """The fragments as one string, kept as the list's one element from then on."""
    if len(fragments) > 1:
        fragments[:] = ["".join(fragments)]
    return fragments[0] if fragments else ""


def _text(
    ctx: ChatStreamContext, step_state: _StepState, key: str, index: int, text: str, frame: _Frame
) -> None:
    if text:
        _open_text(ctx, step_state, key, index, frame)
        ctx.send(EVENT_TYPES.TEXT_DELTA, text=text, item_id=key, index=index, raw=frame)


def _open_text(
    ctx: ChatStreamContext, step_state: _StepState, key: str, index: int, frame: _Frame
) -> None:
    if key not in step_state.open_text:
        step_state.open_text.add(key)
        ctx.send(EVENT_TYPES.TEXT_START, item_id=key, index=index, raw=frame)


def _close_text(
    ctx: ChatStreamContext, step_state: _StepState, key: str, index: int, frame: _Frame
) -> None:
    if key in step_state.open_text:
        step_state.open_text.discard(key)
        ctx.send(EVENT_TYPES.TEXT_END, item_id=key, index=index, raw=frame)


def _on_annotation(ctx: ChatStreamContext, step_state: _StepState, frame: _Frame) -> None:
    key = _frame_key(step_state, frame)
    _annotation(
        ctx,
        step_state,
        key,
        _index(frame.get("output_index")),
        _index(frame.get("content_index")),
        frame.get("annotation"),
        frame,
    )


def _annotation(
    ctx: ChatStreamContext,
    step_state: _StepState,
    key: str,
    index: int,
    part_index: int,
    annotation: Any,
    frame: _Frame,
) -> None:
    _sent(step_state, ("annotation", key, part_index), 1)
    if isinstance(annotation, dict):
        ctx.send(
            EVENT_TYPES.CITATION,
            citation=_citation(annotation),
            item_id=key,
            index=index,
            raw=frame,
        )


def _citation(annotation: _Frame) -> Citation:
    """A Citation from any annotation type: url, file, container file and file path."""
    get = annotation.get
    start = get("start_index")
    if start is None:
        start = get("index")
    return new_citation(
        _str(get("url")),
        _str(get("title")) or _str(get("filename")),
        None,
        _int(start),
        _int(get("end_index")),
        None,
        _str(get("file_id")),
        _str(get("type")),
        annotation,
    )


def _on_refusal_delta(ctx: ChatStreamContext, step_state: _StepState, frame: _Frame) -> None:
    delta = frame.get("delta")
    if isinstance(delta, str) and delta:
        key = _frame_key(step_state, frame)
        _sent(step_state, ("refusal", key, _index(frame.get("content_index"))), len(delta))
        _refusal(ctx, key, _index(frame.get("output_index")), delta, frame)


def _on_refusal_done(ctx: ChatStreamContext, step_state: _StepState, frame: _Frame) -> None:
    key = _frame_key(step_state, frame)
    part_key = ("refusal", key, _index(frame.get("content_index")))
    text = _catch_up(step_state, part_key, frame.get("refusal"))
    _refusal(ctx, key, _index(frame.get("output_index")), text, frame)


def _refusal(ctx: ChatStreamContext, key: str, index: int, text: str, frame: _Frame) -> None:
    if text:
        ctx.send(EVENT_TYPES.REFUSAL_DELTA, text=text, item_id=key, index=index, raw=frame)


# thinking


def _on_summary_delta(ctx: ChatStreamContext, step_state: _StepState, frame: _Frame) -> None:
    _thinking_delta(ctx, step_state, frame, _SUMMARY_DELTA, "summary", "summary_index")


def _on_summary_done(ctx: ChatStreamContext, step_state: _StepState, frame: _Frame) -> None:
    _thinking_done(ctx, step_state, frame, "summary", "summary_index", frame.get("text"))


def _on_summary_part_done(ctx: ChatStreamContext, step_state: _StepState, frame: _Frame) -> None:
    part = frame.get("part")
    text = part.get("text") if isinstance(part, dict) else None
    _thinking_done(ctx, step_state, frame, "summary", "summary_index", text)


def _on_reasoning_delta(ctx: ChatStreamContext, step_state: _StepState, frame: _Frame) -> None:
    _thinking_delta(ctx, step_state, frame, _REASONING_DELTA, "reasoning", "content_index")


def _on_reasoning_done(ctx: ChatStreamContext, step_state: _StepState, frame: _Frame) -> None:
    _thinking_done(ctx, step_state, frame, "reasoning", "content_index", frame.get("text"))


def _thinking_delta(
    ctx: ChatStreamContext,
    step_state: _StepState,
    frame: _Frame,
    event_type: str,
    kind: str,
    part_field: str,
) -> None:
    delta = frame.get("delta")
    if type(delta) is str and delta:
        key = _frame_key(step_state, frame)
        part = _index(frame.get(part_field))
        part_key = (kind, key, part)
        _sent(step_state, part_key, len(delta))
        index = _index(frame.get("output_index"))
        _thinking(ctx, step_state, key, index, part_key, delta, frame)
        step_state.streaming_part = _StreamingPart(
            event_type,
            key,
            part_key,
            field=part_field,
            part=part,
            index=index,
            event=EVENT_TYPES.THINKING_DELTA,
            sub_type=kind,
        )


def _thinking_done(
    ctx: ChatStreamContext,
    step_state: _StepState,
    frame: _Frame,
    kind: str,
    part_field: str,
    text: Any,
) -> None:
    key = _frame_key(step_state, frame)
    part_key = (kind, key, _index(frame.get(part_field)))
    remainder = _catch_up(step_state, part_key, text)
    _thinking(ctx, step_state, key, _index(frame.get("output_index")), part_key, remainder, frame)


def _thinking(
    ctx: ChatStreamContext,
    step_state: _StepState,
    key: str,
    index: int,
    part_key: tuple[str, str, int],
    text: str,
    frame: _Frame,
) -> None:
    """Send thinking ``text`` of one part, opening its block and separating a new part."""
    if not text:
        return
    if key not in step_state.open_thinking:
        step_state.open_thinking.add(key)
        ctx.send(EVENT_TYPES.THINKING_START, item_id=key, index=index, raw=frame)
    sub_type = part_key[0]
    if step_state.thinking_part != part_key:
        if step_state.thinking_part is not None:
            ctx.send(
                _THINKING_DELTA,
                text=_PART_SEPARATOR,
                item_id=key,
                index=index,
                sub_type=sub_type,
                raw=frame,
            )
        step_state.thinking_part = part_key
    ctx.send(_THINKING_DELTA, text=text, item_id=key, index=index, sub_type=sub_type, raw=frame)


# function and custom tool calls


def _start_call(
    ctx: ChatStreamContext, step_state: _StepState, key: str, item: _Frame, frame: _Frame
) -> None:
    if key in step_state.calls or key in step_state.closed_calls:
        return
    step_state.calls.start(
        ctx,
        key,
        id=_call_id(item),
        name=_str(item.get("name")) or "",
        raw=frame,
        item_id=key,
    )


def _on_arguments_delta(ctx: ChatStreamContext, step_state: _StepState, frame: _Frame) -> None:
    delta = frame.get("delta")
    if type(delta) is str and delta:
        key = _frame_key(step_state, frame)
        if key in step_state.closed_calls:
            return
        part_key = ("arguments", key, 0)
        _sent(step_state, part_key, len(delta))
        step_state.calls.delta(ctx, key, delta, raw=frame)
        index = _index(frame.get("output_index"))
        step_state.streaming_part = _StreamingPart(
            frame["type"],
            key,
            part_key,
            field="output_index",
            part=index,
            index=index,
            event=EVENT_TYPES.TOOL_CALL_ARGS_DELTA,
            calls=step_state.calls,
        )


def _on_arguments_done(ctx: ChatStreamContext, step_state: _StepState, frame: _Frame) -> None:
    key = _frame_key(step_state, frame)
    if key in step_state.calls:
        _close_call(ctx, step_state, key, frame.get("arguments"), frame)


def _on_input_done(ctx: ChatStreamContext, step_state: _StepState, frame: _Frame) -> None:
    key = _frame_key(step_state, frame)
    if key in step_state.calls:
        _close_call(ctx, step_state, key, frame.get("input"), frame)


def _finish_call(
    ctx: ChatStreamContext,
    step_state: _StepState,
    key: str,
    item: _Frame,
    final: Any,
    frame: _Frame,
) -> None:
    if key in step_state.closed_calls:
        return
    _start_call(ctx, step_state, key, item, frame)
    _close_call(ctx, step_state, key, final, frame)


def _close_call(
    ctx: ChatStreamContext, step_state: _StepState, key: str, final: Any, frame: _Frame
) -> None:
    """Send the arguments never streamed, then TOOL_CALL_END with the whole text."""
    remainder = _catch_up(step_state, ("arguments", key, 0), final)
    if remainder:
        step_state.calls.delta(ctx, key, remainder, raw=frame)
    step_state.closed_calls.add(key)
    step_state.calls.end(
        ctx, key, arguments_str=final if isinstance(final, str) else None, raw=frame
    )


# built-in (server) tools


def _server_sub_type(kind: str) -> str | None:
    sub_type = _SERVER_TOOLS.get(kind)
    if sub_type is None and kind.endswith("_call") and kind != "function_call":
        sub_type = kind[: -len("_call")]
    return sub_type


def _server_call(item: _Frame, sub_type: str, call_id: str | None, index: int) -> ToolCall:
    name = _str(item.get("name")) or sub_type
    arguments = item.get("arguments")
    if not isinstance(arguments, str):
        arguments = item.get("input")
    if isinstance(arguments, str):
        return new_tool_call(call_id, name, None, arguments, index)
    given = {k: item[k] for k in _SERVER_TOOL_ARGUMENT_KEYS if item.get(k)}
    return new_tool_call(call_id, name, given, "", index)


def _call_id(item: _Frame) -> str | None:
    """A tool item's call id: ``call_id`` when the server gives one, else the item id."""
    return _str(item.get("call_id")) or _str(item.get("id"))


def _start_server_tool(
    ctx: ChatStreamContext, step_state: _StepState, out: _OutputItem, sub_type: str, frame: _Frame
) -> None:
    """SERVER_TOOL_START of a built-in tool's item (once)."""
    key, item, index = out
    if key in step_state.server_started:
        return
    step_state.server_started.add(key)
    output_format = item.get("output_format")
    if isinstance(output_format, str):
        step_state.formats[key] = output_format
    ids = _server_tool_ids(out, sub_type)
    call = _server_call(item, sub_type, ids["tool_call_id"], index)
    ctx.send(EVENT_TYPES.SERVER_TOOL_START, tool_call=call, raw=frame, **ids)


def _finish_server_tool(
    ctx: ChatStreamContext, step_state: _StepState, out: _OutputItem, sub_type: str, frame: _Frame
) -> None:
    """A built-in tool's item done: its search results, image, and SERVER_TOOL_RESULT (after
    its start, if that never came)."""
    _start_server_tool(ctx, step_state, out, sub_type, frame)
    key, item, index = out
    ids = _server_tool_ids(out, sub_type)
    for result in _search_results(item):
        ctx.send(EVENT_TYPES.SEARCH_RESULT, search_result=result, raw=frame, **ids)
    image = item.get("result")
    if sub_type == "image_generation" and isinstance(image, str) and image:
        mime_type = image_mime(item.get("output_format"), step_state.formats.get(key))
        block = ImageBlock(data=image, mime_type=mime_type, id=key)
        ctx.send(EVENT_TYPES.MEDIA_DONE, block=block, raw=frame, **ids)
    call = _server_call(item, sub_type, ids["tool_call_id"], index)
    ctx.send(EVENT_TYPES.SERVER_TOOL_RESULT, tool_call=call, raw=item, **ids)


def _server_tool_ids(out: _OutputItem, sub_type: str) -> dict[str, Any]:
    """The fields that name a built-in tool's item on each of its events."""
    return {
        "item_id": out.key,
        "tool_call_id": _call_id(out.item),
        "index": out.output_index,
        "sub_type": sub_type,
    }


def _search_results(item: _Frame) -> Iterable[SearchResult]:
    """Web search action sources and file search results of a finished tool item."""
    action = item.get("action")
    sources = action.get("sources") if isinstance(action, dict) else None
    if isinstance(sources, list):
        for source in sources:
            if isinstance(source, dict):
                get = source.get
                yield new_search_result(
                    _str(get("url")), _str(get("title")), None, None, _str(get("type")), source
                )
    results = item.get("results")
    if isinstance(results, list):
        for result in results:
            if isinstance(result, dict):
                get = result.get
                yield new_search_result(
                    _str(get("url")),
                    _str(get("filename")) or _str(get("title")),
                    _str(get("text")),
                    None,
                    _str(get("type")) or "file",
                    result,
                )


def _on_server_arguments_delta(
    ctx: ChatStreamContext, step_state: _StepState, frame: _Frame
) -> None:
    delta = frame.get("delta")
    if type(delta) is str and delta:
        key = _frame_key(step_state, frame)
        index = _index(frame.get("output_index"))
        ctx.send(
            EVENT_TYPES.SERVER_TOOL_ARGS_DELTA, text=delta, item_id=key, index=index, raw=frame
        )
        step_state.streaming_part = _StreamingPart(
            frame["type"],
            key,
            None,
            field="output_index",
            part=index,
            index=index,
            event=EVENT_TYPES.SERVER_TOOL_ARGS_DELTA,
        )


def _on_partial_image(ctx: ChatStreamContext, step_state: _StepState, frame: _Frame) -> None:
    data = frame.get("partial_image_b64")
    if not isinstance(data, str) or not data:
        return
    key = _frame_key(step_state, frame)
    fmt = frame.get("output_format")
    if isinstance(fmt, str):
        step_state.formats[key] = fmt
    ctx.send(
        EVENT_TYPES.MEDIA_PARTIAL,
        block=ImageBlock(data=data, mime_type=image_mime(fmt, step_state.formats.get(key)), id=key),
        item_id=key,
        index=_index(frame.get("output_index")),
        sub_type="image_generation",
        attrs={"partial_image_index": frame.get("partial_image_index")},
        raw=frame,
    )


def _progress(ctx: ChatStreamContext, kind: Any, frame: _Frame) -> bool:
    """A built-in tool's progress event (``response.web_search_call.searching``) -> STATUS."""
    if not isinstance(kind, str) or not kind.startswith("response."):
        return False
    tool, _, word = kind[len("response.") :].partition(".")
    sub_type = _PROGRESS_TOOLS.get(tool)
    if sub_type is None or not word or "." in word:
        return False
    _send_progress(ctx, kind, word, sub_type, frame)
    return True


def _on_progress(ctx: ChatStreamContext, step_state: _StepState, frame: _Frame) -> None:
    """A documented progress event: what :func:`_progress` makes of it."""
    kind = frame["type"]
    word, sub_type = _PROGRESS_EVENTS[kind]
    _send_progress(ctx, kind, word, sub_type, frame)


def _send_progress(
    ctx: ChatStreamContext, kind: str, word: str, sub_type: str, frame: _Frame
) -> None:
    ctx.send(
        EVENT_TYPES.STATUS,
        text=word,
        sub_type=sub_type,
        item_id=_str(frame.get("item_id")),
        index=_index(frame.get("output_index")),
        raw_type=kind,
        raw=frame,
    )


def _on_heartbeat(ctx: ChatStreamContext, step_state: _StepState, frame: _Frame) -> None:
    ctx.send(EVENT_TYPES.HEARTBEAT, raw=frame)


def _ignore(ctx: ChatStreamContext, step_state: _StepState, frame: _Frame) -> None:
    """Boundary events whose content arrives in other events."""


_HANDLERS: dict[str, Callable[[ChatStreamContext, _StepState, _Frame], None]] = {
    **dict.fromkeys(_PROGRESS_EVENTS, _on_progress),
    "response.created": _on_status,
    "response.in_progress": _on_status,
    "response.queued": _on_status,
    "response.completed": _on_completed,
    "response.incomplete": _on_incomplete,
    "response.failed": _on_failed,
    "error": _on_error,
    "keepalive": _on_heartbeat,
    "response.output_item.added": _on_item_added,
    "response.output_item.done": _on_item_done,
    "response.content_part.added": _on_part_added,
    "response.content_part.done": _on_part_done,
    "response.output_text.delta": _on_text_delta,
    "response.output_text.done": _on_text_done,
    "response.output_text.annotation.added": _on_annotation,
    "response.refusal.delta": _on_refusal_delta,
    "response.refusal.done": _on_refusal_done,
    "response.reasoning_summary_part.added": _ignore,
    "response.reasoning_summary_part.done": _on_summary_part_done,
    "response.reasoning_summary_text.delta": _on_summary_delta,
    "response.reasoning_summary_text.done": _on_summary_done,
    "response.reasoning_text.delta": _on_reasoning_delta,
    "response.reasoning_text.done": _on_reasoning_done,
    "response.function_call_arguments.delta": _on_arguments_delta,
    "response.function_call_arguments.done": _on_arguments_done,
    "response.custom_tool_call_input.delta": _on_arguments_delta,
    "response.custom_tool_call_input.done": _on_input_done,
    "response.code_interpreter_call_code.delta": _on_server_arguments_delta,
    "response.code_interpreter_call_code.done": _ignore,
    "response.mcp_call_arguments.delta": _on_server_arguments_delta,
    "response.mcp_call_arguments.done": _ignore,
    "response.shell_call_command.added": _ignore,
    "response.shell_call_command.delta": _on_server_arguments_delta,
    "response.shell_call_command.done": _ignore,
    "response.image_generation_call.partial_image": _on_partial_image,
}

_KEEPS_STREAMING_PART = frozenset((_on_annotation, _on_progress, _on_heartbeat, _ignore))
"""Handlers that neither read nor change what the fast path relies on: the streaming part stays."""


# small helpers


def _item_key(item_id: Any, index: int) -> str:
    """An item's key: its id, or its output position when a server sends no id."""
    return item_id if isinstance(item_id, str) and item_id else f"output:{index}"


def _frame_key(step_state: _StepState, frame: _Frame) -> str:
    """The key of the item an event belongs to (see :func:`_key_at`)."""
    return _key_at(step_state, frame.get("item_id"), _index(frame.get("output_index")))


def _key_at(step_state: _StepState, item_id: Any, index: int) -> str:
    """The key of the item at output position ``index`` with id ``item_id``.

    The item added at that position, whatever id this event gives it (some compatible
    servers send a new ``item_id`` on every event of one item); else the id, else the
    position.
    """
    known = step_state.by_index.get(index) if index >= 0 else None
    return known if known is not None else _item_key(item_id, index)


def _sent(step_state: _StepState, key: tuple[str, str, int], amount: int) -> None:
    step_state.sent[key] = step_state.sent.get(key, 0) + amount


def _catch_up(step_state: _StepState, key: tuple[str, str, int], full: Any) -> str:
    """What of a part's whole text ``full`` was not sent yet (and mark it sent)."""
    if not isinstance(full, str):
        return ""
    sent = step_state.sent.get(key, 0)
    if len(full) <= sent:
        return ""
    step_state.sent[key] = len(full)
    return full[sent:]


def _index(value: Any) -> int:
    return value if type(value) is int else -1


def _int(value: Any) -> int | None:
    return value if type(value) is int else None


def _str(value: Any) -> str | None:
    return value if type(value) is str and value else None
