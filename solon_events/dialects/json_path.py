"""Tool-call arguments sent as values at JSON paths, assembled into JSON text piece by piece.

Some providers stream a tool call's arguments not as JSON text but as values addressed by a
JSON path (Gemini's ``partialArgs``: ``$.location`` = ``"Par"``, then ``"is"``; ``$.days[0]``
= ``3``). :class:`JsonPathAssembler` turns them into the next fragment of the arguments'
JSON text each time, so that they stream as TOOL_CALL_ARGS_DELTA events like any other
provider's, and builds the arguments object alongside.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Sequence
from typing import Any

import orjson

from ..event_model.errors import ChatProtocolError

__all__ = ["JsonPathAssembler", "json_path_segments"]

_Segments = tuple[str | int, ...]
"""A JSON path as its member names (str) and array indexes (int), outermost first."""

_PATH_SEGMENT = re.compile(
    r"\.([^.\[\]]+)|\[(\d+)\]|\['((?:[^'\\]|\\.)*)'\]|\[\"((?:[^\"\\]|\\.)*)\"\]"
)


@functools.lru_cache(maxsize=256)
def json_path_segments(path: str) -> _Segments:
    """The segments of a JSON path such as ``$.a.b[0]['c d']`` (``("a", "b", 0, "c d")``).

    Raises :class:`~solon_events.ChatProtocolError` for a path that does not start at the
    root ``$``, names nothing below it, or has a segment of another form.

    >>> json_path_segments("$.days[0]['the name']")
    ('days', 0, 'the name')
    """
    if not path.startswith("$"):
        raise ChatProtocolError(f"partial argument path {path!r} does not start with '$'")
    segments: list[str | int] = []
    position = 1
    while position < len(path):
        match = _PATH_SEGMENT.match(path, position)
        if match is None:
            raise ChatProtocolError(f"cannot read the partial argument path {path!r}")
        name, number, single, double = match.groups()
        if number is not None:
            segments.append(int(number))
        else:
            quoted = single if single is not None else double
            segments.append(name if quoted is None else re.sub(r"\\(.)", r"\1", quoted))
        position = match.end()
    if not segments:
        raise ChatProtocolError(f"partial argument path {path!r} names no argument")
    return tuple(segments)


def _quote(text: str) -> str:
    return orjson.dumps(text).decode()


class JsonPathAssembler:
    """One tool call's arguments, given as values at JSON paths, as JSON text piece by piece.

    Each :meth:`string` and :meth:`value` returns the next fragment of the arguments' JSON
    text; the fragments joined, with :meth:`finish` last, are a JSON object equal to
    :meth:`arguments_str`, as long as each container's members come in order (all of one
    member before the next), as providers send them. The object itself is built alongside
    (:attr:`arguments`) and is what the closed call carries.

    >>> args = JsonPathAssembler()
    >>> [args.string(("city",), "Par", more=True), args.string(("city",), "is", more=False)]
    ['{"city":"Par', 'is"']
    >>> args.value(("days", 0), 3) + args.finish()
    ',"days":[3]}'
    >>> args.arguments, args.arguments_str()
    ({'city': 'Paris', 'days': [3]}, '{"city":"Paris","days":[3]}')
    """

    __slots__ = ("arguments", "closers", "counts", "open_string", "path")

    def __init__(self) -> None:
        self.arguments: dict[str, Any] = {}
        """The arguments object assembled so far."""
        self.path: list[str | int] = []  # containers open below the root object
        self.closers: list[str] = []  # "}" or "]" of each open container, root first
        self.counts: list[int] = []  # members written in each open container
        self.open_string: _Segments | None = None  # the path of a string still streaming

    def string(self, segments: _Segments, piece: str, more: bool) -> str:
        """A string value at ``segments``, or the next piece of it: ``more`` says another
        piece of the same string follows."""
        if self.open_string == segments:
            _assign(self.arguments, segments, piece, append=True)
            text = _quote(piece)[1:-1]
        else:
            _assign(self.arguments, segments, piece, append=False)
            text = self._member(segments) + _quote(piece)[:-1]
        if more:
            self.open_string = segments
        else:
            self.open_string = None
            text += '"'
        return text

    def value(self, segments: _Segments, value: Any) -> str:
        """A whole value (any JSON value) at ``segments``."""
        text = orjson.dumps(value)
        if isinstance(value, (dict, list)):  # later pieces go inside: not into the caller's
            value = orjson.loads(text)
        _assign(self.arguments, segments, value, append=False)
        return self._member(segments) + text.decode()

    def finish(self) -> str:
        """The text that closes every container still open (and a string still streaming)."""
        text = '"' if self.open_string is not None else ""
        self.open_string = None
        text += "".join(reversed(self.closers))
        self.path.clear()
        self.closers.clear()
        self.counts.clear()
        return text

    def arguments_str(self) -> str:
        """The arguments as compact JSON text (empty when none arrived)."""
        return orjson.dumps(self.arguments).decode() if self.arguments else ""

    def _member(self, segments: _Segments) -> str:
        """The text up to a new member's value: closers, openers, separator and key."""
        text = '"' if self.open_string is not None else ""
        self.open_string = None
        if not self.closers:
            self.closers.append("}")
            self.counts.append(0)
            text += "{"
        parent = segments[:-1]
        if not parent and not self.path:  # a member of the root object, the usual case
            return text + self._key(segments[0])
        common = 0
        while (
            common < len(self.path) and common < len(parent) and self.path[common] == parent[common]
        ):
            common += 1
        while len(self.path) > common:
            self.path.pop()
            self.counts.pop()
            text += self.closers.pop()
        for depth in range(common, len(parent)):
            following = segments[depth + 1]
            text += self._key(parent[depth]) + ("[" if isinstance(following, int) else "{")
            self.path.append(parent[depth])
            self.closers.append("]" if isinstance(following, int) else "}")
            self.counts.append(0)
        return text + self._key(segments[-1])

    def _key(self, segment: str | int) -> str:
        separator = "," if self.counts[-1] else ""
        self.counts[-1] += 1
        if self.closers[-1] == "]":
            return separator
        return f"{separator}{_quote(str(segment))}:"


def _assign(root: dict[str, Any], segments: Sequence[str | int], value: Any, append: bool) -> None:
    """Set (or extend, for a string piece) the value at ``segments`` inside ``root``."""
    if len(segments) == 1:  # a member of the root object, the usual case
        key = str(segments[0])
        if append:
            current = root.get(key)
            if isinstance(current, str):
                value = current + value
        root[key] = value
        return
    node: Any = root
    for segment, following in itertools.pairwise(segments):
        child = _child(node, segment)
        if not isinstance(child, (dict, list)):
            child = [] if isinstance(following, int) else {}
            _put(node, segment, child)
        node = child
    leaf = segments[-1]
    if append:
        current = _child(node, leaf)
        if isinstance(current, str):
            value = current + value
    _put(node, leaf, value)


def _child(node: Any, segment: str | int) -> Any:
    if isinstance(node, dict):
        return node.get(str(segment))
    if isinstance(segment, int) and 0 <= segment < len(node):
        return node[segment]
    return None


def _put(node: Any, segment: str | int, value: Any) -> None:
    if isinstance(node, dict):
        node[str(segment)] = value
    elif isinstance(segment, int):
        node.extend([None] * (segment + 1 - len(node)))
        node[segment] = value
    else:
        raise ChatProtocolError(f"partial argument key {segment!r} inside an array")
