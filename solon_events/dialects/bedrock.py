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

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import quote, urlsplit

import orjson

from ..core.tool_calls import ToolCallAssembler
from ..errors import ProviderError
from ..events import TYPES
from ..eventstream import EventStreamFrameDecoder
from ..messages import ChatRequest, SystemMessage, ToolMessage, ToolSpec, UserMessage
from ..results import (
    AssistantMessage,
    Citation,
    FileBlock,
    ImageBlock,
    TextBlock,
    Usage,
    new_citation,
)
from . import aws_auth
from .base import ChatDialect
from .context import ChatStreamContext
from .reading import expect_object, make_usage
from .request import Endpoint, HttpRequest, request_headers

__all__ = ["BedrockDialect", "converse_stream_url"]

_T = TYPES
_TEXT_DELTA = _T.TEXT_DELTA
_STATE_KEY = "bedrock"
_FILTER_REASONS = frozenset({"guardrail_intervened", "content_filtered"})
_INFERENCE_KEYS = {
    "maxTokens": "maxTokens",
    "max_tokens": "maxTokens",
    "temperature": "temperature",
    "topP": "topP",
    "top_p": "topP",
    "stopSequences": "stopSequences",
    "stop_sequences": "stopSequences",
    "stop": "stopSequences",
}
_TOP_LEVEL_KEYS = frozenset(
    {
        "additionalModelRequestFields",
        "additionalModelResponseFieldPaths",
        "guardrailConfig",
        "inferenceConfig",
        "outputConfig",
        "performanceConfig",
        "promptVariables",
        "requestMetadata",
        "serviceTier",
        "system",
        "messages",
        "toolConfig",
    }
)


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
        """The ConverseStream request: URL (:func:`converse_stream_url`), auth, JSON body.

        The body holds ``system`` (one text block per system message), ``messages``
        (user turns of ``text``, ``image`` and ``document`` blocks; assistant turns of
        ``reasoningContent`` (sent back only with its signature), ``text`` and ``toolUse``;
        tool results as ``toolResult`` blocks of a user turn; consecutive turns of one role
        merged, as Converse demands alternating roles), ``toolConfig`` from the tools, and
        ``inferenceConfig`` from ``request.options`` (``maxTokens``/``max_tokens``,
        ``temperature``, ``topP``/``top_p``, ``stopSequences``/``stop``). Converse's own
        top-level fields in the options (``guardrailConfig``, ``toolConfig``,
        ``additionalModelRequestFields``, ...) are sent as they are, ``tool_choice``/
        ``toolChoice`` goes into ``toolConfig``, and any other option into
        ``additionalModelRequestFields`` (the model's own parameters, e.g. ``top_k`` or
        ``thinking``).

        ``api_key`` (a Bedrock API key) is sent as ``Authorization: Bearer``; without it
        (and without an ``Authorization`` in ``headers``) the request is signed with
        SigV4 (the ``bedrock`` extra).
        """
        api_key, headers = endpoint.api_key, endpoint.headers
        url = converse_stream_url(endpoint.url, request.model)
        body = _body(request)
        defaults = {"Accept": "application/vnd.amazon.eventstream"}
        if api_key:
            defaults["Authorization"] = f"Bearer {api_key}"
        all_headers = request_headers(defaults, headers)
        if not api_key and not any(name.lower() == "authorization" for name in all_headers):
            all_headers = aws_auth.sign(url, orjson.dumps(body), all_headers)
        return HttpRequest(url=url, headers=all_headers, body=body)

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
            ctx.send(_T.RAW, raw_type="event", raw=frame)
            return
        ((kind, payload),) = frame.items()
        stream = ctx.state_of(_STATE_KEY, _Stream)
        handler = _EVENT_HANDLERS.get(kind)
        if handler is not None:
            handler(ctx, stream, _mapping(payload), frame)
        elif kind == "error" or kind.endswith("Exception"):
            ctx.fail(_provider_error(kind, payload))
        else:
            ctx.send(_T.RAW, raw_type=kind, raw=frame)

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


def converse_stream_url(api_url: str, model: str) -> str:
    """``api_url`` when it is a ``.../converse-stream`` endpoint; else the model's endpoint
    under it: ``{api_url}/model/{model}/converse-stream`` (e.g. from
    ``https://bedrock-runtime.us-east-1.amazonaws.com``)."""
    if urlsplit(api_url).path.rstrip("/").endswith("/converse-stream"):
        return api_url
    # ":" stays as it is (model ids end in ":0"): aiohttp would unquote a "%3A" after
    # the request was signed with it.
    return f"{api_url.rstrip('/')}/model/{quote(model, safe=':')}/converse-stream"


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
        ctx.send(_T.RAW, index=index, raw_type="contentBlockStart", raw=frame)
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
        ctx.send(_T.RAW, index=index, raw_type=f"contentBlockDelta:{_keys(delta)}", raw=frame)


def _on_block_stop(
    ctx: ChatStreamContext, stream: _Stream, payload: Mapping[str, Any], frame: Mapping[str, Any]
) -> None:
    index = _index(payload.get("contentBlockIndex"))
    if not _close(ctx, stream, index, frame):
        ctx.send(_T.RAW, index=index, raw_type="contentBlockStop", raw=frame)


def _on_message_stop(
    ctx: ChatStreamContext, stream: _Stream, payload: Mapping[str, Any], frame: Mapping[str, Any]
) -> None:
    _close_all(ctx, stream)
    reason = payload.get("stopReason")
    reason = reason if isinstance(reason, str) else None
    if reason in _FILTER_REASONS:
        ctx.send(_T.CONTENT_FILTER, text=reason, sub_type=reason, raw=frame)
    stream.stopped = True
    ctx.finish(reason)


def _on_metadata(
    ctx: ChatStreamContext, stream: _Stream, payload: Mapping[str, Any], frame: Mapping[str, Any]
) -> None:
    usage = payload.get("usage")
    if isinstance(usage, dict):
        ctx.send(_T.USAGE, usage=_usage(usage), raw=frame)
    latency = _mapping(payload.get("metrics")).get("latencyMs")
    if isinstance(latency, (int, float)) and not isinstance(latency, bool):
        ctx.send(
            _T.CUSTOM,
            sub_type="latency",
            text=f"{latency} ms",
            attrs={"latency_ms": latency},
            raw=frame,
        )
    trace = payload.get("trace")
    if isinstance(trace, dict) and trace:
        ctx.send(_T.CUSTOM, sub_type="trace", attrs=trace, raw=frame)


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
    ctx.send(_T.TEXT_START if kind == "text" else _T.THINKING_START, index=index)


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
            ctx.send(_T.THINKING_DELTA, text, index=index, raw=frame)
    signature = reasoning.get("signature")
    if isinstance(signature, str) and signature:
        _open(ctx, stream, index, "thinking")
        ctx.send(_T.THINKING_SIGNATURE, signature, index=index, raw=frame)
    redacted = reasoning.get("redactedContent")
    if isinstance(redacted, str) and redacted:
        ctx.send(_T.THINKING_REDACTED, redacted, index=index, raw=frame)


def _citation_delta(
    ctx: ChatStreamContext, stream: _Stream, index: int, value: Any, frame: Mapping[str, Any]
) -> None:
    if isinstance(value, dict):
        ctx.send(_T.CITATION, index=index, citation=_citation(value), raw=frame)


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
        ctx.send(_T.TEXT_END, index=index, raw=frame)
    elif kind == "thinking":
        ctx.send(_T.THINKING_END, index=index, raw=frame)
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


# ---------------------------------------------------------------- request building


def _body(request: ChatRequest) -> dict[str, Any]:
    system, messages = _messages(request.messages)
    body: dict[str, Any] = {"messages": messages}
    if system:
        body["system"] = system
    if request.tools:
        body["toolConfig"] = {"tools": [_tool(tool) for tool in request.tools]}
    _apply_options(body, request.options)
    return body


def _apply_options(body: dict[str, Any], options: Mapping[str, Any]) -> None:
    inference: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for key, value in options.items():
        if key in _INFERENCE_KEYS:
            if key in ("stop", "stop_sequences", "stopSequences") and isinstance(value, str):
                value = [value]
            inference[_INFERENCE_KEYS[key]] = value
        elif key in ("tool_choice", "toolChoice"):
            body.setdefault("toolConfig", {"tools": []})["toolChoice"] = value
        elif key in _TOP_LEVEL_KEYS:
            if isinstance(value, Mapping) and isinstance(body.get(key), dict):
                body[key] = {**body[key], **value}
            else:
                body[key] = value
        else:
            extra[key] = value
    if inference:
        body["inferenceConfig"] = {**inference, **_mapping(body.get("inferenceConfig"))}
    if extra:
        body["additionalModelRequestFields"] = {
            **extra,
            **_mapping(body.get("additionalModelRequestFields")),
        }


def _tool(tool: ToolSpec | Mapping[str, Any]) -> dict[str, Any]:
    """A ``toolSpec``; a mapping (a system tool, a cache point) is sent as it is."""
    if isinstance(tool, Mapping):
        return dict(tool)
    spec: dict[str, Any] = {"name": tool.name}
    if tool.description:
        spec["description"] = tool.description
    spec["inputSchema"] = {"json": dict(tool.parameters)}
    return {"toolSpec": spec}


def _messages(messages: Sequence[Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    system: list[dict[str, Any]] = []
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, SystemMessage):
            if message.text:
                system.append({"text": message.text})
            continue
        if isinstance(message, ToolMessage):
            role, content = "user", [_tool_result(message)]
        elif isinstance(message, UserMessage):
            role, content = "user", _user_content(message)
        elif isinstance(message, AssistantMessage):
            role, content = "assistant", _assistant_content(message)
        else:
            raise TypeError(f"cannot send a {type(message).__name__} to the Converse API")
        if not content:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(content)
        else:
            out.append({"role": role, "content": content})
    return system, out


def _tool_result(message: ToolMessage) -> dict[str, Any]:
    result: dict[str, Any] = {
        "toolUseId": message.tool_call_id,
        "content": [{"text": message.content or " "}],
    }
    if message.is_error:
        result["status"] = "error"
    return {"toolResult": result}


def _user_content(message: UserMessage) -> list[dict[str, Any]]:
    content = [_content_block(block) for block in message.blocks]
    if message.text:
        content.append({"text": message.text})
    return content


def _content_block(block: Any) -> dict[str, Any]:
    """A user content block: an image or document (base64 ``bytes``), text, or a mapping."""
    if isinstance(block, (ImageBlock, FileBlock)):
        data, mime_type = _inline_data(block.data, block.url, block.mime_type)
        source = {
            "format": (mime_type or "").rpartition("/")[2] or "png",
            "source": {"bytes": data},
        }
        if isinstance(block, ImageBlock):
            return {"image": source}
        return {"document": {**source, "name": block.name or "document"}}
    if isinstance(block, TextBlock):
        return {"text": block.text}
    if not isinstance(block, Mapping):
        raise TypeError(f"cannot send a {type(block).__name__} block to the Converse API")
    return dict(block)


def _inline_data(
    data: str | None, url: str | None, mime_type: str | None
) -> tuple[str, str | None]:
    if data:
        return data, mime_type
    if url and url.startswith("data:") and ";base64," in url:
        header, _, payload = url.partition(";base64,")
        return payload, header[5:] or mime_type
    raise ValueError("the Converse API takes images and documents as data, not URLs")


def _assistant_content(message: AssistantMessage) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = []
    signature = message.metadata.get("thinking_signature")
    if message.thinking and isinstance(signature, str) and signature:
        reasoning = {"reasoningText": {"text": message.thinking, "signature": signature}}
        content.append({"reasoningContent": reasoning})
    redacted = message.metadata.get("redacted_thinking")
    for data in [redacted] if isinstance(redacted, str) else _list(redacted):
        content.append({"reasoningContent": {"redactedContent": data}})
    if message.text:
        content.append({"text": message.text})
    for call in message.tool_calls:
        tool_use = {"toolUseId": call.id, "name": call.name, "input": dict(call.arguments)}
        content.append({"toolUse": tool_use})
    return content


def _list(value: Any) -> Iterable[Any]:
    return value if isinstance(value, (list, tuple)) else ()
