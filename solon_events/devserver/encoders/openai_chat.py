"""OpenAI Chat Completions: ``chat.completion.chunk`` SSE frames ending with ``[DONE]``.

Thinking goes out as ``reasoning_content`` deltas, as DeepSeek, xAI and Qwen send it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..turns import ToolCallPart, TurnUsage
from .base import Frame, RequestView, ToolDecl, Wire, content_text, error_info, now, random_id

__all__ = ["OpenAIChatWire", "read_chat_messages"]


def read_chat_messages(body: Mapping[str, Any]) -> RequestView:
    """The view of a ``messages`` + ``tools`` body (Chat Completions and Ollama)."""
    messages = [m for m in body.get("messages") or () if isinstance(m, Mapping)]
    results: list[str] = []
    for message in reversed(messages):
        if message.get("role") != "tool":
            break
        results.insert(0, content_text(message.get("content")))
    user_text = next(
        (content_text(m.get("content")) for m in reversed(messages) if m.get("role") == "user"),
        "",
    )
    return RequestView(
        model=str(body.get("model") or ""),
        user_text=user_text,
        tool_results=tuple(results),
        tools=tuple(_function_tools(body.get("tools") or ())),
    )


def _function_tools(tools: Iterable[Any]) -> Iterable[ToolDecl]:
    for tool in tools:
        function = tool.get("function") if isinstance(tool, Mapping) else None
        if isinstance(function, Mapping) and function.get("name"):
            yield ToolDecl(str(function["name"]), function.get("parameters") or {})


class OpenAIChatWire(Wire):
    """The ``/v1/chat/completions`` stream."""

    framing = "sse"

    def __init__(self, model: str, usage: TurnUsage) -> None:
        super().__init__(model, usage)
        self._id = random_id("chatcmpl-", 29)
        self._created = now()
        self._fingerprint = random_id("fp_", 10, "0123456789abcdef")
        self._tool_index = -1

    @classmethod
    def read_request(cls, body: Mapping[str, Any]) -> RequestView:
        """Messages with ``role: tool`` results, ``tools`` of ``type: function``."""
        return read_chat_messages(body)

    @classmethod
    def error_body(cls, status: int, message: str | None = None) -> dict[str, Any]:
        """``{"error": {"message", "type", "param", "code"}}``."""
        info = error_info(status, message)
        return {
            "error": {
                "message": info.message,
                "type": info.openai_type,
                "param": None,
                "code": info.openai_code,
            }
        }

    def _chunk(self, delta: Mapping[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return {
            "id": self._id,
            "object": "chat.completion.chunk",
            "created": self._created,
            "model": self.model,
            "service_tier": "default",
            "system_fingerprint": self._fingerprint,
            "choices": [
                {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
            ],
            "usage": None,
        }

    def open(self) -> list[Frame]:
        """The role chunk."""
        return [self._chunk({"role": "assistant", "content": "", "refusal": None})]

    def thinking(self, text: str) -> list[Frame]:
        """A ``reasoning_content`` delta."""
        return [self._chunk({"reasoning_content": text})]

    def text(self, text: str) -> list[Frame]:
        """A ``content`` delta."""
        return [self._chunk({"content": text})]

    def tool_call(self, call: ToolCallPart) -> list[Frame]:
        """The call's id and name with empty arguments, then one chunk per fragment."""
        self._tool_index += 1
        index = self._tool_index
        head = {
            "index": index,
            "id": random_id("call_"),
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        frames: list[Frame] = [self._chunk({"tool_calls": [head]})]
        frames += [
            self._chunk({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]})
            for fragment in call.fragments
        ]
        return frames

    def finish(self, reason: str) -> list[Frame]:
        """The ``finish_reason`` chunk, the usage chunk (``choices: []``), ``[DONE]``."""
        usage = self.usage
        usage_chunk = self._chunk({})
        usage_chunk["choices"] = []
        usage_chunk["usage"] = {
            "prompt_tokens": usage.prompt,
            "completion_tokens": usage.completion,
            "total_tokens": usage.total,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": usage.thinking,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        }
        return [self._chunk({}, reason), usage_chunk, "[DONE]"]

    def error(self, message: str) -> list[Frame]:
        """An ``{"error": {...}}`` data frame, as OpenAI sends mid-stream."""
        return [self.error_body(500, message)]
