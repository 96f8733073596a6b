"""What every provider format's encoder shares: the event walk, blocks, finish words, errors.

:class:`WireEncoder` reads the ChatEvents of one response, in order, and writes them as one
provider's wire bytes. It owns what is the same in every format: which content block is
open (text, thinking, a tool call, a server tool, an image), tool calls told apart by id
or index, the usage and finish reason the response ends with, and the framing of payloads
into bytes. A format's module subclasses it and writes payloads in its hooks; everything
here is plain synchronous Python (sans-I/O).

Blocks are written one after another, as every format but OpenAI's can only write them: a
tool call that starts while another is open is held, with its argument fragments, until
the open one ends. A text or thinking delta while a call is open ends that call.
"""

from __future__ import annotations

import secrets
import string
import time
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Literal

import attrs

from ...event_model.errors import ChatError, ChatHttpError
from ...event_model.events import EVENT_TYPES, ChatEvent, ChatEventType
from ...event_model.finish import FinishReason, unified_finish
from ...event_model.results import ChatResponse, ToolCall, Usage
from ...wire.writing import sse_data, sse_event, sse_frame

__all__ = [
    "FINISH_WORDS",
    "Block",
    "ErrorInfo",
    "MessageEnd",
    "Payload",
    "WireEncoder",
    "error_info",
    "error_message",
    "error_status",
    "finish_kind",
    "finish_word",
    "now",
    "random_id",
    "response_finish_kind",
    "sse_data",
    "sse_event",
]

Payload = Mapping[str, Any] | str
"""One payload of a stream: a JSON object, or a raw data string such as ``[DONE]``."""


@attrs.frozen
class MessageEnd:
    """How a message ends, as :meth:`WireEncoder.finish` writes it."""

    kind: FinishReason
    """The finish reason in the unified vocabulary (the response's ``finish``)."""
    reason: str | None
    """The finish reason as the upstream said it."""
    usage: Usage | None
    """The response's usage."""
    response: ChatResponse | None
    """The final response."""


BlockKind = Literal["text", "thinking", "call", "server_tool", "image", "refusal"]

_ALNUM = string.ascii_letters + string.digits


def random_id(prefix: str, length: int = 24, alphabet: str = _ALNUM) -> str:
    """``prefix`` followed by ``length`` random characters of ``alphabet``.

    The characters are the digits, in base ``len(alphabet)``, of one number of
    ``8 * length`` random bits: one read of the system's randomness (a system call), not
    one a character; the digits taken leave so many bits over that no character is more
    likely than another by more than ``base ** length / 2 ** (8 * length)``.
    """
    number = int.from_bytes(secrets.token_bytes(length), "big")
    base = len(alphabet)
    characters = []
    for _ in range(length):
        number, digit = divmod(number, base)
        characters.append(alphabet[digit])
    return prefix + "".join(characters)


def now() -> int:
    """The current Unix time in whole seconds."""
    return int(time.time())


# ------------------------------------------------------------------ finish reasons

_FORMAT_FINISH_WORDS = {
    # format: its words for stop, length, tool_calls, content_filter, error, other
    "openai": ("stop", "length", "tool_calls", "content_filter", "stop", "stop"),
    "anthropic": ("end_turn", "max_tokens", "tool_use", "refusal", "end_turn", "end_turn"),
    "gemini": ("STOP", "MAX_TOKENS", "STOP", "SAFETY", "MALFORMED_FUNCTION_CALL", "OTHER"),
    "ollama": ("stop", "length", "stop", "stop", "stop", "stop"),
    "cohere": ("COMPLETE", "MAX_TOKENS", "TOOL_CALL", "COMPLETE", "ERROR", "COMPLETE"),
    "google-interactions": (
        "completed",
        "incomplete",
        "requires_action",
        "completed",
        "failed",
        "completed",
    ),
}

FINISH_WORDS: Mapping[str, Mapping[FinishReason, str]] = {
    format: dict(zip(FinishReason, words, strict=True))
    for format, words in _FORMAT_FINISH_WORDS.items()
}
"""Each format's finish reason for each unified :class:`~solon_events.FinishReason`, by the
format's name (the Responses API has none: it says ``status`` and ``incomplete_details``).
Where a format has no word for a reason, its plain stop stands in."""


def finish_kind(reason: str | None, has_tool_calls: bool = False) -> FinishReason:
    """Any provider's finish reason in the unified vocabulary:
    :func:`~solon_events.event_model.finish.unified_finish`."""
    return unified_finish(reason, has_tool_calls)


def finish_word(
    words: Mapping[FinishReason, str],
    kind: FinishReason,
    reason: str | None,
    others: frozenset[str] = frozenset(),
) -> str:
    """A format's finish reason, from its ``words`` for each unified reason: ``reason``
    itself when it is one of them (or of its ``others``) and means ``kind``, else the word
    for ``kind``."""
    if reason and (reason in words.values() or reason in others) and unified_finish(reason) == kind:
        return reason
    return words[kind]


def response_finish_kind(response: ChatResponse) -> FinishReason:
    """The unified finish reason of a whole response: its ``finish``, else its provider's
    word read (and whether it made calls)."""
    if response.finish is not None:
        return response.finish
    return unified_finish(response.finish_reason, bool(response.tool_calls))


# ------------------------------------------------------------------ errors


@attrs.frozen
class ErrorInfo:
    """An HTTP error as providers describe it: message and each format's type words."""

    message: str
    openai_type: str
    openai_code: str | None
    anthropic_type: str
    gemini_status: str


_ERRORS: dict[int, ErrorInfo] = {
    400: ErrorInfo(
        "Invalid request",
        "invalid_request_error",
        None,
        "invalid_request_error",
        "INVALID_ARGUMENT",
    ),
    401: ErrorInfo(
        "Incorrect API key provided",
        "invalid_request_error",
        "invalid_api_key",
        "authentication_error",
        "UNAUTHENTICATED",
    ),
    403: ErrorInfo(
        "You are not allowed to use this model",
        "invalid_request_error",
        "permission_denied",
        "permission_error",
        "PERMISSION_DENIED",
    ),
    404: ErrorInfo(
        "The model does not exist",
        "invalid_request_error",
        "model_not_found",
        "not_found_error",
        "NOT_FOUND",
    ),
    413: ErrorInfo(
        "Request too large", "invalid_request_error", None, "request_too_large", "INVALID_ARGUMENT"
    ),
    429: ErrorInfo(
        "Rate limit reached",
        "requests",
        "rate_limit_exceeded",
        "rate_limit_error",
        "RESOURCE_EXHAUSTED",
    ),
    500: ErrorInfo(
        "The server had an error while processing your request",
        "server_error",
        None,
        "api_error",
        "INTERNAL",
    ),
    503: ErrorInfo(
        "The service is temporarily unavailable",
        "server_error",
        None,
        "overloaded_error",
        "UNAVAILABLE",
    ),
    504: ErrorInfo("Timed out", "server_error", None, "api_error", "DEADLINE_EXCEEDED"),
    529: ErrorInfo("Overloaded", "server_error", None, "overloaded_error", "UNAVAILABLE"),
}

# Each format's error words back to a status, for errors that came from another format.
_STATUS_OF_WORD: dict[str, int] = {
    word: status
    for status, info in sorted(_ERRORS.items(), reverse=True)
    for word in (info.anthropic_type, info.gemini_status, info.openai_code)
    if word
}
_STATUS_OF_WORD.update({"overloaded_error": 529, "UNAVAILABLE": 503, "server_error": 500})


def error_info(status: int, message: str | None = None) -> ErrorInfo:
    """The description of HTTP ``status``; ``message`` replaces the default message."""
    info = _ERRORS.get(status)
    if info is None:
        client = status < 500
        info = ErrorInfo(
            f"HTTP {status}",
            "invalid_request_error" if client else "server_error",
            None,
            "invalid_request_error" if client else "api_error",
            "FAILED_PRECONDITION" if client else "UNKNOWN",
        )
    return attrs.evolve(info, message=message) if message else info


def error_status(error: BaseException | None, fields: Mapping[str, Any] | None = None) -> int:
    """The HTTP status that best describes a failure: a :class:`~solon_events.ChatHttpError`'s
    own, else what the provider's error ``fields`` (or the error's ``provider_error``) say in
    any format's words (a numeric ``code`` or ``status``, Anthropic's ``type``, Gemini's
    ``status``), else 500."""
    if isinstance(error, ChatHttpError):
        return error.status
    if not fields and isinstance(error, ChatError):
        fields = error.provider_error
    while isinstance(fields, Mapping):
        for key in ("code", "status", "originalStatusCode", "type"):
            value = fields.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and 400 <= value <= 599:
                return value
            if isinstance(value, str) and value in _STATUS_OF_WORD:
                return _STATUS_OF_WORD[value]
        inner = fields.get("error")
        fields = inner if isinstance(inner, Mapping) else None
    return 500


def error_message(error: BaseException | None, text: str | None = None) -> str:
    """What a failure says, without our own prefixes: the provider's message when the
    provider reported it, else ``text``, else the error's message."""
    from ...dialects.reading import provider_error_message

    if isinstance(error, ChatHttpError) and error.provider_message:
        return error.provider_message
    if isinstance(error, ChatError) and error.provider_error:
        said = provider_error_message(error.provider_error)
        if said:
            return said
    return text or (str(error) if error is not None else "") or "the response failed"


# ------------------------------------------------------------------ the encoder


class Block:
    """One content block of the message being written, as the format's hooks see it.

    ``kind`` is ``"text"``, ``"thinking"``, ``"call"`` (a client tool call),
    ``"server_tool"`` (a tool the provider ran), ``"image"`` or ``"refusal"`` (in the
    formats whose :attr:`~WireEncoder.refusal_blocks` is true). A call has its ``id`` (the
    event's, else one the format makes up), ``name`` and the argument ``fragments`` written
    so far; ``index`` is for the format to use (its position in the message, say).
    """

    __slots__ = ("ended", "fragments", "id", "index", "kind", "name", "number", "sub_type")

    def __init__(
        self, kind: BlockKind, id: str | None = None, name: str = "", number: int = 0
    ) -> None:
        self.kind = kind
        self.id = id
        self.name = name
        self.number = number
        """Its position among the response's blocks of the same kind (0, 1, ...)."""
        self.index = -1
        self.fragments: list[str] = []
        self.ended = False
        self.sub_type: str | None = None

    @property
    def arguments(self) -> dict[str, Any]:
        """A call's arguments parsed (``{}`` when they are empty or not a JSON object)."""
        return ToolCall(arguments_str="".join(self.fragments)).arguments

    def __repr__(self) -> str:
        return f"<Block {self.kind} {self.name or ''}#{self.number}>"


_Handler = Callable[["WireEncoder", ChatEvent], list[Payload]]


class WireEncoder:
    """ChatEvents of one response in, one provider format's bytes out (sans-I/O).

    :meth:`encode` returns the bytes an event becomes (often b"": most events write
    nothing, or write later; :meth:`payloads` the same before framing); :meth:`close`
    returns what ends the body (it first finishes
    the message if no RESPONSE_END came); :meth:`keep_alive` bytes that keep an idle
    connection busy and carry no event. One instance per response; after the response
    ended (RESPONSE_END, ABORT or ERROR) nothing more is written.

    A format subclasses it, sets :attr:`format` and :attr:`media_type`, writes its framing
    in :meth:`frame`, and its payloads in the hooks (:meth:`open`, :meth:`open_block`,
    :meth:`text`, :meth:`thinking`, :meth:`call_delta`, :meth:`close_block`,
    :meth:`finish`, :meth:`error`, ...), each returning a list of payloads. It also
    gives the non-streaming body (:meth:`response_body`) and the error body
    (:meth:`error_body`) of its API.
    """

    format: ClassVar[str] = ""
    """The format's name: the name of the dialect that reads it (``"openai"``, ...)."""
    media_type: ClassVar[str] = "text/event-stream"
    """The content type of a streamed body."""
    event_name: ClassVar[str | None] = None
    """The payload field that names its SSE event (an ``event:`` line before its ``data:``);
    None: bare ``data:`` events."""
    other_finish_words: ClassVar[frozenset[str]] = frozenset()
    """More finish reasons of the format, written as they are when the upstream gave them
    (Anthropic's ``stop_sequence``, say)."""
    call_id_prefix: ClassVar[str] = "call_"
    """How the format's tool call ids begin, for calls that come without one."""
    refusal_blocks: ClassVar[bool] = False
    """Whether refusal deltas go in a ``"refusal"`` block of their own (opened and closed
    as the others), rather than beside the open one."""

    def __init__(self, model: str) -> None:
        self.model = model
        """The model name written where the format names one."""
        self.usage: Usage | None = None
        """The latest usage the events reported (a USAGE, STEP_END or RESPONSE_END)."""
        self.started = False
        """True once the message's opening payloads are written."""
        self.ended = False
        """True once the response ended (finished, aborted or failed)."""
        self.failed = False
        """True once the response failed (an ERROR was written)."""
        self._block: Block | None = None
        self._calls: dict[Any, Block] = {}
        self._held: list[Block] = []
        self._counts: dict[str, int] = {}
        self._step_calls = 0
        self._last_response: ChatResponse | None = None

    # ---------------------------------------------------------------- public API

    def encode(self, event: ChatEvent) -> bytes:
        """The bytes ``event`` becomes (b"" when it writes nothing, or nothing yet)."""
        payloads = self.payloads(event)
        if not payloads:
            return b""
        if len(payloads) == 1:
            return self.frame(payloads[0])
        return b"".join([self.frame(payload) for payload in payloads])

    def payloads(self, event: ChatEvent) -> list[Payload]:
        """What :meth:`encode` writes for ``event``, before framing (:meth:`frame` writes
        each payload as it goes on the wire)."""
        if self.ended:
            return []
        handler = _HANDLERS.get(event.type)
        return handler(self, event) if handler is not None else []

    def fail(self, error: BaseException | None, text: str | None = None) -> bytes:
        """The bytes that end a response that failed with ``error`` (as an ERROR event of
        it writes; b"" when the response already ended)."""
        return self.encode(ChatEvent(EVENT_TYPES.ERROR, error=error, text=text))

    def close(self) -> bytes:
        """What ends the body: the message's finish when no RESPONSE_END came (from the
        last step's response and usage), then the format's end of stream."""
        return b"".join([self.frame(payload) for payload in self.closing_payloads()])

    def closing_payloads(self) -> list[Payload]:
        """What :meth:`close` writes, before framing."""
        payloads: list[Payload] = []
        if not self.ended:
            payloads = self._finish(self._last_response, None)
        return payloads + self.end_of_stream()

    def keep_alive(self) -> bytes:
        """Bytes that keep an idle connection busy and carry no event (an SSE comment)."""
        return b": keep-alive\n\n"

    def frame(self, payload: Payload) -> bytes:
        """One payload as it goes on the wire: an SSE event, named by the payload's
        :attr:`event_name` field where the format names them (:func:`.sse_frame`)."""
        return sse_frame(payload, self.event_name)

    @classmethod
    def response_body(cls, response: ChatResponse, *, model: str) -> dict[str, Any]:
        """The format's non-streaming response body for ``response``."""
        raise NotImplementedError

    @classmethod
    def error_body(cls, status: int, message: str | None = None) -> dict[str, Any]:
        """The format's JSON body for an HTTP error ``status`` (``message`` replaces the
        default one)."""
        raise NotImplementedError

    # ---------------------------------------------------------------- hooks

    def open(self) -> list[Payload]:
        """Payloads that start the message, before its first content."""
        return []

    def open_block(self, block: Block) -> list[Payload]:
        """Payloads that open ``block``."""
        return []

    def close_block(self, block: Block) -> list[Payload]:
        """Payloads that close ``block`` (a call's ``fragments`` are all there)."""
        return []

    def text(self, block: Block, text: str) -> list[Payload]:
        """Payloads of one text delta."""
        return []

    def thinking(self, block: Block, text: str) -> list[Payload]:
        """Payloads of one thinking delta."""
        return []

    def signature(self, block: Block, signature: str) -> list[Payload]:
        """Payloads of the open thinking block's signature (none where the format has none)."""
        return []

    def redacted(self, data: str) -> list[Payload]:
        """Payloads of redacted (encrypted) thinking, a block of its own where written."""
        return []

    def call_delta(self, block: Block, fragment: str) -> list[Payload]:
        """Payloads of one fragment of a call's (or server tool's) JSON arguments."""
        return []

    def server_tool_result(self, block: Block | None, event: ChatEvent) -> list[Payload]:
        """Payloads of a server tool's result (``block`` is its call, when it was seen)."""
        return []

    def image_piece(self, block: Block, data: str, mime_type: str | None) -> list[Payload]:
        """Payloads of one piece (base64) of an image being streamed."""
        return []

    def refusal(self, text: str) -> list[Payload]:
        """Payloads of one refusal delta."""
        return []

    def citation(self, event: ChatEvent) -> list[Payload]:
        """Payloads of a CITATION."""
        return []

    def heartbeat(self) -> list[Payload]:
        """Payloads of a HEARTBEAT (the format's own ping, where it has one)."""
        return []

    def finish(self, end: MessageEnd) -> list[Payload]:
        """Payloads that end the message (:class:`MessageEnd`: how, with what usage)."""
        return []

    def error(self, status: int, message: str, event: ChatEvent) -> list[Payload]:
        """Payloads of an in-stream failure (``status``: the HTTP status that fits it)."""
        return []

    def end_of_stream(self) -> list[Payload]:
        """Payloads after the message's end (``[DONE]``, ...), from :meth:`close`."""
        return []

    # ---------------------------------------------------------------- helpers

    @classmethod
    def finish_word(cls, kind: FinishReason, reason: str | None) -> str:
        """The format's finish reason (:func:`finish_word` of its :data:`FINISH_WORDS`)."""
        return finish_word(FINISH_WORDS[cls.format], kind, reason, cls.other_finish_words)

    @classmethod
    def response_finish_word(cls, response: ChatResponse) -> str:
        """The format's finish reason for a whole ``response`` (its non-streaming body's)."""
        return cls.finish_word(response_finish_kind(response), response.finish_reason)

    def call_id(self, block: Block) -> str:
        """A call's id, made up in the format's style when the events gave none."""
        if block.id is None:
            block.id = random_id(self.call_id_prefix)
        return block.id

    # ---------------------------------------------------------------- the walk

    def _start(self) -> list[Payload]:
        if self.started:
            return []
        self.started = True
        return self.open()

    def _new_block(self, kind: BlockKind, id: str | None = None, name: str = "") -> Block:
        number = self._counts.get(kind, 0)
        self._counts[kind] = number + 1
        return Block(kind, id, name, number)

    def _enter(self, block: Block) -> list[Payload]:
        """Start the message if needed, close the open block, open ``block``."""
        payloads = self._start() if not self.started else []
        while self._block is not None:
            payloads += self._leave()
        self._block = block
        payloads += self.open_block(block)
        return payloads

    def _leave(self) -> list[Payload]:
        """Close the open block; then write the calls held while it was open."""
        block = self._block
        payloads: list[Payload] = []
        if block is not None:
            self._block = None
            block.ended = True
            payloads += self.close_block(block)
        while self._held and self._block is None:
            held = self._held.pop(0)
            fragments, held.fragments = held.fragments, []
            payloads += self._enter(held)
            for fragment in fragments:
                held.fragments.append(fragment)
                payloads += self.call_delta(held, fragment)
            if held.ended:
                payloads += self._leave()
        return payloads

    def _leave_all(self) -> list[Payload]:
        """Close every block, the held calls too."""
        payloads: list[Payload] = []
        while self._block is not None or self._held:
            payloads += self._leave()
        self._calls.clear()
        return payloads

    def _content(self, kind: BlockKind, fresh: bool = False) -> tuple[Block, list[Payload]]:
        """The open block of ``kind`` (text, thinking or refusal), opened when needed."""
        block = self._block
        if block is not None and block.kind == kind and not fresh:
            return block, []
        block = self._new_block(kind)
        return block, self._enter(block)

    def _on_block_start(self, event: ChatEvent) -> list[Payload]:
        kind: BlockKind = "text" if event.type is EVENT_TYPES.TEXT_START else "thinking"
        return self._content(kind, fresh=True)[1]

    def _on_text_delta(self, event: ChatEvent) -> list[Payload]:
        block = self._block
        if block is not None and block.kind == "text" and event.text:
            return self.text(block, event.text)
        return self._opening_delta("text", event.text)

    def _opening_delta(self, kind: Literal["text", "thinking"], text: str | None) -> list[Payload]:
        """A text or thinking delta when no block of its ``kind`` is open: it opens one."""
        if not text:
            return []
        block, payloads = self._content(kind)
        return payloads + (self.text(block, text) if kind == "text" else self.thinking(block, text))

    def _on_thinking_delta(self, event: ChatEvent) -> list[Payload]:
        block = self._block
        if block is not None and block.kind == "thinking" and event.text:
            return self.thinking(block, event.text)
        return self._opening_delta("thinking", event.text)

    def _on_block_end(self, event: ChatEvent) -> list[Payload]:
        kind = "text" if event.type is EVENT_TYPES.TEXT_END else "thinking"
        block = self._block
        return self._leave() if block is not None and block.kind == kind else []

    def _on_signature(self, event: ChatEvent) -> list[Payload]:
        if not event.text:
            return []
        block, payloads = self._content("thinking")
        return payloads + self.signature(block, event.text)

    def _on_redacted(self, event: ChatEvent) -> list[Payload]:
        if not event.text:
            return []
        payloads = self._start()
        while self._block is not None:
            payloads += self._leave()
        return payloads + self.redacted(event.text)

    @staticmethod
    def _call_key(event: ChatEvent) -> Any:
        if event.tool_call_id:
            return event.tool_call_id
        return (event.type.group, event.step, event.index)

    def _find_call(self, event: ChatEvent) -> Block | None:
        block = self._calls.get(self._call_key(event))
        if block is not None:
            return block
        open_block = self._block
        kind = "call" if event.type.group is EVENT_TYPES.TOOL_CALL_START.group else "server_tool"
        if open_block is not None and open_block.kind == kind and not self._held:
            return open_block
        return None

    def _on_call_start(self, event: ChatEvent) -> list[Payload]:
        call = event.tool_call
        kind: BlockKind = "call" if event.type is EVENT_TYPES.TOOL_CALL_START else "server_tool"
        name = call.name if call is not None else ""
        block = self._new_block(kind, event.tool_call_id or (call.id if call else None), name)
        block.sub_type = event.sub_type
        self._calls[self._call_key(event)] = block
        if kind == "call":
            self._step_calls += 1
        open_block = self._block
        if open_block is not None and open_block.kind in ("call", "server_tool"):
            self._held.append(block)
            return []
        return self._enter(block)

    def _on_call_delta(self, event: ChatEvent) -> list[Payload]:
        fragment = event.text
        block = self._find_call(event)
        if block is None:
            payloads = self._on_call_start(event)
            block = self._calls[self._call_key(event)]
        else:
            payloads = []
        if not fragment:
            return payloads
        block.fragments.append(fragment)
        if block is self._block:
            payloads += self.call_delta(block, fragment)
        return payloads

    def _on_call_end(self, event: ChatEvent) -> list[Payload]:
        block = self._find_call(event)
        payloads: list[Payload] = []
        if block is None:  # a whole call in one event
            payloads = self._on_call_start(event)
            block = self._calls[self._call_key(event)]
        call = event.tool_call
        if call is not None and call.arguments_str and not block.fragments:
            block.fragments.append(call.arguments_str)
            if block is self._block:
                payloads += self.call_delta(block, call.arguments_str)
        if block is self._block:
            return payloads + self._leave()
        block.ended = True
        return payloads

    def _on_call_chunk(self, event: ChatEvent) -> list[Payload]:
        return self._on_call_end(event)

    def _on_server_tool_result(self, event: ChatEvent) -> list[Payload]:
        block = self._find_call(event)
        payloads = self._start()
        while self._block is not None:
            payloads += self._leave()
        return payloads + self.server_tool_result(block, event)

    def _on_media_partial(self, event: ChatEvent) -> list[Payload]:
        image = event.block
        data = getattr(image, "data", None)
        if not data:
            return []
        block = self._block
        payloads: list[Payload] = []
        if block is None or block.kind != "image":
            block = self._new_block("image")
            payloads = self._enter(block)
        block.fragments.append(data)
        return payloads + self.image_piece(block, data, getattr(image, "mime_type", None))

    def _on_media_done(self, event: ChatEvent) -> list[Payload]:
        payloads = [] if self._is_open("image") else self._on_media_partial(event)
        return payloads + self._leave() if self._is_open("image") else payloads

    def _is_open(self, kind: BlockKind) -> bool:
        return self._block is not None and self._block.kind == kind

    def _on_refusal(self, event: ChatEvent) -> list[Payload]:
        if not event.text:
            return []
        if self.refusal_blocks:
            payloads = self._content("refusal")[1]
            return payloads + self.refusal(event.text)
        return self._start() + self.refusal(event.text)

    def _on_citation(self, event: ChatEvent) -> list[Payload]:
        return self.citation(event)

    def _on_heartbeat(self, event: ChatEvent) -> list[Payload]:
        return self.heartbeat()

    def _on_usage(self, event: ChatEvent) -> list[Payload]:
        if event.usage is not None:
            self.usage = event.usage
        return []

    def _on_step_start(self, event: ChatEvent) -> list[Payload]:
        self._step_calls = 0
        return []

    def _on_step_end(self, event: ChatEvent) -> list[Payload]:
        if event.response is not None:
            self._last_response = event.response
        self._on_usage(event)
        return self._leave_all()

    def _on_response_end(self, event: ChatEvent) -> list[Payload]:
        return self._finish(event.response, event.usage)

    def _finish(self, response: ChatResponse | None, usage: Usage | None) -> list[Payload]:
        payloads = self._start() + self._leave_all()
        self.ended = True
        if usage is None:
            usage = (response.usage if response is not None else None) or self.usage
        reason = response.finish_reason if response is not None else None
        kind = response.finish if response is not None else None
        if kind is None:  # events built by hand: the provider's word read here
            has_calls = bool(response.tool_calls) if response is not None else False
            kind = unified_finish(reason, has_calls or self._step_calls > 0)
        return payloads + self.finish(MessageEnd(kind, reason, usage, response))

    def _on_error(self, event: ChatEvent) -> list[Payload]:
        self.ended = self.failed = True
        error = event.error
        status = error_status(error, event.raw)
        return self.error(status, error_message(error, event.text), event)


_HANDLERS: dict[ChatEventType, _Handler] = {
    EVENT_TYPES.TEXT_START: WireEncoder._on_block_start,
    EVENT_TYPES.TEXT_DELTA: WireEncoder._on_text_delta,
    EVENT_TYPES.TEXT_END: WireEncoder._on_block_end,
    EVENT_TYPES.THINKING_START: WireEncoder._on_block_start,
    EVENT_TYPES.THINKING_DELTA: WireEncoder._on_thinking_delta,
    EVENT_TYPES.THINKING_END: WireEncoder._on_block_end,
    EVENT_TYPES.THINKING_SIGNATURE: WireEncoder._on_signature,
    EVENT_TYPES.THINKING_REDACTED: WireEncoder._on_redacted,
    EVENT_TYPES.TOOL_CALL_START: WireEncoder._on_call_start,
    EVENT_TYPES.TOOL_CALL_ARGS_DELTA: WireEncoder._on_call_delta,
    EVENT_TYPES.TOOL_CALL_END: WireEncoder._on_call_end,
    EVENT_TYPES.TOOL_CALL_CHUNK: WireEncoder._on_call_chunk,
    EVENT_TYPES.SERVER_TOOL_START: WireEncoder._on_call_start,
    EVENT_TYPES.SERVER_TOOL_ARGS_DELTA: WireEncoder._on_call_delta,
    EVENT_TYPES.SERVER_TOOL_RESULT: WireEncoder._on_server_tool_result,
    EVENT_TYPES.MEDIA_PARTIAL: WireEncoder._on_media_partial,
    EVENT_TYPES.MEDIA_DONE: WireEncoder._on_media_done,
    EVENT_TYPES.REFUSAL_DELTA: WireEncoder._on_refusal,
    EVENT_TYPES.CITATION: WireEncoder._on_citation,
    EVENT_TYPES.HEARTBEAT: WireEncoder._on_heartbeat,
    EVENT_TYPES.USAGE: WireEncoder._on_usage,
    EVENT_TYPES.STEP_START: WireEncoder._on_step_start,
    EVENT_TYPES.STEP_END: WireEncoder._on_step_end,
    EVENT_TYPES.RESPONSE_END: WireEncoder._on_response_end,
    EVENT_TYPES.ABORT: WireEncoder._on_response_end,
    EVENT_TYPES.ERROR: WireEncoder._on_error,
}
"""What each event type does (types not listed write nothing)."""
