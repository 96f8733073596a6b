"""Tests of solon_events.dialects.endpoints: the dialect a URL names, the shape a 404 names."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from solon_events import ChatHttpError, ChatModel
from solon_events.devserver import DevServer, RunningServer
from solon_events.devserver.app import ROUTES
from solon_events.dialects.endpoints import dialect_for_url, expected_url


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    with DevServer.run_in_thread() as running:
        yield running


@pytest.mark.parametrize(
    ("url", "dialect"),
    [
        ("https://api.openai.com/v1/chat/completions", "openai"),
        ("https://x.openai.azure.com/openai/deployments/d/chat/completions", "openai"),
        ("https://generativelanguage.googleapis.com/v1beta/openai/chat/completions", "openai"),
        ("https://api.openai.com/v1/responses", "openai-responses"),
        ("https://api.anthropic.com/v1/messages", "anthropic"),
        ("https://api.anthropic.com/v1/messages/", "anthropic"),
        ("https://generativelanguage.googleapis.com/v1beta", "gemini"),
        ("https://generativelanguage.googleapis.com/v1beta/models", "gemini"),
        (
            "https://generativelanguage.googleapis.com/v1beta/models/g:streamGenerateContent?alt=sse",
            "gemini",
        ),
        ("https://generativelanguage.googleapis.com/v1/models/g:generateContent", "gemini"),
        ("http://localhost:11434/api/chat", "ollama"),
        ("https://api.cohere.com/v2/chat", "cohere"),
        ("https://generativelanguage.googleapis.com/v1beta/interactions", "google-interactions"),
        ("https://bedrock-runtime.us-east-1.amazonaws.com", "bedrock"),
        ("https://bedrock-runtime.eu-west-3.amazonaws.com/model/m/converse-stream", "bedrock"),
        ("https://api.openai.com/v1", None),  # a base URL names no endpoint
        ("http://localhost:11434", None),
        ("http://127.0.0.1:8080/completion", None),
        ("https://bedrock.us-east-1.amazonaws.com", None),  # the control plane, not the runtime
    ],
)
def test_the_dialect_a_url_names(url: str, dialect: str | None) -> None:
    assert dialect_for_url(url) == dialect


@pytest.mark.parametrize(("path", "_wire", "dialect"), ROUTES)
def test_a_model_without_a_dialect_speaks_the_one_its_url_names(
    server: RunningServer, path: str, _wire: object, dialect: str
) -> None:
    url = server.url + path.replace("{model}", "echo")
    with ChatModel(url, "echo", api_key="k") as model:
        assert model.dialect.name == dialect
        assert model.prompt("said back").call().text == "said back"


def test_gemini_and_bedrock_bases_name_their_dialect(server: RunningServer) -> None:
    with ChatModel(server.url + "/v1beta", "echo", api_key="k") as model:
        assert model.dialect.name == "gemini"
        assert model.prompt("from the base").call().text == "from the base"


def test_a_url_that_names_no_dialect_is_openai() -> None:
    with ChatModel("http://127.0.0.1:9/v1/completions/stream", "m") as model:
        assert model.dialect.name == "openai"
    with ChatModel("https://api.anthropic.com/v1/messages", "m", dialect="openai") as model:
        assert model.dialect.name == "openai"  # a dialect given is the one used


@pytest.mark.parametrize(
    ("path", "dialect", "shape", "article"),
    [
        ("/models", "gemini", "https://generativelanguage.googleapis.com/v1beta", "a"),
        ("/v1", "openai", "ending in /chat/completions", "an"),  # the SDKs' base URL
        ("/v1/message", "anthropic", "ending in /messages", "an"),
        ("/chat", "ollama", "/api/chat", "an"),
    ],
)
def test_a_404_for_a_url_of_the_wrong_shape_names_the_shape(
    server: RunningServer, path: str, dialect: str, shape: str, article: str
) -> None:
    with (
        ChatModel(server.url + path, "echo", dialect=dialect) as model,
        pytest.raises(ChatHttpError) as raised,
    ):
        model.prompt("hi").call()
    assert raised.value.status == 404
    assert f"({article} {dialect} URL is " in str(raised.value) and shape in str(raised.value)


def test_a_404_for_a_url_of_the_right_shape_is_the_providers_alone(
    server: RunningServer,
) -> None:
    url = server.url + "/v1/chat/completions"
    with ChatModel(url, "status:404") as model, pytest.raises(ChatHttpError) as raised:
        model.prompt("hi").call()
    assert raised.value.status == 404
    assert "URL is" not in str(raised.value)  # the model is unknown; the URL is fine


def test_the_expected_shape_is_told_only_for_a_url_without_it() -> None:
    assert expected_url("gemini", "https://g.example/v1beta/models/m:streamGenerateContent") is None
    assert expected_url("bedrock", "https://b.example/model/m/converse-stream") is None
    assert "converse-stream" in (expected_url("bedrock", "https://b.example/converse") or "")
    assert expected_url("cohere", "https://api.cohere.com/v2/chat") is None
    assert "/v2/chat" in (expected_url("cohere", "https://api.cohere.com/v1/chat") or "")
    assert expected_url("a-dialect-of-my-own", "https://x.example/") is None
