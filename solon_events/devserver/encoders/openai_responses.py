"""OpenAI Responses: typed SSE events with ``sequence_number``, from ``response.created`` to
``response.completed`` (or ``error`` + ``response.failed``).

Thinking goes out as a ``reasoning`` item's summary text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..turns import Content, ToolCallPart, TurnUsage
from .base import Frame, RequestView, ToolDecl, Wire, content_text, now, random_id
from .openai_chat import OpenAIChatWire

__all__ = ["OpenAIResponsesWire"]

_HEX = "0123456789abcdef"


class OpenAIResponsesWire(Wire):
    """The ``/v1/responses`` stream."""

    framing = "sse-event"

    def __init__(self, model: str, usage: TurnUsage) -> None:
        super().__init__(model, usage)
        self._id = random_id("resp_", 50, _HEX)
        self._created = now()
        self._sequence = -1
        self._output: list[dict[str, Any]] = []
        self._item: dict[str, Any] = {}
        self._texts: list[str] = []

    @classmethod
    def read_request(cls, body: Mapping[str, Any]) -> RequestView:
        """Trailing ``function_call_output`` items; tools of ``type: function``."""
        raw_input = body.get("input")
        items = (
            [{"role": "user", "content": raw_input}]
            if isinstance(raw_input, str)
            else [i for i in raw_input or () if isinstance(i, Mapping)]
        )
        results: list[str] = []
        for item in reversed(items):
            if item.get("type") != "function_call_output":
                break
            results.insert(0, content_text(item.get("output")))
        user_text = next(
            (content_text(i.get("content")) for i in reversed(items) if i.get("role") == "user"),
            "",
        )
        tools = tuple(
            ToolDecl(str(t["name"]), t.get("parameters") or {})
            for t in body.get("tools") or ()
            if isinstance(t, Mapping) and t.get("type") == "function" and t.get("name")
        )
        return RequestView(
            model=str(body.get("model") or ""),
            user_text=user_text,
            tool_results=tuple(results),
            tools=tools,
        )

    @classmethod
    def error_body(cls, status: int, message: str | None = None) -> dict[str, Any]:
        """The same body as Chat Completions."""
        return OpenAIChatWire.error_body(status, message)

    def _event(self, type: str, **fields: Any) -> Frame:
        self._sequence += 1
        return {"type": type, "sequence_number": self._sequence, **fields}

    def _response(self, status: str, **fields: Any) -> dict[str, Any]:
        return {
            "id": self._id,
            "object": "response",
            "created_at": self._created,
            "status": status,
            "background": False,
            "error": None,
            "incomplete_details": None,
            "instructions": None,
            "max_output_tokens": None,
            "model": self.model,
            "output": list(self._output) if status != "in_progress" else [],
            "parallel_tool_calls": True,
            "previous_response_id": None,
            "reasoning": {"effort": None, "summary": None},
            "service_tier": "default",
            "store": True,
            "temperature": 1.0,
            "text": {"format": {"type": "text"}, "verbosity": "medium"},
            "tool_choice": "auto",
            "tools": [],
            "top_p": 1.0,
            "truncation": "disabled",
            "usage": None,
            "user": None,
            "metadata": {},
            **fields,
        }

    def open(self) -> list[Frame]:
        """``response.created`` and ``response.in_progress``."""
        return [
            self._event("response.created", response=self._response("in_progress")),
            self._event("response.in_progress", response=self._response("in_progress")),
        ]

    def _where(self) -> dict[str, Any]:
        return {"item_id": self._item["id"], "output_index": len(self._output)}

    def start_block(self, kind: str, part: Content) -> list[Frame]:
        """``output_item.added`` of a reasoning, message or function_call item, then the
        ``*_part.added`` event of its first part."""
        self._texts = []
        if kind == "thinking":
            self._item = {"id": random_id("rs_", 50, _HEX), "type": "reasoning", "summary": []}
            added = "response.reasoning_summary_part.added"
        elif kind == "text":
            self._item = {
                "id": random_id("msg_", 50, _HEX),
                "type": "message",
                "status": "in_progress",
                "content": [],
                "role": "assistant",
            }
            added = "response.content_part.added"
        else:
            assert isinstance(part, ToolCallPart)
            self._item = {
                "id": random_id("fc_", 50, _HEX),
                "type": "function_call",
                "status": "in_progress",
                "arguments": "",
                "call_id": random_id("call_"),
                "name": part.name,
            }
            return [self._item_event("response.output_item.added")]
        item_frame = self._item_event("response.output_item.added")
        return [item_frame, self._part_event(added, "")]

    def _item_event(self, type: str) -> Frame:
        return self._event(type, output_index=len(self._output), item=dict(self._item))

    def _part_event(self, type: str, text: str) -> Frame:
        if self._item["type"] == "reasoning":
            summary = {"type": "summary_text", "text": text}
            return self._event(type, **self._where(), summary_index=0, part=summary)
        part = {"type": "output_text", "annotations": [], "logprobs": [], "text": text}
        return self._event(type, **self._where(), content_index=0, part=part)

    def end_block(self, kind: str) -> list[Frame]:
        """The ``.done`` events of the open item, ending with ``output_item.done``."""
        text = "".join(self._texts)
        if kind == "thinking":
            self._item["summary"] = [{"type": "summary_text", "text": text}]
            frames = [
                self._event(
                    "response.reasoning_summary_text.done",
                    **self._where(),
                    summary_index=0,
                    text=text,
                ),
                self._part_event("response.reasoning_summary_part.done", text),
            ]
        elif kind == "text":
            self._item["status"] = "completed"
            self._item["content"] = [
                {"type": "output_text", "annotations": [], "logprobs": [], "text": text}
            ]
            frames = [
                self._event(
                    "response.output_text.done",
                    **self._where(),
                    content_index=0,
                    text=text,
                    logprobs=[],
                ),
                self._part_event("response.content_part.done", text),
            ]
        else:
            self._item["status"] = "completed"
            self._item["arguments"] = text
            frames = [
                self._event(
                    "response.function_call_arguments.done", **self._where(), arguments=text
                )
            ]
        frames.append(self._item_event("response.output_item.done"))
        self._output.append(self._item)
        return frames

    def thinking(self, text: str) -> list[Frame]:
        """A ``reasoning_summary_text.delta``."""
        self._texts.append(text)
        return [
            self._event(
                "response.reasoning_summary_text.delta",
                **self._where(),
                summary_index=0,
                delta=text,
            )
        ]

    def text(self, text: str) -> list[Frame]:
        """An ``output_text.delta``."""
        self._texts.append(text)
        return [
            self._event(
                "response.output_text.delta",
                **self._where(),
                content_index=0,
                delta=text,
                logprobs=[],
            )
        ]

    def tool_call(self, call: ToolCallPart) -> list[Frame]:
        """One ``function_call_arguments.delta`` per fragment."""
        self._texts.extend(call.fragments)
        return [
            self._event("response.function_call_arguments.delta", **self._where(), delta=fragment)
            for fragment in call.fragments
        ]

    def finish(self, reason: str) -> list[Frame]:
        """``response.completed`` with every output item and the usage."""
        usage = {
            "input_tokens": self.usage.prompt,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": self.usage.completion,
            "output_tokens_details": {"reasoning_tokens": self.usage.thinking},
            "total_tokens": self.usage.total,
        }
        response = self._response("completed", completed_at=now(), usage=usage)
        return [self._event("response.completed", response=response)]

    def error(self, message: str) -> list[Frame]:
        """An ``error`` event, then ``response.failed``."""
        error = {"type": "server_error", "code": "server_error", "message": message, "param": None}
        failed = self._response("failed", error={"code": "server_error", "message": message})
        return [self._event("error", error=error), self._event("response.failed", response=failed)]
