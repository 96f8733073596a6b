"""An MCP server with one tool, written with the official MCP SDK (the ``mcp`` extra).

``python examples/mcp_weather_server.py`` serves it over stdio (what ``McpTools.stdio``
starts); ``python examples/mcp_weather_server.py --http 8001`` over streamable HTTP at
``http://127.0.0.1:8001/mcp`` (what ``McpTools.http`` connects to), saying so on its first
line once it listens; ``--help`` says how to use it. docs/guides/tools.rst uses both.
"""

from __future__ import annotations

import argparse
import socket

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


def serve_http(port: int) -> None:
    """Serve over streamable HTTP on 127.0.0.1:``port`` (0: any free port), printing the
    server's address once it listens."""
    import uvicorn

    listening = socket.create_server(("127.0.0.1", port))
    address = f"http://127.0.0.1:{listening.getsockname()[1]}/mcp"
    print(f"MCP server 'weather' listening at {address} (Ctrl-C stops it)", flush=True)
    app = server.streamable_http_app(host="127.0.0.1")
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[listening])


def main() -> None:
    parser = argparse.ArgumentParser(
        description="An MCP server with one tool, get_forecast(city, days), over stdio "
        "(what McpTools.stdio starts) or streamable HTTP (what McpTools.http connects to).",
    )
    parser.add_argument(
        "--http",
        type=int,
        metavar="PORT",
        help="serve over streamable HTTP at http://127.0.0.1:PORT/mcp instead of stdio "
        "(0: any free port)",
    )
    args = parser.parse_args()
    if args.http is None:
        server.run()
    else:
        serve_http(args.http)


if __name__ == "__main__":
    main()
