"""A real redis-server for the tests (Debian's package; .ci/run installs it).

``RedisServer(port).start()`` runs one on 127.0.0.1 with no persistence, in a temporary
folder; ``redis_url`` is a session fixture with one shared server. Tests that need Redis
skip when redis-server is not installed, except in CI, where they fail.
"""

from __future__ import annotations

import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator

import pytest
from executables import executable_or_skip


def redis_server_binary() -> str:
    """The redis-server executable; skips (fails in CI) when it is not installed."""
    return executable_or_skip("redis-server", package="redis-server")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisServer:
    """One redis-server process on 127.0.0.1:``port`` (a free one by default)."""

    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._folder = tempfile.TemporaryDirectory(prefix="solon-redis-")
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> RedisServer:
        """Start it and wait until it answers."""
        self._process = subprocess.Popen(
            [
                redis_server_binary(),
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                self._folder.name,
                "--maxclients",
                "4000",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as conn:
                    conn.sendall(b"PING\r\n")
                    if conn.recv(16).startswith(b"+PONG"):
                        return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"redis-server did not start on port {self.port}")

    def stop(self) -> None:
        """Kill it at once (as a crash would) and wait for it to be gone."""
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.wait(10)
        self._process = None

    def close(self) -> None:
        self.stop()
        self._folder.cleanup()


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """The URL of a redis-server shared by the session's tests."""
    server = RedisServer().start()
    try:
        yield server.url
    finally:
        server.close()


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    """A redis-server of the test's own (to stop and restart)."""
    server = RedisServer().start()
    try:
        yield server
    finally:
        server.close()
