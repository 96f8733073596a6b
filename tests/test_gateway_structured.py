"""Structured output through the gateway (issue #43): every client protocol's official SDK
asks ``solon-events serve --upstream ...`` for a schema with its own parse helper, in front
of every upstream dialect; the upstream is asked in its own form, and the object the SDK
parses equals the upstream's own answer.

The servers are shared by the module: one embedded provider, one gateway per upstream
dialect, on one loop thread.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Any, Optional

import anthropic
import cohere
import ollama
import openai
import orjson
import pydantic
import pytest
from google import genai
from google.genai import types as genai_types
from sdk_oracles import cohere_fold, fold_interaction
from serving import (
    UPSTREAMS,
    Gateways,
    for_every_upstream_sdk_and_mode,
    gateway_per_model,
)

from solon_events import ChatModel
from solon_events.cli import ROUTES

QUESTION = "Tell me about Paris"


class City(pydantic.BaseModel):
    """A city."""

    name: str
    population: int
    landmarks: list[str]
    mayor: Optional[str] = None  # noqa: UP045


SCHEMA = City.model_json_schema()

# Where each upstream was asked for the schema, in its own form ("tool": a forced tool, the
# default for a model Bedrock is not known to take natively).
UPSTREAM_FORM = {
    "openai": "response_format.json_schema.schema",
    "openai-responses": "text.format.schema",
    "anthropic": "output_config.format.schema",
    "gemini": "generationConfig.responseJsonSchema",
    "ollama": "format",
    "bedrock": "tool",
    "cohere": "response_format.json_schema",
    "google-interactions": "response_format.schema",
}


Servers = Gateways[str]  # keyed by upstream dialect


@pytest.fixture(scope="module")
def servers() -> Iterator[Servers]:
    def models_at(url: str) -> dict[str, ChatModel]:
        return {
            dialect: ChatModel(url + ROUTES[dialect], "weather", api_key="k", dialect=dialect)
            for dialect in UPSTREAMS
        }

    with gateway_per_model(models_at, "test-structured-gateways") as servers:
        yield servers


@functools.cache
def _upstream_answer(model: ChatModel) -> City:
    """The upstream's own answer, asked directly."""
    output = model.prompt(QUESTION, output=City).call().output
    assert isinstance(output, City)
    return output


# Each SDK's own way to ask for, and parse, a structured answer.


def openai_chat(url: str, stream: bool) -> Any:
    client = openai.OpenAI(api_key="k", base_url=url + "/v1", max_retries=0)
    messages: Any = [{"role": "user", "content": QUESTION}]
    if stream:
        with client.chat.completions.stream(
            model="any", messages=messages, response_format=City
        ) as events:
            return events.get_final_completion().choices[0].message.parsed
    completion = client.chat.completions.parse(model="any", messages=messages, response_format=City)
    return completion.choices[0].message.parsed


def openai_responses(url: str, stream: bool) -> Any:
    client = openai.OpenAI(api_key="k", base_url=url + "/v1", max_retries=0)
    if stream:
        with client.responses.stream(
            model="any", input=QUESTION, text_format=City, store=False
        ) as events:
            return events.get_final_response().output_parsed
    return client.responses.parse(
        model="any", input=QUESTION, text_format=City, store=False
    ).output_parsed


def anthropic_messages(url: str, stream: bool) -> Any:
    client = anthropic.Anthropic(api_key="k", base_url=url, max_retries=0)
    asked: Any = {"model": "any", "max_tokens": 1024, "output_format": City}
    messages: Any = [{"role": "user", "content": QUESTION}]
    if stream:
        with client.messages.stream(messages=messages, **asked) as events:
            return events.get_final_message().parsed_output
    return client.messages.parse(messages=messages, **asked).parsed_output


def _genai(url: str) -> genai.Client:
    options = genai_types.HttpOptions(base_url=url, api_version="v1beta")
    return genai.Client(api_key="k", http_options=options)


def gemini(url: str, stream: bool) -> Any:
    """``response_schema=City`` whole (the SDK parses it), ``response_json_schema``
    streamed (its chunks' text joined: the SDK parses no stream)."""
    client = _genai(url)
    if not stream:
        config = genai_types.GenerateContentConfig(
            response_mime_type="application/json", response_schema=City
        )
        return client.models.generate_content(model="any", contents=QUESTION, config=config).parsed
    config = genai_types.GenerateContentConfig(
        response_mime_type="application/json", response_json_schema=SCHEMA
    )
    chunks = client.models.generate_content_stream(model="any", contents=QUESTION, config=config)
    return City.model_validate_json("".join(chunk.text or "" for chunk in chunks))


def ollama_chat(url: str, stream: bool) -> Any:
    client = ollama.Client(host=url + "/ollama", headers={"Authorization": "Bearer k"})
    messages = [{"role": "user", "content": QUESTION}]
    if stream:
        chunks = client.chat(model="any", messages=messages, format=SCHEMA, stream=True)
        return City.model_validate_json("".join(c.message.content or "" for c in chunks))
    return City.model_validate_json(
        client.chat(model="any", messages=messages, format=SCHEMA).message.content or ""
    )


def cohere_chat(url: str, stream: bool) -> Any:
    client = cohere.ClientV2(api_key="k", base_url=url)
    asked: Any = {
        "model": "any",
        "messages": [{"role": "user", "content": QUESTION}],
        "response_format": {"type": "json_object", "json_schema": SCHEMA},
    }
    if stream:
        return City.model_validate_json(cohere_fold(client.chat_stream(**asked))["text"])
    content = client.chat(**asked).message.content or []
    return City.model_validate_json("".join(i.text for i in content if i.type == "text"))


def interactions(url: str, stream: bool) -> Any:
    client = _genai(url)  # kept: the SDK closes its connections when it is collected
    create = client.interactions.create
    asked: Any = {
        "model": "any",
        "input": QUESTION,
        "store": False,
        "response_format": {"type": "text", "mime_type": "application/json", "schema": SCHEMA},
    }
    if stream:
        interaction = fold_interaction(create(stream=True, **asked))
    else:
        interaction = create(**asked).model_dump(mode="json", exclude_none=True)
    text = "".join(
        item["text"]
        for step in interaction["steps"]
        if step["type"] == "model_output"
        for item in step.get("content") or ()
        if item["type"] == "text"
    )
    return City.model_validate_json(text)


SDKS: dict[str, Callable[[str, bool], Any]] = {
    "openai": openai_chat,
    "openai-responses": openai_responses,
    "anthropic": anthropic_messages,
    "gemini": gemini,
    "ollama": ollama_chat,
    "cohere": cohere_chat,
    "google-interactions": interactions,
}


def at(body: Any, path: str) -> Any:
    for key in path.split("."):
        body = body[key]
    return body


@for_every_upstream_sdk_and_mode
def test_the_sdk_parse_helper_through_the_gateway(
    servers: Servers, upstream: str, client: str, stream: bool
) -> None:
    want = _upstream_answer(servers.models[upstream])
    before = len(servers.provider.requests)
    parsed = SDKS[client](servers.gateways[upstream], stream)
    assert isinstance(parsed, City) and parsed == want
    (sent,) = servers.provider.requests[before:]  # one upstream request, in its own form
    form = UPSTREAM_FORM[upstream]
    if form == "tool":
        tool = sent.body["toolConfig"]["tools"][-1]["toolSpec"]
        schema = tool["inputSchema"]["json"]
        assert sent.body["toolConfig"]["toolChoice"] == {"tool": {"name": tool["name"]}}
    else:
        schema = at(sent.body, form)
    assert set(schema["properties"]) == set(City.model_fields)


def test_the_structured_output_fields_are_no_longer_ignored(servers: Servers) -> None:
    client = openai.OpenAI(api_key="k", base_url=servers.gateways["gemini"] + "/v1")
    raw = client.chat.completions.with_raw_response.create(
        model="any",
        messages=[{"role": "user", "content": QUESTION}],
        response_format={"type": "json_schema", "json_schema": {"name": "City", "schema": SCHEMA}},
    )
    assert "x-solon-ignored" not in raw.headers
    assert (
        orjson.loads(raw.parse().choices[0].message.content)
        == _upstream_answer(servers.models["gemini"]).model_dump()
    )


def test_json_mode_asks_for_any_object(servers: Servers) -> None:
    before = len(servers.provider.requests)
    client = openai.OpenAI(api_key="k", base_url=servers.gateways["ollama"] + "/v1")
    completion = client.chat.completions.create(
        model="any",
        messages=[{"role": "user", "content": QUESTION}],
        response_format={"type": "json_object"},
    )
    assert isinstance(orjson.loads(completion.choices[0].message.content or ""), dict)
    assert servers.provider.requests[before].body["format"] == "json"


@pytest.mark.parametrize(
    ("client", "body", "why"),
    [
        (
            "openai",
            {"response_format": {"type": "xml"}},
            "response_format.type must be text, json_object or json_schema",
        ),
        (
            "openai",
            {"response_format": {"type": "json_schema", "json_schema": {"schema": 3}}},
            "response_format.json_schema.schema must be an object",
        ),
        (
            "gemini",
            {"generationConfig": {"responseMimeType": "text/x.enum"}},
            "generationConfig.responseMimeType 'text/x.enum' cannot be passed on",
        ),
        ("cohere", {"response_format": {"type": "json"}}, "response_format.type must be text"),
    ],
)
def test_a_structured_output_that_cannot_be_passed_on_is_refused_with_400(
    servers: Servers, client: str, body: dict[str, Any], why: str
) -> None:
    import urllib.error
    import urllib.request

    path = {
        "openai": "/v1/chat/completions",
        "gemini": "/v1beta/models/any:generateContent",
        "cohere": "/v2/chat",
    }[client]
    conversation: dict[str, Any] = (
        {"contents": [{"role": "user", "parts": [{"text": QUESTION}]}]}
        if client == "gemini"
        else {"model": "any", "messages": [{"role": "user", "content": QUESTION}]}
    )
    request = urllib.request.Request(
        servers.gateways["openai"] + path,
        data=orjson.dumps({**conversation, **body}),
        headers={"Content-Type": "application/json"},
    )
    before = len(servers.provider.requests)
    with pytest.raises(urllib.error.HTTPError) as raised:
        urllib.request.urlopen(request, timeout=10)
    assert raised.value.code == 400
    assert why in raised.value.read().decode()
    assert len(servers.provider.requests) == before  # nothing was asked upstream


def test_a_schema_an_upstream_cannot_hold_strictly_is_refused_with_400(
    servers: Servers,
) -> None:
    client = openai.OpenAI(api_key="k", base_url=servers.gateways["openai"] + "/v1")
    open_schema = {"type": "object", "additionalProperties": {"type": "integer"}}
    with pytest.raises(openai.BadRequestError, match="cannot be made strict"):
        client.chat.completions.create(
            model="any",
            messages=[{"role": "user", "content": QUESTION}],
            response_format={
                "type": "json_schema",
                "json_schema": {"name": "Counts", "schema": open_schema, "strict": True},
            },
        )
