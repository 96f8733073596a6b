"""Descriptions from docstrings: the function's, and each parameter's.

Google (``Args:``), NumPy (``Parameters`` over a rule) and reST (``:param x:``) docstrings are
read by the ``docstring-parser`` library (the ``tools`` extra). Without it a tool still works:
its description is the docstring's first paragraph, its parameters have none, and one warning
says what to install when a docstring has a parameter section that goes unread.
"""

from __future__ import annotations

import inspect
import os
import re
import sys
import warnings
from typing import Any, NamedTuple

__all__ = ["DocInfo", "class_doc", "parse_docstring"]

INSTALL_HINT = "pip install 'solon-events[tools]'"
"""What to run for parameter descriptions read from docstrings."""

# Google and NumPy section names docstring-parser's Google reader does not know by default.
_EXTRA_GOOGLE_SECTIONS = ("Keyword Args", "Keyword Arguments", "Kwargs", "Other Parameters")

# Only to notice, without the library, that parameter descriptions are being dropped.
_PARAMETER_SECTION = re.compile(
    r"^\s*(?:(?:Args|Arguments|Parameters|Params|Attributes|Keyword Args|Keyword Arguments"
    r"|Other Parameters):\s*$|(?:Parameters|Attributes)\s*\n\s*-{3,}\s*$"
    r"|:(?:param|parameter|arg|argument|key|keyword)\s)",
    re.MULTILINE,
)

_warned = False


class DocInfo(NamedTuple):
    """What a docstring tells a model: a description, and one per parameter name."""

    description: str
    params: dict[str, str]


def parse_docstring(doc: str | None) -> DocInfo:
    """The description and parameter descriptions of a raw (uncleaned) docstring."""
    if not doc or not doc.strip():
        return DocInfo("", {})
    try:
        import docstring_parser
    except ImportError:
        return _summary_only(doc)
    parsed = _best_parse(docstring_parser, doc)
    params: dict[str, str] = {}
    for param in parsed.params:
        lines = (param.description or "").splitlines()
        text = " ".join(line.strip() for line in lines if line.strip())
        for name in param.arg_name.split(","):
            if name.strip():
                params.setdefault(name.strip().lstrip("*"), text.strip())
    return DocInfo((parsed.description or "").strip(), params)


def _best_parse(library: Any, doc: str) -> Any:
    """The reading with the most parameters, trying Google first (as the library's AUTO does).

    The Google reader is given the extra parameter sections Python projects commonly use.
    """
    from docstring_parser.google import DEFAULT_SECTIONS, GoogleParser, Section, SectionType

    extra = [Section(title, "param", SectionType.MULTIPLE) for title in _EXTRA_GOOGLE_SECTIONS]
    readings = []
    for read in (
        GoogleParser([*DEFAULT_SECTIONS, *extra]).parse,
        lambda t: library.parse(t, library.DocstringStyle.REST),
        lambda t: library.parse(t, library.DocstringStyle.NUMPYDOC),
    ):
        try:
            readings.append(read(doc))
        except library.ParseError:
            continue
    if not readings:
        return library.parse(doc)
    return max(readings, key=lambda reading: len(reading.params))


def _summary_only(doc: str) -> DocInfo:
    global _warned
    text = inspect.cleandoc(doc)
    if not _warned and _PARAMETER_SECTION.search(text):
        _warned = True
        warnings.warn(
            "solon_events: parameter descriptions in tool docstrings are skipped because "
            f"docstring-parser is not installed; {INSTALL_HINT} to send them to the model",
            stacklevel=_outside_level(),
        )
    paragraph = text.split("\n\n", 1)[0]
    section = _PARAMETER_SECTION.search(paragraph)
    return DocInfo(paragraph[: section.start() if section else None].strip(), {})


def _outside_level() -> int:
    """The ``stacklevel`` of the first caller outside this package (where ``@tool`` was used)."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frame, level = sys._getframe(1), 1
    while frame.f_back is not None and frame.f_code.co_filename.startswith(package):
        frame, level = frame.f_back, level + 1
    return level


def class_doc(cls: type) -> DocInfo:
    """The docstring of a dataclass, attrs class or TypedDict (not the generated signature)."""
    doc = cls.__dict__.get("__doc__")
    if not isinstance(doc, str) or doc.startswith(f"{cls.__name__}("):
        return DocInfo("", {})
    return parse_docstring(doc)
