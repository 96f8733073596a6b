"""The packages of the test extra: a test that needs one imports it through
:func:`needed`, which fails (never skips) when it is missing, so that a stale environment
cannot hide the tests of an official SDK, uvloop, matplotlib or mypy (#42)."""

from __future__ import annotations

import importlib
from typing import Any

import pytest

__all__ = ["needed"]


def needed(module: str) -> Any:
    """``module`` (a package of the test extra), imported; the test fails, saying how to
    install it, when it is missing."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        pytest.fail(
            f"{module} is missing, and the tests need it: install the test extra "
            f"(.venv/bin/pip install -e '.[test]'; {type(exc).__name__}: {exc})",
            pytrace=False,
        )
