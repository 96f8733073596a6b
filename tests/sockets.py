"""The TCP connections this machine holds open to a port, and waiting for a condition."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

__all__ = ["open_connections", "wait_for"]


def open_connections(port: int) -> int:
    """Established TCP connections to ``port`` on this machine, as /proc/net lists them
    (each counted from its client's side)."""
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            remote, state = fields[2], fields[3]
            if state == "01" and int(remote.rsplit(":", 1)[1], 16) == port:
                count += 1
    return count


def wait_for(condition: Any, timeout: float = 2.0) -> bool:
    """Whether ``condition()`` came true within ``timeout`` seconds (polled)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True
