"""Anthropic Messages (``"anthropic"``): SSE events named by their type, from ``message_start``
to ``message_stop``.

=======================================  ==================================================
ChatEvent                                what is written
=======================================  ==================================================
first content                            ``message_start`` (the usage known so far), then
                                         a ``ping``
TEXT_START / _DELTA / _END               a ``text`` block: ``content_block_start``,
                                         ``text_delta`` deltas, ``content_block_stop``
THINKING_* and THINKING_SIGNATURE        a ``thinking`` block: ``thinking_delta`` deltas,
                                         its ``signature_delta``
THINKING_REDACTED                        a ``redacted_thinking`` block holding the data
TOOL_CALL_*                              a ``tool_use`` block (id, name), its arguments as
                                         ``input_json_delta`` fragments
SERVER_TOOL_* (a tool the provider ran)  a ``server_tool_use`` block, its input as
                                         ``input_json_delta`` fragments; its result a
                                         ``<tool>_tool_result`` block (the upstream's own
                                         block when it was Anthropic's, else the result's
                                         text in a ``text`` item)
CITATION                                 a ``citations_delta`` in the text block
HEARTBEAT                                ``ping``
RESPONSE_END (or ABORT)                  ``message_delta`` (``stop_reason``: ``end_turn``,
                                         ``max_tokens``, ``tool_use``, ``refusal``, or the
                                         upstream's ``stop_sequence`` / ``pause_turn``;
                                         the whole usage), then ``message_stop``
ERROR                                    an ``error`` event (``overloaded_error``,
                                         ``api_error``, ... by the failure's status)
=======================================  ==================================================

Usage: ``input_tokens`` counts the prompt tokens that were neither read from nor written to
the cache, as Anthropic counts them; ``server_tool_use`` counters go through.

What the format cannot carry, and is dropped: thinking token counts (Anthropic reports
none apart), refusal deltas (a refusal is its ``stop_reason``), images, search results
outside a server tool's result, a text block's final text, tool results (TOOL_RESULT),
and the step boundaries of a multi-step response (its steps are written as one message,
finishing as its last step does).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import orjson

from ...event_model.events import ChatEvent
from ...event_model.results import ChatResponse, Usage
from .base import Block, MessageEnd, Payload, WireEncoder, error_info, random_id

__all__ = ["AnthropicEncoder", "anthropic_usage"]


def anthropic_usage(usage: Usage | None) -> dict[str, Any]:
    """``usage`` in the Messages API's words (zeros without usage)."""
    if usage is None:
        usage = Usage()
    cached = usage.cache_read_input_tokens + usage.cache_creation_input_tokens
    fields: dict[str, Any] = {
        "input_tokens": max(0, usage.prompt_tokens - cached),
        "cache_creation_input_tokens": usage.cache_creation_input_tokens,
        "cache_read_input_tokens": usage.cache_read_input_tokens,
        "output_tokens": usage.completion_tokens,
    }
    if usage.server_tool_use:
        fields["server_tool_use"] = dict(usage.server_tool_use)
    return fields


class AnthropicEncoder(WireEncoder):
    """ChatEvents -> the ``/v1/messages`` stream."""

    format = "anthropic"
    media_type = "text/event-stream"
    event_name = "type"
    other_finish_words: ClassVar[frozenset[str]] = frozenset({"stop_sequence", "pause_turn"})
    call_id_prefix = "toolu_01"

    def __init__(self, model: str) -> None:
        super().__init__(model)
        self.id = random_id("msg_01")
        """The message's id."""
        self._index = -1

    def open(self) -> list[Payload]:
        """``message_start`` and a ``ping``."""
        usage = anthropic_usage(self.usage)
        usage["output_tokens"] = min(usage["output_tokens"], 1)
        message: dict[str, Any] = {
            "id": self.id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": usage,
        }
        return [{"type": "message_start", "message": message}, {"type": "ping"}]

    def _start_block(self, content: Mapping[str, Any]) -> Payload:
        self._index += 1
        return {"type": "content_block_start", "index": self._index, "content_block": content}

    def _delta(self, delta: Mapping[str, Any]) -> Payload:
        return {"type": "content_block_delta", "index": self._index, "delta": delta}

    def _stop(self) -> Payload:
        return {"type": "content_block_stop", "index": self._index}

    def open_block(self, block: Block) -> list[Payload]:
        """``content_block_start`` of a text, thinking, tool_use or server_tool_use block."""
        kind = block.kind
        if kind == "text":
            content: dict[str, Any] = {"type": "text", "text": ""}
        elif kind == "thinking":
            content = {"type": "thinking", "thinking": "", "signature": ""}
        elif kind == "call":
            content = {
                "type": "tool_use",
                "id": self.call_id(block),
                "name": block.name,
                "input": {},
            }
        elif kind == "server_tool":
            name = block.sub_type or block.name
            block.id = block.id or random_id("srvtoolu_01")
            content = {"type": "server_tool_use", "id": block.id, "name": name, "input": {}}
        else:
            return []
        block.index = self._index + 1
        return [self._start_block(content)]

    def close_block(self, block: Block) -> list[Payload]:
        """``content_block_stop``."""
        return [self._stop()] if block.index >= 0 else []

    def text(self, block: Block, text: str) -> list[Payload]:
        """A ``text_delta``."""
        return [self._delta({"type": "text_delta", "text": text})]

    def thinking(self, block: Block, text: str) -> list[Payload]:
        """A ``thinking_delta``."""
        return [self._delta({"type": "thinking_delta", "thinking": text})]

    def signature(self, block: Block, signature: str) -> list[Payload]:
        """A ``signature_delta``."""
        return [self._delta({"type": "signature_delta", "signature": signature})]

    def redacted(self, data: str) -> list[Payload]:
        """A whole ``redacted_thinking`` block."""
        return [self._start_block({"type": "redacted_thinking", "data": data}), self._stop()]

    def call_delta(self, block: Block, fragment: str) -> list[Payload]:
        """An ``input_json_delta``."""
        return [self._delta({"type": "input_json_delta", "partial_json": fragment})]

    def server_tool_result(self, block: Block | None, event: ChatEvent) -> list[Payload]:
        """A whole ``<tool>_tool_result`` block answering the server tool's call."""
        raw = event.raw
        raw_type = event.raw_type or ""
        if raw_type.endswith("_tool_result") and raw.get("type") == raw_type:
            content: dict[str, Any] = dict(raw)
        else:
            name = event.sub_type or (block.name if block is not None else "") or "server"
            content = {
                "type": f"{name}_tool_result",
                "content": [{"type": "text", "text": event.text or ""}],
            }
            if event.attrs.get("is_error"):
                content["is_error"] = True
        call_id = event.tool_call_id or (block.id if block is not None else None)
        content["tool_use_id"] = call_id or random_id("srvtoolu_01")
        return [self._start_block(content), self._stop()]

    def citation(self, event: ChatEvent) -> list[Payload]:
        """A ``citations_delta`` in the open text block (the upstream's own citation when
        it was Anthropic's, else a web search result location)."""
        citation = event.citation
        block = self._block
        if citation is None or block is None or block.kind != "text":
            return []
        raw = citation.raw
        if isinstance(raw.get("type"), str) and raw["type"].endswith("_location"):
            location: dict[str, Any] = dict(raw)
        elif citation.url:
            location = {
                "type": "web_search_result_location",
                "url": citation.url,
                "title": citation.title,
                "cited_text": citation.cited_text or "",
                "encrypted_index": "",
            }
        else:
            return []
        return [self._delta({"type": "citations_delta", "citation": location})]

    def heartbeat(self) -> list[Payload]:
        """A ``ping``."""
        return [{"type": "ping"}]

    def finish(self, end: MessageEnd) -> list[Payload]:
        """``message_delta`` (stop reason, the whole usage) and ``message_stop``."""
        delta = {"stop_reason": self.finish_word(end.kind, end.reason), "stop_sequence": None}
        return [
            {"type": "message_delta", "delta": delta, "usage": anthropic_usage(end.usage)},
            {"type": "message_stop"},
        ]

    def error(self, status: int, message: str, event: ChatEvent) -> list[Payload]:
        """An ``error`` event."""
        error = {"type": error_info(status).anthropic_type, "message": message}
        return [{"type": "error", "error": error}]

    @classmethod
    def error_body(cls, status: int, message: str | None = None) -> dict[str, Any]:
        """``{"type": "error", "error": {"type", "message"}, "request_id"}``."""
        info = error_info(status, message)
        return {
            "type": "error",
            "error": {"type": info.anthropic_type, "message": info.message},
            "request_id": random_id("req_011C", 20),
        }

    @classmethod
    def response_body(cls, response: ChatResponse, *, model: str) -> dict[str, Any]:
        """A ``message`` object: thinking (with its signature), redacted thinking, text and
        ``tool_use`` blocks, in that order, the stop reason and the usage."""
        message = response.message
        metadata = message.metadata if message is not None else {}
        content: list[dict[str, Any]] = []
        if response.thinking:
            signature = metadata.get("thinking_signature") or ""
            content.append(
                {"type": "thinking", "thinking": response.thinking, "signature": signature}
            )
        content += [
            {"type": "redacted_thinking", "data": data}
            for data in metadata.get("redacted_thinking") or ()
        ]
        if response.text:
            content.append({"type": "text", "text": response.text})
        content += [
            {
                "type": "tool_use",
                "id": call.id or random_id(cls.call_id_prefix),
                "name": call.name,
                "input": _input(call.arguments, call.arguments_str),
            }
            for call in response.tool_calls
        ]
        reason = cls.response_finish_word(response)
        return {
            "id": random_id("msg_01"),
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": reason,
            "stop_sequence": None,
            "usage": anthropic_usage(response.usage),
        }


def _input(arguments: Mapping[str, Any], text: str) -> Any:
    """A call's ``input``: its arguments, or the JSON its text holds when that is no object."""
    if arguments or not text.strip():
        return dict(arguments)
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return text
