"""What every dialect's request building shares: the pieces of a conversation that several
wire formats send alike (data URLs, tool definitions, thinking sent back, role messages, a
user message's parts, Google's generation options).
The counterpart of :mod:`~solon_events.dialects.reading`."""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping, Sequence
from typing import Any

import orjson

from ..event_model.messages import SystemMessage, ToolMessage, ToolSpec, UserMessage
from ..event_model.results import AssistantMessage, ToolCall
from .reading import plain_json

__all__ = [
    "arguments_text",
    "data_url",
    "data_url_parts",
    "function_tool",
    "place_option",
    "redacted_thinking",
    "role_message",
    "thinking_signature",
    "tool_definition",
    "user_parts",
    "verbatim",
]


def data_url(data: str, mime_type: str | None, default: str) -> str:
    """``data`` (base64) as a ``data:`` URL; a value that already is one is kept."""
    return data if data.startswith("data:") else f"data:{mime_type or default};base64,{data}"


def data_url_parts(url: str | None) -> tuple[str, str] | None:
    """The media type and the base64 payload of a base64 ``data:`` URL; None for any other
    URL (or none)."""
    if url and url.startswith("data:") and ";base64," in url:
        header, _, payload = url.partition(";base64,")
        return header[5:], payload
    return None


def arguments_text(call: ToolCall) -> str:
    """A tool call's arguments as JSON text: the text as it was streamed, else encoded."""
    return call.arguments_str or orjson.dumps(call.arguments or {}).decode()


def thinking_signature(message: AssistantMessage) -> str | None:
    """The signature of an assistant turn's thinking (``metadata["thinking_signature"]``),
    which providers demand back with the thinking; None when the turn has none."""
    signature = message.metadata.get("thinking_signature")
    return signature if isinstance(signature, str) and signature else None


def redacted_thinking(message: AssistantMessage) -> Sequence[Any]:
    """An assistant turn's redacted thinking (``metadata["redacted_thinking"]``, a string or
    a list of them), to be sent back as it came."""
    redacted = message.metadata.get("redacted_thinking")
    if isinstance(redacted, str):
        return [redacted]
    return redacted if isinstance(redacted, (list, tuple)) else ()


def tool_definition(spec: ToolSpec, schema_key: str, schema: Any) -> dict[str, Any]:
    """A tool's ``name``, its ``description`` when it has one, and ``schema`` (its
    parameters' JSON schema, as the wire format wraps it) under ``schema_key``."""
    definition: dict[str, Any] = {"name": spec.name}
    if spec.description:
        definition["description"] = spec.description
    definition[schema_key] = schema
    return definition


def verbatim(value: Any, dialect: str, what: str) -> dict[str, Any]:
    """A mapping the caller wrote in the wire format itself (a message, a content block),
    sent as it is; anything else is a TypeError: the ``dialect`` cannot send that ``what``."""
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"the {dialect} dialect cannot send a {type(value).__name__} {what}")


def role_message(
    message: Any,
    dialect: str,
    user: Callable[[UserMessage], dict[str, Any]],
    assistant: Callable[[AssistantMessage], dict[str, Any]],
    tool: Callable[[ToolMessage], dict[str, Any]],
) -> dict[str, Any]:
    """One message of a conversation of ``role``/``content`` messages (Chat Completions,
    Ollama): a system message as its text, the other kinds by the dialect's own ``user``,
    ``assistant`` and ``tool`` builders, a mapping :func:`verbatim`."""
    if isinstance(message, SystemMessage):
        return {"role": "system", "content": message.text}
    if isinstance(message, UserMessage):
        return user(message)
    if isinstance(message, AssistantMessage):
        return assistant(message)
    if isinstance(message, ToolMessage):
        return tool(message)
    return verbatim(message, dialect, "message")


def function_tool(spec: ToolSpec) -> dict[str, Any]:
    """A tool as Chat Completions and Ollama declare one: ``{"type": "function",
    "function": {name, description, parameters}}``."""
    return {
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": plain_json(spec.parameters),
        },
    }


def user_parts(
    message: UserMessage, text_type: str | None, block_part: Callable[[Any], Any]
) -> list[Any]:
    """A user message's content parts: its text (``{"type": text_type, "text": ...}``, or
    ``{"text": ...}`` without a ``text_type``) when it has some or nothing else, then one part
    for each of its blocks, by ``block_part``."""
    parts: list[Any] = []
    if message.text or not message.blocks:
        text = message.text
        parts.append({"text": text} if text_type is None else {"type": text_type, "text": text})
    parts.extend(block_part(block) for block in message.blocks)
    return parts


def place_option(
    body: dict[str, Any],
    config: dict[str, Any],
    name: str,
    value: Any,
    top_level: Container[str],
    stop_name: str,
) -> None:
    """Put the option ``name`` in a Google API request (Gemini's, the Interactions API's):
    ``tools`` entries are added to the request's tools, a request field (one of
    ``top_level``) goes in ``body``, any other option in ``config`` (the generation config),
    a stop sequence (``stop_name``) given as a string as a list of it."""
    if name == "tools":
        body.setdefault("tools", []).extend(value if isinstance(value, list) else [value])
    elif name in top_level:
        body[name] = value
    elif name == stop_name and isinstance(value, str):
        config[name] = [value]
    else:
        config[name] = value
