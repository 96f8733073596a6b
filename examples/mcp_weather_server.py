"""An MCP server with one tool, written with the official MCP SDK (the ``mcp`` extra).

``python examples/mcp_weather_server.py`` serves it over stdio (what ``McpTools.stdio``
starts); ``python examples/mcp_weather_server.py --http 8001`` over streamable HTTP at
``http://127.0.0.1:8001/mcp`` (what ``McpTools.http`` connects to). README.rst uses both.
"""

from __future__ import annotations

import sys

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("weather", log_level="WARNING")


@server.tool()
async def get_forecast(city: str, ctx: Context, days: int = 1) -> str:
    """The weather forecast for a city.

    Args:
        city: The city's name, e.g. Paris.
        days: How many days ahead (1 to 7).
    """
    for station in (1, 2):
        await ctx.report_progress(station, 2, f"station {station} of 2 answered")
    return f"sunny and 18°C in {city} for the next {days} day(s)"


if __name__ == "__main__":
    if sys.argv[1:2] == ["--http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
