"""The abstract turn: what a scripted model says, before any provider's wire format.

A :class:`Script` is a list of parts (thinking, text, tool calls, server tools and their
results, images, a finish or an in-stream error) interleaved with control parts
(:class:`Pause`, :class:`WaitGate`) and the turn's :class:`TurnUsage`. A content part is
shorthand for the ChatEvents it stands for (:class:`TurnEvents`): the library's own
encoders (:mod:`solon_events.adapters.provider_formats`) write those events in each
provider's format, so the embedded provider says exactly what a gateway would. Bedrock's
binary event stream, which no adapter writes, has its encoder here
(:mod:`.encoders.bedrock`).
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any, Literal

import attrs
import orjson

from ..event_model.errors import ProviderError
from ..event_model.events import EVENT_TYPES, ChatEvent
from ..event_model.results import ChatResponse, ImageBlock, ToolCall, Usage

__all__ = [
    "Content",
    "Control",
    "Cut",
    "KeepAlive",
    "Finish",
    "ImagePart",
    "Part",
    "Pause",
    "Ping",
    "Refusal",
    "RawBytes",
    "Script",
    "ServerToolPart",
    "StreamError",
    "Text",
    "Thinking",
    "ToolCallPart",
    "TurnEvents",
    "TurnUsage",
    "WaitGate",
    "usage_of",
]

FinishKind = Literal["stop", "tool_calls", "content_filter", "length"]


@attrs.frozen
class Thinking:
    """One reasoning delta."""

    text: str


@attrs.frozen
class Text:
    """One answer text delta."""

    text: str


@attrs.frozen
class Refusal:
    """One refusal delta (the wires that have none send nothing of it)."""

    text: str


@attrs.frozen
class ToolCallPart:
    """A whole tool call, its JSON arguments streamed as ``fragments`` where the wire allows.

    ``streamed`` calls go to Gemini as ``partialArgs`` (a JSON path and a value, strings
    in pieces) rather than whole ``args``.
    """

    name: str
    fragments: tuple[str, ...]
    streamed: bool = False

    @property
    def arguments_json(self) -> str:
        """The arguments as one JSON text."""
        return "".join(self.fragments)

    @property
    def arguments(self) -> dict[str, Any]:
        """The arguments as a dict."""
        parsed = orjson.loads(self.arguments_json or "{}")
        return parsed if isinstance(parsed, dict) else {}


@attrs.frozen
class ServerToolPart:
    """A tool the provider runs itself (a web search, say): its call, the JSON input
    streamed as ``fragments``, then its ``result`` text (``is_error`` when it failed).
    Only wires that have server tools send it (Bedrock); the others send nothing."""

    name: str
    fragments: tuple[str, ...]
    result: str
    is_error: bool = False


@attrs.frozen
class ImagePart:
    """An image the model makes: its bytes ``data`` in ``format`` (``png``, ``jpeg``,
    ``gif``, ``webp``), streamed in ``pieces`` deltas. Only wires that stream images send it
    (Bedrock); the others send nothing."""

    data: bytes
    format: str = "png"
    pieces: int = 1


@attrs.frozen
class Finish:
    """The provider's completion signal: ``"stop"``, ``"tool_calls"``, ``"content_filter"``
    or ``"length"`` (the token limit), in abstract words."""

    reason: FinishKind


@attrs.frozen
class StreamError:
    """A provider error reported inside the stream (the stream then ends)."""

    message: str


@attrs.frozen
class Pause:
    """Wait ``seconds`` before the next part (before the headers when it comes first)."""

    seconds: float


@attrs.frozen
class WaitGate:
    """Wait until the server's gate is opened (:meth:`DevServer.open_gate`)."""


@attrs.frozen
class KeepAlive:
    """Bytes that keep a connection busy and carry no frame: an SSE comment line
    (``: keep-alive``), a blank line in JSON lines."""


@attrs.frozen
class Ping:
    """The provider's own keep-alive *frame* (Anthropic's ``ping`` event); nothing on wires
    that have none."""


@attrs.frozen
class RawBytes:
    """``data`` written as it is, whatever the wire (a line that never ends, say)."""

    data: bytes


@attrs.frozen
class Cut:
    """The connection is dropped here, without the body's proper end."""


Content = (
    Thinking | Text | Refusal | ToolCallPart | ServerToolPart | ImagePart | Finish | StreamError
)
"""The parts an encoder turns into frames."""

Control = Pause | WaitGate | KeepAlive | Ping | RawBytes | Cut
"""The parts the server acts out itself: waits, bytes that are no frame, a dropped
connection."""

Part = Content | Control
"""Any part of a script."""


@attrs.frozen
class TurnUsage:
    """Token counts of a turn; ``completion`` includes ``thinking``."""

    prompt: int = 0
    completion: int = 0
    thinking: int = 0

    @property
    def total(self) -> int:
        """``prompt + completion``."""
        return self.prompt + self.completion


@attrs.frozen
class Script:
    """A scripted turn: its parts in order and its usage; with ``byte_interval``, every
    byte of it is written on its own, that many seconds apart."""

    parts: Sequence[Part]
    usage: TurnUsage = TurnUsage()
    byte_interval: float = 0.0


def usage_of(usage: TurnUsage) -> Usage:
    """A turn's counts as a :class:`~solon_events.Usage`."""
    return Usage(
        prompt_tokens=usage.prompt,
        completion_tokens=usage.completion,
        thinking_tokens=usage.thinking,
    )


class TurnEvents:
    """A script's content parts as the ChatEvents they stand for, one part at a time.

    A part is shorthand for events: :class:`Thinking` a THINKING_DELTA, :class:`Text` a
    TEXT_DELTA, :class:`Refusal` a REFUSAL_DELTA, :class:`ToolCallPart` a TOOL_CALL_START,
    an ARGS_DELTA per fragment and a TOOL_CALL_END, :class:`ServerToolPart` a
    SERVER_TOOL_START, its ARGS_DELTAs and its SERVER_TOOL_RESULT, :class:`ImagePart` a
    MEDIA_DONE holding the image,
    :class:`Finish` RESPONSE_END with the turn's usage, :class:`StreamError` an ERROR whose
    provider error carries ``error_status``. The first part is preceded by a USAGE of the
    prompt's tokens, known before a provider writes anything.
    """

    def __init__(self, usage: TurnUsage, error_status: int = 500) -> None:
        self.usage = usage
        self.error_status = error_status
        self._started = False
        self._calls = 0

    def events(self, part: Content) -> list[ChatEvent]:
        """The events ``part`` stands for."""
        events: list[ChatEvent] = []
        if not self._started:
            self._started = True
            events.append(
                ChatEvent(EVENT_TYPES.USAGE, usage=Usage(prompt_tokens=self.usage.prompt))
            )
        if isinstance(part, Thinking):
            events.append(ChatEvent(EVENT_TYPES.THINKING_DELTA, text=part.text))
        elif isinstance(part, Text):
            events.append(ChatEvent(EVENT_TYPES.TEXT_DELTA, text=part.text))
        elif isinstance(part, Refusal):
            events.append(ChatEvent(EVENT_TYPES.REFUSAL_DELTA, text=part.text))
        elif isinstance(part, ToolCallPart):
            events += self._call(part)
        elif isinstance(part, ServerToolPart):
            events += self._server_tool(part)
        elif isinstance(part, ImagePart):
            data = base64.b64encode(part.data).decode()
            image = ImageBlock(data=data, mime_type=f"image/{part.format}")
            events.append(ChatEvent(EVENT_TYPES.MEDIA_DONE, block=image))
        elif isinstance(part, Finish):
            usage = usage_of(self.usage)
            response = ChatResponse(finish_reason=part.reason, usage=usage)
            events.append(ChatEvent(EVENT_TYPES.RESPONSE_END, response=response, usage=usage))
        else:
            error = ProviderError(part.message, provider_error={"code": self.error_status})
            events.append(ChatEvent(EVENT_TYPES.ERROR, error=error, text=part.message))
        return events

    def _call(self, part: ToolCallPart) -> list[ChatEvent]:
        index = self._calls
        self._calls += 1
        head = ToolCall(name=part.name, index=index)
        whole = ToolCall(name=part.name, arguments_str=part.arguments_json, index=index)
        return [
            ChatEvent(EVENT_TYPES.TOOL_CALL_START, tool_call=head, index=index),
            *(
                ChatEvent(EVENT_TYPES.TOOL_CALL_ARGS_DELTA, text=f, index=index)
                for f in part.fragments
            ),
            ChatEvent(EVENT_TYPES.TOOL_CALL_END, tool_call=whole, index=index),
        ]

    def _server_tool(self, part: ServerToolPart) -> list[ChatEvent]:
        index = self._calls
        self._calls += 1
        name = part.name
        return [
            ChatEvent(
                EVENT_TYPES.SERVER_TOOL_START,
                tool_call=ToolCall(name=name),
                index=index,
                sub_type=name,
            ),
            *(
                ChatEvent(EVENT_TYPES.SERVER_TOOL_ARGS_DELTA, text=f, index=index, sub_type=name)
                for f in part.fragments
            ),
            ChatEvent(
                EVENT_TYPES.SERVER_TOOL_RESULT,
                text=part.result,
                attrs={"is_error": part.is_error},
                index=index,
                sub_type=name,
            ),
        ]
