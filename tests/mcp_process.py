"""An MCP server script serving streamable HTTP on 127.0.0.1, run as a subprocess for a test."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time
from pathlib import Path


def free_port() -> int:
    """A TCP port nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class McpHttpProcess:
    """``python SCRIPT *options PORT`` started, and waited for until it accepts connections."""

    def __init__(self, script: Path, options: list[str], log: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self._log = log.open("w")
        self.process = subprocess.Popen(
            [sys.executable, str(script), *options, str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=self._log,
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"no MCP server on {self.url}: {log.read_text()}") from None
                time.sleep(0.1)

    def stop(self) -> None:
        """Terminate the server and wait for it."""
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)
        self._log.close()


class ExampleMcpServer:
    """``examples/mcp_weather_server.py --http 0`` started, its address read from the line
    it prints once it listens."""

    SCRIPT = Path(__file__).resolve().parent.parent / "examples" / "mcp_weather_server.py"

    def __init__(self, log: Path) -> None:
        self._log = log.open("w")
        self.process = subprocess.Popen(
            [sys.executable, str(self.SCRIPT), "--http", "0"],
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
        )
        assert self.process.stdout is not None
        self.ready_line = self.process.stdout.readline().strip()  # "" when it exited
        found = re.search(r"listening at (http://127\.0\.0\.1:\d+/mcp) ", self.ready_line)
        if found is None:
            self.stop()
            raise RuntimeError(
                f"the example MCP server said {self.ready_line!r}: {log.read_text()}"
            )
        self.url = found.group(1)

    def stop(self) -> None:
        """Terminate the server and wait for it."""
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)
        if self.process.stdout is not None:
            self.process.stdout.close()
        self._log.close()
