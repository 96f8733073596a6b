"""The gateway's request side: provider SDK request bodies read into our terms.

Each client format's reader is the inverse of the same dialect's request builder: a
conversation (with tools and options) built by ``dialects/*_request.py`` and read back by
``read_client_request`` is the same conversation (property-based, for every format),
modulo what the format cannot carry. Then the shapes the SDKs send that our builders do
not (content parts, Gemini's OpenAPI schemas, Ollama's name-only tool results, ...), the
options written for each upstream dialect, and what bad bodies are told.
"""

from __future__ import annotations

import re
from typing import Any

import attrs
import pytest
from client_bodies import PNG, THINKING, URLS, built_body, conversations, options, tools
from hypothesis import HealthCheck, given, settings

from solon_events import (
    AssistantMessage,
    ChatRequest,
    SystemMessage,
    ToolCall,
    ToolMessage,
    ToolSpec,
    UserMessage,
)
from solon_events.adapters.client_requests import (
    CLIENT_FORMATS,
    UNSUPPORTED,
    GenerationOptions,
    read_client_request,
)
from solon_events.dialects import get_dialect
from solon_events.dialects.anthropic_request import DEFAULT_MAX_TOKENS
from solon_events.event_model.results import FileBlock, ImageBlock

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def comparable(message: Any, format: str) -> Any:
    """What of a message the format carries: Ollama has no call ids."""
    if isinstance(message, AssistantMessage):
        calls = tuple(
            (None if format == "ollama" else c.id, c.name, dict(c.arguments))
            for c in message.tool_calls
        )
        thinking = message.thinking if format in THINKING else ""
        return ("assistant", message.text, thinking, calls)
    if isinstance(message, ToolMessage):
        call_id = None if format == "ollama" else message.tool_call_id
        return ("tool", call_id, message.name, message.content, message.is_error)
    return message


def expected_options(given: GenerationOptions, format: str) -> GenerationOptions:
    if format == "anthropic" and given.max_tokens is None:
        return attrs.evolve(given, max_tokens=DEFAULT_MAX_TOKENS)
    return given


@pytest.mark.parametrize("format", CLIENT_FORMATS)
def test_what_a_dialect_builds_reads_back_the_same(format: str) -> None:
    @SETTINGS
    @given(conversations(format), tools, options(format))
    def round_trip(
        messages: tuple[Any, ...], specs: list[ToolSpec], given: GenerationOptions
    ) -> None:
        request = ChatRequest(
            model="m", messages=messages, tools=specs, options=given.for_dialect(format)
        )
        body = built_body(format, request)
        read = read_client_request(format, body, model="m", stream=True)
        assert [comparable(m, format) for m in read.messages] == [
            comparable(m, format) for m in messages
        ]
        assert [(t.name, t.description, dict(t.parameters)) for t in read.tools] == [
            (t.name, t.description, dict(t.parameters)) for t in specs
        ]
        assert read.options == expected_options(given, format)
        assert read.stream is True
        assert read.ignored == ()
        assert read.model == "m"

    round_trip()


def test_every_format_has_a_reader() -> None:
    assert set(CLIENT_FORMATS) == set(URLS)
    with pytest.raises(ValueError, match="unknown client format 'bedrock'"):
        read_client_request("bedrock", {})


# What the SDKs send that our builders do not.


def test_chat_completions_content_parts_roles_and_options() -> None:
    read = read_client_request(
        "openai",
        {
            "model": "gpt-x",
            "messages": [
                {"role": "developer", "content": [{"type": "text", "text": "Be brief."}]},
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "What is this?"},
                        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
                        {"type": "image_url", "image_url": {"url": "https://x.test/a.png"}},
                    ],
                },
                {
                    "role": "assistant",
                    "content": None,
                    "reasoning_content": "Look closer.",
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "zoom", "arguments": '{"x": 1}'},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "ok"}]},
            ],
            "tool_choice": {"type": "function", "function": {"name": "zoom"}},
            "max_tokens": 50,
            "stop": "END",
            "reasoning_effort": "high",
            "stream": True,
            "stream_options": {"include_usage": True},
            "logprobs": True,
            "user": "u-1",
        },
    )
    assert read.model == "gpt-x" and read.stream and read.include_usage
    assert read.messages == (
        SystemMessage(text="Be brief."),
        UserMessage(
            text="What is this?",
            blocks=[
                ImageBlock(data=PNG, mime_type="image/png"),
                ImageBlock(url="https://x.test/a.png"),
            ],
        ),
        AssistantMessage(
            thinking="Look closer.",
            tool_calls=[ToolCall(id="c1", name="zoom", arguments_str='{"x": 1}')],
        ),
        ToolMessage(tool_call_id="c1", name="zoom", content="ok"),
    )
    assert read.options == GenerationOptions(
        max_tokens=50,
        stop=("END",),
        reasoning=True,
        reasoning_effort="high",
        tool_choice="required",
        tool_name="zoom",
    )
    assert read.ignored == ("logprobs", "user")


def test_anthropic_blocks_tool_results_thinking_and_signatures() -> None:
    read = read_client_request(
        "anthropic",
        {
            "model": "claude-x",
            "max_tokens": 8000,
            "system": [{"type": "text", "text": "One."}, {"type": "text", "text": "Two."}],
            "messages": [
                {"role": "user", "content": "Weather?"},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "thinking": "Call it.", "signature": "sig-1"},
                        {"type": "redacted_thinking", "data": "opaque"},
                        {"type": "tool_use", "id": "tu_1", "name": "w", "input": {"city": "Paris"}},
                        {"type": "tool_use", "id": "tu_2", "name": "w", "input": {"city": "Nice"}},
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "tu_1", "content": "18°C"},
                        {
                            "type": "tool_result",
                            "tool_use_id": "tu_2",
                            "content": [{"type": "text", "text": "down"}],
                            "is_error": True,
                        },
                        {
                            "type": "text",
                            "text": "And tomorrow?",
                            "cache_control": {"type": "ephemeral"},
                        },
                    ],
                },
            ],
            "thinking": {"type": "enabled", "budget_tokens": 2000},
            "tool_choice": {"type": "any", "disable_parallel_tool_use": True},
            "metadata": {"user_id": "u"},
        },
    )
    system, _user, assistant, result_1, result_2, again = read.messages
    assert system == SystemMessage(text="One.\n\nTwo.")
    assert assistant.thinking == "Call it."
    assert dict(assistant.metadata) == {
        "thinking_signature": "sig-1",
        "redacted_thinking": ["opaque"],
    }
    assert [c.arguments for c in assistant.tool_calls] == [{"city": "Paris"}, {"city": "Nice"}]
    assert result_1 == ToolMessage(tool_call_id="tu_1", name="w", content="18°C")
    assert result_2 == ToolMessage(tool_call_id="tu_2", name="w", content="down", is_error=True)
    assert again == UserMessage(text="And tomorrow?")
    assert read.options == GenerationOptions(
        max_tokens=8000,
        reasoning=True,
        reasoning_budget=2000,
        tool_choice="required",
        parallel_tool_calls=False,
    )
    assert read.ignored == ("metadata",)


def test_responses_items_gather_into_turns() -> None:
    read = read_client_request(
        "openai-responses",
        {
            "model": "gpt-x",
            "instructions": "Be brief.",
            "input": [
                {"role": "user", "content": [{"type": "input_text", "text": "Weather?"}]},
                {
                    "type": "reasoning",
                    "id": "rs_1",
                    "summary": [{"type": "summary_text", "text": "Call it."}],
                },
                {
                    "type": "function_call",
                    "id": "fc_1",
                    "call_id": "call_1",
                    "name": "w",
                    "arguments": '{"city":"Paris"}',
                    "status": "completed",
                },
                {"type": "function_call_output", "call_id": "call_1", "output": "18°C"},
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": "It is 18°C.", "annotations": []}],
                },
                {"role": "user", "content": "Thanks"},
            ],
            "reasoning": {"effort": "medium", "summary": "auto"},
            "max_output_tokens": 300,
            "store": False,
        },
    )
    assert read.messages == (
        SystemMessage(text="Be brief."),
        UserMessage(text="Weather?"),
        AssistantMessage(
            thinking="Call it.",
            tool_calls=[ToolCall(id="call_1", name="w", arguments_str='{"city":"Paris"}')],
        ),
        ToolMessage(tool_call_id="call_1", name="w", content="18°C"),
        AssistantMessage(text="It is 18°C."),
        UserMessage(text="Thanks"),
    )
    assert read.options == GenerationOptions(
        max_tokens=300, reasoning=True, reasoning_effort="medium"
    )
    assert not read.stream


def _snake_case(value: Any, keep: tuple[str, ...]) -> Any:
    """``value`` with every key written snake_case (``mimeType``: ``mime_type``), except
    inside the keys ``keep`` names (the client's own names: arguments, schemas)."""
    if isinstance(value, list):
        return [_snake_case(item, keep) for item in value]
    if not isinstance(value, dict):
        return value
    return {
        re.sub(r"(?<!^)([A-Z])", r"_\1", key).lower(): inner
        if key in keep
        else _snake_case(inner, keep)
        for key, inner in value.items()
    }


def test_gemini_fields_are_read_in_either_spelling_and_values_kept_as_sent() -> None:
    """The API takes proto3 JSON, whose field names may be written lowerCamelCase or
    snake_case; google-genai sends ``thinkingConfig``'s as the second. The client's own
    names (arguments, responses, schema properties) stay as they are."""
    camel = {
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "contents": [
            {"role": "user", "parts": [{"inlineData": {"mimeType": "image/png", "data": PNG}}]},
            {
                "role": "model",
                "parts": [{"functionCall": {"name": "f", "args": {"city_name": "P"}}}],
            },
            {
                "role": "user",
                "parts": [{"functionResponse": {"name": "f", "response": {"max_temp": 18}}}],
            },
        ],
        "tools": [
            {
                "functionDeclarations": [
                    {
                        "name": "f",
                        "parametersJsonSchema": {
                            "type": "object",
                            "properties": {"city_name": {"type": "string"}},
                        },
                    }
                ]
            }
        ],
        "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["f"]}},
        "generationConfig": {
            "maxOutputTokens": 300,
            "topP": 0.5,
            "stopSequences": ["X"],
            "thinkingConfig": {"includeThoughts": True, "thinkingBudget": 2048},
        },
    }
    snake = _snake_case(camel, keep=("args", "response", "properties"))
    read = read_client_request("gemini", snake, model="m")
    assert read == read_client_request("gemini", camel, model="m")
    assert read.ignored == ()
    assert read.options == GenerationOptions(
        max_tokens=300,
        top_p=0.5,
        stop=("X",),
        reasoning=True,
        reasoning_budget=2048,
        tool_choice="required",
        tool_name="f",
    )
    assert read.messages[2].tool_calls[0].arguments == {"city_name": "P"}
    assert read.messages[3].content == '{"max_temp":18}'
    assert dict(read.tools[0].parameters)["properties"] == {"city_name": {"type": "string"}}


def test_gemini_openapi_schemas_ids_made_up_and_the_signature_kept() -> None:
    read = read_client_request(
        "gemini",
        {
            "contents": [
                {"role": "user", "parts": [{"text": "Weather?"}]},
                {
                    "role": "model",
                    "parts": [
                        {"text": "Call it.", "thought": True},
                        {
                            "functionCall": {"name": "w", "args": {"city": "Paris"}},
                            "thoughtSignature": "c2ln",
                        },
                        {"functionCall": {"name": "w", "args": {"city": "Nice"}}},
                    ],
                },
                {
                    "role": "user",
                    "parts": [
                        {"functionResponse": {"name": "w", "response": {"result": "18°C"}}},
                        {"functionResponse": {"name": "w", "response": {"error": "down"}}},
                    ],
                },
            ],
            "systemInstruction": {"parts": [{"text": "Be brief."}]},
            "tools": [
                {
                    "functionDeclarations": [
                        {
                            "name": "w",
                            "description": "Weather",
                            "parameters": {
                                "type": "OBJECT",
                                "properties": {
                                    "city": {"type": "STRING", "nullable": True},
                                    "days": {"type": "ARRAY", "items": {"type": "INTEGER"}},
                                },
                                "required": ["city"],
                                "propertyOrdering": ["city", "days"],
                            },
                        }
                    ]
                }
            ],
            "generationConfig": {
                "maxOutputTokens": 100,
                "thinkingConfig": {"thinkingBudget": -1, "includeThoughts": True},
                "responseMimeType": "text/plain",
            },
            "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["w"]}},
        },
        model="models/gemini-x",
        stream=True,
    )
    assert read.model == "gemini-x" and read.stream
    _system, _user, assistant, first, second = read.messages
    assert assistant.thinking == "Call it."
    assert assistant.metadata["thinking_signature"] == "c2ln"
    assert [c.id for c in assistant.tool_calls] == ["call_2_0", "call_2_1"]
    assert (first.tool_call_id, first.content, first.is_error) == ("call_2_0", "18°C", False)
    assert (second.tool_call_id, second.content, second.is_error) == ("call_2_1", "down", True)
    assert dict(read.tools[0].parameters) == {
        "type": "object",
        "properties": {
            "city": {"type": ["string", "null"]},
            "days": {"type": "array", "items": {"type": "integer"}},
        },
        "required": ["city"],
    }
    assert read.options == GenerationOptions(
        max_tokens=100, reasoning=True, tool_choice="required", tool_name="w"
    )
    assert read.ignored == () and read.output is None  # text/plain: a text answer


def test_ollama_streams_by_default_and_pairs_results_by_name() -> None:
    read = read_client_request(
        "ollama",
        {
            "model": "qwen3",
            "messages": [
                {"role": "user", "content": "Weather?", "images": [PNG]},
                {
                    "role": "assistant",
                    "content": "",
                    "thinking": "Both.",
                    "tool_calls": [
                        {"function": {"name": "w", "arguments": {"city": "Paris"}}},
                        {"function": {"name": "w", "arguments": {"city": "Nice"}}},
                    ],
                },
                {"role": "tool", "content": "18°C", "tool_name": "w"},
                {"role": "tool", "content": "20°C", "tool_name": "w"},
            ],
            "think": "high",
            "options": {"num_predict": 64, "temperature": 0.2, "num_ctx": 8192},
            "keep_alive": "5m",
        },
    )
    assert read.stream
    user, assistant, first, second = read.messages
    assert user.blocks == (ImageBlock(data=PNG, mime_type="image/png"),)
    assert [c.id for c in assistant.tool_calls] == ["call_1_0", "call_1_1"]
    assert [(m.tool_call_id, m.content) for m in (first, second)] == [
        ("call_1_0", "18°C"),
        ("call_1_1", "20°C"),
    ]
    assert read.options == GenerationOptions(
        max_tokens=64, temperature=0.2, reasoning=True, reasoning_effort="high"
    )
    assert read.ignored == ("keep_alive", "options.num_ctx")
    assert not read_client_request(
        "ollama", {"messages": [{"role": "user"}], "stream": False}
    ).stream


# What bad bodies are told: the field that is wrong.


@pytest.mark.parametrize(
    ("format", "body", "message"),
    [
        ("openai", [], "the request body must be a JSON object, not an array"),
        ("openai", {"messages": []}, "messages must not be empty"),
        ("openai", {"messages": "hi"}, "messages must be an array, not a string"),
        ("openai", {"messages": [{"role": "robot"}]}, r"messages\[0\].role must be"),
        ("openai", {"messages": [{"role": "user"}], "n": 2}, "n must be 1"),
        (
            "openai",
            {"messages": [{"role": "user"}], "temperature": "hot"},
            "temperature must be a number",
        ),
        (
            "openai",
            {"messages": [{"role": "user"}], "tools": [{"type": "custom", "custom": {}}]},
            r"tools\[0\].type must be function",
        ),
        (
            "openai-responses",
            {"input": "hi", "previous_response_id": "resp_1"},
            "previous_response_id cannot be used here",
        ),
        (
            "openai-responses",
            {"input": "hi", "tools": [{"type": "web_search"}]},
            r"tools\[0\] is a built-in tool \(web_search\)",
        ),
        (
            "anthropic",
            {
                "messages": [{"role": "user", "content": "hi"}],
                "tools": [{"type": "web_search_20250305", "name": "web_search"}],
            },
            r"tools\[0\] is a server tool",
        ),
        (
            "anthropic",
            {"messages": [{"role": "user", "content": [{"type": "tool_result"}]}]},
            r"messages\[0\].content\[0\].tool_use_id must be a string",
        ),
        (
            "gemini",
            {
                "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
                "tools": [{"googleSearch": {}}],
            },
            "built-in tools",
        ),
        (
            "gemini",
            {"contents": [{"role": "user", "parts": [{"executableCode": {}}]}]},
            r"contents\[0\].parts\[0\] \(executableCode\) cannot be passed on",
        ),
        (
            "ollama",
            {"messages": [{"role": "user", "content": 3}]},
            r"messages\[0\].content must be a string",
        ),
        (
            "cohere",
            {"messages": [{"role": "user", "content": "hi"}], "documents": ["a fact"]},
            "documents cannot be passed on",
        ),
        (
            "cohere",
            {"messages": [{"role": "user", "content": "hi"}], "tool_choice": "AUTO"},
            "tool_choice must be REQUIRED or NONE",
        ),
        (
            "cohere",
            {"messages": [{"role": "chatbot", "content": "hi"}]},
            r"messages\[0\].role must be system, user, assistant or tool",
        ),
        (
            "anthropic",
            {"messages": [{"role": "user", "content": "hi"}], "thinking": {"type": "on"}},
            "thinking.type must be enabled, adaptive or disabled, not 'on'",
        ),
        (
            "cohere",
            {"messages": [{"role": "user", "content": "hi"}], "thinking": {"budget": 9}},
            "thinking.type must be enabled or disabled, not None",
        ),
        (
            "google-interactions",
            {"input": "hi", "previous_interaction_id": "v1_abc"},
            "previous_interaction_id cannot be used here",
        ),
        (
            "google-interactions",
            {"input": "hi", "tools": [{"type": "google_search"}]},
            r"tools\[0\] is a built-in tool \(google_search\)",
        ),
        (
            "google-interactions",
            {"input": [{"type": "google_search_call", "id": "s"}]},
            r"input\[0\] \(google_search_call\) cannot be passed on",
        ),
        (
            "google-interactions",
            {"input": [{"type": "model_output", "content": [{"type": "text", "text": "x"}]}]},
            "input must hold a user input or a function result",
        ),
    ],
)
def test_a_bad_body_is_told_what_is_wrong(format: str, body: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        read_client_request(format, body)


@pytest.mark.parametrize(
    ("format", "thinking", "reasoning", "budget"),
    [
        ("anthropic", {"type": "enabled", "budget_tokens": 2000}, True, 2000),
        ("anthropic", {"type": "adaptive"}, True, None),
        ("anthropic", {"type": "disabled"}, False, None),
        ("cohere", {"type": "enabled", "token_budget": 512}, True, 512),
        ("cohere", {"type": "disabled", "token_budget": 512}, False, None),
    ],
)
def test_a_thinking_object_turns_reasoning_on_or_off(
    format: str, thinking: dict[str, Any], reasoning: bool, budget: int | None
) -> None:
    body = {"messages": [{"role": "user", "content": "hi"}], "thinking": thinking}
    read = read_client_request(format, body)
    assert (read.options.reasoning, read.options.reasoning_budget) == (reasoning, budget)


def tool_with(format: str, schema: Any) -> dict[str, Any]:
    """A body of ``format`` declaring one client tool whose schema is ``schema``."""
    flat = {"type": "function", "name": "a", "parameters": schema}
    nested = {"type": "function", "function": {"name": "a", "parameters": schema}}
    say = [{"role": "user", "content": "hi"}]
    return {
        "openai": {"messages": say, "tools": [nested]},
        "ollama": {"messages": say, "tools": [nested]},
        "cohere": {"messages": say, "tools": [nested]},
        "openai-responses": {"input": "hi", "tools": [flat]},
        "google-interactions": {"input": "hi", "tools": [flat]},
        "anthropic": {"messages": say, "tools": [{"name": "a", "input_schema": schema}]},
        "gemini": {
            "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
            "tools": [{"functionDeclarations": [{"name": "a", "parametersJsonSchema": schema}]}],
        },
    }[format]


READERS = ("openai", "ollama", "cohere", "openai-responses", "google-interactions")
READERS += ("anthropic", "gemini")
OBJECT = {"type": "object"}


@pytest.mark.parametrize("format", READERS)
@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ({**OBJECT, "properties": 1}, r"parameters\.properties must be an object, not an integer"),
        ({**OBJECT, "properties": {"b": "x"}}, r"properties\.b must be a schema \(an object"),
        ({**OBJECT, "required": "b"}, r"parameters\.required must be an array of property names"),
        ({"type": 3}, r"parameters\.type must be a type name or names, not an integer"),
        ({"anyOf": {"type": "string"}}, r"parameters\.anyOf must be an array, not an object"),
        ({"type": "array", "items": [1]}, r"parameters\.items\[0\] must be a schema"),
        ({"enum": "ab"}, r"parameters\.enum must be an array, not a string"),
        (
            {"$defs": {"n": {**OBJECT, "properties": {"c": {"items": None}}}}},
            r"parameters\.\$defs\.n\.properties\.c\.items must be a schema .*not null",
        ),
    ],
)
def test_a_tool_schema_of_the_wrong_shape_is_refused_naming_where(
    format: str, schema: Any, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        read_client_request(format, tool_with(format, schema))


@pytest.mark.parametrize("format", READERS)
def test_a_tool_schema_of_any_depth_and_every_keyword_is_read_as_sent(format: str) -> None:
    leaf: Any = {"type": ["string", "null"], "enum": ["x", None]}
    for _ in range(3000):  # deeper than Python's recursion limit: walked without recursion
        leaf = {"type": "array", "items": leaf}
    schema = {
        **OBJECT,
        "properties": {"deep": leaf, "any": True, "pair": {"items": [{}, {"type": "integer"}]}},
        "required": ["deep"],
        "additionalProperties": False,
        "$defs": {"x": {"oneOf": [{"type": "string"}, {"not": {"const": 1}}]}},
    }
    (spec,) = read_client_request(format, tool_with(format, schema)).tools
    assert spec.parameters == schema


def test_cohere_as_its_sdk_writes_it() -> None:
    """Tool results as document items (by their data), thinking in content items and in
    tool_plan, an image by URL, Cohere's option names."""
    read = read_client_request(
        "cohere",
        {
            "model": "command-a",
            "messages": [
                {"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "Where?"},
                        {"type": "image_url", "image_url": {"url": "https://x.test/a.png"}},
                    ],
                },
                {
                    "role": "assistant",
                    "tool_plan": "Look it up.",
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "find", "arguments": '{"q": "a"}'},
                        }
                    ],
                },
                {
                    "role": "tool",
                    "tool_call_id": "c1",
                    "content": [
                        {"type": "document", "document": {"data": '{"place": "Paris"}'}},
                        {"type": "document", "document": {"data": {"score": 1}}},
                    ],
                },
                {
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "thinking": "Done."},
                        {"type": "text", "text": "Paris."},
                    ],
                },
                {"role": "user", "content": "Thanks"},
            ],
            "p": 0.5,
            "k": 3,
            "stop_sequences": ["END"],
            "thinking": {"type": "enabled", "token_budget": 2000},
            "tool_choice": "NONE",
            "citation_options": {"mode": "FAST"},
            "stream": True,
        },
    )
    assert read.stream and read.model == "command-a"
    assert read.ignored == ("citation_options",)
    assert read.messages == (
        SystemMessage(text="Be brief."),
        UserMessage(text="Where?", blocks=[ImageBlock(url="https://x.test/a.png")]),
        AssistantMessage(
            thinking="Look it up.",
            tool_calls=[ToolCall(id="c1", name="find", arguments_str='{"q": "a"}')],
        ),
        ToolMessage(tool_call_id="c1", name="find", content='{"place": "Paris"}{"score":1}'),
        AssistantMessage(text="Paris.", thinking="Done."),
        UserMessage(text="Thanks"),
    )
    assert read.options == GenerationOptions(
        top_p=0.5,
        top_k=3,
        stop=("END",),
        reasoning=True,
        reasoning_budget=2000,
        tool_choice="none",
    )


@pytest.mark.parametrize(
    "given",
    [
        "What is this?",
        {"type": "text", "text": "What is this?"},
        [{"type": "text", "text": "What is this?"}],
        [{"type": "user_input", "content": [{"type": "text", "text": "What is this?"}]}],
    ],
    ids=["text", "content", "contents", "steps"],
)
def test_interactions_input_in_each_of_its_forms(given: Any) -> None:
    read = read_client_request("google-interactions", {"model": "g", "input": given})
    assert read.messages == (UserMessage(text="What is this?"),)
    assert read.stream is False


def test_interactions_steps_as_its_sdk_writes_them() -> None:
    """A turn's thought (summary and signature), output and calls become one assistant
    message; results of any JSON kind; the tool choice restricted to one tool."""
    read = read_client_request(
        "google-interactions",
        {
            "model": "gemini-3",
            "system_instruction": "Be brief.",
            "input": [
                {
                    "type": "user_input",
                    "content": [
                        {"type": "text", "text": "Look"},
                        {"type": "image", "data": PNG, "mime_type": "image/png"},
                        {"type": "document", "uri": "https://x.test/a.pdf"},
                    ],
                },
                {
                    "type": "thought",
                    "signature": "sig",
                    "summary": [{"type": "text", "text": "Hm."}],
                },
                {"type": "model_output", "content": [{"type": "text", "text": "Let me see."}]},
                {"type": "function_call", "id": "f1", "name": "zoom", "arguments": {"x": 1}},
                {"type": "function_call", "id": "f2", "name": "zoom", "arguments": {"x": 2}},
                {"type": "function_result", "call_id": "f1", "name": "zoom", "result": {"ok": 1}},
                {
                    "type": "function_result",
                    "call_id": "f2",
                    "result": [{"type": "text", "text": "blurry"}],
                    "is_error": True,
                },
            ],
            "generation_config": {
                "thinking_level": "high",
                "tool_choice": {"allowed_tools": {"mode": "any", "tools": ["zoom"]}},
                "response_modalities": ["TEXT"],
            },
        },
    )
    assert read.ignored == ("generation_config.response_modalities",)
    assert read.messages == (
        SystemMessage(text="Be brief."),
        UserMessage(
            text="Look",
            blocks=[
                ImageBlock(data=PNG, mime_type="image/png"),
                FileBlock(url="https://x.test/a.pdf"),
            ],
        ),
        AssistantMessage(
            text="Let me see.",
            thinking="Hm.",
            tool_calls=[
                ToolCall(id="f1", name="zoom", arguments={"x": 1}),
                ToolCall(id="f2", name="zoom", arguments={"x": 2}),
            ],
            metadata={"thinking_signature": "sig"},
        ),
        ToolMessage(tool_call_id="f1", name="zoom", content='{"ok":1}'),
        ToolMessage(tool_call_id="f2", name="zoom", content="blurry", is_error=True),
    )
    assert read.options == GenerationOptions(
        reasoning=True, reasoning_effort="high", tool_choice="required", tool_name="zoom"
    )


# The options as each upstream dialect takes them.


def test_reasoning_is_asked_of_each_upstream_in_its_own_terms() -> None:
    effort = GenerationOptions(reasoning=True, reasoning_effort="high", max_tokens=4000)
    assert effort.for_dialect("openai") == {
        "max_completion_tokens": 4000,
        "reasoning_effort": "high",
    }
    assert effort.for_dialect("openai-responses") == {
        "max_output_tokens": 4000,
        "reasoning": {"effort": "high", "summary": "auto"},
    }
    # Anthropic's budget stays under max_tokens, as the API demands
    assert effort.for_dialect("anthropic")["thinking"] == {"type": "enabled", "budget_tokens": 3999}
    assert effort.for_dialect("gemini")["thinking_config"] == {
        "include_thoughts": True,
        "thinking_budget": 16384,
    }
    assert effort.for_dialect("ollama")["think"] == "high"
    assert effort.for_dialect("cohere")["thinking"] == {"type": "enabled", "token_budget": 16384}
    assert effort.for_dialect("google-interactions") == {
        "max_tokens": 4000,
        "thinking_level": "high",
        "thinking_summaries": "auto",
    }
    budget = GenerationOptions(reasoning=True, reasoning_budget=2000)
    assert budget.for_dialect("openai")["reasoning_effort"] == "medium"
    assert budget.for_dialect("anthropic")["thinking"] == {"type": "enabled", "budget_tokens": 2000}
    small = GenerationOptions(reasoning=True, max_tokens=500)
    assert "thinking" not in small.for_dialect("anthropic")  # no room for the smallest budget
    off = GenerationOptions(reasoning=False, reasoning_budget=0)
    assert off.for_dialect("gemini")["thinking_config"] == {"thinking_budget": 0}
    assert off.for_dialect("ollama")["think"] is False
    assert off.for_dialect("openai") == {}
    assert off.for_dialect("cohere")["thinking"] == {"type": "disabled"}
    assert off.for_dialect("google-interactions")["thinking_level"] == "minimal"


def test_tool_choice_and_the_rest_in_each_dialects_names() -> None:
    options = GenerationOptions(
        tool_choice="required",
        tool_name="w",
        parallel_tool_calls=False,
        stop=("X",),
        seed=7,
        top_k=5,
    )
    assert options.for_dialect("openai") == {
        "tool_choice": {"type": "function", "function": {"name": "w"}},
        "parallel_tool_calls": False,
        "stop": ["X"],
        "seed": 7,
    }
    assert options.for_dialect("anthropic") == {
        "tool_choice": {"type": "tool", "name": "w", "disable_parallel_tool_use": True},
        "stop_sequences": ["X"],
        "top_k": 5,
    }
    assert options.for_dialect("gemini") == {
        "tool_config": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["w"]}},
        "stop": ["X"],
        "seed": 7,
        "top_k": 5,
    }
    assert options.for_dialect("bedrock") == {"tool_choice": {"tool": {"name": "w"}}, "stop": ["X"]}
    assert options.for_dialect("ollama") == {"stop": ["X"], "seed": 7, "top_k": 5}
    assert options.for_dialect("cohere") == {
        "tool_choice": "REQUIRED",
        "stop_sequences": ["X"],
        "seed": 7,
        "k": 5,
    }
    assert options.for_dialect("google-interactions") == {
        "tool_choice": {"allowed_tools": {"mode": "any", "tools": ["w"]}},
        "stop": ["X"],
        "seed": 7,
    }
    assert options.for_dialect("some-other") == {"stop": ["X"], "seed": 7}


@pytest.mark.parametrize(
    "upstream", ["gemini", "bedrock", "ollama", "cohere", "google-interactions"]
)
def test_the_upstream_request_carries_the_options_where_its_api_wants_them(upstream: str) -> None:
    options = GenerationOptions(
        max_tokens=100, temperature=0.5, reasoning=True, reasoning_budget=2048
    )
    request = ChatRequest(
        model="m", messages=[UserMessage(text="hi")], options=options.for_dialect(upstream)
    )
    api_url = {
        "bedrock": "http://127.0.0.1:9",
        "cohere": "http://127.0.0.1:9/v2/chat",
        "google-interactions": "http://127.0.0.1:9/v1beta/interactions",
        **URLS,
    }[upstream]
    body = get_dialect(upstream).build_request(request, api_url=api_url, api_key="k").body
    if upstream == "gemini":
        assert body["generationConfig"] == {
            "maxOutputTokens": 100,
            "temperature": 0.5,
            "thinkingConfig": {"includeThoughts": True, "thinkingBudget": 2048},
        }
    elif upstream == "bedrock":
        assert body["inferenceConfig"] == {"maxTokens": 100, "temperature": 0.5}
        assert "thinking" not in body.get("additionalModelRequestFields", {})  # no room in 100
    elif upstream == "cohere":
        assert (body["max_tokens"], body["temperature"]) == (100, 0.5)
        assert body["thinking"] == {"type": "enabled", "token_budget": 2048}
    elif upstream == "google-interactions":
        assert body["generation_config"] == {
            "max_output_tokens": 100,
            "temperature": 0.5,
            "thinking_level": "medium",  # a 2,048-token budget
            "thinking_summaries": "auto",
        }
    else:
        assert body["options"] == {"num_predict": 100, "temperature": 0.5}
        assert body["think"] is True


SAMPLES: dict[str, Any] = {
    "temperature": 0.5,
    "top_p": 0.9,
    "top_k": 5,
    "max_tokens": 100,
    "stop": ("X",),
    "seed": 7,
    "presence_penalty": 0.1,
    "frequency_penalty": 0.2,
    "reasoning": True,
    "tool_choice": "required",  # "auto" is the default some write as nothing (Cohere)
    "tool_name": "w",
    "parallel_tool_calls": False,
}


@pytest.mark.parametrize("upstream", sorted(UNSUPPORTED))
def test_unsupported_lists_exactly_what_an_upstream_drops(upstream: str) -> None:
    for field, value in SAMPLES.items():
        written = GenerationOptions(**{field: value}).for_dialect(upstream)
        if field in UNSUPPORTED[upstream]:
            assert written == {}, field
        elif field != "tool_name":  # a name alone forces nothing
            assert written, field
