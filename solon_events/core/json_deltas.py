"""A document's value rebuilt from its path deltas, each applied at the cost of its own size.

:class:`JsonDeltaBuilder` applies the :class:`~solon_events.core.partial_json.JsonDelta`
values a :class:`~solon_events.core.partial_json.PartialJsonParser` made with
``track_deltas=True`` records (or that :func:`~solon_events.operators.argument_deltas`
gives): what a live view keeps to show a document growing, redrawing it when it likes
rather than after every fragment.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .partial_json import ADD, APPEND, JsonDelta, JsonPath

__all__ = ["JsonDeltaBuilder"]

_NOTHING: Any = object()


class JsonDeltaBuilder:
    """Applies path deltas in order; :meth:`value` is the document so far.

    >>> from solon_events import PartialJsonParser
    >>> parser, document = PartialJsonParser(track_deltas=True), JsonDeltaBuilder()
    >>> for fragment in ['{"notes": ["Buy mi', 'lk", "Call Ann"], "done"', ": false}"]:
    ...     parser.feed(fragment)
    ...     document.extend(parser.deltas())
    ...     print(document.value())
    {'notes': ['Buy mi']}
    {'notes': ['Buy milk', 'Call Ann']}
    {'notes': ['Buy milk', 'Call Ann'], 'done': False}

    An :data:`~solon_events.core.partial_json.APPEND` costs the text it adds: the string
    it extends is kept in pieces and joined when :meth:`value` is asked for, or when
    another delta comes. So the document is rebuilt in time linear in its length, and each
    :meth:`value` costs the string still growing. :meth:`value` is the builder's own
    object, which later deltas change in place: copy it to keep it.
    """

    __slots__ = ("_open", "_root")

    def __init__(self) -> None:
        self._root: Any = _NOTHING
        # the string that APPENDs extend: [its container (None: the root), its key, pieces]
        self._open: list[Any] | None = None

    def apply(self, delta: JsonDelta) -> None:
        """Apply one delta. A path that leads nowhere (to no container, or an APPEND to no
        string) raises ``ValueError`` naming it."""
        path, op, value = delta
        if op == APPEND:
            pieces = self._pieces(path)
            pieces.append(value)
            return
        if op != ADD:
            raise ValueError(f"unknown delta op {op!r} (expected {ADD!r} or {APPEND!r})")
        self._close()
        if type(value) is dict or type(value) is list:
            value = _copy(value)  # ours to fill: never the caller's
        if not path:
            self._root = value
            return
        container = self._container(path)
        key = path[-1]
        if type(container) is list:
            if key == len(container):
                container.append(value)
                return
            if not (type(key) is int and 0 <= key < len(container)):
                raise ValueError(f"delta path {list(path)!r}: no item {key!r} in that array")
        elif type(key) is not str:
            raise ValueError(f"delta path {list(path)!r}: {key!r} is not a member name")
        container[key] = value

    def extend(self, deltas: Iterable[JsonDelta]) -> None:
        """Apply each of ``deltas`` in order."""
        for delta in deltas:
            self.apply(delta)

    def value(self) -> Any:
        """The document so far (``None`` before anything arrived): the builder's own value,
        changed in place by later deltas."""
        open_string = self._open
        if open_string is not None:
            container, key, pieces = open_string
            if len(pieces) > 1:
                pieces[:] = ["".join(pieces)]
                if container is None:
                    self._root = pieces[0]
                else:
                    container[key] = pieces[0]
        return None if self._root is _NOTHING else self._root

    def _close(self) -> None:
        """Write the growing string into its place: the next change is elsewhere."""
        if self._open is not None:
            self.value()
            self._open = None

    def _pieces(self, path: JsonPath) -> list[str]:
        """The pieces of the string at ``path``, which APPENDs extend."""
        open_string = self._open
        if open_string is not None:
            container, key, pieces = open_string
            if container is None and not path:
                return pieces  # type: ignore[no-any-return]
            if path and path[-1] == key and container is self._container(path):
                return pieces  # type: ignore[no-any-return]
            self._close()
        container = self._container(path) if path else None
        current = self._root if container is None else _child(container, path[-1])
        if type(current) is not str:
            raise ValueError(f"delta path {list(path)!r}: no string there to append to")
        pieces = [current]
        self._open = [container, path[-1] if path else None, pieces]
        return pieces

    def _container(self, path: JsonPath) -> Any:
        """The object or array that holds the value at ``path`` (not the root)."""
        node = self._root
        for key in path[:-1]:
            node = _child(node, key)
        if type(node) is not dict and type(node) is not list:
            raise ValueError(f"delta path {list(path)!r}: no object or array holds it")
        return node


def _child(node: Any, key: str | int) -> Any:
    """``node[key]``, or nothing when there is no such member or item."""
    if type(node) is dict:
        return node.get(key, _NOTHING) if type(key) is str else _NOTHING
    if type(node) is list and type(key) is int and 0 <= key < len(node):
        return node[key]
    return _NOTHING


def _copy(value: Any) -> Any:
    """A container of plain JSON values copied all the way down, without recursion."""
    top: Any = {} if type(value) is dict else []
    work = [(value, top)]
    while work:
        source, target = work.pop()
        items = source.items() if type(source) is dict else enumerate(source)
        for key, item in items:
            if type(item) is dict or type(item) is list:
                child: Any = {} if type(item) is dict else []
                work.append((item, child))
                item = child
            if type(target) is dict:
                target[key] = item
            else:
                target.append(item)
    return top
