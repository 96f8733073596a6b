"""The Anthropic Messages API request (solon_events.dialects.anthropic_request): URL,
headers and body, through the dialect's ``build_request``."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from chat_requests import CITY_SCHEMA, WEATHER, hi

from solon_events import ChatRequest, SystemMessage, ToolMessage, ToolSpec, UserMessage
from solon_events.dialects.anthropic import AnthropicDialect
from solon_events.event_model.results import (
    AssistantMessage,
    FileBlock,
    ImageBlock,
    TextBlock,
    ToolCall,
)

DIALECT = AnthropicDialect()

URL = "https://api.anthropic.com/v1/messages"


def build(request: ChatRequest, **kwargs: Any) -> Any:
    return DIALECT.build_request(request, api_url=URL, **kwargs)


def test_minimal_request() -> None:
    request = ChatRequest(model="claude-sonnet-4-5", messages=[UserMessage(text="Hello")])
    http = build(request, api_key="sk-ant-secret")
    assert http.url == URL
    assert dict(http.headers) == {
        "Content-Type": "application/json",
        "Accept": "text/event-stream",
        "anthropic-version": "2023-06-01",
        "x-api-key": "sk-ant-secret",
    }
    assert http.body == {
        "model": "claude-sonnet-4-5",
        "messages": [{"role": "user", "content": "Hello"}],
        "max_tokens": 4096,
        "stream": True,
    }
    assert orjson.loads(http.body_bytes()) == http.body
    assert "sk-ant-secret" not in repr(http)


def test_headers_without_key_and_with_overrides() -> None:
    request = hi()
    http = build(request, headers={"Anthropic-Version": "2024-10-22", "anthropic-beta": "x"})
    assert "x-api-key" not in http.headers
    assert dict(http.headers) == {
        "Content-Type": "application/json",
        "Accept": "text/event-stream",
        "Anthropic-Version": "2024-10-22",
        "anthropic-beta": "x",
    }


def test_system_messages_are_joined_into_system() -> None:
    request = ChatRequest(
        model="m",
        messages=[
            SystemMessage(text="Be brief."),
            UserMessage(text="hi"),
            SystemMessage(text="Answer in French."),
        ],
    )
    body = build(request).body
    assert body["system"] == "Be brief.\n\nAnswer in French."
    assert body["messages"] == [{"role": "user", "content": "hi"}]


def test_tool_conversation() -> None:
    assistant = AssistantMessage(
        text="Let me check both.",
        thinking="I need the weather and the time.",
        tool_calls=[
            ToolCall(id="toolu_a", name="weather", arguments={"city": "Paris"}),
            ToolCall(id="toolu_b", name="clock", arguments_str=""),
        ],
        metadata={"thinking_signature": "EqQBsig", "redacted_thinking": ["EmwKdata"]},
    )
    request = ChatRequest(
        model="m",
        messages=[
            UserMessage(text="Weather and time in Paris?"),
            assistant,
            ToolMessage(tool_call_id="toolu_a", name="weather", content="18C, sunny"),
            ToolMessage(tool_call_id="toolu_b", name="clock", content="no clock", is_error=True),
            UserMessage(text="Thanks"),
        ],
    )
    assert build(request).body["messages"] == [
        {"role": "user", "content": "Weather and time in Paris?"},
        {
            "role": "assistant",
            "content": [
                {
                    "type": "thinking",
                    "thinking": "I need the weather and the time.",
                    "signature": "EqQBsig",
                },
                {"type": "redacted_thinking", "data": "EmwKdata"},
                {"type": "text", "text": "Let me check both."},
                {
                    "type": "tool_use",
                    "id": "toolu_a",
                    "name": "weather",
                    "input": {"city": "Paris"},
                },
                {"type": "tool_use", "id": "toolu_b", "name": "clock", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_a", "content": "18C, sunny"},
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_b",
                    "content": "no clock",
                    "is_error": True,
                },
            ],
        },
        {"role": "user", "content": "Thanks"},
    ]


def test_tool_results_separated_by_a_message_are_separate_turns() -> None:
    request = ChatRequest(
        model="m",
        messages=[
            ToolMessage(tool_call_id="t1", name="a", content="1"),
            AssistantMessage(tool_calls=[ToolCall(id="t2", name="b")]),
            ToolMessage(tool_call_id="t2", name="b", content="2"),
        ],
    )
    messages = build(request).body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert [len(m["content"]) for m in messages] == [1, 1, 1]


def test_thinking_without_signature_is_not_sent_and_empty_turns_are_dropped() -> None:
    request = ChatRequest(
        model="m",
        messages=[
            UserMessage(text="q"),
            AssistantMessage(thinking="hmm", text="a"),
            AssistantMessage(),
            UserMessage(text="more"),
        ],
    )
    assert build(request).body["messages"] == [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": [{"type": "text", "text": "a"}]},
        {"role": "user", "content": "more"},
    ]


def test_user_blocks() -> None:
    blocks = [
        ImageBlock(url="https://example.com/cat.jpg"),
        ImageBlock(data="iVBORw0KGgo=", mime_type="image/png"),
        ImageBlock(url="data:image/jpeg;base64,/9j/4AAQ"),
        FileBlock(file_id="file_011CNha8iCJcU1wXNR6q4V8w"),
        FileBlock(data="JVBERi0x", mime_type="application/pdf"),
        TextBlock(text="first part"),
        {"type": "text", "text": "raw", "cache_control": {"type": "ephemeral"}},
    ]
    request = ChatRequest(model="m", messages=[UserMessage(text="Describe.", blocks=blocks)])
    (message,) = build(request).body["messages"]
    assert message == {
        "role": "user",
        "content": [
            {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}},
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
            },
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/4AAQ"},
            },
            {
                "type": "document",
                "source": {"type": "file", "file_id": "file_011CNha8iCJcU1wXNR6q4V8w"},
            },
            {
                "type": "document",
                "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0x"},
            },
            {"type": "text", "text": "first part"},
            {"type": "text", "text": "raw", "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": "Describe."},
        ],
    }


def test_tools() -> None:
    web_search = {"type": "web_search_20250305", "name": "web_search", "max_uses": 5}
    request = hi(tools=[WEATHER, ToolSpec(name="refresh"), web_search])
    http = build(request)
    assert http.body["tools"] == [
        {"name": "weather", "description": "Current weather.", "input_schema": CITY_SCHEMA},
        {"name": "refresh", "input_schema": {"type": "object", "properties": {}}},
        {"type": "web_search_20250305", "name": "web_search", "max_uses": 5},
    ]
    assert orjson.loads(http.body_bytes())["tools"][0]["input_schema"] == CITY_SCHEMA


def test_options_pass_through_and_override() -> None:
    thinking = {"type": "enabled", "budget_tokens": 2000}
    request = hi(
        options={"max_tokens": 1024, "temperature": 0.2, "thinking": thinking, "stream": False},
    )
    body = build(request).body
    assert body["max_tokens"] == 1024
    assert body["temperature"] == 0.2
    assert body["thinking"] == thinking
    assert body["stream"] is True


def test_default_max_tokens_stays_above_a_thinking_budget() -> None:
    request = hi(
        options={"thinking": {"type": "enabled", "budget_tokens": 10000}},
    )
    assert build(request).body["max_tokens"] == 14096


def test_unknown_message_type_is_a_type_error() -> None:
    request = ChatRequest(model="m", messages=[object()])
    with pytest.raises(TypeError, match="object"):
        build(request)
