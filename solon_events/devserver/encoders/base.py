"""What every route's wire shares: the request view, framing, and :class:`FormatWire`,
the wire whose bytes the library's adapters write."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

import attrs
import orjson

from ...adapters.provider_formats import error_body, wire_encoder
from ...adapters.provider_formats.base import ErrorInfo, error_info, now, random_id
from ...event_model.events import EVENT_TYPES, ChatEvent
from ..turns import (
    Content,
    Finish,
    ImagePart,
    Refusal,
    ServerToolPart,
    StreamError,
    Text,
    Thinking,
    ToolCallPart,
    TurnEvents,
    TurnUsage,
)

__all__ = [
    "AskedOutput",
    "ErrorInfo",
    "FormatWire",
    "Frame",
    "RequestView",
    "ToolDecl",
    "Wire",
    "content_text",
    "error_info",
    "flat_function_tools",
    "now",
    "random_id",
    "trailing_results",
]

Frame = Mapping[str, Any] | str | bytes
"""One payload of a stream: a JSON object, a raw data string such as ``[DONE]``, or bytes
already framed (what a :class:`FormatWire` encodes)."""

Framing = Literal["sse", "sse-event", "sse-crlf", "ndjson", "eventstream"]


@attrs.frozen
class ToolDecl:
    """A client tool the request declares: its name and its JSON schema."""

    name: str
    schema: Mapping[str, Any]


@attrs.frozen
class AskedOutput:
    """The structured answer a request asks for: its ``schema``, the ``tool`` to answer by
    calling (``""``: answer in text), and how many times the conversation already asked
    again after a wrong answer (``retries``)."""

    schema: Mapping[str, Any]
    tool: str = ""
    retries: int = 0


@attrs.frozen
class RequestView:
    """What a scenario needs from a request, whatever its dialect.

    ``tool_results`` are the texts of the tool results that end the conversation (empty
    when the last turn is not a tool result).
    """

    model: str = ""
    user_text: str = ""
    tool_results: tuple[str, ...] = ()
    tools: tuple[ToolDecl, ...] = ()
    credential: str = ""
    """The API key the request carried (header or ``key`` query value), for the scenarios
    that echo it as careless providers do."""
    attempt: int = 1
    """How many requests with this model name the route has received, this one included."""
    prefill: str = ""
    """The text of a trailing assistant turn the request asks the model to continue (an
    assistant prefill: Anthropic's and Ollama's trailing assistant message, a Chat
    Completions one marked ``prefix``/``partial`` or with ``continue_final_message``); the
    scripted answer goes on from it."""
    include_usage: bool = True
    """Whether the answer ends with its usage (Chat Completions' not when the request says
    ``stream_options.include_usage: false``; the other wires' always)."""
    output: AskedOutput | None = None
    """The structured answer the request asks for (None: text)."""


def content_text(content: Any) -> str:
    """The text of a message content: a string, a list of text parts/blocks, else JSON."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, (list, tuple)):
        return "".join(_item_text(item) for item in content)
    if isinstance(content, Mapping):
        text = content.get("text")
        if isinstance(text, str):
            return text
        if "content" in content:
            return content_text(content["content"])
    return orjson.dumps(content).decode()


def trailing_results(items: Sequence[Mapping[str, Any]], kind: str, field: str) -> tuple[str, ...]:
    """The texts of the ``field`` of the items of type ``kind`` that end ``items`` (the tool
    results of Responses' ``function_call_output``, the Interactions API's
    ``function_result``)."""
    results: list[str] = []
    for item in reversed(items):
        if item.get("type") != kind:
            break
        results.insert(0, content_text(item.get(field)))
    return tuple(results)


def flat_function_tools(tools: Any) -> tuple[ToolDecl, ...]:
    """The ``{"type": "function", "name", "parameters"}`` tools of a request (Responses and
    the Interactions API)."""
    return tuple(
        ToolDecl(str(t["name"]), t.get("parameters") or {})
        for t in tools or ()
        if isinstance(t, Mapping) and t.get("type") == "function" and t.get("name")
    )


def _item_text(item: Any) -> str:
    if isinstance(item, str):
        return item
    text = item.get("text") if isinstance(item, Mapping) else None
    return text if isinstance(text, str) else ""


class Wire:
    """One provider's side of the wire: reads its requests, encodes turns, writes errors.

    One instance encodes one response: :meth:`encode` takes the abstract parts in order
    and returns the frames to send. Subclasses set :attr:`framing` and implement
    :meth:`read_request` and :meth:`error_body`, plus the hooks they need: ``open``,
    ``start_block``, ``end_block``, ``thinking``, ``text``, ``tool_call``, ``server_tool``,
    ``image``, ``finish`` and ``error``. A *block* is a run of parts of one kind (thinking,
    text, one tool call); a server tool or an image makes its own blocks.
    """

    format: ClassVar[str] = ""
    """The name of the wire format (the dialect that reads it)."""
    framing: ClassVar[Framing] = "sse"
    """How frames are written: SSE data lines, SSE with ``event:`` lines, SSE with CRLF
    line ends, one JSON object per line, or AWS event-stream messages (binary)."""

    send_usage = True
    """Whether the response ends with its usage (the request's
    :attr:`RequestView.include_usage`)."""

    def __init__(self, model: str, usage: TurnUsage) -> None:
        self.model = model
        self.usage = usage
        self._opened = False
        self._block: str | None = None

    @property
    def content_type(self) -> str:
        """The response's content type."""
        return "application/x-ndjson" if self.framing == "ndjson" else "text/event-stream"

    @classmethod
    def read_request(cls, body: Mapping[str, Any]) -> RequestView:
        """The scenario's view of a request body."""
        raise NotImplementedError

    @classmethod
    def error_body(cls, status: int, message: str | None = None) -> dict[str, Any]:
        """The provider's JSON body for an HTTP error ``status``."""
        raise NotImplementedError

    def frame_bytes(self, frame: Frame) -> bytes:
        """One frame as it goes on the wire (bytes as they are)."""
        if isinstance(frame, bytes):
            return frame
        data = frame if isinstance(frame, str) else orjson.dumps(frame).decode()
        if self.framing == "ndjson":
            return f"{data}\n".encode()
        if self.framing == "sse-crlf":
            return f"data: {data}\r\n\r\n".encode()
        if self.framing == "sse-event" and isinstance(frame, Mapping) and "type" in frame:
            return f"event: {frame['type']}\ndata: {data}\n\n".encode()
        return f"data: {data}\n\n".encode()

    def raw_bytes(self, data: bytes) -> bytes:
        """What a scenario's raw bytes (a frame cut short, a malformed one) become on this
        wire: the bytes themselves for the text formats."""
        return data

    def keep_alive_bytes(self) -> bytes:
        """Bytes that keep the connection busy and make no frame."""
        return b"\n" if self.framing == "ndjson" else b": keep-alive\n\n"

    def ping(self) -> list[Frame]:
        """The provider's own ping frames (none by default)."""
        return []

    def encode(self, part: Content) -> list[Frame]:
        """The frames that say ``part``, opening the stream and blocks as needed."""
        frames: list[Frame] = []
        if not self._opened:
            self._opened = True
            frames += self.open()
        kind = _kind(part)
        if self._block is not None and (kind != self._block or kind == "tool"):
            frames += self.end_block(self._block)
            self._block = None
        if kind in ("thinking", "text", "tool") and self._block is None:
            frames += self.start_block(kind, part)
            self._block = kind
        if isinstance(part, Thinking):
            frames += self.thinking(part.text)
        elif isinstance(part, Text):
            frames += self.text(part.text)
        elif isinstance(part, ToolCallPart):
            frames += self.tool_call(part)
        elif isinstance(part, ServerToolPart):
            frames += self.server_tool(part)
        elif isinstance(part, ImagePart):
            frames += self.image(part)
        elif isinstance(part, Finish):
            frames += self.finish(part.reason)
        elif isinstance(part, StreamError):
            frames += self.error(part.message)
        return frames  # a Refusal: this wire has none

    def open(self) -> list[Frame]:
        """Frames that start the response."""
        return []

    def start_block(self, kind: str, part: Content) -> list[Frame]:
        """Frames that open a block of ``kind`` ("thinking", "text" or "tool")."""
        return []

    def end_block(self, kind: str) -> list[Frame]:
        """Frames that close the open block of ``kind``."""
        return []

    def thinking(self, text: str) -> list[Frame]:
        """Frames of one thinking delta."""
        raise NotImplementedError

    def text(self, text: str) -> list[Frame]:
        """Frames of one text delta."""
        raise NotImplementedError

    def tool_call(self, call: ToolCallPart) -> list[Frame]:
        """Frames of one tool call (its block is open)."""
        raise NotImplementedError

    def server_tool(self, part: ServerToolPart) -> list[Frame]:
        """Frames of a server tool's call and result, as whole blocks of their own
        (none on wires without server tools)."""
        return []

    def image(self, part: ImagePart) -> list[Frame]:
        """Frames of an image, as a whole block of its own (none on wires that stream no
        images)."""
        return []

    def finish(self, reason: str) -> list[Frame]:
        """Frames of the completion signal, with usage."""
        raise NotImplementedError

    def error(self, message: str) -> list[Frame]:
        """Frames of an in-stream provider error."""
        raise NotImplementedError


_KINDS: dict[type, str] = {
    Refusal: "refusal",
    Thinking: "thinking",
    Text: "text",
    ToolCallPart: "tool",
    ServerToolPart: "media",
    ImagePart: "media",
    Finish: "finish",
}
"""The kind of block each part belongs to (a StreamError: ``"error"``)."""


def _kind(part: Content) -> str:
    return _KINDS.get(type(part), "error")


class FormatWire(Wire):
    """A wire whose bytes the library's own encoders write
    (:mod:`solon_events.adapters.provider_formats`): it reads the provider's requests,
    and turns a script's parts into ChatEvents (:class:`~..turns.TurnEvents`) for the
    encoder of its :attr:`format`. The embedded provider owns no wire knowledge of its own
    for these formats: what a client reads is what the adapters write.
    """

    stream_error_status: ClassVar[int] = 500
    """The HTTP status an in-stream error of a script is typed by (Anthropic's
    ``overloaded_error`` is 503)."""

    def __init__(self, model: str, usage: TurnUsage, **options: Any) -> None:
        super().__init__(model, usage)
        self.encoder = wire_encoder(self.format, model=model, **options)
        """The adapters' encoder of this response."""
        self.events = TurnEvents(usage, self.stream_error_status)

    @property
    def content_type(self) -> str:
        """The encoder's media type."""
        return self.encoder.media_type

    @classmethod
    def error_body(cls, status: int, message: str | None = None) -> dict[str, Any]:
        """The format's error body, as the adapters write it."""
        return error_body(cls.format, status, message)

    def encode(self, part: Content) -> list[Frame]:
        """The payloads of the events ``part`` stands for (the body's end after a finish
        or an error), as the encoder writes them."""
        encoder = self.encoder
        frames: list[Frame] = []
        for event in self.events.events(part):
            frames += encoder.payloads(event)
        if isinstance(part, (Finish, StreamError)):
            frames += encoder.closing_payloads()
        return frames

    def frame_bytes(self, frame: Frame) -> bytes:
        """One payload framed by the encoder (bytes as they are; a recorded payload the
        encoder cannot frame, such as an event without a ``type``, as a ``data:`` line)."""
        if isinstance(frame, Mapping) and ("type" in frame or self.framing != "sse-event"):
            return self.encoder.frame(frame)
        if isinstance(frame, str) and self.framing == "sse":
            return self.encoder.frame(frame)
        return super().frame_bytes(frame)

    def keep_alive_bytes(self) -> bytes:
        """The encoder's keep-alive bytes."""
        return self.encoder.keep_alive()

    def ping(self) -> list[Frame]:
        """What the encoder writes for a HEARTBEAT (Anthropic's ``ping``)."""
        return list(self.encoder.payloads(ChatEvent(EVENT_TYPES.HEARTBEAT)))
