"""The Cohere dialect (``"cohere"``): streamed ``POST /v2/chat`` events.

Frames are the JSON payloads of the SSE stream, each with a ``type``: ``message-start``,
``content-start`` / ``-delta`` / ``-end`` keyed by the content ``index``, ``tool-plan-delta``,
``tool-call-start`` / ``-delta`` / ``-end`` keyed by the call's ``index``,
``citation-start`` / ``-end`` and ``message-end``. What each becomes:

- ``message-start``: its ``id`` is ``ctx.provider_response_id`` (the stream names no model).
- ``content-start`` of a ``text`` (``thinking``) content -> TEXT_START (THINKING_START) with
  the content ``index``; ``content-delta``'s ``text`` (``thinking``) -> TEXT_DELTA
  (THINKING_DELTA); ``content-end`` -> TEXT_END (THINKING_END).
- ``tool-plan-delta`` -> THINKING_DELTA with ``sub_type="tool_plan"``. The tool plan is the
  model's own reasoning about which tools to call, written before the calls: THINKING, not a
  STATUS, because it is model output the response keeps (``response.thinking``), the
  normalizer closes it before the first call like any thinking block, and Cohere wants it
  back as the assistant turn's ``tool_plan`` (the request builder sends a turn's thinking
  there when the turn has tool calls). A STATUS would be lost from the response.
- ``tool-call-start`` -> TOOL_CALL_START (``id``, ``function.name``), ``tool-call-delta``'s
  ``function.arguments`` -> TOOL_CALL_ARGS_DELTA, ``tool-call-end`` -> TOOL_CALL_END with the
  whole call; a call with no argument text (a tool without parameters) has ``arguments``
  ``{}``. Calls carry their position in the step as ``index``.
- ``citation-start`` -> one CITATION per source of the cited span: ``cited_text``,
  ``start_index`` and ``end_index`` are the span's, ``type`` the source's (``"document"``,
  ``"tool"``), ``title`` and ``url`` the cited document's when it has them, ``raw`` the
  source (its ``id``, its ``document`` or ``tool_output``); the event's ``sub_type`` is the
  span's type (``TEXT_CONTENT``, ``THINKING_CONTENT``, ``PLAN``) and its ``index`` the
  citation's. A span without sources is one CITATION without a source. ``citation-end``
  sends nothing.
- ``message-end``: USAGE, then the completion signal with ``finish_reason`` as Cohere spells
  it (``COMPLETE``, ``STOP_SEQUENCE``, ``MAX_TOKENS``, ``TOOL_CALL``, ``TIMEOUT``). ``ERROR``
  (or a ``delta.error``) is a provider failure carrying the error text instead. Usage:
  ``prompt_tokens`` and ``completion_tokens`` are ``usage.tokens`` (every token the model
  read and wrote, the template's included), else ``usage.billed_units`` when the API gives
  no ``tokens``; ``cache_read_input_tokens`` is ``cached_tokens``; ``source`` is the usage
  object as sent (``billed_units`` with it: what is billed).
- Unknown event types (``debug``, ...) become RAW events whose ``raw_type`` names them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..event_model.errors import ProviderError
from ..event_model.events import EVENT_TYPES
from ..event_model.messages import ChatRequest, OutputFormat, OutputMode
from ..event_model.results import Citation, Usage, new_citation
from .base import ChatDialect
from .cohere_request import chat_request
from .context import ChatStreamContext, FrameHandler, dispatch, text_first
from .reading import make_usage, token_count
from .request import Endpoint, HttpRequest
from .tool_calls import ToolCallAssembler

__all__ = ["CohereDialect", "cohere_usage"]

_STATE_KEY = "cohere"
_TOOL_PLAN = "tool_plan"

# content type -> (START, DELTA, END) and the key of its delta's text
_CONTENT_KINDS = {
    "text": (EVENT_TYPES.TEXT_START, EVENT_TYPES.TEXT_DELTA, EVENT_TYPES.TEXT_END),
    "thinking": (EVENT_TYPES.THINKING_START, EVENT_TYPES.THINKING_DELTA, EVENT_TYPES.THINKING_END),
}


class _Stream:
    """The dialect's state for one step: the open contents and the tool calls."""

    __slots__ = ("contents", "tools")

    def __init__(self) -> None:
        self.contents: dict[int, str] = {}
        """Open contents: index -> ``"text"`` or ``"thinking"``."""
        self.tools = ToolCallAssembler()


class CohereDialect(ChatDialect):
    """Cohere's Chat API v2 streaming (``POST /v2/chat`` with ``stream: true``)."""

    name = "cohere"

    native_output = True

    def request_for(self, request: ChatRequest, endpoint: Endpoint) -> HttpRequest:
        """The ``/v2/chat`` request (:func:`~solon_events.dialects.cohere_request.chat_request`)."""
        return chat_request(request, endpoint)

    def output_mode(self, model: str, output: OutputFormat) -> OutputMode:
        """``"native"``: ``response_format`` (``json_object``, with its ``json_schema``)."""
        return "native"

    def forced_tool(self, name: str | None) -> dict[str, Any]:
        """``tool_choice: "REQUIRED"``: Cohere cannot name the tool (the output's is then
        the only one, or the model may call the request's own tools first)."""
        return {"tool_choice": "REQUIRED"}

    def parse_frame(self, ctx: ChatStreamContext, frame: Any) -> None:
        """Translate one Cohere stream event into events on ``ctx``."""
        text_first(ctx, frame, _text_of, _parse_general)

    def end_of_stream(self, ctx: ChatStreamContext) -> None:
        """Close what the provider left open (the normalizer would too; this keeps ids)."""
        stream = ctx.state.get(_STATE_KEY)
        if stream is not None:
            _close_all(ctx, stream)


# ---------------------------------------------------------------- stream events


def _text_of(frame: Any) -> tuple[Any, Any]:
    """A text delta's text and index, by plain lookups (see :func:`text_first`)."""
    if frame["type"] == "content-delta":
        content = frame["delta"]["message"]["content"]
        if len(content) == 1:
            return content["text"], frame["index"]
    return None, None


def _parse_general(ctx: ChatStreamContext, frame: Any) -> None:
    """Any frame: check it, then hand it to its event type's handler."""
    dispatch(ctx, frame, "type", _HANDLERS, _STATE_KEY, _Stream)


def _on_message_start(ctx: ChatStreamContext, stream: _Stream, frame: dict[str, Any]) -> None:
    message_id = frame.get("id")
    if isinstance(message_id, str) and message_id:
        ctx.provider_response_id = message_id


def _on_content_start(ctx: ChatStreamContext, stream: _Stream, frame: dict[str, Any]) -> None:
    index = _index(frame)
    content = _message(frame).get("content")
    kind = content.get("type") if isinstance(content, dict) else None
    kinds = _CONTENT_KINDS.get(kind) if isinstance(kind, str) else None
    if kinds is None or not isinstance(content, dict) or not isinstance(kind, str):
        ctx.send(EVENT_TYPES.RAW, index=index, raw_type=f"content-start:{kind}", raw=frame)
        return
    if index in stream.contents:
        _close_content(ctx, stream, index)
    stream.contents[index] = kind
    ctx.send(kinds[0], index=index, raw=frame)
    text = content.get(kind)
    if isinstance(text, str) and text:
        ctx.send(kinds[1], text=text, index=index, raw=frame)


def _on_content_delta(ctx: ChatStreamContext, stream: _Stream, frame: dict[str, Any]) -> None:
    index = _index(frame)
    content = _message(frame).get("content")
    known = False
    if isinstance(content, dict):
        for kind, kinds in _CONTENT_KINDS.items():
            text = content.get(kind)
            if isinstance(text, str):
                known = True
                if text:
                    ctx.send(kinds[1], text=text, index=index, raw=frame)
    if not known:
        ctx.send(EVENT_TYPES.RAW, index=index, raw_type="content-delta", raw=frame)


def _on_content_end(ctx: ChatStreamContext, stream: _Stream, frame: dict[str, Any]) -> None:
    index = _index(frame)
    if index in stream.contents:
        _close_content(ctx, stream, index, frame)
    else:
        ctx.send(EVENT_TYPES.RAW, index=index, raw_type="content-end", raw=frame)


def _on_tool_plan_delta(ctx: ChatStreamContext, stream: _Stream, frame: dict[str, Any]) -> None:
    plan = _message(frame).get("tool_plan")
    if isinstance(plan, str) and plan:
        ctx.send(EVENT_TYPES.THINKING_DELTA, text=plan, sub_type=_TOOL_PLAN, raw=frame)


def _on_tool_call_start(ctx: ChatStreamContext, stream: _Stream, frame: dict[str, Any]) -> None:
    index = _index(frame)
    call = _message(frame).get("tool_calls")
    call = call if isinstance(call, dict) else {}
    function = call.get("function")
    function = function if isinstance(function, dict) else {}
    if index in stream.tools:
        stream.tools.end(ctx, index)
    call_id = call.get("id")
    name = function.get("name")
    stream.tools.start(
        ctx,
        index,
        id=call_id if isinstance(call_id, str) else None,
        name=name if isinstance(name, str) else "",
        raw=frame,
    )
    stream.tools.delta(ctx, index, _arguments(function), raw=frame)


def _on_tool_call_delta(ctx: ChatStreamContext, stream: _Stream, frame: dict[str, Any]) -> None:
    index = _index(frame)
    call = _message(frame).get("tool_calls")
    function = call.get("function") if isinstance(call, dict) else None
    if index not in stream.tools or not isinstance(function, dict):
        ctx.send(EVENT_TYPES.RAW, index=index, raw_type="tool-call-delta", raw=frame)
        return
    stream.tools.delta(ctx, index, _arguments(function), raw=frame)


def _arguments(function: Mapping[str, Any]) -> str:
    """A tool call's ``arguments`` fragment (none: empty, which the assembler skips)."""
    fragment = function.get("arguments")
    return fragment if isinstance(fragment, str) else ""


def _on_tool_call_end(ctx: ChatStreamContext, stream: _Stream, frame: dict[str, Any]) -> None:
    index = _index(frame)
    if stream.tools.end(ctx, index, raw=frame) is None:
        ctx.send(EVENT_TYPES.RAW, index=index, raw_type="tool-call-end", raw=frame)


def _on_citation_start(ctx: ChatStreamContext, stream: _Stream, frame: dict[str, Any]) -> None:
    index = _index(frame)
    span = _message(frame).get("citations")
    if not isinstance(span, dict):
        ctx.send(EVENT_TYPES.RAW, index=index, raw_type="citation-start", raw=frame)
        return
    span_type = span.get("type")
    sub_type = span_type if isinstance(span_type, str) else None
    sources = span.get("sources")
    sources = [s for s in sources if isinstance(s, dict)] if isinstance(sources, list) else []
    for source in sources or [None]:
        citation = _citation(span, source)
        ctx.send(EVENT_TYPES.CITATION, index=index, citation=citation, sub_type=sub_type, raw=frame)


def _on_citation_end(ctx: ChatStreamContext, stream: _Stream, frame: dict[str, Any]) -> None:
    """Nothing: the span was sent whole at its ``citation-start``."""


def _on_message_end(ctx: ChatStreamContext, stream: _Stream, frame: dict[str, Any]) -> None:
    _close_all(ctx, stream)
    delta = frame.get("delta")
    delta = delta if isinstance(delta, dict) else {}
    usage = delta.get("usage")
    if isinstance(usage, dict):
        ctx.send(EVENT_TYPES.USAGE, usage=cohere_usage(usage), raw=frame)
    reason = delta.get("finish_reason")
    error = delta.get("error")
    if reason == "ERROR" or error:
        message = error if isinstance(error, str) and error else "the model stopped with ERROR"
        ctx.fail(ProviderError(f"provider error: {message}", provider_error=delta))
        return
    ctx.finish(reason if isinstance(reason, str) and reason else None)


_HANDLERS: dict[str, FrameHandler[_Stream]] = {
    "message-start": _on_message_start,
    "content-start": _on_content_start,
    "content-delta": _on_content_delta,
    "content-end": _on_content_end,
    "tool-plan-delta": _on_tool_plan_delta,
    "tool-call-start": _on_tool_call_start,
    "tool-call-delta": _on_tool_call_delta,
    "tool-call-end": _on_tool_call_end,
    "citation-start": _on_citation_start,
    "citation-end": _on_citation_end,
    "message-end": _on_message_end,
}


# ---------------------------------------------------------------- closing


def _close_content(
    ctx: ChatStreamContext, stream: _Stream, index: int, frame: dict[str, Any] | None = None
) -> None:
    kind = stream.contents.pop(index)
    ctx.send(_CONTENT_KINDS[kind][2], index=index, raw=frame)


def _close_all(ctx: ChatStreamContext, stream: _Stream) -> None:
    """Close every content and tool call still open, in the order they were opened."""
    for index in list(stream.contents):
        _close_content(ctx, stream, index)
    stream.tools.end_all(ctx)


# ---------------------------------------------------------------- value mapping


def cohere_usage(usage: Mapping[str, Any]) -> Usage:
    """A :class:`~solon_events.Usage` from a ``message-end`` usage object.

    ``prompt_tokens`` / ``completion_tokens`` = ``tokens.input_tokens`` /
    ``tokens.output_tokens``, else ``billed_units``' when there is no ``tokens``;
    ``cache_read_input_tokens`` = ``cached_tokens``; ``source`` = ``usage`` as given.
    """
    tokens = usage.get("tokens")
    if not isinstance(tokens, dict):
        tokens = usage.get("billed_units")
    counts = tokens if isinstance(tokens, dict) else {}
    return make_usage(
        prompt_tokens=token_count(counts.get("input_tokens")),
        completion_tokens=token_count(counts.get("output_tokens")),
        cache_read_input_tokens=token_count(usage.get("cached_tokens")),
        source=dict(usage),
    )


def _citation(span: Mapping[str, Any], source: Mapping[str, Any] | None) -> Citation:
    """The Citation of one source of a cited ``span`` (``source`` None: a span without one)."""
    document = source.get("document") if source is not None else None
    document = document if isinstance(document, dict) else {}
    source_type = source.get("type") if source is not None else None
    return new_citation(
        _opt_str(document.get("url")),
        _opt_str(document.get("title")),
        _opt_str(span.get("text")),
        _opt_int(span.get("start")),
        _opt_int(span.get("end")),
        None,
        None,
        _opt_str(source_type),
        source,
    )


def _message(frame: Mapping[str, Any]) -> Mapping[str, Any]:
    """``frame["delta"]["message"]``, or an empty mapping."""
    delta = frame.get("delta")
    message = delta.get("message") if isinstance(delta, dict) else None
    return message if isinstance(message, dict) else {}


def _index(frame: Mapping[str, Any]) -> int:
    index = frame.get("index")
    return index if type(index) is int else -1


def _opt_int(value: Any) -> int | None:
    return value if type(value) is int else None


def _opt_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None
