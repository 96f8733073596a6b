"""Prompt and answer content in the shapes of the GenAI semantic conventions (opt-in only).

``gen_ai.input.messages`` and ``gen_ai.output.messages`` are lists of ``{"role", "parts"}``
objects whose parts are ``{"type": "text", "content"}``, ``{"type": "reasoning",
"content"}``, ``{"type": "tool_call", "id", "name", "arguments"}`` or ``{"type":
"tool_call_response", "id", "result"}``. Python's OpenTelemetry API has no structured span
attributes, so they are recorded as JSON text, as the conventions allow for spans.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

from ..event_model.messages import SystemMessage, ToolMessage, UserMessage
from ..event_model.results import AssistantMessage, ChatResponse, ToolCall

__all__ = ["input_messages", "output_messages", "to_json"]


def to_json(value: Any) -> str:
    """``value`` as compact JSON text (what a span attribute holds)."""
    return orjson.dumps(value, default=str).decode()


def _tool_call_part(call: ToolCall) -> dict[str, Any]:
    return {"type": "tool_call", "id": call.id, "name": call.name, "arguments": call.arguments}


def _assistant_parts(message: AssistantMessage) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    if message.thinking:
        parts.append({"type": "reasoning", "content": message.thinking})
    if message.text:
        parts.append({"type": "text", "content": message.text})
    parts.extend(_tool_call_part(call) for call in message.tool_calls)
    return parts


def input_messages(messages: Iterable[Any]) -> list[dict[str, Any]]:
    """The conversation sent to the model, in order, as ``gen_ai.input.messages``."""
    shaped: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, SystemMessage):
            shaped.append({"role": "system", "parts": [{"type": "text", "content": message.text}]})
        elif isinstance(message, UserMessage):
            shaped.append({"role": "user", "parts": [{"type": "text", "content": message.text}]})
        elif isinstance(message, AssistantMessage):
            shaped.append({"role": "assistant", "parts": _assistant_parts(message)})
        elif isinstance(message, ToolMessage):
            part = {"type": "tool_call_response", "id": message.tool_call_id}
            shaped.append({"role": "tool", "parts": [{**part, "result": message.content}]})
    return shaped


def output_messages(response: ChatResponse) -> list[dict[str, Any]]:
    """The model's answer as ``gen_ai.output.messages`` (one choice)."""
    message = response.message or AssistantMessage()
    return [
        {
            "role": "assistant",
            "parts": _assistant_parts(message),
            "finish_reason": response.finish_reason or "stop",
        }
    ]
