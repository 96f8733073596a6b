"""An incremental, tolerant JSON parser: the partial value of a document still arriving.

:class:`PartialJsonParser` is fed the text of one JSON document in fragments, split
anywhere, and keeps its state between them: each character is read once (a cut escape,
literal or surrogate pair waits for the next fragment, at most a dozen characters).
At any point :meth:`~PartialJsonParser.value` gives the value so far as plain Python
values (dict, list, str, int, float, bool, None, as :func:`json.loads` makes them):

* objects and arrays are closed as they stand;
* an open string is included as far as it has arrived (escapes and surrogate pairs cut
  by a fragment boundary wait for their end);
* an unfinished number or literal is left out until it is complete, and so is a member
  whose key or value has not started; a key is never half-present.

Snapshots share structure: a finished value is built once and every later snapshot holds
the same object, so a snapshot costs the containers still open (and an open string), not
the whole document. Nothing handed out is ever changed by a later fragment: treat the
values as read-only, since later snapshots share them.

A snapshot still costs the width of the containers still open and the length of an open
string, after each fragment: a long string read that way costs quadratic time in all. A
parser made with ``track_deltas=True`` also records what each fragment changed, as
:class:`JsonDelta` values (a new member or item, text added to an open string), which
:meth:`~PartialJsonParser.deltas` hands out at a cost that grows with the fragment only;
:class:`~solon_events.core.json_deltas.JsonDeltaBuilder` applies them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from json import decoder
from typing import Any, NamedTuple, cast

__all__ = ["ADD", "APPEND", "JsonDelta", "PartialJsonError", "PartialJsonParser"]

# What the parser expects next.
_VALUE = 0  # a value (the document's, a member's after ':', an item after ',')
_FIRST_VALUE = 1  # an item or ']' (after '[')
_KEY = 2  # a member's key (after ',' in an object)
_FIRST_KEY = 3  # a key or '}' (after '{')
_COLON = 4  # ':' after a key
_AFTER = 5  # ',' or the closer, after an item or a member
_END = 6  # nothing but whitespace: the document is complete
_STRING = 7  # more of an open string value
_KEY_STRING = 8  # more of an open key
_NUMBER = 9  # more of a number (it may go on in the next fragment)

_Always = Callable[[str, int], "re.Match[str]"]  # a pattern that matches anywhere (maybe empty)

# json's own string decoder (C when available): (text after the opening quote, 0) -> (str, end)
_scanstring: Callable[[str, int], tuple[str, int]] = decoder.scanstring  # type: ignore[attr-defined]

_WHITESPACE = frozenset(" \t\n\r")
_SKIP_WHITESPACE = cast(_Always, re.compile(r"[ \t\n\r]*").match)
_COLON_AHEAD = re.compile(r"[ \t\n\r]*:[ \t\n\r]*").match
# A run of string content up to its closing quote, a backslash that starts no complete
# escape, a control character or the end of the text.
_STRING_BODY = cast(
    _Always, re.compile(r'(?:[^"\\\x00-\x1f]+|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*').match
)
_CUT_ESCAPE = re.compile(r"\\(?:u[0-9a-fA-F]{0,3})?").fullmatch
_HIGH_SURROGATE = re.compile(r"\\u[dD][89abAB][0-9a-fA-F]{2}").fullmatch
_NUMBER_CHARS = cast(_Always, re.compile(r"[0-9eE.+\-]*").match)
_NUMBER_SYNTAX = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+\-]?[0-9]+)?").match
_LITERALS: dict[str, tuple[str, Any]] = {
    "t": ("true", True),
    "f": ("false", False),
    "n": ("null", None),
}
_NUMBER_START = frozenset("-0123456789")
_NOTHING: Any = object()

ADD = "add"
"""The :attr:`JsonDelta.op` of a value that appears: a new member of an object (or a new
value of a member already there: a duplicate key, which :func:`json.loads` lets win), a
new item of an array (its index is the array's length), or the document's value (the
empty path)."""
APPEND = "append"
"""The :attr:`JsonDelta.op` of text added to the end of the string at the path."""

JsonPath = tuple[str | int, ...]
"""Where a value is in a document: its member names (str) and array indexes (int), outermost
first; ``()`` is the document itself."""


class JsonDelta(NamedTuple):
    """What one fragment changed in a document's value: ``(path, op, value)``.

    ``op`` is :data:`ADD` (``value`` appears at ``path``: a complete number, ``true``,
    ``false`` or ``null``, a string as far as it has arrived, or an empty ``{}`` or ``[]``
    that later deltas fill) or :data:`APPEND` (``value``, a str, is added to the end of the
    string at ``path``). Applied in order from nothing, the deltas rebuild the document's
    value (:class:`~solon_events.core.json_deltas.JsonDeltaBuilder` does), equal after
    every fragment to :meth:`PartialJsonParser.value`.

    >>> parser = PartialJsonParser(track_deltas=True)
    >>> parser.feed('{"city": "Par')
    >>> for delta in parser.deltas():
    ...     print(delta)
    JsonDelta(path=(), op='add', value={})
    JsonDelta(path=('city',), op='add', value='Par')
    >>> parser.feed('is", "days": [3')
    >>> for path, op, value in parser.deltas():
    ...     print(path, op, repr(value))
    ('city',) append 'is'
    ('days',) add []
    >>> parser.feed(", 4]}")
    >>> parser.deltas()
    [JsonDelta(path=('days', 0), op='add', value=3), JsonDelta(path=('days', 1), op='add', value=4)]
    """

    path: JsonPath
    """Where the change is."""
    op: str
    """:data:`ADD` or :data:`APPEND`."""
    value: Any
    """The value that appears (``ADD``; an empty container is a fresh one each time), or the
    text added (``APPEND``)."""


_EXPECTED = {
    _VALUE: "a value",
    _FIRST_VALUE: "a value or ']'",
    _KEY: "a key (a string)",
    _FIRST_KEY: "a key (a string) or '}'",
    _COLON: "':' after the key",
    _END: "nothing more (the document is complete)",
}


class PartialJsonError(ValueError):
    """Invalid JSON: ``offset`` is the position (in characters, from the start of the
    document) of the first character that cannot belong to a JSON document."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(f"invalid JSON at offset {offset}: {message}")
        self.offset = offset


class PartialJsonParser:
    """Parses one JSON document fed in fragments; :meth:`value` is the value so far.

    >>> parser = PartialJsonParser()
    >>> parser.feed('{"city": "Par')
    >>> parser.value()
    {'city': 'Par'}
    >>> parser.feed('is", "days": [1, 2')
    >>> parser.value()
    {'city': 'Paris', 'days': [1]}
    >>> parser.feed("]}")
    >>> parser.value(), parser.complete
    ({'city': 'Paris', 'days': [1, 2]}, True)

    The total cost over a document is linear in its length however it is split, and a
    snapshot costs only what is still open. Invalid JSON raises :class:`PartialJsonError`
    (a ``ValueError``) naming the offset; the value before it stays readable, and every
    later :meth:`feed` raises the same error until :meth:`reset`.

    With ``track_deltas=True`` the parser also records what each fragment changes, as
    :class:`JsonDelta` values that :meth:`deltas` hands out: a view that applies them
    costs the fragment, where a snapshot costs what is still open.
    """

    __slots__ = ("_consumed", "_deltas", "_error", "_fresh_string", "_number", "_number_at",
                 "_parts", "_pending", "_root", "_snapshot", "_snapshot_version", "_stack",
                 "_state", "_string_path", "_track_deltas", "_version")  # fmt: skip

    def __init__(self, *, track_deltas: bool = False) -> None:
        self._track_deltas = track_deltas
        self.reset()

    def reset(self) -> None:
        """Forget everything: ready for a new document."""
        self._stack: list[list[Any]] = []  # open containers: [container, current key]
        self._state = _VALUE
        self._root: Any = _NOTHING  # the document's value once complete
        self._parts: list[str] = []  # the open string, decoded, in pieces
        self._number: list[str] = []  # the open number's text, in pieces
        self._number_at = 0  # its offset
        self._pending = ""  # a cut escape or literal, read again with the next fragment
        self._consumed = 0  # characters read before ``_pending``
        self._error: PartialJsonError | None = None
        self._version = 0  # counts changes that show in value()
        self._snapshot: Any = None
        self._snapshot_version = 0
        # with track_deltas: the changes not handed out yet, where the open string value is,
        # and whether its ADD is the last change recorded (its first text goes into it)
        self._deltas: list[JsonDelta] | None = [] if self._track_deltas else None
        self._string_path: JsonPath = ()
        self._fresh_string = False

    def deltas(self) -> list[JsonDelta]:
        """What changed since the last call (since the start, the first time), in order.

        Needs a parser made with ``track_deltas=True`` (a ``ValueError`` otherwise). A
        change shows here when it shows in :meth:`value`: a member once its value has
        started (a number or a literal once complete), a string's text as it arrives.
        """
        deltas = self._deltas
        if deltas is None:
            raise ValueError(
                "deltas() needs a parser made with PartialJsonParser(track_deltas=True)"
            )
        self._deltas = []
        return deltas

    @property
    def complete(self) -> bool:
        """True once a whole JSON document has arrived (a number at the top level is whole
        only once something ends it: whitespace, or :meth:`finish`)."""
        return self._state == _END

    def feed(self, fragment: str) -> None:
        """Parse the next piece of the document's text.

        Raises :class:`PartialJsonError` (a ``ValueError``) at the first character that
        cannot belong to a JSON document.
        """
        if self._error is not None:
            raise self._error
        if not isinstance(fragment, str):
            raise TypeError(f"feed() takes str, not {type(fragment).__name__}")
        text = self._pending + fragment if self._pending else fragment
        base = self._consumed
        self._pending = ""
        try:
            end = self._parse(text, base)
        except PartialJsonError as error:
            self._error = error
            self._version += 1
            raise
        self._consumed = base + end

    def value(self) -> Any:
        """The value so far: a snapshot that later fragments never change.

        ``None`` before any value has started (and for ``null``: :attr:`complete` tells).
        """
        if self._snapshot_version == self._version:
            return self._snapshot
        state = self._state
        if state == _END:
            snapshot = self._root
        else:
            child = _NOTHING
            if state == _STRING:
                parts = self._parts
                if len(parts) > 1:
                    parts[:] = ["".join(parts)]
                child = parts[0] if parts else ""
            for frame in reversed(self._stack):
                container = frame[0]
                if type(container) is list:
                    snap: Any = container.copy()
                    if child is not _NOTHING:
                        snap.append(child)
                else:
                    snap = container.copy()
                    if child is not _NOTHING:
                        snap[frame[1]] = child
                child = snap
            snapshot = None if child is _NOTHING else child
        self._snapshot = snapshot
        self._snapshot_version = self._version
        return snapshot

    def finish(self) -> Any:
        """The input has ended: the whole document's value.

        A number at the top level is complete now. Raises :class:`PartialJsonError` when the
        document is incomplete (naming the offset where more was expected).
        """
        if self._error is not None:
            raise self._error
        if self._state == _NUMBER and not self._stack:
            try:
                self._root = _number_value("".join(self._number), self._number_at)
            except PartialJsonError as error:
                self._error = error
                raise
            self._number = []
            self._state = _END
            self._version += 1
            if self._deltas is not None:
                self._deltas.append(JsonDelta((), ADD, self._root))
        if self._state != _END:
            self._error = PartialJsonError(
                "the document is incomplete", self._consumed + len(self._pending)
            )
            raise self._error
        return self._root

    # parsing

    def _parse(self, text: str, base: int) -> int:
        """Read ``text`` (at document offset ``base``); returns how much was consumed
        (the rest is kept in ``_pending``)."""
        stack = self._stack
        state = self._state
        n = len(text)
        pos = 0
        changes = 0
        record = self._deltas  # None unless tracking deltas
        shown = False  # whether the string value completed below was recorded when it opened
        try:
            while pos < n:
                if state >= _STRING:  # more of a string or a number cut by the last fragment
                    if state == _NUMBER:
                        end = _NUMBER_CHARS(text, pos).end()
                        self._number.append(text[pos:end])
                        if end == n:
                            break
                        value = _number_value("".join(self._number), self._number_at)
                        self._number = []
                        pos = end
                    else:
                        pos, done, chunk = self._string(text, pos, base)
                        changes += 1
                        if record is not None and chunk and state == _STRING:
                            self._record_text(record, chunk)
                        if not done:
                            break
                        value = "".join(self._parts)
                        self._parts = []
                        if state == _KEY_STRING:
                            stack[-1][1] = value
                            state = _COLON
                            continue
                        shown = True
                else:
                    c = text[pos]
                    if c in _WHITESPACE:
                        pos = _SKIP_WHITESPACE(text, pos).end()
                        continue
                    if state == _AFTER:
                        container = stack[-1][0]
                        if c == ",":
                            state = _KEY if type(container) is dict else _VALUE
                            pos = _SKIP_WHITESPACE(text, pos + 1).end()
                            continue
                        if c != ("}" if type(container) is dict else "]"):
                            raise _unexpected(
                                c,
                                base + pos,
                                "',' or '}'" if type(container) is dict else "',' or ']'",
                            )
                        value = stack.pop()[0]
                        pos += 1
                    elif c == '"' and state <= _FIRST_KEY:  # a string value or a key
                        end = _STRING_BODY(text, pos + 1).end()
                        if end == n or text[end] != '"':  # cut, or more than plain content
                            if state <= _FIRST_VALUE:
                                state = _STRING
                                if record is not None:
                                    self._string_path = path = self._child_path()
                                    record.append(JsonDelta(path, ADD, ""))
                                    self._fresh_string = True
                            else:
                                state = _KEY_STRING
                            pos += 1
                            changes += 1
                            continue
                        value = text[pos + 1 : end]
                        if "\\" in value:
                            value = _scanstring(value + '"', 0)[0]
                        pos = end + 1
                        if state >= _KEY:
                            stack[-1][1] = value
                            colon = _COLON_AHEAD(text, pos)
                            if colon is None:
                                state = _COLON
                            else:
                                state = _VALUE
                                pos = colon.end()
                            continue
                    elif state == _COLON:
                        if c != ":":
                            raise _unexpected(c, base + pos, _EXPECTED[state])
                        state = _VALUE
                        pos = _SKIP_WHITESPACE(text, pos + 1).end()
                        continue
                    elif state <= _FIRST_VALUE:
                        if c in _NUMBER_START:
                            end = _NUMBER_CHARS(text, pos).end()
                            if end == n:  # it may go on in the next fragment
                                self._number = [text[pos:]]
                                self._number_at = base + pos
                                state = _NUMBER
                                break
                            value = _number_value(text[pos:end], base + pos)
                            pos = end
                        elif c == "{" or c == "[":
                            if record is None:
                                stack.append([{} if c == "{" else [], None])
                            else:  # each open container knows its path
                                path = self._child_path()
                                record.append(JsonDelta(path, ADD, {} if c == "{" else []))
                                stack.append([{} if c == "{" else [], None, path])
                            state = _FIRST_KEY if c == "{" else _FIRST_VALUE
                            pos += 1
                            changes += 1
                            continue
                        elif c in _LITERALS:
                            word, value = _LITERALS[c]
                            end = pos + len(word)
                            if not text.startswith(word, pos):
                                cut = text[pos:end]
                                if end > n and word.startswith(cut):
                                    self._pending = cut
                                    break
                                bad = next(i for i, ch in enumerate(cut) if ch != word[i])
                                raise _unexpected(cut[bad], base + pos + bad, repr(word))
                            pos = end
                        elif c == "]" and state == _FIRST_VALUE:
                            value = stack.pop()[0]
                            pos += 1
                        else:
                            raise _unexpected(c, base + pos, _EXPECTED[state])
                    elif c == "}" and state == _FIRST_KEY:
                        value = stack.pop()[0]
                        pos += 1
                    else:
                        raise _unexpected(c, base + pos, _EXPECTED[state])
                # a value is complete: it joins its container, or it is the document
                changes += 1
                if record is not None:  # a container or an open string was recorded at its start
                    if shown:
                        shown = False
                    elif type(value) is not dict and type(value) is not list:
                        record.append(JsonDelta(self._child_path(), ADD, value))
                if stack:
                    frame = stack[-1]
                    container = frame[0]
                    if type(container) is list:
                        container.append(value)
                    else:
                        container[frame[1]] = value
                    state = _AFTER
                else:
                    self._root = value
                    state = _END
        finally:
            self._state = state
            self._fresh_string = False
            if changes:
                self._version += 1
        return n - len(self._pending)

    def _child_path(self) -> JsonPath:
        """The path of the value that starts or completes now (tracking deltas)."""
        stack = self._stack
        if not stack:
            return ()
        container, key, path = stack[-1]
        return (*path, key if type(container) is dict else len(container))

    def _record_text(self, record: list[JsonDelta], chunk: str) -> None:
        """Record more text of the open string value: in the ADD that opened it when that
        is the last change recorded (in this same fragment), else as an APPEND."""
        if self._fresh_string:
            self._fresh_string = False
            record[-1] = JsonDelta(self._string_path, ADD, chunk)
        else:
            record.append(JsonDelta(self._string_path, APPEND, chunk))

    def _string(self, text: str, pos: int, base: int) -> tuple[int, bool, str]:
        """Read more of the open string from ``pos``: (where reading stopped, whether the
        string is complete, the text it added). A cut escape is kept in ``_pending``."""
        n = len(text)
        end = _STRING_BODY(text, pos).end()
        chunk = text[pos:end]
        rest_start = end
        if "\\" in chunk:
            if (
                end - pos >= 6
                and (end == n or _CUT_ESCAPE(text, end))
                and _HIGH_SURROGATE(text, end - 6, end)
                and _escapes(text, end - 6, pos)
            ):
                # a high surrogate whose low half may come next: wait for it
                chunk = chunk[:-6]
                rest_start = end - 6
            chunk = _scanstring(chunk + '"', 0)[0] if "\\" in chunk else chunk
        if chunk:
            self._parts.append(chunk)
        if end == n:
            self._pending = text[rest_start:]
            return n, False, chunk
        c = text[end]
        if c == '"':
            return end + 1, True, chunk
        if c == "\\":
            if _CUT_ESCAPE(text, end):  # cut by the end of the text
                self._pending = text[rest_start:]
                return n, False, chunk
            raise PartialJsonError(f"invalid escape {text[end : end + 2]!r}", base + end)
        raise PartialJsonError(f"control character {c!r} inside a string (escape it)", base + end)


def _unexpected(c: str, offset: int, expected: str) -> PartialJsonError:
    return PartialJsonError(f"expected {expected}, found {c!r}", offset)


def _escapes(text: str, at: int, start: int) -> bool:
    """Whether the backslash at ``at`` starts an escape (rather than ends ``\\\\``),
    counting the backslashes before it back to ``start``."""
    before = at
    while before > start and text[before - 1] == "\\":
        before -= 1
    return (at - before) % 2 == 0


def _number_value(text: str, offset: int) -> Any:
    """The int or float ``text`` spells, as :func:`json.loads` reads it."""
    match = _NUMBER_SYNTAX(text)
    if match is None or match.end() != len(text):
        at = match.end() if match is not None else int(text.startswith("-"))
        found = text[at] if at < len(text) else "the end of the number"
        raise PartialJsonError(f"invalid number {text!r} (at {found!r})", offset + at)
    if match.group(1) or match.group(2):
        return float(text)
    return int(text)
