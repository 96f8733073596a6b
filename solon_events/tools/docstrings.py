"""Descriptions from docstrings: the function's, and each parameter's.

Google (``Args:``), NumPy (``Parameters`` over a rule) and reST (``:param x:``) docstrings are
read by the ``docstring-parser`` library (a dependency: small, pure Python), imported when
the first docstring is read.
"""

from __future__ import annotations

from typing import Any, NamedTuple

__all__ = ["DocInfo", "class_doc", "parse_docstring"]

# Google and NumPy section names docstring-parser's Google reader does not know by default.
_EXTRA_GOOGLE_SECTIONS = ("Keyword Args", "Keyword Arguments", "Kwargs", "Other Parameters")


class DocInfo(NamedTuple):
    """What a docstring tells a model: a description, and one per parameter name."""

    description: str
    params: dict[str, str]


def parse_docstring(doc: str | None) -> DocInfo:
    """The description and parameter descriptions of a raw (uncleaned) docstring."""
    if not doc or not doc.strip():
        return DocInfo("", {})
    parsed = _best_parse(doc)
    params: dict[str, str] = {}
    for param in parsed.params:
        lines = (param.description or "").splitlines()
        text = " ".join(line.strip() for line in lines if line.strip())
        for name in param.arg_name.split(","):
            if name.strip():
                params.setdefault(name.strip().lstrip("*"), text.strip())
    return DocInfo((parsed.description or "").strip(), params)


def _best_parse(doc: str) -> Any:
    """The reading with the most parameters, trying Google first (as the library's AUTO does).

    The Google reader is given the extra parameter sections Python projects commonly use.
    """
    import docstring_parser as library  # imported on first use: ~13 ms
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


def class_doc(cls: type) -> DocInfo:
    """The docstring of a dataclass, attrs class or TypedDict (not the generated signature)."""
    doc = cls.__dict__.get("__doc__")
    if not isinstance(doc, str) or doc.startswith(f"{cls.__name__}("):
        return DocInfo("", {})
    return parse_docstring(doc)
