"""The sans-I/O rule: the event model, the core, sse and the dialects import no I/O framework.

``solon_events/__init__.py`` re-exports everything (operators included), so importing any
submodule the ordinary way loads reactivex through the package. The rule is about each
module's own dependencies, checked two ways:

* statically, by parsing every import statement of the module (function-level imports
  included, ``if TYPE_CHECKING:`` blocks excluded) and following imports of other
  ``solon_events`` modules, which must themselves be sans-I/O modules;
* dynamically, by importing the module in a fresh interpreter where ``solon_events`` is a
  bare namespace (its ``__init__`` not run) and looking at ``sys.modules``.

Modules that do not exist yet are simply absent from the globs below.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "solon_events"
FORBIDDEN = ("reactivex", "aiohttp", "asyncio")
PATTERNS = (
    "events.py",
    "results.py",
    "values.py",
    "filters.py",
    "errors.py",
    "extras.py",
    "messages.py",
    "redaction.py",
    "client/__init__.py",
    "client/retry.py",
    "core/*.py",
    "wire/*.py",
    "dialects/*.py",
    "display_hooks.py",
    "display/html.py",
    "display/pretty.py",
    "display/values.py",
)
FILES = sorted({path for pattern in PATTERNS for path in PACKAGE.glob(pattern)})


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


SANS_IO = {module_name(path) for path in FILES}
IDS = [str(path.relative_to(PACKAGE)) for path in FILES]


def test_the_globs_find_the_foundation_modules() -> None:
    for name in ("events", "results", "filters", "errors", "messages"):
        assert f"solon_events.{name}" in SANS_IO
    for name in ("core", "core.normalizer", "core.session", "core.accumulator", "dialects.base"):
        assert f"solon_events.{name}" in SANS_IO


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node except those under ``if TYPE_CHECKING:`` (their ``else`` is kept)."""
    nodes: list[ast.AST] = []
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        nodes.append(node)
        if isinstance(node, ast.If) and _is_type_checking(node):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))
    return nodes


def imported_modules(path: Path) -> set[str]:
    """The absolute names of every module ``path`` imports at run time."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    return imports_of(path.read_text(encoding="utf-8"), package)


def imports_of(source: str, package: str) -> set[str]:
    """The absolute names of every module ``source`` (a module of ``package``) imports."""
    found: set[str] = set()
    for node in _runtime_nodes(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")
                base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                base = ".".join(base_parts)
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            if target.split(".")[0] != "solon_events":
                found.add(target)
                continue
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                found.add(submodule if _is_package_module(submodule) else target)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, (ast.Attribute, ast.Name))
            and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
            and not node.args[0].value.startswith(".")
        ):
            found.add(node.args[0].value)
    return found


def _is_package_module(name: str) -> bool:
    return (PACKAGE.joinpath(*name.split(".")[1:]).with_suffix(".py")).exists() or (
        PACKAGE.joinpath(*name.split(".")[1:], "__init__.py")
    ).exists()


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_no_forbidden_import_statically(path: Path) -> None:
    imports = imported_modules(path)
    for module in imports:
        assert module.split(".")[0] not in FORBIDDEN, f"{path.name} imports {module}"
        if module == "solon_events":
            pytest.fail(f"{path.name} imports the solon_events package itself (operators)")
        if module.startswith("solon_events.") and _is_package_module(module):
            assert module in SANS_IO, f"{path.name} imports {module}, which is not sans-I/O"


def test_the_static_check_sees_what_it_must() -> None:
    source = (
        "from __future__ import annotations\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    import reactivex\n"
        "def f():\n    import asyncio\n"
        "from ..operators import aggregate\n"
    )
    found = imports_of(source, "solon_events.dialects")
    assert "asyncio" in found
    assert "reactivex" not in found
    assert "solon_events.operators" in found
    assert imports_of("from .. import errors\nfrom . import base\n", "solon_events.dialects") == {
        "solon_events.errors",
        "solon_events.dialects.base",
    }
    assert "solon_events" in imports_of("from solon_events import ChatEvent\n", "solon_events")
    assert imports_of("import aiohttp.web\n", "solon_events") == {"aiohttp.web"}


_PROBE = """
import importlib, json, sys, types
package = types.ModuleType("solon_events")
package.__path__ = [{package!r}]
sys.modules["solon_events"] = package
importlib.import_module({name!r})
print(json.dumps(sorted(m for m in {forbidden!r} if m in sys.modules)))
"""


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_no_forbidden_module_loaded_at_import(path: Path) -> None:
    name = module_name(path)
    code = _PROBE.format(package=str(PACKAGE), name=name, forbidden=FORBIDDEN)
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1]) == [], f"{name} loads them"


def test_the_probe_sees_a_forbidden_import() -> None:
    code = _PROBE.format(package=str(PACKAGE), name="solon_events.operators", forbidden=FORBIDDEN)
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert "reactivex" in json.loads(result.stdout.strip().splitlines()[-1])
