"""The JSON-path argument assembler (solon_events.dialects.json_path), on its own: any JSON
object sent as values at JSON paths, strings in any pieces, reads back as itself."""

from __future__ import annotations

import doctest
import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from solon_events import ChatProtocolError
from solon_events.dialects import json_path
from solon_events.dialects.json_path import JsonPathAssembler, json_path_segments

_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(10**6), 10**6)
    | st.floats(allow_nan=False, allow_infinity=False, width=32)
    | st.text(max_size=12)
)
_KEYS = st.text(max_size=6)
_VALUES = st.recursive(
    _SCALARS,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(_KEYS, children, max_size=3),
    max_leaves=12,
)
_ARGUMENTS = st.dictionaries(_KEYS, _VALUES, min_size=1, max_size=4)


def _path_text(segments: tuple[str | int, ...]) -> str:
    """A JSON path as a provider writes one: ``.name`` for plain names, ``['...']`` else."""
    text = "$"
    for segment in segments:
        if isinstance(segment, int):
            text += f"[{segment}]"
        elif segment and not set(segment) & set(".[]'\"\\"):
            text += f".{segment}"
        else:
            text += "['" + segment.replace("\\", "\\\\").replace("'", "\\'") + "']"
    return text


def _leaves(value: Any, segments: tuple[str | int, ...]) -> Iterator[tuple[tuple, Any]]:
    """Every scalar (and empty container) of ``value`` with its path, in document order."""
    if isinstance(value, dict) and value:
        for key, item in value.items():
            yield from _leaves(item, (*segments, key))
    elif isinstance(value, list) and value:
        for index, item in enumerate(value):
            yield from _leaves(item, (*segments, index))
    else:
        yield segments, value


@given(arguments=_ARGUMENTS, data=st.data())
def test_values_at_json_paths_read_back_as_the_object(arguments: dict[str, Any], data: Any) -> None:
    assembler = JsonPathAssembler()
    text = ""
    for segments, value in _leaves(arguments, ()):
        assert json_path_segments(_path_text(segments)) == segments
        if isinstance(value, str) and value:
            cuts = sorted(data.draw(st.sets(st.integers(1, len(value)), max_size=3)) | {len(value)})
            start = 0
            for cut in cuts:
                text += assembler.string(segments, value[start:cut], more=cut < len(value))
                start = cut
        elif isinstance(value, str):
            text += assembler.string(segments, value, more=False)
        else:
            text += assembler.value(segments, value)
    text += assembler.finish()
    assert json.loads(text) == arguments
    assert json.loads(assembler.arguments_str()) == arguments
    assert assembler.arguments == arguments


def test_a_string_still_streaming_is_closed_by_the_next_member_or_finish() -> None:
    assembler = JsonPathAssembler()
    text = assembler.string(("a",), "x", more=True) + assembler.value(("b",), 1)
    text += assembler.string(("c",), "y", more=True) + assembler.finish()
    assert json.loads(text) == {"a": "x", "b": 1, "c": "y"}
    assert assembler.finish() == ""  # nothing left open


def test_a_whole_container_value_is_copied_not_shared() -> None:
    given_value: dict[str, Any] = {"x": [1]}
    assembler = JsonPathAssembler()
    assembler.value(("a",), given_value)
    assembler.value(("a", "y"), 2)
    assert given_value == {"x": [1]}
    assert assembler.arguments == {"a": {"x": [1], "y": 2}}


def test_no_values_are_no_arguments() -> None:
    assembler = JsonPathAssembler()
    assert (assembler.finish(), assembler.arguments_str(), assembler.arguments) == ("", "", {})


@pytest.mark.parametrize(
    ("path", "segments"),
    [
        ("$.a", ("a",)),
        ("$.a.b[0]", ("a", "b", 0)),
        ("$['c d']", ("c d",)),
        ('$["q\\"x"]', ('q"x',)),
        ("$['it\\'s'][12]", ("it's", 12)),
    ],
)
def test_json_path_segments(path: str, segments: tuple[str | int, ...]) -> None:
    assert json_path_segments(path) == segments


@pytest.mark.parametrize("path", ["a.b", "$", "$.a..b", "$[x]", "$.a[-1]"])
def test_unreadable_json_paths_are_protocol_errors(path: str) -> None:
    with pytest.raises(ChatProtocolError, match="path"):
        json_path_segments(path)


def test_a_member_name_inside_an_array_is_a_protocol_error() -> None:
    assembler = JsonPathAssembler()
    assembler.value(("a", 0), 1)
    with pytest.raises(ChatProtocolError, match="inside an array"):
        assembler.value(("a", "b"), 2)


def test_the_docstring_examples_run() -> None:
    assert doctest.testmod(json_path).failed == 0
