"""The documentation's API reference covers every public name (``docs/_ext/api_pages.py``).

``.ci/run`` builds the site with warnings as errors, and the build itself warns about any
entry autodoc did not render; these tests check what the pages ask autodoc for.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

import solon_events

DOCS = Path(__file__).resolve().parents[1] / "docs"
sys.path.insert(0, str(DOCS / "_ext"))
api_pages = importlib.import_module("api_pages")


@pytest.fixture(scope="module")
def table() -> dict[str, list]:
    return api_pages.entries()


def test_every_name_of_the_package_is_rendered_under_the_package(table: dict) -> None:
    listed = {entry.name: entry for entry in table["solon_events"]}
    assert set(listed) == set(solon_events.__all__)
    assert all(entry.target is None for entry in listed.values())


def test_every_public_name_of_every_module_has_one_rendered_entry(table: dict) -> None:
    rendered = {e.full_name for listed in table.values() for e in listed if e.target is None}
    for module in api_pages.public_modules():
        names = [entry.name for entry in table[module.__name__]]
        assert names == list(module.__all__), module.__name__
        for entry in table[module.__name__]:
            assert entry.target is None or entry.target in rendered, entry
    assert "solon_events.adapters.to_vercel" in rendered
    assert "solon_events.display.live" in rendered
    assert "solon_events.client.transport.ReplayTransport" in rendered
    assert "solon_events.core.partial_json.PartialJsonParser" not in rendered  # re-exported


def test_the_pages_ask_autodoc_for_each_rendered_entry(tmp_path: Path) -> None:
    table = api_pages.write_pages(tmp_path)
    text = {path.stem: path.read_text() for path in tmp_path.glob("*.rst")}
    assert set(text) == {*table, "index"}
    for module, listed in table.items():
        assert f".. automodule:: {module}" in text[module]
        assert f"   {module}" in text["index"]
        for entry in listed:
            if entry.target is None:
                assert f":: {entry.full_name}\n" in text[module], entry
            else:
                assert f"`{entry.target}`" in text[module], entry


def test_every_module_is_documented() -> None:
    names = {module.__name__ for module in api_pages.public_modules()}
    assert {"solon_events.serve.redis_log", "solon_events.serve", "solon_events.recording"} <= names
    assert "solon_events._version" not in names
    assert all(module.__doc__ for module in api_pages.public_modules())


def test_the_package_page_starts_with_the_way_in_then_the_events(tmp_path: Path) -> None:
    api_pages.write_pages(tmp_path)
    page = (tmp_path / "solon_events.rst").read_text()
    rendered = [
        line.split("::")[1].strip()
        for line in page.splitlines()
        if line.startswith(".. auto") and "automodule" not in line
    ]
    names = [name.removeprefix("solon_events.") for name in rendered]
    assert names[:2] == ["ChatModel", "ChatPrompt"]
    events = set(importlib.import_module("solon_events.event_model.events").__all__)
    assert set(names[2 : 2 + len(events)]) == events
    index = (tmp_path / "index.rst").read_text().split(".. toctree::")[1].split()
    modules = [word for word in index if word.startswith("solon_events")]
    assert modules[:3] == [
        "solon_events",
        "solon_events.client.model",
        "solon_events.event_model.events",
    ]


def test_the_front_page_installs_from_a_checkout_or_a_wheel() -> None:
    text = (DOCS / "index.rst").read_text()
    assert "pip install solon-events" not in text  # not published: it would fail
    assert ".venv/bin/pip install . && .venv/bin/solon-events demo" in text
    assert "python -m build" in text and "pip install dist/solon_events-*.whl" in text
