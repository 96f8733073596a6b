"""What is sent to a model: the conversation and the tools it may call.

The assistant's own turns are :class:`~solon_events.event_model.results.AssistantMessage` values,
so a
step's result goes straight back into the next request. Plain dicts in the common
``{"role": ..., "content": ...}`` form are accepted too (see :func:`to_messages`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal, Union

import attrs

from .results import AssistantMessage, ToolCall, _tuple
from .values import snapshot

__all__ = [
    "ChatRequest",
    "Message",
    "OutputFormat",
    "OutputMode",
    "SystemMessage",
    "ToolMessage",
    "ToolSpec",
    "UserMessage",
    "to_messages",
]


@attrs.frozen(kw_only=True)
class SystemMessage:
    """Instructions for the model."""

    text: str


@attrs.frozen(kw_only=True)
class UserMessage:
    """A user's turn: text, and optionally image or file blocks."""

    text: str = ""
    blocks: tuple[Any, ...] = attrs.field(default=(), converter=_tuple)


@attrs.frozen(kw_only=True)
class ToolMessage:
    """The result of one tool call, sent back to the model."""

    tool_call_id: str | None
    name: str
    content: str
    is_error: bool = False


Message = Union[SystemMessage, UserMessage, AssistantMessage, ToolMessage]  # noqa: UP007


@attrs.frozen(kw_only=True)
class ToolSpec:
    """A tool as the model sees it: name, description and JSON schema of its arguments."""

    name: str
    description: str = ""
    parameters: Mapping[str, Any] = attrs.field(
        factory=lambda: {"type": "object", "properties": {}}, converter=snapshot
    )


def _schema(value: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    return None if value is None else snapshot(value)


OutputMode = Literal["native", "tool", "prompted"]
"""How a structured answer is asked for: ``"native"`` (the provider's own mechanism:
``response_format``, ``output_config``, ``responseJsonSchema``, ``format``...), ``"tool"``
(a tool of the answer's schema the model is made to call; its arguments are read as the
answer's text) or ``"prompted"`` (the schema in an instruction; the answer is checked
afterwards)."""


@attrs.frozen(kw_only=True)
class OutputFormat:
    """The shape a structured answer must take, as a request carries it to a dialect.

    ``schema`` is a JSON schema (None: any JSON object, a provider's "JSON mode");
    ``name`` names it to the provider (a response format's name, the tool's name in
    ``"tool"`` mode); ``mode`` is how it is asked for (None: the dialect's default for the
    model, see :meth:`~solon_events.dialects.ChatDialect.output_mode`); ``strict`` whether
    the provider is asked to hold the answer to the schema where it can (None: where the
    schema can be made strict, see :func:`~solon_events.dialects.strict_schema`).
    """

    schema: Mapping[str, Any] | None = attrs.field(default=None, converter=_schema)
    name: str = "output"
    description: str = ""
    mode: OutputMode | None = None
    strict: bool | None = None


@attrs.frozen(kw_only=True)
class ChatRequest:
    """One model round: the conversation so far, the tools, and provider options.

    ``options`` are passed through into the provider's request body (``temperature``,
    ``max_tokens``, ``thinking``, ...). ``output`` asks for a structured answer of that
    shape (None: free text).
    """

    model: str
    messages: tuple[Message, ...] = attrs.field(converter=_tuple)
    tools: tuple[ToolSpec, ...] = attrs.field(default=(), converter=_tuple)
    options: Mapping[str, Any] = attrs.field(default=None, converter=snapshot)
    output: OutputFormat | None = None


def to_messages(prompt: str | Message | Mapping[str, Any] | Iterable[Any]) -> tuple[Message, ...]:
    """Turn a prompt (a string, a message, a role/content dict, or a list of them) into messages.

    Raises ``TypeError`` for anything else and ``ValueError`` for an unknown role.
    """
    if isinstance(prompt, str):
        return (UserMessage(text=prompt),)
    if isinstance(prompt, (SystemMessage, UserMessage, AssistantMessage, ToolMessage, Mapping)):
        return (_one(prompt),)
    if isinstance(prompt, Iterable):
        messages = tuple(_one(m) for m in prompt)
        if not messages:
            raise ValueError("the prompt holds no message")
        return messages
    raise TypeError(
        f"a prompt is a str, a message or a list of messages, not {type(prompt).__name__}"
    )


def _one(item: Any) -> Message:
    if isinstance(item, (SystemMessage, UserMessage, AssistantMessage, ToolMessage)):
        return item
    if isinstance(item, str):
        return UserMessage(text=item)
    if not isinstance(item, Mapping):
        raise TypeError(
            f"a message is a str, a message object or a dict, not {type(item).__name__}"
        )
    role = item.get("role")
    content = item.get("content") or ""
    if not isinstance(content, str):
        raise TypeError(f"a dict message's content must be a str, got {type(content).__name__}")
    if role == "system" or role == "developer":
        return SystemMessage(text=content)
    if role == "user":
        return UserMessage(text=content)
    if role == "assistant":
        calls = tuple(_tool_call(c) for c in item.get("tool_calls") or ())
        return AssistantMessage(text=content, tool_calls=calls)
    if role == "tool":
        return ToolMessage(
            tool_call_id=item.get("tool_call_id"), name=item.get("name", ""), content=content
        )
    raise ValueError(f"unknown message role {role!r}; use system, user, assistant or tool")


def _tool_call(raw: Mapping[str, Any]) -> ToolCall:
    function = raw.get("function") or raw
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        return ToolCall(id=raw.get("id"), name=function.get("name", ""), arguments_str=arguments)
    return ToolCall(
        id=raw.get("id"), name=function.get("name", ""), arguments=dict(arguments or {})
    )
