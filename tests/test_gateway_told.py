"""What the gateway's answers tell its clients, and what they leave out.

- ``x-solon-ignored`` (the request fields not translated) is a header every client can
  read: a field name with CR, LF or NUL, a 20,000-character one, 3,000 unknown fields;
  read by the official ``openai`` SDK, streaming and not.
- An upstream that cannot be reached, or fails, is named by its deployment (its model
  name) in the provider routes' error bodies and in ``/events``' ERROR and STATUS events,
  never by its host, port or path; the gateway's own log keeps the address.
- CORS: the preflight allows the SDKs' key headers and the answers expose
  ``x-solon-ignored``, when origins are listed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from typing import Any

import aiohttp
import openai
import orjson
import pytest
from gateway_errors import error_message
from serving import serving_in_thread, sse_json

from benchmarks.local_servers import free_port
from solon_events import ChatModel
from solon_events.cli import ROUTES
from solon_events.devserver import DevServer
from solon_events.serve import create_app, provider_routes, serving

QUESTION = [{"role": "user", "content": "What is the weather in Paris?"}]


# x-solon-ignored


ODD_FIELDS: dict[str, Any] = {
    "bad\r\nX-Injected: yes": 1,
    "nul\x00name": 2,
    "comma, space and 50%": 3,
    "é" * 3: 4,
    "n" * 20_000: 5,
    **{f"f{i:04d}": i for i in range(3_000)},
}


def test_the_header_keeps_names_printable_bounded_and_apart() -> None:
    names = tuple(sorted(ODD_FIELDS))
    header = provider_routes.ignored_header(names)
    assert header.isascii() and header.isprintable()
    assert "\r" not in header and "\n" not in header and "\x00" not in header
    shown = header.split(", ")
    assert len(shown) == provider_routes.IGNORED_NAMES + 1
    assert shown[-1] == f"... ({len(names) - provider_routes.IGNORED_NAMES} more)"
    assert len(header) < 4096
    assert provider_routes.ignored_header(("bad\r\nX-Injected: yes", "comma, space")) == (
        "bad%0D%0AX-Injected:%20yes, comma%2C%20space"
    )
    assert provider_routes.ignored_header(("n" * 100,)) == "n" * 64 + "..."


@pytest.fixture(scope="module")
def weather_gateway() -> Iterator[str]:
    """A gateway on the embedded provider's weather scenario, on a thread of its own."""
    with DevServer.run_in_thread() as provider:
        model = ChatModel(provider.url + ROUTES["openai"], "weather", max_retries=0)
        try:
            with serving_in_thread(create_app(model)) as url:
                yield url
        finally:
            model.close()


@pytest.mark.parametrize("stream", [False, True])
def test_odd_and_many_unknown_fields_make_a_header_the_sdk_reads(
    weather_gateway: str, stream: bool
) -> None:
    client = openai.OpenAI(base_url=weather_gateway + "/v1", api_key="none", max_retries=0)
    raw = client.chat.completions.with_raw_response.create(
        model="m", messages=QUESTION, stream=stream, extra_body=ODD_FIELDS
    )
    header = raw.headers["x-solon-ignored"]
    if stream:
        text = "".join(c.choices[0].delta.content or "" for c in raw.parse() if c.choices)
    else:
        text = raw.parse().choices[0].message.content or ""
    assert "weather in Paris" in text
    assert header.startswith("bad%0D%0AX-Injected:%20yes, comma%2C%20space%20and%2050%25, ")
    assert header.endswith(f"... ({len(ODD_FIELDS) - provider_routes.IGNORED_NAMES} more)")
    assert "X-Injected" not in raw.headers


# Deployments, not addresses.


def assert_no_address(text: str, port: int) -> None:
    assert "127.0.0.1" not in text and str(port) not in text, text


async def test_an_unreachable_upstream_is_named_by_its_deployment(
    caplog: pytest.LogCaptureFixture,
) -> None:
    port = free_port()
    model = ChatModel(f"http://127.0.0.1:{port}/v1/chat/completions", "gpt-a", max_retries=1)
    caplog.set_level(logging.WARNING, logger="solon_events.serve")
    try:
        async with serving(create_app(model)) as url, aiohttp.ClientSession() as session:
            async with session.post(url + "/events", json={"messages": QUESTION}) as answer:
                events = sse_json(await answer.read())
            body = {"model": "m", "messages": QUESTION}
            async with session.post(url + "/v1/chat/completions", json=body) as answer:
                status, failure = answer.status, await answer.json()
    finally:
        await asyncio.to_thread(model.close)
    (retry,) = [event for event in events if event["type"] == "STATUS"]
    error = events[-1]
    assert error["type"] == "ERROR"
    assert_no_address(orjson.dumps(events).decode(), port)
    assert "deployment 'gpt-a'" in retry["attrs"]["cause"]
    assert error["text"].startswith("request to deployment 'gpt-a' failed")
    assert error["error"]["type"] == "ChatConnectionError"
    assert status == 502
    assert_no_address(error_message("openai", failure), port)
    assert "deployment 'gpt-a'" in error_message("openai", failure)
    logged = " ".join(record.getMessage() for record in caplog.records)
    assert f"127.0.0.1:{port}/v1/chat/completions" in logged


async def test_a_fallback_names_each_deployment_in_its_status_and_attempts(
    provider: DevServer,
) -> None:
    port = free_port()
    dead = ChatModel(f"http://127.0.0.1:{port}/v1/chat/completions", "gpt-a", max_retries=0)
    failing = ChatModel(provider.url + ROUTES["openai"], "status:503", max_retries=0)
    answering = ChatModel(provider.url + ROUTES["openai"], "think", max_retries=0)
    group = dead.fallback(failing, answering)
    try:
        async with (
            serving(create_app(group)) as url,
            aiohttp.ClientSession() as session,
            session.post(url + "/events", json={"messages": QUESTION}) as answer,
        ):
            events = sse_json(await answer.read())
    finally:
        await asyncio.to_thread(group.close)
    shown = orjson.dumps(events).decode()
    assert_no_address(shown, port)
    assert_no_address(shown, provider.port)
    statuses = [e["text"] for e in events if e["type"] == "STATUS"]
    assert statuses[0].startswith("gpt-a failed (request to deployment 'gpt-a' failed")
    assert "HTTP 503 from deployment 'status:503'" in statuses[1]
    attempts = events[-1]["response"]["attempts"]
    assert [a["outcome"] for a in attempts] == ["failed", "failed", "answered"]


async def test_a_failure_mid_stream_names_the_deployment(provider: DevServer) -> None:
    """The upstream sends some text, then nothing: the idle timeout's message (which names
    the URL) reaches the SDK's stream as the deployment's."""
    model = ChatModel(provider.url + ROUTES["openai"], "stall:5", max_retries=0, idle_timeout=0.3)
    body = {"model": "m", "messages": QUESTION, "stream": True}
    try:
        async with (
            serving(create_app(model)) as url,
            aiohttp.ClientSession() as session,
            session.post(url + "/v1/chat/completions", json=body) as answer,
        ):
            frames = sse_json(await answer.read())
    finally:
        await asyncio.to_thread(model.close)
    failure = frames[-1]["error"]["message"]
    assert "deployment 'stall:5'" in failure
    assert_no_address(failure, provider.port)


# CORS.


async def test_the_preflight_allows_the_sdks_key_headers_and_exposes_ignored(
    provider: DevServer,
) -> None:
    origin = "https://app.example"
    model = ChatModel(provider.url + ROUTES["openai"], "think", max_retries=0)
    asked = {
        "Origin": origin,
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "x-api-key, x-goog-api-key, content-type",
    }
    try:
        async with (
            serving(create_app(model, cors_origins=[origin])) as url,
            aiohttp.ClientSession() as session,
        ):
            async with session.options(url + "/v1/messages", headers=asked) as preflight:
                allowed = preflight.headers["Access-Control-Allow-Headers"]
            body = {"model": "m", "messages": QUESTION, "unknown_field": 1}
            headers = {"Origin": origin}
            async with session.post(
                url + "/v1/chat/completions", json=body, headers=headers
            ) as answer:
                exposed = answer.headers["Access-Control-Expose-Headers"]
                ignored = answer.headers["x-solon-ignored"]
    finally:
        await asyncio.to_thread(model.close)
    assert {"x-api-key", "x-goog-api-key", "content-type"} <= set(allowed.split(", "))
    assert "x-solon-ignored" in exposed.split(", ") and ignored == "unknown_field"
