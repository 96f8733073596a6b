"""What a user of the installed package expects: one version, ``py.typed``, ``python -m``."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

import solon_events
from solon_events._moved import MOVED
from solon_events.cli import main


def test_the_version_is_written_once_and_the_installed_metadata_agrees() -> None:
    assert solon_events.__version__ == metadata.version("solon-events")
    assert solon_events.__version__.count(".") >= 2


def test_the_package_is_marked_typed() -> None:
    assert (Path(solon_events.__file__).parent / "py.typed").is_file()
    assert (
        any(str(f).endswith("solon_events/py.typed") for f in metadata.files("solon-events") or ())
        or (Path(solon_events.__file__).parent / "py.typed").is_file()
    )


def test_version_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.strip() == f"solon-events {solon_events.__version__}"


def python_dash_m(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m solon_events ARGS``, run to its end."""
    return subprocess.run(
        [sys.executable, "-m", "solon_events", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_python_dash_m_is_the_command() -> None:
    done = python_dash_m("--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"solon-events {solon_events.__version__}"
    helped = python_dash_m("--help")
    assert helped.returncode == 0 and "replay" in helped.stdout


def test_the_wheel_the_docs_build_holds_the_package_and_names_its_extras(tmp_path: Path) -> None:
    """docs/index.rst: ``python -m build``, then ``pip install dist/solon_events-*.whl``."""
    root = Path(__file__).resolve().parent.parent
    built = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(tmp_path), str(root)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = tmp_path.glob("solon_events-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        (metadata_name,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        metadata = archive.read(metadata_name).decode()
    assert {"solon_events/py.typed", "solon_events/serve/static/chat.html"} <= names
    assert "solon_events/event_model/extras.py" in names
    assert {old.replace(".", "/") + ".pyi" for old in MOVED} <= names  # the old names' stubs
    assert "Requires-Dist: docstring-parser" in metadata  # no warning on the demo's screen
    for extra in ("tools", "mcp", "agui", "redis", "otel", "notebook", "structured", "bedrock"):
        assert f"Provides-Extra: {extra}" in metadata
    # installed from the wheel (its dependencies are this environment's), the demo runs
    target = tmp_path / "installed"
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "-t", str(target), str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert installed.returncode == 0, installed.stderr
    code = (
        "import solon_events.cli as cli; print(cli.__file__); raise SystemExit(cli.main(['demo']))"
    )
    demo = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(target)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert demo.returncode == 0 and demo.stderr == "", demo.stderr
    assert demo.stdout.startswith(str(target / "solon_events" / "cli" / "__init__.py"))
    assert "It is 18°C and sunny in Paris right now." in demo.stdout
