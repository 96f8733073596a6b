"""The example MCP server the tools guide's MCP examples use (#49.5): ``--help`` helps without
starting it, and over HTTP it prints its address once it listens."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from mcp_process import ExampleMcpServer

from solon_events import McpTools


def test_help_says_how_to_use_it_and_starts_nothing() -> None:
    done = subprocess.run(
        [sys.executable, str(ExampleMcpServer.SCRIPT), "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: mcp_weather_server.py [-h] [--http PORT]")
    assert "get_forecast" in done.stdout and "McpTools.stdio" in done.stdout
    assert done.stderr == ""


def test_over_http_it_says_where_it_listens_once_it_does(tmp_path: Path) -> None:
    server = ExampleMcpServer(tmp_path / "server.log")
    try:
        assert server.ready_line == (
            f"MCP server 'weather' listening at {server.url} (Ctrl-C stops it)"
        )
        with McpTools.http(server.url, timeout=60) as tools:  # at once: it listens already
            assert list(tools) == ["get_forecast"]
    finally:
        server.stop()
