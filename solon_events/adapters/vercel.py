"""ChatEvents as the Vercel AI SDK's UI message stream, protocol v1 (what ``useChat`` reads).

Hand-written: no Python package implements the protocol; the chunk shapes and headers are
those of the ``ai`` package's ``uiMessageChunkSchema`` and ``UI_MESSAGE_STREAM_HEADERS``,
and ``tests/clients/`` checks the output with the ``ai`` package's own reader.

:class:`VercelEncoder` is the sans-I/O translator (one per response): ``feed(event)``
returns the UI message chunks (JSON objects) an event becomes. :func:`to_vercel` is the
same as a pipeable Rx operator. :func:`vercel_sse` frames a chunk as an SSE event, and
:data:`VERCEL_DONE` is the stream's last SSE event.

=========================================  ==============================================
ChatEvent                                  UI message chunks
=========================================  ==============================================
RESPONSE_START                             ``start`` (``messageId``: the response id)
STEP_START / STEP_END                      ``start-step`` / ``finish-step`` (after a
                                           ``message-metadata`` with the usage so far);
                                           nothing for a resumed step's (``sub_type``
                                           ``"resumed"``, see below)
TEXT_START / _DELTA / _END                 ``text-start`` / ``text-delta`` / ``text-end``
                                           (a final text in its ``providerMetadata``)
THINKING_START / _DELTA / _END             ``reasoning-start`` / ``-delta`` / ``-end``
TOOL_CALL_START / _ARGS_DELTA / _END       ``tool-input-start`` / ``tool-input-delta`` /
                                           ``tool-input-available`` (parsed ``input``)
TOOL_RESULT                                ``tool-output-available`` (``output``: the
                                           result text); ``tool-output-error`` when its
                                           ``attrs["is_error"]``; ``tool-output-denied``
                                           when ``attrs["denied"]``
STATUS of a running tool's progress        ``data-tool-progress`` (transient; ``data``:
                                           ``toolCallId``, ``message``, ``tool_name``,
                                           ``progress``, ``total``)
SERVER_TOOL_START / _ARGS_DELTA / _RESULT  the same tool chunks with
                                           ``providerExecuted: true``; a failed result is
                                           ``tool-output-error``
CITATION, SEARCH_RESULT with a URL         ``source-url``
MEDIA_DONE (image or file block)           ``file`` (a ``data:`` URL for inline data)
REFUSAL_DELTA / CONTENT_FILTER             ``data-refusal`` (the step's refusal so far) /
                                           ``data-content-filter``
RESPONSE_END                               ``finish`` (``finishReason``;
                                           ``messageMetadata``: ``usage``, ``responseId``,
                                           ``model``)
ABORT                                      ``abort``
ERROR                                      ``tool-output-error`` for a failed tool call,
                                           then ``error`` (``errorText``)
=========================================  ==============================================

A TEXT_END with ``text`` (the provider's final text of the block, which replaces what its
deltas said: see ``ChatResponse.text``) sends it on its ``text-end`` chunk as
``providerMetadata: {"solon": {"final_text": ...}}``, the one place the protocol lets a
stream say more of a text part once it is streamed: the ``ai`` package keeps it on the UI
message's text part (``part.providerMetadata.solon.final_text``), a UI shows it instead of
``part.text`` (:func:`ui_text`; the gateway's chat page does), and
:func:`~solon_events.adapters.inputs.messages_from_vercel` reads it back as the turn's text.

With ``argument_deltas=True`` each ``tool-input-delta`` is followed by a transient
``data-tool-input-delta`` part (``data``: ``toolCallId`` and ``deltas``, a list of
``{"path", "op", "value"}``: what the delta changed in the call's input, see
:func:`~solon_events.operators.argument_deltas`). The protocol's reader parses the whole
input text again on each ``tool-input-delta``, a cost that grows with the input; a UI that
applies these instead (in ``onData``; ``op`` ``"add"`` sets ``value`` at ``path``,
``"append"`` adds text to the string there) keeps a long input growing at the cost of each
delta alone.

Tool approval: the STEP_END of a step that paused for approval (its response's
``pending_approval``) sends a ``tool-approval-request`` per pending call before its
``finish-step`` (``approvalId``: :func:`~solon_events.event_model.approvals.approval_id`,
``toolCallId``), which the ``ai`` package turns into the tool part's
``approval-requested`` state; ``useChat``'s ``addToolApprovalResponse`` answers it in the
next request (:func:`~solon_events.adapters.inputs.approvals_from_vercel`). The response
that continues it (``VercelEncoder(message_id=...)``, the assistant message's id, so that
the client goes on with the same message) sends the decided calls' outputs
(``tool-output-available``, or ``tool-output-denied``) before its first ``start-step``, as
the AI SDK's own ``streamText`` does.

Usage is message metadata: ``{"usage": {...}}`` (our :class:`~solon_events.Usage` fields)
after each step and at ``finish``. Other events (other STATUS, HEARTBEAT, USAGE, RAW, CUSTOM,
THINKING_SIGNATURE, THINKING_REDACTED, MEDIA_PARTIAL) send nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import orjson
from reactivex import Observable

from ..core.partial_arguments import ArgumentDeltas
from ..core.partial_json import JsonDelta
from ..event_model.errors import ToolCallError
from ..event_model.events import EVENT_TYPES, ChatEvent
from ..event_model.finish import FinishReason, unified_finish
from ..event_model.results import FileBlock, ImageBlock, ToolCall, Usage
from ..event_model.steps import call_event
from .blocks import BlockIds
from .native import to_plain
from .rx import translating

__all__ = [
    "VERCEL_DONE",
    "VERCEL_HEADERS",
    "VercelEncoder",
    "final_text_metadata",
    "finish_reason",
    "to_vercel",
    "ui_text",
    "vercel_sse",
]

Chunk = dict[str, Any]

VERCEL_HEADERS: dict[str, str] = {
    "Content-Type": "text/event-stream",
    "Cache-Control": "no-cache",
    "Connection": "keep-alive",
    "x-vercel-ai-ui-message-stream": "v1",
    "x-accel-buffering": "no",
}
"""The response headers of a UI message stream (as the ``ai`` package sends them)."""

VERCEL_DONE = b"data: [DONE]\n\n"
"""The SSE event that ends a UI message stream."""


def final_text_metadata(text: str) -> dict[str, Any]:
    """The ``providerMetadata`` of a ``text-end`` chunk that carries the block's final text."""
    return {"solon": {"final_text": text}}


def ui_text(part: Mapping[str, Any]) -> str:
    """The text a UI message's text part shows: its final text when the stream sent one
    (:func:`final_text_metadata`), else the text its deltas made."""
    metadata = part.get("providerMetadata")
    ours = metadata.get("solon") if isinstance(metadata, Mapping) else None
    final = ours.get("final_text") if isinstance(ours, Mapping) else None
    return final if isinstance(final, str) else str(part.get("text") or "")


def finish_reason(reason: str | FinishReason | None) -> str:
    """A finish reason (a response's unified ``finish``, or a provider's word) as one of the
    UI stream's (``stop``, ``length``, ``content-filter``, ``tool-calls``, ``error``,
    ``other``): the unified vocabulary (:mod:`solon_events.event_model.finish`), hyphenated."""
    unified = reason if isinstance(reason, FinishReason) else unified_finish(reason)
    return unified.value.replace("_", "-")


def tool_input(call: ToolCall | None) -> Any:
    """A call's input as the UI stream carries it: its arguments (JSON), or the text of a
    free-form tool's input that is not JSON."""
    if call is None:
        return {}
    if call.arguments or not call.arguments_str.strip():
        return to_plain(call.arguments)
    try:
        return orjson.loads(call.arguments_str)
    except orjson.JSONDecodeError:
        return call.arguments_str


def vercel_sse(chunk: Chunk) -> bytes:
    """``chunk`` as one SSE event (``data: <json>``, then a blank line)."""
    return b"data: " + orjson.dumps(chunk) + b"\n\n"


def usage_metadata(usage: Usage | None) -> dict[str, Any]:
    """The message metadata that carries ``usage``, its counters without the provider's
    raw ``source`` (empty without usage)."""
    if usage is None:
        return {}
    return {"usage": {k: v for k, v in to_plain(usage).items() if k != "source"}}


class VercelEncoder:
    """ChatEvents of one response in, UI message stream chunks out (sans-I/O).

    ``message_id`` is the assistant message's id in the ``start`` chunk (default: the
    response id). After a terminal chunk (``finish``, ``error``, ``abort``) nothing more
    is sent; :attr:`finished` tells whether one was sent. ``argument_deltas=True`` follows
    each ``tool-input-delta`` with a transient ``data-tool-input-delta`` part: what it
    changed in the call's input, path by path.
    """

    def __init__(self, message_id: str | None = None, *, argument_deltas: bool = False) -> None:
        self._message_id = message_id
        self._arguments = ArgumentDeltas() if argument_deltas else None
        self._ids = BlockIds("ui")
        self._usage: Usage | None = None
        self._refusal = ""
        self._started: set[str] = set()
        self._sources = 0
        self.finished = False
        self._handlers: dict[Any, Callable[[ChatEvent], list[Chunk]]] = {
            EVENT_TYPES.RESPONSE_START: self._response_start,
            EVENT_TYPES.STEP_START: self._step_start,
            EVENT_TYPES.STEP_END: self._step_end,
            EVENT_TYPES.TEXT_START: lambda e: self._open("text", e),
            EVENT_TYPES.TEXT_DELTA: lambda e: self._delta("text", e),
            EVENT_TYPES.TEXT_END: lambda e: self._close("text", e),
            EVENT_TYPES.THINKING_START: lambda e: self._open("reasoning", e),
            EVENT_TYPES.THINKING_DELTA: lambda e: self._delta("reasoning", e),
            EVENT_TYPES.THINKING_END: lambda e: self._close("reasoning", e),
            EVENT_TYPES.TOOL_CALL_START: self._call_start,
            EVENT_TYPES.TOOL_CALL_ARGS_DELTA: self._call_delta,
            EVENT_TYPES.TOOL_CALL_END: self._call_end,
            EVENT_TYPES.TOOL_RESULT: self._tool_result,
            EVENT_TYPES.STATUS: self._status,
            EVENT_TYPES.SERVER_TOOL_START: self._call_start,
            EVENT_TYPES.SERVER_TOOL_ARGS_DELTA: self._call_delta,
            EVENT_TYPES.SERVER_TOOL_RESULT: self._server_result,
            EVENT_TYPES.CITATION: self._source,
            EVENT_TYPES.SEARCH_RESULT: self._source,
            EVENT_TYPES.MEDIA_DONE: self._file,
            EVENT_TYPES.REFUSAL_DELTA: self._refusal_delta,
            EVENT_TYPES.CONTENT_FILTER: self._content_filter,
            EVENT_TYPES.RESPONSE_END: self._response_end,
            EVENT_TYPES.ABORT: self._abort,
            EVENT_TYPES.ERROR: lambda e: self.fail(e.error, e.text),
        }

    def feed(self, event: ChatEvent) -> list[Chunk]:
        """The chunks ``event`` becomes (often one, sometimes none)."""
        if self.finished:
            return []
        handler = self._handlers.get(event.type)
        chunks = handler(event) if handler is not None else []
        if self._arguments is not None:
            call = self._arguments.feed(event)
            if call is not None and call.deltas and chunks:
                chunks.append(_deltas_chunk(chunks[-1]["toolCallId"], call.deltas))
        return chunks

    def fail(self, error: BaseException | None, text: str | None = None) -> list[Chunk]:
        """The chunks that end a failed response: a failed tool call's ``tool-output-error``
        (for a :class:`~solon_events.ToolCallError`), then ``error``."""
        if self.finished:
            return []
        self.finished = True
        message = text or (str(error) if error is not None else "") or "the response failed"
        chunks: list[Chunk] = []
        if isinstance(error, ToolCallError) and error.tool_call_id:
            chunks.append(
                {
                    "type": "tool-output-error",
                    "toolCallId": error.tool_call_id,
                    "errorText": message,
                }
            )
        chunks.append({"type": "error", "errorText": message})
        return chunks

    def _response_start(self, event: ChatEvent) -> list[Chunk]:
        chunk: Chunk = {"type": "start"}
        message_id = self._message_id or event.response_id
        if message_id:
            chunk["messageId"] = message_id
        return [chunk]

    def _step_start(self, event: ChatEvent) -> list[Chunk]:
        return [] if event.sub_type == "resumed" else [{"type": "start-step"}]

    def _step_end(self, event: ChatEvent) -> list[Chunk]:
        self._refusal = ""
        if event.sub_type == "resumed":  # the paused step's end: sent with the pause
            return []
        response = event.response
        pending = response.pending_approval if response is not None else None
        chunks: list[Chunk] = []
        if pending is not None:
            chunks = [
                {
                    "type": "tool-approval-request",
                    "approvalId": pending.approval_id(call.id or ""),
                    "toolCallId": self._ids.call_id(call_event(call, pending.step)),
                }
                for call in pending.tool_calls
            ]
        if event.usage is not None:
            self._usage = event.usage if self._usage is None else self._usage + event.usage
        if self._usage is not None:
            chunks.append(
                {"type": "message-metadata", "messageMetadata": usage_metadata(self._usage)}
            )
        chunks.append({"type": "finish-step"})
        return chunks

    def _open(self, kind: str, event: ChatEvent) -> list[Chunk]:
        return [{"type": f"{kind}-start", "id": self._ids.open(kind, event)}]

    def _delta(self, kind: str, event: ChatEvent) -> list[Chunk]:
        if not event.text:
            return []
        block_id = self._ids.current(kind, event)
        chunks = [] if block_id is not None else self._open(kind, event)
        block_id = block_id or chunks[0]["id"]
        chunks.append({"type": f"{kind}-delta", "id": block_id, "delta": event.text})
        return chunks

    def _close(self, kind: str, event: ChatEvent) -> list[Chunk]:
        block_id = self._ids.close(kind, event)
        if block_id is None:
            return []
        chunk: Chunk = {"type": f"{kind}-end", "id": block_id}
        if kind == "text" and event.text is not None:
            chunk["providerMetadata"] = final_text_metadata(event.text)
        return [chunk]

    def _call_name(self, event: ChatEvent) -> str:
        if event.type.group is EVENT_TYPES.SERVER_TOOL_START.group:
            return event.sub_type or (event.tool_call.name if event.tool_call else "") or "tool"
        return event.tool_call.name if event.tool_call is not None else ""

    def _call_start(self, event: ChatEvent) -> list[Chunk]:
        call_id = self._ids.open("call", event)
        self._started.add(call_id)
        chunk: Chunk = {
            "type": "tool-input-start",
            "toolCallId": call_id,
            "toolName": self._call_name(event),
        }
        if event.type is EVENT_TYPES.SERVER_TOOL_START:
            chunk["providerExecuted"] = True
        return [chunk]

    def _call_delta(self, event: ChatEvent) -> list[Chunk]:
        call_id = self._ids.current("call", event)
        chunks = [] if call_id is not None else self._call_start(event)
        call_id = call_id or chunks[0]["toolCallId"]
        if event.text:
            chunks.append(
                {"type": "tool-input-delta", "toolCallId": call_id, "inputTextDelta": event.text}
            )
        return chunks

    def _call_end(self, event: ChatEvent) -> list[Chunk]:
        call_id = self._ids.close("call", event) or self._ids.call_id(event)
        chunks: list[Chunk] = []
        if call_id not in self._started:
            self._started.add(call_id)
            chunks.append(
                {
                    "type": "tool-input-start",
                    "toolCallId": call_id,
                    "toolName": self._call_name(event),
                }
            )
        call = event.tool_call
        chunk: Chunk = {
            "type": "tool-input-available",
            "toolCallId": call_id,
            "toolName": self._call_name(event),
            "input": tool_input(call),
        }
        if event.type is EVENT_TYPES.SERVER_TOOL_RESULT:
            chunk["providerExecuted"] = True
        chunks.append(chunk)
        return chunks

    def _tool_result(self, event: ChatEvent) -> list[Chunk]:
        call_id = self._ids.call_id(event)
        if event.attrs.get("denied"):
            return [{"type": "tool-output-denied", "toolCallId": call_id}]
        if event.attrs.get("is_error"):
            return [
                {"type": "tool-output-error", "toolCallId": call_id, "errorText": event.text or ""}
            ]
        return [{"type": "tool-output-available", "toolCallId": call_id, "output": event.text}]

    def _status(self, event: ChatEvent) -> list[Chunk]:
        if event.sub_type != "tool_progress":
            return []
        call_id = self._ids.call_id(event)
        data = {"toolCallId": call_id, "message": event.text, **to_plain(event.attrs)}
        return [{"type": "data-tool-progress", "id": call_id, "data": data, "transient": True}]

    def _server_result(self, event: ChatEvent) -> list[Chunk]:
        chunks = self._call_end(event)
        call_id = chunks[-1]["toolCallId"]
        output = to_plain(event.raw) if event.raw else event.text
        if event.attrs.get("is_error"):
            text = output if isinstance(output, str) else orjson.dumps(output).decode()
            chunks.append(
                {
                    "type": "tool-output-error",
                    "toolCallId": call_id,
                    "errorText": text,
                    "providerExecuted": True,
                }
            )
        else:
            chunks.append(
                {
                    "type": "tool-output-available",
                    "toolCallId": call_id,
                    "output": output,
                    "providerExecuted": True,
                }
            )
        return chunks

    def _source(self, event: ChatEvent) -> list[Chunk]:
        source = event.citation if event.type is EVENT_TYPES.CITATION else event.search_result
        if source is None or not source.url:
            return []
        self._sources += 1
        chunk: Chunk = {
            "type": "source-url",
            "sourceId": f"source-{self._sources}",
            "url": source.url,
        }
        if source.title:
            chunk["title"] = source.title
        return [chunk]

    def _file(self, event: ChatEvent) -> list[Chunk]:
        block = event.block
        if not isinstance(block, (ImageBlock, FileBlock)):
            return []
        media_type = block.mime_type or ("image/png" if isinstance(block, ImageBlock) else "")
        if block.url:
            url = block.url
        elif block.data:
            url = f"data:{media_type or 'application/octet-stream'};base64,{block.data}"
        else:
            return []
        return [{"type": "file", "url": url, "mediaType": media_type or "application/octet-stream"}]

    def _refusal_delta(self, event: ChatEvent) -> list[Chunk]:
        if not event.text:
            return []
        self._refusal += event.text
        part_id = f"refusal-{event.step}"
        return [{"type": "data-refusal", "id": part_id, "data": {"text": self._refusal}}]

    def _content_filter(self, event: ChatEvent) -> list[Chunk]:
        return [{"type": "data-content-filter", "data": {"text": event.text or ""}}]

    def _response_end(self, event: ChatEvent) -> list[Chunk]:
        self.finished = True
        response = event.response
        metadata: dict[str, Any] = usage_metadata(event.usage or self._usage)
        if event.response_id:
            metadata["responseId"] = event.response_id
        if response is not None and response.model:
            metadata["model"] = response.model
        reason = finish_reason(
            (response.finish or response.finish_reason) if response is not None else None
        )
        return [{"type": "finish", "finishReason": reason, "messageMetadata": metadata}]

    def _abort(self, event: ChatEvent) -> list[Chunk]:
        self.finished = True
        chunk: Chunk = {"type": "abort"}
        if event.text:
            chunk["reason"] = event.text
        return [chunk]


def _deltas_chunk(call_id: str, deltas: list[JsonDelta]) -> Chunk:
    """The transient part that tells what a ``tool-input-delta`` changed in the input."""
    data = {
        "toolCallId": call_id,
        "deltas": [{"path": list(path), "op": op, "value": value} for path, op, value in deltas],
    }
    return {"type": "data-tool-input-delta", "id": call_id, "data": data, "transient": True}


def to_vercel(
    message_id: str | None = None, *, argument_deltas: bool = False
) -> Callable[[Observable[ChatEvent]], Observable[Chunk]]:
    """A pipeable operator: ChatEvents -> UI message stream chunks (JSON objects).

    A failure upstream (after its ERROR event) ends the chunks with ``error`` and is
    then passed on; frame each chunk with :func:`vercel_sse` and end the body with
    :data:`VERCEL_DONE`. ``argument_deltas`` as in :class:`VercelEncoder`::

        model.prompt("Hi").stream().pipe(to_vercel()).subscribe(
            lambda chunk: print(vercel_sse(chunk).decode(), end=""))
    """
    return translating(
        lambda: VercelEncoder(message_id, argument_deltas=argument_deltas), "to_vercel()"
    )
