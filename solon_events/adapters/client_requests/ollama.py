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

from ...event_model.messages import Message, SystemMessage, ToolMessage, UserMessage
from ...event_model.results import AssistantMessage, ImageBlock
from .fields import each, field_of, optional, unknown_fields
from .openai_chat import function_call, function_tool
from .options import GenerationOptions, sampling
from .request import ClientRequest, client_request, image_type

__all__ = ["read_chat"]

_KNOWN = frozenset({"model", "messages", "tools", "stream", "think", "options", "format"})
_SAMPLING = (
    "temperature",
    "top_p",
    "top_k",
    "num_predict",
    "stop",
    "seed",
    "presence_penalty",
    "frequency_penalty",
)


def read_chat(body: Mapping[str, Any]) -> ClientRequest:
    """The :class:`ClientRequest` of an ``/api/chat`` body."""
    messages = each(body, "messages", _message, required=True)
    tools = each(body, "tools", function_tool)
    options = optional(body, "options", Mapping, "") or {}
    stream = optional(body, "stream", bool, "")
    ignored = unknown_fields(body, _KNOWN) + tuple(
        f"options.{name}" for name in unknown_fields(options, _SAMPLING)
    )
    generation = _options(body.get("think"), options)
    return client_request(
        "ollama",
        body,
        messages,
        generation,
        tools=tools,
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
        **sampling(options, _SAMPLING, "options"), reasoning=reasoning, reasoning_effort=effort
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
        calls = [
            function_call(call, f"{where}.tool_calls[{i}]")
            for i, call in enumerate(optional(item, "tool_calls", list, where) or ())
        ]
        thinking = optional(item, "thinking", str, where) or ""
        return AssistantMessage(text=content, thinking=thinking, tool_calls=calls)
    if role == "tool":
        return ToolMessage(
            tool_call_id=optional(item, "tool_call_id", str, where),
            name=optional(item, "tool_name", str, where) or "",
            content=content,
        )
    raise ValueError(f"{where}.role must be system, user, assistant or tool, not {role!r}")
