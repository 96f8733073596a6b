"""The machine's programs a test needs: found, or the test skipped (failed in CI)."""

from __future__ import annotations

import os
import shutil

import pytest

__all__ = ["executable_or_skip"]


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
