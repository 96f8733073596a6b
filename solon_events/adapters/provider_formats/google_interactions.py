"""Google's Interactions API (``"google-interactions"``): ``interactions.create`` stream
events, SSE named by their ``event_type``.

=======================================  ==================================================
ChatEvent                                what is written
=======================================  ==================================================
first content                            ``interaction.created`` (``id``, ``model``,
                                         ``status: "in_progress"``) and its
                                         ``interaction.status_update``
TEXT block                               a ``model_output`` step: ``step.start``,
                                         ``step.delta`` of ``text``, ``step.stop``
THINKING block, THINKING_SIGNATURE       a ``thought`` step: ``thought_summary`` deltas,
                                         a ``thought_signature`` delta
TOOL_CALL_START / _ARGS_DELTA / _END     a ``function_call`` step (``id``, ``name``),
                                         ``arguments_delta`` deltas
CITATION with a URL, in a text block     a ``text_annotation_delta`` (``url_citation``)
RESPONSE_END (or ABORT)                  ``interaction.completed``: ``status``
                                         (``completed``, ``incomplete``,
                                         ``requires_action`` after tool calls) and
                                         ``usage`` (``total_*``)
ERROR                                    an ``error`` event (``code``, ``message``)
=======================================  ==================================================

What the format cannot carry, and is dropped: redacted thinking, a content-filter finish
(written ``completed``), server tools and their results, images, search results, citations
outside a text step, tool results, cache-creation token counts and the step boundaries of
a multi-step response.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ...dialects.google_interactions_request import assistant_steps
from ...event_model.events import ChatEvent
from ...event_model.results import AssistantMessage, ChatResponse, Usage
from .base import Block, MessageEnd, Payload, WireEncoder, error_info, random_id

__all__ = ["GoogleInteractionsEncoder", "interactions_usage_body"]


def interactions_usage_body(usage: Usage | None) -> dict[str, Any]:
    """``usage`` in the Interactions API's words: thoughts apart from the output."""
    usage = usage if usage is not None else Usage()
    thoughts = min(usage.thinking_tokens, usage.completion_tokens)
    return {
        "total_tokens": usage.total_tokens,
        "total_input_tokens": usage.prompt_tokens,
        "total_cached_tokens": usage.cache_read_input_tokens,
        "total_output_tokens": usage.completion_tokens - thoughts,
        "total_tool_use_tokens": 0,
        "total_thought_tokens": thoughts,
    }


class GoogleInteractionsEncoder(WireEncoder):
    """ChatEvents -> the streamed ``POST /v1beta/interactions`` (``stream: true``)."""

    format = "google-interactions"
    media_type = "text/event-stream"
    event_name = "event_type"
    call_id_prefix: ClassVar[str] = "fc_"

    def __init__(self, model: str) -> None:
        super().__init__(model)
        self.id = _interaction_id()
        """The interaction's id, on its created and completed events."""
        self._steps = 0

    def _interaction(self, status: str, **more: Any) -> dict[str, Any]:
        return {
            "id": self.id,
            "status": status,
            **more,
            "object": "interaction",
            "model": self.model,
        }

    def open(self) -> list[Payload]:
        """``interaction.created`` and ``interaction.status_update``."""
        return [
            {"interaction": self._interaction("in_progress"), "event_type": "interaction.created"},
            {
                "interaction_id": self.id,
                "status": "in_progress",
                "event_type": "interaction.status_update",
            },
        ]

    def open_block(self, block: Block) -> list[Payload]:
        """``step.start`` of a ``model_output``, ``thought`` or ``function_call`` step."""
        if block.kind == "text":
            step: dict[str, Any] = {"type": "model_output"}
        elif block.kind == "thinking":
            step = {"type": "thought"}
        elif block.kind == "call":
            step = {"id": self.call_id(block), "type": "function_call", "name": block.name}
            step["arguments"] = {}
        else:
            return []
        block.index = self._steps
        self._steps += 1
        return [{"index": block.index, "step": step, "event_type": "step.start"}]

    def close_block(self, block: Block) -> list[Payload]:
        """``step.stop``."""
        if block.index < 0:
            return []
        return [{"index": block.index, "event_type": "step.stop"}]

    def text(self, block: Block, text: str) -> list[Payload]:
        """A ``text`` delta."""
        return [_delta(block, {"text": text, "type": "text"})]

    def thinking(self, block: Block, text: str) -> list[Payload]:
        """A ``thought_summary`` delta."""
        content = {"type": "text", "text": text}
        return [_delta(block, {"content": content, "type": "thought_summary"})]

    def signature(self, block: Block, signature: str) -> list[Payload]:
        """A ``thought_signature`` delta."""
        return [_delta(block, {"signature": signature, "type": "thought_signature"})]

    def call_delta(self, block: Block, fragment: str) -> list[Payload]:
        """An ``arguments_delta`` of a function call (server tools are dropped)."""
        if block.kind != "call":
            return []
        return [_delta(block, {"arguments": fragment, "type": "arguments_delta"})]

    def citation(self, event: ChatEvent) -> list[Payload]:
        """A ``text_annotation_delta`` of the open text step (a ``url_citation``)."""
        citation = event.citation
        block = self._block
        if citation is None or not citation.url or block is None or block.kind != "text":
            return []
        annotation: dict[str, Any] = {"url": citation.url, "type": "url_citation"}
        if citation.title:
            annotation["title"] = citation.title
        if citation.start_index is not None and citation.end_index is not None:
            annotation["start_index"] = citation.start_index
            annotation["end_index"] = citation.end_index
        return [_delta(block, {"annotations": [annotation], "type": "text_annotation_delta"})]

    def finish(self, end: MessageEnd) -> list[Payload]:
        """``interaction.completed`` with the status and usage (no steps: they streamed)."""
        status = self.finish_word(end.kind, end.reason)
        interaction = self._interaction(status, usage=interactions_usage_body(end.usage))
        return [{"interaction": interaction, "event_type": "interaction.completed"}]

    def error(self, status: int, message: str, event: ChatEvent) -> list[Payload]:
        """An ``error`` event."""
        return [{**self.error_body(status, message), "event_type": "error"}]

    @classmethod
    def error_body(cls, status: int, message: str | None = None) -> dict[str, Any]:
        """``{"error": {"code", "message"}}``, the code a word (the Interactions API's
        ``Error``: google-genai's SDK refuses Gemini's numeric code here)."""
        info = error_info(status, message)
        return {"error": {"code": info.gemini_status, "message": info.message}}

    @classmethod
    def response_body(cls, response: ChatResponse, *, model: str) -> dict[str, Any]:
        """The Interaction resource: ``status``, ``usage`` and its output ``steps``
        (``thought``, ``model_output``, ``function_call``, as a request's assistant turn
        is written)."""
        steps = assistant_steps(response.message or AssistantMessage())
        for step in steps:
            if step["type"] == "function_call" and not step["id"]:
                step["id"] = random_id(cls.call_id_prefix, 8)
        return {
            "id": _interaction_id(),
            "status": cls.response_finish_word(response),
            "usage": interactions_usage_body(response.usage),
            "steps": steps,
            "object": "interaction",
            "model": model,
        }


def _delta(block: Block, delta: dict[str, Any]) -> dict[str, Any]:
    return {"index": block.index, "delta": delta, "event_type": "step.delta"}


def _interaction_id() -> str:
    return random_id("v1_", 40)
