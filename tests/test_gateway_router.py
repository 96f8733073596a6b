"""The gateway routes by name: a configuration's models, each a router over deployments of
the embedded provider in several dialects, asked for by name through every official SDK.

The model a client names (the body's ``model``, Gemini's path, Ollama's ``model``) picks
the router; the ``x-solon-deployment`` header names the deployment that answered; an
unknown name gets the protocol's own "model not found", as the SDK's own error."""

from __future__ import annotations

import collections
import math
from collections.abc import Iterator
from typing import Any

import anthropic
import cohere
import httpx
import ollama
import openai
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as genai_types
from serving import serving_table, sse_json

from solon_events.devserver import DevServer, RunningServer
from solon_events.serve.config import parse_config
from solon_events.serve.models import build_table

QUESTION = "Which model answers"
SLOW = "0 1 2 "  # what the slow:3 scenario says


def section(name: str, strategy: str, *deployments: tuple[str, str, str, float]) -> str:
    """A ``[models.NAME]`` section over ``deployments`` (dialect, endpoint, model, weight)."""
    text = f'[models.{name}]\nstrategy = "{strategy}"\n'
    for dialect, url, model, weight in deployments:
        text += f"[[models.{name}.deployments]]\n"
        text += f'upstream = "{dialect}:{url}"\nmodel = "{model}"\nweight = {weight}\n'
    return text


def config_text(server: RunningServer) -> str:
    url = server.url
    return "\n".join(
        [
            section("alpha", "fallback", ("openai", f"{url}/v1/chat/completions", "echo", 1)),
            section(
                "beta",
                "fallback",
                ("anthropic", f"{url}/v1/messages", "status:503", 1),
                ("gemini", f"{url}/v1beta", "slow:3:0.001", 1),
            ),
            section(
                "mixed",
                "weighted",
                ("ollama", f"{url}/api/chat", "echo", 3),
                ("cohere", f"{url}/v2/chat", "echo", 1),
            ),
        ]
    )


@pytest.fixture(scope="module")
def gateway(server: RunningServer) -> Iterator[str]:
    with serving_table(build_table(parse_config(config_text(server), "gateway.toml"))) as url:
        yield url


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    running = DevServer.run_in_thread()
    yield running
    running.close()


def test_openai_chat_completions_select_by_name(gateway: str) -> None:
    client = openai.OpenAI(api_key="k", base_url=gateway + "/v1", max_retries=0)
    messages: Any = [{"role": "user", "content": QUESTION}]
    raw = client.chat.completions.with_raw_response.create(model="alpha", messages=messages)
    completion = raw.parse()
    assert completion.choices[0].message.content == QUESTION
    assert completion.model == "alpha"
    assert raw.headers["x-solon-deployment"] == "echo"
    with client.chat.completions.with_streaming_response.create(
        model="beta", messages=messages, stream=True
    ) as streamed:
        assert streamed.headers["x-solon-deployment"] == "slow:3:0.001"
        text = "".join(
            chunk.choices[0].delta.content or "" for chunk in streamed.parse() if chunk.choices
        )
    assert text == SLOW
    with pytest.raises(openai.NotFoundError) as missing:
        client.chat.completions.create(model="gamma", messages=messages)
    assert missing.value.code == "model_not_found"
    assert "gamma" in missing.value.message


def test_openai_responses_select_by_name(gateway: str) -> None:
    client = openai.OpenAI(api_key="k", base_url=gateway + "/v1", max_retries=0)
    assert client.responses.create(model="alpha", input=QUESTION).output_text == QUESTION
    with client.responses.stream(model="beta", input=QUESTION) as stream:
        assert stream.get_final_response().output_text == SLOW
    with pytest.raises(openai.NotFoundError):
        client.responses.create(model="gamma", input=QUESTION)


def test_anthropic_selects_by_name(gateway: str) -> None:
    client = anthropic.Anthropic(api_key="k", base_url=gateway, max_retries=0)
    messages: Any = [{"role": "user", "content": QUESTION}]
    raw = client.messages.with_raw_response.create(model="beta", max_tokens=100, messages=messages)
    message = raw.parse()
    assert message.content[0].text == SLOW  # type: ignore[union-attr]
    assert message.model == "beta"
    assert raw.headers["x-solon-deployment"] == "slow:3:0.001"
    with client.messages.stream(model="alpha", max_tokens=100, messages=messages) as stream:
        assert stream.get_final_text() == QUESTION
    with pytest.raises(anthropic.NotFoundError) as missing:
        client.messages.create(model="gamma", max_tokens=100, messages=messages)
    assert missing.value.body["error"] == {"type": "not_found_error", "message": "model: gamma"}  # type: ignore[index]


def test_google_genai_selects_by_the_name_in_its_path(gateway: str) -> None:
    client = genai.Client(
        api_key="k", http_options=genai_types.HttpOptions(base_url=gateway, api_version="v1beta")
    )
    response = client.models.generate_content(model="alpha", contents=QUESTION)
    assert response.text == QUESTION
    assert response.sdk_http_response is not None
    assert response.sdk_http_response.headers["x-solon-deployment"] == "echo"  # type: ignore[index]
    chunks = client.models.generate_content_stream(model="beta", contents=QUESTION)
    assert "".join(chunk.text or "" for chunk in chunks) == SLOW
    with pytest.raises(genai_errors.ClientError) as missing:
        client.models.generate_content(model="gamma", contents=QUESTION)
    assert missing.value.code == 404 and missing.value.status == "NOT_FOUND"


def test_google_interactions_select_by_name(gateway: str) -> None:
    client = genai.Client(
        api_key="k", http_options=genai_types.HttpOptions(base_url=gateway, api_version="v1beta")
    )
    found = client.interactions.create(model="beta", input=QUESTION, store=False)
    texts = [
        item.text
        for step in found.steps or ()
        if step.type == "model_output"
        for item in step.content or ()
        if item.type == "text"
    ]
    assert "".join(texts) == SLOW
    with pytest.raises(Exception) as missing:  # the SDK's own NotFoundError, of a private module
        client.interactions.create(model="gamma", input=QUESTION, store=False)
    assert type(missing.value).__name__ == "NotFoundError"
    assert missing.value.status_code == 404  # type: ignore[attr-defined]


def test_ollama_selects_by_name(gateway: str) -> None:
    client = ollama.Client(host=gateway + "/ollama")
    messages = [{"role": "user", "content": QUESTION}]
    assert client.chat(model="alpha", messages=messages).message.content == QUESTION
    streamed = "".join(
        part.message.content or ""
        for part in client.chat(model="beta", messages=messages, stream=True)
    )
    assert streamed == SLOW
    with pytest.raises(ollama.ResponseError) as missing:
        client.chat(model="gamma", messages=messages)
    assert missing.value.status_code == 404
    assert missing.value.error == "model 'gamma' not found"


def test_cohere_selects_by_name(gateway: str) -> None:
    client = cohere.ClientV2(api_key="k", base_url=gateway)
    messages: Any = [{"role": "user", "content": QUESTION}]
    response = client.chat(model="beta", messages=messages)
    assert "".join(item.text for item in response.message.content or ()) == SLOW  # type: ignore[union-attr]
    with pytest.raises(cohere.NotFoundError):
        client.chat(model="gamma", messages=messages)


def test_weights_hold_through_the_gateway(gateway: str) -> None:
    """3:1 over 120 requests, by the header: 90 each way give or take five standard
    deviations (4.7 each)."""
    counts: collections.Counter[str] = collections.Counter()
    body = {"model": "mixed", "messages": [{"role": "user", "content": "hi"}], "stream": False}
    with httpx.Client(base_url=gateway) as client:
        for _ in range(120):
            response = client.post("/ollama/api/chat", json=body)
            assert response.status_code == 200 and response.json()["message"]["content"] == "hi"
            counts[response.headers["x-solon-deployment"]] += 1
    port = gateway  # the deployments share the provider's host and port, told by dialect
    assert sorted(label.split(":")[0] for label in counts) == ["cohere", "ollama"], port
    heavy = next(label for label in counts if label.startswith("ollama:"))
    assert abs(counts[heavy] - 90) <= 5 * math.sqrt(120 * 0.75 * 0.25), counts


def test_the_routes_that_name_no_model_use_the_first(server: RunningServer) -> None:
    """The events route is served by the configuration's first model: its STATUS events
    show the deployment that failed, then the one that answered."""
    text = config_text(server)
    beta_first = text[text.index("[models.beta]") : text.index("[models.mixed]")]
    table = build_table(parse_config(beta_first, "gateway.toml"))
    with serving_table(table) as url, httpx.Client(base_url=url) as client:
        response = client.post("/events", json={"messages": [{"role": "user", "content": "hi"}]})
    statuses = [
        (event["sub_type"], event["attrs"]["model"])
        for event in sse_json(response.content)
        if event["type"] == "STATUS"
    ]
    assert statuses == [("fallback", "status:503"), ("routed", "slow:3:0.001")]


def test_each_deployment_gets_the_clients_settings_in_its_own_words(
    server: RunningServer,
) -> None:
    """beta's deployments speak Anthropic's and Gemini's APIs: an OpenAI client's maximum
    and temperature reach each in its own terms (a gateway of its own: the first
    deployment does not cool down from the other tests' requests)."""
    text = config_text(server)
    beta = build_table(
        parse_config(text[text.index("[models.beta]") : text.index("[models.mixed]")])
    )
    before = len(server.requests)
    with serving_table(beta) as url:
        client = openai.OpenAI(api_key="k", base_url=url + "/v1", max_retries=0)
        client.chat.completions.create(
            model="beta",
            messages=[{"role": "user", "content": QUESTION}],
            max_completion_tokens=77,
            temperature=0.5,
        )
    anthropic_body, gemini_body = (r.body for r in server.requests[before:])
    assert (anthropic_body["max_tokens"], anthropic_body["temperature"]) == (77, 0.5)
    assert "max_completion_tokens" not in anthropic_body
    generation = gemini_body["generationConfig"]
    assert (generation["maxOutputTokens"], generation["temperature"]) == (77, 0.5)


def test_an_unknown_name_is_the_protocols_own_not_found_when_streamed_too(gateway: str) -> None:
    """Each streaming call of each SDK: the name is told before any stream starts."""
    messages: Any = [{"role": "user", "content": QUESTION}]
    client = openai.OpenAI(api_key="k", base_url=gateway + "/v1", max_retries=0)
    with pytest.raises(openai.NotFoundError) as chat:
        client.chat.completions.create(model="gamma", messages=messages, stream=True)
    assert chat.value.code == "model_not_found"
    with (
        pytest.raises(openai.NotFoundError) as responses,
        client.responses.stream(model="gamma", input=QUESTION) as stream,
    ):
        stream.get_final_response()
    assert responses.value.code == "model_not_found"
    claude = anthropic.Anthropic(api_key="k", base_url=gateway, max_retries=0)
    with (
        pytest.raises(anthropic.NotFoundError) as messages_error,
        claude.messages.stream(model="gamma", max_tokens=10, messages=messages) as events,
    ):
        events.get_final_text()
    assert messages_error.value.body["error"]["type"] == "not_found_error"  # type: ignore[index]
    google = genai.Client(
        api_key="k", http_options=genai_types.HttpOptions(base_url=gateway, api_version="v1beta")
    )
    with pytest.raises(genai_errors.ClientError) as gemini:
        list(google.models.generate_content_stream(model="gamma", contents=QUESTION))
    assert gemini.value.code == 404 and gemini.value.status == "NOT_FOUND"
    with pytest.raises(Exception) as interactions:  # the SDK's NotFoundError, a private module's
        list(google.interactions.create(model="gamma", input=QUESTION, store=False, stream=True))
    assert type(interactions.value).__name__ == "NotFoundError"
    assert interactions.value.status_code == 404  # type: ignore[attr-defined]
    with pytest.raises(ollama.ResponseError) as local:
        list(ollama.Client(host=gateway + "/ollama").chat("gamma", messages, stream=True))
    assert local.value.status_code == 404 and local.value.error == "model 'gamma' not found"
    command = cohere.ClientV2(api_key="k", base_url=gateway)
    with pytest.raises(cohere.NotFoundError):
        list(command.chat_stream(model="gamma", messages=messages))
