"""Cohere's Chat API v2 (``"cohere"``): ``/v2/chat`` stream events, SSE named by their ``type``.

=======================================  ==================================================
ChatEvent                                what is written
=======================================  ==================================================
first content                            ``message-start`` (the message ``id``)
TEXT / THINKING blocks                   ``content-start`` (``text`` / ``thinking``),
                                         ``content-delta``, ``content-end``, numbered by
                                         ``index`` in the message
TOOL_CALL_START / _ARGS_DELTA / _END     ``tool-call-start`` (``id``, ``function.name``),
                                         ``tool-call-delta`` (``function.arguments``),
                                         ``tool-call-end``, by the call's ``index``
CITATION                                 ``citation-start`` (``start``, ``end``, ``text``,
                                         one source: the citation's raw source when it is
                                         Cohere's, else a ``document`` with its ``title``
                                         and ``url``), then ``citation-end``
RESPONSE_END (or ABORT)                  ``message-end``: ``finish_reason`` (``COMPLETE``,
                                         ``MAX_TOKENS``, ``TOOL_CALL``; ``STOP_SEQUENCE``
                                         and ``TIMEOUT`` when the upstream said so) and
                                         ``usage`` (``tokens`` and ``billed_units`` alike,
                                         ``cached_tokens``)
ERROR                                    ``message-end`` with ``finish_reason: "ERROR"``
                                         and the message as ``error``
=======================================  ==================================================

What the format cannot carry, and is dropped: thinking signatures and redacted thinking, a
content-filter finish (written ``COMPLETE``), server tools and their results, images,
search results, tool results, thinking and cache-creation token counts and the step
boundaries of a multi-step response. A tool plan (THINKING with ``sub_type="tool_plan"``)
is written as thinking content, which Cohere's reasoning models stream too.
"""

from __future__ import annotations

import uuid
from typing import Any, ClassVar

from ...event_model.events import ChatEvent
from ...event_model.results import ChatResponse, Usage
from .base import Block, MessageEnd, Payload, WireEncoder, error_info

__all__ = ["CohereEncoder", "cohere_usage_body"]


def cohere_usage_body(usage: Usage | None) -> dict[str, Any]:
    """``usage`` in Cohere's words: ``tokens`` and ``billed_units`` (the same counts; the
    billing is not ours to know), ``cached_tokens``."""
    usage = usage if usage is not None else Usage()
    counts = {"input_tokens": usage.prompt_tokens, "output_tokens": usage.completion_tokens}
    return {
        "billed_units": dict(counts),
        "tokens": counts,
        "cached_tokens": usage.cache_read_input_tokens,
    }


class CohereEncoder(WireEncoder):
    """ChatEvents -> the ``/v2/chat`` stream (``stream: true``)."""

    format = "cohere"
    media_type = "text/event-stream"
    event_name = "type"
    other_finish_words: ClassVar[frozenset[str]] = frozenset({"STOP_SEQUENCE", "TIMEOUT"})
    call_id_prefix: ClassVar[str] = "call_"

    def __init__(self, model: str) -> None:
        super().__init__(model)
        self.id = str(uuid.uuid4())
        """The message's id, on ``message-start``."""
        self._contents = 0
        self._citations = 0

    def open(self) -> list[Payload]:
        """``message-start``."""
        message = {"role": "assistant", "content": [], "tool_plan": "", "tool_calls": []}
        message["citations"] = []
        return [{"id": self.id, "type": "message-start", "delta": {"message": message}}]

    def open_block(self, block: Block) -> list[Payload]:
        """``content-start`` of a text or thinking content, ``tool-call-start`` of a call."""
        if block.kind in ("text", "thinking"):
            block.index = self._contents
            self._contents += 1
            content = {"type": block.kind, block.kind: ""}
            return [_event("content-start", block.index, {"content": content})]
        if block.kind == "call":
            call = {
                "id": self.call_id(block),
                "type": "function",
                "function": {"name": block.name, "arguments": ""},
            }
            return [_event("tool-call-start", block.number, {"tool_calls": call})]
        return []

    def close_block(self, block: Block) -> list[Payload]:
        """``content-end`` or ``tool-call-end``."""
        if block.kind in ("text", "thinking"):
            return [{"type": "content-end", "index": block.index}]
        if block.kind == "call":
            return [{"type": "tool-call-end", "index": block.number}]
        return []

    def text(self, block: Block, text: str) -> list[Payload]:
        """A text ``content-delta``."""
        return [_event("content-delta", block.index, {"content": {"text": text}})]

    def thinking(self, block: Block, text: str) -> list[Payload]:
        """A thinking ``content-delta``."""
        return [_event("content-delta", block.index, {"content": {"thinking": text}})]

    def call_delta(self, block: Block, fragment: str) -> list[Payload]:
        """A ``tool-call-delta`` of a client call (server tools are dropped)."""
        if block.kind != "call":
            return []
        call = {"function": {"arguments": fragment}}
        return [_event("tool-call-delta", block.number, {"tool_calls": call})]

    def citation(self, event: ChatEvent) -> list[Payload]:
        """``citation-start`` with the cited span and its source, then ``citation-end``."""
        citation = event.citation
        if citation is None:
            return []
        raw = citation.raw
        if raw and raw.get("type") in ("document", "tool"):
            source: dict[str, Any] = dict(raw)
        else:
            document = {k: v for k, v in (("title", citation.title), ("url", citation.url)) if v}
            source = {"type": "document", "id": f"doc:{self._citations}", "document": document}
        span = {
            "start": citation.start_index,
            "end": citation.end_index,
            "text": citation.cited_text,
            "sources": [source],
            "type": event.sub_type or "TEXT_CONTENT",
        }
        index = self._citations
        self._citations += 1
        return [
            *self._start(),
            _event("citation-start", index, {"citations": span}),
            {"type": "citation-end", "index": index},
        ]

    def finish(self, end: MessageEnd) -> list[Payload]:
        """``message-end`` with the finish reason and usage."""
        delta = {
            "finish_reason": self.finish_word(end.kind, end.reason),
            "usage": cohere_usage_body(end.usage),
        }
        return [{"type": "message-end", "delta": delta}]

    def error(self, status: int, message: str, event: ChatEvent) -> list[Payload]:
        """``message-end`` with ``finish_reason: "ERROR"`` and the message."""
        return [{"type": "message-end", "delta": {"finish_reason": "ERROR", "error": message}}]

    @classmethod
    def error_body(cls, status: int, message: str | None = None) -> dict[str, Any]:
        """``{"id", "message"}``, as the API answers an error."""
        return {"id": str(uuid.uuid4()), "message": error_info(status, message).message}

    @classmethod
    def response_body(cls, response: ChatResponse, *, model: str) -> dict[str, Any]:
        """The non-streaming ``/v2/chat`` response: ``id``, ``finish_reason``, the
        ``message`` (``content``, ``tool_plan``, ``tool_calls``) and ``usage``."""
        message: dict[str, Any] = {"role": "assistant"}
        content = [{"type": "thinking", "thinking": response.thinking}] if response.thinking else []
        if response.text:
            content.append({"type": "text", "text": response.text})
        message["content"] = content
        if response.tool_calls:
            message["tool_calls"] = [
                {
                    "id": call.id or f"{cls.call_id_prefix}{index}",
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments_str or "{}"},
                }
                for index, call in enumerate(response.tool_calls)
            ]
        return {
            "id": str(uuid.uuid4()),
            "finish_reason": cls.response_finish_word(response),
            "message": message,
            "usage": cohere_usage_body(response.usage),
        }


def _event(kind: str, index: int, message: dict[str, Any]) -> dict[str, Any]:
    return {"type": kind, "index": index, "delta": {"message": message}}
