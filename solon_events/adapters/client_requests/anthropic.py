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

from ...event_model.messages import Message, SystemMessage, ToolSpec, UserMessage
from ...event_model.results import AssistantMessage, FileBlock, ImageBlock, ToolCall
from .fields import each, field_of, json_text, kind_of, optional, texts
from .options import GenerationOptions, sampling, thinking_fields
from .request import ClientRequest, client_request, tool_result, tool_spec

__all__ = ["read_messages"]

_SAMPLING = ("temperature", "top_p", "top_k", "max_tokens", "stop_sequences")
_KNOWN = {"model", "messages", "system", "tools", "tool_choice", "thinking", "stream", *_SAMPLING}


def read_messages(body: Mapping[str, Any]) -> ClientRequest:
    """The :class:`ClientRequest` of a Messages API body."""
    turns = each(body, "messages", _turn, required=True)
    messages: list[Message] = []
    system = _system(body.get("system"))
    if system:
        messages.append(SystemMessage(text=system))
    for turn in turns:
        messages.extend(turn)
    tools = each(body, "tools", _tool)
    return client_request("anthropic", body, messages, _options(body), tools=tools, known=_KNOWN)


def _options(body: Mapping[str, Any]) -> GenerationOptions:
    choice = optional(body, "tool_choice", Mapping, "")
    kinds = {"auto": "auto", "any": "required", "tool": "required", "none": "none"}
    tool_choice = tool_name = parallel = None
    if choice is not None:
        kind = kind_of(choice, "tool_choice")
        if kind not in kinds:
            raise ValueError(f"tool_choice.type must be auto, any, tool or none, not {kind!r}")
        tool_choice = kinds[kind]
        if kind == "tool":
            tool_name = field_of(choice.get("name"), str, "tool_choice.name")
        if choice.get("disable_parallel_tool_use"):
            parallel = False
    return GenerationOptions(
        **sampling(body, _SAMPLING),
        **thinking_fields(body, ("enabled", "adaptive"), "budget_tokens"),
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
    for i, block in enumerate(blocks):
        kind, at = block.get("type"), f"{where}[{i}]"
        if kind == "tool_result":
            content = _result_text(block.get("content"), f"{at}.content")
            failed = bool(block.get("is_error"))
            results.append(tool_result(block, "tool_use_id", content, at, is_error=failed))
        elif kind in ("image", "document"):
            media.append(_media(kind, field_of(block.get("source"), Mapping, f"{at}.source"), at))
        elif kind != "text":
            raise ValueError(f"{at}.type {kind!r} cannot be passed on")
    text = [
        field_of(block.get("text"), str, f"{where}[{i}].text")
        for i, block in enumerate(blocks)
        if block.get("type") == "text"
    ]
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
    thinking: list[str] = []
    calls: list[ToolCall] = []
    metadata: dict[str, Any] = {}
    redacted: list[str] = []
    for i, block in enumerate(blocks):
        kind, at = block.get("type"), f"{where}[{i}]"
        if kind == "thinking":
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
        elif kind != "text":
            raise ValueError(f"{at}.type {kind!r} cannot be passed on")
    if redacted:
        metadata["redacted_thinking"] = redacted
    return AssistantMessage(
        text=texts(blocks, where), thinking="".join(thinking), tool_calls=calls, metadata=metadata
    )
