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

from ...messages import Message, SystemMessage, ToolMessage, ToolSpec, UserMessage
from ...results import AssistantMessage, FileBlock, ImageBlock
from .options import GenerationOptions
from .request import (
    ClientRequest,
    body_object,
    each,
    effort_fields,
    field_of,
    file_block,
    image_block,
    integer,
    number,
    optional,
    paired,
    stop_sequences,
    texts,
    tool_call,
    tool_spec,
    unknown_fields,
)

__all__ = ["function_tool", "read_chat_completions", "tool_choice"]

_KNOWN = frozenset(
    {
        "model",
        "messages",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "temperature",
        "top_p",
        "max_tokens",
        "max_completion_tokens",
        "stop",
        "seed",
        "presence_penalty",
        "frequency_penalty",
        "reasoning_effort",
        "stream",
        "stream_options",
        "n",
    }
)


def read_chat_completions(body: Any) -> ClientRequest:
    """The :class:`ClientRequest` of a Chat Completions body."""
    body = body_object(body)
    messages = paired(each(body, "messages", _message, required=True))
    tools = tuple(each(body, "tools", function_tool))
    if (integer(body, "n") or 1) != 1:
        raise ValueError("n must be 1: the gateway asks the upstream for one choice")
    stream_options = optional(body, "stream_options", Mapping, "") or {}
    return ClientRequest(
        format="openai",
        model=optional(body, "model", str, "") or "",
        messages=messages,
        tools=tools,
        options=_options(body),
        stream=bool(optional(body, "stream", bool, "")),
        include_usage=bool(stream_options.get("include_usage")),
        ignored=unknown_fields(body, _KNOWN),
    )


def _options(body: Mapping[str, Any]) -> GenerationOptions:
    choice, name = tool_choice(body.get("tool_choice"), nested=True)
    max_tokens = integer(body, "max_completion_tokens")
    return GenerationOptions(
        temperature=number(body, "temperature"),
        top_p=number(body, "top_p"),
        max_tokens=max_tokens if max_tokens is not None else integer(body, "max_tokens"),
        stop=stop_sequences(body.get("stop"), "stop"),
        seed=integer(body, "seed"),
        presence_penalty=number(body, "presence_penalty"),
        frequency_penalty=number(body, "frequency_penalty"),
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
        return _user(content, f"{where}.content")
    if role == "assistant":
        calls = tuple(
            _call(call, f"{where}.tool_calls[{i}]")
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


def _call(value: Any, where: str) -> Any:
    call = field_of(value, Mapping, where)
    function = field_of(call.get("function"), Mapping, f"{where}.function")
    name = field_of(function.get("name"), str, f"{where}.function.name")
    return tool_call(
        optional(call, "id", str, where), name, function.get("arguments"), f"{where}.function"
    )


def _user(content: Any, where: str) -> UserMessage:
    if content is None or isinstance(content, str):
        return UserMessage(text=content or "")
    parts = field_of(content, list, where)
    blocks: list[ImageBlock | FileBlock] = []
    for i, part in enumerate(parts):
        part = field_of(part, Mapping, f"{where}[{i}]")
        kind = part.get("type")
        if kind == "image_url":
            image = field_of(part.get("image_url"), Mapping, f"{where}[{i}].image_url")
            url = field_of(image.get("url"), str, f"{where}[{i}].image_url.url")
            blocks.append(image_block(url))
        elif kind == "file":
            file = field_of(part.get("file"), Mapping, f"{where}[{i}].file")
            blocks.append(_file(file, f"{where}[{i}].file"))
        elif kind != "text":
            raise ValueError(
                f"{where}[{i}].type {kind!r} cannot be passed on (text, image_url and file can)"
            )
    return UserMessage(text=texts(parts, where), blocks=blocks)


def _file(file: Mapping[str, Any], where: str) -> FileBlock:
    name = optional(file, "filename", str, where)
    file_id = optional(file, "file_id", str, where)
    if file_id:
        return FileBlock(file_id=file_id, name=name)
    return file_block(field_of(file.get("file_data"), str, f"{where}.file_data"), name=name)
