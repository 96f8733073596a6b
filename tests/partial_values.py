"""What a partial JSON value may be, and the long-args scenario's frames, for the partial
JSON, partial arguments and live view tests."""

from __future__ import annotations

from typing import Any

from solon_events.devserver.app import ROUTES
from solon_events.devserver.encoders import RequestView
from solon_events.devserver.scenarios import plan


def long_args_frames(dialect: str, sections: int = 3) -> list[Any]:
    """The embedded provider's ``long-args`` turn, encoded as ``dialect`` sends it."""
    script = plan(RequestView(model=f"long-args:{sections}"))
    wire_type = next(wire for _path, wire, name in ROUTES if name == dialect)
    wire = wire_type("long-args", script.usage)
    return [frame for part in script.parts for frame in wire.encode(part)]  # type: ignore[union-attr]


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
