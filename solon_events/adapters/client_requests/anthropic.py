"""A Messages API request (``POST /v1/messages``) read: the inverse of
:func:`~solon_events.dialects.anthropic_request.messages_request`.

``system`` (a string or text blocks) becomes one system message; user turns hold
``text``, ``image`` and ``document`` blocks and ``tool_result`` blocks (each a
:class:`~solon_events.ToolMessage`, before the turn's text, as the API orders them);
assistant turns ``text``, ``thinking`` (its ``signature`` kept in the message's
``metadata["thinking_signature"]``), ``redacted_thinking`` (``metadata["redacted_thinking"]``)
and ``tool_use``. Tools with an ``input_schema`` are the client's; server tools (a
``type`` such as ``web_search_20250305``) cannot be passed on and are refused. Options:
``max_tokens``, ``temperature``, ``top_p``, ``top_k``, ``stop_sequences``, ``thinking``,
``tool_choice``; ``stream``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...messages import Message, SystemMessage, ToolMessage, ToolSpec, UserMessage
from ...results import AssistantMessage, FileBlock, ImageBlock, ToolCall
from .options import GenerationOptions
from .request import (
    ClientRequest,
    body_object,
    each,
    field_of,
    integer,
    json_text,
    number,
    optional,
    paired,
    stop_sequences,
    texts,
    tool_spec,
    unknown_fields,
)

__all__ = ["read_messages"]

_KNOWN = frozenset(
    {
        "model",
        "messages",
        "system",
        "tools",
        "tool_choice",
        "max_tokens",
        "temperature",
        "top_p",
        "top_k",
        "stop_sequences",
        "thinking",
        "stream",
    }
)


def read_messages(body: Any) -> ClientRequest:
    """The :class:`ClientRequest` of a Messages API body."""
    body = body_object(body)
    turns = each(body, "messages", _turn, required=True)
    messages: list[Message] = []
    system = _system(body.get("system"))
    if system:
        messages.append(SystemMessage(text=system))
    for turn in turns:
        messages.extend(turn)
    tools = tuple(each(body, "tools", _tool))
    return ClientRequest(
        format="anthropic",
        model=optional(body, "model", str, "") or "",
        messages=paired(messages),
        tools=tools,
        options=_options(body),
        stream=bool(optional(body, "stream", bool, "")),
        ignored=unknown_fields(body, _KNOWN),
    )


def _options(body: Mapping[str, Any]) -> GenerationOptions:
    thinking = optional(body, "thinking", Mapping, "")
    reasoning = budget = None
    if thinking is not None:
        kind = thinking.get("type")
        reasoning = kind in ("enabled", "adaptive")
        if kind == "enabled":
            budget = integer(thinking, "budget_tokens", "thinking")
    choice = optional(body, "tool_choice", Mapping, "")
    kinds = {"auto": "auto", "any": "required", "tool": "required", "none": "none"}
    tool_choice = tool_name = parallel = None
    if choice is not None:
        kind = choice.get("type")
        if kind not in kinds:
            raise ValueError(f"tool_choice.type must be auto, any, tool or none, not {kind!r}")
        tool_choice = kinds[kind]
        if kind == "tool":
            tool_name = field_of(choice.get("name"), str, "tool_choice.name")
        if choice.get("disable_parallel_tool_use"):
            parallel = False
    return GenerationOptions(
        temperature=number(body, "temperature"),
        top_p=number(body, "top_p"),
        top_k=integer(body, "top_k"),
        max_tokens=integer(body, "max_tokens"),
        stop=stop_sequences(body.get("stop_sequences"), "stop_sequences"),
        reasoning=reasoning,
        reasoning_budget=budget,
        tool_choice=tool_choice,
        tool_name=tool_name,
        parallel_tool_calls=parallel,
    )


def _system(value: Any) -> str:
    if value is None or isinstance(value, str):
        return value or ""
    return "\n\n".join(
        texts([block], f"system[{i}]") for i, block in enumerate(field_of(value, list, "system"))
    )


def _tool(value: Any, where: str) -> ToolSpec:
    tool = field_of(value, Mapping, where)
    if tool.get("type") not in (None, "custom"):
        raise ValueError(
            f"{where} is a server tool ({tool.get('type')}): the gateway passes the client's "
            "own tools only"
        )
    return tool_spec(tool.get("name"), tool.get("description"), tool.get("input_schema"), where)


def _turn(value: Any, where: str) -> list[Message]:
    item = field_of(value, Mapping, where)
    role, content = item.get("role"), item.get("content")
    if role not in ("user", "assistant"):
        raise ValueError(f"{where}.role must be user or assistant, not {role!r}")
    if isinstance(content, str):
        return [UserMessage(text=content) if role == "user" else AssistantMessage(text=content)]
    blocks = [
        field_of(block, Mapping, f"{where}.content[{i}]")
        for i, block in enumerate(field_of(content, list, f"{where}.content"))
    ]
    if role == "assistant":
        return [_assistant(blocks, f"{where}.content")]
    return _user(blocks, f"{where}.content")


def _user(blocks: list[Mapping[str, Any]], where: str) -> list[Message]:
    results: list[Message] = []
    media: list[ImageBlock | FileBlock] = []
    text: list[str] = []
    for i, block in enumerate(blocks):
        kind, at = block.get("type"), f"{where}[{i}]"
        if kind == "text":
            text.append(field_of(block.get("text"), str, f"{at}.text"))
        elif kind == "tool_result":
            results.append(
                ToolMessage(
                    tool_call_id=field_of(block.get("tool_use_id"), str, f"{at}.tool_use_id"),
                    name="",
                    content=_result_text(block.get("content"), f"{at}.content"),
                    is_error=bool(block.get("is_error")),
                )
            )
        elif kind in ("image", "document"):
            media.append(_media(kind, field_of(block.get("source"), Mapping, f"{at}.source"), at))
        else:
            raise ValueError(f"{at}.type {kind!r} cannot be passed on")
    if text or media or not results:
        results.append(UserMessage(text="\n\n".join(text), blocks=media))
    return results


def _result_text(content: Any, where: str) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, list):
        return texts(content, where)
    return json_text(content)


def _media(kind: str, source: Mapping[str, Any], where: str) -> ImageBlock | FileBlock:
    block = ImageBlock if kind == "image" else FileBlock
    how = source.get("type")
    if how == "base64":
        data = field_of(source.get("data"), str, f"{where}.source.data")
        return block(data=data, mime_type=optional(source, "media_type", str, f"{where}.source"))
    if how == "url":
        return block(url=field_of(source.get("url"), str, f"{where}.source.url"))
    if how == "file" and kind == "document":
        return FileBlock(file_id=field_of(source.get("file_id"), str, f"{where}.source.file_id"))
    raise ValueError(f"{where}.source.type {how!r} cannot be passed on (base64 and url can)")


def _assistant(blocks: list[Mapping[str, Any]], where: str) -> AssistantMessage:
    text: list[str] = []
    thinking: list[str] = []
    calls: list[ToolCall] = []
    metadata: dict[str, Any] = {}
    redacted: list[str] = []
    for i, block in enumerate(blocks):
        kind, at = block.get("type"), f"{where}[{i}]"
        if kind == "text":
            text.append(field_of(block.get("text"), str, f"{at}.text"))
        elif kind == "thinking":
            thinking.append(field_of(block.get("thinking"), str, f"{at}.thinking"))
            signature = optional(block, "signature", str, at)
            if signature:
                metadata["thinking_signature"] = signature
        elif kind == "redacted_thinking":
            redacted.append(field_of(block.get("data"), str, f"{at}.data"))
        elif kind == "tool_use":
            arguments = optional(block, "input", Mapping, at) or {}
            calls.append(
                ToolCall(
                    id=field_of(block.get("id"), str, f"{at}.id"),
                    name=field_of(block.get("name"), str, f"{at}.name"),
                    arguments=dict(arguments),
                )
            )
        else:
            raise ValueError(f"{at}.type {kind!r} cannot be passed on")
    if redacted:
        metadata["redacted_thinking"] = redacted
    return AssistantMessage(
        text="".join(text), thinking="".join(thinking), tool_calls=calls, metadata=metadata
    )
