"""``solon-events serve``: the address on the first line, loopback by default, the
embedded provider when no ``--url`` is given, a clean stop on SIGTERM; without a token,
only loopback host names (DNS rebinding), and a warning when it listens beyond loopback."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from serving import serve_command, sse_json

from solon_events.cli import main
from solon_events.cli.serve import _byte_count


@pytest.fixture
def serve_process() -> Iterator[subprocess.Popen[str]]:
    with serve_command("--token", "t0k3n") as process:
        yield process


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


BODIES = {
    "/events": b'{"messages": [{"role": "user", "content": "Hi"}]}',
    "/api/chat": b'{"messages": [{"id": "m", "role": "user", "parts": [{"type": "text", '
    b'"text": "Hi"}]}]}',
    "/agui": b'{"threadId": "t", "runId": "r", "messages": [{"id": "1", "role": "user", '
    b'"content": "Hi"}]}',
    "/stop": b'{"response_id": "resp_nope"}',
}


def _ask(url: str, path: str, host: str, method: str = "POST") -> tuple[int, bytes]:
    """A browser's request naming ``host`` (``Host`` and a same-origin ``Origin``)."""
    request = urllib.request.Request(
        url + path,
        data=BODIES.get(path) if method == "POST" else None,
        method=method,
        headers={
            "Host": host,
            "Origin": f"http://{host}",
            "Content-Type": "application/json",
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as refused:
        return refused.code, refused.read()


def test_without_a_token_a_rebound_host_name_is_refused() -> None:
    """DNS rebinding: a page at evil.example, whose name now resolves to 127.0.0.1, posts
    to the gateway same-origin (its Origin matches its Host). Only loopback names are
    answered without a token."""
    with serve_command() as process:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        port = url.rsplit(":", 1)[1]
        evil = f"evil.example:{port}"
        for path in BODIES:
            status, body = _ask(url, path, evil)
            assert status == 403, (path, status, body[:200])
            assert b"evil.example" in body and b"allow-host" in body
        assert _ask(url, "/", evil, method="GET")[0] == 403
        assert _ask(url, "/events", evil, method="OPTIONS")[0] == 403
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}", "LocalHost"):
            status, body = _ask(url, "/events", host)
            assert status == 200, (host, status, body[:200])
            assert sse_json(body)[-1]["type"] == "RESPONSE_END"
        assert _ask(url, "/", f"localhost:{port}", method="GET")[0] == 200


def test_allow_host_names_more_hosts() -> None:
    with serve_command("--allow-host", "chat.example") as process:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        port = url.rsplit(":", 1)[1]
        status, body = _ask(url, "/events", f"chat.example:{port}")
        assert status == 200 and sse_json(body)[-1]["type"] == "RESPONSE_END"
        assert _ask(url, "/events", f"evil.example:{port}")[0] == 403
        assert _ask(url, "/events", f"127.0.0.1:{port}")[0] == 200


def test_with_a_token_any_host_is_answered_unless_hosts_are_listed() -> None:
    token = {"Authorization": "Bearer t0k3n"}
    with serve_command("--token", "t0k3n") as process:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert _request(url, "evil.example", token) == 200
    with serve_command("--token", "t0k3n", "--allow-host", "chat.example") as process:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert _request(url, "chat.example", token) == 200
        assert _request(url, "evil.example", token) == 403


def _request(url: str, host: str, headers: dict[str, Any]) -> int:
    request = urllib.request.Request(
        url + "/events",
        data=BODIES["/events"],
        headers={"Host": host, "Content-Type": "application/json", **headers},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            response.read()
            return int(response.status)
    except urllib.error.HTTPError as refused:
        return refused.code


@pytest.mark.parametrize("host", ["0.0.0.0", "::"])
def test_listening_beyond_loopback_without_a_token_warns_on_stderr(host: str) -> None:
    with serve_command("--host", host) as process:
        assert process.stdout is not None and process.stderr is not None
        assert process.stdout.readline().startswith("http://")
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=15) == 0
        warning = process.stderr.read()
        assert "warning" in warning and "without a token" in warning and host in warning
    for options in (("--host", "0.0.0.0", "--token", "t0k3n"), ("--host", "127.0.0.1")):
        with serve_command(*options) as process:
            assert process.stdout is not None and process.stderr is not None
            assert process.stdout.readline().startswith("http://")
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=15) == 0
            assert "warning" not in process.stderr.read()


@pytest.mark.parametrize(
    ("option", "value", "said"),
    [
        ("--max-buffer", "lots", "not a size: 'lots'"),
        ("--max-total-buffer", "0MiB", "a size must be positive, not '0MiB'"),
        ("--write-timeout", "-1", "not a number of seconds: '-1'"),
        ("--write-timeout", "nan", "not a number of seconds: 'nan'"),
    ],
)
def test_the_slow_client_limits_are_checked(
    option: str, value: str, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["serve", option, value])
    assert exit_.value.code == 2 and said in capsys.readouterr().err


def test_sizes_take_the_binary_units() -> None:
    sizes = ["65536", "64KiB", "64k", "8MiB", "8 MB", "1.5GiB"]
    assert [_byte_count(size) for size in sizes] == [
        65536, 65536, 65536, 8 << 20, 8 << 20, 3 << 29
    ]  # fmt: skip


def _events_of(url: str, text: str) -> list[dict[str, Any]]:
    request = urllib.request.Request(
        url + "/events",
        data=json.dumps({"messages": [{"role": "user", "content": text}]}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return sse_json(response.read())


@pytest.mark.parametrize(
    ("options", "announced"),
    [
        (
            ["--model", "status:503", "--fallback", "status:502", "--fallback", "echo"],
            [("fallback", "status:503"), ("fallback", "status:502")],
        ),
        (
            ["--model", "first-delay:30", "--fallback", "echo", "--hedge-after", "0.2"],
            [("hedge", "first-delay:30")],
        ),
    ],
)
def test_serve_takes_a_fallback_chain_and_a_hedge_delay(
    options: list[str], announced: list[tuple[str, str]]
) -> None:
    with serve_command(*options) as process:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        events = _events_of(url, "one two")
        # a provider route (an SDK's request) is answered by the chain too
        request = urllib.request.Request(
            url + "/v1/chat/completions",
            data=b'{"model": "any", "messages": [{"role": "user", "content": "three four"}]}',
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            completion = json.loads(response.read())
    assert completion["choices"][0]["message"]["content"] == "three four"
    statuses = [e for e in events if e["type"] == "STATUS" and e["sub_type"] != "retry"]
    assert [(s["sub_type"], s["attrs"]["model"]) for s in statuses] == announced
    end = events[-1]
    assert end["type"] == "RESPONSE_END" and end["response"]["text"] == "one two"
    assert end["response"]["model"] == "echo"


def test_a_hedge_delay_needs_a_fallback(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--hedge-after", "1"]) == 2
    assert "--hedge-after needs a model to hedge with" in capsys.readouterr().err


@pytest.mark.parametrize("fallback", [[], ["--fallback", "echo", "--fallback", "think"]])
def test_upstream_connections_sizes_every_served_models_pool(fallback: list[str]) -> None:
    from solon_events.cli import build_parser
    from solon_events.cli.serve import _model
    from solon_events.client.routing import ModelGroup

    url = "http://127.0.0.1:9/v1/chat/completions"
    for given, pool in (([], 0), (["--upstream-connections", "7"], 7)):
        args = build_parser().parse_args(["serve", "--model", "a", *fallback, *given])
        served = _model(args, url, [args.model, *args.fallback], None, "openai")
        with served:
            leaves = served.leaves() if isinstance(served, ModelGroup) else (served,)
            assert [leaf.transport.connection_limit for leaf in leaves] == [pool] * len(leaves)
