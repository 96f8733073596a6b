"""A matplotlib figure that shows itself in a notebook and saves to PNG or SVG (what
:func:`~solon_events.display.timeline` and a benchmark's plot return)."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

__all__ = ["Picture"]

_FORMATS = {".png": "png", ".svg": "svg"}


class Picture:
    """A picture: shows itself in a notebook (PNG) and :meth:`save` writes it;
    :attr:`figure` is the matplotlib ``Figure`` for further drawing."""

    def __init__(self, figure: Any) -> None:
        self.figure = figure

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the picture to ``path``, PNG or SVG by its suffix; returns the path."""
        target = Path(path)
        image_format = _FORMATS.get(target.suffix.lower())
        if image_format is None:
            raise ValueError(f"save() writes .png or .svg files, not {target.suffix or path!r}")
        self.figure.savefig(target, format=image_format, dpi=120)
        return target

    def to_bytes(self, image_format: str = "png") -> bytes:
        """The picture as PNG or SVG bytes."""
        if image_format not in _FORMATS.values():
            raise ValueError("image_format is 'png' or 'svg'")
        buffer = io.BytesIO()
        self.figure.savefig(buffer, format=image_format, dpi=100)
        return buffer.getvalue()

    def _repr_png_(self) -> bytes:
        return self.to_bytes("png")

    def __repr__(self) -> str:
        return "<Picture>"
