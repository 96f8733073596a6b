"""The API reference pages, written from the package's own ``__all__`` lists.

Every module of ``solon_events`` (private ones aside) declares its public names in
``__all__``. Each public object gets one rendered entry, under the first module that
exports it in import order (the package ``solon_events`` first, then each subpackage before
its own modules), so ``solon_events.ChatEvent`` is documented once and
``solon_events.event_model.events`` points to it. :func:`write_pages` writes ``docs/api/*.rst``
when the
build starts; :func:`check_rendered` warns (an error under ``-W``) about any entry autodoc
did not render.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import itertools
import pkgutil
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import attrs

PACKAGE = "solon_events"
SKIPPED = ("solon_events._version", "solon_events.__main__")
"""Modules with no reference page: the version string and ``python -m``'s entry point."""
WAY_IN = ("ChatModel", "ChatPrompt")
"""The names a reader starts from: first on the package's page."""
LEAD_MODULES = (PACKAGE, f"{PACKAGE}.client.model", f"{PACKAGE}.event_model.events")
"""The pages listed first in the index: the package, the model, the events."""


@attrs.frozen
class Entry:
    """One public name of one module: rendered here (``target`` is None) or elsewhere."""

    module: str
    name: str
    kind: str  # "class", "function", "data" or "exception"
    target: str | None = None  # the full name of the entry that documents it, if elsewhere

    @property
    def full_name(self) -> str:
        """``module.name``."""
        return f"{self.module}.{self.name}"


def public_modules() -> list[ModuleType]:
    """Every documented module, the package first, each package before its own modules."""
    package = importlib.import_module(PACKAGE)
    names = [PACKAGE] + [
        info.name
        for info in pkgutil.walk_packages(package.__path__, PACKAGE + ".")
        if info.name not in SKIPPED and not info.name.rsplit(".", 1)[-1].startswith("_")
    ]
    modules = [importlib.import_module(name) for name in names]
    # a package before its modules, siblings in alphabetical order
    return sorted(modules, key=lambda m: m.__name__.split("."))


def _kind(value: Any) -> str:
    if inspect.isclass(value):
        return "exception" if issubclass(value, BaseException) else "class"
    if inspect.isfunction(value) or inspect.isbuiltin(value):
        return "function"
    return "data"


def _identity(value: Any) -> object:
    """What makes two exported names the same object (plain values by type and value)."""
    if isinstance(value, (str, int, float, bool, bytes, type(None))):
        return (type(value), value)
    return id(value)


def _defines(module: ModuleType, name: str) -> bool:
    """True when ``module``'s source documents ``name``: an assignment followed by a string."""
    try:
        tree = ast.parse(inspect.getsource(module))
    except (OSError, TypeError):  # no source to read
        return False
    body = tree.body
    for statement, after in itertools.pairwise(body):
        targets = (
            statement.targets
            if isinstance(statement, ast.Assign)
            else [statement.target]
            if isinstance(statement, ast.AnnAssign)
            else []
        )
        if any(isinstance(t, ast.Name) and t.id == name for t in targets) and (
            isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            return True
    return False


def entries(modules: list[ModuleType] | None = None) -> dict[str, list[Entry]]:
    """Each module's public names in ``__all__`` order, each object rendered once.

    A class or function is rendered where it is first exported; a plain value (which
    carries no docstring of its own) where its documented assignment is, when that module
    exports it too.
    """
    modules = modules or public_modules()
    owner: dict[object, str] = {}
    for module in modules:
        for name in module.__all__:
            value = getattr(module, name)
            key = _identity(value)
            if key not in owner or (_kind(value) == "data" and _defines(module, name)):
                if _kind(value) != "data" and key in owner:
                    continue
                owner[key] = f"{module.__name__}.{name}"
    out: dict[str, list[Entry]] = {}
    for module in modules:
        listed = []
        for name in module.__all__:
            value = getattr(module, name)
            full_name = f"{module.__name__}.{name}"
            target = owner[_identity(value)]
            entry = Entry(
                module.__name__, name, _kind(value), None if target == full_name else target
            )
            listed.append(entry)
        out[module.__name__] = listed
    return out


def reading_order(module: str, listed: list[Entry]) -> list[Entry]:
    """``listed`` in the order a reader meets them: on the package's page ChatModel and
    ChatPrompt (the way in), then the event model (``solon_events.event_model.events``), then
    the rest in ``__all__`` order; any other page as its ``__all__`` lists them."""
    if module != PACKAGE:
        return listed
    events = importlib.import_module(f"{PACKAGE}.event_model.events").__all__

    def rank(entry: Entry) -> tuple[int, int]:
        if entry.name in WAY_IN:
            return 0, WAY_IN.index(entry.name)
        return (1 if entry.name in events else 2), 0

    return sorted(listed, key=rank)  # stable: __all__ order within each group


def _page(module: str, listed: list[Entry], shadowed: set[str]) -> Iterator[str]:
    title = f"``{module}``"
    yield title
    yield "=" * len(title)
    yield ""
    yield f".. automodule:: {module}"
    if module in shadowed:
        yield "   :no-index:"  # a function of the same full name is documented
    yield ""
    for entry in reading_order(module, listed):
        if entry.target is None:
            directive = {"data": "autodata", "function": "autofunction"}.get(entry.kind)
            directive = directive or ("autoexception" if entry.kind == "exception" else "autoclass")
            yield f".. {directive}:: {entry.full_name}"
            if directive in ("autoclass", "autoexception"):
                yield "   :members:"
                yield "   :show-inheritance:"
            if directive == "autodata":
                yield "   :no-value:"
            yield ""
    elsewhere = [entry for entry in listed if entry.target is not None]
    if elsewhere:
        yield "Also exported here, documented where first exported:"
        yield ""
        for entry in elsewhere:
            role = {"function": "func", "data": "data"}.get(entry.kind, "class")
            role = "exc" if entry.kind == "exception" else role
            yield f"- ``{entry.name}``: :py:{role}:`{entry.target}`"
        yield ""


def write_pages(out_dir: Path) -> dict[str, list[Entry]]:
    """Write one page per module and an index into ``out_dir``; returns the entries."""
    table = entries()
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob("*.rst"):
        old.unlink()
    index = [
        "API reference",
        "=============",
        "",
        "Every public name of every module, generated from the docstrings. A name that",
        "several modules export is documented where it is first exported (the package",
        "``solon_events`` first); the other modules link to it. The package's page starts",
        "where a reader does, with :class:`~solon_events.ChatModel` and",
        ":class:`~solon_events.ChatPrompt`, then the events.",
        "",
        ".. toctree::",
        "   :maxdepth: 1",
        "",
    ]
    rendered = {e.full_name for listed in table.values() for e in listed if e.target is None}
    shadowed = rendered & set(table)
    for module, listed in table.items():
        page = _page(module, listed, shadowed)
        (out_dir / f"{module}.rst").write_text("\n".join(page) + "\n")
    leading = [module for module in LEAD_MODULES if module in table]
    index += [f"   {module}" for module in [*leading, *(m for m in table if m not in leading)]]
    (out_dir / "index.rst").write_text("\n".join(index) + "\n")
    return table


def missing_entries(table: dict[str, list[Entry]], documented: set[str]) -> list[str]:
    """The full names of ``table`` that should be rendered but are not in ``documented``."""
    return [
        entry.full_name
        for listed in table.values()
        for entry in listed
        if entry.target is None and entry.full_name not in documented
    ]


def write_cli_help(path: Path) -> None:
    """Write the ``--help`` of ``solon-events`` and of each of its commands, as reST."""
    import argparse
    import os

    from solon_events.cli import build_parser

    os.environ["COLUMNS"] = "88"  # argparse wraps at the terminal's width
    parser = build_parser()
    sections = [("solon-events", parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            sections += [(f"solon-events {name}", sub) for name, sub in action.choices.items()]
    lines: list[str] = []
    for title, command in sections:
        lines += [f"``{title}``", "-" * (len(title) + 4), "", ".. code-block:: text", ""]
        lines += [f"    {line}".rstrip() for line in command.format_help().splitlines()]
        lines.append("")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
