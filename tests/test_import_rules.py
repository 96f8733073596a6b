"""The import rules: the layers of the flow, no circles, and the sans-I/O modules.

The layers and the no-circle rule are import-linter contracts in ``pyproject.toml`` (the
Architecture page draws them); the tests below run them, check that they see a broken rule,
and that the only import they set aside is the display hooks' lazy one.

The sans-I/O rule: the event model, the core, wire/ and the dialects import no I/O framework.

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
from typing import Any

import grimp
import pytest
from importlinter.api import read_configuration
from importlinter.application.use_cases import SUCCESS, lint_imports
from importlinter.contracts.acyclic_siblings import AcyclicSiblingsContract
from importlinter.contracts.layers import LayersContract

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "solon_events"
FORBIDDEN = ("reactivex", "aiohttp", "asyncio")
PATTERNS = (
    "event_model/*.py",
    "support/redaction.py",
    "client/__init__.py",
    "client/retry.py",
    "client/estimate.py",
    "core/*.py",
    "wire/*.py",
    "dialects/*.py",
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
        assert f"solon_events.event_model.{name}" in SANS_IO
    for name in ("core", "core.normalizer", "core.session", "core.accumulator", "dialects.base"):
        assert f"solon_events.{name}" in SANS_IO
    for name in ("wire.sse", "wire.eventstream", "client.retry", "dialects.tool_calls"):
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
    source = "from ..event_model import errors\nfrom . import base\n"
    assert imports_of(source, "solon_events.dialects") == {
        "solon_events.event_model.errors",
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


# ---------------------------------------------------------------- layers and circles

DISPLAY_HOOKS = {
    "solon_events.event_model.display_hooks -> solon_events.display.html",
    "solon_events.event_model.display_hooks -> solon_events.display.pretty",
}


def _contracts() -> dict[str, dict[str, Any]]:
    options = read_configuration(str(ROOT / "pyproject.toml"))
    return {c["id"]: c for c in options["contracts_options"]}


def test_the_layers_and_no_circles_contracts_are_kept(capsys: pytest.CaptureFixture[str]) -> None:
    kept = lint_imports(str(ROOT / "pyproject.toml"), cache_dir=None, no_logo=True)
    printed = capsys.readouterr().out
    assert kept == SUCCESS, printed
    assert "Each layer imports only the layers below it KEPT" in printed
    assert "No import circles KEPT" in printed
    assert "Contracts: 2 kept, 0 broken." in printed


def test_every_package_and_module_is_in_a_layer_and_type_only_imports_do_not_count() -> None:
    contracts = _contracts()
    assert contracts["layers"]["exhaustive"] == "True"
    assert contracts["layers"]["containers"] == ["solon_events"]
    assert contracts["acyclic"]["ancestors"] == ["solon_events"]
    session = read_configuration(str(ROOT / "pyproject.toml"))["session_options"]
    assert session["exclude_type_checking_imports"] == "True"


def test_the_only_import_set_aside_is_the_display_hooks_lazy_one() -> None:
    contracts = _contracts()
    assert set(contracts["layers"]["ignore_imports"]) == DISPLAY_HOOKS
    assert set(contracts["acyclic"]["ignore_imports"]) == DISPLAY_HOOKS
    tree = ast.parse((PACKAGE / "event_model" / "display_hooks.py").read_text(encoding="utf-8"))
    top_level = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert all("display" not in (getattr(n, "module", "") or "") for n in top_level)
    lazy = {
        node.module
        for function in tree.body
        if isinstance(function, ast.FunctionDef)
        for node in ast.walk(function)
        if isinstance(node, ast.ImportFrom)
    }
    assert lazy == {"display.html", "display.pretty"}


def _contract(kind: type, contract_id: str) -> Any:
    options = dict(_contracts()[contract_id])
    name = options.pop("name")
    options.pop("type")
    session = read_configuration(str(ROOT / "pyproject.toml"))["session_options"]
    return kind(name=name, session_options=session, contract_options=options)


def _graph() -> grimp.ImportGraph:
    return grimp.build_graph("solon_events", exclude_type_checking_imports=True, cache_dir=None)


def test_the_layers_contract_sees_an_upward_import() -> None:
    contract = _contract(LayersContract, "layers")
    assert contract.check(_graph(), verbose=False).kept  # a check changes its graph
    for importer, imported in (
        ("solon_events.dialects.openai", "solon_events.client.model"),
        ("solon_events.event_model.events", "solon_events.display.table"),
        ("solon_events.adapters.vercel", "solon_events.operators"),  # independent siblings
    ):
        graph = _graph()
        graph.add_import(importer=importer, imported=imported)
        assert not contract.check(graph, verbose=False).kept, (importer, imported)


def test_the_circles_contract_sees_a_circle() -> None:
    contract = _contract(AcyclicSiblingsContract, "acyclic")
    assert contract.check(_graph(), verbose=False).kept
    graph = _graph()
    graph.add_import(importer="solon_events.core.sink", imported="solon_events.core.stages")
    assert not contract.check(graph, verbose=False).kept
    # ChatModel's fallback()/hedge() come from routing's base class: routing must not
    # import the model module back (it reads ChatPrompt from client.prompt)
    graph = _graph()
    assert graph.direct_import_exists(
        importer="solon_events.client.model", imported="solon_events.client.routing"
    )
    graph.add_import(importer="solon_events.client.routing", imported="solon_events.client.model")
    assert not contract.check(graph, verbose=False).kept


SOURCE_READERS = {
    "solon_events.wire.sse",
    "solon_events.wire.eventstream",
    "solon_events.dialects.sniff",
}
"""The decoders and the dialect sniffer: what telling a recorded source apart takes."""


def test_one_module_tells_a_source() -> None:
    """replay(), the recordings, ``solon-events replay`` and the embedded provider's
    ``--recording`` tell a source apart through ``sources`` alone, which reads it with
    the decoders and the sniffer below it."""
    graph = _graph()
    for user in (
        "solon_events.replay",
        "solon_events.recording",
        "solon_events.cli",
        "solon_events.devserver.server",
    ):
        assert not graph.find_modules_directly_imported_by(user) & SOURCE_READERS, user
        assert graph.chain_exists(importer=user, imported="solon_events.sources"), user
    assert graph.find_modules_directly_imported_by("solon_events.sources") >= SOURCE_READERS
    for module in ("solon_events.replay", "solon_events.recording", "solon_events.cli"):
        assert not graph.chain_exists(importer="solon_events.sources", imported=module), module
