"""Where a typewriter cuts text: the next chunk at the start of a buffer (sans-I/O).

:func:`chunker` turns ``smooth()``'s ``chunking`` argument into a function that, given the
text not released yet, says how long its first complete chunk is (0: none yet, wait for
more text):

* ``"word"``: a word with the whitespace after it. Chinese and Japanese text, which puts
  no spaces between words, is cut into grapheme clusters instead: each Han, kana, Bopomofo
  or CJK punctuation character with what extends it (combining marks such as the kana
  voicing marks, variation selectors, zero-width joiners, emoji modifiers), and the
  whitespace after it. A cluster or word is complete once something follows it that cannot
  belong to it, so no chunk ends inside one (after a word's whitespace, a character that
  extends it is taken along when it is already there). (The rule uses the standard library's
  ``unicodedata`` categories; for these scripts it gives the extended grapheme clusters of
  Unicode's UAX #29, which the tests check against the ``regex`` package's ``\\X``.
  Korean, which is written with spaces, is cut by words.)
* ``"line"``: a line with its ``\\n``.
* a compiled regular expression: the text up to the end of its first match.
* a function of the buffer returning its first chunk (a non-empty prefix) or None.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from typing import Union

__all__ = ["Chunking", "chunker"]

Chunking = Union[str, "re.Pattern[str]", Callable[[str], "str | None"]]
"""What ``smooth(chunking=...)`` takes: ``"word"``, ``"line"``, a compiled regular
expression or a function of the buffer returning its first chunk or None."""

# Scripts written without spaces between words: Han (with its extensions and compatibility
# ideographs), Hiragana, Katakana (with halfwidth forms), Bopomofo, CJK symbols and
# punctuation, fullwidth forms; less the marks among them that extend the character before
# (the ideographic tone marks, the kana voicing marks and their halfwidth forms).
_NO_SPACES = (
    "\u2e80-\u2fdf\u3000-\u3029\u3030-\u3098\u309b-\u30ff\u3100-\u312f\u3190-\u31ff"
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff9d"
    "\U00020000-\U0003ffff"
)
_CLUSTER_CHAR = re.compile(f"[{_NO_SPACES}]")
_WORD = re.compile(rf"\s*[^\s{_NO_SPACES}]+(?:\s+|(?=[{_NO_SPACES}]))")
_LEADING_SPACE = re.compile(r"\s*")
_TRAILING_SPACE = re.compile(r"\s*")
_JOINERS = frozenset("\u200c\u200d\uff9e\uff9f")  # ZWNJ, ZWJ, halfwidth voicing marks
_EXTENDING = frozenset({"Mn", "Me", "Mc"})


def _extends(char: str) -> bool:
    """Whether ``char`` belongs to the cluster before it (UAX #29's Extend, SpacingMark
    and ZWJ, for the characters that follow Han and kana)."""
    return (
        char in _JOINERS
        or unicodedata.category(char) in _EXTENDING
        or "\U0001f3fb" <= char <= "\U0001f3ff"  # emoji skin-tone modifiers
    )


def _word(buffer: str) -> int:
    """The length of the first word (or no-space-script cluster) of ``buffer``, with the
    whitespace around it; 0 while it may still grow."""
    start = _LEADING_SPACE.match(buffer).end()  # type: ignore[union-attr]
    if start < len(buffer) and _CLUSTER_CHAR.match(buffer, start):
        end = start + 1
        while end < len(buffer) and _extends(buffer[end]):
            end += 1
        if end == len(buffer):  # an extending character may come next
            return 0
        return _extended(buffer, _TRAILING_SPACE.match(buffer, end).end())  # type: ignore[union-attr]
    match = _WORD.match(buffer)
    return _extended(buffer, match.end()) if match is not None else 0


def _extended(buffer: str, end: int) -> int:
    """``end`` moved past the characters that extend the one before it (a combining mark
    after a space, say), so that no chunk ends inside a cluster."""
    while end < len(buffer) and _extends(buffer[end]):
        end += 1
    return end


def _line(buffer: str) -> int:
    """The length of the first line of ``buffer`` with its newline; 0 before one."""
    end = buffer.find("\n")
    return end + 1


def _pattern(pattern: re.Pattern[str]) -> Callable[[str], int]:
    def first(buffer: str) -> int:
        match = pattern.search(buffer)
        if match is None:
            return 0
        if match.end() == 0:
            raise ValueError(f"the chunking pattern {pattern.pattern!r} matched empty text")
        return match.end()

    return first


def _function(function: Callable[[str], str | None]) -> Callable[[str], int]:
    def first(buffer: str) -> int:
        chunk = function(buffer)
        if chunk is None:
            return 0
        if not isinstance(chunk, str) or not chunk or not buffer.startswith(chunk):
            raise ValueError(
                f"the chunking function returned {chunk!r}: not a non-empty start of the text"
            )
        return len(chunk)

    return first


def chunker(chunking: Chunking) -> Callable[[str], int]:
    """The function that gives the length of a buffer's first complete chunk (0: none yet)
    for ``chunking`` (see the module's docstring). Raises ``ValueError`` for a name other
    than ``"word"`` and ``"line"`` (a pattern is given compiled: ``re.compile(...)``) and
    ``TypeError`` for anything else that is not a function.

    >>> first = chunker("word")
    >>> first("Hello wor"), first("Hello"), first("你好"), first("你")
    (6, 0, 1, 0)
    """
    if isinstance(chunking, re.Pattern):
        return _pattern(chunking)
    if isinstance(chunking, str):
        if chunking == "word":
            return _word
        if chunking == "line":
            return _line
        raise ValueError(
            f"chunking must be 'word' or 'line' (or a compiled pattern, or a function), "
            f"not {chunking!r}"
        )
    if callable(chunking):
        return _function(chunking)
    raise TypeError(f"chunking must be 'word', 'line', a pattern or a function, not {chunking!r}")
