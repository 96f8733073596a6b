"""mypy on a few lines of a caller, as a user's type checker reads the package."""

from __future__ import annotations

from pathlib import Path

import pytest
from extra_modules import needed

__all__ = ["ROOT", "mypy_output"]

ROOT = Path(__file__).resolve().parent.parent


def mypy_output(lines: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """What mypy says of ``lines`` (written to ``user.py``), run in the checkout so that it
    finds the package there, with the project's settings; skips the test without mypy (the
    ``test`` extra has it)."""
    api = needed("mypy.api")
    monkeypatch.chdir(ROOT)
    snippet = tmp_path / "user.py"
    snippet.write_text("\n".join(lines) + "\n", encoding="utf-8")
    config, cache = str(ROOT / "pyproject.toml"), str(ROOT / ".mypy_cache")
    out, err, _ = api.run([str(snippet), "--config-file", config, "--cache-dir", cache])
    assert err == ""
    return out
