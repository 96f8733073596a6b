"""What a user of the installed package expects: one version, ``py.typed``, ``python -m``."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

import solon_events
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
