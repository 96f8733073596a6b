"""The event vocabulary: what is happening while a chat response is in flight.

A :class:`ChatEvent` is an immutable value whose :class:`ChatEventType` fixes its
:class:`ChatEventGroup` and :class:`ChatEventPhase`. Nothing here performs I/O.
"""

from __future__ import annotations

import enum
import typing
from collections.abc import Mapping, MutableMapping
from types import MappingProxyType, SimpleNamespace
from typing import TYPE_CHECKING, Any

import attrs

from .display_hooks import repr_html, repr_pretty

if TYPE_CHECKING:
    from .results import (
        AssistantMessage,
        Citation,
        SearchResult,
        ToolCall,
        Usage,
    )
    from .results import ChatResponse as _ChatResponse

__all__ = ["ChatEvent", "ChatEventGroup", "ChatEventPhase", "ChatEventType"]


class ChatEventPhase(enum.Enum):
    """Where an event sits in the life of its block: opening, streaming, closing, or none."""

    START = "START"
    DELTA = "DELTA"
    END = "END"
    NONE = "NONE"


class ChatEventGroup(enum.Enum):
    """The closed set of nine families an event type belongs to."""

    LIFECYCLE = "LIFECYCLE"
    STEP = "STEP"
    TEXT = "TEXT"
    THINKING = "THINKING"
    TOOL_CALL = "TOOL_CALL"
    SERVER_TOOL = "SERVER_TOOL"
    MEDIA = "MEDIA"
    SAFETY = "SAFETY"
    META = "META"

    __hash__ = object.__hash__


_G = ChatEventGroup
_P = ChatEventPhase


class ChatEventType(enum.Enum):
    """The 33 kinds of event; each member carries its group and phase.

    ``member.group`` and ``member.phase`` are fixed at definition; ``is_delta`` is true
    for DELTA-phase types and ``is_terminal`` only for RESPONSE_END, ABORT and ERROR.
    """

    group: ChatEventGroup
    phase: ChatEventPhase
    is_delta: bool
    is_terminal: bool

    RESPONSE_START = ("RESPONSE_START", _G.LIFECYCLE, _P.START)
    STATUS = ("STATUS", _G.LIFECYCLE, _P.NONE)
    HEARTBEAT = ("HEARTBEAT", _G.LIFECYCLE, _P.NONE)
    RESPONSE_END = ("RESPONSE_END", _G.LIFECYCLE, _P.END)
    ABORT = ("ABORT", _G.LIFECYCLE, _P.END)

    STEP_START = ("STEP_START", _G.STEP, _P.START)
    STEP_END = ("STEP_END", _G.STEP, _P.END)

    TEXT_START = ("TEXT_START", _G.TEXT, _P.START)
    TEXT_DELTA = ("TEXT_DELTA", _G.TEXT, _P.DELTA)
    TEXT_END = ("TEXT_END", _G.TEXT, _P.END)

    THINKING_START = ("THINKING_START", _G.THINKING, _P.START)
    THINKING_DELTA = ("THINKING_DELTA", _G.THINKING, _P.DELTA)
    THINKING_END = ("THINKING_END", _G.THINKING, _P.END)
    THINKING_SIGNATURE = ("THINKING_SIGNATURE", _G.THINKING, _P.NONE)
    THINKING_REDACTED = ("THINKING_REDACTED", _G.THINKING, _P.NONE)

    TOOL_CALL_START = ("TOOL_CALL_START", _G.TOOL_CALL, _P.START)
    TOOL_CALL_ARGS_DELTA = ("TOOL_CALL_ARGS_DELTA", _G.TOOL_CALL, _P.DELTA)
    TOOL_CALL_END = ("TOOL_CALL_END", _G.TOOL_CALL, _P.END)
    TOOL_CALL_CHUNK = ("TOOL_CALL_CHUNK", _G.TOOL_CALL, _P.NONE)
    TOOL_RESULT = ("TOOL_RESULT", _G.TOOL_CALL, _P.NONE)

    SERVER_TOOL_START = ("SERVER_TOOL_START", _G.SERVER_TOOL, _P.START)
    SERVER_TOOL_ARGS_DELTA = ("SERVER_TOOL_ARGS_DELTA", _G.SERVER_TOOL, _P.DELTA)
    SERVER_TOOL_RESULT = ("SERVER_TOOL_RESULT", _G.SERVER_TOOL, _P.END)

    SEARCH_RESULT = ("SEARCH_RESULT", _G.MEDIA, _P.NONE)
    CITATION = ("CITATION", _G.MEDIA, _P.NONE)
    MEDIA_PARTIAL = ("MEDIA_PARTIAL", _G.MEDIA, _P.DELTA)
    MEDIA_DONE = ("MEDIA_DONE", _G.MEDIA, _P.END)

    REFUSAL_DELTA = ("REFUSAL_DELTA", _G.SAFETY, _P.DELTA)
    CONTENT_FILTER = ("CONTENT_FILTER", _G.SAFETY, _P.NONE)

    USAGE = ("USAGE", _G.META, _P.NONE)
    ERROR = ("ERROR", _G.META, _P.NONE)
    RAW = ("RAW", _G.META, _P.NONE)
    CUSTOM = ("CUSTOM", _G.META, _P.NONE)

    def __init__(self, _name: str, group: ChatEventGroup, phase: ChatEventPhase) -> None:
        self.group = group
        self.phase = phase
        self.is_delta = phase is ChatEventPhase.DELTA
        self.is_terminal = _name in ("RESPONSE_END", "ABORT", "ERROR")

    # Enum hashes by name in Python; members are singletons, so identity hashing is
    # equivalent and keeps dict and set lookups on the hot path in C.
    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"ChatEventType.{self.name}"

    def __str__(self) -> str:
        return self.name


TYPES: type[ChatEventType] = typing.cast(Any, SimpleNamespace(**ChatEventType.__members__))
"""ChatEventType's members as plain attributes, for the library's hot paths.

On Python 3.11, ``ChatEventType.TEXT_DELTA`` goes through ``EnumType.__getattr__``'s slow
lookup hook (about ten times the cost of a plain attribute); ``TYPES.TEXT_DELTA`` is the
same member, read from an ordinary namespace. Only attribute access works on it.
"""

_T = TYPES
EMPTY_MAPPING: Mapping[str, Any] = MappingProxyType({})


def _read_only(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """``value`` as a read-only mapping; a plain dict is wrapped, not copied."""
    if not value:
        return EMPTY_MAPPING
    if type(value) is dict:
        return MappingProxyType(value)
    if isinstance(value, MutableMapping):
        return MappingProxyType(value)  # type: ignore[arg-type]
    return value


def _snapshot(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """A read-only copy of ``value`` that later changes to ``value`` do not reach."""
    if not value:
        return EMPTY_MAPPING
    return MappingProxyType(dict(value))


_FIELD_NAMES = (
    "type", "text", "response", "usage", "error", "step", "index", "response_id",
    "provider_response_id", "item_id", "tool_call_id", "tool_call", "block", "citation",
    "search_result", "raw_type", "sub_type", "raw", "attrs",
)  # fmt: skip


class _EventSlots:
    """The storage layout of ChatEvent, writable; only ever seen inside event builders.

    Events are built on the hot path. Filling a writable instance with plain attribute
    stores and then switching its class to the frozen, layout-identical ChatEvent costs
    about a third of one ``object.__setattr__`` call per field.
    """

    __slots__ = (*_FIELD_NAMES, "__weakref__")


@typing.final
@attrs.frozen(slots=True, repr=False, init=False, unsafe_hash=False)
class ChatEvent(_EventSlots):
    """One semantic event of a streamed chat response (immutable).

    ``type`` is required; every other field defaults to "absent". ``raw`` holds the
    provider's payload that produced the event (read-only, never None) and ``attrs``
    a read-only snapshot of extra attributes.
    """

    type: ChatEventType
    text: str | None = None
    response: _ChatResponse | None = None
    usage: Usage | None = None
    error: BaseException | None = None
    step: int = 0
    index: int = -1
    response_id: str | None = None
    provider_response_id: str | None = None
    item_id: str | None = None
    tool_call_id: str | None = None
    tool_call: ToolCall | None = None
    block: Any = None
    citation: Citation | None = None
    search_result: SearchResult | None = None
    raw_type: str | None = None
    sub_type: str | None = None
    raw: Mapping[str, Any] = EMPTY_MAPPING
    attrs: Mapping[str, Any] = EMPTY_MAPPING

    _repr_html_ = repr_html
    _repr_pretty_ = repr_pretty

    def __new__(
        cls,
        type: ChatEventType,
        text: str | None = None,
        response: _ChatResponse | None = None,
        usage: Usage | None = None,
        error: BaseException | None = None,
        step: int = 0,
        index: int = -1,
        response_id: str | None = None,
        provider_response_id: str | None = None,
        item_id: str | None = None,
        tool_call_id: str | None = None,
        tool_call: ToolCall | None = None,
        block: Any = None,
        citation: Citation | None = None,
        search_result: SearchResult | None = None,
        raw_type: str | None = None,
        sub_type: str | None = None,
        raw: Mapping[str, Any] | None = None,
        attrs: Mapping[str, Any] | None = None,
    ) -> ChatEvent:
        # Built in __new__ (there is no __init__): a writable _EventSlots is filled with
        # plain attribute stores, then becomes the frozen, layout-identical ChatEvent.
        if type is None:
            raise TypeError("ChatEvent needs a type: ChatEvent(ChatEventType.X, ...)")
        this: Any = _EventSlots()
        this.type = type
        this.text = text
        this.response = response
        this.usage = usage
        this.error = error
        this.step = step
        this.index = index
        this.response_id = response_id
        this.provider_response_id = provider_response_id
        this.item_id = item_id
        this.tool_call_id = tool_call_id
        this.tool_call = tool_call
        this.block = block
        this.citation = citation
        this.search_result = search_result
        this.raw_type = raw_type
        this.sub_type = sub_type
        if not raw:
            this.raw = EMPTY_MAPPING
        elif raw.__class__ is dict:  # the usual case: a decoded provider frame
            this.raw = MappingProxyType(raw)
        elif raw.__class__ is MappingProxyType:  # another event's raw
            this.raw = raw
        else:
            this.raw = _read_only(raw)
        this.attrs = EMPTY_MAPPING if not attrs else _snapshot(attrs)
        this.__class__ = ChatEvent
        return this  # type: ignore[no-any-return]

    @property
    def group(self) -> ChatEventGroup:
        """The event type's group."""
        return self.type.group

    @property
    def phase(self) -> ChatEventPhase:
        """The event type's phase."""
        return self.type.phase

    @property
    def is_delta(self) -> bool:
        """True when the type's phase is DELTA."""
        return self.type.is_delta

    @property
    def is_terminal(self) -> bool:
        """True for RESPONSE_END, ABORT and ERROR."""
        return self.type.is_terminal

    @property
    def has_text(self) -> bool:
        """True when ``text`` is a non-empty string."""
        return isinstance(self.text, str) and bool(self.text)

    def is_type(self, *types: ChatEventType) -> bool:
        """True when this event's type is one of ``types`` (False for no arguments)."""
        return self.type in types

    def is_group(self, *groups: ChatEventGroup) -> bool:
        """True when this event's group is one of ``groups`` (False for no arguments)."""
        return self.type.group in groups

    def attr(self, key: str, default: Any = None) -> Any:
        """The extra attribute ``key``, or ``default``."""
        return self.attrs.get(key, default)

    def evolve(self, **changes: Any) -> ChatEvent:
        """A copy with ``changes`` applied; this event is unchanged."""
        return attrs.evolve(self, **changes)

    @property
    def message(self) -> AssistantMessage | None:
        """This event projected onto an assistant message, by type only.

        With a ``response``: that response's message. TEXT_DELTA: the delta as text.
        THINKING_DELTA: the delta as thinking. MEDIA_DONE with a block: that block.
        Anything else: None.
        """
        from .results import AssistantMessage

        if self.response is not None:
            return self.response.message
        t = self.type
        if t is _T.TEXT_DELTA:
            return AssistantMessage(text=self.text or "")
        if t is _T.THINKING_DELTA:
            return AssistantMessage(text="", thinking=self.text or "")
        if t is _T.MEDIA_DONE and self.block is not None:
            return AssistantMessage(text="", blocks=(self.block,))
        return None

    @property
    def message_or_empty(self) -> AssistantMessage:
        """Like :attr:`message`, but an empty message instead of None."""
        from .results import AssistantMessage

        message = self.message
        return message if message is not None else AssistantMessage()

    def __repr__(self) -> str:
        parts = [self.type.name]
        if self.step:
            parts.append(f"step={self.step}")
        if self.index != -1:
            parts.append(f"index={self.index}")
        for name in ("item_id", "tool_call_id", "raw_type", "sub_type"):
            value = getattr(self, name)
            if value is not None:
                parts.append(f"{name}={value}")
        if self.text is not None:
            text = self.text
            shown = repr(text[:40] + "...") if len(text) > 40 else repr(text)
            parts.append(f"text={shown}")
        if self.tool_call is not None:
            parts.append(f"tool={self.tool_call.name}")
        if self.error is not None:
            parts.append(f"error={type(self.error).__name__}")
        if self.usage is not None:
            parts.append(f"usage={self.usage.total_tokens}")
        return f"ChatEvent({', '.join(parts)})"


def framing_event(
    type: ChatEventType,
    step: int,
    response_id: str | None,
    provider_response_id: str | None = None,
    index: int = -1,
    item_id: str | None = None,
    tool_call_id: str | None = None,
    tool_call: ToolCall | None = None,
    response: _ChatResponse | None = None,
    usage: Usage | None = None,
    raw: Mapping[str, Any] | None = None,
    text: str | None = None,
) -> ChatEvent:
    """A START, END or boundary event the pipeline makes: ``ChatEvent(type, ...)`` with these
    fields, which it passes by position (binding them by keyword among ChatEvent's 19
    parameters costs more than building the event)."""
    return ChatEvent(
        type, text, response, usage, None, step, index, response_id, provider_response_id,
        item_id, tool_call_id, tool_call, None, None, None, None, None, raw,
    )  # fmt: skip


def with_response_id(event: ChatEvent, response_id: str | None) -> ChatEvent:
    """``event`` with ``response_id`` set: a fast :meth:`ChatEvent.evolve` for the hot path."""
    if event.response_id == response_id:
        return event
    copy: Any = _EventSlots()
    copy.type = event.type
    copy.text = event.text
    copy.response = event.response
    copy.usage = event.usage
    copy.error = event.error
    copy.step = event.step
    copy.index = event.index
    copy.response_id = response_id
    copy.provider_response_id = event.provider_response_id
    copy.item_id = event.item_id
    copy.tool_call_id = event.tool_call_id
    copy.tool_call = event.tool_call
    copy.block = event.block
    copy.citation = event.citation
    copy.search_result = event.search_result
    copy.raw_type = event.raw_type
    copy.sub_type = event.sub_type
    copy.raw = event.raw
    copy.attrs = event.attrs
    copy.__class__ = ChatEvent
    return copy  # type: ignore[no-any-return]
