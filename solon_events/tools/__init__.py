"""Tools a model may call: Python functions (:func:`tool`) and their sets (:class:`ToolSet`).

``tool.py`` defines :class:`Tool` and :func:`tool`; ``schema.py`` builds the JSON schema and
converts arguments from type hints (``pydantic_schema.py`` for pydantic types, ``shape.py``
what both build); ``docstrings.py`` reads descriptions; ``context.py`` is what a running tool
may ask for; ``results.py`` turns a result into the text the model reads; ``mcp_tools.py``
brings an MCP server's tools (the ``mcp`` extra, imported when a server is connected).
"""

from .context import ToolContext
from .mcp_tools import McpTools
from .results import format_result
from .tool import Tool, ToolSet, tool

__all__ = ["McpTools", "Tool", "ToolContext", "ToolSet", "format_result", "tool"]
