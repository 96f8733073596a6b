"""PartialJsonParser: any document, any split, checked against json.loads (SPEC §10)."""

from __future__ import annotations

import copy
import itertools
import json
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from partial_values import documents, is_prefix, splits

from solon_events import PartialJsonParser
from solon_events.core.partial_json import PartialJsonError

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def parse_in(fragments: list[str]) -> tuple[PartialJsonParser, list[Any]]:
    """Feed ``fragments``, taking ``value()`` after each; returns the parser and the values."""
    parser = PartialJsonParser()
    seen = []
    for fragment in fragments:
        parser.feed(fragment)
        seen.append(parser.value())
    return parser, seen


def final_value(parser: PartialJsonParser) -> Any:
    return parser.value() if parser.complete else parser.finish()


@SETTINGS
@given(st.data())
def test_any_document_any_split(data: st.DataObject) -> None:
    text = data.draw(documents())
    fragments = data.draw(splits(text))
    expected = json.loads(text)
    parser, seen = parse_in(fragments)
    assert final_value(parser) == expected
    assert parser.complete
    for partial in seen:
        if partial is not None or expected is None:
            assert is_prefix(partial, expected), (partial, expected)
    for earlier, later in itertools.pairwise(seen):  # snapshots only grow
        if earlier is not None:
            assert is_prefix(earlier, later), (earlier, later)


@SETTINGS
@given(st.data())
def test_snapshots_never_change_afterwards(data: st.DataObject) -> None:
    text = data.draw(documents())
    parser = PartialJsonParser()
    taken: list[tuple[Any, Any]] = []
    for fragment in data.draw(splits(text)):
        parser.feed(fragment)
        snapshot = parser.value()
        taken.append((snapshot, copy.deepcopy(snapshot)))
    final_value(parser)
    for snapshot, as_it_was in taken:
        assert snapshot == as_it_was


@SETTINGS
@given(documents())
def test_one_character_at_a_time_equals_one_piece(text: str) -> None:
    whole = PartialJsonParser()
    whole.feed(text)
    by_char, _ = parse_in(list(text))
    assert final_value(whole) == final_value(by_char) == json.loads(text)


@SETTINGS
@given(documents(), st.data())
def test_a_cut_document_is_never_an_error(text: str, data: st.DataObject) -> None:
    cut = data.draw(st.integers(0, len(text)))
    parser, _ = parse_in(data.draw(splits(text[:cut])))
    if parser.complete:
        assert parser.value() == json.loads(text[:cut])
    elif text[:cut].strip():  # finish(): a cut number ("1.") is invalid, the rest incomplete
        try:
            assert parser.finish() == json.loads(text[:cut])  # a whole number after all
        except PartialJsonError as error:
            assert "incomplete" in str(error) or "number" in str(error)


@SETTINGS
@given(documents(), st.data())
def test_corrupted_documents_fail_as_json_loads_fails(text: str, data: st.DataObject) -> None:
    """One character replaced, inserted or removed: the same verdict as json.loads."""
    at = data.draw(st.integers(0, len(text)))
    junk = data.draw(st.sampled_from(list('{}[],:"\\ -.eE0t1nx\n\x01')))
    how = data.draw(st.sampled_from(["replace", "insert", "delete"]))
    if how == "insert":
        bad = text[:at] + junk + text[at:]
    elif how == "replace":
        bad = text[:at] + junk + text[at + 1 :]
    else:
        bad = text[:at] + text[at + 1 :]
    try:
        expected = json.loads(bad)
    except ValueError:
        expected = ValueError
    except RecursionError:  # pragma: no cover - json's own nesting limit
        return
    assume(not _has_non_finite(expected))
    fragments = data.draw(splits(bad))
    parser = PartialJsonParser()
    try:
        for fragment in fragments:
            parser.feed(fragment)
        result: Any = parser.finish()
    except PartialJsonError as error:
        assert expected is ValueError, f"{bad!r}: {error}"
        assert 0 <= error.offset <= len(bad)
        assert f"offset {error.offset}" in str(error)
        with pytest.raises(PartialJsonError):  # the parser stays failed
            parser.feed("")
        return
    assert result == expected


def _has_non_finite(value: Any) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(_has_non_finite(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_non_finite(v) for v in value)
    return False


NUMBERS = ["0", "-0", "7", "-12", "123456789012345678901234567890", "0.5", "-3.25", "1e5",
           "1E+5", "2.5e-3", "-0.0e0", "6.02214076E23"]  # fmt: skip


@pytest.mark.parametrize("number", NUMBERS)
def test_numbers_split_at_every_position_are_left_out_until_complete(number: str) -> None:
    text = f'{{"n": {number}, "m": [{number}]}}'
    expected = json.loads(text)
    for cut in range(len(text) + 1):
        parser = PartialJsonParser()
        parser.feed(text[:cut])
        partial = parser.value()
        if partial is not None:
            assert is_prefix(partial, expected)
            if "n" in partial:  # a number shows only whole
                assert partial["n"] == expected["n"]
            for item in partial.get("m", []):
                assert item == expected["m"][0]
        parser.feed(text[cut:])
        assert parser.value() == expected and parser.complete


@pytest.mark.parametrize("number", NUMBERS)
def test_a_number_document_is_complete_at_whitespace_or_finish(number: str) -> None:
    parser = PartialJsonParser()
    for char in number:
        parser.feed(char)
        assert parser.value() is None and not parser.complete
    assert parser.finish() == json.loads(number) and parser.complete
    spaced = PartialJsonParser()
    spaced.feed(number + " ")
    assert spaced.complete and spaced.value() == json.loads(number)


ESCAPES = ['\\"', "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t", "\\u00e9", "\\u20AC",
           "\\ud83d\\ude00", "\\ud83d", "\\ude00", "\\ud83d\\u0041", "\\\\ud83d"]  # fmt: skip


@pytest.mark.parametrize("escape", ESCAPES)
def test_escapes_split_at_every_position(escape: str) -> None:
    text = f'{{"k{escape}": "a{escape}b{escape}"}}'
    expected = json.loads(text)
    key, final = next(iter(expected.items()))
    for cut in range(len(text) + 1):
        parser = PartialJsonParser()
        parser.feed(text[:cut])
        partial = parser.value()
        assert partial is None or set(partial) <= {key}  # never half a key
        if partial:
            assert final.startswith(partial[key])
        parser.feed(text[cut:])
        assert parser.value() == expected


def test_a_surrogate_pair_cut_in_two_is_one_character() -> None:
    parser = PartialJsonParser()
    parser.feed('["\\ud83d')
    assert parser.value() == [""]
    parser.feed("\\ude")
    assert parser.value() == [""]
    parser.feed('00!"]')
    assert parser.value() == ["\U0001f600!"]


def test_an_open_string_is_shown_as_far_as_it_came() -> None:
    parser = PartialJsonParser()
    parser.feed('{"path": "a.py", "content": "')
    assert parser.value() == {"path": "a.py", "content": ""}
    parser.feed("line one\\nline t")
    assert parser.value() == {"path": "a.py", "content": "line one\nline t"}


def test_keys_and_their_values_appear_whole() -> None:
    steps = [
        ('{"ci', {}),
        ('ty"', {}),
        (": ", {}),
        ("tr", {}),
        ("ue", {"city": True}),
        (', "n": -', {"city": True}),
        ("4", {"city": True}),
        (".5,", {"city": True, "n": -4.5}),
        (' "o": {', {"city": True, "n": -4.5, "o": {}}),
        ('"a": [nul', {"city": True, "n": -4.5, "o": {"a": []}}),
        ("l]}}", {"city": True, "n": -4.5, "o": {"a": [None]}}),
    ]
    parser = PartialJsonParser()
    for fragment, expected in steps:
        parser.feed(fragment)
        assert parser.value() == expected
    assert parser.complete


def test_finished_subtrees_are_shared_between_snapshots() -> None:
    parser = PartialJsonParser()
    parser.feed('{"done": {"a": [1, 2]}, "open": [')
    first = parser.value()
    parser.feed('"x", ')
    second = parser.value()
    assert first is not second and first["open"] is not second["open"]
    assert first["done"] is second["done"]


def test_value_is_the_same_snapshot_while_nothing_new_shows() -> None:
    parser = PartialJsonParser()
    parser.feed('{"a": [1')
    first = parser.value()
    parser.feed("23")  # still the same unfinished number
    assert parser.value() is first


def test_deep_nesting_needs_no_recursion() -> None:
    depth = 100_000
    parser = PartialJsonParser()
    parser.feed("[" * depth)
    partial = parser.value()
    parser.feed("]" * depth)
    value = parser.value()
    for node in (partial, value):
        for _ in range(depth - 1):
            assert isinstance(node, list) and len(node) == 1
            node = node[0]
        assert node == []


def test_empty_input_and_reset() -> None:
    parser = PartialJsonParser()
    assert parser.value() is None and not parser.complete
    parser.feed("  ")
    assert parser.value() is None and not parser.complete
    with pytest.raises(ValueError, match="incomplete"):
        parser.finish()
    parser.reset()
    parser.feed('{"a": 1}')
    assert parser.value() == {"a": 1} and parser.complete
    parser.reset()
    assert parser.value() is None and not parser.complete
    parser.feed("null")
    assert parser.value() is None and parser.complete


@pytest.mark.parametrize(
    ("text", "offset", "before"),
    [
        ('{"a" 1}', 5, {}),
        ("[1,]", 3, [1]),
        ('{"a": tru}', 9, {}),
        ("[01]", 2, []),
        ('["\\x"]', 2, [""]),
        ("[1 2]", 3, [1]),
        ("{} x", 3, {}),
        ('["a\nb"]', 3, ["a"]),
        ('{"a": 1,}', 8, {"a": 1}),
        ("\ufeff{}", 0, None),
        ("NaN", 0, None),
    ],
)
def test_invalid_json_names_the_offset_and_keeps_what_came_before(
    text: str, offset: int, before: Any
) -> None:
    parser = PartialJsonParser()
    with pytest.raises(ValueError, match=f"offset {offset}") as failure:
        for char in text:  # the offset counts across fragments
            parser.feed(char)
    assert isinstance(failure.value, PartialJsonError) and failure.value.offset == offset
    assert parser.value() == before
    with pytest.raises(ValueError, match=f"offset {offset}"):
        parser.feed("]")


def test_feed_takes_text_only() -> None:
    with pytest.raises(TypeError, match="str"):
        PartialJsonParser().feed(b"{}")  # type: ignore[arg-type]
