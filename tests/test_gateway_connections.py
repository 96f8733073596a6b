"""Slow and greedy clients: the gateway's read timeouts for a request's head and body, its
connection cap, a low file-descriptor limit, and ``Expect: 100-continue``.

Real sockets on 127.0.0.1; the slow clients are written with raw asyncio streams, and
the gateways are given timeouts of a fraction of a second, so that each test takes a few
seconds. The low file-descriptor limit is set on ``solon-events serve`` in its own
process (``resource.setrlimit``).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson
import pytest
from flooding import until
from gateway_errors import error_message
from serving import serve_command, sse_json

from solon_events import ChatModel
from solon_events.cli import ROUTES
from solon_events.devserver import DevServer
from solon_events.serve import create_app, serving

TOKEN = "t0k3n-for-slow-clients"
BODY = orjson.dumps({"messages": [{"role": "user", "content": "Why is the sky blue?"}]})


def head(path: str = "/events", length: int = len(BODY), *more: str) -> bytes:
    """A request's head: JSON, ``Content-Length`` ``length``, and ``more`` header lines."""
    lines = [
        f"POST {path} HTTP/1.1",
        "Host: 127.0.0.1",
        "Content-Type: application/json",
        f"Content-Length: {length}",
        "Connection: close",
        *more,
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


@contextlib.asynccontextmanager
async def gateway(
    provider: DevServer, scenario: str = "think", **options: Any
) -> AsyncIterator[int]:
    """A gateway (``create_app`` ``options``) on the embedded provider: its port."""
    model = ChatModel(provider.url + ROUTES["openai"], scenario, max_retries=0)
    try:
        async with serving(create_app(model, **options)) as url:
            yield int(url.rsplit(":", 1)[1])
    finally:
        await asyncio.to_thread(model.close)


async def connect(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection("127.0.0.1", port)


async def closed(reader: asyncio.StreamReader, within: float) -> bytes | None:
    """What the server sent before it closed the connection, or None when it is still
    open after ``within`` seconds."""
    received = b""
    deadline = time.monotonic() + within
    try:
        while left := deadline - time.monotonic():
            if left <= 0:
                return None
            chunk = await asyncio.wait_for(reader.read(65536), left)
            if not chunk:
                return received
            received += chunk
    except (ConnectionResetError, BrokenPipeError):
        return received
    except asyncio.TimeoutError:
        return None
    return None


async def trickle(writer: asyncio.StreamWriter, data: bytes, interval: float) -> None:
    """Send ``data`` a byte every ``interval`` seconds, until the server hangs up."""
    with contextlib.suppress(ConnectionError):
        for byte in data:
            writer.write(bytes([byte]))
            await writer.drain()
            await asyncio.sleep(interval)


async def request(port: int, data: bytes) -> tuple[int, bytes]:
    """Send a whole request and read the whole answer: its status and body."""
    reader, writer = await connect(port)
    try:
        writer.write(data)
        answer = await asyncio.wait_for(reader.read(), 30)
    finally:
        writer.close()
    status_line, _, rest = answer.partition(b"\r\n")
    return int(status_line.split()[1]), rest.partition(b"\r\n\r\n")[2]


def status_of(answer: bytes) -> int:
    return int(answer.split(b"\r\n", 1)[0].split()[1])


async def test_clients_that_send_their_head_slowly_or_nothing_are_let_go(
    provider: DevServer,
) -> None:
    """30 clients send their headers a byte every 0.1 s (they would need 10 s), 10 send
    nothing; no token is needed to hold a connection. With a head timeout of 0.5 s each
    is closed within seconds, while a client that sends its request whole is served."""
    async with gateway(provider, header_timeout=0.5) as port:
        slow = [await connect(port) for _ in range(30)]
        silent = [await connect(port) for _ in range(10)]
        trickling = [asyncio.ensure_future(trickle(w, head(), 0.1)) for _r, w in slow]
        status, body = await request(port, head() + BODY)
        ends = await asyncio.gather(*(closed(r, 5) for r, _w in slow + silent))
        for task in trickling:
            task.cancel()
        for _r, writer in slow + silent:
            writer.close()
    assert status == 200 and b"RESPONSE_END" in body
    assert all(end is not None for end in ends), f"{ends.count(None)} connections still open"


async def test_a_body_sent_slowly_is_answered_408(provider: DevServer) -> None:
    """With the token (past every check before the body), the body comes a byte every
    0.1 s: answered 408 once the body timeout (0.5 s) passes, and the connection closed."""
    async with gateway(provider, token=TOKEN, body_timeout=0.5) as port:
        reader, writer = await connect(port)
        writer.write(head("/events", len(BODY), f"Authorization: Bearer {TOKEN}"))
        sending = asyncio.ensure_future(trickle(writer, BODY, 0.1))
        answer = await closed(reader, 5)
        sending.cancel()
        writer.close()
    assert answer is not None, "the connection is still open"
    assert status_of(answer) == 408
    assert b"0.5 s" in answer


async def test_at_the_cap_a_busy_gateway_answers_503_then_serves_again(
    provider: DevServer,
) -> None:
    """Four connections (the cap) each wait for a stream held by the provider: a fifth is
    answered 503 with Retry-After at once; once the streams end, requests are served."""
    async with gateway(provider, "gate", max_connections=4) as port:
        waiting = [await connect(port) for _ in range(4)]
        for _reader, writer in waiting:
            writer.write(head() + BODY)
        await until(lambda: len(provider.requests) == 4, "four streams started")
        reader, writer = await connect(port)
        refused = await closed(reader, 5)
        writer.close()
        provider.open_gate()
        ends = [await closed(r, 10) for r, _w in waiting]
        status, _body = await request(port, head() + BODY)
        for _reader, writer in waiting:
            writer.close()
    assert refused is not None and status_of(refused) == 503
    assert b"Retry-After: 1" in refused
    assert all(end is not None and b"RESPONSE_END" in end for end in ends)
    assert status == 200


async def test_at_the_cap_a_new_request_takes_the_place_of_an_idle_connection(
    provider: DevServer,
) -> None:
    """Four connections (the cap) sent nothing: a request is served all the same, in the
    place of the one that waited longest, which is closed; the others stay."""
    async with gateway(provider, max_connections=4, header_timeout=30) as port:
        idle = [await connect(port) for _ in range(4)]
        await asyncio.sleep(0.1)
        status, body = await request(port, head() + BODY)
        first = await closed(idle[0][0], 2)
        others = [await closed(r, 0.2) for r, _w in idle[1:]]
        for _reader, writer in idle:
            writer.close()
    assert status == 200 and b"RESPONSE_END" in body
    assert first == b""  # closed without an answer
    assert others == [None, None, None]


@pytest.mark.parametrize("path", ["/events", "/v1/chat/completions"])
async def test_expect_100_continue_with_a_body_over_the_limit_is_answered_413_at_once(
    provider: DevServer, path: str
) -> None:
    async with gateway(provider, max_body=1000) as port:
        reader, writer = await connect(port)
        writer.write(head(path, 5000, "Expect: 100-continue"))
        answer = await closed(reader, 5)
        writer.close()
        reader, writer = await connect(port)
        writer.write(head(path, len(BODY), "Expect: 100-continue"))
        going_on = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
        writer.close()
    assert answer is not None and status_of(answer) == 413, answer
    assert b"100 Continue" not in answer
    if path != "/events":
        assert "1000 bytes" in error_message("openai", orjson.loads(answer.split(b"\r\n\r\n")[1]))
    assert going_on == b"HTTP/1.1 100 Continue\r\n\r\n"


def test_at_a_low_file_descriptor_limit_the_gateway_serves_and_logs_once() -> None:
    """``solon-events serve`` with 256 file descriptors, and 400 connections that send
    nothing (within the 10 s head timeout): requests are still served (the cap stays
    under the limit, an idle connection makes room), the condition is logged once, and no
    traceback is written. (A process of its own, with its limit: about 8 s.)"""
    with serve_command("--model", "think", nofile=256) as process:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        port = int(url.rsplit(":", 1)[1])
        idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(400)]
        try:
            answers = [post_events(url) for _ in range(3)]
        finally:
            for sock in idle:
                sock.close()
        process.terminate()
        _out, err = process.communicate(timeout=15)
    assert [events[-1]["type"] for events in answers] == ["RESPONSE_END"] * 3
    assert "Traceback" not in err, err[:2000]
    assert err.count("makes room for a new one") == 1, err[:2000]
    assert len(err) < 4000, err[:2000]


def post_events(url: str) -> list[Any]:
    """POST BODY to ``url``'s /events; its events."""
    posted = urllib.request.Request(
        url + "/events", data=BODY, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(posted, timeout=30) as answer:
        return sse_json(answer.read())


async def test_serve_holds_more_streams_than_a_hundred_open_at_once(provider: DevServer) -> None:
    """``solon-events serve --upstream`` with its default pool: 120 streams held open at
    once (each waiting for its next delta, a minute away) all get their first delta; no
    stream waits for another to end for a connection to the provider (the gateway's own
    connection cap bounds them, not a pool of 100 below it)."""
    streams = 120
    upstream = f"openai:{provider.url}{ROUTES['openai']}"
    with serve_command("--upstream", upstream, "--model", "slow:3:60") as process:
        assert process.stdout is not None
        url = (await asyncio.to_thread(process.stdout.readline)).strip()
        started = 0
        body = {"messages": [{"role": "user", "content": "hi"}], "stream": True}

        async def hold(session: aiohttp.ClientSession) -> None:
            nonlocal started
            async with session.post(url + ROUTES["openai"], json=body) as response:
                assert response.status == 200
                async for chunk in response.content.iter_any():
                    if b'"content":"0 "' in chunk:
                        started += 1
                        break
                await asyncio.sleep(3600)  # held open until cancelled

        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
            held = [asyncio.ensure_future(hold(session)) for _ in range(streams)]
            try:
                await until(
                    lambda: started == streams or any(t.done() for t in held),
                    lambda: f"{started} of {streams} streams started",
                    timeout=30,
                )
                failed = [t.exception() for t in held if t.done()]
                assert not failed, failed[:3]
            finally:
                for task in held:
                    task.cancel()
                await asyncio.gather(*held, return_exceptions=True)
        assert started == streams
