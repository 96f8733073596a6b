"""The Cohere and Interactions encoders, and the embedded provider's routes that use them,
read by the providers' official SDKs.

What ``wire_encoder("cohere")`` and ``wire_encoder("google-interactions")`` write for one
message (thinking, text, a tool call, a finish with usage) is served as the provider would
(an in-memory httpx transport) to the ``cohere`` SDK's ``ClientV2.chat_stream`` and to
google-genai's ``interactions.create(stream=True)``: each must read the same content,
call, finish and usage; the non-streaming bodies must validate as the SDKs' response types.
Then each SDK runs a two-step tool conversation, in its own request shapes, against the
embedded provider over HTTP on 127.0.0.1 (``/v2/chat``, ``/v1beta/interactions``).
The round trip through our own dialects is ``tests/test_wire_round_trip.py``.
"""

from __future__ import annotations

import json
from typing import Any

from extra_modules import needed
from sdk_oracles import sdk_http_client
from wire_messages import Call, Message, Said, Thought, encode_all, events_of

from solon_events.adapters import response_body, wire_encoder
from solon_events.devserver import RunningServer
from solon_events.event_model.results import Usage

MESSAGE = Message(
    (
        Thought(("Let me ", "look."), signature="c2lnbmF0dXJl"),
        Said(("It is ", "sunny.")),
        Call("call_abc123", "weather", ('{"city": ', '"Paris"}')),
    ),
    "tool_calls",
    Usage(prompt_tokens=40, completion_tokens=12, thinking_tokens=5, cache_read_input_tokens=30),
)
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
QUESTION = "What is the weather in Paris?"
PARIS = {"city": "Paris"}
"""The arguments the weather scenario calls get_weather with."""
THINKING = "The user wants the weather in Paris. I should call get_weather."


def test_the_cohere_sdk_reads_what_the_cohere_encoder_writes() -> None:
    cohere = needed("cohere")
    body = encode_all(wire_encoder("cohere", model="command-a"), events_of(MESSAGE))
    client = cohere.ClientV2(
        api_key="k", base_url="http://sdk.test", httpx_client=sdk_http_client(body)
    )
    text, thinking, arguments = [], [], []
    calls = []
    end = None
    for event in client.chat_stream(model="command-a", messages=[{"role": "user", "content": "-"}]):
        if event.type == "content-delta":
            text.append(event.delta.message.content.text or "")
            thinking.append(event.delta.message.content.thinking or "")
        elif event.type == "tool-call-start":
            calls.append(
                (event.delta.message.tool_calls.id, event.delta.message.tool_calls.function.name)
            )
        elif event.type == "tool-call-delta":
            arguments.append(event.delta.message.tool_calls.function.arguments)
        elif event.type == "message-end":
            end = event.delta
    assert ("".join(thinking), "".join(text)) == ("Let me look.", "It is sunny.")
    assert calls == [("call_abc123", "weather")]
    assert json.loads("".join(arguments)) == {"city": "Paris"}
    assert end is not None and end.finish_reason == "TOOL_CALL"
    assert (end.usage.tokens.input_tokens, end.usage.tokens.output_tokens) == (40, 12)
    assert end.usage.cached_tokens == 30
    whole = response_body("cohere", MESSAGE.response(), model="command-a")
    from cohere.core.unchecked_base_model import construct_type

    parsed = construct_type(type_=cohere.V2ChatResponse, object_=whole)
    assert parsed.finish_reason == "TOOL_CALL"
    assert parsed.message.tool_calls[0].function.name == "weather"


def test_google_genai_reads_what_the_interactions_encoder_writes() -> None:
    genai = needed("google.genai")
    from google.genai import types

    body = encode_all(
        wire_encoder("google-interactions", model="gemini-2.5-flash"), events_of(MESSAGE)
    )
    options = types.HttpOptions(base_url="http://sdk.test", httpx_client=sdk_http_client(body))
    client = genai.Client(api_key="k", http_options=options)
    text, thinking, arguments, signatures, steps = [], [], [], [], []
    completed = None
    for event in client.interactions.create(model="gemini-2.5-flash", input="-", stream=True):
        if event.event_type == "step.start":
            steps.append(event.step.type)
        elif event.event_type == "step.delta":
            delta = event.delta
            if delta.type == "text":
                text.append(delta.text)
            elif delta.type == "thought_summary":
                thinking.append(delta.content.text)
            elif delta.type == "thought_signature":
                signatures.append(delta.signature)
            elif delta.type == "arguments_delta":
                arguments.append(delta.arguments)
        elif event.event_type == "interaction.completed":
            completed = event.interaction
    assert steps == ["thought", "model_output", "function_call"]
    assert ("".join(thinking), "".join(text)) == ("Let me look.", "It is sunny.")
    assert signatures == ["c2lnbmF0dXJl"]
    assert json.loads("".join(arguments)) == {"city": "Paris"}
    assert completed is not None and completed.status == "requires_action"
    usage = completed.usage
    assert (usage.total_input_tokens, usage.total_output_tokens, usage.total_thought_tokens) == (
        40,
        7,
        5,
    )
    assert usage.total_cached_tokens == 30
    from google.genai._gaos.types.interactions.interaction import Interaction

    whole = response_body("google-interactions", MESSAGE.response(), model="gemini-2.5-flash")
    parsed = Interaction.model_validate(whole)
    assert [step.type for step in parsed.steps] == ["thought", "model_output", "function_call"]


def weather_call(said: tuple[str, str, list[dict[str, Any]], Any]) -> tuple[dict[str, Any], Any]:
    """The first step of a weather conversation, as an SDK read it (text, thinking, calls
    and how it ended): no text, THINKING, one call get_weather(city="Paris"); the call and
    the step's end."""
    text, thinking, calls, end = said
    assert (text, thinking) == ("", THINKING)
    (call,) = calls
    assert call["name"] == "get_weather" and json.loads(call["arguments"]) == PARIS
    return call, end


def test_the_cohere_sdk_runs_a_tool_conversation_against_the_embedded_provider(
    server: RunningServer,
) -> None:
    cohere = needed("cohere")
    client = cohere.ClientV2(api_key="k", base_url=server.url)
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": SCHEMA}}]
    messages: list[dict[str, object]] = [{"role": "user", "content": QUESTION}]

    def step() -> tuple[str, str, list[dict[str, str]], object]:
        text, thinking, calls, end = [], [], [], None
        for event in client.chat_stream(model="weather", messages=messages, tools=tools):
            message = getattr(getattr(event, "delta", None), "message", None)
            if event.type == "content-delta":
                text.append(message.content.text or "")
                thinking.append(message.content.thinking or "")
            elif event.type == "tool-call-start":
                call = message.tool_calls
                calls.append({"id": call.id, "name": call.function.name, "arguments": ""})
            elif event.type == "tool-call-delta":
                calls[-1]["arguments"] += message.tool_calls.function.arguments
            elif event.type == "message-end":
                end = event.delta
        return "".join(text), "".join(thinking), calls, end

    call, end = weather_call(step())
    assert end.finish_reason == "TOOL_CALL"
    assert (end.usage.tokens.input_tokens, end.usage.tokens.output_tokens) == (42, 17)
    function = {"name": call["name"], "arguments": call["arguments"]}
    document = {"type": "document", "document": {"data": {"temperature": "21°C"}}}
    messages += [
        {
            "role": "assistant",
            "tool_plan": THINKING,
            "tool_calls": [{"id": call["id"], "type": "function", "function": function}],
        },
        {"role": "tool", "tool_call_id": call["id"], "content": [document]},
    ]
    text, thinking, calls, end = step()
    assert text == 'It is {"temperature":"21°C"} in Paris right now.'
    assert (thinking, calls, end.finish_reason) == ("", [], "COMPLETE")
    assert [r.path for r in server.requests[-2:]] == ["/v2/chat", "/v2/chat"]


def test_google_genai_runs_a_tool_conversation_against_the_embedded_provider(
    server: RunningServer,
) -> None:
    genai = needed("google.genai")
    from google.genai import types

    options = types.HttpOptions(base_url=server.url, api_version="v1beta")
    client = genai.Client(api_key="k", http_options=options)
    tools = [{"type": "function", "name": "get_weather", "parameters": SCHEMA}]
    steps: list[dict[str, object]] = [
        {"type": "user_input", "content": [{"type": "text", "text": QUESTION}]}
    ]

    def step() -> tuple[str, str, list[dict[str, object]], object]:
        text, thinking, calls, completed = [], [], [], None
        for event in client.interactions.create(
            model="weather", input=steps, tools=tools, stream=True
        ):
            if event.event_type == "step.start" and event.step.type == "function_call":
                calls.append({"id": event.step.id, "name": event.step.name, "arguments": ""})
            elif event.event_type == "step.delta" and event.delta.type == "text":
                text.append(event.delta.text)
            elif event.event_type == "step.delta" and event.delta.type == "thought_summary":
                thinking.append(event.delta.content.text)
            elif event.event_type == "step.delta" and event.delta.type == "arguments_delta":
                calls[-1]["arguments"] += event.delta.arguments
            elif event.event_type == "interaction.completed":
                completed = event.interaction
        return "".join(text), "".join(thinking), calls, completed

    call, completed = weather_call(step())
    assert completed.status == "requires_action" and completed.model == "weather"
    usage = completed.usage
    assert (usage.total_input_tokens, usage.total_output_tokens, usage.total_thought_tokens) == (
        42,
        8,
        9,
    )
    steps += [
        {"type": "function_call", "id": call["id"], "name": "get_weather", "arguments": PARIS},
        {"type": "function_result", "call_id": call["id"], "name": "get_weather", "result": "21°C"},
    ]
    text, thinking, calls, completed = step()
    assert (text, thinking, calls) == ("It is 21°C in Paris right now.", "", [])
    assert completed.status == "completed"
    assert [r.path for r in server.requests[-2:]] == ["/v1beta/interactions"] * 2
