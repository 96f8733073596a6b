"""A Chat Completions request (``POST /v1/chat/completions``) read: the inverse of
:func:`~solon_events.dialects.openai_request.chat_completions_request`.

Messages: ``system`` and ``developer`` as system messages; ``user`` text and content
parts (``text``, ``image_url``, ``file``); ``assistant`` text, ``reasoning_content``
(DeepSeek's, sent back) and ``tool_calls``; ``tool`` results (their content parts' text).
Options: ``temperature``, ``top_p``, ``max_completion_tokens`` (or ``max_tokens``),
``stop``, ``seed``, the penalties, ``reasoning_effort``, ``tool_choice``,
``parallel_tool_calls``; ``stream`` and ``stream_options.include_usage``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...event_model.messages import Message, SystemMessage, ToolMessage, ToolSpec
from ...event_model.results import AssistantMessage, FileBlock, ImageBlock, ToolCall
from .fields import each, field_of, integer, optional, texts
from .options import GenerationOptions, effort_fields, sampling
from .request import (
    ClientRequest,
    client_request,
    file_block,
    image_block,
    tool_call,
    tool_spec,
    user_message,
)

__all__ = [
    "function_call",
    "function_tool",
    "image_url_block",
    "read_chat_completions",
    "tool_choice",
]

_SAMPLING = ("temperature", "top_p", "stop", "seed", "presence_penalty", "frequency_penalty")
_KNOWN = {
    *("model", "messages", "tools", "tool_choice", "parallel_tool_calls", "reasoning_effort"),
    *("max_completion_tokens", "max_tokens", "stream", "stream_options", "n", *_SAMPLING),
}


def read_chat_completions(body: Mapping[str, Any]) -> ClientRequest:
    """The :class:`ClientRequest` of a Chat Completions body."""
    messages = each(body, "messages", _message, required=True)
    tools = each(body, "tools", function_tool)
    if (integer(body, "n") or 1) != 1:
        raise ValueError("n must be 1: the gateway asks the upstream for one choice")
    include_usage = bool((optional(body, "stream_options", Mapping, "") or {}).get("include_usage"))
    return client_request(
        "openai",
        body,
        messages,
        _options(body),
        tools=tools,
        known=_KNOWN,
        include_usage=include_usage,
    )


def _options(body: Mapping[str, Any]) -> GenerationOptions:
    choice, name = tool_choice(body.get("tool_choice"), nested=True)
    max_tokens = integer(body, "max_completion_tokens")
    return GenerationOptions(
        **sampling(body, _SAMPLING),
        max_tokens=max_tokens if max_tokens is not None else integer(body, "max_tokens"),
        tool_choice=choice,
        tool_name=name,
        parallel_tool_calls=optional(body, "parallel_tool_calls", bool, ""),
        **effort_fields(optional(body, "reasoning_effort", str, "")),
    )


def tool_choice(value: Any, *, nested: bool) -> tuple[str | None, str | None]:
    """An OpenAI ``tool_choice`` (Chat Completions', ``nested``: the function's name under
    ``function``; the Responses API's: beside ``type``): ``"auto"``, ``"none"``,
    ``"required"``, or ``"required"`` and the one function's name."""
    if value is None:
        return None, None
    if isinstance(value, str):
        if value not in ("auto", "none", "required"):
            raise ValueError(
                f"tool_choice must be auto, none, required or a function, not {value!r}"
            )
        return value, None
    choice = field_of(value, Mapping, "tool_choice")
    if choice.get("type") != "function":
        raise ValueError("tool_choice must be auto, none, required or a function tool")
    if nested:
        function = field_of(choice.get("function"), Mapping, "tool_choice.function")
        return "required", field_of(function.get("name"), str, "tool_choice.function.name")
    return "required", field_of(choice.get("name"), str, "tool_choice.name")


def function_tool(value: Any, where: str) -> ToolSpec:
    """A tool as Chat Completions and Ollama declare one: ``{"type": "function", "function":
    {name, description, parameters}}``."""
    tool = field_of(value, Mapping, where)
    if tool.get("type", "function") != "function":
        raise ValueError(f"{where}.type must be function (the gateway passes function tools only)")
    function = field_of(tool.get("function"), Mapping, f"{where}.function")
    return tool_spec(
        function.get("name"),
        function.get("description"),
        function.get("parameters"),
        f"{where}.function",
    )


def _content_text(content: Any, where: str) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    return texts(field_of(content, list, where), where, ("text", "refusal"))


def _message(value: Any, where: str) -> Message:
    item = field_of(value, Mapping, where)
    role = item.get("role")
    content = item.get("content")
    if role in ("system", "developer"):
        return SystemMessage(text=_content_text(content, f"{where}.content"))
    if role == "user":
        return user_message(content, f"{where}.content", _block)
    if role == "assistant":
        calls = tuple(
            function_call(call, f"{where}.tool_calls[{i}]")
            for i, call in enumerate(optional(item, "tool_calls", list, where) or ())
        )
        thinking = optional(item, "reasoning_content", str, where) or ""
        return AssistantMessage(
            text=_content_text(content, f"{where}.content"), thinking=thinking, tool_calls=calls
        )
    if role == "tool":
        return ToolMessage(
            tool_call_id=optional(item, "tool_call_id", str, where),
            name="",
            content=_content_text(content, f"{where}.content"),
        )
    raise ValueError(
        f"{where}.role must be system, developer, user, assistant or tool, not {role!r}"
    )


def function_call(value: Any, where: str) -> ToolCall:
    """A tool call as Chat Completions, Ollama and Cohere send one back: ``{"id",
    "function": {name, arguments}}`` (the arguments as JSON text or as an object)."""
    call = field_of(value, Mapping, where)
    function = field_of(call.get("function"), Mapping, f"{where}.function")
    name = field_of(function.get("name"), str, f"{where}.function.name")
    return tool_call(
        optional(call, "id", str, where), name, function.get("arguments"), f"{where}.function"
    )


def image_url_block(part: Mapping[str, Any], where: str) -> ImageBlock:
    """An ``image_url`` content part (Chat Completions', Cohere's): its ``image_url.url``."""
    image = field_of(part.get("image_url"), Mapping, f"{where}.image_url")
    return image_block(field_of(image.get("url"), str, f"{where}.image_url.url"))


def _block(part: Mapping[str, Any], kind: Any, where: str) -> ImageBlock | FileBlock:
    if kind == "image_url":
        return image_url_block(part, where)
    if kind == "file":
        return _file(field_of(part.get("file"), Mapping, f"{where}.file"), f"{where}.file")
    raise ValueError(f"{where}.type {kind!r} cannot be passed on (text, image_url and file can)")


def _file(file: Mapping[str, Any], where: str) -> FileBlock:
    name = optional(file, "filename", str, where)
    file_id = optional(file, "file_id", str, where)
    if file_id:
        return FileBlock(file_id=file_id, name=name)
    return file_block(field_of(file.get("file_data"), str, f"{where}.file_data"), name=name)
