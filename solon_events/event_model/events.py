"""The event vocabulary: what is happening while a chat response is in flight.

A :class:`ChatEvent` is an immutable value whose :class:`ChatEventType` fixes its
:class:`ChatEventGroup` and :class:`ChatEventPhase`. Nothing here performs I/O.
"""

from __future__ import annotations

import enum
import typing
from collections.abc import Mapping
from types import MappingProxyType, SimpleNamespace
from typing import TYPE_CHECKING, Any

import attrs
import orjson

from .display_hooks import repr_html, repr_pretty
from .values import (
    EMPTY_MAPPING,
    FrozenValue,
    fast_constructor,
    fast_replacer,
    read_held,
    read_only,
    read_through,
    writable_base,
)

if TYPE_CHECKING:
    from .finish import FinishReason
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


class ChatEventType(enum.Enum):
    """The 33 kinds of event; each member carries its group and phase.

    ``member.group`` and ``member.phase`` are fixed at definition; ``is_delta`` is true
    for DELTA-phase types and ``is_terminal`` only for RESPONSE_END, ABORT and ERROR.
    """

    group: ChatEventGroup
    phase: ChatEventPhase
    is_delta: bool
    is_terminal: bool

    RESPONSE_START = ("RESPONSE_START", ChatEventGroup.LIFECYCLE, ChatEventPhase.START)
    STATUS = ("STATUS", ChatEventGroup.LIFECYCLE, ChatEventPhase.NONE)
    HEARTBEAT = ("HEARTBEAT", ChatEventGroup.LIFECYCLE, ChatEventPhase.NONE)
    RESPONSE_END = ("RESPONSE_END", ChatEventGroup.LIFECYCLE, ChatEventPhase.END)
    ABORT = ("ABORT", ChatEventGroup.LIFECYCLE, ChatEventPhase.END)

    STEP_START = ("STEP_START", ChatEventGroup.STEP, ChatEventPhase.START)
    STEP_END = ("STEP_END", ChatEventGroup.STEP, ChatEventPhase.END)

    TEXT_START = ("TEXT_START", ChatEventGroup.TEXT, ChatEventPhase.START)
    TEXT_DELTA = ("TEXT_DELTA", ChatEventGroup.TEXT, ChatEventPhase.DELTA)
    TEXT_END = ("TEXT_END", ChatEventGroup.TEXT, ChatEventPhase.END)

    THINKING_START = ("THINKING_START", ChatEventGroup.THINKING, ChatEventPhase.START)
    THINKING_DELTA = ("THINKING_DELTA", ChatEventGroup.THINKING, ChatEventPhase.DELTA)
    THINKING_END = ("THINKING_END", ChatEventGroup.THINKING, ChatEventPhase.END)
    THINKING_SIGNATURE = ("THINKING_SIGNATURE", ChatEventGroup.THINKING, ChatEventPhase.NONE)
    THINKING_REDACTED = ("THINKING_REDACTED", ChatEventGroup.THINKING, ChatEventPhase.NONE)

    TOOL_CALL_START = ("TOOL_CALL_START", ChatEventGroup.TOOL_CALL, ChatEventPhase.START)
    TOOL_CALL_ARGS_DELTA = ("TOOL_CALL_ARGS_DELTA", ChatEventGroup.TOOL_CALL, ChatEventPhase.DELTA)
    TOOL_CALL_END = ("TOOL_CALL_END", ChatEventGroup.TOOL_CALL, ChatEventPhase.END)
    TOOL_CALL_CHUNK = ("TOOL_CALL_CHUNK", ChatEventGroup.TOOL_CALL, ChatEventPhase.NONE)
    TOOL_RESULT = ("TOOL_RESULT", ChatEventGroup.TOOL_CALL, ChatEventPhase.NONE)

    SERVER_TOOL_START = ("SERVER_TOOL_START", ChatEventGroup.SERVER_TOOL, ChatEventPhase.START)
    SERVER_TOOL_ARGS_DELTA = (
        "SERVER_TOOL_ARGS_DELTA",
        ChatEventGroup.SERVER_TOOL,
        ChatEventPhase.DELTA,
    )
    SERVER_TOOL_RESULT = ("SERVER_TOOL_RESULT", ChatEventGroup.SERVER_TOOL, ChatEventPhase.END)

    SEARCH_RESULT = ("SEARCH_RESULT", ChatEventGroup.MEDIA, ChatEventPhase.NONE)
    CITATION = ("CITATION", ChatEventGroup.MEDIA, ChatEventPhase.NONE)
    MEDIA_PARTIAL = ("MEDIA_PARTIAL", ChatEventGroup.MEDIA, ChatEventPhase.DELTA)
    MEDIA_DONE = ("MEDIA_DONE", ChatEventGroup.MEDIA, ChatEventPhase.END)

    REFUSAL_DELTA = ("REFUSAL_DELTA", ChatEventGroup.SAFETY, ChatEventPhase.DELTA)
    CONTENT_FILTER = ("CONTENT_FILTER", ChatEventGroup.SAFETY, ChatEventPhase.NONE)

    USAGE = ("USAGE", ChatEventGroup.META, ChatEventPhase.NONE)
    ERROR = ("ERROR", ChatEventGroup.META, ChatEventPhase.NONE)
    RAW = ("RAW", ChatEventGroup.META, ChatEventPhase.NONE)
    CUSTOM = ("CUSTOM", ChatEventGroup.META, ChatEventPhase.NONE)

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


if TYPE_CHECKING:

    class _EventTypeNamespace(SimpleNamespace):
        """What the type checker knows of :data:`EVENT_TYPES`: every attribute is a member."""

        def __getattr__(self, name: str) -> ChatEventType: ...

else:
    # a plain SimpleNamespace at run time: an attribute of a subclass's instance costs more
    _EventTypeNamespace = SimpleNamespace


EVENT_TYPES = _EventTypeNamespace(**ChatEventType.__members__)
"""ChatEventType's members as plain attributes, for the library's hot paths:
``EVENT_TYPES.TEXT_DELTA is ChatEventType.TEXT_DELTA``.

On Python 3.11, ``ChatEventType.TEXT_DELTA`` goes through the enum class's slow attribute
lookup (about 2.5 times the cost of a plain attribute); ``EVENT_TYPES.TEXT_DELTA`` is the
same member, read from an ordinary namespace. Only attribute access works on it (it is not
iterable and has no lookup by value: use ChatEventType for those).
"""


def _hold_raw(value: Mapping[str, Any] | None) -> Any:
    """What a ChatEvent holds for ``raw=value``: a plain dict as it is (made read-only when
    read) and a :func:`~solon_events.event_model.values.held_member` as it is (decoded when read),
    any
    other mutable mapping wrapped read-only (None or empty: the empty mapping)."""
    if not value:
        return EMPTY_MAPPING
    kind = value.__class__
    if kind is dict or kind is tuple:
        return value
    return read_only(value)


def _read_raw(held: Any) -> Mapping[str, Any]:
    """The provider's payload that produced the event (read-only, never None); a frame's
    JSON text, or a member of it, is decoded on each read (a new mapping, equal every time)."""
    kind = held.__class__
    if kind is dict:
        return MappingProxyType(held)
    if kind is str or kind is bytes or kind is tuple:
        payload = orjson.loads(held) if kind is not tuple else read_held(held)
        return MappingProxyType(payload) if payload.__class__ is dict else payload
    return held  # type: ignore[no-any-return]


def _hold_attrs(value: Mapping[str, Any] | None) -> Any:
    """What a ChatEvent holds for ``attrs=value``: a copy as a plain dict (made read-only when
    read), so later changes to ``value`` do not reach it (None or empty: the empty mapping)."""
    return dict(value) if value else EMPTY_MAPPING


def _read_attrs(held: Any) -> Mapping[str, Any]:
    """Extra facts about the event, as a read-only snapshot (never None)."""
    return MappingProxyType(held) if held.__class__ is dict else held  # type: ignore[no-any-return]


@typing.final
@fast_constructor
@read_through("attrs", _read_attrs)
@read_through("raw", _read_raw)
@attrs.frozen(slots=True, repr=False, unsafe_hash=False)
@writable_base
class ChatEvent(FrozenValue):
    """One semantic event of a streamed chat response (immutable).

    ``type`` is required; every other field defaults to "absent". ``raw`` holds the
    provider's payload that produced the event (read-only, never None) and ``attrs``
    a read-only snapshot of extra attributes. ``ChatEvent(type, ...)`` is the one
    constructor (its parameters are the fields below, in order); ``copy.copy``,
    ``attrs.evolve`` (or :meth:`evolve`) and ``pickle`` build their events through it.

    ``raw`` is made read-only when read: an event the parse stage made from a whole frame
    keeps that frame's JSON text and decodes it on each read (a new mapping, equal every
    time); any other keeps the dict it was given. ``attrs`` keeps a copy of its dict, made
    read-only when read. Kept events thus hold little for the garbage collector to walk.
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
    raw: Mapping[str, Any] = attrs.field(default=EMPTY_MAPPING, converter=_hold_raw)
    attrs: Mapping[str, Any] = attrs.field(default=EMPTY_MAPPING, converter=_hold_attrs)

    _repr_html_ = repr_html
    _repr_pretty_ = repr_pretty

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
        """A copy with ``changes`` applied; this event is unchanged.

        What ``attrs.evolve(self, **changes)`` gives
        (:func:`~solon_events.event_model.values.fast_constructor`
        puts one made from the field list in place of this one), at a fraction of its cost.
        """
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
        if t is EVENT_TYPES.TEXT_DELTA:
            return AssistantMessage(text=self.text or "")
        if t is EVENT_TYPES.THINKING_DELTA:
            return AssistantMessage(text="", thinking=self.text or "")
        if t is EVENT_TYPES.MEDIA_DONE and self.block is not None:
            return AssistantMessage(text="", blocks=(self.block,))
        return None

    @property
    def finish(self) -> FinishReason | None:
        """The unified finish reason of the response this event carries (RESPONSE_END's,
        a STEP_END's, ERROR's: ``error``), else None: ``event.response.finish``, beside the
        provider's word in ``event.response.finish_reason`` (see
        :mod:`solon_events.event_model.finish`)."""
        response = self.response
        return response.finish if response is not None else None

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
    """A START, END or boundary event the pipeline makes, with the ids it carries first."""
    # every field by position, in the fields' order: by keyword, the event costs twice as much
    return ChatEvent(
        type,
        text,
        response,
        usage,
        None,  # error
        step,
        index,
        response_id,
        provider_response_id,
        item_id,
        tool_call_id,
        tool_call,
        None,  # block
        None,  # citation
        None,  # search_result
        None,  # raw_type
        None,  # sub_type
        raw or EMPTY_MAPPING,
    )


_copy_with_response_id = fast_replacer(ChatEvent, "response_id")


def with_response_id(event: ChatEvent, response_id: str | None) -> ChatEvent:
    """``event`` with ``response_id`` set (``event`` itself when it already has it)."""
    if event.response_id == response_id:
        return event
    return _copy_with_response_id(event, response_id)
