"""Keys at the gateway, through the official SDKs: each sends its key its own way
(``Authorization: Bearer``, ``x-api-key``, ``x-goog-api-key``); an unknown key gets the
protocol's 401, a key for another model its 403, a refused request its 429 with
``Retry-After``; a key removed by a reload is refused; a stream stopped at its limit ends
with the protocol's error event; every attempt is charged to its key and written to the
spend log; a key is never logged nor said back."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import cohere
import httpx
import ollama
import openai
import pytest
from cohere.core.api_error import ApiError as CohereError
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as genai_types
from serving import serving_in_thread

from solon_events.client.spend_log import read_spend
from solon_events.devserver import RunningServer
from solon_events.serve import GATEWAY, create_app
from solon_events.serve.access import build_access
from solon_events.serve.config import parse_config
from solon_events.serve.models import build_table

TEAM_A = "sk-team-a-3f1c9e"
TEAM_B = "sk-team-b-77d02a"
STOPPED = "sk-stopped-91ab"
USER: Any = [{"role": "user", "content": "one two three"}]
ORIGIN = "http://app.example"


def digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def config_text(server: RunningServer, log: Path, *, team_b: bool = True) -> str:
    url = server.url
    text = f"""
[models.fast]
[[models.fast.deployments]]
upstream = "openai:{url}/v1/chat/completions"
model = "echo"

[models.claude]
strategy = "fallback"
[[models.claude.deployments]]
upstream = "anthropic:{url}/v1/messages"
model = "status:503"
[[models.claude.deployments]]
upstream = "anthropic:{url}/v1/messages"
model = "echo"

[models.gemini]
[[models.gemini.deployments]]
upstream = "gemini:{url}/v1beta"
model = "echo"

[models.long]
[[models.long.deployments]]
upstream = "anthropic:{url}/v1/messages"
model = "slow:400:0.002"

[keys.team-a]
key_sha256 = "{digest(TEAM_A)}"
rpm = 4

[keys.stopped]
key_sha256 = "{digest(STOPPED)}"
models = ["long"]
budget_tokens = 60
output_allowance = 10
overrun = "stop"

[spend_log]
path = "{log}"
interval = 0.02
"""
    if team_b:
        text += f"""
[keys.team-b]
key_sha256 = "{digest(TEAM_B)}"
models = ["fast", "claude", "gemini"]
"""
    return text


@contextlib.contextmanager
def gateway_of(text: str) -> Iterator[tuple[str, Any]]:
    config = parse_config(text, "gateway.toml")
    table = build_table(config)
    app = create_app(table, access=build_access(config), cors_origins=[ORIGIN])

    async def close(_app: Any) -> None:
        table.close()

    app.on_cleanup.append(close)
    with serving_in_thread(app) as url:
        yield url, app[GATEWAY]


@pytest.fixture
def gateway(fresh_server: RunningServer, tmp_path: Path) -> Iterator[tuple[str, Any, Path]]:
    log = tmp_path / "spend.jsonl"
    with gateway_of(config_text(fresh_server, log)) as (url, served):
        yield url, served, log


def refused_by_each_sdk(url: str, key: str, status: int) -> dict[str, Any]:
    """The errors the openai, anthropic and google-genai SDKs raise when the gateway
    refuses ``key`` with ``status``, by SDK."""
    errors = {401: (openai.AuthenticationError, anthropic.AuthenticationError),
              429: (openai.RateLimitError, anthropic.RateLimitError)}[status]  # fmt: skip
    with pytest.raises(errors[0]) as by_openai:
        openai_client(url, key).chat.completions.create(model="fast", messages=USER)
    claude = anthropic.Anthropic(api_key=key, base_url=url, max_retries=0)
    with pytest.raises(errors[1]) as by_anthropic:
        claude.messages.create(model="claude", max_tokens=10, messages=USER)
    gemini = gemini_client(url, key)
    with pytest.raises(genai_errors.ClientError) as by_gemini:
        gemini.models.generate_content(model="gemini", contents="a")
    assert by_gemini.value.code == status
    return {"openai": by_openai.value, "anthropic": by_anthropic.value}


def openai_client(url: str, key: str) -> openai.OpenAI:
    return openai.OpenAI(api_key=key, base_url=url + "/v1", max_retries=0)


def gemini_client(url: str, key: str) -> genai.Client:
    options = genai_types.HttpOptions(base_url=url, api_version="v1beta")
    return genai.Client(api_key=key, http_options=options)


def test_each_sdk_sends_its_key_its_own_way(gateway: tuple[str, Any, Path]) -> None:
    url, _served, _log = gateway
    chat = openai_client(url, TEAM_B).chat.completions.create(model="fast", messages=USER)
    assert chat.choices[0].message.content == "one two three"
    claude = anthropic.Anthropic(api_key=TEAM_B, base_url=url, max_retries=0)
    message = claude.messages.create(model="claude", max_tokens=100, messages=USER)
    assert message.content[0].text == "one two three"  # type: ignore[union-attr]
    gemini = gemini_client(url, TEAM_B)
    answer = gemini.models.generate_content(model="gemini", contents="a b")
    assert answer.text == "a b"


def test_an_unknown_key_gets_each_protocols_401(
    gateway: tuple[str, Any, Path], caplog: pytest.LogCaptureFixture
) -> None:
    url, _served, _log = gateway
    wrong = "sk-nobody-0000"
    caplog.set_level(logging.DEBUG)
    refused = refused_by_each_sdk(url, wrong, 401)
    assert refused["openai"].body["code"] == "invalid_api_key"
    assert refused["anthropic"].body["error"]["type"] == "authentication_error"
    unkeyed = httpx.post(url + "/events", json={"messages": [{"role": "user", "content": "x"}]})
    assert unkeyed.status_code == 401 and unkeyed.headers["WWW-Authenticate"] == "Bearer"
    said = " ".join([str(refused["openai"].body), str(refused["anthropic"].body), unkeyed.text])
    assert wrong not in said and wrong not in caplog.text
    assert httpx.get(url + "/health/live").status_code == 200  # probes carry no key


def test_a_key_for_another_model_gets_403(gateway: tuple[str, Any, Path]) -> None:
    url, _served, _log = gateway
    with pytest.raises(openai.PermissionDeniedError) as refused:
        openai_client(url, STOPPED).chat.completions.create(model="fast", messages=USER)
    assert "may not use the model 'fast'" in refused.value.message
    claude = anthropic.Anthropic(api_key=TEAM_B, base_url=url, max_retries=0)
    with pytest.raises(anthropic.PermissionDeniedError):
        claude.messages.create(model="long", max_tokens=10, messages=USER)


def test_a_refused_request_gets_429_with_retry_after(gateway: tuple[str, Any, Path]) -> None:
    url, _served, _log = gateway
    client = openai_client(url, TEAM_A)
    for _ in range(4):
        client.chat.completions.create(model="fast", messages=USER)
    with pytest.raises(openai.RateLimitError) as refused:
        client.chat.completions.create(model="fast", messages=USER)
    retry_after = int(refused.value.response.headers["Retry-After"])
    assert 1 <= retry_after <= 60
    assert "requests per minute" in refused.value.message
    refused_again = refused_by_each_sdk(url, TEAM_A, 429)
    assert refused_again["anthropic"].body["error"]["type"] == "rate_limit_error"
    in_a_browser = httpx.post(
        url + "/events",
        json={"messages": [{"role": "user", "content": "x"}]},
        headers={"Authorization": f"Bearer {TEAM_A}", "Origin": ORIGIN},
    )
    assert in_a_browser.status_code == 429
    assert "retry-after" in in_a_browser.headers["Access-Control-Expose-Headers"]
    # another key is not held to team-a's limit
    openai_client(url, TEAM_B).chat.completions.create(model="fast", messages=USER)


def test_a_key_removed_by_a_reload_is_refused(fresh_server: RunningServer, tmp_path: Path) -> None:
    log = tmp_path / "spend.jsonl"
    with gateway_of(config_text(fresh_server, log)) as (url, served):
        openai_client(url, TEAM_B).chat.completions.create(model="fast", messages=USER)
        new = parse_config(config_text(fresh_server, log, team_b=False), "gateway.toml")
        served.use_access(build_access(new, previous=served.access))
        with pytest.raises(openai.AuthenticationError):
            openai_client(url, TEAM_B).chat.completions.create(model="fast", messages=USER)
        openai_client(url, TEAM_A).chat.completions.create(model="fast", messages=USER)


def test_a_stream_stopped_at_its_limit_ends_with_the_protocols_error(
    gateway: tuple[str, Any, Path],
) -> None:
    url, served, _log = gateway
    claude = anthropic.Anthropic(api_key=STOPPED, base_url=url, max_retries=0)
    texts: list[str] = []
    with (
        pytest.raises(anthropic.APIStatusError) as stopped,
        claude.messages.stream(model="long", max_tokens=10, messages=USER) as stream,
    ):
        for text in stream.text_stream:
            texts.append(text)
    assert stopped.value.body["error"]["type"] == "rate_limit_error"  # type: ignore[index]
    assert "stopped at the token budget limit" in str(stopped.value.body)
    assert 0 < len(texts) < 400
    key = served.access.keys.get("stopped")
    for _ in range(100):
        counts = _counts(served, key)
        if counts.in_flight == 0:
            break
        time.sleep(0.02)
    assert counts.in_flight == 0
    # The delta that crossed the budget and those the upstream sent before the cancellation
    # reached it (two at most allowed, on a machine busy enough to delay the cancellation).
    assert counts.spent_tokens <= 60 + 3


def _counts(served: Any, key: Any) -> Any:
    from solon_events.support.loop_thread import EventLoopThread

    io = EventLoopThread(name="counts")
    try:
        return io.run(key.limiter.counts())
    finally:
        io.close()


def test_every_attempt_is_charged_and_logged(
    gateway: tuple[str, Any, Path], fresh_server: RunningServer
) -> None:
    url, served, log = gateway
    claude = anthropic.Anthropic(api_key=TEAM_B, base_url=url, max_retries=0)
    for _ in range(3):
        claude.messages.create(model="claude", max_tokens=100, messages=USER)
    served.access.spend_log.flush(10)
    records = list(read_spend(str(log)))
    assert [(r.key, r.model, r.outcome) for r in records] == [
        ("team-b", "claude", "failed"),  # status:503: nothing billed; then it cools down
        *[("team-b", "claude", "completed")] * 3,  # skipped deployments are not asked
    ]
    assert records[0].usage is None and records[0].error == "ChatHttpError 503"
    counts = _counts(served, served.access.keys.get("team-b"))
    assert counts.spent_tokens == sum(r.tokens for r in records)
    served_usage = fresh_server.served_usage()["models"]["echo"]
    logged = [r.usage for r in records if r.usage is not None]
    assert sum(u.prompt_tokens for u in logged) == served_usage["prompt_tokens"]
    assert sum(u.completion_tokens for u in logged) == served_usage["completion_tokens"]


def refused_by(protocol: str, url: str, key: str) -> tuple[int, str | None]:
    """The status and ``Retry-After`` of the error ``protocol``'s official SDK raises when
    the gateway refuses ``key`` asking for the model ``fast`` (Ollama's SDK keeps no
    headers: None)."""
    if protocol == "openai-responses":
        with pytest.raises(openai.APIStatusError) as by_openai:
            openai_client(url, key).responses.create(model="fast", input="a b")
        return by_openai.value.status_code, by_openai.value.response.headers.get("Retry-After")
    if protocol == "ollama":
        client = ollama.Client(host=url + "/ollama", headers={"Authorization": f"Bearer {key}"})
        with pytest.raises(ollama.ResponseError) as by_ollama:
            client.chat(model="fast", messages=USER)
        assert by_ollama.value.error  # Ollama's {"error": message}, read by its SDK
        return by_ollama.value.status_code, None
    if protocol == "cohere":
        client = cohere.ClientV2(api_key=key, base_url=url)
        with pytest.raises(CohereError) as by_cohere:
            client.chat(model="fast", messages=USER, request_options={"max_retries": 0})
        assert by_cohere.value.body["message"]  # Cohere's {"message": ...}
        headers = by_cohere.value.headers or {}
        return by_cohere.value.status_code or 0, headers.get("retry-after")
    options = genai_types.HttpOptions(
        base_url=url,
        api_version="v1beta",
        retry_options=genai_types.HttpRetryOptions(attempts=1),  # a 429 is not asked again
    )
    gemini = genai.Client(api_key=key, http_options=options)
    try:
        gemini.interactions.create(model="fast", input="a b", store=False)
    except Exception as error:  # google-genai's Interactions errors live in a private module
        response = error.response  # type: ignore[attr-defined]
        return response.status_code, response.headers.get("Retry-After")
    raise AssertionError("the Interactions API was not refused")


@pytest.mark.parametrize(
    "protocol", ["openai-responses", "ollama", "cohere", "google-interactions"]
)
def test_the_other_protocols_refuse_in_their_own_shape(
    gateway: tuple[str, Any, Path], protocol: str
) -> None:
    url, _served, _log = gateway
    assert refused_by(protocol, url, "sk-nobody-0000") == (401, None)
    assert refused_by(protocol, url, STOPPED) == (403, None)  # its key may ask for "long"
    for _ in range(4):  # team-a's requests per minute, used up
        openai_client(url, TEAM_A).chat.completions.create(model="fast", messages=USER)
    status, retry_after = refused_by(protocol, url, TEAM_A)
    assert status == 429
    if protocol != "ollama":
        assert 1 <= int(retry_after or 0) <= 60
