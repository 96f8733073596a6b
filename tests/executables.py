"""The machine's programs a test needs: found, or the test skipped (failed in CI); and this
Python in a fresh process."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

__all__ = ["executable_or_skip", "run_python"]


def executable_or_skip(*names: str, package: str) -> str:
    """The first of ``names`` on the PATH; skips the test when none is installed, fails it
    in CI (``.ci/run`` installs Debian's ``package``)."""
    for name in names:
        found = shutil.which(name)
        if found is not None:
            return found
    if os.environ.get("CI"):
        pytest.fail(f"{names[0]} is missing in CI: .ci/run installs Debian's {package}")
    pytest.skip(f"{names[0]} is not installed (apt-get install {package}; .ci/run does)")


def run_python(code: str, *, check: bool = False) -> subprocess.CompletedProcess[str]:
    """This interpreter running ``code`` in a fresh process (its imports its own: a test
    that blocks a module in ``sys.modules`` blocks it there only), its output captured as
    text; ``check``: a non-zero exit raises."""
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=check
    )
