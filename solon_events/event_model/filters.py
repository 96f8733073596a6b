"""Delivery policy: which events reach a subscriber."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import ClassVar

from .events import ChatEvent, ChatEventGroup, ChatEventType

__all__ = ["ChatEventFilter"]

_ALWAYS_DELIVERED_GROUPS = (ChatEventGroup.LIFECYCLE, ChatEventGroup.STEP)
_FORCED = frozenset(
    t
    for t in ChatEventType
    if t.group in _ALWAYS_DELIVERED_GROUPS and t is not ChatEventType.HEARTBEAT
)
"""The types :meth:`ChatEventFilter.guarded` always delivers."""


class ChatEventFilter:
    """A callable predicate over events: ``f(event) -> bool``.

    Build one with :meth:`of`, :meth:`of_groups`, :meth:`all` or :attr:`DEFAULT` and
    combine with ``|``, ``&`` and ``~``. Filtering is delivery policy only: it never changes
    what is aggregated.
    """

    DEFAULT: ClassVar[ChatEventFilter]
    """Every event but HEARTBEAT and RAW."""

    __slots__ = ("_guarded", "_label", "_predicate", "_types")

    def __init__(
        self,
        predicate: Callable[[ChatEvent], bool] | None = None,
        *,
        types: Iterable[ChatEventType] | None = None,
        label: str = "custom",
    ) -> None:
        if predicate is None and types is None:
            raise TypeError("ChatEventFilter needs a predicate or a set of types")
        if predicate is not None:
            _check_callable(predicate, "__init__")
        self._types: frozenset[ChatEventType] | None = (
            frozenset(types) if types is not None else None
        )
        self._predicate = predicate
        self._label = label
        self._guarded: ChatEventFilter | None = None

    @property
    def types(self) -> frozenset[ChatEventType] | None:
        """The exact set of types this filter passes, when it is type-based, else None."""
        return self._types

    def test(self, event: ChatEvent) -> bool:
        """True when ``event`` should be delivered."""
        if self._types is not None:
            return event.type in self._types
        assert self._predicate is not None
        return bool(self._predicate(event))

    __call__ = test

    @classmethod
    def all(cls) -> ChatEventFilter:
        """A filter that passes every event."""
        return cls(types=ChatEventType, label="all()")

    @classmethod
    def of(cls, *types: ChatEventType) -> ChatEventFilter:
        """A filter that passes exactly ``types``."""
        _check(types, ChatEventType, "of")
        return cls(types=types, label=f"of({', '.join(t.name for t in types)})")

    @classmethod
    def of_groups(cls, *groups: ChatEventGroup) -> ChatEventFilter:
        """A filter that passes every type of ``groups``."""
        _check(groups, ChatEventGroup, "of_groups")
        return cls(
            types=(t for t in ChatEventType if t.group in groups),
            label=f"of_groups({', '.join(g.name for g in groups)})",
        )

    @classmethod
    def guarded(cls, event_filter: Callable[[ChatEvent], bool]) -> ChatEventFilter:
        """``event_filter`` that never hides the response's LIFECYCLE and STEP events.

        Every LIFECYCLE and STEP event except HEARTBEAT passes whatever ``event_filter``
        says; HEARTBEAT and everything else are left to ``event_filter``.
        """
        _check_callable(event_filter, "guarded")
        if isinstance(event_filter, ChatEventFilter) and event_filter._guarded is not None:
            return event_filter._guarded
        types = getattr(event_filter, "types", None)
        label = f"guarded({event_filter!r})"
        if isinstance(types, frozenset):
            guarded = cls(types=types | _FORCED, label=label)
            if isinstance(event_filter, ChatEventFilter):
                event_filter._guarded = guarded
            return guarded

        def guarded_test(event: ChatEvent) -> bool:
            t = event.type
            if t in _FORCED:
                return True
            return bool(event_filter(event))

        return cls(guarded_test, label=label)

    def or_(self, other: Callable[[ChatEvent], bool]) -> ChatEventFilter:
        """Passes what either filter passes."""
        _check_callable(other, "or_")
        mine, theirs = self._types, getattr(other, "types", None)
        label = f"({self._label} | {_label(other)})"
        if mine is not None and isinstance(theirs, frozenset):
            return ChatEventFilter(types=mine | theirs, label=label)
        return ChatEventFilter(lambda e: self.test(e) or bool(other(e)), label=label)

    def and_(self, other: Callable[[ChatEvent], bool]) -> ChatEventFilter:
        """Passes what both filters pass."""
        _check_callable(other, "and_")
        mine, theirs = self._types, getattr(other, "types", None)
        label = f"({self._label} & {_label(other)})"
        if mine is not None and isinstance(theirs, frozenset):
            return ChatEventFilter(types=mine & theirs, label=label)
        return ChatEventFilter(lambda e: self.test(e) and bool(other(e)), label=label)

    def negate(self) -> ChatEventFilter:
        """Passes what this filter does not."""
        label = f"~{self._label}"
        if self._types is not None:
            return ChatEventFilter(types=frozenset(ChatEventType) - self._types, label=label)
        return ChatEventFilter(lambda e: not self.test(e), label=label)

    def __or__(self, other: Callable[[ChatEvent], bool]) -> ChatEventFilter:
        return self.or_(other)

    def __and__(self, other: Callable[[ChatEvent], bool]) -> ChatEventFilter:
        return self.and_(other)

    def __invert__(self) -> ChatEventFilter:
        return self.negate()

    def __repr__(self) -> str:
        return (
            f"ChatEventFilter.{self._label}"
            if self._label != "custom"
            else "ChatEventFilter(custom)"
        )


def _label(f: object) -> str:
    return str(getattr(f, "_label", None) or getattr(f, "__name__", "custom"))


def _check_callable(value: object, method: str) -> None:
    if not callable(value):
        raise TypeError(f"ChatEventFilter.{method}() takes a filter or a predicate, got {value!r}")


def _check(values: tuple[object, ...], kind: type, method: str) -> None:
    for value in values:
        if not isinstance(value, kind):
            raise TypeError(
                f"ChatEventFilter.{method}() takes {kind.__name__} members, got {value!r}"
            )


ChatEventFilter.DEFAULT = ChatEventFilter(
    types=frozenset(ChatEventType) - {ChatEventType.HEARTBEAT, ChatEventType.RAW}, label="DEFAULT"
)
