"""A real redis-server for the tests (Debian's package; .ci/run installs it).

``RedisServer(port).start()`` runs one on 127.0.0.1 with no persistence, in a temporary
folder; ``redis_url`` is a session fixture with one shared server. Tests that need Redis
skip when redis-server is not installed, except in CI, where they fail.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from executables import executable_or_skip

from benchmarks import local_servers


def redis_server_binary() -> str:
    """The redis-server executable; skips (fails in CI) when it is not installed."""
    return executable_or_skip("redis-server", package="redis-server")


class RedisServer(local_servers.RedisServer):
    """One redis-server process on 127.0.0.1:``port`` (a free one by default), with no
    persistence unless asked (:class:`benchmarks.local_servers.RedisServer`)."""

    def __init__(self, port: int | None = None, *, persistent: bool = False) -> None:
        super().__init__(port, persistent=persistent, binary=redis_server_binary())


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
