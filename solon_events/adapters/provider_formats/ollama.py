"""Ollama ``/api/chat`` (``"ollama"``): one JSON object per line, the last with
``"done": true``.

=======================================  ==================================================
ChatEvent                                what is written
=======================================  ==================================================
TEXT_DELTA                               a line with ``message.content``
THINKING_DELTA                           a line with ``message.thinking``
TOOL_CALL_*                              a line with ``message.tool_calls`` holding the
                                         whole call (its ``id``, ``function.index``,
                                         ``name`` and ``arguments`` as an object) when the
                                         call ends
RESPONSE_END (or ABORT)                  the ``done: true`` line: ``done_reason``
                                         (``stop``, tool calls too, or ``length``), the
                                         token counts (``prompt_eval_count``,
                                         ``eval_count``) and the durations
ERROR                                    an ``{"error": "..."}`` line
=======================================  ==================================================

What the format cannot carry, and is dropped: thinking signatures and redacted thinking,
server tools and their results, images, citations and search results, refusal deltas, a
text block's final text, tool results (TOOL_RESULT), thinking, cached and cache-creation
token counts (``eval_count`` counts the thinking too), a finish for tool calls or a content
filter (a step stops with ``stop``), the arguments' text as it was streamed (the
arguments are written as a JSON object) and the step boundaries of a multi-step response
(its steps are written as one response, finishing as its last step does).
"""

from __future__ import annotations

import time
from datetime import datetime, timezone
from typing import Any

from ...event_model.events import ChatEvent
from ...event_model.results import ChatResponse, Usage
from ...wire.writing import json_line
from .base import Block, MessageEnd, Payload, WireEncoder, error_info, random_id

__all__ = ["OllamaEncoder", "json_line"]


def _created_at() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _call(call_id: str, index: int, name: str, arguments: Any) -> dict[str, Any]:
    function = {"index": index, "name": name, "arguments": arguments}
    return {"id": call_id, "function": function}


def _done(reason: str, usage: Usage | None, elapsed: int) -> dict[str, Any]:
    """The counts and durations of a ``done`` object (``elapsed`` nanoseconds in all)."""
    if usage is None:
        usage = Usage()
    return {
        "done": True,
        "done_reason": reason,
        "total_duration": elapsed,
        "load_duration": elapsed // 10,
        "prompt_eval_count": usage.prompt_tokens,
        "prompt_eval_duration": elapsed // 5,
        "eval_count": usage.completion_tokens,
        "eval_duration": elapsed // 2,
    }


class OllamaEncoder(WireEncoder):
    """ChatEvents -> the ``/api/chat`` stream (NDJSON)."""

    format = "ollama"
    media_type = "application/x-ndjson"

    def __init__(self, model: str) -> None:
        super().__init__(model)
        self._started = time.perf_counter_ns()

    def frame(self, payload: Payload) -> bytes:
        """One JSON object and a newline."""
        return json_line(payload)

    def keep_alive(self) -> bytes:
        """A blank line."""
        return b"\n"

    def _line(self, message: dict[str, Any], **fields: Any) -> dict[str, Any]:
        return {
            "model": self.model,
            "created_at": _created_at(),
            "message": {"role": "assistant", "content": "", **message},
            "done": False,
            **fields,
        }

    def text(self, block: Block, text: str) -> list[Payload]:
        """A ``message.content`` line."""
        return [self._line({"content": text})]

    def thinking(self, block: Block, text: str) -> list[Payload]:
        """A ``message.thinking`` line."""
        return [self._line({"thinking": text})]

    def close_block(self, block: Block) -> list[Payload]:
        """A ``message.tool_calls`` line holding the whole call."""
        if block.kind != "call":
            return []
        call = _call(self.call_id(block), block.number, block.name, block.arguments)
        return [self._line({"tool_calls": [call]})]

    def finish(self, end: MessageEnd) -> list[Payload]:
        """The ``done: true`` line with the reason, counts and durations."""
        elapsed = time.perf_counter_ns() - self._started
        return [self._line({}, **_done(self.finish_word(end.kind, end.reason), end.usage, elapsed))]

    def error(self, status: int, message: str, event: ChatEvent) -> list[Payload]:
        """An ``{"error": "..."}`` line."""
        return [{"error": message}]

    @classmethod
    def error_body(cls, status: int, message: str | None = None) -> dict[str, Any]:
        """``{"error": "..."}``."""
        return {"error": error_info(status, message).message}

    @classmethod
    def response_body(cls, response: ChatResponse, *, model: str) -> dict[str, Any]:
        """The ``done`` object holding the whole message (``content``, ``thinking``,
        ``tool_calls``), its reason and counts."""
        message: dict[str, Any] = {"role": "assistant", "content": response.text}
        if response.thinking:
            message["thinking"] = response.thinking
        if response.tool_calls:
            message["tool_calls"] = [
                _call(call.id or random_id(cls.call_id_prefix), i, call.name, call.arguments)
                for i, call in enumerate(response.tool_calls)
            ]
        reason = cls.response_finish_word(response)
        return {
            "model": model,
            "created_at": _created_at(),
            "message": message,
            **_done(reason, response.usage, 0),
        }
