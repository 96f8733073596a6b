"""The gateway over real HTTP: the embedded provider behind it, aiohttp clients in front."""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import inspect
import json
import socket
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import orjson
import pytest
from aiohttp import web
from redis_server import redis_url  # noqa: F401  (a fixture)
from routing_runs import weather_tool
from serving import SHOW_MAP, sse_json, sse_payloads

from solon_events import ChatModel, tool
from solon_events.adapters import event_from_json
from solon_events.cli import get_weather
from solon_events.devserver import DevServer
from solon_events.serve import GATEWAY, Gateway, create_app, serving
from solon_events.serve.redis_log import RedisStreamLog

SECRET = "sk-test-0123456789abcdef-SECRET"
QUESTION = "What is the weather in Paris?"
ANSWER = "It is 18°C and sunny in Paris right now."


@pytest.fixture
async def models(provider: DevServer) -> AsyncIterator[Callable[..., ChatModel]]:
    """``models(scenario)``: a ChatModel on the embedded provider, closed after the test."""
    made: list[ChatModel] = []

    def make(scenario: str = "weather", **options: Any) -> ChatModel:
        model = ChatModel(
            provider.url + "/v1/chat/completions", scenario, api_key=SECRET, **options
        )
        made.append(model)
        return model

    yield make
    for model in made:
        await asyncio.to_thread(model.close)


def events_body(text: str = QUESTION) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def vercel_body(text: str = QUESTION) -> dict[str, Any]:
    return {
        "id": "chat-1",
        "trigger": "submit-message",
        "messages": [{"id": "m1", "role": "user", "parts": [{"type": "text", "text": text}]}],
    }


def agui_body(text: str = QUESTION, tools: list[Any] | None = None) -> dict[str, Any]:
    return {
        "threadId": "thread-1",
        "runId": "run-1",
        "state": {},
        "messages": [{"id": "u1", "role": "user", "content": text}],
        "tools": tools or [],
        "context": [],
        "forwardedProps": {},
    }


BODIES = {"/events": events_body, "/api/chat": vercel_body, "/agui": agui_body}


async def post(url: str, body: Any, **kwargs: Any) -> tuple[int, dict[str, str], bytes]:
    """POST ``body`` as JSON (or, as bytes, with the given headers); status, headers, body."""
    options = {"data": body} if isinstance(body, bytes) else {"json": body}
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, **options, **kwargs) as response,
    ):
        return response.status, dict(response.headers), await response.read()


# The three protocols.


async def test_events_streams_our_events_with_the_response_id(models: Any) -> None:
    app = create_app(models(), tools=[get_weather])
    async with serving(app) as url:
        status, headers, body = await post(url + "/events", events_body())
    assert status == 200
    assert headers["Content-Type"].startswith("text/event-stream")
    events = [event_from_json(item) for item in sse_json(body)]
    names = [e.type.name for e in events]
    assert names[0] == "RESPONSE_START" and names[-1] == "RESPONSE_END"
    assert "TOOL_RESULT" in names and "THINKING_DELTA" in names
    assert events[-1].response.text == ANSWER
    assert events[-1].usage.total_tokens == 151
    assert headers["x-response-id"] == events[0].response_id == events[-1].response_id


async def test_vercel_sends_the_ui_message_stream_headers_and_ends_with_done(models: Any) -> None:
    app = create_app(models(), tools=[get_weather])
    async with serving(app) as url:
        status, headers, body = await post(url + "/api/chat", vercel_body())
    assert status == 200
    assert headers["x-vercel-ai-ui-message-stream"] == "v1"
    assert headers["Content-Type"] == "text/event-stream"
    assert headers["Cache-Control"] == "no-cache"
    assert sse_payloads(body)[-1] == b"[DONE]"
    chunks = sse_json(body)
    assert chunks[0] == {"type": "start", "messageId": headers["x-response-id"]}
    assert chunks[-1]["type"] == "finish" and chunks[-1]["finishReason"] == "stop"
    text = "".join(c["delta"] for c in chunks if c["type"] == "text-delta")
    assert text == ANSWER


async def test_agui_runs_with_the_input_ids(models: Any) -> None:
    app = create_app(models(), tools=[get_weather])
    async with serving(app) as url:
        status, _headers, body = await post(url + "/agui", agui_body())
    assert status == 200
    events = sse_json(body)
    assert events[0] == {"type": "RUN_STARTED", "threadId": "thread-1", "runId": "run-1"}
    assert events[-1]["type"] == "RUN_FINISHED"
    assert events[-1]["usage"][0]["totalTokens"] == 151
    results = [e for e in events if e["type"] == "TOOL_CALL_RESULT"]
    assert [r["content"] for r in results] == ["18°C and sunny"]


@pytest.mark.parametrize("scenario", ["error-frame", "status:401", "truncate"])
async def test_failures_become_each_protocols_error_event(models: Any, scenario: str) -> None:
    app = create_app(models(scenario))
    async with serving(app) as url:
        replies = {path: await post(url + path, make()) for path, make in BODIES.items()}
    for status, _headers, _body in replies.values():
        assert status == 200  # the stream had started: the error is an event, not a status
    events = sse_json(replies["/events"][2])
    assert events[-1]["type"] == "ERROR" and events[-1]["error"]["message"]
    vercel = sse_json(replies["/api/chat"][2])
    assert vercel[-1]["type"] == "error" and vercel[-1]["errorText"] == events[-1]["text"]
    assert sse_payloads(replies["/api/chat"][2])[-1] == b"[DONE]"
    agui = sse_json(replies["/agui"][2])
    assert agui[-1]["type"] == "RUN_ERROR" and agui[-1]["message"] == events[-1]["text"]
    assert agui[-1]["code"] == events[-1]["error"]["type"]


async def test_a_failing_tool_is_a_tool_output_error_then_an_error(models: Any) -> None:
    @tool
    def get_weather(city: str) -> str:
        """Current weather in a city.

        Args:
            city: The city's name.
        """
        raise RuntimeError("the weather service is down")

    app = create_app(models(), tools=[get_weather])
    async with serving(app) as url:
        _status, _headers, body = await post(url + "/api/chat", vercel_body())
    chunks = sse_json(body)
    assert [c["type"] for c in chunks[-2:]] == ["tool-output-error", "error"]
    started = [c for c in chunks if c["type"] == "tool-input-start"]
    assert chunks[-2]["toolCallId"] == started[0]["toolCallId"]
    assert "the weather service is down" in chunks[-1]["errorText"]


async def test_handlers_work_one_by_one_in_an_application_of_ones_own(models: Any) -> None:
    gateway = Gateway(models("echo"))
    app = web.Application()
    app.router.add_post("/my/chat", gateway.vercel)
    app.router.add_post("/my/events", gateway.events)
    async with serving(app, handler_cancellation=False) as url:
        _s, _h, vercel = await post(url + "/my/chat", vercel_body("hello there"))
        _s, _h, events = await post(url + "/my/events", events_body("hello there"))
    assert "".join(c.get("delta", "") for c in sse_json(vercel)) == "hello there"
    assert sse_json(events)[-1]["response"]["text"] == "hello there"


def test_create_app_takes_the_gateways_options_as_they_are_written_there(models: Any) -> None:
    """One option list, Gateway's: create_app has its very parameters and hands every
    option to the gateway it builds (and its body cap to the application)."""
    assert inspect.signature(create_app).parameters == inspect.signature(Gateway).parameters
    options: dict[str, Any] = {
        "tools": [get_weather],
        "token": "s3cret-token",
        "max_body": 1234,
        "max_buffer": 5678,
        "cors_origins": ["http://app.example/"],
        "allowed_hosts": ["chat.example"],
        "on_disconnect": "cancel",
    }
    model = models()
    app = create_app(model, **options)
    gateway, alike = app[GATEWAY], Gateway(model, **options)
    assert gateway.model is model and app._client_max_size == 1234
    seen = (
        "tools",
        "max_body",
        "max_buffer",
        "cors_origins",
        "allowed_hosts",
        "on_disconnect",
        "_token",
        "log",
    )
    assert {name: getattr(gateway, name) for name in seen} == {
        name: getattr(alike, name) for name in seen
    }
    with pytest.raises(TypeError, match="no_such_option"):
        create_app(model, no_such_option=1)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="on_disconnect"):
        create_app(model, on_disconnect="later")  # type: ignore[arg-type]


async def test_the_chat_page_is_served_with_a_strict_policy(models: Any) -> None:
    async with (
        serving(create_app(models())) as url,
        aiohttp.ClientSession() as session,
        session.get(url + "/") as response,
    ):
        html = await response.text()
        headers = response.headers
    assert response.status == 200 and headers["Content-Type"].startswith("text/html")
    assert "default-src 'none'" in headers["Content-Security-Policy"]
    assert 'fetch("api/chat"' in html and "<script>" in html
    assert "src=" not in html.split("<script>")[0]  # nothing loaded from elsewhere


# Safe by default.


async def test_the_token_is_required_and_compared_in_constant_time(
    models: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    compared: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    app = create_app(models("echo"), token="s3cret-token")
    async with serving(app) as url:
        missing = await post(url + "/events", events_body())
        wrong = await post(url + "/events", events_body(), headers={"Authorization": "Bearer no"})
        other = await post(url + "/events", events_body(), headers={"Authorization": "Basic x"})
        right = await post(
            url + "/events", events_body(), headers={"Authorization": "Bearer s3cret-token"}
        )
    for status, headers, body in (missing, wrong, other):
        assert status == 401
        assert headers["WWW-Authenticate"] == "Bearer"
        assert b"s3cret-token" not in body
    assert right[0] == 200 and sse_json(right[2])[-1]["type"] == "RESPONSE_END"
    assert (b"s3cret-token", b"s3cret-token") in compared
    assert (b"no", b"s3cret-token") in compared


@pytest.mark.parametrize("chunked", [False, True])
async def test_a_body_over_the_cap_gets_413(
    models: Any, provider: DevServer, chunked: bool
) -> None:
    app = create_app(models("echo"), max_body=10_000)
    big = orjson.dumps(events_body("word " * 3000))
    assert len(big) > 10_000

    async def parts() -> AsyncIterator[bytes]:
        for i in range(0, len(big), 1000):
            yield big[i : i + 1000]

    async with serving(app) as url, aiohttp.ClientSession() as session:
        data: Any = parts() if chunked else big
        headers = {"Content-Type": "application/json"}
        async with session.post(url + "/events", data=data, headers=headers) as response:
            assert response.status == 413
            assert "larger than 10000 bytes" in (await response.json())["error"]
        small = await post(url + "/events", events_body("just right"))
    assert small[0] == 200
    assert len(provider.requests) == 1  # the large ones never reached the model


async def test_cors_is_closed_unless_origins_are_listed(models: Any) -> None:
    evil = {"Origin": "http://evil.example"}
    async with serving(create_app(models("echo"))) as url, aiohttp.ClientSession() as session:
        async with session.options(url + "/api/chat", headers=evil) as preflight:
            assert preflight.status == 403
            assert "Access-Control-Allow-Origin" not in preflight.headers
        status, headers, body = await post(url + "/api/chat", vercel_body(), headers=evil)
        assert status == 403 and "Access-Control-Allow-Origin" not in headers
        assert b"CORS is closed" in body
        same = await post(url + "/api/chat", vercel_body(), headers={"Origin": url})
        assert same[0] == 200


async def test_listed_origins_get_cors_headers(models: Any) -> None:
    app = create_app(models("echo"), cors_origins=["http://app.example"])
    good = {"Origin": "http://app.example"}
    async with serving(app) as url, aiohttp.ClientSession() as session:
        async with session.options(
            url + "/api/chat",
            headers={**good, "Access-Control-Request-Method": "POST"},
        ) as preflight:
            assert preflight.status == 204
            assert preflight.headers["Access-Control-Allow-Origin"] == "http://app.example"
            assert "authorization" in preflight.headers["Access-Control-Allow-Headers"]
        status, headers, _body = await post(url + "/api/chat", vercel_body(), headers=good)
        assert status == 200
        assert headers["Access-Control-Allow-Origin"] == "http://app.example"
        assert "x-response-id" in headers["Access-Control-Expose-Headers"]
        denied = await post(
            url + "/api/chat", vercel_body(), headers={"Origin": "http://x.example"}
        )
        assert denied[0] == 403


async def test_a_form_post_without_json_gets_415(models: Any, provider: DevServer) -> None:
    async with serving(create_app(models("echo"))) as url:
        status, _headers, _body = await post(
            url + "/api/chat", orjson.dumps(vercel_body()), headers={"Content-Type": "text/plain"}
        )
    assert status == 415
    assert provider.requests == []


@pytest.mark.parametrize(
    ("path", "body", "reason"),
    [
        ("/events", b"{not json", b"not valid JSON"),
        ("/events", b"[1, 2]", b"must be a JSON object"),
        ("/events", b"{}", b"'messages' must be a non-empty array"),
        ("/events", b'{"messages": [{"role": "wizard", "content": "x"}]}', b"unknown message role"),
        ("/api/chat", b'{"messages": [{"role": "user", "parts": "hi"}]}', b"parts must be"),
        ("/api/chat", b'{"messages": [{"role": "robot", "parts": []}]}', b"role must be"),
        ("/agui", b'{"messages": []}', b"threadId"),
        ("/agui", b'{"threadId": "t", "runId": "r", "messages": []}', b"at least one user"),
    ],
)
async def test_a_malformed_body_gets_400_with_the_reason(
    models: Any, provider: DevServer, path: str, body: bytes, reason: bytes
) -> None:
    async with serving(create_app(models("echo"))) as url:
        status, _headers, payload = await post(
            url + path, body, headers={"Content-Type": "application/json"}
        )
    assert status == 400
    assert reason in payload, payload
    assert provider.requests == []


def _nested(depth: int) -> Any:
    value: Any = "18°C"
    for _ in range(depth):
        value = [value]
    return value


def _with_tool_output(output: Any) -> dict[str, Any]:
    """A useChat body whose earlier turn holds a tool output (echoed back by the client)."""
    body = vercel_body()
    body["messages"][:0] = [
        {"id": "u0", "role": "user", "parts": [{"type": "text", "text": "Weather?"}]},
        {
            "id": "a0",
            "role": "assistant",
            "parts": [
                {
                    "type": "tool-get_weather",
                    "toolCallId": "c0",
                    "state": "output-available",
                    "input": {"city": "Paris"},
                    "output": output,
                }
            ],
        },
    ]
    return body


async def test_a_body_nested_too_deep_to_encode_gets_400(models: Any, provider: DevServer) -> None:
    """A tool output nested 255 levels deep parses (orjson reads 1024) but cannot be
    encoded again (orjson writes 254): it was a 500; every such body is a 400 naming the
    problem, on every route, before any model request."""
    deep_events = {"messages": [{"role": "user", "content": _nested(300)}]}
    deep_agui = agui_body()
    deep_agui["forwardedProps"] = {"x": _nested(255)}
    async with serving(create_app(models("echo"), tools=[get_weather])) as url:
        for path, body in (
            ("/api/chat", _with_tool_output(_nested(255))),
            ("/api/chat", _with_tool_output({"a": _nested(600)})),
            ("/events", deep_events),
            ("/agui", deep_agui),
            ("/stop", {"response_id": _nested(250)}),
        ):
            status, _headers, reply = await post(
                url + path, json.dumps(body).encode(), headers={"Content-Type": "application/json"}
            )
            assert status == 400, (path, status, reply[:300])
            assert "levels deep" in orjson.loads(reply)["error"]
        assert provider.requests == []
        status, _headers, reply = await post(url + "/api/chat", _with_tool_output(_nested(150)))
    assert status == 200 and sse_json(reply)[-1]["type"] == "finish"
    assert provider.requests[0].body["messages"][2]["content"].startswith("[[[")


async def test_the_api_key_never_reaches_a_client(models: Any, provider: DevServer) -> None:
    replies = []
    for scenario in ("weather", "error-frame", "status:401", "status:400"):
        app = create_app(models(scenario), tools=[get_weather])
        async with serving(app) as url:
            for path, make in BODIES.items():
                replies.append(await post(url + path, make()))
    assert any(SECRET in r.headers.get("Authorization", "") for r in provider.requests)
    for _status, headers, body in replies:
        assert SECRET.encode() not in body
        assert SECRET not in repr(headers)


LEAKY_HEADERS = {
    "Set-Cookie": "__cf_bm=cookie-SECRET-value; path=/; HttpOnly",
    "openai-organization": "org-SECRETORGANIZATION",
    "openai-project": "proj_SECRETPROJECT",
    "x-envoy-upstream-service-time": "ENVOY-TIME-4711",
}
SHOWN_HEADERS = {
    "retry-after": "0",
    "x-request-id": "req_0123456789",
    "x-ratelimit-remaining-requests": "0",
    "x-ratelimit-reset-requests": "1s",
}


@contextlib.asynccontextmanager
async def leaky_provider() -> AsyncIterator[tuple[str, list[int]]]:
    """A provider answering 429 with its cookies and account ids among the headers."""
    answered: list[int] = []

    async def chat(request: web.Request) -> web.Response:
        answered.append(429)
        body = {"error": {"message": "Rate limit reached", "type": "requests", "code": None}}
        return web.json_response(body, status=429, headers={**LEAKY_HEADERS, **SHOWN_HEADERS})

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    async with serving(app) as url:
        yield url, answered


@pytest.mark.parametrize("stored", [False, True], ids=["direct", "redis"])
async def test_events_show_only_allowed_provider_headers(
    stored: bool,
    request: pytest.FixtureRequest,
) -> None:
    """``/events`` sent an error's every provider header (cookies, organization and project
    ids) to the browser, and with Redis kept them there an hour. Now: the status, the
    message, and Retry-After, the request id and the rate limits, nothing else."""
    redis = request.getfixturevalue("redis_url") if stored else None
    async with leaky_provider() as (provider_url, answered):
        model = ChatModel(provider_url + "/v1/chat/completions", "m", max_retries=0)
        try:
            async with serving(create_app(model, redis=redis)) as url:
                status, headers, body = await post(url + "/events", events_body())
                if redis:
                    gateway_log = RedisStreamLog(redis)
                    key = gateway_log.key("events", headers["x-response-id"])
                    entries = await gateway_log.client().xrange(key)
                    await gateway_log.aclose()
        finally:
            await asyncio.to_thread(model.close)
    assert answered == [429] and status == 200
    error = sse_json(body)[-1]["error"]
    assert error["type"] == "ChatHttpError" and error["status"] == 429
    assert "Rate limit reached" in error["message"]
    assert error["headers"] == SHOWN_HEADERS
    assert sorted(error) == [
        "headers",
        "message",
        "provider_error",
        "provider_message",
        "retry_after",
        "status",
        "type",
    ]  # not the provider's URL
    stored_bytes = b"".join(v for _id, fields in entries for v in fields.values()) if redis else b""
    for leaked in (body, stored_bytes):
        for name, value in LEAKY_HEADERS.items():
            assert name.encode() not in leaked and value.encode() not in leaked
    if redis:
        assert b"x-request-id" in stored_bytes


async def test_client_declared_tools_go_back_to_the_client(
    models: Any, provider: DevServer
) -> None:
    async with serving(create_app(models())) as url:
        _status, _headers, body = await post(url + "/agui", agui_body(tools=[SHOW_MAP]))
    events = sse_json(body)
    starts = [e for e in events if e["type"] == "TOOL_CALL_START"]
    assert [s["toolCallName"] for s in starts] == ["show_map"]
    assert not [e for e in events if e["type"] == "TOOL_CALL_RESULT"]
    assert events[-1]["outcome"] == {
        "type": "success",
        "pendingToolCallIds": [starts[0]["toolCallId"]],
    }
    assert len(provider.requests) == 1  # no second step: nothing ran on the server
    assert provider.requests[0].body["tools"][0]["function"]["name"] == "show_map"


async def test_a_client_tool_named_like_a_server_tool_is_refused(
    models: Any, provider: DevServer
) -> None:
    clash = {"name": "get_weather", "description": "mine", "parameters": {"type": "object"}}
    async with serving(create_app(models(), tools=[get_weather])) as url:
        status, _headers, body = await post(url + "/agui", agui_body(tools=[clash]))
    assert status == 400 and b"get_weather" in body
    assert provider.requests == []


async def test_only_server_tools_run_whatever_the_conversation_says(
    models: Any, provider: DevServer
) -> None:
    ran: list[str] = []
    get_weather = weather_tool(ran)
    body = vercel_body()
    body["messages"].insert(
        0,
        {
            "id": "a0",
            "role": "assistant",
            "parts": [
                {
                    "type": "tool-delete_files",
                    "toolCallId": "c0",
                    "state": "input-available",
                    "input": {"path": "/"},
                },
            ],
        },
    )
    async with serving(create_app(models(), tools=[get_weather])) as url:
        _status, _headers, reply = await post(url + "/api/chat", body)
    assert ran == ["Paris"]
    assert "delete_files" not in orjson.dumps(provider.requests[0].body).decode()
    assert sse_json(reply)[-1]["type"] == "finish"


# Disconnects and slow clients.


async def _close_after_first_text(url: str, path: str, body: Any) -> float:
    """POST, read until some text arrived, close the connection; the time of the close."""
    async with aiohttp.ClientSession() as session:
        response = await session.post(url + path, json=body)
        seen = b""
        while b"Before the gate" not in seen:
            seen += await response.content.readany()
        closed_at = time.perf_counter()
        response.close()
        return closed_at


@pytest.mark.parametrize("handler_cancellation", [True, False])
@pytest.mark.parametrize("path", list(BODIES))
async def test_a_client_disconnect_cancels_the_model_request_at_once(
    models: Any, provider: DevServer, path: str, handler_cancellation: bool
) -> None:
    """The provider sends one delta and then nothing (the ``gate`` scenario): only the
    gateway's own watch of the connection can notice the client leaving."""
    app = create_app(models("gate"))
    async with serving(app, handler_cancellation=handler_cancellation) as url:
        closed_at = await _close_after_first_text(url, path, BODIES[path]())
        assert await provider.wait_disconnect(timeout=2.0)
        elapsed = time.perf_counter() - closed_at
    print(
        f"\n{path} handler_cancellation={handler_cancellation}: upstream closed "
        f"{elapsed * 1000:.1f} ms after the client"
    )
    assert elapsed < 1.0


async def test_the_gateway_reads_the_model_on_its_own_loop(models: Any) -> None:
    """Every protocol, a tool loop included, through ``astream()`` on the server's loop:
    the model's I/O thread is never started."""
    model = models()
    async with serving(create_app(model, tools=[get_weather])) as url:
        for path, body in BODIES.items():
            status, _headers, _body = await post(url + path, body())
            assert status == 200, path
    assert model._io._thread is None, "an event went through the model's I/O thread"


ABORTS = {"/events": "ABORT", "/api/chat": "abort", "/agui": "RUN_FINISHED"}


@pytest.mark.parametrize("path", list(BODIES))
async def test_a_stop_request_ends_the_stream_with_the_protocols_abort(
    models: Any, provider: DevServer, path: str
) -> None:
    """Without Redis, ``POST /stop`` cancels the model request on this gateway and the
    client's stream ends with the protocol's abort."""
    async with serving(create_app(models("gate"))) as url, aiohttp.ClientSession() as session:
        response = await session.post(url + path, json=BODIES[path]())
        seen = b""
        while b"Before the gate" not in seen:
            seen += await response.content.readany()
        rid = response.headers["x-response-id"]
        stopped = await post(url + "/stop", {"response_id": rid})
        body = seen + await asyncio.wait_for(response.read(), 10)
        assert await provider.wait_disconnect(timeout=2.0), "the model request went on"
        assert (await post(url + "/stop", {"response_id": rid}))[0] == 404  # it ended
    assert stopped[0] == 202
    last = sse_json(body)[-1]
    assert last["type"] == ABORTS[path]
    if path == "/agui":
        assert last["outcome"]["type"] == "cancelled"


async def test_a_client_that_does_not_read_is_not_buffered_without_bound(
    models: Any, provider: DevServer
) -> None:
    """A client that sends its request and reads nothing: the socket buffers fill (both
    made small here, to reach that point quickly), the gateway's writes wait on the
    transport's drain, the events waiting for the client pass ``max_buffer`` and the
    model request is stopped; the client then finds the protocol's error at the end."""

    async def small_send_buffer(request: web.Request, response: web.StreamResponse) -> None:
        sock = request.transport.get_extra_info("socket") if request.transport else None
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8192)

    app = create_app(models("slow:20000:0"), max_buffer=64 * 1024)
    app.on_response_prepare.append(small_send_buffer)
    async with serving(app) as url:
        host, port = url.removeprefix("http://").split(":")
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.setblocking(False)
        await asyncio.get_running_loop().sock_connect(sock, (host, int(port)))
        reader, writer = await asyncio.open_connection(sock=sock)
        payload = orjson.dumps(events_body())
        writer.write(
            b"POST /events HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(payload)}\r\n\r\n".encode()
            + payload
        )
        await writer.drain()
        assert await provider.wait_disconnect(timeout=30.0), "the model request went on"
        body = b""
        while chunk := await asyncio.wait_for(reader.read(1 << 16), 30):
            body += chunk
        writer.close()
    events = sse_json(body.split(b"\r\n\r\n", 1)[1])
    assert events[-1]["type"] == "ERROR"
    assert "read too slowly" in events[-1]["text"]
    deltas = [e for e in events if e["type"] == "TEXT_DELTA"]
    assert 0 < len(deltas) < 20000
    assert len(body) < 1024 * 1024  # what waited: the buffers and max_buffer, not the answer


async def test_a_step_calling_server_and_client_tools_runs_only_the_servers(
    tmp_path: Any,
) -> None:
    """One step calls get_weather (the server's) and show_map (the client's): the server
    runs get_weather, sends its result, and ends the run with show_map pending."""
    chunk = {"id": "c", "object": "chat.completion.chunk", "model": "m"}
    calls = [("call_a", "get_weather"), ("call_b", "show_map")]
    frames = [
        {
            **chunk,
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "role": "assistant",
                        "tool_calls": [
                            {
                                "index": i,
                                "id": call_id,
                                "type": "function",
                                "function": {"name": name, "arguments": '{"city":"Paris"}'},
                            }
                        ],
                    },
                }
            ],
        }
        for i, (call_id, name) in enumerate(calls)
    ] + [{**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}]
    recording = tmp_path / "two-calls.jsonl"
    recording.write_bytes(b"\n".join(orjson.dumps(f) for f in frames) + b"\n[DONE]\n")
    async with DevServer(recording=recording) as provider:
        model = ChatModel(provider.url + "/v1/chat/completions", "recorded")
        try:
            async with serving(create_app(model, tools=[get_weather])) as url:
                _s, _h, body = await post(url + "/agui", agui_body(tools=[SHOW_MAP]))
        finally:
            await asyncio.to_thread(model.close)
        assert len(provider.requests) == 1
    events = sse_json(body)
    results = [(e["toolCallId"], e["content"]) for e in events if e["type"] == "TOOL_CALL_RESULT"]
    assert results == [("call_a", "18°C and sunny")]
    assert events[-1]["type"] == "RUN_FINISHED"
    assert events[-1]["outcome"]["pendingToolCallIds"] == ["call_b"]
