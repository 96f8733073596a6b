"""``python -m benchmarks.layout``: the package's layout in figures.

Prints the tree (one line per package and top-level module, with its modules and lines of
code), the import circles (strongly connected groups of modules, from grimp's import graph:
run-time imports, then with the ``if TYPE_CHECKING:`` ones too) and the imports that run
from a lower layer up to a higher one, by the layers of the import-linter contract in
``pyproject.toml`` (``--config`` names another file, e.g. an older layout's contract).
``tests/test_import_rules.py`` enforces the same contract; this prints what it measures.
Needs the ``test`` extra (import-linter, grimp).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Sequence
from pathlib import Path

import grimp
from importlinter.api import read_configuration

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "solon_events"


def tree(root: Path = ROOT / PACKAGE) -> list[str]:
    """One line per package (its own modules, not its subpackages') and top-level module."""
    rows: list[str] = []
    for path in sorted(root.iterdir()):
        if path.suffix == ".py":
            rows.append(f"{path.name:<40}{_lines(path):>7} lines")
    for package in sorted(p.parent for p in root.rglob("__init__.py")):
        modules = sorted(package.glob("*.py"))
        name = package.relative_to(root.parent).as_posix() + "/"
        lines = sum(_lines(path) for path in modules)
        rows.append(f"{name:<40}{lines:>7} lines in {len(modules)} modules")
    return rows


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def graph(*, with_type_checking: bool) -> grimp.ImportGraph:
    """The import graph of the package (every import statement, function-level included)."""
    return grimp.build_graph(
        PACKAGE, exclude_type_checking_imports=not with_type_checking, cache_dir=None
    )


def circles(import_graph: grimp.ImportGraph) -> list[list[str]]:
    """The groups of two or more modules that import each other, directly or not: a
    module with everything that both imports it and is imported by it."""
    groups: set[tuple[str, ...]] = set()
    for module in import_graph.modules:
        around = import_graph.find_upstream_modules(module) & import_graph.find_downstream_modules(
            module
        )
        if around:
            groups.add(tuple(sorted({module, *around})))
    return sorted(list(group) for group in groups)


def layers(config: Path) -> tuple[list[list[str]], set[tuple[str, str]]]:
    """The layers contract of ``config``: its layers (top first, full module names) and the
    imports it sets aside."""
    options = read_configuration(str(config))["contracts_options"]
    contract = next(c for c in options if c["type"] == "layers")
    container = contract["containers"][0]
    ordered = [
        [f"{container}.{name.strip().strip('()')}" for name in _split(layer)]
        for layer in contract["layers"]
    ]
    ignored = set()
    for expression in contract.get("ignore_imports", ()):
        importer, imported = (part.strip() for part in expression.split("->"))
        ignored.add((importer, imported))
    return ordered, ignored


def _split(layer: str) -> list[str]:
    for delimiter in ("|", ":"):
        if delimiter in layer:
            return layer.split(delimiter)
    return [layer]


def upward_imports(
    import_graph: grimp.ImportGraph, ordered: Sequence[Sequence[str]]
) -> list[tuple[str, str, int]]:
    """Each import (importer, imported, line) whose importer's layer is below the imported
    module's."""
    level: dict[str, int] = {}
    for depth, layer in enumerate(ordered):
        for name in layer:
            level[name] = depth

    def layer_of(module: str) -> int | None:
        parts = module.split(".")
        for end in range(len(parts), 0, -1):
            depth = level.get(".".join(parts[:end]))
            if depth is not None:
                return depth
        return None

    found = []
    for importer in sorted(import_graph.modules):
        below = layer_of(importer)
        for imported in sorted(import_graph.find_modules_directly_imported_by(importer)):
            above = layer_of(imported)
            if below is not None and above is not None and above < below:
                for detail in import_graph.get_import_details(importer=importer, imported=imported):
                    found.append((importer, imported, int(detail["line_number"])))
    return found


def _short(names: Iterable[str]) -> str:
    return " <-> ".join(name.removeprefix(f"{PACKAGE}.") for name in names)


def main(argv: Sequence[str] | None = None) -> None:
    """Print the tree, the circles and the upward imports."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.layout", description=__doc__)
    parser.add_argument("--config", type=Path, default=ROOT / "pyproject.toml")
    args = parser.parse_args(argv)
    print("== tree ==")
    for row in tree():
        print(row)
    run_time = graph(with_type_checking=False)
    for title, import_graph in (
        ("run-time imports", run_time),
        ("with TYPE_CHECKING imports", graph(with_type_checking=True)),
    ):
        found = circles(import_graph)
        print(f"== circles ({title}): {len(found)} ==")
        for group in found:
            print(_short(group))
    ordered, ignored = layers(args.config)
    found_up = upward_imports(run_time, ordered)
    for importer, imported in ignored:
        if run_time.direct_import_exists(importer=importer, imported=imported):
            run_time.remove_import(importer=importer, imported=imported)
    found = circles(run_time)
    print(f"== circles (run-time imports, those the contract sets aside left out): {len(found)} ==")
    for group in found:
        print(_short(group))
    print(f"== upward imports (run time, by the layers of {args.config.name}): {len(found_up)} ==")
    for importer, imported, line in found_up:
        note = "  (set aside by the contract)" if (importer, imported) in ignored else ""
        print(f"{_short([importer])}:{line} -> {_short([imported])}{note}")


if __name__ == "__main__":
    main()
