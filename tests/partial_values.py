"""What a partial JSON value may be, and the long-args scenario's frames, for the partial
JSON, partial arguments and live view tests."""

from __future__ import annotations

import itertools
import json
from typing import Any

from hypothesis import strategies as st

from solon_events.devserver.app import ROUTES
from solon_events.devserver.encoders import RequestView
from solon_events.devserver.scenarios import plan


def long_args_frames(dialect: str, sections: int = 3) -> list[Any]:
    """The embedded provider's ``long-args`` turn, encoded as ``dialect`` sends it."""
    script = plan(RequestView(model=f"long-args:{sections}"))
    wire_type = next(wire for _path, wire, name in ROUTES if name == dialect)
    wire = wire_type("long-args", script.usage)
    return [frame for part in script.parts for frame in wire.encode(part)]  # type: ignore[union-attr]


def argument_snapshots(events: list[Any]) -> list[Any]:
    """The arguments ``partial_arguments()`` shows after each TOOL_CALL_ARGS_DELTA of
    ``events``: what a live view of them should show."""
    from reactivex import from_iterable
    from reactivex import operators as ops

    from solon_events import ChatEventType, partial_arguments

    return [
        event.tool_call.arguments
        for event in from_iterable(events).pipe(partial_arguments(), ops.to_list()).run()
        if event.type is ChatEventType.TOOL_CALL_ARGS_DELTA
    ]


def forbid_snapshots(monkeypatch: Any) -> None:
    """Make any ``PartialJsonParser.value()`` call fail: the views apply path deltas, at the
    cost of each delta, instead of snapshotting the arguments after each one."""
    from solon_events.core.partial_json import PartialJsonParser

    def value(self: Any) -> Any:
        raise AssertionError("a snapshot of the arguments was taken")

    monkeypatch.setattr(PartialJsonParser, "value", value)


def is_prefix(partial: Any, final: Any) -> bool:
    """Whether ``partial`` is what a parser may show of ``final`` before the end: containers
    with their first members (all but the last equal, the last itself a prefix), a string
    cut anywhere, scalars whole."""
    if isinstance(final, dict):
        if not isinstance(partial, dict):
            return False
        keys = list(partial)
        if keys != list(final)[: len(keys)]:
            return False
        return all(partial[k] == final[k] for k in keys[:-1]) and (
            not keys or is_prefix(partial[keys[-1]], final[keys[-1]])
        )
    if isinstance(final, list):
        if not isinstance(partial, list) or len(partial) > len(final):
            return False
        if not partial:
            return True
        last = len(partial) - 1
        return partial[:last] == final[:last] and is_prefix(partial[last], final[last])
    if isinstance(final, str):
        return isinstance(partial, str) and final.startswith(partial)
    return partial == final and type(partial) is type(final)


# JSON values as json.loads makes them: finite floats, any unicode (escaped or not).
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=8), inner, max_size=6)
    ),
    max_leaves=40,
)


@st.composite
def documents(draw: st.DrawFn) -> str:
    """The text of a JSON document, in one of the layouts encoders produce."""
    value = draw(values)
    return json.dumps(
        value,
        ensure_ascii=draw(st.booleans()),
        indent=draw(st.sampled_from([None, 0, 2, "\t"])),
        separators=draw(st.sampled_from([None, (",", ":"), (" , ", " : ")])),
    )


@st.composite
def splits(draw: st.DrawFn, text: str) -> list[str]:
    """``text`` cut into fragments at arbitrary places (empty fragments included)."""
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=max(1, len(text)))))
    edges = [0, *cuts, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(edges)]
