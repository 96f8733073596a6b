"""Each moved module still imports from its old name for one release, with a warning.

The old name gives the very module at the new name (its public and private names, the
same objects), and the import warns with a DeprecationWarning naming the new name and the
line that imported the old one.
"""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from type_checks import ROOT, mypy_output

import solon_events
from solon_events._moved import MOVED


def _forget(name: str) -> None:
    sys.modules.pop(name, None)
    parent, _, child = name.rpartition(".")
    if parent in sys.modules and sys.modules[parent].__dict__.get(child) is not None:
        delattr(sys.modules[parent], child)


@pytest.mark.parametrize("old", sorted(MOVED))
def test_the_old_name_is_the_new_module_with_a_deprecation_warning(old: str) -> None:
    new = importlib.import_module(MOVED[old])
    _forget(old)
    with pytest.warns(DeprecationWarning, match=rf"{old} moved to {MOVED[old]}") as caught:
        module = importlib.import_module(old)
    assert module is new
    assert caught[0].filename == __file__  # the line that imported the old name
    for name in getattr(new, "__all__", ()):
        assert getattr(module, name) is getattr(new, name)


def test_the_suite_fails_a_test_that_imports_an_old_name() -> None:
    """pyproject's filterwarnings makes the project's own DeprecationWarning an error in the
    suite (outside pytest.warns, as in the tests above), so no test leans on an old name."""
    _forget("solon_events.core.json_path")
    with pytest.raises(DeprecationWarning, match=r"solon_events\.core\.json_path moved to"):
        importlib.import_module("solon_events.core.json_path")


def test_from_import_of_an_old_name_and_the_package_attribute() -> None:
    _forget("solon_events.transport")
    with pytest.warns(DeprecationWarning, match="solon_events.client.transport"):
        from solon_events.transport import ReplayTransport
    from solon_events.client.transport import ReplayTransport as moved

    assert ReplayTransport is moved
    _forget("solon_events.sse")
    with pytest.warns(DeprecationWarning, match="solon_events.wire.sse"):
        assert solon_events.sse is importlib.import_module("solon_events.wire.sse")
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        _ = solon_events.nothing_here


def test_type_checkers_see_each_old_name_as_the_new_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user's ``from solon_events.model import ChatModel`` type-checks: a stub at each old
    path re-exports the new module (the finder that serves the old names at run time is
    invisible to mypy)."""
    for old, new in MOVED.items():
        stub = ROOT / (old.replace(".", "/") + ".pyi")
        last = stub.read_text(encoding="utf-8").splitlines()[-1]
        assert last == f"from {new} import *  # noqa: F403"
    out = mypy_output(
        [
            "from solon_events.model import ChatModel",
            "from solon_events.core.json_path import JsonPathAssembler",
            "reveal_type(ChatModel('http://127.0.0.1:1/v1/chat/completions', 'm'))",
            "reveal_type(JsonPathAssembler)",
            "ChatModel(model=1)",
        ],
        tmp_path,
        monkeypatch,
    )
    revealed = re.findall(r'user\.py:\d+: note: Revealed type is "(.*)"', out)
    assert revealed[0] == "solon_events.client.model.ChatModel"
    assert revealed[1].startswith("def ") and "solon_events.dialects.json_path" in revealed[1]
    errors = re.findall(r"user\.py:(\d+): error: (.*)", out)
    assert {line for line, _ in errors} == {"5"}, out  # the wrong call, nothing else
    assert any(text.startswith('Argument "model" to "ChatModel"') for _, text in errors)


def test_new_names_import_without_a_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        for new in MOVED.values():
            importlib.import_module(new)


def test_a_script_importing_an_old_name_is_shown_the_warning() -> None:
    result = subprocess.run(
        [sys.executable, "-c", "import solon_events.render"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "<string>:1: DeprecationWarning: solon_events.render moved to" in result.stderr
    assert "solon_events.display.render" in result.stderr
