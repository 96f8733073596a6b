"""Malformed bodies on every client route of the gateway: a 4xx in the protocol's own
error shape, never a 500.

A body each SDK could send (written by the dialects' request builders:
:mod:`client_bodies`) is mutated at random places (values of every JSON type, integers
beyond 64 bits, deep nesting, long and control-character strings, roles, call ids,
base64 and data URLs, unknown fields), then

- read and checked for each upstream dialect, as the gateway does before it asks its model
  (:func:`~solon_events.serve.provider_routes.read_route_request`,
  :func:`~solon_events.serve.provider_routes.route_prompt`): a ``ValueError`` naming what
  is wrong, or a request the upstream's builder writes and encodes;
- posted to a real gateway over 127.0.0.1, in front of the embedded provider speaking
  several dialects: every answer's status is below 500, and an error is the protocol's own
  error body.
"""

from __future__ import annotations

import contextlib
import http.client
import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import orjson
import pytest
from client_bodies import PNG, built_body, conversations, options, tools
from gateway_errors import error_message
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from serving import serving_in_thread

from solon_events import ChatModel, ChatRequest
from solon_events.cli import ROUTES
from solon_events.client.routing import ModelGroup
from solon_events.devserver import DevServer
from solon_events.serve import create_app
from solon_events.serve.provider_routes import (
    PROVIDER_ROUTES,
    read_route_request,
    route_prompt,
)

UPSTREAMS = ("openai", "openai-responses", "anthropic", "gemini", "ollama", "bedrock", "cohere")
FORMATS = {format: route for route, format in PROVIDER_ROUTES.items()}  # one route each
FAST = settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
OVER_HTTP = settings(FAST, max_examples=25)

# What a mutation puts in a body.

KEYS = [
    *("type", "role", "content", "text", "parts", "image_url", "url", "source", "data"),
    *("media_type", "mime_type", "mimeType", "inline_data", "inlineData", "file_data"),
    *("fileUri", "tool_calls", "tool_call_id", "id", "call_id", "function", "name"),
    *("arguments", "args", "input", "output", "tool_choice", "tools", "parameters"),
    *("functionCall", "functionResponse", "tool_use_id", "tool_result", "max_tokens"),
    *("temperature", "stream", "images", "document", "file", "file_id", "thinking"),
]
ROLES = ["user", "assistant", "system", "developer", "tool", "model", "function", "chatbot"]
ODD_STRINGS = [
    "",
    " ",
    "\r\n",
    "a\x00b",
    "x" * 20_000,
    "🙂" * 3,
    PNG,
    "not base64!",
    "////",
    "data:image/png;base64,",
    f"data:image/png;base64,{PNG}",
    "data:application/pdf;base64,JVBERi0xLjQK",
    "data:audio/wav;base64,UklGRg==",
    "data:;base64,AAAA",
    "https://example.com/cat.png",
    "https://example.com/report.pdf",
    "file:///etc/passwd",
    "gs://bucket/object",
    "call_1",
    "toolu_01",
    "image/png",
    "application/pdf",
    *ROLES,
    "bogus",
]
BIG_INTEGERS = [2**31, 2**63 - 1, 2**63, 2**64 - 1, 2**64, 2**70, -(2**63) - 1, 10**30]
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from(BIG_INTEGERS),
    st.integers(-(2**80), 2**80),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0.5, -1.0, 1e308, 5e-324, 1e21]),
    st.text(st.characters(exclude_categories=("Cs",)), max_size=20),
    st.sampled_from(ODD_STRINGS),
)
odd_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)


def nested(depth: int) -> Any:
    value: Any = "deep"
    for level in range(depth):
        value = [value] if level % 2 else {"content": value}
    return value


odd = odd_values | st.integers(1, 260).map(nested)


def places(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every place in a JSON value, as the keys and indexes that lead there."""
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from places(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from places(item, (*path, index))


def at(value: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        value = value[step]
    return value


@st.composite
def mutated(draw: Any, body: Any) -> Any:
    """``body`` (copied) with one to three of its places changed: a value replaced, a
    field removed or added, a list emptied or grown."""
    body = orjson.loads(orjson.dumps(body))
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(list(places(body))))
        target = at(body, path)
        action = draw(st.sampled_from(["replace", "remove", "add", "resize"]))
        if action == "replace" or (not path and action == "remove"):
            if not path:
                body = draw(odd)
                continue
            at(body, path[:-1])[path[-1]] = draw(odd)
        elif action == "remove" and path:
            parent = at(body, path[:-1])
            del parent[path[-1]]
        elif action == "add" and isinstance(target, dict):
            target[draw(st.sampled_from(KEYS) | st.text(max_size=6))] = draw(odd)
        elif action == "resize" and isinstance(target, list):
            if target and draw(st.booleans()):
                target.append(target[0])
            else:
                target.clear()
    return body


@st.composite
def bodies(draw: Any, format: str) -> Any:
    """A body of ``format`` its SDK could send, mutated; as JSON text."""
    request = ChatRequest(
        model="m",
        messages=draw(conversations(format)),
        tools=draw(tools),
        options=draw(options(format)).for_dialect(format),
    )
    body = built_body(format, request)
    if format != "gemini" and draw(st.booleans()):
        body["stream"] = True
    return json.dumps(draw(mutated(body)))


def depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max(map(depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(depth, value), default=0)
    return 0


@pytest.fixture(scope="module")
def upstream_models() -> Iterator[dict[str, ChatModel | ModelGroup]]:
    """A model of each upstream dialect (their requests are built, never sent)."""
    models = {
        dialect: ChatModel(f"http://127.0.0.1:9{ROUTES[dialect]}", "m", dialect=dialect)
        for dialect in UPSTREAMS
    }
    yield models
    for model in models.values():
        model.close()


@pytest.mark.parametrize("format", FORMATS)
def test_a_malformed_body_is_a_value_error_for_every_upstream(
    format: str, upstream_models: dict[str, ChatModel | ModelGroup]
) -> None:
    """Read as the gateway reads it, then checked against each upstream's request
    builder: a ValueError naming what is wrong, or a request the upstream can be sent."""

    @FAST
    @given(bodies(format), st.sampled_from(UPSTREAMS))
    def read(text: str, upstream: str) -> None:
        try:
            body = orjson.loads(text)
        except orjson.JSONDecodeError:  # answered 400 before any reader
            return
        assume(depth(body) <= 200)  # deeper: answered 400 before any reader
        try:
            client = read_route_request(
                FORMATS[format], body, model="gemini-x", query={"alt": "sse"}
            )
            route_prompt(upstream_models[upstream], client)
        except ValueError as exc:  # named by the reader's checks, not caught after the fact
            assert str(exc)
            assert exc.__cause__ is None, exc

    read()


@pytest.mark.parametrize(
    ("upstream", "content", "said"),
    [
        ("ollama", {"type": "image_url", "image_url": {"url": "https://x.example/a.png"}}, "URL"),
        ("bedrock", {"type": "image_url", "image_url": {"url": "https://x.example/a.png"}}, "URL"),
        (
            "ollama",
            {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBE"}},
            "File",
        ),
        ("openai", {"type": "image_url", "image_url": {"url": "data:image/png;base64,"}}, "Image"),
    ],
)
def test_content_the_upstream_cannot_carry_is_named(
    upstream: str, content: dict[str, Any], said: str, upstream_models: dict[str, Any]
) -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": [content]}]}
    client = read_route_request("/v1/chat/completions", body)
    with pytest.raises(ValueError, match=f"cannot be sent.*{said}"):
        route_prompt(upstream_models[upstream], client)


def test_a_group_refuses_only_what_none_of_its_models_can_carry(
    upstream_models: dict[str, Any],
) -> None:
    by_url = {"type": "image_url", "image_url": {"url": "https://x.example/a.png"}}
    body = {"model": "m", "messages": [{"role": "user", "content": [by_url]}]}
    client = read_route_request("/v1/chat/completions", body)
    ollama, bedrock, openai = (upstream_models[d] for d in ("ollama", "bedrock", "openai"))
    route_prompt(ollama.fallback(openai), client)  # OpenAI takes images by URL
    with pytest.raises(ValueError, match=r"m \(ollama\).*m \(bedrock\)"):
        route_prompt(ollama.fallback(bedrock), client)


def test_integers_beyond_64_bits_are_refused_by_name() -> None:
    body = orjson.loads(b'{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 1e30}')
    with pytest.raises(ValueError, match="max_tokens"):
        read_route_request("/v1/chat/completions", body)


# Over HTTP.


@pytest.fixture(scope="module")
def gateways() -> Iterator[dict[str, str]]:
    """A gateway in front of the embedded provider for each upstream dialect (the
    ``weather`` scenario, no retries), on a thread of its own: their addresses."""
    with contextlib.ExitStack() as stack:
        provider = stack.enter_context(DevServer.run_in_thread())
        addresses = {}
        for dialect in UPSTREAMS:
            model = ChatModel(
                provider.url + ROUTES[dialect], "weather", dialect=dialect, max_retries=0
            )
            stack.callback(model.close)
            addresses[dialect] = stack.enter_context(serving_in_thread(create_app(model)))
        yield addresses


def post(address: str, path: str, body: bytes) -> tuple[int, str, bytes]:
    """POST ``body`` (JSON) to ``path``: the status, the content type and the whole body."""
    where = urlsplit(address)
    connection = http.client.HTTPConnection(where.hostname or "", where.port, timeout=30)
    try:
        connection.request("POST", path, body, {"Content-Type": "application/json"})
        response = connection.getresponse()
        return response.status, response.getheader("Content-Type") or "", response.read()
    finally:
        connection.close()


@pytest.mark.parametrize("format", FORMATS)
def test_every_route_answers_a_malformed_body_below_500_in_its_own_shape(
    format: str, gateways: dict[str, str]
) -> None:
    path = FORMATS[format].replace("{model}", "gemini-x") + (
        "?alt=sse" if format == "gemini" else ""
    )

    @OVER_HTTP
    @given(bodies(format), st.sampled_from(UPSTREAMS))
    def answered(text: str, upstream: str) -> None:
        status, content_type, body = post(gateways[upstream], path, text.encode())
        assert status < 500, body[:300]
        if status >= 400:
            assert content_type.startswith("application/json"), body[:300]
            assert error_message(format, orjson.loads(body))

    answered()


def chat_with(content: Any, **more: Any) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": content}], **more}


IMAGE_URL = {"type": "image_url", "image_url": {"url": "https://x.example/cat.png"}}
KNOWN = [  # what the probe found: (route, body, upstream)
    ("anthropic", chat_with("hi", max_tokens=10, tool_choice={"type": [1]}), "openai"),
    ("anthropic", chat_with("hi", max_tokens=10, thinking={"type": {}}), "openai"),
    ("google-interactions", {"model": "m", "input": [{"type": [1]}]}, "openai"),
    ("openai", chat_with("hi", max_tokens=2**70), "openai"),
    ("openai", chat_with("hi", seed=-(2**70)), "openai"),
    ("openai", chat_with([IMAGE_URL]), "ollama"),
    ("openai", chat_with([IMAGE_URL]), "bedrock"),
    (
        "openai",
        chat_with(
            "hi",
            stream=True,
            tools=[
                {
                    "type": "function",
                    "function": {
                        "name": "a",
                        "parameters": {"type": "object", "properties": 1, "required": ["a"]},
                    },
                }
            ],
        ),
        "openai",
    ),
    (
        "anthropic",
        chat_with(
            [{"type": "document", "source": {"type": "url", "url": "https://x.example/a.pdf"}}],
            max_tokens=10,
        ),
        "openai",
    ),
    (
        "anthropic",
        chat_with(
            [
                {
                    "type": "document",
                    "source": {
                        "type": "base64",
                        "media_type": "application/pdf",
                        "data": "JVBERi0xLjQK",
                    },
                }
            ],
            max_tokens=10,
        ),
        "ollama",
    ),
    (
        "openai",
        chat_with([{"type": "image_url", "image_url": {"url": "data:image/png;base64,"}}]),
        "openai",
    ),
]


@pytest.mark.parametrize(("format", "body", "upstream"), KNOWN)
def test_what_the_probe_found_is_a_400_in_the_protocols_shape(
    format: str, body: Any, upstream: str, gateways: dict[str, str]
) -> None:
    path = FORMATS[format]
    status, content_type, answer = post(gateways[upstream], path, json.dumps(body).encode())
    assert status == 400, answer[:300]
    assert content_type.startswith("application/json")
    assert error_message(format, orjson.loads(answer))


NATIVE_BODIES = {
    "/events": {"messages": [{"role": "user", "content": "hi"}]},
    "/api/chat": {
        "messages": [{"id": "m1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}]
    },
    "/agui": {
        "threadId": "t1",
        "runId": "r1",
        "messages": [{"id": "m1", "role": "user", "content": "hi"}],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    },
}


@pytest.mark.parametrize("path", NATIVE_BODIES)
def test_our_own_routes_answer_a_malformed_body_below_500(
    path: str, gateways: dict[str, str]
) -> None:
    @OVER_HTTP
    @given(mutated(NATIVE_BODIES[path]).map(json.dumps))
    def answered(text: str) -> None:
        status, content_type, body = post(gateways["openai"], path, text.encode())
        assert status < 500, body[:300]
        if status >= 400:
            assert content_type.startswith("application/json"), body[:300]
            assert isinstance(orjson.loads(body)["error"], str)

    answered()


def test_a_body_beyond_64_bits_is_a_400_not_a_502(gateways: dict[str, str]) -> None:
    body = (
        b'{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 1180591620717411303424}'
    )
    status, _type, answer = post(gateways["openai"], "/v1/chat/completions", body)
    assert status == 400
    assert "max_tokens" in error_message("openai", orjson.loads(answer))
