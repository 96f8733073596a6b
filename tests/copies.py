"""How the value tests copy a value (``copy.copy``, ``copy.deepcopy`` or a pickle round trip)
and compare a value built one way with one built another."""

from __future__ import annotations

import copy
import pickle
from collections.abc import Sequence
from typing import Any, TypeVar

import attrs

V = TypeVar("V")

WAYS = ("copy", "deepcopy", "pickle")


def copied(value: V, how: str) -> V:
    """``value`` copied the way ``how`` (one of :data:`WAYS`) names."""
    if how == "copy":
        return copy.copy(value)
    if how == "deepcopy":
        return copy.deepcopy(value)
    return pickle.loads(pickle.dumps(value))  # type: ignore[no-any-return]


def assert_built_alike(built: Any, expected: Any) -> None:
    """``built`` is of ``expected``'s class and holds the same field values, compared field
    by field (``==`` leaves some fields out)."""
    assert type(built) is type(expected)
    assert attrs.asdict(built, recurse=False) == attrs.asdict(expected, recurse=False)


def keywords(names: str, values: Sequence[Any]) -> dict[str, Any]:
    """``values`` named by ``names`` (space-separated, in order): the keyword arguments that
    the values a positional builder takes stand for."""
    return dict(zip(names.split(), values, strict=True))
