"""The OpenAI Responses API request (``"openai-responses"``): the URL, headers and body
posted to ``/v1/responses``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..event_model.messages import (
    ChatRequest,
    OutputFormat,
    SystemMessage,
    ToolMessage,
    ToolSpec,
    UserMessage,
)
from ..event_model.results import AssistantMessage, FileBlock, ImageBlock, TextBlock
from .output import merged_option, schema_for
from .request import Endpoint, HttpRequest, bearer, request_headers
from .writing import arguments_text, data_url, tool_definition, user_parts, verbatim

__all__ = ["responses_request", "text_format"]


def responses_request(request: ChatRequest, endpoint: Endpoint) -> HttpRequest:
    """A streaming Responses request; ``request.options`` override the body.

    System messages become ``system`` input messages in place, user turns ``input_text``
    / ``input_image`` / ``input_file`` parts, assistant turns an ``output_text`` message
    plus one ``function_call`` item per tool call, tool results ``function_call_output``
    items.
    """
    headers = request_headers(
        {"Accept": "text/event-stream", **bearer(endpoint.api_key)}, endpoint.headers
    )
    body: dict[str, Any] = {"model": request.model, "input": _input(request.messages)}
    if request.tools:
        body["tools"] = [_tool(spec) for spec in request.tools]
    body["stream"] = True
    options = dict(request.options)
    if request.output is not None:
        body["text"] = merged_option(options, "text", {"format": text_format(request.output)})
        options.pop("text", None)
    body.update(options)
    return HttpRequest(url=endpoint.url, headers=headers, body=body)


def text_format(output: OutputFormat) -> dict[str, Any]:
    """The Responses API's ``text.format`` for ``output``: ``json_schema`` (made strict
    where it can be: :func:`~.output_schema.strict_schema`), or ``json_object`` without a
    schema."""
    if output.schema is None:
        return {"type": "json_object"}
    schema, strict = schema_for(output, "strict")
    described = {"description": output.description} if output.description else {}
    return {"type": "json_schema", "name": output.name, **described, "schema": schema,
            "strict": strict}  # fmt: skip


def _input(messages: Iterable[Any]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for message in messages:
        items.extend(_items(message))
    return items


def _items(message: Any) -> Iterable[dict[str, Any]]:
    if isinstance(message, SystemMessage):
        return ({"type": "message", "role": "system", "content": message.text},)
    if isinstance(message, UserMessage):
        return (_user_message(message),)
    if isinstance(message, AssistantMessage):
        return _assistant_items(message)
    if isinstance(message, ToolMessage):
        return (
            {
                "type": "function_call_output",
                "call_id": message.tool_call_id,
                "output": message.content,
            },
        )
    raise TypeError(f"the openai-responses dialect cannot send a {type(message).__name__}")


def _user_message(message: UserMessage) -> dict[str, Any]:
    if not message.blocks:
        return {"type": "message", "role": "user", "content": message.text}
    parts = user_parts(message, "input_text", _input_part)
    return {"type": "message", "role": "user", "content": parts}


def _input_part(block: Any) -> dict[str, Any]:
    if isinstance(block, TextBlock):
        return {"type": "input_text", "text": block.text}
    if isinstance(block, str):
        return {"type": "input_text", "text": block}
    if isinstance(block, ImageBlock):
        url = block.url or data_url(block.data or "", block.mime_type, "image/png")
        return {"type": "input_image", "image_url": url}
    if isinstance(block, FileBlock):
        part: dict[str, Any] = {"type": "input_file"}
        if block.file_id:
            part["file_id"] = block.file_id
        elif block.url:
            part["file_url"] = block.url
        else:
            part["file_data"] = data_url(block.data or "", block.mime_type, "application/pdf")
        if block.name:
            part["filename"] = block.name
        return part
    return verbatim(block, "openai-responses", "block")


def _assistant_items(message: AssistantMessage) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if message.text:
        items.append(
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": message.text}],
            }
        )
    for call in message.tool_calls:
        items.append(
            {
                "type": "function_call",
                "call_id": call.id,
                "name": call.name,
                "arguments": arguments_text(call),
            }
        )
    return items


def _tool(spec: ToolSpec) -> dict[str, Any]:
    return {"type": "function", **tool_definition(spec, "parameters", dict(spec.parameters))}
