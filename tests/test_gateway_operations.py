"""The gateway's operator endpoints, through the clients that use them: the model lists of
the openai, anthropic, google-genai and ollama SDKs, the health routes, ``/metrics`` read
by prometheus_client's own parser, and Anthropic's ``count_tokens`` as Claude Code asks."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import ollama
import openai
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as genai_types
from prometheus_client.parser import text_string_to_metric_families
from serving import serving_table

from solon_events.client.estimate import request_tokens, token_counter
from solon_events.devserver import DevServer, RunningServer
from solon_events.event_model.messages import ChatRequest, SystemMessage, ToolSpec, UserMessage
from solon_events.event_model.results import Usage
from solon_events.serve.config import parse_config
from solon_events.serve.models import build_table

NAMES = ["alpha", "beta", "gamma", "delta"]


def config_text(url: str) -> str:
    deployments = {
        "alpha": [("anthropic", "/v1/messages", "echo")],
        "beta": [("openai", "/v1/chat/completions", "gpt-4o-mini")],
        "gamma": [
            ("openai", "/v1/chat/completions", "status:503"),
            ("ollama", "/api/chat", "echo"),
        ],
        "delta": [("anthropic", "/v1/messages", "status:429")],
    }
    text = ""
    for name, listed in deployments.items():
        text += f'[models.{name}]\nstrategy = "fallback"\ncooldown = 60\n'
        for dialect, route, model in listed:
            text += f'[[models.{name}.deployments]]\nupstream = "{dialect}:{url}{route}"\n'
            text += f'model = "{model}"\n'
    return text


@pytest.fixture(scope="module")
def upstream() -> Iterator[RunningServer]:
    with DevServer.run_in_thread() as running:
        yield running


@pytest.fixture
def gateway(upstream: RunningServer) -> Iterator[str]:
    """A gateway of its own for each test: its metrics and cooldowns start at nothing."""
    with serving_table(build_table(parse_config(config_text(upstream.url)))) as url:
        yield url


def test_the_openai_and_anthropic_sdks_list_the_models_on_one_route(gateway: str) -> None:
    client = openai.OpenAI(api_key="k", base_url=gateway + "/v1", max_retries=0)
    listed = list(client.models.list())
    assert [model.id for model in listed] == NAMES
    assert {model.owned_by for model in listed} == {"solon-events"}
    assert client.models.retrieve("beta").id == "beta"
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("omega")
    claude = anthropic.Anthropic(api_key="k", base_url=gateway, max_retries=0)
    page = claude.models.list()
    assert [model.id for model in page.data] == NAMES and not page.has_more
    assert claude.models.retrieve("gamma").display_name == "gamma"
    with pytest.raises(anthropic.NotFoundError):
        claude.models.retrieve("omega")


def test_google_genai_and_ollama_list_the_models(gateway: str) -> None:
    client = genai.Client(
        api_key="k", http_options=genai_types.HttpOptions(base_url=gateway, api_version="v1beta")
    )
    assert [model.name for model in client.models.list()] == [f"models/{n}" for n in NAMES]
    found = client.models.get(model="delta")
    assert found.name == "models/delta" and found.supported_actions == [
        "generateContent",
        "streamGenerateContent",
    ]
    with pytest.raises(genai_errors.ClientError) as missing:
        client.models.get(model="omega")
    assert missing.value.code == 404
    assert [m.model for m in ollama.Client(host=gateway + "/ollama").list().models] == NAMES


def test_health_is_live_and_ready_until_a_model_has_no_healthy_deployment(
    gateway: str, caplog: pytest.LogCaptureFixture
) -> None:
    with httpx.Client(base_url=gateway) as client:
        live = client.get("/health/live")
        assert (live.status_code, live.json()) == (200, {"status": "live"})
        ready = client.get("/health/ready")
        assert ready.status_code == 200
        assert ready.json() == {
            "ready": True,
            "redis": None,
            "models": {
                "alpha": {"healthy": 1, "deployments": 1},
                "beta": {"healthy": 1, "deployments": 1},
                "gamma": {"healthy": 2, "deployments": 2},
                "delta": {"healthy": 1, "deployments": 1},
            },
        }
        body = {"model": "delta", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}
        refused = client.post("/v1/messages", json=body)
        assert refused.status_code == 429 and refused.headers["retry-after"] == "1"
        assert refused.json()["error"]["message"].startswith("no healthy deployment of delta")
        not_ready = client.get("/health/ready")
        assert not_ready.status_code == 503
        assert not_ready.json()["ready"] is False
        assert not_ready.json()["models"]["delta"] == {"healthy": 0, "deployments": 1}
    # the refusal was the client's answer: nothing for the log's errors
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a Prometheus text, by name and sorted labels."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def _value(samples: dict[Any, float], name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def test_metrics_are_read_by_prometheus_clients_parser(gateway: str) -> None:
    claude = anthropic.Anthropic(api_key="k", base_url=gateway, max_retries=0)
    messages: Any = [{"role": "user", "content": "count these words"}]
    for _ in range(3):
        claude.messages.create(model="alpha", max_tokens=50, messages=messages)
    client = openai.OpenAI(api_key="k", base_url=gateway + "/v1", max_retries=0)
    priced = client.chat.completions.create(model="beta", messages=messages)
    for _ in range(2):  # the first fails over; the second skips the deployment cooling down
        with client.chat.completions.stream(model="gamma", messages=messages) as stream:
            completion = stream.get_final_completion()
            assert completion.choices[0].message.content == "count these words"
    with pytest.raises(anthropic.RateLimitError):
        claude.messages.create(model="delta", max_tokens=50, messages=messages)

    text = httpx.get(gateway + "/metrics").text
    samples = _samples(text)
    completed = {"route": "anthropic", "model": "alpha", "deployment": "echo"}
    assert _value(samples, "solon_gateway_requests_total", **completed, outcome="completed") == 3
    assert (
        _value(
            samples,
            "solon_gateway_time_to_first_event_seconds_count",
            model="alpha",
            deployment="echo",
        )
        == 3
    )
    assert (
        _value(
            samples,
            "solon_gateway_request_duration_seconds_count",
            model="alpha",
            deployment="echo",
        )
        == 3
    )
    # tokens in and out, as the upstream counted them for the client
    assert priced.usage is not None
    beta = {"model": "beta", "deployment": "gpt-4o-mini"}
    assert _value(samples, "solon_gateway_tokens_total", **beta, direction="in") == (
        priced.usage.prompt_tokens
    )
    assert _value(samples, "solon_gateway_tokens_total", **beta, direction="out") == (
        priced.usage.completion_tokens
    )
    usage = Usage(
        prompt_tokens=priced.usage.prompt_tokens, completion_tokens=priced.usage.completion_tokens
    )
    price = usage.cost("gpt-4o-mini").total
    assert price is not None and price > 0
    assert _value(samples, "solon_gateway_cost_usd_total", **beta) == pytest.approx(float(price))
    # the fallback: one failed attempt, then the answer; then one skipped, then the answer
    for label, outcome, count in (
        ("status:503", "failed", 1),
        ("status:503", "skipped", 1),
        ("echo", "answered", 2),
    ):
        assert (
            _value(
                samples,
                "solon_gateway_attempts_total",
                model="gamma",
                deployment=label,
                outcome=outcome,
            )
            == count
        )
    # a failure, by its type
    assert (
        _value(
            samples,
            "solon_gateway_errors_total",
            route="anthropic",
            model="delta",
            deployment="",
            type="NoHealthyDeploymentError",
        )
        == 1
    )
    assert all(
        value == 0
        for (name, _labels), value in samples.items()
        if name == "solon_gateway_in_flight"
    )


CLAUDE_CODE_SYSTEM: Any = [
    {"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude."},
    {
        "type": "text",
        "text": "You are an interactive CLI tool that helps users with software engineering.",
        "cache_control": {"type": "ephemeral"},
    },
]
CLAUDE_CODE_TOOLS: Any = [
    {
        "name": "Bash",
        "description": "Executes a given bash command in a persistent shell session.",
        "input_schema": {
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The command to execute"},
                "timeout": {"type": "number", "description": "Optional timeout"},
            },
            "required": ["command"],
            "additionalProperties": False,
            "$schema": "http://json-schema.org/draft-07/schema#",
        },
    }
]
CLAUDE_CODE_MESSAGES: Any = [
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "<system-reminder>As you answer...</system-reminder>"},
            {"type": "text", "text": "list the files", "cache_control": {"type": "ephemeral"}},
        ],
    }
]


def _count(client: anthropic.Anthropic, model: str) -> Any:
    """Claude Code's count: ``beta.messages.count_tokens`` (``?beta=true``), its system
    blocks, tools and messages."""
    return client.beta.messages.with_raw_response.count_tokens(
        model=model,
        system=CLAUDE_CODE_SYSTEM,
        tools=CLAUDE_CODE_TOOLS,
        messages=CLAUDE_CODE_MESSAGES,
        betas=["claude-code-20250219", "token-counting-2024-11-01"],
    )


def test_claude_codes_count_tokens_is_counted_by_an_anthropic_upstream(
    gateway: str, upstream: RunningServer
) -> None:
    client = anthropic.Anthropic(api_key="k", base_url=gateway, max_retries=0)
    raw = _count(client, "alpha")
    assert "x-solon-estimated" not in raw.headers
    counted = raw.parse()
    (asked,) = [r for r in upstream.requests if r.path == "/v1/messages/count_tokens"]
    assert asked.body["model"] == "echo"  # the deployment's model, in its own terms
    assert "max_tokens" not in asked.body and "stream" not in asked.body
    import orjson

    held = {key: asked.body[key] for key in ("system", "messages", "tools") if key in asked.body}
    assert counted.input_tokens == len(orjson.dumps(held)) // 4  # the upstream's own count
    assert counted.model_extra == {}
    plain = client.messages.count_tokens(  # the SDK's count without the betas: the same
        model="alpha",
        system=CLAUDE_CODE_SYSTEM,
        tools=CLAUDE_CODE_TOOLS,
        messages=CLAUDE_CODE_MESSAGES,
    )
    assert plain.input_tokens == counted.input_tokens


def test_count_tokens_is_estimated_and_marked_elsewhere(gateway: str) -> None:
    client = anthropic.Anthropic(api_key="k", base_url=gateway, max_retries=0)
    raw = _count(client, "beta")  # an OpenAI deployment: no count of its own
    assert raw.headers["x-solon-estimated"] == "true"
    counted = raw.parse()
    counter = token_counter("gpt-4o-mini")
    expected = ChatRequest(
        model="gpt-4o-mini",
        messages=[
            SystemMessage(text="\n\n".join(block["text"] for block in CLAUDE_CODE_SYSTEM)),
            UserMessage(text="\n".join(b["text"] for b in CLAUDE_CODE_MESSAGES[0]["content"])),
        ],
        tools=[
            ToolSpec(
                name="Bash",
                description=CLAUDE_CODE_TOOLS[0]["description"],
                parameters=CLAUDE_CODE_TOOLS[0]["input_schema"],
            )
        ],
    )
    assert counted.model_extra == {"estimated": True, "method": counter.method}
    assert counted.input_tokens > 0
    assert abs(counted.input_tokens - request_tokens(expected, counter)) <= 4
    raw = _count(client, "delta")  # Anthropic's, whose count fails: estimated too
    assert raw.headers["x-solon-estimated"] == "true"
    with pytest.raises(anthropic.NotFoundError):
        _count(client, "omega")
