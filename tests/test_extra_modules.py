"""A package of the test extra that is missing fails its tests, never skips them (#42): a
stale environment (an SDK not installed after the extra grew) cannot hide them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from extra_modules import needed

TESTS = Path(__file__).resolve().parent


def test_a_missing_package_fails_the_test_saying_how_to_install_it() -> None:
    with pytest.raises(pytest.fail.Exception, match=r"pip install -e '\.\[test\]'"):
        needed("solon_events_no_such_sdk")
    assert needed("json").dumps([]) == "[]"


def test_no_test_skips_for_a_missing_package() -> None:
    skipping = [
        f"{path.name}:{number}"
        for path in sorted(TESTS.glob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"\bimportorskip\(", line) and path.name != Path(__file__).name
    ]
    assert skipping == [], "use extra_modules.needed(), which fails: " + ", ".join(skipping)
