"""Folding one step's events into its ChatResponse snapshot."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..event_model.events import EVENT_TYPES, ChatEvent, ChatEventType
from ..event_model.finish import FinishReason
from ..event_model.results import (
    ChatResponse,
    Citation,
    SearchResult,
    TextBlock,
    ToolCall,
    Usage,
    new_message,
    new_response,
    new_tool_call,
)

__all__ = ["ChatAccumulator"]

_TEXT_DELTA = EVENT_TYPES.TEXT_DELTA
_THINKING_DELTA = EVENT_TYPES.THINKING_DELTA
_RAW_TYPES_KEPT = 20


class _CallParts:
    """A tool call being assembled from its events."""

    __slots__ = ("final", "fragments", "id", "index", "name")

    def __init__(self, index: int) -> None:
        self.id: str | None = None
        self.name = ""
        self.index = index
        self.fragments: list[str] = []
        self.final: ToolCall | None = None

    def merge(self, call: ToolCall | None, tool_call_id: str | None) -> None:
        if tool_call_id and not self.id:
            self.id = tool_call_id
        if call is not None:
            if call.id and not self.id:
                self.id = call.id
            if call.name and not self.name:
                self.name = call.name

    def result(self) -> ToolCall:
        if self.final is not None:
            final = self.final
            if (final.id or not self.id) and (final.name or not self.name):
                return final
            return new_tool_call(
                final.id or self.id,
                final.name or self.name,
                final.arguments,
                final.arguments_str,
                final.index,
            )
        return new_tool_call(self.id, self.name, None, "".join(self.fragments), self.index)


class ChatAccumulator:
    """Folds the events of one step into its :class:`ChatResponse` (create one per step).

    Text, thinking and refusal are concatenated (a TEXT_END with ``text`` replaces its
    block's deltas by that final text); tool calls are keyed by index, else by
    id; citations and search results keep every occurrence; media blocks are kept once
    each, in event order with the text around them; within a step the latest usage
    snapshot wins (provider snapshots are cumulative and are never added).
    """

    __slots__ = (
        "_blocks",
        "_call_ids",
        "_calls",
        "_citations",
        "_metadata",
        "_refusal",
        "_search_results",
        "_text",
        "_text_flushed",
        "_text_start",
        "_thinking",
        "_usage_mark",
        "errors",
        "finish_reason",
        "model",
        "provider_response_id",
        "raw_types",
        "usage",
    )

    def __init__(self) -> None:
        self._text: list[str] = []
        self._thinking: list[str] = []
        self._refusal: list[str] = []
        self._calls: dict[Any, _CallParts] = {}
        self._call_ids: dict[str, Any] = {}
        self._citations: list[Citation] = []
        self._search_results: list[SearchResult] = []
        self._blocks: list[Any] = []
        self._text_flushed = 0
        self._text_start = 0
        self.usage: Usage | None = None
        """The latest usage snapshot of the step."""
        self._usage_mark: tuple[int, int, int, dict[Any, int]] | None = None
        """How much text, thinking, refusal and arguments had come at the latest usage."""
        self.finish_reason: str | None = None
        """The provider's finish reason, when known."""
        self.errors: list[BaseException] = []
        """Errors reported by ERROR events within the step."""
        self.provider_response_id: str | None = None
        self.model: str | None = None
        self._metadata: dict[str, Any] = {}
        self.raw_types: dict[str, None] | None = None
        """The ``raw_type`` of the step's RAW events (what its dialect did not know), in
        order, each once (None before the first)."""

    def add(self, event: ChatEvent) -> None:
        """Fold ``event`` into the step."""
        if self.provider_response_id is None and event.provider_response_id is not None:
            self.provider_response_id = event.provider_response_id
        kind = event.type
        if kind is _TEXT_DELTA:  # most events: one call less
            if event.text:
                self._text.append(event.text)
            return
        if kind is _THINKING_DELTA:
            if event.text:
                self._thinking.append(event.text)
            return
        handler = _HANDLERS.get(kind)
        if handler is not None:
            handler(self, event)

    def snapshot(
        self,
        *,
        finish_reason: str | None = None,
        model: str | None = None,
        provider_response_id: str | None = None,
        usage: Usage | None = None,
        finish: FinishReason | None = None,
    ) -> ChatResponse:
        """The step's response so far; the keyword arguments override what was folded
        (``finish``, the unified finish reason, is only what is given)."""
        blocks = self._blocks
        if blocks:
            blocks = list(blocks)
            if self._text_flushed < len(self._text):
                blocks.append(TextBlock(text="".join(self._text[self._text_flushed :])))
        metadata = None
        if self._metadata or self.errors:
            metadata = {
                key: tuple(value) if isinstance(value, list) else value
                for key, value in self._metadata.items()
            }
            if self.errors:
                metadata["errors"] = tuple(self.errors)
        calls = self._calls
        message = new_message(
            "".join(self._text),
            "".join(self._thinking),
            tuple([parts.result() for parts in calls.values()]) if calls else (),
            blocks,
            self._citations,
            self._search_results,
            "".join(self._refusal),
            metadata,
        )
        return new_response(
            message,
            usage if usage is not None else self.usage,
            finish_reason if finish_reason is not None else self.finish_reason,
            model if model is not None else self.model,
            provider_response_id or self.provider_response_id,
            None,
            None,
            finish,
        )

    @property
    def has_tool_calls(self) -> bool:
        """Whether the step has made a tool call."""
        return bool(self._calls)

    def unreported_output(self) -> tuple[str, str]:
        """What the step streamed after its latest usage snapshot (all of it without one),
        for an estimate of what the provider has not counted: the visible output (text,
        refusal, tool-call arguments) and the thinking."""
        mark = self._usage_mark
        text, thinking, refusal, fragments = mark if mark is not None else (0, 0, 0, {})
        visible = ["".join(self._text[text:]), "".join(self._refusal[refusal:])]
        for key, parts in self._calls.items():
            visible.append("".join(parts.fragments[fragments.get(key, 0) :]))
            if key not in fragments and parts.final is not None and not parts.fragments:
                visible.append(parts.final.arguments_str)
        return "".join(visible), "".join(self._thinking[thinking:])

    # handlers

    def _on_text(self, event: ChatEvent) -> None:
        if event.text:
            self._text.append(event.text)

    def _on_text_start(self, event: ChatEvent) -> None:
        self._text_start = len(self._text)

    def _on_text_end(self, event: ChatEvent) -> None:
        # A TEXT_END with text carries the provider's final text of the block, which
        # replaces what its deltas said (a server that rewrote the text at the end).
        if event.text is not None:
            start = max(self._text_start, self._text_flushed)
            self._text[start:] = [event.text]

    def _on_thinking(self, event: ChatEvent) -> None:
        if event.text:
            self._thinking.append(event.text)

    def _on_refusal(self, event: ChatEvent) -> None:
        if event.text:
            self._refusal.append(event.text)

    def _parts_for(self, event: ChatEvent) -> _CallParts:
        call = event.tool_call
        call_id = event.tool_call_id or (call.id if call is not None else None)
        index = event.index if event.index != -1 else (call.index if call is not None else -1)
        key: Any
        if index != -1:
            key = index
        elif call_id is not None:
            key = self._call_ids.get(call_id, f"id:{call_id}")
        else:
            key = next(reversed(self._calls)) if self._calls else "anonymous"
        parts = self._calls.get(key)
        if parts is None:
            parts = self._calls[key] = _CallParts(index)
        if call_id is not None:
            self._call_ids.setdefault(call_id, key)
        parts.merge(call, call_id)
        return parts

    def _on_call(self, event: ChatEvent) -> None:
        self._parts_for(event)

    def _on_call_delta(self, event: ChatEvent) -> None:
        if event.text:
            self._parts_for(event).fragments.append(event.text)

    def _on_call_end(self, event: ChatEvent) -> None:
        parts = self._parts_for(event)
        if (event.tool_call is not None and event.type is EVENT_TYPES.TOOL_CALL_CHUNK) or (
            event.tool_call is not None and (event.tool_call.arguments_str or not parts.fragments)
        ):
            parts.final = event.tool_call

    def _on_citation(self, event: ChatEvent) -> None:
        if event.citation is not None:
            self._citations.append(event.citation)

    def _on_search_result(self, event: ChatEvent) -> None:
        if event.search_result is not None:
            self._search_results.append(event.search_result)

    def _on_media(self, event: ChatEvent) -> None:
        block = event.block
        if block is None or any(b is block for b in self._blocks):
            return
        if self._text_flushed < len(self._text):
            self._blocks.append(TextBlock(text="".join(self._text[self._text_flushed :])))
            self._text_flushed = len(self._text)
        self._blocks.append(block)

    def _on_usage(self, event: ChatEvent) -> None:
        if event.usage is not None:
            self.usage = event.usage
            calls = self._calls
            self._usage_mark = (
                len(self._text),
                len(self._thinking),
                len(self._refusal),
                {key: len(parts.fragments) for key, parts in calls.items()} if calls else {},
            )

    def _on_error(self, event: ChatEvent) -> None:
        if event.error is not None:
            self.errors.append(event.error)

    def _on_signature(self, event: ChatEvent) -> None:
        if event.text:
            self._metadata["thinking_signature"] = event.text

    def _on_redacted(self, event: ChatEvent) -> None:
        if event.text:
            redacted = self._metadata.setdefault("redacted_thinking", [])
            redacted.append(event.text)

    def _on_content_filter(self, event: ChatEvent) -> None:
        self._metadata["content_filter"] = event.text or "content_filter"

    def _on_raw(self, event: ChatEvent) -> None:
        seen = self.raw_types
        if seen is None:
            seen = self.raw_types = {}
        if len(seen) < _RAW_TYPES_KEPT:
            seen[str(event.raw_type)] = None

    def _on_server_tool(self, event: ChatEvent) -> None:
        call = event.tool_call
        self._metadata.setdefault("server_tools", []).append(
            {
                "id": event.tool_call_id or (call.id if call is not None else event.item_id),
                "name": call.name if call is not None else None,
                "sub_type": event.sub_type,
            }
        )


_HANDLERS: dict[ChatEventType, Callable[[ChatAccumulator, ChatEvent], None]] = {
    EVENT_TYPES.TEXT_DELTA: ChatAccumulator._on_text,
    EVENT_TYPES.TEXT_START: ChatAccumulator._on_text_start,
    EVENT_TYPES.TEXT_END: ChatAccumulator._on_text_end,
    EVENT_TYPES.THINKING_DELTA: ChatAccumulator._on_thinking,
    EVENT_TYPES.REFUSAL_DELTA: ChatAccumulator._on_refusal,
    EVENT_TYPES.TOOL_CALL_START: ChatAccumulator._on_call,
    EVENT_TYPES.TOOL_CALL_ARGS_DELTA: ChatAccumulator._on_call_delta,
    EVENT_TYPES.TOOL_CALL_END: ChatAccumulator._on_call_end,
    EVENT_TYPES.TOOL_CALL_CHUNK: ChatAccumulator._on_call_end,
    EVENT_TYPES.CITATION: ChatAccumulator._on_citation,
    EVENT_TYPES.SEARCH_RESULT: ChatAccumulator._on_search_result,
    EVENT_TYPES.MEDIA_DONE: ChatAccumulator._on_media,
    EVENT_TYPES.USAGE: ChatAccumulator._on_usage,
    EVENT_TYPES.ERROR: ChatAccumulator._on_error,
    EVENT_TYPES.THINKING_SIGNATURE: ChatAccumulator._on_signature,
    EVENT_TYPES.THINKING_REDACTED: ChatAccumulator._on_redacted,
    EVENT_TYPES.CONTENT_FILTER: ChatAccumulator._on_content_filter,
    EVENT_TYPES.SERVER_TOOL_START: ChatAccumulator._on_server_tool,
    EVENT_TYPES.STEP_END: ChatAccumulator._on_usage,
    EVENT_TYPES.RAW: ChatAccumulator._on_raw,
}
"""What each event type folds into (types not listed fold nothing)."""
