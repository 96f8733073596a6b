"""``solon-events serve``: the address on the first line, loopback by default, the
embedded provider when no ``--url`` is given, a clean stop on SIGTERM."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from serving import sse_json


@pytest.fixture
def serve_process() -> Iterator[subprocess.Popen[str]]:
    process = subprocess.Popen(
        [sys.executable, "-m", "solon_events.cli", "serve", "--port", "0", "--token", "t0k3n"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=10)


def _listening_addresses(port: int) -> set[str]:
    """The local addresses a TCP port listens on, read from /proc/net/tcp(6)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not Path(table).exists():
            continue
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.split(":")
            if state == "0A" and int(hex_port, 16) == port:
                found.add(address)
    return found


def test_serve_prints_its_address_first_and_serves_the_embedded_provider(
    serve_process: subprocess.Popen[str],
) -> None:
    assert serve_process.stdout is not None
    first = serve_process.stdout.readline().strip()
    match = re.fullmatch(r"http://127\.0\.0\.1:(\d+)", first)
    assert match, first
    port = int(match.group(1))
    if Path("/proc/net/tcp").exists():
        assert _listening_addresses(port) == {"0100007F"}  # 127.0.0.1 only
    request = urllib.request.Request(
        first + "/events",
        data=b'{"messages": [{"role": "user", "content": "Weather in Paris?"}]}',
        headers={"Content-Type": "application/json", "Authorization": "Bearer t0k3n"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        events = sse_json(response.read())
    assert events[-1]["type"] == "RESPONSE_END"
    assert events[-1]["response"]["text"] == "It is 18°C and sunny in Paris right now."
    assert "TOOL_RESULT" in [e["type"] for e in events]
    with urllib.request.urlopen(first + "/", timeout=10) as page:
        assert b"solon-events" in page.read()
    serve_process.send_signal(signal.SIGTERM)
    assert serve_process.wait(timeout=15) == 0


def test_serve_without_the_token_is_refused(serve_process: subprocess.Popen[str]) -> None:
    assert serve_process.stdout is not None
    url = serve_process.stdout.readline().strip()
    request = urllib.request.Request(
        url + "/events", data=b"{}", headers={"Content-Type": "application/json"}
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 401
