"""The Amazon Bedrock ConverseStream dialect (``"bedrock"``).

The body is an AWS event stream (:mod:`solon_events.eventstream`), not SSE: each message
becomes the frame ``{"<event type>": <payload>}``, the shape botocore gives its callers.
What the frames mean:

- ``messageStart``: a new response; one after a ``messageStop`` (a recorded tool loop)
  starts the next step.
- ``contentBlockStart`` with ``start.toolUse`` (``toolUseId``, ``name``) opens a tool call
  (TOOL_CALL_START, the call's position in the step as ``index``); other starts are RAW.
- ``contentBlockDelta``: ``text`` -> TEXT_DELTA, ``toolUse.input`` -> TOOL_CALL_ARGS_DELTA,
  ``reasoningContent.text`` -> THINKING_DELTA, ``.signature`` -> THINKING_SIGNATURE,
  ``.redactedContent`` (base64) -> THINKING_REDACTED, ``citation`` -> CITATION. Text and
  reasoning blocks open at their first delta (Bedrock sends no start for them) with the
  ``contentBlockIndex`` as ``index``; anything else is RAW.
- ``contentBlockStop`` closes the block (TEXT_END, THINKING_END, TOOL_CALL_END).
- ``messageStop``: the completion signal with ``stopReason`` as the finish reason (``end_turn``,
  ``tool_use``, ``max_tokens``, ``stop_sequence``, ...); ``guardrail_intervened`` and
  ``content_filtered`` also send CONTENT_FILTER.
- ``metadata``: USAGE (``prompt_tokens`` = ``inputTokens`` + ``cacheReadInputTokens`` +
  ``cacheWriteInputTokens``; ``totalTokens`` as given), then ``metrics.latencyMs`` as a
  CUSTOM event (``sub_type`` ``"latency"``, ``attrs["latency_ms"]``) and a ``trace`` as a
  CUSTOM event (``sub_type`` ``"trace"``).
- An exception message (``throttlingException``, ``validationException``,
  ``modelStreamErrorException``, ``internalServerException``,
  ``serviceUnavailableException``, any ``...Exception``) and an error message fail the
  stream with a :class:`~solon_events.ProviderError` of the message, its type in
  ``provider_error["type"]``.

Authentication: ``api_key`` is a Bedrock API key, sent as ``Authorization: Bearer``; without
one the request is signed with AWS Signature Version 4 from botocore's standard credential
chain (``pip install 'solon-events[bedrock]'``), see :mod:`solon_events.dialects.aws_auth`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..core.tool_calls import ToolCallAssembler
from ..errors import ProviderError
from ..events import EVENT_TYPES
from ..eventstream import EventStreamFrameDecoder
from ..messages import ChatRequest
from ..results import (
    Citation,
    Usage,
    new_citation,
)
from . import aws_auth
from .base import ChatDialect
from .bedrock_request import converse_stream_request, converse_stream_url
from .context import ChatStreamContext
from .reading import expect_object, make_usage
from .request import Endpoint, HttpRequest

__all__ = ["BedrockDialect", "converse_stream_url"]

_TEXT_DELTA = EVENT_TYPES.TEXT_DELTA
_STATE_KEY = "bedrock"
_FILTER_REASONS = frozenset({"guardrail_intervened", "content_filtered"})


class _Stream:
    """The dialect's state for one step: open text/reasoning blocks, tool calls, the stop."""

    __slots__ = ("blocks", "started", "stopped", "tools")

    def __init__(self) -> None:
        self.started = False
        self.stopped = False
        """Whether ``messageStop`` came (a later ``messageStart`` is another response)."""
        self.blocks: dict[int, str] = {}
        """Open text and reasoning blocks by ``contentBlockIndex``: ``"text"`` or
        ``"thinking"``; tool calls are the assembler's."""
        self.tools = ToolCallAssembler()


class BedrockDialect(ChatDialect):
    """Amazon Bedrock ``ConverseStream`` (``POST /model/{modelId}/converse-stream``)."""

    name = "bedrock"

    def frame_decoder(self, max_frame_size: int) -> EventStreamFrameDecoder:
        """The body is an AWS event stream: one frame per message."""
        return EventStreamFrameDecoder(max_frame_size)

    def secrets(self, *, api_key: str | None = None, api_url: str | None = None) -> list[str]:
        """Without ``api_key``: the AWS credentials SigV4 will sign with (for the redactor)."""
        if api_key:
            return []
        return aws_auth.credential_secrets()

    def request_for(self, request: ChatRequest, endpoint: Endpoint) -> HttpRequest:
        """The ConverseStream request (:func:`converse_stream_request`)."""
        return converse_stream_request(request, endpoint)

    def parse_frame(self, ctx: ChatStreamContext, frame: Any) -> None:
        """Translate one ConverseStream event (``{"<type>": payload}``) into events."""
        try:  # the commonest frame, a text delta of an open text block, sent right here
            body = frame["contentBlockDelta"]
            text = body["delta"]["text"]
            index = body["contentBlockIndex"]
            if type(text) is str and ctx.state[_STATE_KEY].blocks.get(index) == "text":
                if text:
                    ctx.send(_TEXT_DELTA, text, index=index, raw=frame)
                return
        except (KeyError, TypeError):
            pass
        frame = expect_object(frame)
        if len(frame) != 1:
            ctx.send(EVENT_TYPES.RAW, raw_type="event", raw=frame)
            return
        ((kind, payload),) = frame.items()
        stream = ctx.state_of(_STATE_KEY, _Stream)
        handler = _EVENT_HANDLERS.get(kind)
        if handler is not None:
            handler(ctx, stream, _mapping(payload), frame)
        elif kind == "error" or kind.endswith("Exception"):
            ctx.fail(_provider_error(kind, payload))
        else:
            ctx.send(EVENT_TYPES.RAW, raw_type=kind, raw=frame)

    def end_of_stream(self, ctx: ChatStreamContext) -> None:
        """After the completion signal, close blocks the provider left open."""
        stream = ctx.state.get(_STATE_KEY)
        if stream is not None and stream.stopped:
            _close_all(ctx, stream)

    def error_message(self, body: Any) -> str | None:
        """Bedrock's HTTP error body: ``{"message": ...}`` (or ``Message``)."""
        if isinstance(body, Mapping) and isinstance(body.get("Message"), str):
            return str(body["Message"])
        return super().error_message(body)


# ---------------------------------------------------------------- stream events

_Handler = Callable[[ChatStreamContext, _Stream, Mapping[str, Any], Mapping[str, Any]], None]


def _on_message_start(
    ctx: ChatStreamContext, stream: _Stream, payload: Mapping[str, Any], frame: Mapping[str, Any]
) -> None:
    if stream.stopped:  # another response of a recorded tool loop
        _close_all(ctx, stream)
        ctx.next_response()
        stream = ctx.state_of(_STATE_KEY, _Stream)
    stream.started = True


def _on_block_start(
    ctx: ChatStreamContext, stream: _Stream, payload: Mapping[str, Any], frame: Mapping[str, Any]
) -> None:
    index = _index(payload.get("contentBlockIndex"))
    tool_use = _mapping(payload.get("start")).get("toolUse")
    if not isinstance(tool_use, dict):
        ctx.send(EVENT_TYPES.RAW, index=index, raw_type="contentBlockStart", raw=frame)
        return
    _close(ctx, stream, index)
    tool_id = tool_use.get("toolUseId")
    name = tool_use.get("name")
    stream.tools.start(
        ctx,
        index,
        id=tool_id if isinstance(tool_id, str) else None,
        name=name if isinstance(name, str) else "",
        raw=frame,
    )


def _on_block_delta(
    ctx: ChatStreamContext, stream: _Stream, payload: Mapping[str, Any], frame: Mapping[str, Any]
) -> None:
    index = _index(payload.get("contentBlockIndex"))
    delta = _mapping(payload.get("delta"))
    handled = False
    for key, value in delta.items():
        handler = _DELTA_HANDLERS.get(key)
        if handler is not None:
            handler(ctx, stream, index, value, frame)
            handled = True
    if not handled:
        ctx.send(
            EVENT_TYPES.RAW, index=index, raw_type=f"contentBlockDelta:{_keys(delta)}", raw=frame
        )


def _on_block_stop(
    ctx: ChatStreamContext, stream: _Stream, payload: Mapping[str, Any], frame: Mapping[str, Any]
) -> None:
    index = _index(payload.get("contentBlockIndex"))
    if not _close(ctx, stream, index, frame):
        ctx.send(EVENT_TYPES.RAW, index=index, raw_type="contentBlockStop", raw=frame)


def _on_message_stop(
    ctx: ChatStreamContext, stream: _Stream, payload: Mapping[str, Any], frame: Mapping[str, Any]
) -> None:
    _close_all(ctx, stream)
    reason = payload.get("stopReason")
    reason = reason if isinstance(reason, str) else None
    if reason in _FILTER_REASONS:
        ctx.send(EVENT_TYPES.CONTENT_FILTER, text=reason, sub_type=reason, raw=frame)
    stream.stopped = True
    ctx.finish(reason)


def _on_metadata(
    ctx: ChatStreamContext, stream: _Stream, payload: Mapping[str, Any], frame: Mapping[str, Any]
) -> None:
    usage = payload.get("usage")
    if isinstance(usage, dict):
        ctx.send(EVENT_TYPES.USAGE, usage=_usage(usage), raw=frame)
    latency = _mapping(payload.get("metrics")).get("latencyMs")
    if isinstance(latency, (int, float)) and not isinstance(latency, bool):
        ctx.send(
            EVENT_TYPES.CUSTOM,
            sub_type="latency",
            text=f"{latency} ms",
            attrs={"latency_ms": latency},
            raw=frame,
        )
    trace = payload.get("trace")
    if isinstance(trace, dict) and trace:
        ctx.send(EVENT_TYPES.CUSTOM, sub_type="trace", attrs=trace, raw=frame)


_EVENT_HANDLERS: dict[str, _Handler] = {
    "messageStart": _on_message_start,
    "contentBlockStart": _on_block_start,
    "contentBlockDelta": _on_block_delta,
    "contentBlockStop": _on_block_stop,
    "messageStop": _on_message_stop,
    "metadata": _on_metadata,
}


# ---------------------------------------------------------------- deltas


def _open(ctx: ChatStreamContext, stream: _Stream, index: int, kind: str) -> None:
    """Make the block at ``index`` an open block of ``kind``, closing another one there."""
    if stream.blocks.get(index) == kind:
        return
    _close(ctx, stream, index)
    stream.blocks[index] = kind
    ctx.send(EVENT_TYPES.TEXT_START if kind == "text" else EVENT_TYPES.THINKING_START, index=index)


def _text_delta(
    ctx: ChatStreamContext, stream: _Stream, index: int, value: Any, frame: Mapping[str, Any]
) -> None:
    if isinstance(value, str):
        _open(ctx, stream, index, "text")
        if value:
            ctx.send(_TEXT_DELTA, value, index=index, raw=frame)


def _tool_delta(
    ctx: ChatStreamContext, stream: _Stream, index: int, value: Any, frame: Mapping[str, Any]
) -> None:
    fragment = _mapping(value).get("input")
    if isinstance(fragment, str) and fragment:
        stream.tools.delta(ctx, index, fragment, raw=frame)


def _reasoning_delta(
    ctx: ChatStreamContext, stream: _Stream, index: int, value: Any, frame: Mapping[str, Any]
) -> None:
    reasoning = _mapping(value)
    text = reasoning.get("text")
    if isinstance(text, str):
        _open(ctx, stream, index, "thinking")
        if text:
            ctx.send(EVENT_TYPES.THINKING_DELTA, text, index=index, raw=frame)
    signature = reasoning.get("signature")
    if isinstance(signature, str) and signature:
        _open(ctx, stream, index, "thinking")
        ctx.send(EVENT_TYPES.THINKING_SIGNATURE, signature, index=index, raw=frame)
    redacted = reasoning.get("redactedContent")
    if isinstance(redacted, str) and redacted:
        ctx.send(EVENT_TYPES.THINKING_REDACTED, redacted, index=index, raw=frame)


def _citation_delta(
    ctx: ChatStreamContext, stream: _Stream, index: int, value: Any, frame: Mapping[str, Any]
) -> None:
    if isinstance(value, dict):
        ctx.send(EVENT_TYPES.CITATION, index=index, citation=_citation(value), raw=frame)


_DeltaHandler = Callable[[ChatStreamContext, _Stream, int, Any, Mapping[str, Any]], None]

_DELTA_HANDLERS: dict[str, _DeltaHandler] = {
    "text": _text_delta,
    "toolUse": _tool_delta,
    "reasoningContent": _reasoning_delta,
    "citation": _citation_delta,
}


def _close(
    ctx: ChatStreamContext, stream: _Stream, index: int, frame: Mapping[str, Any] | None = None
) -> bool:
    """Close whatever is open at ``index``; whether something was."""
    kind = stream.blocks.pop(index, None)
    if kind == "text":
        ctx.send(EVENT_TYPES.TEXT_END, index=index, raw=frame)
    elif kind == "thinking":
        ctx.send(EVENT_TYPES.THINKING_END, index=index, raw=frame)
    elif index in stream.tools:
        stream.tools.end(ctx, index, raw=frame)
    else:
        return False
    return True


def _close_all(ctx: ChatStreamContext, stream: _Stream) -> None:
    for index in list(stream.blocks):
        _close(ctx, stream, index)
    stream.tools.end_all(ctx)


# ---------------------------------------------------------------- value mapping


def _provider_error(kind: str, payload: Any) -> ProviderError:
    """``provider error: <message>``; the type is ``provider_error["type"]``."""
    fields = dict(payload) if isinstance(payload, dict) else {"message": payload}
    message = fields.get("message") or fields.get("Message") or kind
    text = f"provider error: {message}"
    original = fields.get("originalMessage")
    if isinstance(original, str) and original and original != message:
        status = fields.get("originalStatusCode")
        text += f" (the model said{f' {status}' if status else ''}: {original})"
    return ProviderError(text, provider_error={"type": kind, **fields})


def _usage(raw: Mapping[str, Any]) -> Usage:
    cache_read = _int(raw.get("cacheReadInputTokens"))
    cache_write = _int(raw.get("cacheWriteInputTokens"))
    prompt = _int(raw.get("inputTokens")) + cache_read + cache_write
    completion = _int(raw.get("outputTokens"))
    total = raw.get("totalTokens")
    return make_usage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=total if type(total) is int else None,
        cache_read_input_tokens=cache_read,
        cache_creation_input_tokens=cache_write,
        source=dict(raw),
    )


def _citation(raw: Mapping[str, Any]) -> Citation:
    """A Citation from a ``CitationsDelta``: title, source, the cited text, the location."""
    location = _mapping(raw.get("location"))
    kind, where = next(iter(location.items()), (None, {}))
    where = _mapping(where)
    cited = "".join(
        item["text"]
        for item in raw.get("sourceContent") or ()
        if isinstance(item, dict) and isinstance(item.get("text"), str)
    )
    url = where.get("url")
    return new_citation(
        url if isinstance(url, str) else _opt_str(raw.get("source")),
        _opt_str(raw.get("title")),
        cited or None,
        _opt_int(where.get("start")),
        _opt_int(where.get("end")),
        _opt_int(where.get("documentIndex", where.get("searchResultIndex"))),
        None,
        kind,
        raw,
    )


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def _keys(value: Mapping[str, Any]) -> str:
    return ",".join(value) or "empty"


def _int(value: Any) -> int:
    return value if type(value) is int else 0


def _opt_int(value: Any) -> int | None:
    return value if type(value) is int else None


def _index(value: Any) -> int:
    return value if type(value) is int else -1


def _opt_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None
