"""Servers on 127.0.0.1 for the benchmarks and the tests: a redis-server process
(:class:`RedisServer`) and ``solon-events serve`` in a process of its own
(:func:`gateway_process`)."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

__all__ = [
    "Gateway",
    "RedisServer",
    "free_port",
    "free_port_pair",
    "gateway_process",
    "process_figures",
]


def free_port() -> int:
    """A port nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def free_port_pair() -> int:
    """A port nothing listens on now, with the next one free too (the gateway benchmarks'
    upstream serves its probe on PORT+1)."""
    while True:
        port = free_port()
        with socket.socket() as sock, contextlib.suppress(OSError):
            sock.bind(("127.0.0.1", port + 1))
            return port


class RedisServer:
    """One redis-server process on 127.0.0.1:``port`` (a free one by default), in a
    temporary folder of its own; ``persistent``: every write is in its append-only file
    before it is acknowledged, so that a restart (:meth:`stop`, then :meth:`start`) keeps
    what it held. ``binary`` is the redis-server executable."""

    def __init__(
        self, port: int | None = None, *, persistent: bool = False, binary: str | None = None
    ) -> None:
        self.port = port or free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.persistent = persistent
        self.binary = binary or shutil.which("redis-server") or "redis-server"
        self._folder = tempfile.TemporaryDirectory(prefix="solon-redis-")
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> RedisServer:
        """Start it and wait until it answers."""
        saving = ["--appendonly", "yes", "--appendfsync", "always"] if self.persistent else []
        self._process = subprocess.Popen(
            [
                self.binary,
                *("--port", str(self.port), "--bind", "127.0.0.1", "--save", ""),
                *(saving or ["--appendonly", "no"]),
                *("--dir", self._folder.name, "--maxclients", "4000"),
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
        """Stop it and remove its folder."""
        self.stop()
        self._folder.cleanup()


class Gateway:
    """A ``solon-events serve`` process (:func:`gateway_process`): its address, the process,
    and its log (standard error, kept in a file: a pipe nobody reads would fill, and
    the gateway would stop at its next log line)."""

    def __init__(self, url: str, process: subprocess.Popen[str], log: IO[bytes]) -> None:
        self.url = url
        self.process = process
        self._log = log

    def log(self) -> str:
        """What the gateway has logged so far."""
        self._log.seek(0)
        return self._log.read().decode(errors="replace")


@contextlib.contextmanager
def gateway_process(*options: str) -> Iterator[Gateway]:
    """``solon-events serve --port 0 OPTIONS`` in a process of its own (its standard
    output read for its address, then drained; its standard error in a temporary file);
    terminated at the end."""
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "solon_events.cli", "serve", "--port", "0", *options],
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        gateway = Gateway("", process, log)
        try:
            assert process.stdout is not None
            found = re.search(r"http://\S+", process.stdout.readline())
            if not found:
                process.kill()
                process.wait()
                raise RuntimeError(f"the gateway did not start: {gateway.log()[-2000:]}")
            threading.Thread(target=process.stdout.read, daemon=True).start()
            gateway.url = found.group(0)
            yield gateway
        finally:
            if process.poll() is None:
                process.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=15)
            if process.poll() is None:
                process.kill()
                process.wait()


def process_figures(pid: int) -> dict[str, float]:
    """A process's resident memory (MiB), threads and open file descriptors."""
    figures: dict[str, float] = {}
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                figures["rss_mib"] = int(line.split()[1]) / 1024
            elif line.startswith("Threads:"):
                figures["threads"] = int(line.split()[1])
        figures["fds"] = len(os.listdir(f"/proc/{pid}/fd"))
    return figures
