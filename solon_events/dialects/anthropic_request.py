"""The Anthropic Messages API request (``"anthropic"``): the URL, headers and body posted
to ``/v1/messages``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..event_model.messages import ChatRequest, SystemMessage, ToolMessage, ToolSpec, UserMessage
from ..event_model.results import AssistantMessage, FileBlock, ImageBlock, TextBlock
from .output import closed_format, merged_option
from .request import Endpoint, HttpRequest, request_headers
from .writing import data_url_parts, redacted_thinking, thinking_signature, tool_definition

__all__ = ["ANTHROPIC_VERSION", "DEFAULT_MAX_TOKENS", "messages_request"]

ANTHROPIC_VERSION = "2023-06-01"
"""The ``anthropic-version`` header sent with every request."""

DEFAULT_MAX_TOKENS = 4096
"""``max_tokens`` when the request options give none (the API requires one)."""


def messages_request(request: ChatRequest, endpoint: Endpoint) -> HttpRequest:
    """The Messages API request: ``x-api-key`` and ``anthropic-version`` headers, JSON body.

    The body holds ``model``, ``system`` (the system messages joined by a blank line),
    ``messages``, ``tools`` and ``max_tokens`` (:data:`DEFAULT_MAX_TOKENS`, raised above a
    ``thinking.budget_tokens`` option); ``request.options`` are passed through and
    override these; ``stream`` is always true. An assistant turn's thinking is sent
    back only with its signature (``metadata["thinking_signature"]``), as the API demands;
    ``metadata["redacted_thinking"]`` (a string or a list) is sent back as
    ``redacted_thinking`` blocks. Consecutive tool results form one user turn. A
    structured answer goes in ``output_config.format`` (merged with an ``output_config``
    option, ``effort`` say).
    """
    system, messages = _messages(request.messages)
    body: dict[str, Any] = {"model": request.model, "messages": messages}
    if system is not None:
        body["system"] = system
    if request.tools:
        body["tools"] = [_tool(tool) for tool in request.tools]
    body["max_tokens"] = _default_max_tokens(request.options)
    options = dict(request.options)
    if request.output is not None:  # structured outputs, generally available: no beta header
        format = {"format": closed_format(request.output)}
        body["output_config"] = merged_option(options, "output_config", format)
        options.pop("output_config", None)
    body.update(options)
    body["stream"] = True
    headers = _headers(endpoint.api_key, endpoint.headers)
    return HttpRequest(url=endpoint.url, headers=headers, body=body)


def _headers(api_key: str | None, extra: Mapping[str, str] | None) -> dict[str, str]:
    defaults = {"Accept": "text/event-stream", "anthropic-version": ANTHROPIC_VERSION}
    if api_key:
        defaults["x-api-key"] = api_key
    return request_headers(defaults, extra)


def _default_max_tokens(options: Mapping[str, Any]) -> int:
    """:data:`DEFAULT_MAX_TOKENS`, kept above a thinking budget (the API requires it)."""
    thinking = options.get("thinking")
    budget = thinking.get("budget_tokens") if isinstance(thinking, Mapping) else None
    if isinstance(budget, int) and budget >= DEFAULT_MAX_TOKENS:
        return budget + DEFAULT_MAX_TOKENS
    return DEFAULT_MAX_TOKENS


def _tool(tool: ToolSpec | Mapping[str, Any]) -> dict[str, Any]:
    """A tool definition; a mapping (e.g. a server tool such as web search) is sent as it is."""
    if isinstance(tool, Mapping):
        return dict(tool)
    return tool_definition(tool, "input_schema", dict(tool.parameters))


def _messages(messages: Sequence[Any]) -> tuple[str | None, list[dict[str, Any]]]:
    """The ``system`` text and the ``messages`` list of a conversation."""
    system: list[str] = []
    out: list[dict[str, Any]] = []
    tool_results: list[dict[str, Any]] | None = None
    for message in messages:
        if isinstance(message, ToolMessage):
            if tool_results is None:
                tool_results = []
                out.append({"role": "user", "content": tool_results})
            tool_results.append(_tool_result(message))
            continue
        tool_results = None
        if isinstance(message, SystemMessage):
            system.append(message.text)
        elif isinstance(message, UserMessage):
            out.append({"role": "user", "content": _user_content(message)})
        elif isinstance(message, AssistantMessage):
            content = _assistant_content(message)
            if content:
                out.append({"role": "assistant", "content": content})
        else:
            raise TypeError(f"cannot send a {type(message).__name__} to the Messages API")
    return ("\n\n".join(system) if system else None), out


def _tool_result(message: ToolMessage) -> dict[str, Any]:
    block: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": message.tool_call_id,
        "content": message.content,
    }
    if message.is_error:
        block["is_error"] = True
    return block


def _user_content(message: UserMessage) -> str | list[dict[str, Any]]:
    if not message.blocks:
        return message.text
    content = [_content_block(block) for block in message.blocks]
    if message.text:
        content.append({"type": "text", "text": message.text})
    return content


def _content_block(block: Any) -> dict[str, Any]:
    """A user content block: text, image, document (file), or a ready-made mapping."""
    if isinstance(block, Mapping):
        return dict(block)
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text}
    if isinstance(block, ImageBlock):
        return {"type": "image", "source": _source(block.url, block.data, block.mime_type)}
    if isinstance(block, FileBlock):
        if block.file_id:
            return {"type": "document", "source": {"type": "file", "file_id": block.file_id}}
        return {"type": "document", "source": _source(block.url, block.data, block.mime_type)}
    raise TypeError(f"cannot send a {type(block).__name__} block to the Messages API")


def _source(url: str | None, data: str | None, mime_type: str | None) -> dict[str, Any]:
    """A base64 or url source; a ``data:`` URL becomes a base64 source."""
    if data:
        return {"type": "base64", "media_type": mime_type or "", "data": data}
    inline = data_url_parts(url)
    if inline is not None:
        return {"type": "base64", "media_type": inline[0], "data": inline[1]}
    return {"type": "url", "url": url or ""}


def _assistant_content(message: AssistantMessage) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = []
    signature = thinking_signature(message)
    if message.thinking and signature:
        content.append({"type": "thinking", "thinking": message.thinking, "signature": signature})
    for data in redacted_thinking(message):
        content.append({"type": "redacted_thinking", "data": data})
    if message.text:
        content.append({"type": "text", "text": message.text})
    for call in message.tool_calls:
        content.append(
            {"type": "tool_use", "id": call.id, "name": call.name, "input": dict(call.arguments)}
        )
    return content
