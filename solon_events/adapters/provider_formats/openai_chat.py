"""OpenAI Chat Completions (``"openai"``): ``chat.completion.chunk`` SSE events, then ``[DONE]``.

=======================================  ==================================================
ChatEvent                                what is written
=======================================  ==================================================
first content                            a chunk with ``delta: {"role": "assistant",
                                         "content": ""}``
TEXT_DELTA                               ``delta.content``
THINKING_DELTA                           ``delta.reasoning_content`` (as DeepSeek, xAI and
                                         Qwen send it; ``reasoning_field="reasoning"``
                                         writes OpenRouter's and vLLM's ``reasoning``)
TOOL_CALL_START / _ARGS_DELTA            ``delta.tool_calls``: the call's ``index``, ``id``,
                                         ``type: "function"`` and name with empty
                                         ``arguments``; then its argument fragments
REFUSAL_DELTA                            ``delta.refusal``
CITATION with a URL                      ``delta.annotations`` (a ``url_citation``)
RESPONSE_END (or ABORT)                  a chunk with ``finish_reason`` (``stop``,
                                         ``length``, ``tool_calls``, ``content_filter``),
                                         then the usage chunk of
                                         ``stream_options.include_usage`` (``choices: []``;
                                         cached and reasoning tokens in its details)
ERROR                                    ``{"error": {"message", "type", "param",
                                         "code"}}``, as OpenAI sends mid-stream
close()                                  ``data: [DONE]`` (not after an error)
=======================================  ==================================================

What the format cannot carry, and is dropped: thinking signatures and redacted thinking,
server tools and their results, images, search results, a text block's final text, tool
results (TOOL_RESULT), cache-creation token counts and the step boundaries of a
multi-step response (its steps are written as one message, finishing as its last step
does).
"""

from __future__ import annotations

from typing import Any

from ...event_model.events import ChatEvent
from ...event_model.results import ChatResponse, Usage
from .base import Block, MessageEnd, Payload, WireEncoder, error_info, now, random_id

__all__ = ["OpenAIChatEncoder", "chat_usage"]


def chat_usage(usage: Usage | None) -> dict[str, Any]:
    """``usage`` in Chat Completions' words (zeros without usage)."""
    if usage is None:
        usage = Usage()
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
        "prompt_tokens_details": {
            "cached_tokens": usage.cache_read_input_tokens,
            "audio_tokens": 0,
        },
        "completion_tokens_details": {
            "reasoning_tokens": usage.thinking_tokens,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


class OpenAIChatEncoder(WireEncoder):
    """ChatEvents -> the ``/v1/chat/completions`` stream (``stream_options.include_usage``).

    ``reasoning_field`` names the delta field thinking goes in (``"reasoning_content"``
    or ``"reasoning"``); ``include_usage=False`` leaves out the usage chunk, as OpenAI
    does for a request without ``stream_options.include_usage``.
    """

    format = "openai"
    media_type = "text/event-stream"

    def __init__(
        self, model: str, *, reasoning_field: str = "reasoning_content", include_usage: bool = True
    ) -> None:
        super().__init__(model)
        self.include_usage = include_usage
        self.id = _completion_id()
        """The completion's id, on every chunk."""
        self.created = now()
        self.reasoning_field = reasoning_field
        self._fingerprint = _fingerprint()

    def _chunk(self, delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "service_tier": "default",
            "system_fingerprint": self._fingerprint,
            "choices": [
                {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
            ],
            "usage": None,
        }

    def open(self) -> list[Payload]:
        """The role chunk."""
        return [self._chunk({"role": "assistant", "content": "", "refusal": None})]

    def text(self, block: Block, text: str) -> list[Payload]:
        """A ``content`` delta."""
        return [self._chunk({"content": text})]

    def thinking(self, block: Block, text: str) -> list[Payload]:
        """A ``reasoning_content`` (or ``reasoning``) delta."""
        return [self._chunk({self.reasoning_field: text})]

    def open_block(self, block: Block) -> list[Payload]:
        """A call's first chunk: its index, id and name, with empty arguments."""
        if block.kind != "call":
            return []
        head = {
            "index": block.number,
            "id": self.call_id(block),
            "type": "function",
            "function": {"name": block.name, "arguments": ""},
        }
        return [self._chunk({"tool_calls": [head]})]

    def call_delta(self, block: Block, fragment: str) -> list[Payload]:
        """A fragment of a call's arguments, by its index."""
        if block.kind != "call":
            return []
        call = {"index": block.number, "function": {"arguments": fragment}}
        return [self._chunk({"tool_calls": [call]})]

    def refusal(self, text: str) -> list[Payload]:
        """A ``refusal`` delta."""
        return [self._chunk({"refusal": text})]

    def citation(self, event: ChatEvent) -> list[Payload]:
        """A ``url_citation`` annotation (citations without a URL are dropped)."""
        citation = event.citation
        if citation is None or not citation.url:
            return []
        body: dict[str, Any] = {"url": citation.url, "title": citation.title or ""}
        if citation.start_index is not None and citation.end_index is not None:
            body["start_index"] = citation.start_index
            body["end_index"] = citation.end_index
        if citation.cited_text:
            body["content"] = citation.cited_text
        annotation = {"type": "url_citation", "url_citation": body}
        return [*self._start(), self._chunk({"annotations": [annotation]})]

    def finish(self, end: MessageEnd) -> list[Payload]:
        """The ``finish_reason`` chunk, then (``include_usage``) the usage chunk
        (``choices: []``)."""
        finish = self._chunk({}, self.finish_word(end.kind, end.reason))
        if not self.include_usage:
            return [finish]
        usage_chunk = self._chunk({})
        usage_chunk["choices"] = []
        usage_chunk["usage"] = chat_usage(end.usage)
        return [finish, usage_chunk]

    def error(self, status: int, message: str, event: ChatEvent) -> list[Payload]:
        """An ``{"error": {...}}`` data event, as OpenAI sends mid-stream."""
        return [self.error_body(status, message)]

    def end_of_stream(self) -> list[Payload]:
        """``[DONE]``, unless the stream failed."""
        return [] if self.failed else ["[DONE]"]

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

    @classmethod
    def response_body(cls, response: ChatResponse, *, model: str) -> dict[str, Any]:
        """A ``chat.completion`` object: one choice with the message (``content``,
        ``reasoning_content``, ``refusal``, ``tool_calls``), its finish reason and usage."""
        message: dict[str, Any] = {
            "role": "assistant",
            "content": response.text or None,
            "refusal": (response.message.refusal or None) if response.message else None,
            "annotations": [],
        }
        if response.thinking:
            message["reasoning_content"] = response.thinking
        if response.tool_calls:
            message["tool_calls"] = [
                {
                    "id": call.id or random_id(cls.call_id_prefix),
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments_str or "{}"},
                }
                for call in response.tool_calls
            ]
        return {
            "id": _completion_id(),
            "object": "chat.completion",
            "created": now(),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": cls.response_finish_word(response),
                }
            ],
            "usage": chat_usage(response.usage),
            "service_tier": "default",
            "system_fingerprint": _fingerprint(),
        }


def _completion_id() -> str:
    return random_id("chatcmpl-", 29)


def _fingerprint() -> str:
    return random_id("fp_", 10, "0123456789abcdef")
