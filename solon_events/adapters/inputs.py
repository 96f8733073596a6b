"""What front ends send, read into our messages: Vercel UI messages, AG-UI RunAgentInput,
and the ``/events`` body; and the decisions on tool calls paused for approval that each
of them brings (:mod:`solon_events.event_model.approvals`).

Every reader raises ``ValueError`` with a message naming what is wrong (the gateway
answers it with HTTP 400). Sans-I/O; AG-UI input is validated by the ``ag-ui-protocol``
package's own ``RunAgentInput`` model (the ``agui`` extra).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import orjson

from ..event_model.approvals import ApprovalDecision, denied_text
from ..event_model.extras import require
from ..event_model.messages import (
    Message,
    SystemMessage,
    ToolMessage,
    ToolSpec,
    UserMessage,
    to_messages,
)
from ..event_model.results import AssistantMessage, FileBlock, ImageBlock, ToolCall
from .vercel import ui_text

__all__ = [
    "AguiRun",
    "approvals_from_agui",
    "approvals_from_events",
    "approvals_from_vercel",
    "messages_from_events",
    "messages_from_vercel",
    "run_from_agui",
]


def _object(body: Any) -> Mapping[str, Any]:
    if not isinstance(body, Mapping):
        raise ValueError(f"the request body must be a JSON object, not {_kind(body)}")
    return body


def _kind(value: Any) -> str:
    kinds: dict[type, str] = {
        dict: "an object",
        list: "an array",
        str: "a string",
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        type(None): "null",
    }
    return kinds.get(type(value), "a value")


def _message_list(body: Mapping[str, Any], what: str) -> list[Any]:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ValueError(f"'messages' must be a non-empty array of {what}")
    return messages


def messages_from_events(body: Any) -> tuple[Message, ...]:
    """The messages of an ``/events`` body: ``{"messages": [{"role", "content"}, ...]}``."""
    messages = _message_list(_object(body), "{role, content} objects")
    for i, item in enumerate(messages):
        if not isinstance(item, Mapping) or not isinstance(item.get("role"), str):
            raise ValueError(f"messages[{i}] must be an object with a 'role' and a 'content'")
    try:
        return to_messages(messages)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"'messages' is not a conversation: {exc}") from None


def _json_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return orjson.dumps(value).decode()


def _file_block(part: Mapping[str, Any]) -> ImageBlock | FileBlock | None:
    url, media_type = part.get("url"), part.get("mediaType")
    if not isinstance(url, str) or not url:
        return None
    media_type = media_type if isinstance(media_type, str) else None
    if media_type and media_type.startswith("image/"):
        return ImageBlock(url=url, mime_type=media_type)
    return FileBlock(url=url, mime_type=media_type, name=part.get("filename"))


def _is_tool_part(kind: str) -> bool:
    return kind.startswith("tool-") or kind == "dynamic-tool"


def messages_from_vercel(body: Any) -> tuple[Message, ...]:
    """The conversation of a ``useChat`` request (``messages``: UI messages with ``parts``).

    Text parts become text (their final text when the stream sent one:
    :func:`~solon_events.adapters.vercel.ui_text`); ``file`` parts of user messages become
    image or file blocks; an assistant message becomes one assistant turn per step
    (``step-start``), each with its tool calls followed by their results (a denied call's
    result saying so: :func:`~solon_events.event_model.approvals.denied_text`); calls without an
    output are left out.
    """
    raw = _message_list(_object(body), "UI messages")
    messages: list[Message] = []
    for i, item in enumerate(raw):
        if not isinstance(item, Mapping):
            raise ValueError(f"messages[{i}] must be an object, not {_kind(item)}")
        role, parts = item.get("role"), item.get("parts")
        if parts is None and isinstance(item.get("content"), str):
            parts = [{"type": "text", "text": item["content"]}]
        if not isinstance(parts, list) or not all(
            isinstance(p, Mapping) and isinstance(p.get("type"), str) for p in parts
        ):
            raise ValueError(f"messages[{i}].parts must be an array of parts, each with a type")
        if role == "system":
            messages.append(SystemMessage(text=_text_of(parts)))
        elif role == "user":
            blocks = [b for p in parts if p["type"] == "file" and (b := _file_block(p))]
            messages.append(UserMessage(text=_text_of(parts), blocks=blocks))
        elif role == "assistant":
            messages.extend(_assistant_steps(parts))
        else:
            raise ValueError(f"messages[{i}].role must be system, user or assistant, got {role!r}")
    return tuple(messages)


def _text_of(parts: Sequence[Mapping[str, Any]]) -> str:
    return "".join(ui_text(p) for p in parts if p["type"] == "text")


def _assistant_steps(parts: Sequence[Mapping[str, Any]]) -> list[Message]:
    steps: list[list[Mapping[str, Any]]] = [[]]
    for part in parts:
        if part["type"] == "step-start":
            steps.append([])
        else:
            steps[-1].append(part)
    turns: list[Message] = []
    for step in steps:
        calls: list[ToolCall] = []
        results: list[ToolMessage] = []
        for part in step:
            if not _is_tool_part(part["type"]):
                continue
            state = part.get("state")
            if state not in ("output-available", "output-error", "output-denied"):
                continue
            name = str(part.get("toolName") or part["type"].removeprefix("tool-"))
            call_id = str(part.get("toolCallId") or "")
            arguments = part.get("input")
            calls.append(
                ToolCall(
                    id=call_id,
                    name=name,
                    arguments=dict(arguments) if isinstance(arguments, Mapping) else {},
                )
            )
            failed = state == "output-error"
            content = part.get("errorText") if failed else part.get("output")
            if state == "output-denied":
                approval = part.get("approval")
                reason = approval.get("reason") if isinstance(approval, Mapping) else None
                content = denied_text(reason if isinstance(reason, str) else None)
            results.append(
                ToolMessage(
                    tool_call_id=call_id, name=name, content=_json_text(content), is_error=failed
                )
            )
        text = _text_of(step)
        if text or calls:
            turns.append(AssistantMessage(text=text, tool_calls=calls))
            turns.extend(results)
    return turns


@attrs.frozen
class AguiRun:
    """An AG-UI run request read: its ids, our messages, the frontend tools it declares,
    and its messages as AG-UI sent them."""

    thread_id: str
    run_id: str
    messages: tuple[Message, ...]
    client_tools: tuple[ToolSpec, ...]
    agui_messages: tuple[Any, ...] = ()
    """The run's messages as AG-UI models (``ag_ui.core``), which a MESSAGES_SNAPSHOT repeats."""
    resume: tuple[Any, ...] = ()
    """The run's answers to the interrupts of the run it continues (``ResumeEntry`` models)."""


def run_from_agui(body: Any) -> AguiRun:
    """The run an AG-UI ``RunAgentInput`` body asks for (validated by ag-ui-protocol).

    Developer and system messages are system messages; ``context`` entries become one
    more system message first; reasoning and activity messages are left out; ``tools``
    are the frontend tools.
    """
    agui: Any = require("ag_ui.core", feature="AG-UI", extra="agui", package="ag-ui-protocol")
    from pydantic import ValidationError  # ag-ui-protocol's own dependency

    try:
        run = agui.RunAgentInput.model_validate(_object(body))
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in error['loc']) or 'body'}: {error['msg']}"
            for error in exc.errors()[:5]
        )
        raise ValueError(f"not an AG-UI RunAgentInput: {problems}") from None
    messages: list[Message] = []
    if run.context:
        lines = [f"- {item.description}: {item.value}" for item in run.context]
        messages.append(SystemMessage(text="Context from the application:\n" + "\n".join(lines)))
    names: dict[str, str] = {}
    for message in run.messages:
        if isinstance(message, (agui.DeveloperMessage, agui.SystemMessage)):
            messages.append(SystemMessage(text=message.content))
        elif isinstance(message, agui.UserMessage):
            messages.append(_agui_user(message.content))
        elif isinstance(message, agui.AssistantMessage):
            calls = [
                ToolCall(id=c.id, name=c.function.name, arguments_str=c.function.arguments)
                for c in message.tool_calls or ()
            ]
            names.update((c.id or "", c.name) for c in calls)
            messages.append(AssistantMessage(text=message.content or "", tool_calls=calls))
        elif isinstance(message, agui.ToolMessage):
            content = message.content
            text = content if isinstance(content, str) else _agui_text(content)
            messages.append(
                ToolMessage(
                    tool_call_id=message.tool_call_id,
                    name=names.get(message.tool_call_id, ""),
                    content=text or message.error or "",
                    is_error=bool(message.error),
                )
            )
    if not any(isinstance(m, UserMessage) for m in messages):
        raise ValueError("an AG-UI run needs at least one user message")
    tools = tuple(
        ToolSpec(
            name=tool.name,
            description=tool.description,
            parameters=tool.parameters or {"type": "object", "properties": {}},
        )
        for tool in run.tools or ()
    )
    return AguiRun(
        run.thread_id,
        run.run_id,
        tuple(messages),
        tools,
        tuple(run.messages),
        tuple(run.resume or ()),
    )


def _agui_text(parts: Sequence[Any]) -> str:
    return "".join(getattr(part, "text", "") or "" for part in parts if part.type == "text")


def _agui_user(content: Any) -> UserMessage:
    if isinstance(content, str):
        return UserMessage(text=content)
    blocks = []
    for part in content:
        source = getattr(part, "source", None)
        if part.type != "image" or source is None:
            continue
        if source.type == "url":
            blocks.append(ImageBlock(url=source.value, mime_type=source.mime_type))
        elif source.type == "data":
            blocks.append(ImageBlock(data=source.value, mime_type=source.mime_type))
    return UserMessage(text=_agui_text(content), blocks=blocks)


def _decision(answer: Any, where: str) -> ApprovalDecision:
    """An answer to one approval: ``{"approved": bool, "reason"?: str, "arguments"?: {}}``."""
    if isinstance(answer, bool):
        return ApprovalDecision(approved=answer)
    approved = answer.get("approved") if isinstance(answer, Mapping) else None
    if not isinstance(approved, bool):
        raise ValueError(f'{where} must say whether the call is approved: {{"approved": true}}')
    reason, arguments = answer.get("reason"), answer.get("arguments")
    if reason is not None and not isinstance(reason, str):
        raise ValueError(f"{where}: 'reason' must be a string")
    if arguments is not None and not (approved and isinstance(arguments, Mapping)):
        raise ValueError(f"{where}: 'arguments' must be an object, given with an approval")
    return ApprovalDecision(approved=approved, reason=reason, arguments=arguments)


def approvals_from_vercel(body: Any) -> tuple[str, dict[str, ApprovalDecision]] | None:
    """The decisions a ``useChat`` request brings on tool calls paused for approval: its
    last message is the assistant's, with tool parts in the ``approval-responded`` state
    (``approval``: ``id``, ``approved``, ``reason``), as ``addToolApprovalResponse``
    leaves them. That message's id and the decisions by approval id; None when the request
    answers no approval (an ordinary turn)."""
    messages = body.get("messages") if isinstance(body, Mapping) else None
    last = messages[-1] if isinstance(messages, list) and messages else None
    if not isinstance(last, Mapping) or last.get("role") != "assistant":
        return None
    decisions: dict[str, ApprovalDecision] = {}
    for part in last.get("parts") or ():
        if not isinstance(part, Mapping) or part.get("state") != "approval-responded":
            continue
        approval = part.get("approval")
        approval_id = approval.get("id") if isinstance(approval, Mapping) else None
        if not isinstance(approval_id, str):
            raise ValueError("a tool part in the approval-responded state needs its approval.id")
        decisions[approval_id] = _decision(approval, f"the approval {approval_id!r}")
    if not decisions:
        return None
    return str(last.get("id") or ""), decisions


def approvals_from_agui(run: AguiRun) -> dict[str, ApprovalDecision]:
    """The decisions an AG-UI run's ``resume`` entries bring, by interrupt id: a
    ``"resolved"`` entry's payload is ``{"approved": bool, "reason"?: str,
    "arguments"?: {}}`` (or a bare boolean), a ``"cancelled"`` one denies the call."""
    decisions: dict[str, ApprovalDecision] = {}
    for entry in run.resume:
        where = f"the resume entry of interrupt {entry.interrupt_id!r}"
        if entry.status == "cancelled":
            decisions[entry.interrupt_id] = ApprovalDecision(approved=False, reason="cancelled")
        else:
            decisions[entry.interrupt_id] = _decision(entry.payload, where)
    return decisions


def approvals_from_events(body: Any) -> dict[str, ApprovalDecision] | None:
    """The decisions of an ``/events`` body that continues a paused response:
    ``{"approvals": [{"approval_id": ..., "approved": bool, "reason"?: str,
    "arguments"?: {}}, ...]}``, by approval id; None for a body without ``approvals``."""
    items = body.get("approvals") if isinstance(body, Mapping) else None
    if items is None:
        return None
    if not isinstance(items, list) or not items:
        raise ValueError("'approvals' must be a non-empty array of {approval_id, approved}")
    decisions: dict[str, ApprovalDecision] = {}
    for i, item in enumerate(items):
        approval_id = item.get("approval_id") if isinstance(item, Mapping) else None
        if not isinstance(approval_id, str):
            raise ValueError(f"approvals[{i}] must be an object with an 'approval_id'")
        decisions[approval_id] = _decision(item, f"approvals[{i}]")
    return decisions
