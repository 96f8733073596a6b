"""Anthropic Messages: SSE with ``event:`` lines, from ``message_start`` to ``message_stop``."""

from __future__ import annotations

import base64
import secrets
from collections.abc import Mapping
from typing import Any

from ...adapters.provider_formats.anthropic import AnthropicEncoder
from ..turns import Content, ToolCallPart, TurnUsage
from .base import Frame, RequestView, ToolDecl, Wire, content_text, random_id

__all__ = ["AnthropicWire"]

_STOP_REASONS = {"stop": "end_turn", "tool_calls": "tool_use"}


class AnthropicWire(Wire):
    """The ``/v1/messages`` stream."""

    framing = "sse-event"

    def __init__(self, model: str, usage: TurnUsage) -> None:
        super().__init__(model, usage)
        self._index = -1

    @classmethod
    def read_request(cls, body: Mapping[str, Any]) -> RequestView:
        """``tool_result`` blocks of the last user turn; tools with an ``input_schema``."""
        messages = [m for m in body.get("messages") or () if isinstance(m, Mapping)]
        results: list[str] = []
        if messages and messages[-1].get("role") == "user":
            content = messages[-1].get("content")
            blocks = content if isinstance(content, list) else ()
            results = [
                content_text(b.get("content"))
                for b in blocks
                if isinstance(b, Mapping) and b.get("type") == "tool_result"
            ]
        user_text = next(
            (
                text
                for m in reversed(messages)
                if m.get("role") == "user" and (text := _user_text(m.get("content")))
            ),
            "",
        )
        tools = tuple(
            ToolDecl(str(t["name"]), t.get("input_schema") or {})
            for t in body.get("tools") or ()
            if isinstance(t, Mapping) and t.get("name") and "input_schema" in t
        )
        return RequestView(
            model=str(body.get("model") or ""),
            user_text=user_text,
            tool_results=tuple(results),
            tools=tools,
        )

    def ping(self) -> list[Frame]:
        """``{"type": "ping"}``: Anthropic's keep-alive event."""
        return [{"type": "ping"}]

    @classmethod
    def error_body(cls, status: int, message: str | None = None) -> dict[str, Any]:
        """``{"type": "error", "error": {"type", "message"}, "request_id"}``."""
        return AnthropicEncoder.error_body(status, message)

    def open(self) -> list[Frame]:
        """``message_start`` (input tokens known, one output token) and a ``ping``."""
        message: dict[str, Any] = {
            "model": self.model,
            "id": random_id("msg_01"),
            "type": "message",
            "role": "assistant",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {
                "input_tokens": self.usage.prompt,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
                "output_tokens": 1,
                "service_tier": "standard",
            },
        }
        return [{"type": "message_start", "message": message}, {"type": "ping"}]

    def start_block(self, kind: str, part: Content) -> list[Frame]:
        """``content_block_start`` of a thinking, text or tool_use block."""
        self._index += 1
        if kind == "thinking":
            block: dict[str, Any] = {"type": "thinking", "thinking": "", "signature": ""}
        elif kind == "text":
            block = {"type": "text", "text": ""}
        else:
            assert isinstance(part, ToolCallPart)
            block = {
                "type": "tool_use",
                "id": random_id("toolu_01"),
                "name": part.name,
                "input": {},
            }
        return [{"type": "content_block_start", "index": self._index, "content_block": block}]

    def end_block(self, kind: str) -> list[Frame]:
        """A thinking block's ``signature_delta``, then ``content_block_stop``."""
        frames: list[Frame] = []
        if kind == "thinking":
            signature = base64.b64encode(secrets.token_bytes(48)).decode()
            frames.append(self._delta({"type": "signature_delta", "signature": signature}))
        frames.append({"type": "content_block_stop", "index": self._index})
        return frames

    def _delta(self, delta: Mapping[str, Any]) -> Frame:
        return {"type": "content_block_delta", "index": self._index, "delta": delta}

    def thinking(self, text: str) -> list[Frame]:
        """A ``thinking_delta``."""
        return [self._delta({"type": "thinking_delta", "thinking": text})]

    def text(self, text: str) -> list[Frame]:
        """A ``text_delta``."""
        return [self._delta({"type": "text_delta", "text": text})]

    def tool_call(self, call: ToolCallPart) -> list[Frame]:
        """One ``input_json_delta`` per fragment."""
        return [
            self._delta({"type": "input_json_delta", "partial_json": fragment})
            for fragment in call.fragments
        ]

    def finish(self, reason: str) -> list[Frame]:
        """``message_delta`` (stop reason, cumulative usage) and ``message_stop``."""
        usage = {
            "input_tokens": self.usage.prompt,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": self.usage.completion,
        }
        delta = {"stop_reason": _STOP_REASONS.get(reason, reason), "stop_sequence": None}
        return [
            {"type": "message_delta", "delta": delta, "usage": usage},
            {"type": "message_stop"},
        ]

    def error(self, message: str) -> list[Frame]:
        """An ``error`` event (``overloaded_error``), as Anthropic sends mid-stream."""
        return [{"type": "error", "error": {"type": "overloaded_error", "message": message}}]


def _user_text(content: Any) -> str:
    if isinstance(content, list):
        content = [b for b in content if isinstance(b, Mapping) and b.get("type") == "text"]
    return content_text(content)
