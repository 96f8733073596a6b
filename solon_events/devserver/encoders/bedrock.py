"""Amazon Bedrock ``ConverseStream``: AWS event-stream messages, one per event.

Each frame is ``{"<event type>": payload}`` (``messageStart``, ``contentBlockStart`` for a
tool call, a server tool's call and result, an image, ``contentBlockDelta``,
``contentBlockStop``, ``messageStop``, ``metadata``); one whose type ends in ``Exception``
goes out as an exception message.
"""

from __future__ import annotations

import base64
import secrets
import struct
import time
import zlib
from collections.abc import Mapping
from typing import Any

from ...wire.eventstream import CONTENT_TYPE, encode_message, event_message, exception_message
from ..turns import Content, ImagePart, ServerToolPart, ToolCallPart, TurnUsage
from .base import Frame, RequestView, ToolDecl, Wire, content_text, error_info, random_id

__all__ = ["BedrockWire"]

_STOP_REASONS = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "content_filter": "content_filtered",
    "length": "max_tokens",
}


class BedrockWire(Wire):
    """The ``/model/{modelId}/converse-stream`` stream."""

    format = "bedrock"
    framing = "eventstream"

    def __init__(self, model: str, usage: TurnUsage) -> None:
        super().__init__(model, usage)
        self._index = -1
        self._started = time.perf_counter()
        self._unfinished = False

    @property
    def content_type(self) -> str:
        """``application/vnd.amazon.eventstream``."""
        return CONTENT_TYPE

    @classmethod
    def read_request(cls, body: Mapping[str, Any]) -> RequestView:
        """``toolResult`` blocks of the last user turn; ``toolConfig.tools[].toolSpec``.

        The model is in the URL, not the body.
        """
        messages = [m for m in body.get("messages") or () if isinstance(m, Mapping)]
        results: list[str] = []
        if messages and messages[-1].get("role") == "user":
            results = [
                content_text(block["toolResult"].get("content"))
                for block in _blocks(messages[-1])
                if isinstance(block.get("toolResult"), Mapping)
            ]
        user_text = next(
            (
                text
                for m in reversed(messages)
                if m.get("role") == "user"
                and (
                    text := "".join(b["text"] for b in _blocks(m) if isinstance(b.get("text"), str))
                )
            ),
            "",
        )
        tool_config = body.get("toolConfig")
        tools = tool_config.get("tools") if isinstance(tool_config, Mapping) else None
        declared = []
        for tool in tools or ():
            spec = tool.get("toolSpec") if isinstance(tool, Mapping) else None
            if isinstance(spec, Mapping) and spec.get("name"):
                schema = spec.get("inputSchema")
                json_schema = schema.get("json") if isinstance(schema, Mapping) else None
                declared.append(ToolDecl(str(spec["name"]), json_schema or {}))
        return RequestView(user_text=user_text, tool_results=tuple(results), tools=tuple(declared))

    @classmethod
    def error_body(cls, status: int, message: str | None = None) -> dict[str, Any]:
        """``{"message": "..."}``, as AWS's JSON protocols answer."""
        return {"message": error_info(status, message).message}

    def frame_bytes(self, frame: Frame) -> bytes:
        """One event-stream message: an exception for a ``...Exception`` frame, else an event."""
        if isinstance(frame, bytes):
            return frame
        if not isinstance(frame, Mapping):
            return frame.encode()
        ((kind, payload),) = frame.items()
        if kind.endswith("Exception"):
            fields = dict(payload)
            return exception_message(kind, str(fields.pop("message", "")), **fields)
        return event_message(kind, payload)

    def raw_bytes(self, data: bytes) -> bytes:
        """A scenario's raw SSE bytes in event-stream terms: a whole event (``data: X`` and its
        blank line) is a whole message whose payload is ``X``, even if ``X`` is malformed;
        anything else is part of a message never finished: the first such bytes follow the
        prelude of a 1 MiB message, later ones continue it."""
        if data.endswith(b"\n\n") and not self._unfinished:
            payload = data.removeprefix(b"data: ").rstrip(b"\n")
            return encode_message({":event-type": "chunk", ":message-type": "event"}, payload)
        if self._unfinished:
            return data
        self._unfinished = True
        lengths = struct.pack("!II", 1 << 20, 0)
        return lengths + struct.pack("!I", zlib.crc32(lengths)) + data

    def keep_alive_bytes(self) -> bytes:
        """Nothing: an event stream has no keep-alive message."""
        return b""

    def open(self) -> list[Frame]:
        """``messageStart``."""
        return [{"messageStart": {"role": "assistant"}}]

    def start_block(self, kind: str, part: Content) -> list[Frame]:
        """``contentBlockStart`` for a tool call; text and reasoning blocks have none."""
        self._index += 1
        if kind != "tool":
            return []
        assert isinstance(part, ToolCallPart)
        tool_use = {"toolUseId": random_id("tooluse_", 22), "name": part.name}
        return [self._start({"toolUse": tool_use})]

    def end_block(self, kind: str) -> list[Frame]:
        """A reasoning block's signature, then ``contentBlockStop``."""
        frames: list[Frame] = []
        if kind == "thinking":
            signature = base64.b64encode(secrets.token_bytes(48)).decode()
            frames.append(self._delta({"reasoningContent": {"signature": signature}}))
        frames.append(self._stop())
        return frames

    def _delta(self, delta: Mapping[str, Any]) -> Frame:
        return {"contentBlockDelta": {"contentBlockIndex": self._index, "delta": delta}}

    def thinking(self, text: str) -> list[Frame]:
        """A ``reasoningContent.text`` delta."""
        return [self._delta({"reasoningContent": {"text": text}})]

    def text(self, text: str) -> list[Frame]:
        """A ``text`` delta."""
        return [self._delta({"text": text})]

    def tool_call(self, call: ToolCallPart) -> list[Frame]:
        """One ``toolUse.input`` delta per fragment."""
        return [self._delta({"toolUse": {"input": fragment}}) for fragment in call.fragments]

    def server_tool(self, part: ServerToolPart) -> list[Frame]:
        """A ``toolUse`` block of ``type`` ``server_tool_use`` (its input in ``toolUse``
        deltas), then a ``toolResult`` block answering it (its text in one delta)."""
        tool_id = random_id("tooluse_", 22)
        self._index += 1
        tool_use = {"toolUseId": tool_id, "name": part.name, "type": "server_tool_use"}
        frames = [self._start({"toolUse": tool_use})]
        frames += [self._delta({"toolUse": {"input": fragment}}) for fragment in part.fragments]
        frames.append(self._stop())
        self._index += 1
        status = "error" if part.is_error else "success"
        result = {"toolUseId": tool_id, "type": part.name, "status": status}
        frames.append(self._start({"toolResult": result}))
        frames.append(self._delta({"toolResult": [{"text": part.result}]}))
        frames.append(self._stop())
        return frames

    def image(self, part: ImagePart) -> list[Frame]:
        """An ``image`` block: its ``format``, then ``pieces`` deltas of base64 bytes."""
        self._index += 1
        frames = [self._start({"image": {"format": part.format}})]
        size = max(1, -(-len(part.data) // max(1, part.pieces)))  # bytes a piece, rounded up
        for at in range(0, len(part.data), size):
            piece = base64.b64encode(part.data[at : at + size]).decode()
            frames.append(self._delta({"image": {"source": {"bytes": piece}}}))
        frames.append(self._stop())
        return frames

    def _start(self, start: Mapping[str, Any]) -> Frame:
        return {"contentBlockStart": {"contentBlockIndex": self._index, "start": start}}

    def _stop(self) -> Frame:
        return {"contentBlockStop": {"contentBlockIndex": self._index}}

    def finish(self, reason: str) -> list[Frame]:
        """``messageStop`` with the stop reason, then ``metadata`` (usage, latency)."""
        usage = {
            "inputTokens": self.usage.prompt,
            "outputTokens": self.usage.completion,
            "totalTokens": self.usage.prompt + self.usage.completion,
        }
        latency = max(1, int((time.perf_counter() - self._started) * 1000))
        return [
            {"messageStop": {"stopReason": _STOP_REASONS.get(reason, reason)}},
            {"metadata": {"usage": usage, "metrics": {"latencyMs": latency}}},
        ]

    def error(self, message: str) -> list[Frame]:
        """A ``modelStreamErrorException``, as Bedrock sends when the model fails mid-stream."""
        exception = {"message": message, "originalStatusCode": 500, "originalMessage": message}
        return [{"modelStreamErrorException": exception}]


def _blocks(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    content = message.get("content")
    return [b for b in content if isinstance(b, Mapping)] if isinstance(content, list) else []
