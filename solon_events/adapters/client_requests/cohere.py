"""A Cohere Chat API v2 request (``POST /v2/chat``) read: the inverse of
:func:`~solon_events.dialects.cohere_request.chat_request`.

Messages: ``system`` (its text); ``user`` text and content items (``text``,
``image_url``); ``assistant`` text or content items (``text``, and ``thinking`` as the
turn's thinking), its ``tool_plan`` (the thinking of a turn that calls tools) and
``tool_calls`` (as Chat Completions writes them); ``tool`` results (their ``text`` items,
and ``document`` items by their ``data``). Tools as Chat Completions declares them.
``documents`` (retrieval-augmented generation) cannot be passed on and are refused, and
so are ``document`` items in a user message. Options: ``temperature``, ``p``, ``k``,
``max_tokens``, ``stop_sequences``, ``seed``, the penalties, ``thinking`` (``type`` and
``token_budget``), ``tool_choice`` (``REQUIRED``, ``NONE``); ``stream``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...event_model.messages import Message, SystemMessage, ToolMessage
from ...event_model.results import AssistantMessage, ImageBlock
from .fields import each, field_of, json_text, optional, texts
from .openai_chat import function_call, function_tool, image_url_block
from .options import GenerationOptions, sampling, thinking_fields
from .request import ClientRequest, client_request, user_message

__all__ = ["read_chat"]

_SAMPLING = (
    "temperature",
    "p",
    "k",
    "max_tokens",
    "stop_sequences",
    "seed",
    "presence_penalty",
    "frequency_penalty",
)
_KNOWN = {"model", "messages", "tools", "tool_choice", "thinking", "stream", *_SAMPLING}


def read_chat(body: Mapping[str, Any]) -> ClientRequest:
    """The :class:`ClientRequest` of a Cohere ``/v2/chat`` body."""
    if body.get("documents"):
        raise ValueError(
            "documents cannot be passed on: the gateway sends the conversation only "
            "(put the documents' text in a message)"
        )
    messages = each(body, "messages", _message, required=True)
    tools = each(body, "tools", function_tool)
    return client_request("cohere", body, messages, _options(body), tools=tools, known=_KNOWN)


def _options(body: Mapping[str, Any]) -> GenerationOptions:
    choice = optional(body, "tool_choice", str, "")
    choices = {"REQUIRED": "required", "NONE": "none"}
    if choice is not None and choice.upper() not in choices:
        raise ValueError(f"tool_choice must be REQUIRED or NONE, not {choice!r}")
    return GenerationOptions(
        **sampling(body, _SAMPLING),
        **thinking_fields(body, ("enabled",), "token_budget"),
        tool_choice=choices[choice.upper()] if choice else None,
    )


def _message(value: Any, where: str) -> Message:
    item = field_of(value, Mapping, where)
    role = item.get("role")
    content = item.get("content")
    if role == "system":
        return SystemMessage(text=_text(content, f"{where}.content"))
    if role == "user":
        return user_message(content, f"{where}.content", _block)
    if role == "assistant":
        return _assistant(item, where)
    if role == "tool":
        return ToolMessage(
            tool_call_id=optional(item, "tool_call_id", str, where),
            name="",
            content=_result(content, f"{where}.content"),
        )
    raise ValueError(f"{where}.role must be system, user, assistant or tool, not {role!r}")


def _text(content: Any, where: str) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    return texts(field_of(content, list, where), where)


def _block(part: Mapping[str, Any], kind: Any, where: str) -> ImageBlock:
    if kind != "image_url":
        raise ValueError(f"{where}.type {kind!r} cannot be passed on (text and image_url can)")
    return image_url_block(part, where)


def _assistant(item: Mapping[str, Any], where: str) -> AssistantMessage:
    content = item.get("content")
    thinking = optional(item, "tool_plan", str, where) or ""
    if isinstance(content, list):
        thinking += "".join(
            field_of(part.get("thinking"), str, f"{where}.content[{i}].thinking")
            for i, part in enumerate(content)
            if isinstance(part, Mapping) and part.get("type") == "thinking"
        )
    calls = tuple(
        function_call(call, f"{where}.tool_calls[{i}]")
        for i, call in enumerate(optional(item, "tool_calls", list, where) or ())
    )
    return AssistantMessage(
        text=_text(content, f"{where}.content"), thinking=thinking, tool_calls=calls
    )


def _result(content: Any, where: str) -> str:
    """A tool result's text: its ``text`` items' text, its ``document`` items' data (text
    as it is, anything else as JSON)."""
    if content is None or isinstance(content, str):
        return content or ""
    out = []
    for i, part in enumerate(field_of(content, list, where)):
        part = field_of(part, Mapping, f"{where}[{i}]")
        if part.get("type") == "document":
            document = field_of(part.get("document"), Mapping, f"{where}[{i}].document")
            out.append(json_text(document.get("data")))
        else:
            out.append(texts([part], where))
    return "".join(out)
