"""ChatEvents as AG-UI events, built with the official ``ag-ui-protocol`` package.

Needs the ``agui`` extra (``pip install 'solon-events[agui]'``). :class:`AguiEncoder` is
the sans-I/O translator (one per run): ``feed(event)`` returns the AG-UI events
(``ag_ui.core`` models) an event becomes; :func:`to_agui` is the same as a pipeable Rx
operator; :func:`agui_sse` encodes an AG-UI event with the package's ``EventEncoder``.

==========================================  =============================================
ChatEvent                                   AG-UI events
==========================================  =============================================
RESPONSE_START                              RUN_STARTED
STEP_START / STEP_END                       STEP_STARTED / STEP_FINISHED (``step-<n>``),
                                            STEP_END first sending CUSTOM ``solon.usage``
TEXT_START / _DELTA / _END                  TEXT_MESSAGE_START / _CONTENT / _END, then
                                            MESSAGES_SNAPSHOT when TEXT_END has a final
                                            text that replaces the deltas
THINKING_START / _DELTA / _END              REASONING_START + REASONING_MESSAGE_START /
                                            REASONING_MESSAGE_CONTENT /
                                            REASONING_MESSAGE_END + REASONING_END
THINKING_SIGNATURE, THINKING_REDACTED       REASONING_ENCRYPTED_VALUE
TOOL_CALL_START / _ARGS_DELTA / _END        TOOL_CALL_START / TOOL_CALL_ARGS / TOOL_CALL_END
TOOL_RESULT                                 TOOL_CALL_RESULT
RESPONSE_END                                RUN_FINISHED (total ``usage``; outcome
                                            ``success`` naming the client tool calls left
                                            for the application as ``pendingToolCallIds``,
                                            or ``interrupt`` when tool calls wait for
                                            approval)
ABORT                                       RUN_FINISHED with outcome ``cancelled``
ERROR                                       RUN_ERROR (``message``, ``code``: the error's
                                            class name, ``usage``)
==========================================  =============================================

CUSTOM events (``name``: ``value``), every value a plain JSON object:
``solon.usage`` (``{"step": n, "usage": {...}}``, per step), ``solon.citation``,
``solon.search_result``, ``solon.media`` (``{"phase": "partial"|"done", "block": ...}``),
``solon.server_tool`` (``{"phase": "start"|"args"|"result", "id", "name", "text",
"arguments", "result", "is_error"}``), ``solon.refusal`` (``{"text": delta}``),
``solon.content_filter`` (``{"text": ...}``) and ``solon.status`` (``{"sub_type", "text"}``
and the event's attrs; a running tool's progress has ``sub_type`` ``"tool_progress"``,
``tool_call_id``, ``tool_name``, ``progress`` and ``total``). HEARTBEAT, USAGE, RAW and
CUSTOM events send nothing.

A TEXT_END with ``text`` (the provider's final text of the block, which replaces what its
deltas said: see ``ChatResponse.text``) that differs from the deltas is sent the way AG-UI
replaces what a client has assembled: a MESSAGES_SNAPSHOT of the conversation, the run's
input ``messages`` followed by the run's messages so far with the corrected text (reasoning
messages left out: a client keeps its own when a snapshot has none). A client drops the
messages a snapshot leaves out, so the snapshot is sent only when the encoder is given the
run's input ``messages`` (the gateway gives them; pass an empty list for a run without
input): without them, the corrected text is not sent and the client keeps the deltas' text.

A tool call whose name is in ``client_tools`` is a frontend tool: the gateway never runs
it, the run finishes with it pending and the application answers it in its next run.

Tool approval uses AG-UI's interrupts: a response that paused because tool calls wait for
approval (its response's ``pending_approval``) finishes the run with the ``interrupt``
outcome, one interrupt per pending call (``id``:
:func:`~solon_events.event_model.approvals.approval_id`, ``reason`` ``"tool_approval"``,
``toolCallId``, a ``message`` naming the call, and a ``responseSchema`` for the answer:
``{"approved": bool, "reason": str, "arguments": object}``). The next run answers them in
its ``resume`` entries (``status`` ``"resolved"`` with that payload, or ``"cancelled"``,
a denial; :func:`~solon_events.adapters.inputs.approvals_from_agui`); its events start with
the decided calls' TOOL_CALL_RESULTs (a denied call's content says so).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from typing import Any

from ..event_model.extras import MissingExtraError

try:
    from ag_ui.core import (
        BaseEvent,
        CustomEvent,
        Interrupt,
        ReasoningEncryptedValueEvent,
        ReasoningEndEvent,
        ReasoningMessageContentEvent,
        ReasoningMessageEndEvent,
        ReasoningMessageStartEvent,
        ReasoningStartEvent,
        RunErrorEvent,
        RunFinishedCancelledOutcome,
        RunFinishedEvent,
        RunFinishedInterruptOutcome,
        RunFinishedSuccessOutcome,
        RunStartedEvent,
        StepFinishedEvent,
        StepStartedEvent,
        TextMessageContentEvent,
        TextMessageEndEvent,
        TextMessageStartEvent,
        TokenUsage,
        ToolCallArgsEvent,
        ToolCallEndEvent,
        ToolCallResultEvent,
        ToolCallStartEvent,
    )
    from ag_ui.encoder import EventEncoder
except ModuleNotFoundError as exc:  # tests/test_extras.py runs it without the extra
    raise MissingExtraError("AG-UI", "ag-ui-protocol", "agui") from exc
from reactivex import Observable

from ..event_model.events import EVENT_TYPES, ChatEvent
from ..event_model.results import Usage
from ..event_model.steps import call_event
from .agui_transcript import AguiTranscript
from .blocks import BlockIds
from .native import to_plain
from .rx import translating

__all__ = ["APPROVAL_SCHEMA", "AguiEncoder", "agui_sse", "to_agui", "token_usage"]

_ENCODER = EventEncoder()

APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approved": {"type": "boolean", "description": "Whether the call may run"},
        "reason": {"type": "string", "description": "Why it may not (told to the model)"},
        "arguments": {"type": "object", "description": "Other arguments to run it with"},
    },
    "required": ["approved"],
}
"""The ``responseSchema`` of a tool-approval interrupt: the answer its resume entry's
``payload`` holds."""


def agui_sse(event: BaseEvent) -> bytes:
    """``event`` encoded by the ag-ui-protocol package's ``EventEncoder`` (one SSE event)."""
    return _ENCODER.encode(event).encode()


def token_usage(usage: Usage | None) -> list[TokenUsage] | None:
    """``usage`` as AG-UI's token usage list (None without usage)."""
    if usage is None:
        return None
    return [
        TokenUsage(
            input_tokens=usage.prompt_tokens,
            output_tokens=usage.completion_tokens,
            total_tokens=usage.total_tokens,
            reasoning_tokens=usage.thinking_tokens or None,
            cached_input_tokens=usage.cache_read_input_tokens or None,
            cache_write_input_tokens=usage.cache_creation_input_tokens or None,
        )
    ]


class AguiEncoder:
    """ChatEvents of one response in, AG-UI events of one run out (sans-I/O).

    ``thread_id`` and ``run_id`` come from the run's ``RunAgentInput`` (fresh ones by
    default); ``client_tools`` names the frontend tools, whose calls are left pending;
    ``messages`` are the run's input messages (``ag_ui.core`` models), which a
    MESSAGES_SNAPSHOT repeats; without them (None) no snapshot is sent, since a client
    would drop the messages it leaves out.
    """

    def __init__(
        self,
        thread_id: str | None = None,
        run_id: str | None = None,
        *,
        client_tools: Iterable[str] = (),
        messages: Iterable[Any] | None = None,
    ) -> None:
        self.thread_id = thread_id or str(uuid.uuid4())
        self.run_id = run_id or str(uuid.uuid4())
        self._client_tools = frozenset(client_tools)
        self._transcript = AguiTranscript(messages or ())
        self._snapshots = messages is not None
        self._ids = BlockIds(self.run_id)
        self._step_messages: dict[int, int] = {}
        self._pending: list[str] = []
        self._last_reasoning: str | None = None
        self.finished = False
        self._handlers: dict[Any, Callable[[ChatEvent], list[BaseEvent]]] = {
            EVENT_TYPES.RESPONSE_START: self._run_started,
            EVENT_TYPES.STEP_START: self._step_started,
            EVENT_TYPES.STEP_END: self._step_finished,
            EVENT_TYPES.TEXT_START: self._text_start,
            EVENT_TYPES.TEXT_DELTA: self._text_delta,
            EVENT_TYPES.TEXT_END: self._text_end,
            EVENT_TYPES.THINKING_START: self._thinking_start,
            EVENT_TYPES.THINKING_DELTA: self._thinking_delta,
            EVENT_TYPES.THINKING_END: self._thinking_end,
            EVENT_TYPES.THINKING_SIGNATURE: self._encrypted,
            EVENT_TYPES.THINKING_REDACTED: self._encrypted,
            EVENT_TYPES.TOOL_CALL_START: self._call_start,
            EVENT_TYPES.TOOL_CALL_ARGS_DELTA: self._call_args,
            EVENT_TYPES.TOOL_CALL_END: self._call_end,
            EVENT_TYPES.TOOL_RESULT: self._tool_result,
            EVENT_TYPES.SERVER_TOOL_START: self._server_tool,
            EVENT_TYPES.SERVER_TOOL_ARGS_DELTA: self._server_tool,
            EVENT_TYPES.SERVER_TOOL_RESULT: self._server_tool,
            EVENT_TYPES.CITATION: lambda e: self._custom("solon.citation", to_plain(e.citation)),
            EVENT_TYPES.SEARCH_RESULT: lambda e: self._custom(
                "solon.search_result", to_plain(e.search_result)
            ),
            EVENT_TYPES.MEDIA_PARTIAL: self._media,
            EVENT_TYPES.MEDIA_DONE: self._media,
            EVENT_TYPES.REFUSAL_DELTA: lambda e: self._custom(
                "solon.refusal", {"text": e.text or ""}
            ),
            EVENT_TYPES.CONTENT_FILTER: lambda e: self._custom(
                "solon.content_filter", {"text": e.text or ""}
            ),
            EVENT_TYPES.STATUS: self._status,
            EVENT_TYPES.RESPONSE_END: self._run_finished,
            EVENT_TYPES.ABORT: self._aborted,
            EVENT_TYPES.ERROR: lambda e: self.fail(e.error, e.text, e.usage),
        }

    def feed(self, event: ChatEvent) -> list[BaseEvent]:
        """The AG-UI events ``event`` becomes (often one, sometimes none)."""
        if self.finished:
            return []
        handler = self._handlers.get(event.type)
        return handler(event) if handler is not None else []

    def fail(
        self, error: BaseException | None, text: str | None = None, usage: Usage | None = None
    ) -> list[BaseEvent]:
        """The RUN_ERROR that ends a failed run (nothing once the run has ended)."""
        if self.finished:
            return []
        self.finished = True
        message = text or (str(error) if error is not None else "") or "the run failed"
        code = type(error).__name__ if error is not None else None
        return [RunErrorEvent(message=message, code=code, usage=token_usage(usage))]

    def _message_id(self, step: int) -> str:
        """The id of step ``step``'s assistant message (text and tool calls hang on it)."""
        return f"{self.run_id}-message-{step}"

    def _run_started(self, event: ChatEvent) -> list[BaseEvent]:
        return [RunStartedEvent(thread_id=self.thread_id, run_id=self.run_id)]

    def _step_started(self, event: ChatEvent) -> list[BaseEvent]:
        self._pending = []
        return [StepStartedEvent(step_name=f"step-{event.step}")]

    def _step_finished(self, event: ChatEvent) -> list[BaseEvent]:
        out: list[BaseEvent] = []
        if event.usage is not None:
            out += self._custom("solon.usage", {"step": event.step, "usage": to_plain(event.usage)})
        out.append(StepFinishedEvent(step_name=f"step-{event.step}"))
        return out

    def _text_start(self, event: ChatEvent) -> list[BaseEvent]:
        count = self._step_messages.get(event.step, 0)
        self._step_messages[event.step] = count + 1
        message_id = self._message_id(event.step) + (f"-{count}" if count else "")
        self._ids.open("text", event, message_id)
        self._transcript.text_start(message_id)
        return [TextMessageStartEvent(message_id=message_id, role="assistant")]

    def _text_delta(self, event: ChatEvent) -> list[BaseEvent]:
        out = self._content("text", event, self._text_start, TextMessageContentEvent)
        if out:
            self._transcript.text(out[-1].message_id, out[-1].delta)  # type: ignore[attr-defined]
        return out

    def _text_end(self, event: ChatEvent) -> list[BaseEvent]:
        message_id = self._ids.close("text", event)
        if message_id is None:
            return []
        out: list[BaseEvent] = [TextMessageEndEvent(message_id=message_id)]
        final = event.text
        if self._snapshots and final is not None and final != self._transcript.text_of(message_id):
            self._transcript.replace_text(message_id, final)
            out.append(self._transcript.snapshot())
        return out

    def _thinking_start(self, event: ChatEvent) -> list[BaseEvent]:
        message_id = self._ids.open("reasoning", event)
        return [
            ReasoningStartEvent(message_id=message_id),
            ReasoningMessageStartEvent(message_id=message_id, role="reasoning"),
        ]

    def _thinking_delta(self, event: ChatEvent) -> list[BaseEvent]:
        return self._content("reasoning", event, self._thinking_start, ReasoningMessageContentEvent)

    def _content(
        self,
        kind: str,
        event: ChatEvent,
        start: Callable[[ChatEvent], list[BaseEvent]],
        content: Callable[..., BaseEvent],
    ) -> list[BaseEvent]:
        """A delta of the open ``kind`` block (opened first when none is)."""
        if not event.text:
            return []
        out = [] if self._ids.current(kind, event) is not None else start(event)
        message_id = self._ids.current(kind, event)
        assert message_id is not None
        out.append(content(message_id=message_id, delta=event.text))
        return out

    def _thinking_end(self, event: ChatEvent) -> list[BaseEvent]:
        message_id = self._ids.close("reasoning", event)
        if message_id is None:
            return []
        self._last_reasoning = message_id
        return [
            ReasoningMessageEndEvent(message_id=message_id),
            ReasoningEndEvent(message_id=message_id),
        ]

    def _encrypted(self, event: ChatEvent) -> list[BaseEvent]:
        value = event.text or ""
        if not value:
            return []
        entity = self._ids.current("reasoning", event) or self._last_reasoning
        return [
            ReasoningEncryptedValueEvent(
                subtype="message",
                entity_id=entity or self._message_id(event.step),
                encrypted_value=value,
            )
        ]

    def _call_start(self, event: ChatEvent) -> list[BaseEvent]:
        call_id = self._ids.open("call", event)
        name = event.tool_call.name if event.tool_call is not None else ""
        parent = self._message_id(event.step)
        self._transcript.call_start(call_id, name, parent)
        return [
            ToolCallStartEvent(tool_call_id=call_id, tool_call_name=name, parent_message_id=parent)
        ]

    def _call_args(self, event: ChatEvent) -> list[BaseEvent]:
        call_id = self._ids.current("call", event)
        out = [] if call_id is not None else self._call_start(event)
        call_id = call_id or self._ids.current("call", event)
        assert call_id is not None
        if event.text:
            self._transcript.call_args(call_id, event.text)
            out.append(ToolCallArgsEvent(tool_call_id=call_id, delta=event.text))
        return out

    def _call_end(self, event: ChatEvent) -> list[BaseEvent]:
        call_id = self._ids.close("call", event)
        out: list[BaseEvent] = []
        if call_id is None:
            out += self._call_start(event)
            call_id = self._ids.close("call", event)
            assert call_id is not None
        if event.tool_call is not None and event.tool_call.name in self._client_tools:
            self._pending.append(call_id)
        out.append(ToolCallEndEvent(tool_call_id=call_id))
        return out

    def _tool_result(self, event: ChatEvent) -> list[BaseEvent]:
        call_id = self._ids.call_id(event)
        message_id, content = f"{self.run_id}-result-{call_id}", event.text or ""
        self._transcript.result(message_id, call_id, content)
        return [
            ToolCallResultEvent(
                message_id=message_id, tool_call_id=call_id, content=content, role="tool"
            )
        ]

    def _server_tool(self, event: ChatEvent) -> list[BaseEvent]:
        phase = {
            EVENT_TYPES.SERVER_TOOL_START: "start",
            EVENT_TYPES.SERVER_TOOL_ARGS_DELTA: "args",
            EVENT_TYPES.SERVER_TOOL_RESULT: "result",
        }[event.type]
        value: dict[str, Any] = {"phase": phase, "id": event.tool_call_id, "name": event.sub_type}
        if event.text:
            value["text"] = event.text
        if event.tool_call is not None and phase != "args":
            value["arguments"] = to_plain(event.tool_call.arguments)
        if phase == "result":
            value["result"] = to_plain(event.raw)
            value["is_error"] = bool(event.attrs.get("is_error"))
        return self._custom("solon.server_tool", value)

    def _status(self, event: ChatEvent) -> list[BaseEvent]:
        value = {"sub_type": event.sub_type, "text": event.text, **to_plain(event.attrs)}
        if event.tool_call_id or event.tool_call is not None:
            value["tool_call_id"] = self._ids.call_id(event)
        return self._custom("solon.status", value)

    def _media(self, event: ChatEvent) -> list[BaseEvent]:
        phase = "done" if event.type is EVENT_TYPES.MEDIA_DONE else "partial"
        return self._custom("solon.media", {"phase": phase, "block": to_plain(event.block)})

    def _custom(self, name: str, value: Any) -> list[BaseEvent]:
        return [CustomEvent(name=name, value=value)]

    def _run_finished(self, event: ChatEvent) -> list[BaseEvent]:
        self.finished = True
        response = event.response
        pending = response.pending_approval if response is not None else None
        outcome: RunFinishedSuccessOutcome | RunFinishedInterruptOutcome
        if pending is not None and pending.tool_calls:
            interrupts = [self._interrupt(pending, call) for call in pending.tool_calls]
            outcome = RunFinishedInterruptOutcome(type="interrupt", interrupts=interrupts)
        else:
            outcome = RunFinishedSuccessOutcome(
                type="success", pending_tool_call_ids=list(self._pending) or None
            )
        return [
            RunFinishedEvent(
                thread_id=self.thread_id,
                run_id=self.run_id,
                outcome=outcome,
                usage=token_usage(event.usage),
            )
        ]

    def _interrupt(self, pending: Any, call: Any) -> Interrupt:
        arguments = call.arguments_str
        if len(arguments) > 200:
            arguments = arguments[:200] + "…"
        return Interrupt(
            id=pending.approval_id(call.id or ""),
            reason="tool_approval",
            message=f"Approve the call {call.name}({arguments})?",
            tool_call_id=self._ids.call_id(call_event(call, pending.step)),
            response_schema=APPROVAL_SCHEMA,
        )

    def _aborted(self, event: ChatEvent) -> list[BaseEvent]:
        self.finished = True
        return [
            RunFinishedEvent(
                thread_id=self.thread_id,
                run_id=self.run_id,
                outcome=RunFinishedCancelledOutcome(type="cancelled"),
            )
        ]


def to_agui(
    thread_id: str | None = None,
    run_id: str | None = None,
    *,
    client_tools: Iterable[str] = (),
    messages: Iterable[Any] | None = None,
) -> Callable[[Observable[ChatEvent]], Observable[BaseEvent]]:
    """A pipeable operator: ChatEvents -> AG-UI events (``ag_ui.core`` models); the
    options are :class:`AguiEncoder`'s (give ``messages``, the run's input, for a corrected
    text to be sent: its MESSAGES_SNAPSHOT repeats them).

    A failure upstream (after its ERROR event) ends the run with RUN_ERROR and is then
    passed on; encode each event with :func:`agui_sse`::

        model.prompt("Hi").stream().pipe(to_agui()).subscribe(
            lambda event: print(agui_sse(event).decode(), end=""))
    """
    names = tuple(client_tools)
    history = None if messages is None else tuple(messages)
    return translating(
        lambda: AguiEncoder(thread_id, run_id, client_tools=names, messages=history), "to_agui()"
    )
