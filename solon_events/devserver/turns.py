"""The abstract turn: what a scripted model says, before any provider's wire format.

A :class:`Script` is a list of parts (thinking, text, tool calls, server tools and their
results, images, a finish or an in-stream error) interleaved with control parts
(:class:`Pause`, :class:`WaitGate`) and the turn's :class:`TurnUsage`. Each dialect's
encoder turns the content parts into its own frames.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import attrs
import orjson

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
    "RawBytes",
    "Script",
    "ServerToolPart",
    "StreamError",
    "Text",
    "Thinking",
    "ToolCallPart",
    "TurnUsage",
    "WaitGate",
]

FinishKind = Literal["stop", "tool_calls"]


@attrs.frozen
class Thinking:
    """One reasoning delta."""

    text: str


@attrs.frozen
class Text:
    """One answer text delta."""

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
    """The provider's completion signal: ``"stop"`` or ``"tool_calls"``, in abstract words."""

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


Content = Thinking | Text | ToolCallPart | ServerToolPart | ImagePart | Finish | StreamError
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
