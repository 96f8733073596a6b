"""The embedded provider, over real HTTP on 127.0.0.1.

Request bodies are hand-written from each provider's public API reference; what the server
sends back is checked on the wire (content types, frames, error bodies) and through the
dialects themselves (``replay`` over the received bytes).
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from anthropic_frames import anthropic_text_stream
from hypothesis import given
from hypothesis import strategies as st
from recorded import ENDPOINTS, TEXT_DIALECTS
from sdk_oracles import RECORDINGS, expected_of

from solon_events import ChatModel, replay, tool
from solon_events.devserver import DevServer
from solon_events.devserver.scenarios import (
    DEFAULT_CITY,
    ERROR_FRAME_MESSAGE,
    GREETING,
    HTML_BODY,
    JOKE,
    city_in,
    example_arguments,
)
from solon_events.dialects.base import get_dialect
from solon_events.event_model.errors import ChatProtocolError, ProviderError
from solon_events.event_model.events import ChatEvent, ChatEventType
from solon_events.event_model.messages import ChatRequest, ToolMessage, ToolSpec, UserMessage
from solon_events.event_model.results import ChatResponse, Usage

T = ChatEventType
DIALECTS = TEXT_DIALECTS
SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string", "description": "The city"}},
    "required": ["city"],
}
TOOL_FINISH = {
    "openai": "tool_calls",
    "anthropic": "tool_use",
    "openai-responses": "completed",
    "gemini": "STOP",
    "ollama": "stop",
    "cohere": "TOOL_CALL",
    "google-interactions": "requires_action",
}
STOP_FINISH = {
    "openai": "stop",
    "anthropic": "end_turn",
    "openai-responses": "completed",
    "gemini": "STOP",
    "ollama": "stop",
    "cohere": "COMPLETE",
    "google-interactions": "completed",
}


# request bodies, one builder per provider's request format


def _chat_body(path: str, model: str, messages: list[Any], tools: list[Any]) -> tuple[str, Any]:
    """``path`` and a Chat Completions body (OpenAI's and Cohere's): ``messages``, and the
    ``tools`` (name, schema pairs) as functions when there are any."""
    specs = [{"type": "function", "function": {"name": n, "parameters": s}} for n, s in tools]
    body = {"model": model, "messages": messages, "stream": True}
    return path, {**body, "tools": specs} if specs else body


def _openai(model: str, user: str, tools: list[Any], result: str | None) -> tuple[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": user}]
    if result is not None:
        function = {"name": "get_weather", "arguments": '{"city":"Paris"}'}
        call = {"id": "call_1", "type": "function", "function": function}
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_1", "content": result},
        ]
    return _chat_body("/v1/chat/completions", model, messages, tools)


def _anthropic(model: str, user: str, tools: list[Any], result: str | None) -> tuple[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": user}]
    if result is not None:
        use = {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}
        answer = {"type": "tool_result", "tool_use_id": "toolu_1", "content": result}
        messages += [
            {"role": "assistant", "content": [use]},
            {"role": "user", "content": [answer]},
        ]
    specs = [{"name": name, "input_schema": schema} for name, schema in tools]
    body = {"model": model, "max_tokens": 1024, "messages": messages, "stream": True}
    return "/v1/messages", {**body, "tools": specs} if specs else body


def _responses(model: str, user: str, tools: list[Any], result: str | None) -> tuple[str, Any]:
    items: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "input_text", "text": user}]}
    ]
    if result is not None:
        items += [
            {
                "type": "function_call",
                "call_id": "call_1",
                "name": "get_weather",
                "arguments": "{}",
            },
            {"type": "function_call_output", "call_id": "call_1", "output": result},
        ]
    specs = [{"type": "function", "name": name, "parameters": schema} for name, schema in tools]
    body = {"model": model, "input": items, "stream": True}
    return "/v1/responses", {**body, "tools": specs} if specs else body


def _gemini(model: str, user: str, tools: list[Any], result: str | None) -> tuple[str, Any]:
    contents: list[dict[str, Any]] = [{"role": "user", "parts": [{"text": user}]}]
    if result is not None:
        call = {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}
        answer = {"functionResponse": {"name": "get_weather", "response": {"result": result}}}
        contents += [{"role": "model", "parts": [call]}, {"role": "user", "parts": [answer]}]
    specs = [{"name": name, "parameters": schema} for name, schema in tools]
    body: dict[str, Any] = {"contents": contents}
    if specs:
        body["tools"] = [{"functionDeclarations": specs}]
    return f"/v1beta/models/{model}:streamGenerateContent?alt=sse", body


def _ollama(model: str, user: str, tools: list[Any], result: str | None) -> tuple[str, Any]:
    _, body = _openai(model, user, tools, result)
    return "/api/chat", body


def _cohere(model: str, user: str, tools: list[Any], result: str | None) -> tuple[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": user}]
    if result is not None:
        function = {"name": "get_weather", "arguments": '{"city":"Paris"}'}
        call = {"id": "get_weather_1", "type": "function", "function": function}
        document = {"type": "document", "document": {"data": result}}
        messages += [
            {"role": "assistant", "tool_plan": "I will look it up.", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "get_weather_1", "content": [document]},
        ]
    return _chat_body("/v2/chat", model, messages, tools)


def _interactions(model: str, user: str, tools: list[Any], result: str | None) -> tuple[str, Any]:
    steps: list[dict[str, Any]] = [
        {"type": "user_input", "content": [{"type": "text", "text": user}]}
    ]
    if result is not None:
        arguments = {"city": "Paris"}
        steps += [
            {"type": "function_call", "id": "fc_1", "name": "get_weather", "arguments": arguments},
            {"type": "function_result", "call_id": "fc_1", "name": "get_weather", "result": result},
        ]
    specs = [{"type": "function", "name": name, "parameters": schema} for name, schema in tools]
    body = {"model": model, "input": steps, "stream": True}
    return "/v1beta/interactions", {**body, "tools": specs} if specs else body


BUILDERS = {
    "openai": _openai,
    "anthropic": _anthropic,
    "openai-responses": _responses,
    "gemini": _gemini,
    "ollama": _ollama,
    "cohere": _cohere,
    "google-interactions": _interactions,
}


def request_for(
    dialect: str,
    model: str = "weather",
    *,
    user: str = "What is the weather in Paris?",
    tools: list[tuple[str, Any]] | None = None,
    result: str | None = None,
) -> tuple[str, Any]:
    """The route and body of a request in ``dialect``'s own format."""
    declared = [("get_weather", SCHEMA)] if tools is None else tools
    return BUILDERS[dialect](model, user, declared, result)


def parse(data: bytes, dialect: str) -> tuple[list[ChatEvent], BaseException | None]:
    """The events of ``data`` through the dialect's pipeline, and the error if it failed."""
    events: list[ChatEvent] = []
    errors: list[BaseException] = []
    replay(data, dialect=dialect).subscribe(events.append, errors.append)
    return events, (errors[0] if errors else None)


def usage(response: ChatResponse) -> Usage:
    """The response's usage, which every scripted stream reports."""
    assert response.usage is not None
    return response.usage


def final(data: bytes, dialect: str) -> ChatResponse:
    """RESPONSE_END's response for a stream that must succeed."""
    events, error = parse(data, dialect)
    assert error is None, f"{dialect}: {error!r}"
    end = [e for e in events if e.type is T.RESPONSE_END]
    assert len(end) == 1 and end[0].response is not None
    return end[0].response


# fixtures


@pytest.fixture
async def srv() -> AsyncIterator[DevServer]:
    async with DevServer() as server:
        yield server


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as client:
        yield client


def posted(srv: DevServer, session: aiohttp.ClientSession, route: tuple[str, Any]) -> Any:
    """The response to one request (``route``: its path and body), as ``session.post``
    gives it: a context manager."""
    path, body = route
    return session.post(srv.url + path, json=body)


async def fetch(
    srv: DevServer, session: aiohttp.ClientSession, route: tuple[str, Any]
) -> tuple[int, str, bytes]:
    """POST one request; status, content type and the whole body."""
    async with posted(srv, session, route) as response:
        return response.status, response.headers["Content-Type"], await response.read()


# lifecycle and routes


async def test_url_is_a_local_base_url_with_the_bound_port(srv: DevServer) -> None:
    assert srv.port > 0
    assert srv.url == f"http://127.0.0.1:{srv.port}"
    assert not srv.url.endswith("/")


async def test_start_and_close_without_context_manager() -> None:
    server = DevServer()
    await server.start()
    async with aiohttp.ClientSession() as client:
        path, body = request_for("openai", "echo", user="hi")
        async with client.post(server.url + path, json=body) as response:
            assert response.status == 200
    await server.close()
    await server.close()
    async with aiohttp.ClientSession() as client:
        with pytest.raises(aiohttp.ClientConnectionError):
            await client.post(server.url + path, json=body)


@pytest.mark.parametrize(
    ("dialect", "content_type"),
    [
        ("openai", "text/event-stream"),
        ("anthropic", "text/event-stream"),
        ("openai-responses", "text/event-stream"),
        ("gemini", "text/event-stream"),
        ("ollama", "application/x-ndjson"),
        ("cohere", "text/event-stream"),
        ("google-interactions", "text/event-stream"),
    ],
)
async def test_each_route_streams_with_its_content_type(
    srv: DevServer, session: aiohttp.ClientSession, dialect: str, content_type: str
) -> None:
    status, received_type, data = await fetch(srv, session, request_for(dialect))
    assert status == 200
    assert received_type.split(";")[0] == content_type
    assert data


async def test_wire_framing_of_each_dialect(srv: DevServer, session: aiohttp.ClientSession) -> None:
    _, _, openai = await fetch(srv, session, request_for("openai"))
    assert openai.startswith(b"data: {") and openai.endswith(b"data: [DONE]\n\n")
    assert b"event:" not in openai
    _, _, anthropic = await fetch(srv, session, request_for("anthropic"))
    assert anthropic.startswith(b"event: message_start\ndata: {")
    assert anthropic.endswith(b'event: message_stop\ndata: {"type":"message_stop"}\n\n')
    _, _, responses = await fetch(srv, session, request_for("openai-responses"))
    assert responses.startswith(b"event: response.created\ndata: {")
    assert b"event: response.completed\n" in responses
    _, _, gemini = await fetch(srv, session, request_for("gemini"))
    assert gemini.startswith(b"data: {") and gemini.endswith(b"}\r\n\r\n")
    _, _, ollama = await fetch(srv, session, request_for("ollama"))
    lines = ollama.splitlines()
    assert all(orjson.loads(line)["model"] == "weather" for line in lines)
    assert orjson.loads(lines[-1])["done"] is True
    _, _, cohere = await fetch(srv, session, request_for("cohere"))
    assert cohere.startswith(b"event: message-start\ndata: {")
    assert cohere.endswith(b"}\n\n") and b"event: message-end\ndata: {" in cohere
    _, _, interactions = await fetch(srv, session, request_for("google-interactions"))
    assert interactions.startswith(b"event: interaction.created\ndata: {")
    assert b"event: interaction.completed\ndata: {" in interactions


async def test_responses_sequence_numbers_count_up_from_zero(
    srv: DevServer, session: aiohttp.ClientSession
) -> None:
    _, _, data = await fetch(srv, session, request_for("openai-responses", result="sunny"))
    payloads = [orjson.loads(line[6:]) for line in data.splitlines() if line.startswith(b"data:")]
    assert [p["sequence_number"] for p in payloads] == list(range(len(payloads)))
    assert payloads[-1]["response"]["output"][0]["content"][0]["text"] == (
        "It is sunny in Paris right now."
    )


# the weather scenario through every dialect


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_weather_first_turn_thinks_then_calls_the_tool(
    srv: DevServer, session: aiohttp.ClientSession, dialect: str
) -> None:
    _, _, data = await fetch(srv, session, request_for(dialect))
    response = final(data, dialect)
    assert response.thinking == ("The user wants the weather in Paris. I should call get_weather.")
    assert response.text == ""
    assert [(c.name, c.arguments) for c in response.tool_calls] == [
        ("get_weather", {"city": "Paris"})
    ]
    assert (usage(response).prompt_tokens, usage(response).completion_tokens) == (42, 17)
    assert usage(response).total_tokens == 59
    assert response.finish_reason == TOOL_FINISH[dialect]


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_weather_with_a_tool_result_answers_quoting_it(
    srv: DevServer, session: aiohttp.ClientSession, dialect: str
) -> None:
    route = request_for(dialect, result="18°C and sunny")
    _, _, data = await fetch(srv, session, route)
    events, error = parse(data, dialect)
    assert error is None
    deltas = [e.text for e in events if e.type is T.TEXT_DELTA]
    assert len(deltas) >= 3
    response = final(data, dialect)
    assert response.text == "It is 18°C and sunny in Paris right now."
    assert response.tool_calls == ()
    assert response.thinking == ""
    assert (usage(response).prompt_tokens, usage(response).completion_tokens) == (80, 12)
    assert response.finish_reason == STOP_FINISH[dialect]


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_weather_without_tools_answers_with_text(
    srv: DevServer, session: aiohttp.ClientSession, dialect: str
) -> None:
    _, _, data = await fetch(srv, session, request_for(dialect, tools=[]))
    response = final(data, dialect)
    assert "weather in Paris" in response.text
    assert response.tool_calls == ()
    assert response.finish_reason == STOP_FINISH[dialect]


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_weather_is_about_the_city_the_user_names(
    srv: DevServer, session: aiohttp.ClientSession, dialect: str
) -> None:
    _, _, data = await fetch(srv, session, request_for(dialect, user="And in Lyon?"))
    response = final(data, dialect)
    assert response.thinking == "The user wants the weather in Lyon. I should call get_weather."
    assert [(c.name, c.arguments) for c in response.tool_calls] == [
        ("get_weather", {"city": "Lyon"})
    ]
    route = request_for(dialect, user="And in Lyon?", result="12°C and rainy")
    _, _, data = await fetch(srv, session, route)
    assert final(data, dialect).text == "It is 12°C and rainy in Lyon right now."
    route = request_for(dialect, user="Is it cold in New York City?", tools=[])
    _, _, data = await fetch(srv, session, route)
    assert "the weather in New York City, but" in final(data, dialect).text


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_weather_tells_a_joke_when_asked_for_one(
    srv: DevServer, session: aiohttp.ClientSession, dialect: str
) -> None:
    _, _, data = await fetch(srv, session, request_for(dialect, user="Tell me a joke"))
    events, error = parse(data, dialect)
    assert error is None
    assert len([e for e in events if e.type is T.TEXT_DELTA]) >= 3  # streamed, not one piece
    response = final(data, dialect)
    assert response.text == JOKE
    assert response.tool_calls == () and response.thinking == ""
    assert response.finish_reason == STOP_FINISH[dialect]


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("greeting", ["Hi", "hello there!", "Good morning"])
async def test_weather_greets_a_greeting_back_tools_or_not(
    srv: DevServer, session: aiohttp.ClientSession, dialect: str, greeting: str
) -> None:
    for tools in (None, []):  # with the weather tool, and with none
        route = request_for(dialect, user=greeting, **({} if tools is None else {"tools": tools}))
        _, _, data = await fetch(srv, session, route)
        response = final(data, dialect)
        assert response.text == GREETING
        assert response.tool_calls == () and response.thinking == ""
    route = request_for(dialect, user="Hi, what is the weather in Rome?")  # a question
    _, _, data = await fetch(srv, session, route)
    assert [c.arguments for c in final(data, dialect).tool_calls] == [{"city": "Rome"}]


@pytest.mark.parametrize(
    ("result", "answer"),
    [
        ("18°C and sunny", "It is 18°C and sunny in Paris right now."),
        # a tool's own sentence, naming the city
        (
            "sunny and 18°C in Paris for the next 2 day(s)",
            "It is sunny and 18°C in Paris for the next 2 day(s).",
        ),
        ('{"city":"Paris","celsius":18.0}', "It is 18°C in Paris right now."),  # a model as JSON
        (
            '{"temperature":21.5,"conditions":"cloudy"}',
            "It is 21.5°C and cloudy in Paris right now.",
        ),
        ('{"station":"LFPG"}', 'It is {"station":"LFPG"} in Paris right now.'),  # nothing to read
        (
            "The tool call was denied and did not run. Reason: not now",
            "I did not look up the weather in Paris: the call was denied (not now).",
        ),
        (
            "The tool call was denied and did not run.",
            "I did not look up the weather in Paris: the call was denied.",
        ),
        (
            "Error: ConnectionError: the station is offline",
            "I could not look up the weather in Paris: ConnectionError: the station is offline",
        ),
    ],
)
async def test_weather_answers_a_tool_result_as_a_person_would(
    srv: DevServer, session: aiohttp.ClientSession, result: str, answer: str
) -> None:
    _, _, data = await fetch(srv, session, request_for("openai", result=result))
    response = final(data, "openai")
    assert response.text == answer
    assert response.tool_calls == () and response.finish_reason == STOP_FINISH["openai"]


@pytest.mark.parametrize(
    ("message", "city"),
    [
        ("What is the weather in Paris?", "Paris"),
        ("And in Lyon?", "Lyon"),
        ("Weather for São Paulo, please", "São Paulo"),
        ("How about Tokyo?", "Tokyo"),
        ("I am in Berlin. What about Rome?", "Berlin"),
        ("Hi", DEFAULT_CITY),
        ("Weather?", DEFAULT_CITY),
        ("weather in lyon", DEFAULT_CITY),  # not capitalized: not read as a name
        ("Hi. Rome?", DEFAULT_CITY),  # a sentence's first word is not taken for a name
    ],
)
def test_the_city_of_a_message(message: str, city: str) -> None:
    assert city_in(message) == city


_NAME = st.from_regex(r"[A-Z][a-z]{1,9}", fullmatch=True)


@given(
    names=st.lists(_NAME, min_size=1, max_size=3),
    before=st.sampled_from(["And in", "What is the weather in", "Forecast for", "Anything at"]),
    after=st.sampled_from(["?", "", " today?", ", please.", ". Thanks!"]),
)
def test_the_words_after_in_are_the_city(names: list[str], before: str, after: str) -> None:
    city = " ".join(names)
    assert city_in(f"{before} {city}{after}") == city


@given(st.text(alphabet=st.characters(blacklist_categories=("Lu", "Lt"))))
def test_a_message_without_capitals_is_about_the_default_city(message: str) -> None:
    assert city_in(message) == DEFAULT_CITY


def test_a_conversation_with_the_default_scenario_follows_the_user() -> None:
    seen: list[str] = []

    @tool
    def get_weather(city: str) -> str:
        """Current weather in a city."""
        seen.append(city)
        return "18°C and sunny"

    with (
        DevServer.run_in_thread() as running,
        ChatModel(running.url + "/v1/chat/completions", "gpt-4.1-mini") as model,
    ):
        messages: list[Any] = [{"role": "user", "content": "What is the weather in Paris?"}]
        first = model.prompt(messages).tools(get_weather).call()
        messages += [{"role": "assistant", "content": first.text}]
        messages += [{"role": "user", "content": "And in Lyon?"}]
        second = model.prompt(messages).tools(get_weather).call()
        messages += [{"role": "assistant", "content": second.text}]
        messages += [{"role": "user", "content": "Tell me a joke"}]
        third = model.prompt(messages).tools(get_weather).call()
    assert first.text == "It is 18°C and sunny in Paris right now."
    assert second.text == "It is 18°C and sunny in Lyon right now."
    assert seen == ["Paris", "Lyon"]  # the joke called no tool
    assert third.text == JOKE


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_the_first_declared_tool_is_called_with_schema_arguments(
    srv: DevServer, session: aiohttp.ClientSession, dialect: str
) -> None:
    schema = {
        "type": "object",
        "properties": {
            "place": {"type": "string"},
            "days": {"type": "integer"},
            "threshold": {"type": "number"},
            "metric": {"type": "boolean"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            "note": {"type": "string"},
        },
        "required": ["place", "days", "threshold", "metric", "unit"],
    }
    tools = [("forecast", schema), ("get_weather", SCHEMA)]
    _, _, data = await fetch(srv, session, request_for(dialect, "gpt-4o", tools=tools))
    (call,) = final(data, dialect).tool_calls
    assert call.name == "forecast"
    assert call.arguments == {
        "place": "Paris",
        "days": 3,
        "threshold": 1.5,
        "metric": True,
        "unit": "celsius",
    }


def test_example_arguments_follow_the_schema() -> None:
    schema = {
        "type": "OBJECT",
        "properties": {
            "when": {"anyOf": [{"type": "null"}, {"type": "integer"}]},
            "tags": {"type": "array", "items": {"type": "string"}},
            "where": {
                "type": "object",
                "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}},
                "required": ["lat"],
            },
            "kind": {"type": ["null", "boolean"]},
        },
        "required": ["when", "tags", "where", "kind"],
    }
    assert example_arguments(schema) == {
        "when": 3,
        "tags": ["Paris"],
        "where": {"lat": 1.5},
        "kind": True,
    }
    assert example_arguments({"type": "object", "properties": {}}) == {}


# the other scenarios


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_echo_streams_the_last_user_message_word_by_word(
    srv: DevServer, session: aiohttp.ClientSession, dialect: str
) -> None:
    route = request_for(dialect, "echo", user="one two three four")
    _, _, data = await fetch(srv, session, route)
    events, _ = parse(data, dialect)
    assert [e.text for e in events if e.type is T.TEXT_DELTA] == ["one", " two", " three", " four"]
    response = final(data, dialect)
    assert response.text == "one two three four"
    assert usage(response).completion_tokens == 4


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_slow_sends_n_deltas_at_the_interval(
    srv: DevServer, session: aiohttp.ClientSession, dialect: str
) -> None:
    started = time.monotonic()
    _, _, data = await fetch(srv, session, request_for(dialect, "slow:5:0.04"))
    assert time.monotonic() - started >= 4 * 0.04
    response = final(data, dialect)
    assert response.text == "0 1 2 3 4 "
    assert response.finish_reason == STOP_FINISH[dialect]


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (401, "Incorrect API key provided"),
        (429, "Rate limit reached"),
        (500, "The server had an error while processing your request"),
    ],
)
async def test_status_replies_with_each_providers_error_body(
    srv: DevServer, session: aiohttp.ClientSession, status: int, message: str
) -> None:
    bodies: dict[str, Any] = {}
    for dialect in DIALECTS:
        received, content_type, data = await fetch(
            srv, session, request_for(dialect, f"status:{status}")
        )
        assert received == status
        assert content_type.startswith("application/json")
        bodies[dialect] = orjson.loads(data)
    assert bodies["openai"]["error"]["message"] == message
    assert set(bodies["openai"]["error"]) == {"message", "type", "param", "code"}
    assert bodies["openai-responses"]["error"]["message"] == message
    assert bodies["anthropic"]["type"] == "error"
    assert bodies["anthropic"]["error"]["message"] == message
    assert bodies["gemini"]["error"]["code"] == status
    assert bodies["gemini"]["error"]["message"] == message
    assert bodies["ollama"] == {"error": message}
    assert bodies["cohere"]["message"] == message and set(bodies["cohere"]) == {"id", "message"}
    words = {401: "UNAUTHENTICATED", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL"}
    assert bodies["google-interactions"] == {"error": {"code": words[status], "message": message}}


async def test_status_error_types_use_each_providers_words(
    srv: DevServer, session: aiohttp.ClientSession
) -> None:
    _, _, openai = await fetch(srv, session, request_for("openai", "status:401"))
    assert orjson.loads(openai)["error"]["code"] == "invalid_api_key"
    _, _, anthropic = await fetch(srv, session, request_for("anthropic", "status:401"))
    assert orjson.loads(anthropic)["error"]["type"] == "authentication_error"
    _, _, gemini = await fetch(srv, session, request_for("gemini", "status:401"))
    assert orjson.loads(gemini)["error"]["status"] == "UNAUTHENTICATED"
    _, _, limited = await fetch(srv, session, request_for("anthropic", "status:429"))
    assert orjson.loads(limited)["error"]["type"] == "rate_limit_error"


async def test_status_error_messages_are_found_by_the_dialects(
    srv: DevServer, session: aiohttp.ClientSession
) -> None:
    for dialect in DIALECTS:
        _, _, data = await fetch(srv, session, request_for(dialect, "status:429"))
        assert get_dialect(dialect).error_message(orjson.loads(data)) == "Rate limit reached"


async def test_html_is_a_200_page(srv: DevServer, session: aiohttp.ClientSession) -> None:
    status, content_type, data = await fetch(srv, session, request_for("openai", "html"))
    assert status == 200
    assert content_type.startswith("text/html")
    assert data.decode() == HTML_BODY


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_truncate_ends_without_the_completion_signal(
    srv: DevServer, session: aiohttp.ClientSession, dialect: str
) -> None:
    status, _, data = await fetch(srv, session, request_for(dialect, "truncate"))
    assert status == 200
    signals = (
        b"[DONE]",
        b"message_stop",
        b"response.completed",
        b"finishReason",
        b"message-end",
        b"interaction.completed",
    )
    for signal_bytes in signals:
        assert signal_bytes not in data
    assert b'"done":true' not in data
    events, error = parse(data, dialect)
    assert isinstance(error, ChatProtocolError)
    (failure,) = [e for e in events if e.type is T.ERROR]
    assert failure.response is not None and failure.response.text == "This is a partial answer"
    assert not [e for e in events if e.type is T.RESPONSE_END]


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_error_frame_is_a_provider_error_after_partial_text(
    srv: DevServer, session: aiohttp.ClientSession, dialect: str
) -> None:
    _, _, data = await fetch(srv, session, request_for(dialect, "error-frame"))
    events, error = parse(data, dialect)
    assert isinstance(error, ProviderError)
    assert ERROR_FRAME_MESSAGE in str(error)
    (failure,) = [e for e in events if e.type is T.ERROR]
    assert failure.response is not None and failure.response.text == "Partial answer"


async def test_first_delay_holds_the_headers(
    srv: DevServer, session: aiohttp.ClientSession
) -> None:
    started = time.monotonic()
    async with posted(srv, session, request_for("openai", "first-delay:0.3")) as response:
        headers_after = time.monotonic() - started
        data = await response.read()
    assert headers_after >= 0.3
    assert final(data, "openai").text == "Hello after a delay."


async def test_stall_sends_the_first_delta_before_the_pause(
    srv: DevServer, session: aiohttp.ClientSession
) -> None:
    started = time.monotonic()
    async with posted(srv, session, request_for("anthropic", "stall:0.5")) as response:
        first = b""
        while b"text_delta" not in first:
            first += await response.content.readany()
        first_after = time.monotonic() - started
        rest = await response.read()
    assert first_after < 0.4
    assert time.monotonic() - started >= 0.5
    assert final(first + rest, "anthropic").text == "Stalling and done."


async def test_gate_holds_the_rest_until_opened(
    srv: DevServer, session: aiohttp.ClientSession
) -> None:
    async with posted(srv, session, request_for("ollama", "gate")) as response:
        first = await response.content.readline()
        assert orjson.loads(first)["message"]["content"] == "Before the gate."
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(response.content.readline(), 0.2)
        srv.open_gate()
        rest = await response.read()
    assert final(first + rest, "ollama").text == "Before the gate. After the gate."


async def test_gate_can_be_opened_from_another_thread(
    srv: DevServer, session: aiohttp.ClientSession
) -> None:
    async with posted(srv, session, request_for("openai", "gate")) as response:
        await response.content.readline()
        await asyncio.to_thread(srv.open_gate)
        data = await asyncio.wait_for(response.read(), 2)
    assert data.endswith(b"data: [DONE]\n\n")


async def test_many_scenarios_are_served_concurrently(
    srv: DevServer, session: aiohttp.ClientSession
) -> None:
    gated = asyncio.ensure_future(fetch(srv, session, request_for("anthropic", "gate")))
    routes = [request_for(d, "echo", user=f"hello {i}") for i, d in enumerate(DIALECTS * 4)]
    results = await asyncio.gather(*(fetch(srv, session, route) for route in routes))
    for i, (dialect, (_, _, data)) in enumerate(zip(DIALECTS * 4, results)):
        assert final(data, dialect).text == f"hello {i}"
    assert not gated.done()
    srv.open_gate()
    _, _, data = await gated
    assert final(data, "anthropic").text == "Before the gate. After the gate."


async def test_gemini_takes_the_scenario_from_the_url(
    srv: DevServer, session: aiohttp.ClientSession
) -> None:
    _, _, data = await fetch(srv, session, request_for("gemini", "slow:3:0"))
    response = final(data, "gemini")
    assert response.text == "0 1 2 "
    assert response.model == "slow:3:0"


# disconnects


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_a_client_that_goes_away_is_counted(
    srv: DevServer, session: aiohttp.ClientSession, dialect: str
) -> None:
    response = await posted(srv, session, request_for(dialect, "slow:200:0.05"))
    await response.content.readany()
    assert srv.disconnect_count == 0
    response.close()
    assert await srv.wait_disconnect(1.0)
    assert srv.disconnect_count == 1
    assert srv.disconnects == 1


async def test_a_disconnect_while_waiting_at_the_gate_is_seen_at_once(
    srv: DevServer, session: aiohttp.ClientSession
) -> None:
    response = await posted(srv, session, request_for("openai", "gate"))
    await response.content.readline()
    started = time.monotonic()
    response.close()
    assert await srv.wait_disconnect(1.0)
    assert time.monotonic() - started < 1.0


async def test_a_finished_stream_is_no_disconnect(
    srv: DevServer, session: aiohttp.ClientSession
) -> None:
    await fetch(srv, session, request_for("openai"))
    assert not await srv.wait_disconnect(0.1)
    assert srv.disconnect_count == 0


# observability


async def test_requests_are_recorded_with_headers_and_body(
    srv: DevServer, session: aiohttp.ClientSession
) -> None:
    path, body = request_for("anthropic", "echo", user="hi")
    headers = {"x-api-key": "sk-test", "anthropic-version": "2023-06-01"}
    async with session.post(srv.url + path, json=body, headers=headers) as response:
        await response.read()
    (recorded,) = srv.requests
    recorded_path, recorded_headers, recorded_body = recorded
    assert recorded_path == "/v1/messages"
    assert recorded_headers["X-Api-Key"] == "sk-test"
    assert recorded_body == body


async def test_a_body_that_is_not_json_is_a_400_in_the_dialects_format(
    srv: DevServer, session: aiohttp.ClientSession
) -> None:
    async with session.post(srv.url + "/v1/messages", data=b"not json") as response:
        assert response.status == 400
        body = await response.json()
    assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
    assert srv.requests[0].body is None


@pytest.mark.parametrize("model", ["slow:many", "status:200", "replay"])
async def test_unusable_scenario_arguments_are_a_400(
    srv: DevServer, session: aiohttp.ClientSession, model: str
) -> None:
    status, _, data = await fetch(srv, session, request_for("openai", model))
    assert status == 400
    assert orjson.loads(data)["error"]["type"] == "invalid_request_error"


# replay of a recording


RECORDING = anthropic_text_stream("msg_rec", ["Re", "played"], input_tokens=5, output_tokens=2)


@pytest.fixture
def recording(tmp_path: Path) -> Path:
    path = tmp_path / "anthropic-text.jsonl"
    path.write_text("".join(json.dumps(frame) + "\n" for frame in RECORDING))
    return path


async def test_replay_streams_the_recording_at_the_pace(
    recording: Path, session: aiohttp.ClientSession
) -> None:
    async with DevServer(recording=recording, pace=0.05) as server:
        started = time.monotonic()
        _, content_type, data = await fetch(server, session, request_for("anthropic", "replay"))
        elapsed = time.monotonic() - started
    assert elapsed >= 6 * 0.05
    assert content_type.startswith("text/event-stream")
    assert data.count(b"\nevent: ") + 1 == len(RECORDING)
    assert data.startswith(b"event: message_start\ndata: {")
    response = final(data, "anthropic")
    assert response.text == "Replayed"
    assert usage(response).completion_tokens == 2


async def test_with_a_recording_unknown_models_replay_it(
    recording: Path, session: aiohttp.ClientSession
) -> None:
    async with DevServer(recording=recording) as server:
        _, _, data = await fetch(server, session, request_for("openai", "claude-whatever"))
        _, _, echoed = await fetch(server, session, request_for("openai", "echo", user="x y"))
    assert b"event:" not in data
    assert data.count(b"data: ") == len(RECORDING)
    assert final(echoed, "openai").text == "x y"


async def test_replay_as_ndjson_on_the_ollama_route(
    session: aiohttp.ClientSession, tmp_path: Path
) -> None:
    frames = [
        {
            "model": "m",
            "created_at": "2025-01-01T00:00:00Z",
            "message": {"role": "assistant", "content": "Hi"},
            "done": False,
        },
        {
            "model": "m",
            "created_at": "2025-01-01T00:00:01Z",
            "message": {"role": "assistant", "content": ""},
            "done": True,
            "done_reason": "stop",
            "prompt_eval_count": 3,
            "eval_count": 1,
        },
    ]
    path = tmp_path / "ollama.jsonl"
    path.write_text("\n".join(json.dumps(f) for f in frames) + "\n")
    async with DevServer(recording=path) as server:
        _, content_type, data = await fetch(server, session, request_for("ollama", "replay"))
    assert content_type == "application/x-ndjson"
    assert [orjson.loads(line) for line in data.splitlines()] == frames
    assert final(data, "ollama").text == "Hi"


@pytest.mark.parametrize(
    ("dialect", "path", "name"),
    [
        ("cohere", RECORDINGS / "cohere" / "cohere-tool-call.chunks.txt", "type"),
        (
            "google-interactions",
            RECORDINGS / "google-interactions" / "tool-call-step1.chunks.txt",
            "event_type",
        ),
    ],
    ids=["cohere", "google-interactions"],
)
async def test_replay_of_a_public_recording_on_its_route_names_each_event(
    session: aiohttp.ClientSession, dialect: str, path: Path, name: str
) -> None:
    frames = [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
    async with DevServer(recording=path) as server:
        _, content_type, data = await fetch(server, session, request_for(dialect, "replay"))
    assert content_type.startswith("text/event-stream")
    events = [event for event in data.split(b"\n\n") if event]
    assert [e.split(b"\n")[0] for e in events] == [
        b"event: " + frame[name].encode() for frame in frames
    ]
    assert [orjson.loads(e.split(b"\n")[1].removeprefix(b"data: ")) for e in events] == frames
    expected = expected_of(path, dialect)
    response = final(data, dialect)
    assert response.text == expected["text"] and response.thinking == expected["thinking"]
    calls = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in response.tool_calls]
    assert calls == expected["tool_calls"]
    assert response.finish_reason == expected["finish_reason"]


# the server on its own thread, used from blocking code


def _blocking_post(url: str, route: tuple[str, Any]) -> tuple[int, bytes]:
    host, port = url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=5)
    path, body = route
    connection.request("POST", path, orjson.dumps(body), {"Content-Type": "application/json"})
    response = connection.getresponse()
    data = response.read()
    connection.close()
    return response.status, data


def test_run_in_thread_serves_blocking_clients() -> None:
    with DevServer.run_in_thread() as running:
        assert running.url == f"http://127.0.0.1:{running.port}"
        status, data = _blocking_post(running.url, request_for("openai", result="cloudy"))
        assert status == 200
        assert final(data, "openai").text == "It is cloudy in Paris right now."
        assert running.requests[0].path == "/v1/chat/completions"


def test_run_in_thread_gate_and_disconnect_from_the_calling_thread() -> None:
    with DevServer.run_in_thread() as running:
        host, port = running.url.removeprefix("http://").split(":")
        path, body = request_for("openai", "gate")
        connection = http.client.HTTPConnection(host, int(port), timeout=5)
        connection.request("POST", path, orjson.dumps(body), {"Content-Type": "application/json"})
        response = connection.getresponse()
        received = b""
        while b"Before the gate." not in received:
            received += response.readline()
        connection.close()
        assert running.wait_disconnect(1.0)
        assert running.disconnect_count == 1
        running.open_gate()
        status, data = _blocking_post(running.url, request_for("openai", "gate"))
        assert status == 200
        assert final(data, "openai").text == "Before the gate. After the gate."
    running.close()


# the command


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextlib.contextmanager
def _command(
    stop: signal.Signals = signal.SIGINT, *, started_ignoring_sigint: bool = False
) -> Iterator[tuple[str, list[str]]]:
    """``python -m solon_events.devserver --port 0`` running: its URL and its banner's
    lines; stopped with ``stop`` on exit, which must end it cleanly."""
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root)}
    process = subprocess.Popen(
        [sys.executable, "-m", "solon_events.devserver", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
        preexec_fn=_ignore_sigint if started_ignoring_sigint else None,
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        url = first.strip().rsplit(" ", 1)[-1]
        banner = [first]
        while banner[-1].strip() != "scenarios (the request's model name):":
            banner.append(process.stdout.readline())
        yield url, banner
    finally:
        process.send_signal(stop)
        try:
            _, stderr = process.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            raise
    assert process.returncode == 0, stderr
    assert "Traceback" not in stderr


@pytest.mark.parametrize(
    ("stop", "started_ignoring_sigint"),
    [(signal.SIGINT, False), (signal.SIGINT, True), (signal.SIGTERM, False)],
    ids=["sigint", "sigint-ignored-on-entry", "sigterm"],
)
def test_the_command_prints_the_url_and_serves_until_interrupted(
    stop: signal.Signals, started_ignoring_sigint: bool
) -> None:
    # started_ignoring_sigint: as a server started in the background from a script is
    # (SIGINT ignored on entry)
    with _command(stop, started_ignoring_sigint=started_ignoring_sigint) as (url, banner):
        assert url.startswith("http://127.0.0.1:")
        assert any("/v1/chat/completions" in line for line in banner)
        status, data = _blocking_post(url, request_for("gemini", "echo", user="ok"))
        assert status == 200
        assert final(data, "gemini").text == "ok"


def test_the_command_serves_cohere_and_the_interactions_api_from_its_scenarios() -> None:
    with _command() as (url, banner):
        assert f"  {url}/v2/chat  (cohere)\n" in banner
        assert f"  {url}/v1beta/interactions  (google-interactions)\n" in banner
        for dialect in ("cohere", "google-interactions"):
            status, data = _blocking_post(url, request_for(dialect))
            assert status == 200
            (call,) = final(data, dialect).tool_calls
            assert (call.name, call.arguments) == ("get_weather", {"city": "Paris"})
            status, data = _blocking_post(url, request_for(dialect, result="9°C"))
            assert final(data, dialect).text == "It is 9°C in Paris right now."
            status, data = _blocking_post(url, request_for(dialect, "slow:3:0"))
            assert final(data, dialect).text == "0 1 2 "


# the dialects' own requests, two steps of a tool conversation


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_a_tool_conversation_with_the_dialects_own_requests(
    srv: DevServer, session: aiohttp.ClientSession, dialect: str
) -> None:
    chosen = get_dialect(dialect)
    tools = (ToolSpec(name="get_weather", description="Weather", parameters=SCHEMA),)
    messages: list[Any] = [UserMessage(text="What is the weather in Paris?")]

    async def step() -> ChatResponse:
        request = ChatRequest(model="weather", messages=tuple(messages), tools=tools)
        http = chosen.build_request(request, api_url=srv.url + ENDPOINTS[dialect], api_key="k")
        async with session.post(http.url, data=http.body_bytes(), headers=http.headers) as reply:
            assert reply.status == 200
            return final(await reply.read(), dialect)

    first = await step()
    (call,) = first.tool_calls
    assert (call.name, call.arguments) == ("get_weather", {"city": "Paris"})
    messages += [first.message, ToolMessage(tool_call_id=call.id, name=call.name, content="21°C")]
    second = await step()
    assert second.text == "It is 21°C in Paris right now."
    assert len(srv.requests) == 2


async def test_close_ends_streams_still_open_without_counting_them() -> None:
    server = DevServer()
    await server.start()
    async with aiohttp.ClientSession() as client:
        path, body = request_for("openai", "gate")
        response = await client.post(server.url + path, json=body)
        await response.content.readline()
        started = time.monotonic()
        await server.close()
        assert time.monotonic() - started < 2.0
        with pytest.raises(aiohttp.ClientPayloadError):
            await response.read()
    assert server.disconnect_count == 0


async def test_told_plays_the_scenario_the_prompt_names_for_the_model(
    srv: DevServer, session: aiohttp.ClientSession
) -> None:
    """``told:<name>``: each model of a group is told its fault in the same prompt."""
    prompt = "soak 7 a=slow:2:0 b=status:503 c=reset"
    said = {
        name: await fetch(srv, session, request_for("openai", f"told:{name}", user=prompt))
        for name in ("a", "b")
    }
    assert final(said["a"][2], "openai").text == "0 1 "
    assert said["b"][0] == 503
    _, _, echoed = await fetch(srv, session, request_for("anthropic", "told:d", user=prompt))
    assert final(echoed, "anthropic").text == prompt  # not told: the echo
    with pytest.raises(aiohttp.ServerDisconnectedError):
        await fetch(srv, session, request_for("openai", "told:c", user=prompt))
    status, _, body = await fetch(srv, session, request_for("openai", "told:a", user="a=nope"))
    assert status == 400 and b"no scenario 'nope'" in body


async def test_a_long_lived_server_keeps_its_last_requests_only(
    session: aiohttp.ClientSession,
) -> None:
    """A server that answered many requests keeps the last ``keep_requests`` of them, not
    every one (each kept request costs every garbage collection of the process its time);
    they are still numbered as they came."""
    async with DevServer(keep_requests=3) as server:
        for i in range(5):
            await fetch(server, session, request_for("openai", "echo", user=f"number {i}"))
        requests = server.requests
        assert len(requests) == 5 and len(list(requests)) == 3
        assert [r.body["messages"][-1]["content"] for r in requests[3:]] == [
            "number 3",
            "number 4",
        ]
        assert requests[-1] is requests[4] and requests[2].body["messages"][-1]["content"] == (
            "number 2"
        )
        assert len(requests[:]) == 3  # those of the numbers still kept
        with pytest.raises(IndexError, match=r"request 1 is not kept: 5 came, the last 3"):
            requests[1]
    assert len(DevServer().requests) == 0
    with pytest.raises(ValueError, match="keep_requests"):
        DevServer(keep_requests=0)
