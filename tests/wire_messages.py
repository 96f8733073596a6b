"""Messages as the pipeline streams them, for the wire-format encoders' tests.

A :class:`Message` is what one provider response says: blocks of text, thinking (with a
signature, or redacted), tool calls with their arguments in fragments, then a finish with
its usage, or a failure. :func:`events_of` streams it as the pipeline would (RESPONSE_START,
STEP_START, each block's START / DELTAs / END, USAGE, STEP_END, RESPONSE_END or ERROR);
:func:`semantic` reduces any event stream to what it says, so that a message encoded in a
format and parsed back by that format's dialect can be compared with the message itself,
modulo what the format cannot carry (:data:`LOSSES`). :data:`messages` is the hypothesis
strategy.
"""

from __future__ import annotations

import base64
import itertools
import json
from collections.abc import Iterable, Sequence
from typing import Any

import attrs
from hypothesis import strategies as st

from solon_events import ChatEvent, ChatEventFilter, ChatEventType, replay
from solon_events.adapters.provider_formats.base import (
    error_message,
    finish_kind,
    response_finish_kind,
)
from solon_events.event_model.errors import ProviderError
from solon_events.event_model.results import AssistantMessage, ChatResponse, ToolCall, Usage

__all__ = [
    "LOSSES",
    "Call",
    "Message",
    "Said",
    "Thought",
    "encode_all",
    "events_of",
    "expected",
    "finish_said",
    "messages",
    "read_back",
    "semantic",
]

T = ChatEventType


@attrs.frozen
class Said:
    """A text block, in its deltas."""

    deltas: tuple[str, ...]


@attrs.frozen
class Thought:
    """A thinking block, in its deltas, with its signature; or redacted (``redacted`` set,
    no deltas)."""

    deltas: tuple[str, ...]
    signature: str | None = None
    redacted: str | None = None


@attrs.frozen
class Call:
    """A tool call: its id, name and its JSON arguments in fragments."""

    id: str
    name: str
    fragments: tuple[str, ...]

    @property
    def arguments(self) -> dict[str, Any]:
        """The arguments, parsed."""
        return json.loads("".join(self.fragments) or "{}")  # type: ignore[no-any-return]


Block = Said | Thought | Call


@attrs.frozen
class Message:
    """One response: its blocks, then a finish (``reason``, ``usage``) or a failure."""

    blocks: tuple[Block, ...]
    reason: str = "stop"
    usage: Usage = attrs.field(factory=Usage)
    failure: str | None = None

    @property
    def calls(self) -> list[Call]:
        """The tool calls."""
        return [b for b in self.blocks if isinstance(b, Call)]

    def response(self) -> ChatResponse:
        """What the pipeline's RESPONSE_END would carry."""
        text = "".join(d for b in self.blocks if isinstance(b, Said) for d in b.deltas)
        thinking = "".join(d for b in self.blocks if isinstance(b, Thought) for d in b.deltas)
        calls = [
            ToolCall(id=c.id, name=c.name, arguments_str="".join(c.fragments), index=i)
            for i, c in enumerate(self.calls)
        ]
        signatures = [b.signature for b in self.blocks if isinstance(b, Thought) and b.signature]
        redacted = [b.redacted for b in self.blocks if isinstance(b, Thought) and b.redacted]
        metadata: dict[str, Any] = {}
        if signatures:
            metadata["thinking_signature"] = signatures[-1]
        if redacted:
            metadata["redacted_thinking"] = tuple(redacted)
        message = AssistantMessage(
            text=text, thinking=thinking, tool_calls=calls, metadata=metadata
        )
        return ChatResponse(
            message=message, usage=self.usage, finish_reason=self.reason, model="upstream"
        )


def events_of(message: Message) -> list[ChatEvent]:
    """``message`` as the pipeline streams it."""
    events = [ChatEvent(T.RESPONSE_START, response_id="r1"), ChatEvent(T.STEP_START)]
    for index, block in enumerate(message.blocks):
        if isinstance(block, Said):
            events.append(ChatEvent(T.TEXT_START, index=index))
            events += [ChatEvent(T.TEXT_DELTA, text=d, index=index) for d in block.deltas]
            events.append(ChatEvent(T.TEXT_END, index=index))
        elif isinstance(block, Thought) and block.redacted is not None:
            events.append(ChatEvent(T.THINKING_REDACTED, text=block.redacted, index=index))
        elif isinstance(block, Thought):
            events.append(ChatEvent(T.THINKING_START, index=index))
            events += [ChatEvent(T.THINKING_DELTA, text=d, index=index) for d in block.deltas]
            if block.signature:
                events.append(ChatEvent(T.THINKING_SIGNATURE, text=block.signature, index=index))
            events.append(ChatEvent(T.THINKING_END, index=index))
        else:
            ids = {"tool_call_id": block.id, "index": index}
            events.append(
                ChatEvent(
                    T.TOOL_CALL_START, tool_call=ToolCall(id=block.id, name=block.name), **ids
                )
            )
            events += [ChatEvent(T.TOOL_CALL_ARGS_DELTA, text=f, **ids) for f in block.fragments]
            whole = ToolCall(id=block.id, name=block.name, arguments_str="".join(block.fragments))
            events.append(ChatEvent(T.TOOL_CALL_END, tool_call=whole, **ids))
    response = message.response()
    if message.failure is not None:
        error = ProviderError(f"provider error: {message.failure}")
        events.append(ChatEvent(T.ERROR, error=error, response=response))
        return events
    events.append(ChatEvent(T.USAGE, usage=message.usage))
    events.append(ChatEvent(T.STEP_END, response=response, usage=message.usage))
    events.append(ChatEvent(T.RESPONSE_END, response=response, usage=message.usage))
    return events


def encode_all(encoder: Any, events: Iterable[ChatEvent]) -> bytes:
    """The whole body an encoder writes for ``events``."""
    return b"".join(encoder.encode(event) for event in events) + encoder.close()


def read_back(dialect: str, body: bytes) -> tuple[list[ChatEvent], list[Exception]]:
    """Every event (and the failure, if any) ``dialect`` reads from ``body``."""
    events: list[ChatEvent] = []
    errors: list[Exception] = []
    replay(body, dialect=dialect, event_filter=ChatEventFilter.all()).subscribe(
        events.append, errors.append
    )
    return events, errors


USAGE_FIELDS = (
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "thinking_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
)

LOSSES: dict[str, frozenset[str]] = {
    "openai": frozenset({"signature", "redacted", "cache_creation_input_tokens"}),
    "anthropic": frozenset({"thinking_tokens"}),
    "gemini": frozenset(
        {"redacted", "cache_creation_input_tokens", "tool_calls_finish", "args_deltas"}
    ),
    "ollama": frozenset(
        {
            "signature",
            "redacted",
            "thinking_tokens",
            "cache_read_input_tokens",
            "cache_creation_input_tokens",
            "args_deltas",
            "tool_calls_finish",
            "filter_finish",
        }
    ),
    "openai-responses": frozenset(
        {"signature", "cache_creation_input_tokens", "tool_calls_finish", "thinking_parts"}
    ),
    "cohere": frozenset(
        {
            "signature",
            "redacted",
            "filter_finish",
            "thinking_tokens",
            "cache_creation_input_tokens",
        }
    ),
    "google-interactions": frozenset({"redacted", "filter_finish", "cache_creation_input_tokens"}),
}
"""What each format cannot carry: ``signature`` (thinking signatures), ``redacted``
(redacted thinking), ``call_ids`` (tool call ids), ``args_deltas`` (arguments come whole,
not in the fragments streamed), ``tool_calls_finish`` (no finish word for tool calls: a
response that says it stopped for tool calls but made none just stops), ``filter_finish``
(no finish word for a content filter: the response just stops),
``thinking_parts`` (the dialect reads each thinking block after the first with a
``"\n\n"`` before it, as it separates the provider's summary parts), and the
:class:`~solon_events.Usage` fields it has no count for."""


def semantic(events: Sequence[ChatEvent], losses: frozenset[str] = frozenset()) -> list[Any]:
    """What ``events`` say, in order: consecutive deltas of a kind joined (formats
    re-chunk), tool calls with their arguments, the finish (its kind and usage) or the
    failure's message; less what ``losses`` names."""
    said: list[Any] = []

    def add(kind: str, text: str) -> None:
        if said and said[-1][0] == kind:
            said[-1] = (kind, said[-1][1] + text)
        else:
            said.append((kind, text))

    calls: dict[Any, list[Any]] = {}
    for event in events:
        kind = event.type
        if kind is T.TEXT_DELTA and event.text:
            add("text", event.text)
        elif kind is T.THINKING_DELTA and event.text:
            add("thinking", event.text)
        elif kind is T.THINKING_SIGNATURE and "signature" not in losses:
            said.append(("signature", event.text))
        elif kind is T.THINKING_REDACTED and "redacted" not in losses:
            said.append(("redacted", event.text))
        elif kind is T.TOOL_CALL_START:
            call_id = None if "call_ids" in losses else event.tool_call_id
            call = ["call", event.tool_call.name if event.tool_call else "", call_id, None]
            calls[event.tool_call_id or event.index] = call
            said.append(call)
        elif kind is T.TOOL_CALL_ARGS_DELTA:
            calls[event.tool_call_id or event.index].append(event.text or "")
            if "args_deltas" not in losses:
                add("args", event.text or "")
        elif kind is T.TOOL_CALL_END:
            call = calls[event.tool_call_id or event.index]
            streamed = ToolCall(arguments_str="".join(call[4:])).arguments
            call[3] = event.tool_call.arguments if event.tool_call else streamed
        elif kind is T.RESPONSE_END:
            response = event.response
            assert response is not None
            usage = event.usage or Usage()
            finish = finish_kind(response.finish_reason, bool(calls))
            if finish == "tool_calls" and not calls and "tool_calls_finish" in losses:
                finish = "stop"
            if finish == "content_filter" and "filter_finish" in losses:
                finish = "tool_calls" if calls else "stop"
            said.append(("finish", finish))
            said.append(("usage", {f: getattr(usage, f) for f in USAGE_FIELDS if f not in losses}))
        elif kind is T.ERROR:
            said.append(("error", error_message(event.error).removeprefix("provider error: ")))
    return [tuple(item[:4]) if item[0] == "call" else item for item in said]


def finish_said(response: ChatResponse, losses: frozenset[str]) -> str:
    """The finish kind a format says for ``response`` (a tool-call finish without calls,
    or a filter's, stops where the format has no word for it: ``tool_calls_finish``,
    ``filter_finish``)."""
    kind = response_finish_kind(response)
    if kind == "tool_calls" and not response.tool_calls and "tool_calls_finish" in losses:
        return "stop"
    if kind == "content_filter" and "filter_finish" in losses:
        return "tool_calls" if response.tool_calls else "stop"
    return kind


def expected(message: Message, losses: frozenset[str]) -> list[Any]:
    """What ``message`` says, as :func:`semantic` reads it."""
    if "thinking_parts" in losses:
        message = _thinking_separated(message)
    return semantic(events_of(message), losses)


def _thinking_separated(message: Message) -> Message:
    """``message`` with ``"\n\n"`` before each thinking block's text but the first's."""
    blocks: list[Block] = []
    seen = False
    for block in message.blocks:
        if isinstance(block, Thought) and block.deltas:
            if seen:
                block = attrs.evolve(block, deltas=("\n\n", *block.deltas))
            seen = True
        blocks.append(block)
    return attrs.evolve(message, blocks=tuple(blocks))


# ------------------------------------------------------------------ strategies

_texts = st.text(min_size=1, max_size=12)
_names = st.from_regex(r"[a-z_][a-z0-9_]{0,15}", fullmatch=True)
_leaves = st.one_of(st.none(), st.booleans(), st.integers(-(10**6), 10**6), st.text(max_size=10))
_arguments = st.dictionaries(
    st.text(min_size=1, max_size=8),
    st.recursive(_leaves, lambda inner: st.lists(inner, max_size=3), max_leaves=4),
    max_size=4,
)


@st.composite
def _fragments(draw: st.DrawFn) -> tuple[str, ...]:
    text = json.dumps(draw(_arguments), ensure_ascii=draw(st.booleans()))
    cuts = sorted(draw(st.sets(st.integers(1, max(1, len(text) - 1)), max_size=4)))
    bounds = [0, *[c for c in cuts if c < len(text)], len(text)]
    return tuple(text[a:b] for a, b in itertools.pairwise(bounds) if b > a)


@st.composite
def _call(draw: st.DrawFn) -> Call:
    call_id = "call_" + draw(st.from_regex(r"[A-Za-z0-9]{6,12}", fullmatch=True))
    return Call(call_id, draw(_names), draw(_fragments()))


_said = st.builds(Said, st.lists(_texts, min_size=1, max_size=4).map(tuple))
_opaque = st.binary(min_size=6, max_size=30).map(lambda data: base64.b64encode(data).decode())
"""Signatures and redacted thinking: base64, as every provider sends them."""
_thought = st.one_of(
    st.builds(
        Thought,
        st.lists(_texts, min_size=1, max_size=4).map(tuple),
        st.one_of(st.none(), _opaque),
    ),
    st.builds(Thought, st.just(()), st.none(), _opaque),
)


@st.composite
def _usage(draw: st.DrawFn) -> Usage:
    prompt = draw(st.integers(0, 10**6))
    completion = draw(st.integers(0, 10**5))
    cache_read = draw(st.integers(0, prompt))
    return Usage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        thinking_tokens=draw(st.integers(0, completion)),
        cache_read_input_tokens=cache_read,
        cache_creation_input_tokens=draw(st.integers(0, prompt - cache_read)),
    )


REASONS = ("stop", "end_turn", "STOP", "length", "max_tokens", "MAX_TOKENS", "content_filter",
           "SAFETY", "refusal", "tool_calls", "tool_use")  # fmt: skip
"""Finish reasons in every format's words."""


@st.composite
def _message(draw: st.DrawFn) -> Message:
    blocks = draw(st.lists(st.one_of(_said, _thought, _call()), max_size=6))
    seen: set[str] = set()
    unique: list[Block] = []
    for block in blocks:  # call ids are unique within a response
        if isinstance(block, Call):
            if block.id in seen:
                continue
            seen.add(block.id)
        unique.append(block)
    failure = draw(st.one_of(st.none(), _texts.filter(lambda t: t.strip() == t)))
    return Message(tuple(unique), draw(st.sampled_from(REASONS)), draw(_usage()), failure)


messages = _message()
"""Any message: up to six blocks of text, thinking and tool calls, a finish or a failure."""
