"""The OpenAI Chat Completions request (``"openai"``): the URL, headers and body posted."""

from __future__ import annotations

from typing import Any, Literal

from ..event_model.messages import ChatRequest, OutputFormat, ToolMessage, UserMessage
from ..event_model.results import AssistantMessage, FileBlock, ImageBlock, TextBlock
from .output import schema_for
from .request import Endpoint, HttpRequest, bearer, request_headers
from .writing import arguments_text, data_url, function_tool, role_message, user_parts, verbatim

__all__ = ["PrefillForm", "chat_completions_request", "response_format"]

PrefillForm = Literal["prefix", "partial", "continue_final_message"]
"""How a compatible server is told to continue a trailing assistant message: ``"prefix"``
(``"prefix": true`` on it: DeepSeek, Mistral), ``"partial"`` (``"partial": true``: Qwen on
DashScope), ``"continue_final_message"`` (the request's ``continue_final_message: true``
and ``add_generation_prompt: false``: vLLM, SGLang)."""


def chat_completions_request(
    request: ChatRequest, endpoint: Endpoint, *, prefill: PrefillForm | None = None
) -> HttpRequest:
    """A streaming Chat Completions request (with usage in the last chunk) posted to
    ``endpoint.url``, its key as ``Authorization: Bearer``; ``request.options`` override
    the body. With ``prefill``, a trailing assistant message (text, no tool call) is marked
    for the server to continue, in that form."""
    messages = [_message(m) for m in request.messages]
    body: dict[str, Any] = {"model": request.model, "messages": messages}
    last = request.messages[-1] if request.messages else None
    if prefill and isinstance(last, AssistantMessage) and not last.tool_calls:
        if prefill == "continue_final_message":
            body["continue_final_message"] = True
            body["add_generation_prompt"] = False
        else:
            messages[-1][prefill] = True
    if request.tools:
        body["tools"] = [function_tool(t) for t in request.tools]
    if request.output is not None:
        body["response_format"] = response_format(request.output)
    body["stream"] = True
    body["stream_options"] = {"include_usage": True}
    body.update(request.options)
    headers = request_headers(bearer(endpoint.api_key), endpoint.headers)
    return HttpRequest(url=endpoint.url, headers=headers, body=body)


def response_format(output: OutputFormat) -> dict[str, Any]:
    """Chat Completions' ``response_format`` for ``output``: ``json_schema`` (the schema
    made strict where it can be: :func:`~.output_schema.strict_schema`), or
    ``json_object`` without a schema."""
    if output.schema is None:
        return {"type": "json_object"}
    schema, strict = schema_for(output, "strict")
    described = {"description": output.description} if output.description else {}
    return {
        "type": "json_schema",
        "json_schema": {"name": output.name, **described, "schema": schema, "strict": strict},
    }


def _message(message: Any) -> dict[str, Any]:
    return role_message(message, "openai", _user_message, _assistant_message, _tool_result)


def _tool_result(message: ToolMessage) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}


def _user_message(message: UserMessage) -> dict[str, Any]:
    if not message.blocks:
        return {"role": "user", "content": message.text}
    parts = user_parts(message, "text", _content_part)
    return {"role": "user", "content": parts}


def _content_part(block: Any) -> Any:
    if isinstance(block, ImageBlock):
        return {"type": "image_url", "image_url": {"url": _image_url(block)}}
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text}
    if isinstance(block, FileBlock):
        return {"type": "file", "file": _file(block)}
    return verbatim(block, "openai", "block")


def _image_url(block: ImageBlock) -> str:
    if block.url:
        return block.url
    if block.data:
        return data_url(block.data, block.mime_type, "image/png")
    raise ValueError("an ImageBlock needs a url or data")


def _file(block: FileBlock) -> dict[str, Any]:
    if block.file_id:
        return {"file_id": block.file_id}
    if block.data:
        return {
            "filename": block.name or "file",
            "file_data": data_url(block.data, block.mime_type, "application/octet-stream"),
        }
    raise ValueError("Chat Completions takes a file by file_id or data, not by url")


def _assistant_message(message: AssistantMessage) -> dict[str, Any]:
    out: dict[str, Any] = {"role": "assistant"}
    if message.tool_calls:
        out["content"] = message.text or None
        out["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": arguments_text(call)},
            }
            for call in message.tool_calls
        ]
    else:
        out["content"] = message.text
    return out
