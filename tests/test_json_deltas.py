"""Path deltas: what each fragment changes, rebuilt into exactly what json.loads makes."""

from __future__ import annotations

import doctest
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from partial_values import documents, splits

from solon_events.core import json_deltas, partial_json
from solon_events.core.json_deltas import JsonDeltaBuilder
from solon_events.core.partial_json import ADD, APPEND, JsonDelta, PartialJsonParser

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _size(delta: JsonDelta) -> int:
    """How much of the document a delta carries: its text, or 1 for any other value."""
    return len(delta.value) if type(delta.value) is str else 1


def _feed_all(fragments: list[str], every_fragment: bool) -> tuple[Any, list[JsonDelta]]:
    """Feed ``fragments`` to a tracking parser, applying its deltas after each; at the end
    (a top-level number completes at finish()) the built value. With ``every_fragment``,
    the built value equals the parser's snapshot after every fragment."""
    parser = PartialJsonParser(track_deltas=True)
    builder = JsonDeltaBuilder()
    seen: list[JsonDelta] = []
    for fragment in fragments:
        parser.feed(fragment)
        deltas = parser.deltas()
        seen += deltas
        builder.extend(deltas)
        if every_fragment:
            assert builder.value() == parser.value()
    if not parser.complete:
        parser.finish()
    deltas = parser.deltas()
    seen += deltas
    builder.extend(deltas)
    assert parser.deltas() == []
    return builder.value(), seen


@SETTINGS
@given(st.data())
def test_deltas_in_order_rebuild_json_loads_for_any_document_and_split(
    data: st.DataObject,
) -> None:
    text = data.draw(documents())
    fragments = data.draw(splits(text))
    every_fragment = data.draw(st.booleans())
    value, deltas = _feed_all(fragments, every_fragment)
    expected = json.loads(text)
    assert value == expected
    assert json.dumps(value) == json.dumps(expected)  # same key order, same int/float types
    # each character is sent once: the deltas carry no more than the text itself
    assert sum(_size(delta) for delta in deltas) <= len(text)


@SETTINGS
@given(st.data())
def test_each_fragment_yields_at_most_what_it_adds(data: st.DataObject) -> None:
    """A fragment's deltas carry its own characters (plus a cut escape or literal held
    over from the one before), never what came before: the cost of a fragment."""
    text = data.draw(documents())
    parser = PartialJsonParser(track_deltas=True)
    for fragment in data.draw(splits(text)):
        parser.feed(fragment)
        deltas = parser.deltas()
        assert sum(_size(delta) for delta in deltas) <= len(fragment) + 12
        # per fragment, at most one ADD per value it starts or ends, at most one APPEND
        assert sum(delta.op == APPEND for delta in deltas) <= 1
        assert len(deltas) <= len(fragment) + 1


def test_a_long_string_arrives_as_appends_to_one_path() -> None:
    parser = PartialJsonParser(track_deltas=True)
    parser.feed('{"path": "a.txt", "content": "')
    assert parser.deltas() == [
        ((), ADD, {}),
        (("path",), ADD, "a.txt"),
        (("content",), ADD, ""),
    ]
    pieces = ["line one\\n", "line \\u00e9", "\\ud83d", "\\ude00 two"]
    appended = []
    for piece in pieces:
        parser.feed(piece)
        appended += parser.deltas()
    assert appended == [
        (("content",), APPEND, "line one\n"),
        (("content",), APPEND, "line é"),
        (("content",), APPEND, "😀 two"),  # a surrogate pair waits for its second half
    ]
    parser.feed('"}')
    assert parser.deltas() == [] and parser.complete


def test_a_string_started_within_a_fragment_comes_whole_in_its_add() -> None:
    parser = PartialJsonParser(track_deltas=True)
    parser.feed('["ab\\n')
    assert parser.deltas() == [((), ADD, []), ((0,), ADD, "ab\n")]
    parser.feed('c", "de", 1')
    assert parser.deltas() == [((0,), APPEND, "c"), ((1,), ADD, "de")]
    parser.feed(", tr")
    assert parser.deltas() == [((2,), ADD, 1)]  # the number, once something ended it
    parser.feed("ue]")
    assert parser.deltas() == [((3,), ADD, True)]


def test_nested_paths_and_keys_only_with_their_values() -> None:
    parser = PartialJsonParser(track_deltas=True)
    parser.feed('{"a": {"b c": [[], {"d"')
    assert parser.deltas() == [
        ((), ADD, {}),
        (("a",), ADD, {}),
        (("a", "b c"), ADD, []),
        (("a", "b c", 0), ADD, []),
        (("a", "b c", 1), ADD, {}),
    ]
    parser.feed(': null}], "e": -2.5e3}}')
    assert parser.deltas() == [(("a", "b c", 1, "d"), ADD, None), (("a", "e"), ADD, -2500.0)]


def test_a_duplicate_key_is_added_again_and_wins_as_in_json_loads() -> None:
    text = '{"a": "first", "b": 1, "a": {"x": "second"}}'
    for size in range(1, len(text) + 1):
        fragments = [text[i : i + size] for i in range(0, len(text), size)]
        value, _deltas = _feed_all(fragments, every_fragment=True)
        assert value == json.loads(text) == {"a": {"x": "second"}, "b": 1}


def test_a_top_level_number_comes_at_finish() -> None:
    parser = PartialJsonParser(track_deltas=True)
    parser.feed("-12")
    assert parser.deltas() == []
    assert parser.finish() == -12
    assert parser.deltas() == [((), ADD, -12)]


def test_deep_nesting_needs_no_recursion() -> None:
    depth = 20_000
    parser = PartialJsonParser(track_deltas=True)
    builder = JsonDeltaBuilder()
    parser.feed("[" * depth + '"deep')
    builder.extend(parser.deltas())
    parser.feed('"' + "]" * depth)
    builder.extend(parser.deltas())
    node = builder.value()
    for _ in range(depth - 1):
        assert isinstance(node, list) and len(node) == 1
        node = node[0]
    assert node == ["deep"]


def test_deltas_need_tracking_and_reset_keeps_it() -> None:
    with pytest.raises(ValueError, match="track_deltas=True"):
        PartialJsonParser().deltas()
    parser = PartialJsonParser(track_deltas=True)
    parser.feed('{"a": "b')
    parser.reset()
    assert parser.deltas() == []
    parser.feed("[]")
    assert parser.deltas() == [((), ADD, [])]


def test_deltas_before_invalid_json_are_kept() -> None:
    parser = PartialJsonParser(track_deltas=True)
    with pytest.raises(ValueError, match="offset 12"):
        parser.feed('{"a": [1, 2 3]}')
    assert parser.deltas() == [
        ((), ADD, {}),
        (("a",), ADD, []),
        (("a", 0), ADD, 1),
        (("a", 1), ADD, 2),
    ]


def test_the_builder_copies_what_it_is_given_and_says_when_a_path_leads_nowhere() -> None:
    given_value = {"list": [1, {"s": "x"}]}
    builder = JsonDeltaBuilder()
    assert builder.value() is None
    builder.apply(JsonDelta((), ADD, given_value))
    builder.apply(JsonDelta(("list", 1, "s"), APPEND, "y"))
    builder.apply(JsonDelta(("list", 2), ADD, "z"))
    assert builder.value() == {"list": [1, {"s": "xy"}, "z"]}
    assert given_value == {"list": [1, {"s": "x"}]}  # the caller's value is not changed
    for path, op, value, message in [
        (("list", 5), ADD, 1, "no item 5"),
        (("list", "k"), ADD, 1, "no item 'k'"),
        (("list", 0, "k"), ADD, 1, "no object or array"),
        (("list", 0), APPEND, "more", "no string"),
        ((0,), ADD, 1, "not a member name"),
        (("list",), "remove", None, "unknown delta op"),
    ]:
        with pytest.raises(ValueError, match=message):
            builder.apply(JsonDelta(path, op, value))
    assert builder.value() == {"list": [1, {"s": "xy"}, "z"]}


def test_appends_to_the_root_string_and_value_between_them() -> None:
    builder = JsonDeltaBuilder()
    builder.apply(JsonDelta((), ADD, "a"))
    builder.apply(JsonDelta((), APPEND, "b"))
    assert builder.value() == "ab"
    builder.apply(JsonDelta((), APPEND, "c"))
    builder.apply(JsonDelta((), APPEND, "d"))
    assert builder.value() == "abcd"


def test_docstring_examples() -> None:
    assert doctest.testmod(partial_json).failed == 0
    assert doctest.testmod(json_deltas).failed == 0
