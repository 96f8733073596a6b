"""The Amazon Bedrock ConverseStream dialect (``"bedrock"``).

The body is an AWS event stream (:mod:`solon_events.wire.eventstream`), not SSE: each message
becomes the frame ``{"<event type>": <payload>}``, the shape botocore gives its callers.
What the frames mean:

- ``messageStart``: a new response; one after a ``messageStop`` (a recorded tool loop)
  starts the next step.
- ``contentBlockStart`` with ``start.toolUse`` (``toolUseId``, ``name``) opens a tool call
  (TOOL_CALL_START, the call's position in the step as ``index``); one whose ``type`` is
  ``server_tool_use`` (a tool Bedrock runs itself) opens SERVER_TOOL_START instead, whose
  ``sub_type`` is the tool's name and whose ``toolUse.input`` deltas are
  SERVER_TOOL_ARGS_DELTA: the tool loop never runs it. ``start.toolResult`` (``toolUseId``,
  ``type``, ``status``) opens that server tool's result, whose ``toolResult`` deltas (a list
  of ``text`` / ``json`` items) are gathered until the block stops: then one
  SERVER_TOOL_RESULT (the call's ``tool_call_id`` and ``sub_type``, its ``tool_call`` with
  the complete input, ``text`` the result's text items, ``attrs["is_error"]`` for
  ``status`` ``error``, ``raw`` the whole result block with its ``content`` items).
  ``start.image`` (``format``) opens an image: each ``image`` delta's ``source.bytes``
  (base64) is a MEDIA_PARTIAL holding that piece, and the block's stop a MEDIA_DONE whose
  ``ImageBlock`` holds the whole image (or the ``source.s3Location`` URI as ``url``; an
  ``error`` delta's message is ``attrs["error"]``, with no block if no image came).
  Other starts are RAW.
- ``contentBlockDelta``: ``text`` -> TEXT_DELTA, ``toolUse.input`` -> TOOL_CALL_ARGS_DELTA,
  ``reasoningContent.text`` -> THINKING_DELTA, ``.signature`` -> THINKING_SIGNATURE,
  ``.redactedContent`` (base64) -> THINKING_REDACTED, ``citation`` -> CITATION,
  ``toolResult`` and ``image`` as above. Text and reasoning blocks open at their first
  delta (Bedrock sends no start for them) with the ``contentBlockIndex`` as ``index``;
  anything else is RAW.
- ``contentBlockStop`` closes the block (TEXT_END, THINKING_END, TOOL_CALL_END,
  SERVER_TOOL_RESULT, MEDIA_DONE).
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

import base64
from collections.abc import Callable, Mapping
from typing import Any

from ..event_model.errors import ProviderError
from ..event_model.events import EVENT_TYPES
from ..event_model.messages import ChatRequest, OutputFormat, OutputMode
from ..event_model.results import (
    Citation,
    ImageBlock,
    ToolCall,
    Usage,
    new_citation,
    new_tool_call,
)
from ..wire.eventstream import EventStreamFrameDecoder
from . import aws_auth
from .base import ChatDialect
from .bedrock_request import converse_stream_request, converse_stream_url
from .context import ChatStreamContext
from .output import claude_output_mode
from .reading import Raw, expect_object, image_mime, make_usage
from .request import Endpoint, HttpRequest
from .tool_calls import ToolCallAssembler

__all__ = ["BedrockDialect", "converse_stream_url"]

_TEXT_DELTA = EVENT_TYPES.TEXT_DELTA
_STATE_KEY = "bedrock"
_FILTER_REASONS = frozenset({"guardrail_intervened", "content_filtered"})


class _Block:
    """An open server tool call, server tool result or image: what its deltas gathered."""

    __slots__ = ("fields", "id", "kind", "name", "parts")

    def __init__(self, kind: str, id: str | None = None, name: str = "") -> None:
        self.kind = kind
        """``"server"``, ``"result"`` or ``"image"``."""
        self.id = id
        self.name = name
        self.fields: dict[str, Any] = {}
        """The start's fields (a result's ``type`` and ``status``, an image's ``format``),
        and an image's ``url`` and ``error``."""
        self.parts: list[Any] = []
        """Input fragments, result items or image bytes, in order."""


class _Stream:
    """The dialect's state for one step: open blocks, tool calls, the stop."""

    __slots__ = ("blocks", "others", "server_calls", "started", "stopped", "tools")

    def __init__(self) -> None:
        self.started = False
        self.stopped = False
        """Whether ``messageStop`` came (a later ``messageStart`` is another response)."""
        self.blocks: dict[int, str] = {}
        """Open text and reasoning blocks by ``contentBlockIndex``: ``"text"`` or
        ``"thinking"``; tool calls are the assembler's."""
        self.others: dict[int, _Block] = {}
        """Open server tool calls, server tool results and images by ``contentBlockIndex``."""
        self.server_calls: dict[str | None, ToolCall] = {}
        """Server tool calls whose input is complete, by ``toolUseId``."""
        self.tools = ToolCallAssembler()


class BedrockDialect(ChatDialect):
    """Amazon Bedrock ``ConverseStream`` (``POST /model/{modelId}/converse-stream``)."""

    name = "bedrock"

    def frame_decoder(
        self, max_frame_size: int, *, data_only: bool = False
    ) -> EventStreamFrameDecoder:
        """The body is an AWS event stream: one frame per message (its payload's bytes,
        with or without ``data_only``)."""
        return EventStreamFrameDecoder(max_frame_size)

    def secrets(self, *, api_key: str | None = None, api_url: str | None = None) -> list[str]:
        """Without ``api_key``: the AWS credentials SigV4 will sign with (for the redactor)."""
        if api_key:
            return []
        return aws_auth.credential_secrets()

    native_output = True

    def request_for(self, request: ChatRequest, endpoint: Endpoint) -> HttpRequest:
        """The ConverseStream request (:func:`converse_stream_request`)."""
        return converse_stream_request(request, endpoint)

    def output_mode(self, model: str, output: OutputFormat) -> OutputMode:
        """``"native"`` (``outputConfig.textFormat``) for a Claude model that takes it
        (Opus 4.1, every Claude from 4.5 on) and a schema it can hold the answer to;
        ``"tool"`` (a forced tool) for any other model, and without a schema."""
        if "claude" not in model:
            return "tool"
        return claude_output_mode(model, output)

    def forced_tool(self, name: str | None) -> dict[str, Any]:
        """``toolConfig.toolChoice``: the tool ``name``, or ``any``."""
        return {"tool_choice": {"any": {}} if name is None else {"tool": {"name": name}}}

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

_Handler = Callable[[ChatStreamContext, _Stream, Raw, Raw], None]


def _on_message_start(ctx: ChatStreamContext, stream: _Stream, payload: Raw, frame: Raw) -> None:
    if stream.stopped:  # another response of a recorded tool loop
        _close_all(ctx, stream)
        ctx.next_response()
        stream = ctx.state_of(_STATE_KEY, _Stream)
    stream.started = True


def _on_block_start(ctx: ChatStreamContext, stream: _Stream, payload: Raw, frame: Raw) -> None:
    index = _index(payload.get("contentBlockIndex"))
    start = _mapping(payload.get("start"))
    for key, value in start.items():
        opener = _BLOCK_STARTS.get(key)
        if opener is not None and isinstance(value, dict):
            _close(ctx, stream, index)
            opener(ctx, stream, index, value, frame)
            return
    ctx.send(EVENT_TYPES.RAW, index=index, raw_type="contentBlockStart", raw=frame)


def _start_tool_use(
    ctx: ChatStreamContext, stream: _Stream, index: int, tool_use: Raw, frame: Raw
) -> None:
    tool_id = _opt_str(tool_use.get("toolUseId"))
    name = _opt_str(tool_use.get("name")) or ""
    if tool_use.get("type") != "server_tool_use":
        stream.tools.start(ctx, index, id=tool_id, name=name, raw=frame)
        return
    stream.others[index] = _Block("server", tool_id, name)
    ctx.send(
        EVENT_TYPES.SERVER_TOOL_START,
        index=index,
        tool_call_id=tool_id,
        sub_type=name or None,
        tool_call=new_tool_call(tool_id, name, {}, "", index),
        raw=frame,
    )


def _start_tool_result(
    ctx: ChatStreamContext, stream: _Stream, index: int, result: Raw, frame: Raw
) -> None:
    block = stream.others[index] = _Block("result", _opt_str(result.get("toolUseId")))
    block.fields.update(result)


def _start_image(
    ctx: ChatStreamContext, stream: _Stream, index: int, image: Raw, frame: Raw
) -> None:
    stream.others[index] = block = _Block("image")
    block.fields["format"] = image.get("format")


_BlockStart = Callable[[ChatStreamContext, _Stream, int, Raw, Raw], None]

_BLOCK_STARTS: dict[str, _BlockStart] = {
    "toolUse": _start_tool_use,
    "toolResult": _start_tool_result,
    "image": _start_image,
}


def _on_block_delta(ctx: ChatStreamContext, stream: _Stream, payload: Raw, frame: Raw) -> None:
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


def _on_block_stop(ctx: ChatStreamContext, stream: _Stream, payload: Raw, frame: Raw) -> None:
    index = _index(payload.get("contentBlockIndex"))
    if not _close(ctx, stream, index, frame):
        ctx.send(EVENT_TYPES.RAW, index=index, raw_type="contentBlockStop", raw=frame)


def _on_message_stop(ctx: ChatStreamContext, stream: _Stream, payload: Raw, frame: Raw) -> None:
    _close_all(ctx, stream)
    reason = payload.get("stopReason")
    reason = reason if isinstance(reason, str) else None
    if reason in _FILTER_REASONS:
        ctx.send(EVENT_TYPES.CONTENT_FILTER, text=reason, sub_type=reason, raw=frame)
    stream.stopped = True
    ctx.finish(reason)


def _on_metadata(ctx: ChatStreamContext, stream: _Stream, payload: Raw, frame: Raw) -> None:
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
    ctx: ChatStreamContext, stream: _Stream, index: int, value: Any, frame: Raw
) -> None:
    if isinstance(value, str):
        _open(ctx, stream, index, "text")
        if value:
            ctx.send(_TEXT_DELTA, value, index=index, raw=frame)


def _tool_delta(
    ctx: ChatStreamContext, stream: _Stream, index: int, value: Any, frame: Raw
) -> None:
    fragment = _mapping(value).get("input")
    if not isinstance(fragment, str) or not fragment:
        return
    block = stream.others.get(index)
    if block is None or block.kind != "server":
        stream.tools.delta(ctx, index, fragment, raw=frame)
        return
    block.parts.append(fragment)
    ctx.send(
        EVENT_TYPES.SERVER_TOOL_ARGS_DELTA,
        index=index,
        tool_call_id=block.id,
        sub_type=block.name or None,
        text=fragment,
        raw=frame,
    )


def _open_other(stream: _Stream, index: int, kind: str) -> _Block:
    """The open block of ``kind`` at ``index`` (one opened here if its start never came)."""
    block = stream.others.get(index)
    if block is None or block.kind != kind:
        block = stream.others[index] = _Block(kind)
    return block


def _tool_result_delta(
    ctx: ChatStreamContext, stream: _Stream, index: int, value: Any, frame: Raw
) -> None:
    if isinstance(value, list):
        block = _open_other(stream, index, "result")
        block.parts.extend(item for item in value if isinstance(item, dict))


def _image_delta(
    ctx: ChatStreamContext, stream: _Stream, index: int, value: Any, frame: Raw
) -> None:
    image = _mapping(value)
    block = _open_other(stream, index, "image")
    source = _mapping(image.get("source"))
    data = source.get("bytes")
    if isinstance(data, str) and data:
        block.parts.append(base64.b64decode(data, validate=True))
        mime_type = image_mime(block.fields.get("format"))
        ctx.send(
            EVENT_TYPES.MEDIA_PARTIAL,
            index=index,
            block=ImageBlock(data=data, mime_type=mime_type),
            raw=frame,
        )
    uri = _mapping(source.get("s3Location")).get("uri")
    if isinstance(uri, str) and uri:
        block.fields["url"] = uri
    message = _mapping(image.get("error")).get("message")
    if isinstance(message, str):
        block.fields["error"] = message


def _reasoning_delta(
    ctx: ChatStreamContext, stream: _Stream, index: int, value: Any, frame: Raw
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
    ctx: ChatStreamContext, stream: _Stream, index: int, value: Any, frame: Raw
) -> None:
    if isinstance(value, dict):
        ctx.send(EVENT_TYPES.CITATION, index=index, citation=_citation(value), raw=frame)


_DeltaHandler = Callable[[ChatStreamContext, _Stream, int, Any, Raw], None]

_DELTA_HANDLERS: dict[str, _DeltaHandler] = {
    "text": _text_delta,
    "toolUse": _tool_delta,
    "reasoningContent": _reasoning_delta,
    "citation": _citation_delta,
    "toolResult": _tool_result_delta,
    "image": _image_delta,
}


def _close(ctx: ChatStreamContext, stream: _Stream, index: int, frame: Raw | None = None) -> bool:
    """Close whatever is open at ``index``; whether something was."""
    kind = stream.blocks.pop(index, None)
    if kind == "text":
        ctx.send(EVENT_TYPES.TEXT_END, index=index, raw=frame)
    elif kind == "thinking":
        ctx.send(EVENT_TYPES.THINKING_END, index=index, raw=frame)
    elif index in stream.tools:
        stream.tools.end(ctx, index, raw=frame)
    elif index in stream.others:
        _finish_other(ctx, stream, index, stream.others.pop(index), frame)
    else:
        return False
    return True


def _finish_other(
    ctx: ChatStreamContext,
    stream: _Stream,
    index: int,
    block: _Block,
    frame: Raw | None,
) -> None:
    """What a server tool call, a server tool result or an image sends when it stops."""
    if block.kind == "server":
        text = "".join(block.parts)
        stream.server_calls[block.id] = new_tool_call(block.id, block.name, None, text, index)
    elif block.kind == "result":
        call = stream.server_calls.get(block.id)
        kind = _opt_str(block.fields.get("type"))
        texts = [item["text"] for item in block.parts if isinstance(item.get("text"), str)]
        ctx.send(
            EVENT_TYPES.SERVER_TOOL_RESULT,
            index=index,
            tool_call_id=block.id,
            sub_type=(call.name or None) if call is not None else kind,
            raw_type=kind or "toolResult",
            tool_call=call,
            text="".join(texts) if texts else None,
            attrs={"is_error": block.fields.get("status") == "error"},
            raw={**block.fields, "content": block.parts},
        )
    else:
        ctx.send(EVENT_TYPES.MEDIA_DONE, index=index, **_image(block), raw=frame)


def _image(block: _Block) -> dict[str, Any]:
    """A stopped image's MEDIA_DONE fields: its ``block`` (None when no image came) and
    the ``attrs`` that tell an error."""
    fields = block.fields
    url = fields.get("url")
    data = base64.b64encode(b"".join(block.parts)).decode() if block.parts else None
    image = None
    if data is not None or url is not None:
        image = ImageBlock(url=url, data=data, mime_type=image_mime(fields.get("format")))
    error = fields.get("error")
    return {"block": image, "attrs": {"error": error} if error is not None else {}}


def _close_all(ctx: ChatStreamContext, stream: _Stream) -> None:
    for index in list(stream.blocks):
        _close(ctx, stream, index)
    for index in list(stream.others):
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
