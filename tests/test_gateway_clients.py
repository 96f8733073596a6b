"""Real provider SDKs in front of any provider: the gateway's provider routes.

For every (upstream dialect, client protocol) pair, the official SDK of the protocol
(``openai`` for Chat Completions and Responses, ``anthropic``, ``google-genai``,
``ollama``) calls the gateway, streaming and not; the gateway runs on a real port and its
upstream is the embedded provider speaking the upstream's dialect. What the SDK's own
accumulator makes of the answer must equal the RESPONSE_END of the upstream's stream
(asked directly, with the same conversation): text, reasoning, tool calls and their
arguments, usage and finish reason. Each SDK then drives the second step of a tool loop
itself, sending the calls back with their results in its own format; the upstream must
receive the results paired with the calls' ids.

Servers are shared by the whole module: one embedded provider, one gateway per
(upstream dialect, scenario) on one loop thread.
"""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from typing import Any, NamedTuple

import anthropic
import cohere
import ollama
import openai
import pytest
from google import genai
from google.genai import types as genai_types
from sdk_oracles import cohere_fold, fold_interaction
from serving import (
    SDK_CLIENTS,
    UPSTREAMS,
    Gateways,
    for_every_upstream_sdk_and_mode,
    gateway_per_model,
)

from solon_events import (
    AssistantMessage,
    ChatModel,
    ChatResponse,
    ToolMessage,
    ToolSpec,
    UserMessage,
)
from solon_events.adapters.provider_formats.base import finish_kind
from solon_events.cli import ROUTES

SCENARIOS = ("weather", "think")
QUESTION = "What is the weather in Paris?"
RESULT = "18°C and sunny"
WEATHER = ToolSpec(
    name="get_weather",
    description="The weather now in a city",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string", "description": "The city"}},
        "required": ["city"],
    },
)

# What the reasoning scenario's clients ask besides low reasoning (a 1,024-token budget):
# each upstream must get them in its own terms, at these paths of its request body.
KNOBS = {"temperature": 1.0}
MAX_TOKENS = 3000
UPSTREAM_KNOBS = {  # dialect: temperature, max tokens, reasoning
    "openai": ("temperature", "max_completion_tokens", "reasoning_effort"),
    "openai-responses": ("temperature", "max_output_tokens", "reasoning.effort"),
    "anthropic": ("temperature", "max_tokens", "thinking.budget_tokens"),
    "gemini": (
        "generationConfig.temperature",
        "generationConfig.maxOutputTokens",
        "generationConfig.thinkingConfig.thinkingBudget",
    ),
    "ollama": ("options.temperature", "options.num_predict", "think"),
    "bedrock": (
        "inferenceConfig.temperature",
        "inferenceConfig.maxTokens",
        "additionalModelRequestFields.thinking.budget_tokens",
    ),
    "cohere": ("temperature", "max_tokens", "thinking.token_budget"),
    "google-interactions": (
        "generation_config.temperature",
        "generation_config.max_output_tokens",
        "generation_config.thinking_level",
    ),
}


def at(body: Any, path: str) -> Any:
    for key in path.split("."):
        body = body[key]
    return body


FUNCTION_TOOL = {  # the tool in Chat Completions' terms, which Ollama's API shares
    "type": "function",
    "function": {
        "name": WEATHER.name,
        "description": WEATHER.description,
        "parameters": dict(WEATHER.parameters),
    },
}


class Final(NamedTuple):
    """What a client made of one answer, in neutral terms."""

    text: str
    thinking: str
    calls: tuple[tuple[str | None, str, dict[str, Any]], ...]
    usage: tuple[int, int, int]  # prompt, completion (thinking included), total
    finish: str  # a finish kind: stop, tool_calls, length, content_filter


def expected(response: ChatResponse) -> Final:
    usage = response.usage
    assert usage is not None
    return Final(
        response.text,
        response.thinking,
        tuple((c.id, c.name, dict(c.arguments)) for c in response.tool_calls),
        (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens),
        finish_kind(response.finish_reason, bool(response.tool_calls)),
    )


def same_answer(got: Final, want: Final, *, ids: str = "always") -> None:
    """``got`` says what ``want`` says. Call ids are made up afresh by each upstream
    request, so they are checked for presence only: ``ids`` is ``"always"`` for a protocol
    whose calls must have one (the gateway makes one up when the upstream gave none),
    ``"passed"`` for one whose ids are optional (Gemini: present when the upstream's are),
    ``"never"`` for one without (Ollama)."""
    assert got.text == want.text
    assert got.thinking == want.thinking
    assert [(name, args) for _id, name, args in got.calls] == [
        (name, args) for _id, name, args in want.calls
    ]
    if ids == "always":
        assert all(call_id for call_id, _name, _args in got.calls)
    elif ids == "passed":
        assert [bool(c[0]) for c in got.calls] == [bool(c[0]) for c in want.calls]
    assert got.usage == want.usage
    assert got.finish == want.finish


# The clients: each asks the question, then answers its calls, in its own SDK's terms.


class OpenAIChat:
    """``openai``: Chat Completions, through ``chat.completions.stream()`` and ``create()``."""

    ids = "always"

    def __init__(self, url: str, tools: bool, reasoning: bool, key: str = "test-key") -> None:
        self.client = openai.OpenAI(api_key=key, base_url=url + "/v1", max_retries=0)
        self.messages: list[dict[str, Any]] = [{"role": "user", "content": QUESTION}]
        self.extra: dict[str, Any] = {}
        if tools:
            self.extra["tools"] = [FUNCTION_TOOL]
        if reasoning:
            self.extra.update(KNOBS, reasoning_effort="low", max_completion_tokens=MAX_TOKENS)

    def ask(self, stream: bool) -> Final:
        if stream:
            with self.client.chat.completions.stream(
                model="any",
                messages=self.messages,
                stream_options={"include_usage": True},
                **self.extra,
            ) as events:
                completion: Any = events.get_final_completion()
        else:
            completion = self.client.chat.completions.create(
                model="any", messages=self.messages, **self.extra
            )
        choice = completion.choices[0]
        message = choice.message
        self.messages.append(message.model_dump(exclude_none=True, exclude={"parsed"}))
        calls = tuple(
            (c.id, c.function.name, _json(c.function.arguments)) for c in message.tool_calls or ()
        )
        usage = completion.usage
        return Final(
            message.content or "",
            getattr(message, "reasoning_content", None) or "",
            calls,
            (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens),
            finish_kind(choice.finish_reason, bool(calls)),
        )

    def answer(self, calls: Final) -> None:
        for call_id, _name, _args in calls.calls:
            self.messages.append({"role": "tool", "tool_call_id": call_id, "content": RESULT})


class OpenAIResponses:
    """``openai``: the Responses API, through ``responses.stream()`` and ``create()``."""

    ids = "always"

    def __init__(self, url: str, tools: bool, reasoning: bool, key: str = "test-key") -> None:
        self.client = openai.OpenAI(api_key=key, base_url=url + "/v1", max_retries=0)
        self.input: list[Any] = [{"role": "user", "content": QUESTION}]
        self.extra: dict[str, Any] = {"store": False}
        if tools:
            self.extra["tools"] = [
                {
                    "type": "function",
                    "name": WEATHER.name,
                    "description": WEATHER.description,
                    "parameters": dict(WEATHER.parameters),
                    "strict": False,
                }
            ]
        if reasoning:
            self.extra.update(KNOBS, max_output_tokens=MAX_TOKENS)
            self.extra["reasoning"] = {"effort": "low", "summary": "auto"}

    def ask(self, stream: bool) -> Final:
        if stream:
            with self.client.responses.stream(model="any", input=self.input, **self.extra) as s:
                response: Any = s.get_final_response()
        else:
            response = self.client.responses.create(model="any", input=self.input, **self.extra)
        self.input += [item.model_dump(exclude_none=True) for item in response.output]
        text, thinking, calls = [], [], []
        for item in response.output:
            if item.type == "message":
                text += [part.text for part in item.content if part.type == "output_text"]
            elif item.type == "reasoning":
                thinking += [part.text for part in item.summary]
            elif item.type == "function_call":
                calls.append((item.call_id, item.name, _json(item.arguments)))
        usage = response.usage
        reason = response.incomplete_details.reason if response.incomplete_details else None
        return Final(
            "".join(text),
            "".join(thinking),
            tuple(calls),
            (usage.input_tokens, usage.output_tokens, usage.total_tokens),
            finish_kind(reason or response.status, bool(calls)),
        )

    def answer(self, calls: Final) -> None:
        for call_id, _name, _args in calls.calls:
            self.input.append(
                {"type": "function_call_output", "call_id": call_id, "output": RESULT}
            )


class Anthropic:
    """``anthropic``: ``messages.stream()`` (``get_final_message()``) and ``create()``."""

    ids = "always"

    def __init__(self, url: str, tools: bool, reasoning: bool, key: str = "test-key") -> None:
        self.client = anthropic.Anthropic(api_key=key, base_url=url, max_retries=0)
        self.messages: list[dict[str, Any]] = [{"role": "user", "content": QUESTION}]
        self.extra: dict[str, Any] = {"max_tokens": 4096}
        if tools:
            self.extra["tools"] = [
                {
                    "name": WEATHER.name,
                    "description": WEATHER.description,
                    "input_schema": dict(WEATHER.parameters),
                }
            ]
        if reasoning:
            # this SDK has no temperature parameter (the API still takes one)
            self.extra.update(extra_body=KNOBS, max_tokens=MAX_TOKENS)
            self.extra["thinking"] = {"type": "enabled", "budget_tokens": 1024}

    def ask(self, stream: bool) -> Final:
        if stream:
            with self.client.messages.stream(
                model="any", messages=self.messages, **self.extra
            ) as s:
                message: Any = s.get_final_message()
        else:
            message = self.client.messages.create(model="any", messages=self.messages, **self.extra)
        self.messages.append(
            {
                "role": "assistant",
                "content": [b.model_dump(exclude_none=True) for b in message.content],
            }
        )
        text = "".join(b.text for b in message.content if b.type == "text")
        thinking = "".join(b.thinking for b in message.content if b.type == "thinking")
        calls = tuple(
            (b.id, b.name, dict(b.input)) for b in message.content if b.type == "tool_use"
        )
        usage = message.usage
        prompt = (
            usage.input_tokens
            + (usage.cache_read_input_tokens or 0)
            + (usage.cache_creation_input_tokens or 0)
        )
        return Final(
            text,
            thinking,
            calls,
            (prompt, usage.output_tokens, prompt + usage.output_tokens),
            finish_kind(message.stop_reason, bool(calls)),
        )

    def answer(self, calls: Final) -> None:
        results = [
            {"type": "tool_result", "tool_use_id": call_id, "content": RESULT}
            for call_id, _name, _args in calls.calls
        ]
        self.messages.append({"role": "user", "content": results})


class Gemini:
    """``google-genai``: ``models.generate_content_stream()`` (its chunks concatenated: the
    SDK has no accumulator) and ``generate_content()``."""

    ids = "passed"

    def __init__(self, url: str, tools: bool, reasoning: bool, key: str = "test-key") -> None:
        self.client = genai.Client(
            api_key=key,
            http_options=genai_types.HttpOptions(base_url=url, api_version="v1beta"),
        )
        self.contents: list[Any] = [
            genai_types.Content(role="user", parts=[genai_types.Part(text=QUESTION)])
        ]
        config: dict[str, Any] = {
            "automatic_function_calling": genai_types.AutomaticFunctionCallingConfig(disable=True)
        }
        if tools:  # an OpenAPI-style schema, as the SDK sends it ("type": "OBJECT")
            declaration = genai_types.FunctionDeclaration(
                name=WEATHER.name,
                description=WEATHER.description,
                parameters=genai_types.Schema.model_validate(dict(WEATHER.parameters)),
            )
            config["tools"] = [genai_types.Tool(function_declarations=[declaration])]
        if reasoning:
            config.update(KNOBS, max_output_tokens=MAX_TOKENS)
            config["thinking_config"] = genai_types.ThinkingConfig(
                include_thoughts=True, thinking_budget=1024
            )
        self.config = genai_types.GenerateContentConfig(**config)

    def ask(self, stream: bool) -> Final:
        if stream:
            chunks = list(
                self.client.models.generate_content_stream(
                    model="any", contents=self.contents, config=self.config
                )
            )
        else:
            chunks = [
                self.client.models.generate_content(
                    model="any", contents=self.contents, config=self.config
                )
            ]
        parts = [p for c in chunks if c.candidates for p in (c.candidates[0].content.parts or ())]
        self.contents.append(genai_types.Content(role="model", parts=parts))
        text = "".join(p.text for p in parts if p.text and not p.thought)
        thinking = "".join(p.text for p in parts if p.text and p.thought)
        calls = tuple(
            (p.function_call.id, p.function_call.name, dict(p.function_call.args or {}))
            for p in parts
            if p.function_call
        )
        usage = chunks[-1].usage_metadata
        completion = (usage.candidates_token_count or 0) + (usage.thoughts_token_count or 0)
        reason = next(
            (c.candidates[0].finish_reason for c in reversed(chunks) if c.candidates), None
        )
        return Final(
            text,
            thinking,
            calls,
            (usage.prompt_token_count or 0, completion, usage.total_token_count or 0),
            finish_kind(reason.value if reason else None, bool(calls)),
        )

    def answer(self, calls: Final) -> None:
        parts = [
            genai_types.Part(
                function_response=genai_types.FunctionResponse(
                    id=call_id, name=name, response={"result": RESULT}
                )
            )
            for call_id, name, _args in calls.calls
        ]
        self.contents.append(genai_types.Content(role="user", parts=parts))


class Ollama:
    """``ollama``: ``chat(stream=True)`` (its chunks concatenated) and ``chat()``; Ollama's
    tool calls have no ids (results name their tool)."""

    ids = "never"

    def __init__(self, url: str, tools: bool, reasoning: bool, key: str = "test-key") -> None:
        self.client = ollama.Client(
            host=url + "/ollama", headers={"Authorization": f"Bearer {key}"}
        )
        self.messages: list[dict[str, Any]] = [{"role": "user", "content": QUESTION}]
        self.extra: dict[str, Any] = {}
        if tools:
            self.extra["tools"] = [FUNCTION_TOOL]
        if reasoning:
            self.extra.update(think="low", options={**KNOBS, "num_predict": MAX_TOKENS})

    def ask(self, stream: bool) -> Final:
        if stream:
            chunks = list(
                self.client.chat(model="any", messages=self.messages, stream=True, **self.extra)
            )
        else:
            chunks = [self.client.chat(model="any", messages=self.messages, **self.extra)]
        text = "".join(c.message.content or "" for c in chunks)
        thinking = "".join(c.message.thinking or "" for c in chunks)
        calls = tuple(
            (None, call.function.name, dict(call.function.arguments))
            for c in chunks
            for call in c.message.tool_calls or ()
        )
        last = chunks[-1]
        assert last.done
        self.messages.append(
            {
                "role": "assistant",
                "content": text,
                "thinking": thinking,
                "tool_calls": [{"function": {"name": n, "arguments": a}} for _i, n, a in calls],
            }
        )
        prompt, completion = last.prompt_eval_count or 0, last.eval_count or 0
        return Final(
            text,
            thinking,
            calls,
            (prompt, completion, prompt + completion),
            finish_kind(last.done_reason, bool(calls)),
        )

    def answer(self, calls: Final) -> None:
        for _id, name, _args in calls.calls:
            self.messages.append({"role": "tool", "content": RESULT, "tool_name": name})


class Cohere:
    """``cohere``: ``ClientV2.chat_stream()`` (its events added up: the SDK has no
    accumulator) and ``chat()``; results go back as ``document`` items, as Cohere's
    documentation writes them."""

    ids = "always"

    def __init__(self, url: str, tools: bool, reasoning: bool, key: str = "test-key") -> None:
        self.client = cohere.ClientV2(api_key=key, base_url=url)
        self.messages: list[dict[str, Any]] = [{"role": "user", "content": QUESTION}]
        self.extra: dict[str, Any] = {}
        if tools:
            self.extra["tools"] = [FUNCTION_TOOL]
        if reasoning:
            self.extra.update(KNOBS, max_tokens=MAX_TOKENS)
            self.extra["thinking"] = {"type": "enabled", "token_budget": 1024}

    def ask(self, stream: bool) -> Final:
        if stream:
            folded = cohere_fold(
                self.client.chat_stream(model="any", messages=self.messages, **self.extra)
            )
            text, thinking = folded["text"], folded["thinking"]
            calls = tuple((c["id"], c["name"], c["arguments"]) for c in folded["tool_calls"])
            usage = folded["usage"]
            counts = (usage["prompt_tokens"], usage["completion_tokens"], usage["total_tokens"])
            reason = folded["finish_reason"]
        else:
            response = self.client.chat(model="any", messages=self.messages, **self.extra)
            message = response.message
            content = message.content or []
            text = "".join(item.text for item in content if item.type == "text")
            thinking = (message.tool_plan or "") + "".join(
                item.thinking for item in content if item.type == "thinking"
            )
            calls = tuple(
                (c.id, c.function.name, _json(c.function.arguments))
                for c in message.tool_calls or ()
            )
            tokens = response.usage.tokens
            prompt, completion = int(tokens.input_tokens), int(tokens.output_tokens)
            counts, reason = (prompt, completion, prompt + completion), response.finish_reason
        turn: dict[str, Any] = {"role": "assistant"}
        if calls:
            turn["tool_plan"] = thinking
            turn["tool_calls"] = [
                {"id": i, "type": "function", "function": {"name": n, "arguments": _dumps(a)}}
                for i, n, a in calls
            ]
        else:
            turn["content"] = [{"type": "text", "text": text}]
        self.messages.append(turn)
        return Final(text, thinking, calls, counts, finish_kind(reason.lower(), bool(calls)))

    def answer(self, calls: Final) -> None:
        for call_id, _name, _args in calls.calls:
            document = {"type": "document", "document": {"data": RESULT}}
            self.messages.append({"role": "tool", "tool_call_id": call_id, "content": [document]})


class Interactions:
    """google-genai's Interactions API: ``interactions.create(stream=True)`` (its events
    folded into the Interaction) and ``interactions.create()``, the conversation sent whole
    as steps (``store: false``)."""

    ids = "always"

    def __init__(self, url: str, tools: bool, reasoning: bool, key: str = "test-key") -> None:
        self.client = genai.Client(
            api_key=key,
            http_options=genai_types.HttpOptions(base_url=url, api_version="v1beta"),
        )
        self.input: list[dict[str, Any]] = [
            {"type": "user_input", "content": [{"type": "text", "text": QUESTION}]}
        ]
        self.extra: dict[str, Any] = {"store": False}
        if tools:
            self.extra["tools"] = [{"type": "function", **FUNCTION_TOOL["function"]}]
        if reasoning:
            self.extra["generation_config"] = {
                **KNOBS,
                "max_output_tokens": MAX_TOKENS,
                "thinking_level": "low",
                "thinking_summaries": "auto",
            }

    def ask(self, stream: bool) -> Final:
        create = self.client.interactions.create
        if stream:
            interaction = fold_interaction(
                create(model="any", input=self.input, stream=True, **self.extra)
            )
        else:
            found = create(model="any", input=self.input, **self.extra)
            interaction = found.model_dump(mode="json", exclude_none=True)
        steps = interaction["steps"]
        self.input += steps
        text = "".join(
            item["text"]
            for step in steps
            if step["type"] == "model_output"
            for item in step.get("content") or ()
            if item["type"] == "text"
        )
        thinking = "".join(
            item["text"]
            for step in steps
            if step["type"] == "thought"
            for item in step.get("summary") or ()
        )
        calls = tuple(
            (step["id"], step["name"], step["arguments"])
            for step in steps
            if step["type"] == "function_call"
        )
        usage = interaction["usage"]
        prompt = usage.get("total_input_tokens", 0)
        completion = usage.get("total_output_tokens", 0) + usage.get("total_thought_tokens", 0)
        return Final(
            text,
            thinking,
            calls,
            (prompt, completion, usage.get("total_tokens", prompt + completion)),
            finish_kind(interaction["status"], bool(calls)),
        )

    def answer(self, calls: Final) -> None:
        for call_id, name, _args in calls.calls:
            self.input.append(
                {"type": "function_result", "call_id": call_id, "name": name, "result": RESULT}
            )


CLIENT_CLASSES: dict[str, Any] = {
    "openai": OpenAIChat,
    "openai-responses": OpenAIResponses,
    "anthropic": Anthropic,
    "gemini": Gemini,
    "ollama": Ollama,
    "cohere": Cohere,
    "google-interactions": Interactions,
}


def _dumps(value: Any) -> str:
    import orjson

    return orjson.dumps(value).decode()


def _json(text: str) -> dict[str, Any]:
    import orjson

    value = orjson.loads(text or "{}")
    assert isinstance(value, dict)
    return value


# The servers.


Servers = Gateways[tuple[str, str]]  # keyed by (upstream dialect, scenario)


@pytest.fixture(scope="module")
def servers() -> Iterator[Servers]:
    def models_at(url: str) -> dict[tuple[str, str], ChatModel]:
        return {
            (dialect, scenario): ChatModel(
                url + ROUTES[dialect], scenario, api_key="test-key", dialect=dialect
            )
            for dialect in UPSTREAMS
            for scenario in SCENARIOS
        }

    with gateway_per_model(models_at, "test-gateways") as servers:
        yield servers


@functools.cache
def _upstream_answer(model: ChatModel, step: int) -> ChatResponse:
    """The upstream's own answer (RESPONSE_END) to the conversation at ``step`` (0: the
    question with the tool offered; 1: its call answered)."""
    messages: list[Any] = [UserMessage(text=QUESTION)]
    if step == 1:
        first = _upstream_answer(model, 0)
        messages.append(first.message or AssistantMessage())
        messages += [
            ToolMessage(tool_call_id=c.id, name=c.name, content=RESULT) for c in first.tool_calls
        ]
    prompt = model.prompt(messages).auto_tool_call(False)
    if model.model == "weather":
        prompt = prompt.client_tools(WEATHER)
    return prompt.call()


def _pair(servers: Servers, upstream: str, scenario: str) -> tuple[str, ChatModel]:
    return servers.gateways[upstream, scenario], servers.models[upstream, scenario]


@for_every_upstream_sdk_and_mode
def test_a_tool_loop_driven_by_the_sdk(
    servers: Servers, upstream: str, client: str, stream: bool
) -> None:
    url, model = _pair(servers, upstream, "weather")
    sdk = CLIENT_CLASSES[client](url, tools=True, reasoning=False)
    first = sdk.ask(stream)
    same_answer(first, expected(_upstream_answer(model, 0)), ids=sdk.ids)
    assert first.finish == "tool_calls" and first.calls
    sdk.answer(first)
    want = expected(_upstream_answer(model, 1))
    before = len(servers.provider.requests)
    second = sdk.ask(stream)
    same_answer(second, want, ids=sdk.ids)
    assert RESULT in second.text
    sent = servers.provider.requests[before:]
    assert len(sent) == 1  # one upstream request per client request: no tool ran here
    if upstream != "ollama":  # the results went upstream paired with the calls' ids
        assert all(call_id in str(sent[0].body) for call_id, _n, _a in first.calls if call_id)


@for_every_upstream_sdk_and_mode
def test_reasoning_then_text(servers: Servers, upstream: str, client: str, stream: bool) -> None:
    url, model = _pair(servers, upstream, "think")
    want = expected(_upstream_answer(model, 0))
    sdk = CLIENT_CLASSES[client](url, tools=False, reasoning=True)
    got = sdk.ask(stream)
    sent = servers.provider.requests[-1].body
    same_answer(got, want, ids=sdk.ids)
    assert got.thinking and got.text and got.finish == "stop"
    # the client's temperature, max tokens and reasoning, in the upstream's own terms
    temperature, max_tokens, reasoning = UPSTREAM_KNOBS[upstream]
    assert (at(sent, temperature), at(sent, max_tokens)) == (1.0, MAX_TOKENS)
    # Ollama's think is the effort a client named, else true (a budget has no counterpart)
    budget_clients = ("anthropic", "gemini", "cohere")
    low = True if upstream == "ollama" and client in budget_clients else "low"
    assert at(sent, reasoning) in (low, 1024)


def test_solon_events_serve_upstream_behind_every_sdk(servers: Servers) -> None:
    """``solon-events serve --upstream gemini:URL --model weather --token-env``, as a
    process: each SDK, its key the gateway's token, runs a tool loop through it; a wrong
    key is refused in the SDK's own terms."""
    token = "gateway-token-0123456789"
    env = {**os.environ, "GATEWAY_TOKEN": token, "PYTHONUNBUFFERED": "1"}
    command = [sys.executable, "-m", "solon_events.cli", "serve", "--port", "0"]
    command += ["--upstream", f"gemini:{servers.provider.url}/v1beta", "--model", "weather"]
    command += ["--token-env", "GATEWAY_TOKEN"]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), url
        for client in SDK_CLIENTS:
            with pytest.raises(Exception, match=r"401|bearer token"):
                CLIENT_CLASSES[client](url, tools=False, reasoning=False, key="wrong").ask(False)
            sdk = CLIENT_CLASSES[client](url, tools=True, reasoning=False, key=token)
            first = sdk.ask(stream=True)
            assert [call[1:] for call in first.calls] == [("get_weather", {"city": "Paris"})]
            sdk.answer(first)
            second = sdk.ask(stream=False)
            assert second.text == f"It is {RESULT} in Paris right now.", client
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=15) == 0
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=10)
