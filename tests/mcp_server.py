"""An MCP server for the tests, written with the official SDK: ``python mcp_server.py``
serves stdio, ``python mcp_server.py http PORT`` streamable HTTP on 127.0.0.1:PORT."""

from __future__ import annotations

import os
import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

server = MCPServer("test-weather", log_level="WARNING")


@server.tool()
async def get_forecast(city: str, ctx: Context, days: int = 1) -> str:
    """The weather forecast for a city.

    Args:
        city: The city's name.
        days: How many days ahead.
    """
    for station in (1, 2, 3):
        await ctx.report_progress(station, 3, f"station {station} of 3")
    return f"sunny in {city} for {days} day(s)"


class Place(BaseModel):
    city: str = Field(description="The city")
    country: str = "FR"


@server.tool()
def locate(place: Place) -> dict[str, str]:
    """Where a place is."""
    return {"city": place.city, "country": place.country}


@server.tool()
def broken(city: str) -> str:
    """A tool that always fails."""
    raise ToolError(f"the station in {city} is offline")


@server.tool()
def crash(city: str) -> str:
    """A tool that takes the whole server down."""
    print(f"fatal: lost the station in {city}", file=sys.stderr, flush=True)
    os._exit(3)


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
