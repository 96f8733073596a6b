"""docs/architecture.rst matches the tree, the layer contract and the moved modules.

A package or top-level module missing from the page, a name on it that is not in the tree,
layers in another order than ``pyproject.toml``'s contract, or a moved module the page does
not list: each fails here.
"""

from __future__ import annotations

import re
from pathlib import Path

from importlinter.api import read_configuration

from solon_events._moved import MOVED

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "solon_events"
PAGE = (ROOT / "docs" / "architecture.rst").read_text(encoding="utf-8")


def _section(title: str) -> str:
    start = PAGE.index(f"\n{title}\n")
    following = re.search(r"\n[^\n]+\n-{3,}\n", PAGE[start + len(title) + 2 :])
    end = start + len(title) + 2 + following.start() if following else len(PAGE)
    return PAGE[start:end]


def _first_cells(table: str) -> list[str]:
    """The first cell of each row of a list-table (header row left out)."""
    return re.findall(r"^   \* - (.+)$", table, re.MULTILINE)[1:]


def _layer_names(cell: str) -> set[str]:
    text = cell.replace("(independent)", "")
    return {name.strip().strip("`").rstrip("/") for name in re.split(r"[|:]", text)}


def _contract() -> dict:
    options = read_configuration(str(ROOT / "pyproject.toml"))["contracts_options"]
    return next(c for c in options if c["type"] == "layers")


def test_the_layers_are_the_contracts_in_its_order() -> None:
    page = [_layer_names(cell) for cell in _first_cells(_section("The layers"))]
    contract = [_layer_names(layer) for layer in _contract()["layers"]]
    assert page == contract


def test_every_package_and_top_level_module_is_named_on_the_page() -> None:
    packages = {
        path.parent.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("__init__.py")
        if path.parent != PACKAGE
    }
    modules = {path.stem for path in PACKAGE.glob("*.py") if path.stem != "__init__"}
    missing = [name for name in sorted(packages) if f"``{name}/``" not in PAGE]
    missing += [name for name in sorted(modules) if not re.search(rf"\b{name}\b", PAGE)]
    assert missing == []


def test_every_path_the_page_names_is_in_the_tree() -> None:
    named = set(re.findall(r"``([\w/]+(?:/|\.py))``", PAGE))
    assert named, "the page names no path"
    for name in named:
        assert (PACKAGE / name).exists() or (ROOT / name).exists(), name


def test_the_moved_modules_are_the_page_s() -> None:
    cells = re.findall(
        r"^   \* - ``(solon_events[\w.]*)``\n     - ``(solon_events[\w.]*)``$",
        _section("Moved modules"),
        re.MULTILINE,
    )
    assert dict(cells) == MOVED


def test_the_page_is_in_the_table_of_contents() -> None:
    index = (ROOT / "docs" / "index.rst").read_text(encoding="utf-8")
    assert re.search(r"^   architecture$", index, re.MULTILINE)
