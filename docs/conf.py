"""Sphinx configuration of the solon_events documentation.

Build with ``.venv/bin/sphinx-build -W --keep-going -b html docs docs/_build/html`` after
``.venv/bin/pip install -e '.[docs]'``. The API pages under ``docs/api/`` are written at
the start of every build from the package's ``__all__`` lists (``_ext/api_pages.py``); a
public name autodoc did not render is a warning, so an error under ``-W``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))

import api_pages  # noqa: E402

from solon_events import __version__  # noqa: E402

project = "solon_events"
author = "the solon_events authors"
copyright = "the solon_events authors"
release = version = __version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
]
exclude_patterns = ["_build", "_ext", "_generated"]
html_theme = "furo"
html_title = f"solon_events {release}"

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_typehints_format = "short"
autodoc_class_signature = "mixed"
napoleon_google_docstring = True
napoleon_numpy_docstring = False
suppress_warnings = ["ref.python"]  # "more than one target for cross-reference" (re-exports)


_API: dict[str, Any] = {}


def _write_api(app: Any) -> None:
    _API["table"] = api_pages.write_pages(Path(app.srcdir) / "api")
    api_pages.write_cli_help(Path(app.srcdir) / "_generated" / "cli-help.rst")


def _check_api(app: Any, env: Any) -> None:
    from sphinx.util import logging

    documented = set(env.get_domain("py").objects)
    for name in api_pages.missing_entries(_API["table"], documented):
        logging.getLogger(__name__).warning("public name with no rendered API entry: %s", name)


def setup(app: Any) -> None:
    """Write the API pages when the build starts; check them when it has read everything."""
    app.connect("builder-inited", _write_api)
    app.connect("env-check-consistency", _check_api)
