"""Gemini ``streamGenerateContent?alt=sse`` (``"gemini"``): each SSE event a whole
``GenerateContentResponse`` (CRLF line ends, as Google sends them).

=======================================  ==================================================
ChatEvent                                what is written
=======================================  ==================================================
TEXT_DELTA                               a response whose candidate holds one ``text`` part
THINKING_DELTA                           a ``text`` part with ``"thought": true``
THINKING_SIGNATURE                       an empty thought part with its ``thoughtSignature``
TOOL_CALL_*                              a ``functionCall`` part with the whole ``args`` (and
                                         the call's ``id``) when the call ends; with
                                         ``stream_arguments=True``, a part naming the call
                                         when it starts (``willContinue``), its arguments as
                                         ``partialArgs`` entries (a JSON path and a value,
                                         strings in pieces) and a closing part
USAGE                                    ``usageMetadata`` on every response from then on
RESPONSE_END (or ABORT)                  a response with ``finishReason`` (``STOP`` for
                                         answers and tool calls alike, ``MAX_TOKENS``,
                                         ``SAFETY``, or the upstream's own Gemini word) and
                                         the whole ``usageMetadata``
ERROR                                    ``{"error": {"code", "message", "status"}}``
=======================================  ==================================================

Usage: ``candidatesTokenCount`` counts the answer without the thinking, which is
``thoughtsTokenCount``, as Gemini counts them; cached tokens are
``cachedContentTokenCount``.

What the format cannot carry, and is dropped: redacted thinking, server tools and their
results, images, citations and search results, refusal deltas, a text block's final text,
tool results (TOOL_RESULT), cache-creation token counts, a finish for tool calls (a step
that called tools stops with ``STOP``), the arguments' text as it was streamed (the
arguments are written as a JSON object) and the step boundaries of a multi-step response
(its steps are written as one response, finishing as its last step does).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

import orjson

from ...event_model.events import ChatEvent
from ...event_model.results import ChatResponse, Usage
from .base import Block, MessageEnd, Payload, WireEncoder, error_info, random_id

__all__ = ["GeminiEncoder", "gemini_usage_metadata", "partial_args"]

_OTHER_REASONS = frozenset(
    {"RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY"}
)

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PIECE = 16  # characters of a string value per partialArgs entry


def gemini_usage_metadata(usage: Usage | None, final: bool = True) -> dict[str, Any]:
    """``usage`` as ``usageMetadata`` (zeros without usage); before the end (``final``
    false) only the prompt's counts, as Gemini sends them while it streams."""
    if usage is None:
        usage = Usage()
    details = [{"modality": "TEXT", "tokenCount": usage.prompt_tokens}]
    if not final:
        return {
            "promptTokenCount": usage.prompt_tokens,
            "totalTokenCount": usage.prompt_tokens,
            "promptTokensDetails": details,
        }
    metadata: dict[str, Any] = {
        "promptTokenCount": usage.prompt_tokens,
        "candidatesTokenCount": max(0, usage.completion_tokens - usage.thinking_tokens),
        "totalTokenCount": usage.total_tokens,
        "promptTokensDetails": details,
    }
    if usage.thinking_tokens:
        metadata["thoughtsTokenCount"] = usage.thinking_tokens
    if usage.cache_read_input_tokens:
        metadata["cachedContentTokenCount"] = usage.cache_read_input_tokens
    return metadata


def partial_args(value: Any, path: str = "$") -> Iterator[dict[str, Any]]:
    """The ``partialArgs`` entries that say ``value`` at ``path``, members in order (an
    empty object or array says nothing; strings come in pieces)."""
    if isinstance(value, Mapping):
        for key, member in value.items():
            step = (
                f".{key}"
                if _NAME.fullmatch(key)
                else "['" + re.sub(r"(['\\])", r"\\\1", key) + "']"
            )
            yield from partial_args(member, path + step)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from partial_args(item, f"{path}[{index}]")
    elif isinstance(value, str):
        for start in range(0, len(value), _PIECE):
            yield {
                "jsonPath": path,
                "stringValue": value[start : start + _PIECE],
                "willContinue": True,
            }
        yield {"jsonPath": path, "stringValue": ""}
    elif isinstance(value, bool):
        yield {"jsonPath": path, "boolValue": value}
    elif value is None:
        yield {"jsonPath": path, "nullValue": None}
    else:
        yield {"jsonPath": path, "numberValue": value}


def _call_part(name: str, call_id: str | None, args: Any) -> dict[str, Any]:
    call: dict[str, Any] = {"name": name, "args": args}
    if call_id:
        call["id"] = call_id
    return {"functionCall": call}


class GeminiEncoder(WireEncoder):
    """ChatEvents -> the ``/v1beta/models/{model}:streamGenerateContent?alt=sse`` stream.

    ``stream_arguments`` writes each tool call's arguments as ``partialArgs`` pieces (as
    Gemini 3 streams them) rather than whole ``args``.
    """

    format = "gemini"
    media_type = "text/event-stream"
    other_finish_words: ClassVar[frozenset[str]] = _OTHER_REASONS

    def __init__(self, model: str, *, stream_arguments: bool = False) -> None:
        super().__init__(model)
        self.id = random_id("", 22)
        """The ``responseId`` of every response."""
        self.stream_arguments = stream_arguments

    def frame(self, payload: Payload) -> bytes:
        """An SSE ``data:`` event with CRLF line ends."""
        return b"data: " + orjson.dumps(payload) + b"\r\n\r\n"

    def _chunk(
        self, parts: list[dict[str, Any]], finish_reason: str | None = None, final: bool = False
    ) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}}
        if finish_reason is not None:
            candidate["finishReason"] = finish_reason
        candidate["index"] = 0
        chunk: dict[str, Any] = {"candidates": [candidate]}
        if final or self.usage is not None:
            chunk["usageMetadata"] = gemini_usage_metadata(self.usage, final)
        chunk["modelVersion"] = self.model
        chunk["responseId"] = self.id
        return chunk

    def text(self, block: Block, text: str) -> list[Payload]:
        """A ``text`` part."""
        return [self._chunk([{"text": text}])]

    def thinking(self, block: Block, text: str) -> list[Payload]:
        """A ``thought`` part."""
        return [self._chunk([{"text": text, "thought": True}])]

    def signature(self, block: Block, signature: str) -> list[Payload]:
        """An empty thought part carrying the ``thoughtSignature``."""
        return [self._chunk([{"text": "", "thought": True, "thoughtSignature": signature}])]

    def open_block(self, block: Block) -> list[Payload]:
        """With ``stream_arguments``, the part naming a call (``willContinue``)."""
        if block.kind != "call" or not self.stream_arguments:
            return []
        call: dict[str, Any] = {"name": block.name, "willContinue": True}
        if block.id:
            call["id"] = block.id
        return [self._chunk([{"functionCall": call}])]

    def close_block(self, block: Block) -> list[Payload]:
        """A call's ``functionCall`` part with the whole ``args``; with
        ``stream_arguments``, its ``partialArgs`` pieces then the closing part."""
        if block.kind != "call":
            return []
        if not self.stream_arguments:
            return [self._chunk([_call_part(block.name, block.id, block.arguments)])]
        pieces: list[Payload] = [
            self._chunk([{"functionCall": {"partialArgs": [entry], "willContinue": True}}])
            for entry in partial_args(block.arguments)
        ]
        return [*pieces, self._chunk([{"functionCall": {}}])]

    def finish(self, end: MessageEnd) -> list[Payload]:
        """An empty text part with the ``finishReason`` and the whole ``usageMetadata``."""
        self.usage = end.usage
        return [self._chunk([{"text": ""}], self.finish_word(end.kind, end.reason), final=True)]

    def error(self, status: int, message: str, event: ChatEvent) -> list[Payload]:
        """An ``{"error": {...}}`` event, as Gemini sends mid-stream."""
        return [self.error_body(status, message)]

    def keep_alive(self) -> bytes:
        """An SSE comment line (CRLF)."""
        return b": keep-alive\r\n\r\n"

    @classmethod
    def error_body(cls, status: int, message: str | None = None) -> dict[str, Any]:
        """``{"error": {"code", "message", "status"}}``."""
        info = error_info(status, message)
        return {"error": {"code": status, "message": info.message, "status": info.gemini_status}}

    @classmethod
    def response_body(cls, response: ChatResponse, *, model: str) -> dict[str, Any]:
        """A ``GenerateContentResponse``: the thinking as a thought part (with its
        signature), the text, a ``functionCall`` part per call; the finish reason and the
        usage."""
        message = response.message
        metadata = message.metadata if message is not None else {}
        parts: list[dict[str, Any]] = []
        if response.thinking:
            thought: dict[str, Any] = {"text": response.thinking, "thought": True}
            if metadata.get("thinking_signature"):
                thought["thoughtSignature"] = metadata["thinking_signature"]
            parts.append(thought)
        if response.text:
            parts.append({"text": response.text})
        parts += [_call_part(call.name, call.id, call.arguments) for call in response.tool_calls]
        reason = cls.response_finish_word(response)
        return {
            "candidates": [
                {"content": {"parts": parts, "role": "model"}, "finishReason": reason, "index": 0}
            ],
            "usageMetadata": gemini_usage_metadata(response.usage),
            "modelVersion": model,
            "responseId": random_id("", 22),
        }
