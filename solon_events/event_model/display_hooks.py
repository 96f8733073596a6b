"""The display methods that the result classes and ChatEvent take as their own.

``_repr_html_`` (Jupyter) and ``_repr_pretty_`` (IPython's terminal) import
:mod:`solon_events.display` only when called, so the event model loads no display code.
"""

from __future__ import annotations

from typing import Any

__all__ = ["repr_html", "repr_pretty"]


def repr_html(self: Any) -> str:
    """``self`` as HTML (:func:`solon_events.display.html.to_html`)."""
    from ..display.html import to_html

    return to_html(self)


def repr_pretty(self: Any, printer: Any, cycle: bool) -> None:
    """``self`` as text for IPython's pretty printer
    (:func:`solon_events.display.pretty.to_text`)."""
    from ..display.pretty import to_text

    printer.text(to_text(self))
