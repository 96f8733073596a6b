"""What an AG-UI client holds after a run's events: the messages a MESSAGES_SNAPSHOT repeats.

Used by :class:`~solon_events.adapters.agui.AguiEncoder` to send a provider's final text
(which rewrites what the deltas said) as a snapshot of the whole conversation.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..event_model.extras import require

if TYPE_CHECKING:
    from ag_ui.core import MessagesSnapshotEvent

__all__ = ["AguiTranscript"]


class AguiTranscript:
    """A run's messages as an AG-UI client assembles them from the run's events (its
    ``defaultApplyEvents``), after the run's input messages: what a MESSAGES_SNAPSHOT holds.

    Reasoning and activity messages are left out (a client keeps its own when a snapshot
    has none); texts and arguments are kept as their deltas and joined for a snapshot.
    """

    def __init__(self, messages: Iterable[Any]) -> None:
        plain = (m.model_dump(by_alias=True, exclude_none=True) for m in messages)
        self._input = [m for m in plain if m.get("role") not in ("reasoning", "activity")]
        self._messages: list[dict[str, Any]] = []
        self._texts: dict[str, list[str]] = {}  # message id -> its content's deltas
        self._calls: dict[str, dict[str, Any]] = {}  # tool call id -> the call
        self._arguments: dict[str, list[str]] = {}  # tool call id -> its arguments' deltas

    def _find(self, message_id: str) -> dict[str, Any] | None:
        return next((m for m in self._messages if m["id"] == message_id), None)

    def text_start(self, message_id: str) -> None:
        """An assistant message's text begins (TEXT_MESSAGE_START)."""
        if self._find(message_id) is None:
            self._messages.append({"id": message_id, "role": "assistant"})
        self._texts.setdefault(message_id, [])

    def text(self, message_id: str, delta: str) -> None:
        """A piece of a message's text (TEXT_MESSAGE_CONTENT)."""
        self._texts.setdefault(message_id, []).append(delta)

    def text_of(self, message_id: str) -> str:
        """The message's text as the client has it now."""
        return "".join(self._texts.get(message_id, ()))

    def replace_text(self, message_id: str, text: str) -> None:
        """The message's text becomes ``text`` (a provider's final text)."""
        self._texts[message_id] = [text]

    def call_start(self, call_id: str, name: str, parent_id: str) -> None:
        """A tool call begins, on the assistant message ``parent_id`` (TOOL_CALL_START)."""
        if call_id in self._calls:
            self._calls[call_id]["function"]["name"] = name
            return
        parent = self._find(parent_id)
        if parent is None or parent["role"] != "assistant":
            parent = {"id": parent_id if parent is None else call_id, "role": "assistant"}
            self._messages.append(parent)
        call = {"id": call_id, "type": "function", "function": {"name": name}}
        parent.setdefault("toolCalls", []).append(call)
        self._calls[call_id] = call
        self._arguments[call_id] = []

    def call_args(self, call_id: str, delta: str) -> None:
        """A piece of a call's arguments (TOOL_CALL_ARGS)."""
        self._arguments.setdefault(call_id, []).append(delta)

    def result(self, message_id: str, call_id: str, content: str) -> None:
        """A tool's result, placed after its call's message (TOOL_CALL_RESULT)."""
        message = {"id": message_id, "role": "tool", "toolCallId": call_id, "content": content}
        at = next(
            (
                i + 1
                for i, m in enumerate(self._messages)
                if any(c["id"] == call_id for c in m.get("toolCalls", ()))
            ),
            len(self._messages),
        )
        while at < len(self._messages) and self._messages[at]["role"] == "tool":
            at += 1
        self._messages.insert(at, message)

    def snapshot(self) -> MessagesSnapshotEvent:
        """The conversation as it stands: the input messages, then the run's."""
        messages = list(self._input)
        for message in self._messages:
            message = dict(message)
            if message["id"] in self._texts:
                message["content"] = self.text_of(message["id"])
            if "toolCalls" in message:
                message["toolCalls"] = [
                    {
                        **c,
                        "function": {
                            **c["function"],
                            "arguments": "".join(self._arguments[c["id"]]),
                        },
                    }
                    for c in message["toolCalls"]
                ]
            messages.append(message)
        core = require("ag_ui.core", feature="AG-UI", extra="agui", package="ag-ui-protocol")
        snapshot: MessagesSnapshotEvent = core.MessagesSnapshotEvent(messages=messages)
        return snapshot
