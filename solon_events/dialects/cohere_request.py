"""The Cohere Chat API v2 request (``"cohere"``): the URL, headers and body posted to
``/v2/chat``."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable
from typing import Any

from ..event_model.messages import ChatRequest, ToolMessage, UserMessage
from ..event_model.results import AssistantMessage, FileBlock, ImageBlock, TextBlock
from .output_schema import plain_schema
from .request import Endpoint, HttpRequest, bearer, request_headers
from .writing import arguments_text, data_url, function_tool, role_message, verbatim

__all__ = ["chat_request"]


def chat_request(request: ChatRequest, endpoint: Endpoint) -> HttpRequest:
    """A streaming ``/v2/chat`` request posted to ``endpoint.url``, its key as
    ``Authorization: Bearer``.

    The body holds ``model``, ``messages``, ``tools`` (``{"type": "function", "function":
    {name, description, parameters}}``), ``documents`` and ``stream: true``; the other
    ``request.options`` are passed through and override these; a structured answer is
    ``response_format`` (``json_object`` with its ``json_schema``). Messages:

    - a system message is ``{"role": "system", "content": text}``;
    - a user message is its text, or a list of ``text`` and ``image_url`` items when it has
      image or text blocks. Its :class:`~solon_events.FileBlock` blocks are not sent in
      the message (Cohere takes none) but as ``documents`` the model can cite: each
      ``{"id": name, "data": {"title": name, "text": ...}}`` from the block's base64
      ``data`` read as UTF-8 text (``id`` ``doc_<n>`` for an unnamed one); a file by URL or
      id is a TypeError. ``options["documents"]`` (Cohere's own shape: strings or
      ``{"id", "data"}`` objects) follow them.
    - an assistant turn is its text (``content``) and its ``tool_calls`` (arguments as
      JSON text); the turn's thinking goes back as ``tool_plan`` when it has tool calls
      (that is where the dialect read it from), else as a ``thinking`` content item;
    - a tool result is ``{"role": "tool", "tool_call_id": ..., "content": text}``.
    """
    options = dict(request.options)
    documents = [*_file_documents(request.messages), *options.pop("documents", ())]
    body: dict[str, Any] = {
        "model": request.model,
        "messages": [_message(m) for m in request.messages],
    }
    if request.tools:
        body["tools"] = [function_tool(t) for t in request.tools]
    if documents:
        body["documents"] = documents
    output = request.output
    if output is not None:
        body["response_format"] = {"type": "json_object"}
        if output.schema is not None:
            body["response_format"]["json_schema"] = plain_schema(output.schema)
    body.update(options)
    body["stream"] = True
    headers = request_headers(bearer(endpoint.api_key), endpoint.headers)
    return HttpRequest(url=endpoint.url, headers=headers, body=body)


def _message(message: Any) -> dict[str, Any]:
    return role_message(message, "cohere", _user_message, _assistant_message, _tool_result)


def _user_message(message: UserMessage) -> dict[str, Any]:
    blocks = [b for b in message.blocks if not isinstance(b, FileBlock)]
    if not blocks:
        return {"role": "user", "content": message.text}
    items: list[Any] = [{"type": "text", "text": message.text}] if message.text else []
    items.extend(_content_item(block) for block in blocks)
    return {"role": "user", "content": items}


def _content_item(block: Any) -> dict[str, Any]:
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text}
    if isinstance(block, ImageBlock):
        if block.url:
            return {"type": "image_url", "image_url": {"url": block.url}}
        if block.data:
            url = data_url(block.data, block.mime_type, "image/png")
            return {"type": "image_url", "image_url": {"url": url}}
        raise ValueError("an ImageBlock needs a url or data")
    return verbatim(block, "cohere", "block")


def _file_documents(messages: Iterable[Any]) -> list[dict[str, Any]]:
    """The documents of the user messages' file blocks, in order."""
    documents: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, UserMessage):
            for block in message.blocks:
                if isinstance(block, FileBlock):
                    documents.append(_document(block, len(documents)))
    return documents


def _document(block: FileBlock, position: int) -> dict[str, Any]:
    if not block.data:
        raise TypeError("the cohere dialect takes a FileBlock as a document from its data only")
    try:
        text = base64.b64decode(block.data, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError) as exc:
        raise ValueError(f"a FileBlock sent to Cohere must be base64 UTF-8 text: {exc}") from None
    name = block.name or f"doc_{position}"
    return {"id": name, "data": {"title": name, "text": text}}


def _assistant_message(message: AssistantMessage) -> dict[str, Any]:
    out: dict[str, Any] = {"role": "assistant"}
    if message.tool_calls:
        if message.thinking:
            out["tool_plan"] = message.thinking
        out["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": arguments_text(call)},
            }
            for call in message.tool_calls
        ]
        if message.text:
            out["content"] = message.text
        return out
    content: list[dict[str, Any]] = []
    if message.thinking:
        content.append({"type": "thinking", "thinking": message.thinking})
    content.append({"type": "text", "text": message.text})
    out["content"] = content
    return out


def _tool_result(message: ToolMessage) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
