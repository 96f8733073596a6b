"""The Amazon Bedrock ConverseStream request (``"bedrock"``): the URL, auth headers (an API
key, or AWS SigV4) and the Converse body."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit

import orjson

from ..event_model.messages import ChatRequest, SystemMessage, ToolMessage, ToolSpec, UserMessage
from ..event_model.results import AssistantMessage, FileBlock, ImageBlock, TextBlock
from . import aws_auth
from .output import closed_format
from .request import Endpoint, HttpRequest, bearer, request_headers
from .writing import data_url_parts, redacted_thinking, thinking_signature, tool_definition

if TYPE_CHECKING:
    from ..event_model.messages import OutputFormat

__all__ = ["converse_stream_request", "converse_stream_url", "text_format"]

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


def converse_stream_request(request: ChatRequest, endpoint: Endpoint) -> HttpRequest:
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
    ``thinking``). A structured answer goes in ``outputConfig.textFormat``
    (:func:`text_format`). A ``toolConfig`` without tools is never sent (Converse refuses
    ``tools: []``): a tool choice with no tool offered is dropped.

    ``api_key`` (a Bedrock API key) is sent as ``Authorization: Bearer``; without it
    (and without an ``Authorization`` in ``headers``) the request is signed with
    SigV4 (the ``bedrock`` extra).
    """
    api_key = endpoint.api_key
    url = converse_stream_url(endpoint.url, request.model)
    body = _body(request)
    defaults = {"Accept": "application/vnd.amazon.eventstream", **bearer(api_key)}
    all_headers = request_headers(defaults, endpoint.headers)
    if not api_key and not any(name.lower() == "authorization" for name in all_headers):
        all_headers = aws_auth.sign(url, orjson.dumps(body), all_headers)
    return HttpRequest(url=url, headers=all_headers, body=body)


def converse_stream_url(api_url: str, model: str) -> str:
    """``api_url`` when it is a ``.../converse-stream`` endpoint; else the model's endpoint
    under it: ``{api_url}/model/{model}/converse-stream`` (e.g. from
    ``https://bedrock-runtime.us-east-1.amazonaws.com``)."""
    if urlsplit(api_url).path.rstrip("/").endswith("/converse-stream"):
        return api_url
    # ":" stays as it is (model ids end in ":0"): aiohttp would unquote a "%3A" after
    # the request was signed with it.
    return f"{api_url.rstrip('/')}/model/{quote(model, safe=':')}/converse-stream"


def _body(request: ChatRequest) -> dict[str, Any]:
    system, messages = _messages(request.messages)
    body: dict[str, Any] = {"messages": messages}
    if system:
        body["system"] = system
    if request.tools:
        body["toolConfig"] = {"tools": [_tool(tool) for tool in request.tools]}
    if request.output is not None:
        body["outputConfig"] = {"textFormat": text_format(request.output)}
    _apply_options(body, request.options)
    config = body.get("toolConfig")
    if isinstance(config, dict) and not config.get("tools"):
        # Converse refuses a toolConfig without tools (a choice among none means nothing)
        del body["toolConfig"]
    return body


def text_format(output: OutputFormat) -> dict[str, Any]:
    """Converse's ``outputConfig.textFormat`` for ``output``: a ``json_schema`` whose schema
    (closed, as Claude takes it: :func:`~.output_schema.closed_schema`) is sent as JSON
    text."""
    schema = closed_format(output)["schema"]
    definition: dict[str, Any] = {"schema": orjson.dumps(schema).decode(), "name": output.name}
    if output.description:
        definition["description"] = output.description
    return {"type": "json_schema", "structure": {"jsonSchema": definition}}


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
        body["inferenceConfig"] = {**inference, **_dict(body.get("inferenceConfig"))}
    if extra:
        body["additionalModelRequestFields"] = {
            **extra,
            **_dict(body.get("additionalModelRequestFields")),
        }


def _tool(tool: ToolSpec | Mapping[str, Any]) -> dict[str, Any]:
    """A ``toolSpec``; a mapping (a system tool, a cache point) is sent as it is."""
    if isinstance(tool, Mapping):
        return dict(tool)
    return {"toolSpec": tool_definition(tool, "inputSchema", {"json": dict(tool.parameters)})}


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
    inline = data_url_parts(url)
    if inline is not None:
        return inline[1], inline[0] or mime_type
    raise ValueError("the Converse API takes images and documents as data, not URLs")


def _assistant_content(message: AssistantMessage) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = []
    signature = thinking_signature(message)
    if message.thinking and signature:
        reasoning = {"reasoningText": {"text": message.thinking, "signature": signature}}
        content.append({"reasoningContent": reasoning})
    for data in redacted_thinking(message):
        content.append({"reasoningContent": {"redactedContent": data}})
    if message.text:
        content.append({"text": message.text})
    for call in message.tool_calls:
        tool_use = {"toolUseId": call.id, "name": call.name, "input": dict(call.arguments)}
        content.append({"toolUse": tool_use})
    return content


def _dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}
