"""What a partial JSON value may be, for the partial JSON and partial arguments tests."""

from __future__ import annotations

from typing import Any


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
