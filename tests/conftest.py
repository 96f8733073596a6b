"""Fixtures shared by the test modules."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest


@pytest.fixture
def record_frames(monkeypatch: pytest.MonkeyPatch) -> Callable[[ModuleType, str], list[Any]]:
    """``record_frames(module, name)``: wrap the dialect function ``module.name(ctx, frame)``
    for the test, and return the list of frames it is called with."""

    def wrap(module: ModuleType, name: str) -> list[Any]:
        frames: list[Any] = []
        real = getattr(module, name)

        def recorded(ctx: Any, frame: Any) -> None:
            frames.append(frame)
            real(ctx, frame)

        monkeypatch.setattr(module, name, recorded)
        return frames

    return wrap
