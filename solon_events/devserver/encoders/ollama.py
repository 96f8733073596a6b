"""Ollama ``/api/chat``: one JSON object per line, the last one with ``"done": true``."""

from __future__ import annotations

import time
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from ..turns import ToolCallPart, TurnUsage
from .base import Frame, RequestView, Wire, error_info, random_id
from .openai_chat import read_chat_messages

__all__ = ["OllamaWire"]


class OllamaWire(Wire):
    """The ``/api/chat`` stream (NDJSON)."""

    framing = "ndjson"

    def __init__(self, model: str, usage: TurnUsage) -> None:
        super().__init__(model, usage)
        self._started = time.perf_counter_ns()
        self._tool_index = -1

    @classmethod
    def read_request(cls, body: Mapping[str, Any]) -> RequestView:
        """Messages with ``role: tool`` results and OpenAI-style ``tools``."""
        return read_chat_messages(body)

    @classmethod
    def error_body(cls, status: int, message: str | None = None) -> dict[str, Any]:
        """``{"error": "..."}``."""
        return {"error": error_info(status, message).message}

    def _line(self, message: Mapping[str, Any], **fields: Any) -> Frame:
        created_at = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        return {
            "model": self.model,
            "created_at": created_at,
            "message": {"role": "assistant", "content": "", **message},
            "done": False,
            **fields,
        }

    def thinking(self, text: str) -> list[Frame]:
        """A ``message.thinking`` line."""
        return [self._line({"thinking": text})]

    def text(self, text: str) -> list[Frame]:
        """A ``message.content`` line."""
        return [self._line({"content": text})]

    def tool_call(self, call: ToolCallPart) -> list[Frame]:
        """A ``message.tool_calls`` line holding the whole call (``arguments`` an object)."""
        self._tool_index += 1
        function = {"index": self._tool_index, "name": call.name, "arguments": call.arguments}
        return [self._line({"tool_calls": [{"id": random_id("call_", 8), "function": function}]})]

    def finish(self, reason: str) -> list[Frame]:
        """The ``done: true`` line: ``done_reason: stop`` (tool calls too) and the counts."""
        elapsed = time.perf_counter_ns() - self._started
        return [
            self._line(
                {},
                done=True,
                done_reason="stop",
                total_duration=elapsed,
                load_duration=elapsed // 10,
                prompt_eval_count=self.usage.prompt,
                prompt_eval_duration=elapsed // 5,
                eval_count=self.usage.completion,
                eval_duration=elapsed // 2,
            )
        ]

    def error(self, message: str) -> list[Frame]:
        """An ``{"error": "..."}`` line."""
        return [{"error": message}]
