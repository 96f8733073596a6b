"""An Ollama ``/api/chat`` request read: the inverse of
:func:`~solon_events.dialects.ollama_request.chat_request`.

Messages: ``system``; ``user`` with ``images`` (base64); ``assistant`` with ``thinking``
and ``tool_calls`` (arguments as an object); ``tool`` results (``tool_name``, and
``tool_call_id`` when given; a result names its call by name and order otherwise). Options:
``think`` (true, false, or an effort), and from ``options``: ``temperature``, ``top_p``,
``top_k``, ``num_predict``, ``stop``, ``seed``, the penalties. ``stream`` is true unless
the body says false (Ollama's default).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...messages import Message, SystemMessage, ToolMessage, UserMessage
from ...results import AssistantMessage, ImageBlock
from .openai_chat import function_tool
from .options import GenerationOptions
from .request import (
    ClientRequest,
    body_object,
    each,
    field_of,
    image_type,
    integer,
    number,
    optional,
    paired,
    stop_sequences,
    tool_call,
    unknown_fields,
)

__all__ = ["read_chat"]

_KNOWN = frozenset({"model", "messages", "tools", "stream", "think", "options"})
_OPTIONS_KNOWN = frozenset(
    {
        "temperature",
        "top_p",
        "top_k",
        "num_predict",
        "stop",
        "seed",
        "presence_penalty",
        "frequency_penalty",
    }
)


def read_chat(body: Any) -> ClientRequest:
    """The :class:`ClientRequest` of an ``/api/chat`` body."""
    body = body_object(body)
    messages = paired(each(body, "messages", _message, required=True))
    tools = tuple(each(body, "tools", function_tool))
    options = optional(body, "options", Mapping, "") or {}
    stream = optional(body, "stream", bool, "")
    ignored = unknown_fields(body, _KNOWN) + tuple(
        f"options.{name}" for name in unknown_fields(options, _OPTIONS_KNOWN)
    )
    return ClientRequest(
        format="ollama",
        model=optional(body, "model", str, "") or "",
        messages=messages,
        tools=tools,
        options=_options(body.get("think"), options),
        stream=stream is not False,
        ignored=ignored,
    )


def _options(think: Any, options: Mapping[str, Any]) -> GenerationOptions:
    effort = None
    reasoning: bool | None
    if isinstance(think, str):
        effort, reasoning = think, True
    else:
        reasoning = field_of(think, bool, "think") if think is not None else None
    return GenerationOptions(
        temperature=number(options, "temperature", "options"),
        top_p=number(options, "top_p", "options"),
        top_k=integer(options, "top_k", "options"),
        max_tokens=integer(options, "num_predict", "options"),
        stop=stop_sequences(options.get("stop"), "options.stop"),
        seed=integer(options, "seed", "options"),
        presence_penalty=number(options, "presence_penalty", "options"),
        frequency_penalty=number(options, "frequency_penalty", "options"),
        reasoning=reasoning,
        reasoning_effort=effort,
    )


def _message(value: Any, where: str) -> Message:
    item = field_of(value, Mapping, where)
    role = item.get("role")
    content = optional(item, "content", str, where) or ""
    if role == "system":
        return SystemMessage(text=content)
    if role == "user":
        images = optional(item, "images", list, where) or ()
        blocks = [
            ImageBlock(
                data=(data := field_of(image, str, f"{where}.images[{i}]")),
                mime_type=image_type(data),
            )
            for i, image in enumerate(images)
        ]
        return UserMessage(text=content, blocks=blocks)
    if role == "assistant":
        calls = []
        for i, value in enumerate(optional(item, "tool_calls", list, where) or ()):
            at = f"{where}.tool_calls[{i}]"
            call = field_of(value, Mapping, at)
            function = field_of(call.get("function"), Mapping, f"{at}.function")
            name = field_of(function.get("name"), str, f"{at}.function.name")
            calls.append(
                tool_call(
                    optional(call, "id", str, at), name, function.get("arguments"), f"{at}.function"
                )
            )
        thinking = optional(item, "thinking", str, where) or ""
        return AssistantMessage(text=content, thinking=thinking, tool_calls=calls)
    if role == "tool":
        return ToolMessage(
            tool_call_id=optional(item, "tool_call_id", str, where),
            name=optional(item, "tool_name", str, where) or "",
            content=content,
        )
    raise ValueError(f"{where}.role must be system, user, assistant or tool, not {role!r}")
