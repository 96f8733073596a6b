"""The test suite's layout: its helper modules (every ``tests/*.py`` not named ``test_*.py``,
conftest included) are what test modules import, and never import a test module
themselves: a helper that does runs that test module's imports and definitions in every
module using the helper, and under ``--import-mode=importlib`` (where test modules are not
importable by their bare names) it breaks them all."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
HELPERS = sorted(path for path in TESTS.glob("*.py") if not path.name.startswith("test_"))


def imported(path: Path) -> set[str]:
    """The top-level names of the modules ``path`` imports (absolute imports only)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_there_are_helpers_to_check() -> None:
    assert {"conftest.py", "final_texts.py", "dialect_runs.py"} <= {p.name for p in HELPERS}


@pytest.mark.parametrize("path", HELPERS, ids=lambda path: path.name)
def test_a_helper_module_imports_no_test_module(path: Path) -> None:
    assert sorted(name for name in imported(path) if name.startswith("test_")) == []


@pytest.mark.parametrize("path", sorted(TESTS.glob("test_*.py")), ids=lambda path: path.name)
def test_a_test_module_imports_no_other_test_module(path: Path) -> None:
    assert sorted(name for name in imported(path) if name.startswith("test_")) == []
