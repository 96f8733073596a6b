"""Redirects (#29.1): a provider that answers 30x never gets the request's credentials sent
to another origin. Two real aiohttp servers on 127.0.0.1: the provider, which redirects,
and a second origin (another port) that records every request it receives."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
from aiohttp import web
from recorded import text_body

from solon_events import ChatHttpError, ChatModel
from solon_events.dialects import aws_auth
from solon_events.support.redaction import MASK

SECRET = "sk-live-0123456789abcdefXYZ"
TOKEN = "IQoJb3JpZ2luX2VjEXAMPLETOKEN0123456789"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
ROUTES = {
    "openai": "/v1/chat/completions",
    "anthropic": "/v1/messages",
    "gemini": "/v1beta",
    "bedrock": "",
}
# Where each dialect puts the key (Bedrock without a key signs with SigV4 and the session
# token), and Azure's api-key header, sent as an extra header.
CREDENTIALS: dict[str, dict[str, Any]] = {
    "openai": {"dialect": "openai", "api_key": SECRET},
    "azure": {"dialect": "openai", "headers": {"api-key": SECRET}},
    "anthropic": {"dialect": "anthropic", "api_key": SECRET},
    "gemini": {"dialect": "gemini", "api_key": SECRET},
    "bedrock-sigv4": {"dialect": "bedrock"},
}
SECRET_HEADERS = (
    "authorization",
    "x-api-key",
    "x-goog-api-key",
    "api-key",
    "x-amz-security-token",
)


class Origin:
    """An aiohttp app on its own port of 127.0.0.1, recording the requests it receives."""

    def __init__(self, runner: web.AppRunner, url: str, requests: list[web.Request]) -> None:
        self.runner = runner
        self.url = url
        self.requests = requests

    def headers(self) -> list[dict[str, str]]:
        return [{k.lower(): v for k, v in r.headers.items()} for r in self.requests]


async def serve(handler: Callable[[web.Request], Any]) -> Origin:
    requests: list[web.Request] = []

    async def recorded(request: web.Request) -> web.StreamResponse:
        requests.append(request)
        return await handler(request)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", recorded)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return Origin(runner, f"http://127.0.0.1:{port}", requests)


async def answer(request: web.Request) -> web.Response:
    """A whole answer in the dialect its path says (the second origin would serve it)."""
    dialect = "anthropic" if request.path.endswith("/messages") else "openai"
    if "streamGenerateContent" in request.path:
        dialect = "gemini"
    if request.path.endswith("converse-stream"):
        dialect = "bedrock"
    return web.Response(
        body=text_body(dialect, "Stolen"),
        content_type="application/vnd.amazon.eventstream"
        if dialect == "bedrock"
        else "text/event-stream",
    )


@pytest.fixture
async def elsewhere() -> AsyncIterator[Origin]:
    """The second origin: answers every request as a provider would."""
    origin = await serve(answer)
    yield origin
    await origin.runner.cleanup()


@pytest.fixture
def session_token(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    aws_auth._session.cache_clear()
    monkeypatch.setenv("AWS_SESSION_TOKEN", TOKEN)
    yield
    aws_auth._session.cache_clear()


def redirecting(status: int, location: Callable[[web.Request], str]) -> Callable[..., Any]:
    async def handler(request: web.Request) -> web.Response:
        return web.Response(status=status, headers={"Location": location(request)})

    return handler


def assert_no_credentials(texts: list[str]) -> None:
    for text in texts:
        for secret in (SECRET, TOKEN, AWS_SECRET):
            assert secret not in text and secret[:12] not in text, text


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
@pytest.mark.parametrize("where", list(CREDENTIALS))
async def test_a_redirect_to_another_origin_is_not_followed(
    elsewhere: Origin, session_token: None, where: str, status: int
) -> None:
    credentials = dict(CREDENTIALS[where])
    dialect = credentials["dialect"]
    provider = await serve(
        redirecting(status, lambda request: f"{elsewhere.url}{request.path}?key={SECRET}&who=me")
    )
    try:
        async with ChatModel(
            provider.url + ROUTES[dialect], "m", max_retries=0, **credentials
        ) as model:
            with pytest.raises(ChatHttpError) as raised:
                await model.prompt("hi").acall()
        sent = provider.headers()
    finally:
        await provider.runner.cleanup()
    assert elsewhere.requests == [], "nothing may reach the other origin"
    assert len(sent) == 1 and any(name in sent[0] for name in SECRET_HEADERS)
    error = raised.value
    assert error.status == status
    message = str(error)
    # It says where the provider tried to send the request, without the key.
    path = provider.requests[0].path
    assert f"{elsewhere.url}{path}?key={MASK}&who={MASK}" in message, message
    assert "another origin" in message and provider.url in message
    assert_no_credentials([message, repr(error), repr(error.headers), str(error.url)])


async def test_a_redirect_to_another_scheme_is_another_origin() -> None:
    # The same host and port, over https: another origin all the same.
    provider = await serve(
        redirecting(307, lambda request: f"https://{request.host}{request.path}")
    )
    try:
        async with ChatModel(provider.url + ROUTES["openai"], "m", api_key=SECRET) as model:
            with pytest.raises(ChatHttpError, match="another origin"):
                await model.prompt("hi").acall()
    finally:
        await provider.runner.cleanup()
    assert len(provider.requests) == 1


@pytest.mark.parametrize("status", [307, 308])
@pytest.mark.parametrize("where", ["openai", "azure", "anthropic", "gemini", "bedrock-sigv4"])
async def test_a_redirect_within_the_origin_keeps_its_headers(
    session_token: None, where: str, status: int
) -> None:
    async def moved_or_answer(request: web.Request) -> web.StreamResponse:
        if not request.path.startswith("/moved"):
            return web.Response(status=status, headers={"Location": "/moved" + request.path_qs})
        return await answer(request)

    credentials = dict(CREDENTIALS[where])
    provider = await serve(moved_or_answer)
    try:
        async with ChatModel(
            provider.url + ROUTES[credentials["dialect"]], "m", max_retries=0, **credentials
        ) as model:
            response = await model.prompt("hi").acall()
    finally:
        await provider.runner.cleanup()
    assert response.text == "Stolen"
    first, moved = provider.headers()
    assert provider.requests[1].path.startswith("/moved")
    assert provider.requests[1].method == "POST"
    for name in SECRET_HEADERS:
        assert first.get(name) == moved.get(name)
    assert any(name in moved for name in SECRET_HEADERS)


async def test_a_redirect_loop_within_the_origin_ends_with_an_error() -> None:
    provider = await serve(redirecting(307, lambda request: request.path_qs))
    try:
        async with ChatModel(provider.url + ROUTES["openai"], "m", api_key=SECRET) as model:
            with pytest.raises(ChatHttpError, match="too many redirects") as raised:
                await model.prompt("hi").acall()
    finally:
        await provider.runner.cleanup()
    assert raised.value.status == 307
    assert 2 <= len(provider.requests) <= 11
    assert_no_credentials([str(raised.value)])
