"""The provider routes over real HTTP, as a plain aiohttp client sees them: the gateway's
safety checks, errors in each protocol's own shape (an upstream failure before the first
content as an HTTP status the SDK's retries understand, one after it in the stream), the
client's model name and fields not used, tools never run here, the route clash with the
Vercel ``/api/chat``, and a client that leaves cancelling the upstream request."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import orjson
import pytest
from gateway_errors import error_message
from serving import sse_payloads

from solon_events import ChatModel
from solon_events.cli import ROUTES, get_weather
from solon_events.devserver import DevServer
from solon_events.serve import create_app, serving
from solon_events.serve.provider_routes import PROVIDER_ROUTES, upstream_status

TOKEN = "gateway-token-0123456789"
QUESTION = "What is the weather in Paris?"
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather now",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


def chat(model: str, **more: Any) -> dict[str, Any]:
    """A chat body of ``model`` whose one message is the user's QUESTION."""
    return {"model": model, "messages": [{"role": "user", "content": QUESTION}], **more}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def google_key(token: str) -> dict[str, str]:
    return {"x-goog-api-key": token}


def anthropic_key(token: str) -> dict[str, str]:
    return {"x-api-key": token, "anthropic-version": "2023-06-01"}


# One request per protocol: its path, its body, and how its SDK sends the token.
REQUESTS: dict[str, tuple[str, dict[str, Any], Callable[[str], dict[str, str]]]] = {
    "openai": ("/v1/chat/completions", chat("gpt-x"), bearer),
    "openai-responses": ("/v1/responses", {"model": "gpt-x", "input": QUESTION}, bearer),
    "anthropic": ("/v1/messages", chat("claude-x", max_tokens=100), anthropic_key),
    "gemini": (
        "/v1beta/models/gemini-x:generateContent",
        {"contents": [{"role": "user", "parts": [{"text": QUESTION}]}]},
        google_key,
    ),
    "ollama": ("/ollama/api/chat", chat("llama-x", stream=False), bearer),
    "cohere": ("/v2/chat", chat("command-x"), bearer),
    "google-interactions": (
        "/v1beta/interactions",
        {"model": "gemini-x", "input": QUESTION},
        google_key,
    ),
}
STREAMING = {
    "openai": {"stream": True},
    "openai-responses": {"stream": True},
    "anthropic": {"stream": True},
    "gemini": {},
    "ollama": {"stream": True},
    "cohere": {"stream": True},
    "google-interactions": {"stream": True},
}


def streaming(format: str) -> tuple[str, dict[str, Any]]:
    path, body, _auth = REQUESTS[format]
    if format == "gemini":
        path = path.replace(":generateContent", ":streamGenerateContent?alt=sse")
    return path, {**body, **STREAMING[format]}


@pytest.fixture
async def gateway(provider: DevServer) -> AsyncIterator[Callable[..., Any]]:
    """``await gateway(scenario, **create_app options)``: a gateway's URL on the embedded
    provider (OpenAI Chat Completions upstream, no retries)."""
    async with contextlib.AsyncExitStack() as stack:
        models: list[ChatModel] = []

        async def start(scenario: str = "weather", dialect: str = "openai", **options: Any) -> str:
            model = ChatModel(
                provider.url + ROUTES[dialect], scenario, dialect=dialect, max_retries=0
            )
            models.append(model)
            return await stack.enter_async_context(serving(create_app(model, **options)))

        yield start
    for model in models:
        await asyncio.to_thread(model.close)


async def post(
    url: str, path: str, body: Any, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    async with (
        aiohttp.ClientSession() as session,
        session.post(url + path, json=body, headers=headers or {}) as response,
    ):
        return response.status, dict(response.headers), await response.read()


@pytest.mark.parametrize("format", sorted(REQUESTS))
async def test_the_token_comes_in_each_sdks_own_key_header(gateway: Any, format: str) -> None:
    url = await gateway(token=TOKEN)
    path, body, auth = REQUESTS[format]
    status, headers, data = await post(url, path, body, auth(TOKEN))
    assert status == 200, data
    assert headers["Content-Type"].startswith("application/json")
    status, _headers, data = await post(url, path, body, auth("wrong-token-0123456789"))
    assert status == 401
    assert error_message(format, orjson.loads(data)) == "a valid bearer token is required"
    assert TOKEN.encode() not in data


@pytest.mark.parametrize("format", sorted(REQUESTS))
async def test_bad_requests_are_told_in_the_protocols_error_shape(
    gateway: Any, format: str
) -> None:
    url = await gateway(max_body=2000)
    path, body, _auth = REQUESTS[format]
    async with aiohttp.ClientSession() as session:
        async with session.post(
            url + path, data=b"{}", headers={"Content-Type": "text/plain"}
        ) as r:
            assert r.status == 415
            assert "application/json" in error_message(format, await r.json())
        async with session.post(url + path, json={**body, "padding": "x" * 3000}) as r:
            assert r.status == 413
        async with session.post(url + path, json={"nothing": "here"}) as r:
            assert r.status == 400
            said = error_message(format, await r.json())
            assert ("messages" in said) or ("contents" in said) or ("input" in said)


async def test_an_upstream_429_before_the_first_content_is_the_clients_429(gateway: Any) -> None:
    url = await gateway("status:429")
    for format in sorted(REQUESTS):
        for path, body in (REQUESTS[format][:2], streaming(format)):
            status, headers, data = await post(url, path, body)
            assert status == 429, (format, path)
            assert headers["Retry-After"] == "1"
            assert headers["Content-Type"].startswith("application/json")
            assert error_message(format, orjson.loads(data))


async def test_the_upstreams_own_refusal_of_the_gateways_key_is_a_502(gateway: Any) -> None:
    url = await gateway("status:401")
    path, body, _auth = REQUESTS["openai"]
    status, _headers, data = await post(url, path, {**body, "stream": True})
    assert status == 502
    assert "401" in error_message("openai", orjson.loads(data)) or orjson.loads(data)


def test_upstream_statuses() -> None:
    from solon_events.event_model.errors import (
        ChatConnectionError,
        ChatError,
        ChatHttpError,
        ChatProtocolError,
        ChatTimeoutError,
    )

    assert upstream_status(ChatHttpError(429)) == 429
    assert upstream_status(ChatHttpError(503)) == 503
    assert upstream_status(ChatHttpError(401)) == 502
    assert upstream_status(ChatHttpError(403)) == 502
    assert upstream_status(ChatTimeoutError("slow")) == 504
    assert upstream_status(ChatConnectionError("refused")) == 502
    assert upstream_status(ChatProtocolError("html")) == 502
    assert upstream_status(ChatError("other")) == 500


async def test_a_failure_after_the_first_content_ends_the_stream_in_its_error_shape(
    gateway: Any,
) -> None:
    url = await gateway("error-frame")
    path, body = streaming("openai")
    status, headers, data = await post(url, path, body)
    assert status == 200 and headers["Content-Type"].startswith("text/event-stream")
    payloads = [orjson.loads(p) for p in sse_payloads(data)]
    assert payloads[-1]["error"]["message"] == (
        "The engine is currently overloaded, please try again later"
    )
    text = "".join(
        p["choices"][0]["delta"].get("content") or "" for p in payloads if p.get("choices")
    )
    assert text == "Partial answer"


async def test_fields_not_translated_are_named_and_the_clients_model_is_not_used(
    gateway: Any, provider: DevServer
) -> None:
    url = await gateway()
    path, body, _auth = REQUESTS["openai"]
    status, headers, data = await post(url, path, {**body, "logprobs": True, "user": "u"})
    assert status == 200
    assert headers["x-solon-ignored"] == "logprobs, user"
    assert orjson.loads(data)["model"] == "weather"  # the upstream's, not gpt-x
    assert provider.requests[-1].body["model"] == "weather"
    status, headers, _data = await post(url, path, body)
    assert "x-solon-ignored" not in headers


async def test_the_gateways_own_tools_never_run_on_a_provider_route(
    gateway: Any, provider: DevServer
) -> None:
    url = await gateway(tools=[get_weather])
    path, body, _auth = REQUESTS["openai"]
    status, _headers, data = await post(url, path, body)
    assert status == 200
    assert "tools" not in provider.requests[-1].body  # the server's tool is not offered
    status, _headers, data = await post(url, path, {**body, "tools": [WEATHER_TOOL]})
    answer = orjson.loads(data)
    assert answer["choices"][0]["finish_reason"] == "tool_calls"  # the client's to run
    assert answer["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "get_weather"
    assert len([r for r in provider.requests if r.path == "/v1/chat/completions"]) == 2


async def test_ollama_lives_under_a_prefix_and_api_chat_stays_vercels(gateway: Any) -> None:
    url = await gateway()
    vercel = {
        "id": "chat-1",
        "trigger": "submit-message",
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": QUESTION}]}],
    }
    status, headers, _data = await post(url, "/api/chat", vercel)
    assert status == 200
    assert headers["x-vercel-ai-ui-message-stream"] == "v1"
    path, body, _auth = REQUESTS["ollama"]
    assert path == "/ollama/api/chat"
    status, _headers, data = await post(url, path, body)
    assert status == 200
    assert orjson.loads(data)["done"] is True
    assert PROVIDER_ROUTES["/ollama/api/chat"] == "ollama"


async def test_gemini_streams_as_sse_only(gateway: Any) -> None:
    url = await gateway()
    path, body, _auth = REQUESTS["gemini"]
    status, _headers, data = await post(
        url, path.replace("generateContent", "streamGenerateContent"), body
    )
    assert status == 400
    assert "alt=sse" in error_message("gemini", orjson.loads(data))


async def test_a_client_that_leaves_cancels_the_upstream_request(
    gateway: Any, provider: DevServer
) -> None:
    url = await gateway("slow:200:0.02")
    path, body = streaming("openai")
    async with aiohttp.ClientSession() as session, session.post(url + path, json=body) as response:
        assert response.status == 200
        await response.content.readline()
    assert await provider.wait_disconnect(timeout=10)


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--upstream", "nonsense", "--model", "m"], "--upstream must be DIALECT:URL"),
        (["--upstream", "klingon:http://x.test", "--model", "m"], "--upstream must be DIALECT:URL"),
        (["--upstream", "anthropic:ftp://x.test", "--model", "m"], "an http(s) URL"),
        (["--upstream", "anthropic:http://x.test/v1/messages"], "--model is required"),
        (
            ["--upstream", "anthropic:http://x.test", "--url", "http://y.test", "--model", "m"],
            "--upstream or --url, not both",
        ),
        (
            ["--upstream", "anthropic:http://x.test", "--dialect", "gemini", "--model", "m"],
            "--dialect gemini contradicts --upstream anthropic",
        ),
    ],
)
def test_serve_upstream_is_checked_before_anything_starts(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from solon_events.cli import main

    assert main(["serve", "--port", "0", *argv]) == 2
    assert said in capsys.readouterr().err


async def test_chat_completions_streams_usage_only_when_the_client_asks(gateway: Any) -> None:
    url = await gateway()
    path, body = streaming("openai")

    async def chunks(body: dict[str, Any]) -> list[Any]:
        payloads = sse_payloads((await post(url, path, body))[2])
        assert payloads[-1] == b"[DONE]"
        return [orjson.loads(p) for p in payloads[:-1]]

    without = await chunks(body)
    assert all(p["choices"] and p["usage"] is None for p in without)
    assert without[-1]["choices"][0]["finish_reason"] == "stop"
    asked = await chunks({**body, "stream_options": {"include_usage": True}})
    assert asked[-2]["choices"][0]["finish_reason"] == "stop"
    assert asked[-1]["choices"] == [] and asked[-1]["usage"]["total_tokens"] > 0


@pytest.mark.parametrize("format", sorted(REQUESTS))
async def test_only_loopback_host_names_are_answered_without_a_token(
    gateway: Any, format: str
) -> None:
    """A DNS-rebinding page reaches 127.0.0.1 under its own name: without a token the
    provider routes answer loopback names and ``allowed_hosts`` only, as every route does,
    in the protocol's error shape."""
    url = await gateway(allowed_hosts=["chat.example"])
    path, body, _auth = REQUESTS[format]
    status, _headers, data = await post(url, path, body, {"Host": "evil.example"})
    assert status == 403
    assert "evil.example" in error_message(format, orjson.loads(data))
    for host in ("localhost:8000", "chat.example"):
        status, _headers, data = await post(url, path, body, {"Host": host})
        assert status == 200, data
