"""Tools a model may call: Python functions (:func:`tool`) and their sets (:class:`ToolSet`).

``tool.py`` defines :class:`Tool` and :func:`tool`; ``schema.py`` builds the JSON schema and
converts arguments from type hints; ``docstrings.py`` reads descriptions; ``results.py``
turns a result into the text the model reads.
"""

from .results import format_result
from .tool import Tool, ToolSet, tool

__all__ = ["Tool", "ToolSet", "format_result", "tool"]
