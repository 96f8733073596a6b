"""The gateway's cache (``cache``, ``cache_ttl`` under ``[models.NAME]``): an answer stored
through one client protocol is replayed into another's, with the official SDKs;
``x-solon-cache: hit|miss``; ``Cache-Control: no-store`` and ``no-cache``; nothing stored
for an upstream error; 50 identical requests in flight answered by one upstream request,
and a failure of that shared request reaching each client, on one gateway and on two
gateway processes sharing a real redis-server."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import openai
import pytest
from google import genai
from google.genai import types as genai_types
from redis_server import RedisServer, redis_server  # noqa: F401  (fixture)
from serving import serve_command, serving_table

from solon_events.devserver import DevServer, RunningServer
from solon_events.serve.config import ConfigError, parse_config
from solon_events.serve.models import build_table

QUESTION = "Which answer is kept"


def _config(server: RunningServer, cache: str = '"memory"', scenario: str = "echo") -> str:
    """``kept`` (with a cache; a failed deployment is tried again at once) asking
    ``server`` with ``scenario``, and ``fresh`` (without a cache) with ``echo``."""
    url = server.url
    return (
        f'[models.kept]\nstrategy = "fallback"\ncooldown = 0\ncache = {cache}\n'
        f"cache_ttl = 600\n"
        f'[[models.kept.deployments]]\nupstream = "openai:{url}/v1/chat/completions"\n'
        f'model = "{scenario}"\n'
        f"[models.fresh]\n[[models.fresh.deployments]]\n"
        f'upstream = "openai:{url}/v1/chat/completions"\nmodel = "echo"\n'
    )


@pytest.fixture
def upstream() -> Iterator[RunningServer]:
    with DevServer.run_in_thread() as running:
        yield running


@pytest.fixture
def gateway(upstream: RunningServer) -> Iterator[str]:
    with serving_table(build_table(parse_config(_config(upstream), "gateway.toml"))) as url:
        yield url


def test_the_configuration_reads_cache_and_cache_ttl(upstream: RunningServer) -> None:
    config = parse_config(_config(upstream), "gateway.toml")
    kept, fresh = config.models["kept"], config.models["fresh"]
    assert (kept.cache, kept.cache_ttl, kept.single_flight) == ("memory", 600.0, True)
    assert (fresh.cache, fresh.cache_ttl) == (None, None)
    table = build_table(config)
    try:
        cache = table.models["kept"].cache  # type: ignore[union-attr]
        assert cache is not None and cache.ttl == 600.0 and cache.single_flight
        assert table.models["fresh"].cache is None  # type: ignore[union-attr]
    finally:
        table.close()


@pytest.mark.parametrize(
    ("cache", "key", "reason"),
    [
        ('"disk"', "models.kept.cache", "must be one of memory, sqlite:PATH, redis"),
        ('"sqlite:"', "models.kept.cache", "must be one of memory, sqlite:PATH, redis"),
        ('"redis"', "models.kept.cache", "needs the top-level redis"),
    ],
)
def test_a_wrong_cache_is_named(upstream: RunningServer, cache: str, key: str, reason: str) -> None:
    with pytest.raises(ConfigError) as error:
        parse_config(_config(upstream, cache), "gateway.toml")
    assert error.value.key == key and reason in error.value.reason
    assert error.value.line == 4  # where cache = ... is written


def test_a_time_to_live_needs_a_cache(upstream: RunningServer) -> None:
    text = _config(upstream).replace('cache = "memory"\n', "")
    with pytest.raises(ConfigError, match=r"models\.kept\.cache_ttl: has no cache"):
        parse_config(text, "gateway.toml")


def _gemini(gateway: str) -> genai.Client:
    options = genai_types.HttpOptions(base_url=gateway, api_version="v1beta")
    return genai.Client(api_key="k", http_options=options)


def test_an_answer_stored_through_messages_is_replayed_to_every_protocol(
    gateway: str, upstream: RunningServer
) -> None:
    """Stored through /v1/messages (streamed, the anthropic SDK), served to
    /v1/chat/completions (the openai SDK, whole and streamed) and to Gemini (google-genai):
    one upstream request; each answer in its own protocol, its usage billed zero."""
    messages: Any = [{"role": "user", "content": QUESTION}]
    claude = anthropic.Anthropic(api_key="k", base_url=gateway, max_retries=0)
    with claude.messages.with_streaming_response.create(
        model="kept", max_tokens=100, messages=messages, stream=True
    ) as streamed:
        assert streamed.headers["x-solon-cache"] == "miss"
        text = "".join(
            event.delta.text  # type: ignore[union-attr]
            for event in streamed.parse()
            if event.type == "content_block_delta"
        )
    assert text == QUESTION
    assert len(upstream.requests) == 1

    gpt = openai.OpenAI(api_key="k", base_url=gateway + "/v1", max_retries=0)
    raw = gpt.chat.completions.with_raw_response.create(
        model="kept", max_tokens=100, messages=messages
    )
    assert raw.headers["x-solon-cache"] == "hit"
    completion = raw.parse()
    assert completion.choices[0].message.content == QUESTION
    assert completion.usage is not None and completion.usage.total_tokens == 0  # billed zero
    with gpt.chat.completions.with_streaming_response.create(
        model="kept", max_tokens=100, messages=messages, stream=True
    ) as chunks:
        assert chunks.headers["x-solon-cache"] == "hit"
        streamed_text = "".join(
            chunk.choices[0].delta.content or "" for chunk in chunks.parse() if chunk.choices
        )
    assert streamed_text == QUESTION

    gemini = _gemini(gateway)
    config = genai_types.GenerateContentConfig(max_output_tokens=100)
    answer = gemini.models.generate_content(model="kept", contents=QUESTION, config=config)
    assert answer.text == QUESTION
    assert answer.sdk_http_response is not None
    assert answer.sdk_http_response.headers["x-solon-cache"] == "hit"  # type: ignore[index]
    pieces = gemini.models.generate_content_stream(model="kept", contents=QUESTION, config=config)
    assert "".join(piece.text or "" for piece in pieces) == QUESTION
    assert len(upstream.requests) == 1  # every one a hit

    other = gpt.chat.completions.with_raw_response.create(
        model="kept", max_tokens=99, messages=messages
    )
    assert other.headers["x-solon-cache"] == "miss"  # another setting: another request
    fresh = gpt.chat.completions.with_raw_response.create(model="fresh", messages=messages)
    assert "x-solon-cache" not in fresh.headers  # a model without a cache
    assert len(upstream.requests) == 3


def test_cache_control_from_the_client(gateway: str, upstream: RunningServer) -> None:
    gpt = openai.OpenAI(api_key="k", base_url=gateway + "/v1", max_retries=0)
    messages: Any = [{"role": "user", "content": "asked with cache-control"}]

    def ask(cache_control: str | None = None) -> str:
        headers = {"Cache-Control": cache_control} if cache_control else None
        raw = gpt.chat.completions.with_raw_response.create(
            model="kept", messages=messages, extra_headers=headers
        )
        return str(raw.headers["x-solon-cache"])

    assert ask("no-store") == "miss"
    assert ask() == "miss"  # no-store stored nothing
    assert ask() == "hit"
    assert ask("no-cache") == "miss"  # asked again, and stored
    assert ask("max-age=0, no-store") == "miss"
    assert ask() == "hit"
    assert len(upstream.requests) == 4


def test_an_upstream_error_is_not_stored(upstream: RunningServer) -> None:
    text = _config(upstream, scenario="status:500")
    with serving_table(build_table(parse_config(text, "gateway.toml"))) as gateway:
        gpt = openai.OpenAI(api_key="k", base_url=gateway + "/v1", max_retries=0)
        for _ in range(2):
            with pytest.raises(openai.InternalServerError):
                gpt.chat.completions.create(
                    model="kept", messages=[{"role": "user", "content": "hi"}]
                )
    assert len(upstream.requests) == 2


async def _first_then_rest(
    client: openai.AsyncOpenAI, told: asyncio.Queue[str]
) -> tuple[str, str, str | None]:
    """One streamed request: tell ``told`` its first text, then read the rest; its text,
    its ``x-solon-cache`` and the error that ended it (None: it ended well)."""
    messages: Any = [{"role": "user", "content": "hi"}]
    async with client.chat.completions.with_streaming_response.create(
        model="kept", messages=messages, stream=True
    ) as response:
        said, header = "", response.headers["x-solon-cache"]
        try:
            async for chunk in await response.parse():
                piece = chunk.choices[0].delta.content if chunk.choices else None
                if piece:
                    if not said:
                        told.put_nowait(piece)
                    said += piece
        except openai.APIError as error:
            return said, header, error.message
        return said, header, None


async def _fifty(
    urls: list[str], upstream: RunningServer, count: int = 50
) -> list[tuple[str, str, str | None]]:
    """``count`` identical streamed requests to the gateways at ``urls`` in turn, the
    upstream's gate opened once each has the answer so far."""
    clients = [
        openai.AsyncOpenAI(
            api_key="k",
            base_url=url + "/v1",
            max_retries=0,
            http_client=httpx.AsyncClient(limits=httpx.Limits(max_connections=100), timeout=60),
        )
        for url in urls
    ]
    told: asyncio.Queue[str] = asyncio.Queue()
    tasks = [
        asyncio.ensure_future(_first_then_rest(clients[i % len(clients)], told))
        for i in range(count)
    ]
    try:
        for _ in range(count):  # each has the answer so far while the upstream waits
            assert await asyncio.wait_for(told.get(), 30) == "Before the gate."
        upstream.open_gate()
        return await asyncio.gather(*tasks)
    finally:
        for client in clients:
            await client.close()


@contextlib.contextmanager
def _gateways(
    replicas: int, upstream: RunningServer, scenario: str, request: pytest.FixtureRequest
) -> Iterator[list[str]]:
    """The addresses of one gateway (in this process, its cache in memory) or of two
    gateway processes sharing a new real redis-server (their cache in it), each serving
    ``kept`` with ``scenario`` upstream."""
    if replicas == 1:
        text = _config(upstream, scenario=scenario)
        with serving_table(build_table(parse_config(text, "gateway.toml"))) as url:
            yield [url]
        return
    redis: RedisServer = request.getfixturevalue("redis_server")
    path = request.getfixturevalue("tmp_path") / "gateway.toml"
    path.write_text(f'redis = "{redis.url}"\n' + _config(upstream, '"redis"', scenario))
    with serve_command("--config", str(path)) as a, serve_command("--config", str(path)) as b:
        urls = []
        for process in (a, b):
            assert process.stdout is not None
            urls.append(process.stdout.readline().strip())
        yield urls


REPLICAS = pytest.mark.parametrize("replicas", [1, 2], ids=["one gateway", "two sharing redis"])


@REPLICAS
def test_fifty_identical_requests_one_upstream_request(
    replicas: int, request: pytest.FixtureRequest, upstream: RunningServer
) -> None:
    with _gateways(replicas, upstream, "gate", request) as urls:
        answers = asyncio.run(_fifty(urls, upstream))
        assert len(upstream.requests) == 1
        assert {said for said, _, _ in answers} == {"Before the gate. After the gate."}
        assert {failure for _, _, failure in answers} == {None}
        assert sorted(header for _, header, _ in answers) == ["hit"] * 49 + ["miss"]
        later = httpx.post(
            urls[-1] + "/v1/chat/completions",
            json={"model": "kept", "messages": [{"role": "user", "content": "hi"}]},
            timeout=30,
        )
        assert later.headers["x-solon-cache"] == "hit"  # stored, read on either replica
        assert (
            later.json()["choices"][0]["message"]["content"] == "Before the gate. After the gate."
        )
    assert len(upstream.requests) == 1


@REPLICAS
def test_a_shared_upstream_failure_reaches_every_client(
    replicas: int, request: pytest.FixtureRequest, upstream: RunningServer
) -> None:
    """The one upstream stream that 20 identical requests share is cut after its first
    delta: each client gets that delta, then the failure in its own protocol (an error
    event), and nothing is stored: the next request asks the upstream again."""
    with _gateways(replicas, upstream, "gate:cut", request) as urls:
        answers = asyncio.run(_fifty(urls, upstream, count=20))
        assert len(upstream.requests) == 1
        assert {said for said, _, _ in answers} == {"Before the gate."}
        failures = {failure for _, _, failure in answers}
        assert len(failures) == 1 and None not in failures  # the same failure for each
        assert sorted(header for _, header, _ in answers) == ["hit"] * 19 + ["miss"]
        again = httpx.post(
            urls[-1] + "/v1/chat/completions",
            json={"model": "kept", "messages": [{"role": "user", "content": "hi"}]},
            timeout=30,
        )
        assert again.status_code == 502, again.text  # asked again, failed again
    assert len(upstream.requests) == 2
