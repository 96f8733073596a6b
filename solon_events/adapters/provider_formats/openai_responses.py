"""OpenAI Responses (``"openai-responses"``): typed SSE events with ``sequence_number``, from
``response.created`` to ``response.completed`` (or ``response.incomplete``, or ``error`` and
``response.failed``).

=======================================  ==================================================
ChatEvent                                what is written
=======================================  ==================================================
first content                            ``response.created``, ``response.in_progress``
TEXT_START / _DELTA / _END               a ``message`` output item: ``output_item.added``,
                                         ``content_part.added`` (``output_text``),
                                         ``output_text.delta`` events, then
                                         ``output_text.done``, ``content_part.done``,
                                         ``output_item.done``
CITATION with a URL                      ``output_text.annotation.added`` (a
                                         ``url_citation``) in the open message
THINKING_* (the text)                    a ``reasoning`` item's summary:
                                         ``reasoning_summary_part.added``,
                                         ``reasoning_summary_text.delta`` events, their
                                         ``.done`` events
THINKING_REDACTED                        a ``reasoning`` item holding it as its
                                         ``encrypted_content``
TOOL_CALL_*                              a ``function_call`` item (``call_id``, name),
                                         ``function_call_arguments.delta`` events,
                                         ``function_call_arguments.done``
REFUSAL_DELTA                            a ``message`` item with a ``refusal`` part,
                                         ``refusal.delta`` events
SERVER_TOOL_* (a tool the provider ran)  a ``<tool>_call`` item, done with its result (the
                                         upstream's own item when it was a Responses one)
RESPONSE_END (or ABORT)                  ``response.completed`` (every output item, the
                                         usage), or ``response.incomplete`` with
                                         ``incomplete_details.reason``
                                         (``max_output_tokens``, ``content_filter``) when the
                                         response stopped at its length or a filter
ERROR                                    an ``error`` event (``code``, ``message``), then
                                         ``response.failed``
=======================================  ==================================================

A tool-call finish has no word of its own: the response completes, with its
``function_call`` items.

What the format cannot carry, and is dropped: thinking signatures (Responses keeps a
reasoning item's state in ``encrypted_content``: redacted thinking goes there), images,
search results outside a server tool's item, a text block's final text, tool results
(TOOL_RESULT), cache-creation token counts and the step boundaries of a multi-step
response (its steps are written as one response, finishing as its last step does). The
``openai-responses`` dialect reads a response's thinking parts back separated by a blank
line (``"\\n\\n"``), as it separates the provider's summary parts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...event_model.events import ChatEvent
from ...event_model.finish import FinishReason
from ...event_model.results import ChatResponse, ToolCall, Usage
from .base import (
    Block,
    MessageEnd,
    Payload,
    WireEncoder,
    error_info,
    now,
    random_id,
    response_finish_kind,
)
from .openai_chat import OpenAIChatEncoder

__all__ = ["OpenAIResponsesEncoder", "responses_usage"]

_HEX = "0123456789abcdef"
_INCOMPLETE: dict[FinishReason, str] = {
    FinishReason.LENGTH: "max_output_tokens",
    FinishReason.CONTENT_FILTER: "content_filter",
}
"""The finish kinds a response stops *incomplete* for, and its ``incomplete_details.reason``."""


def responses_usage(usage: Usage | None) -> dict[str, Any]:
    """``usage`` in the Responses API's words (zeros without usage)."""
    if usage is None:
        usage = Usage()
    return {
        "input_tokens": usage.prompt_tokens,
        "input_tokens_details": {"cached_tokens": usage.cache_read_input_tokens},
        "output_tokens": usage.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": usage.thinking_tokens},
        "total_tokens": usage.total_tokens,
    }


def _item_id(prefix: str) -> str:
    return random_id(prefix, 48, _HEX)


def _output_text(text: str, annotations: Sequence[Any] = ()) -> dict[str, Any]:
    return {"type": "output_text", "annotations": list(annotations), "logprobs": [], "text": text}


def _message_item(item_id: str, parts: list[dict[str, Any]], status: str) -> dict[str, Any]:
    return {
        "id": item_id,
        "type": "message",
        "status": status,
        "content": parts,
        "role": "assistant",
    }


def _reasoning_item(item_id: str, summary: str, encrypted: str | None = None) -> dict[str, Any]:
    item: dict[str, Any] = {
        "id": item_id,
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": summary}] if summary else [],
    }
    if encrypted is not None:
        item["encrypted_content"] = encrypted
    return item


def _call_item(
    item_id: str, call_id: str, name: str, arguments: str, status: str
) -> dict[str, Any]:
    return {
        "id": item_id,
        "type": "function_call",
        "status": status,
        "arguments": arguments,
        "call_id": call_id,
        "name": name,
    }


def _response(
    response_id: str,
    created: int,
    model: str,
    status: str,
    output: list[dict[str, Any]],
    usage: dict[str, Any] | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """A ``response`` object as the API writes it (the request's settings at their defaults)."""
    return {
        "id": response_id,
        "object": "response",
        "created_at": created,
        "status": status,
        "background": False,
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "max_output_tokens": None,
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "service_tier": "default",
        "store": False,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": usage,
        "user": None,
        "metadata": {},
        **fields,
    }


def _finished(kind: FinishReason, usage: Usage | None) -> tuple[str, dict[str, Any]]:
    """The status and fields of a finished response: completed, or incomplete and why."""
    reason = _INCOMPLETE.get(kind)
    fields: dict[str, Any] = {"usage": responses_usage(usage)}
    if reason is None:
        return "completed", {**fields, "completed_at": now()}
    return "incomplete", {**fields, "incomplete_details": {"reason": reason}}


class OpenAIResponsesEncoder(WireEncoder):
    """ChatEvents -> the ``/v1/responses`` stream."""

    format = "openai-responses"
    media_type = "text/event-stream"
    event_name = "type"
    refusal_blocks = True

    def __init__(self, model: str) -> None:
        super().__init__(model)
        self.id = _response_id()
        """The response's id."""
        self.created = now()
        self._sequence = -1
        self._output: list[dict[str, Any]] = []
        self._item: dict[str, Any] = {}
        self._annotations: list[dict[str, Any]] = []
        self._server_items: dict[int, dict[str, Any]] = {}

    def _event(self, type: str, **fields: Any) -> dict[str, Any]:
        self._sequence += 1
        return {"type": type, "sequence_number": self._sequence, **fields}

    def _response(self, status: str, **fields: Any) -> dict[str, Any]:
        output = [] if status == "in_progress" else list(self._output)
        return _response(self.id, self.created, self.model, status, output, **fields)

    def _where(self) -> dict[str, Any]:
        return {"item_id": self._item["id"], "output_index": len(self._output)}

    def _added(self, item: dict[str, Any], index: int | None = None) -> dict[str, Any]:
        """``output_item.added`` of ``item``, the open item from now on (at the end of the
        output, or at ``index``, where a server tool's item waits for its result)."""
        self._item = item
        index = len(self._output) if index is None else index
        return self._event("response.output_item.added", output_index=index, item=item)

    def _done(self, item: dict[str, Any], index: int | None = None) -> dict[str, Any]:
        """``output_item.done`` of ``item``, added to the output (or put at ``index``)."""
        if index is None:
            index = len(self._output)
            self._output.append(item)
        else:
            self._output[index] = item
        self._item = {}
        return self._event("response.output_item.done", output_index=index, item=item)

    # ---------------------------------------------------------------- hooks

    def open(self) -> list[Payload]:
        """``response.created`` and ``response.in_progress``."""
        return [
            self._event("response.created", response=self._response("in_progress")),
            self._event("response.in_progress", response=self._response("in_progress")),
        ]

    def open_block(self, block: Block) -> list[Payload]:
        """``output_item.added`` of the block's item, and its first part's ``.added``."""
        kind = block.kind
        if kind in ("text", "refusal"):
            item = _message_item(_item_id("msg_"), [], "in_progress")
            if kind == "text":
                part: dict[str, Any] = _output_text("")
                self._annotations = []
            else:
                part = {"type": "refusal", "refusal": ""}
            added = self._added(item)
            return [
                added,
                self._event(
                    "response.content_part.added", **self._where(), content_index=0, part=part
                ),
            ]
        if kind == "thinking":
            added = self._added(_reasoning_item(_item_id("rs_"), ""))
            summary = {"type": "summary_text", "text": ""}
            return [
                added,
                self._event(
                    "response.reasoning_summary_part.added",
                    **self._where(),
                    summary_index=0,
                    part=summary,
                ),
            ]
        if kind == "call":
            call_id = self.call_id(block)
            return [
                self._added(_call_item(_item_id("fc_"), call_id, block.name, "", "in_progress"))
            ]
        if kind == "server_tool":
            item = {
                "id": _item_id("ws_"),
                "type": f"{block.sub_type or block.name}_call",
                "status": "in_progress",
            }
            block.index = len(self._output)
            self._server_items[block.index] = item
            self._output.append(item)  # its place, until its result
            return [self._added(item, block.index)]
        return []

    def close_block(self, block: Block) -> list[Payload]:
        """The ``.done`` events of the block's item, ending with ``output_item.done``
        (a server tool's item is done with its result)."""
        text = "".join(block.fragments)
        kind = block.kind
        if kind == "server_tool":
            return []
        where = self._where()
        if kind == "text":
            part = _output_text(text, self._annotations)
            events = [
                self._event(
                    "response.output_text.done", **where, content_index=0, text=text, logprobs=[]
                ),
                self._event("response.content_part.done", **where, content_index=0, part=part),
            ]
            item = _message_item(where["item_id"], [part], "completed")
        elif kind == "refusal":
            part = {"type": "refusal", "refusal": text}
            events = [
                self._event("response.refusal.done", **where, content_index=0, refusal=text),
                self._event("response.content_part.done", **where, content_index=0, part=part),
            ]
            item = _message_item(where["item_id"], [part], "completed")
        elif kind == "thinking":
            summary = {"type": "summary_text", "text": text}
            events = [
                self._event(
                    "response.reasoning_summary_text.done", **where, summary_index=0, text=text
                ),
                self._event(
                    "response.reasoning_summary_part.done", **where, summary_index=0, part=summary
                ),
            ]
            item = _reasoning_item(where["item_id"], text)
        elif kind == "call":
            events = [self._event("response.function_call_arguments.done", **where, arguments=text)]
            item = _call_item(where["item_id"], self.call_id(block), block.name, text, "completed")
        else:
            return []
        return [*events, self._done(item)]

    def text(self, block: Block, text: str) -> list[Payload]:
        """An ``output_text.delta``."""
        return [
            self._delta(block, "response.output_text.delta", "content_index", text, logprobs=[])
        ]

    def thinking(self, block: Block, text: str) -> list[Payload]:
        """A ``reasoning_summary_text.delta``."""
        return [self._delta(block, "response.reasoning_summary_text.delta", "summary_index", text)]

    def refusal(self, text: str) -> list[Payload]:
        """A ``refusal.delta`` in the open refusal part."""
        assert self._block is not None
        return [self._delta(self._block, "response.refusal.delta", "content_index", text)]

    def _delta(self, block: Block, type: str, index: str, text: str, **more: Any) -> Payload:
        """A delta event (``type``) of ``text`` in the open item's first part (``index``
        names the part's position), kept in ``block``."""
        block.fragments.append(text)
        where = {"item_id": self._item["id"], "output_index": len(self._output), index: 0}
        return self._event(type, **where, delta=text, **more)

    def redacted(self, data: str) -> list[Payload]:
        """A whole ``reasoning`` item holding ``data`` as its ``encrypted_content``."""
        item_id = _item_id("rs_")
        added = self._added(_reasoning_item(item_id, ""))
        return [added, self._done(_reasoning_item(item_id, "", data))]

    def call_delta(self, block: Block, fragment: str) -> list[Payload]:
        """A ``function_call_arguments.delta`` (a server tool's input is not streamed)."""
        if block.kind != "call":
            return []
        return [
            self._event("response.function_call_arguments.delta", **self._where(), delta=fragment)
        ]

    def server_tool_result(self, block: Block | None, event: ChatEvent) -> list[Payload]:
        """``output_item.done`` of the server tool's item with its result: the upstream's
        own item when it was a Responses one, else the item ``completed`` (``failed`` for
        an error result)."""
        index = block.index if block is not None else -1
        item = self._server_items.pop(index, None)
        payloads: list[Payload] = []
        if item is None:
            sub_type = event.sub_type or (block.name if block is not None else "") or "server"
            item = {"id": _item_id("ws_"), "type": f"{sub_type}_call", "status": "in_progress"}
            index = len(self._output)
            self._output.append(item)
            payloads.append(self._added(item, index))
        raw = event.raw
        if raw.get("type") == item["type"]:
            done = {**raw, "id": item["id"]}
        else:
            done = {**item, "status": "failed" if event.attrs.get("is_error") else "completed"}
        return [*payloads, self._done(done, index)]

    def citation(self, event: ChatEvent) -> list[Payload]:
        """An ``output_text.annotation.added`` (a ``url_citation``) in the open message
        (citations without a URL, or outside a text block, are dropped)."""
        citation = event.citation
        block = self._block
        if citation is None or not citation.url or block is None or block.kind != "text":
            return []
        position = len("".join(block.fragments))
        annotation = {
            "type": "url_citation",
            "url": citation.url,
            "title": citation.title or "",
            "start_index": citation.start_index if citation.start_index is not None else position,
            "end_index": citation.end_index if citation.end_index is not None else position,
        }
        self._annotations.append(annotation)
        return [
            self._event(
                "response.output_text.annotation.added",
                **self._where(),
                content_index=0,
                annotation_index=len(self._annotations) - 1,
                annotation=annotation,
            )
        ]

    def finish(self, end: MessageEnd) -> list[Payload]:
        """``response.completed`` (or ``response.incomplete``) with every output item and
        the usage; server tool items left without a result are done first."""
        payloads: list[Payload] = [
            self._done({**item, "status": "completed"}, index)
            for index, item in self._server_items.items()
        ]
        self._server_items.clear()
        status, fields = _finished(end.kind, end.usage)
        response_object = self._response(status, **fields)
        return [*payloads, self._event(f"response.{status}", response=response_object)]

    def error(self, status: int, message: str, event: ChatEvent) -> list[Payload]:
        """An ``error`` event, then ``response.failed``."""
        info = error_info(status)
        code = info.openai_code or info.openai_type
        failed = self._response("failed", error={"code": code, "message": message})
        return [
            self._event("error", code=code, message=message, param=None),
            self._event("response.failed", response=failed),
        ]

    @classmethod
    def error_body(cls, status: int, message: str | None = None) -> dict[str, Any]:
        """``{"error": {"message", "type", "param", "code"}}``, as Chat Completions."""
        return OpenAIChatEncoder.error_body(status, message)

    @classmethod
    def response_body(cls, response: ChatResponse, *, model: str) -> dict[str, Any]:
        """A ``response`` object: a reasoning item (the thinking as its summary), one per
        redacted thinking, the message, a ``function_call`` item per call, the status
        (``incomplete`` for a length or filter stop) and the usage."""
        message = response.message
        metadata = message.metadata if message is not None else {}
        output: list[dict[str, Any]] = []
        if response.thinking:
            output.append(_reasoning_item(_item_id("rs_"), response.thinking))
        output += [
            _reasoning_item(_item_id("rs_"), "", data)
            for data in metadata.get("redacted_thinking") or ()
        ]
        parts: list[dict[str, Any]] = []
        if response.text:
            parts.append(_output_text(response.text))
        if message is not None and message.refusal:
            parts.append({"type": "refusal", "refusal": message.refusal})
        if parts:
            output.append(_message_item(_item_id("msg_"), parts, "completed"))
        output += [_call_output(call) for call in response.tool_calls]
        status, fields = _finished(response_finish_kind(response), response.usage)
        return _response(_response_id(), now(), model, status, output, **fields)


def _call_output(call: ToolCall) -> dict[str, Any]:
    call_id = call.id or random_id(OpenAIResponsesEncoder.call_id_prefix)
    return _call_item(_item_id("fc_"), call_id, call.name, call.arguments_str or "{}", "completed")


def _response_id() -> str:
    return _item_id("resp_")
