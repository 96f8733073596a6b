"""How the value tests copy a value: ``copy.copy``, ``copy.deepcopy`` or a pickle round trip."""

from __future__ import annotations

import copy
import pickle
from typing import TypeVar

V = TypeVar("V")

WAYS = ("copy", "deepcopy", "pickle")


def copied(value: V, how: str) -> V:
    """``value`` copied the way ``how`` (one of :data:`WAYS`) names."""
    if how == "copy":
        return copy.copy(value)
    if how == "deepcopy":
        return copy.deepcopy(value)
    return pickle.loads(pickle.dumps(value))  # type: ignore[no-any-return]
