"""Front-end request bodies read into our messages: Vercel UI messages, AG-UI
RunAgentInput, the /events body; and what bad bodies are told."""

from __future__ import annotations

from typing import Any

import pytest

from solon_events import AssistantMessage, SystemMessage, ToolCall, ToolMessage, UserMessage
from solon_events.adapters.inputs import messages_from_events, messages_from_vercel, run_from_agui
from solon_events.event_model.results import ImageBlock


def test_a_vercel_conversation_with_a_tool_loop() -> None:
    body = {
        "messages": [
            {"id": "s", "role": "system", "parts": [{"type": "text", "text": "Be brief."}]},
            {
                "id": "u",
                "role": "user",
                "parts": [
                    {"type": "text", "text": "Weather "},
                    {"type": "text", "text": "here?"},
                    {"type": "file", "url": "data:image/png;base64,aGk=", "mediaType": "image/png"},
                ],
            },
            {
                "id": "a",
                "role": "assistant",
                "parts": [
                    {"type": "step-start"},
                    {"type": "reasoning", "text": "I should look."},
                    {
                        "type": "tool-get_weather",
                        "toolCallId": "c1",
                        "state": "output-available",
                        "input": {"city": "Paris"},
                        "output": "18°C",
                    },
                    {
                        "type": "dynamic-tool",
                        "toolName": "lookup",
                        "toolCallId": "c2",
                        "state": "output-error",
                        "input": {},
                        "errorText": "down",
                    },
                    {
                        "type": "tool-pending",
                        "toolCallId": "c3",
                        "state": "input-available",
                        "input": {},
                    },
                    {"type": "step-start"},
                    {"type": "text", "text": "It is 18°C."},
                ],
            },
        ]
    }
    assert messages_from_vercel(body) == (
        SystemMessage(text="Be brief."),
        UserMessage(
            text="Weather here?",
            blocks=[ImageBlock(url="data:image/png;base64,aGk=", mime_type="image/png")],
        ),
        AssistantMessage(
            tool_calls=[
                ToolCall(id="c1", name="get_weather", arguments={"city": "Paris"}),
                ToolCall(id="c2", name="lookup", arguments={}),
            ]
        ),
        ToolMessage(tool_call_id="c1", name="get_weather", content="18°C"),
        ToolMessage(tool_call_id="c2", name="lookup", content="down", is_error=True),
        AssistantMessage(text="It is 18°C."),
    )


def test_an_older_vercel_message_with_content_is_accepted() -> None:
    assert messages_from_vercel({"messages": [{"role": "user", "content": "hi"}]}) == (
        UserMessage(text="hi"),
    )


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ([], "must be a JSON object"),
        ({"messages": []}, "non-empty array"),
        ({"messages": ["hi"]}, r"messages\[0\] must be an object"),
        ({"messages": [{"role": "user", "parts": [{"text": "x"}]}]}, "each with a type"),
        ({"messages": [{"role": "tool", "parts": []}]}, "role must be system, user or assistant"),
    ],
)
def test_bad_vercel_bodies(body: Any, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        messages_from_vercel(body)


def test_an_agui_run() -> None:
    run = run_from_agui(
        {
            "threadId": "t",
            "runId": "r",
            "messages": [
                {"id": "1", "role": "developer", "content": "Be brief."},
                {
                    "id": "2",
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "What is this?"},
                        {
                            "type": "image",
                            "source": {
                                "type": "url",
                                "value": "https://x.example/a.png",
                                "mimeType": "image/png",
                            },
                        },
                    ],
                },
                {
                    "id": "3",
                    "role": "assistant",
                    "toolCalls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "show_map", "arguments": '{"city":"Paris"}'},
                        }
                    ],
                },
                {"id": "4", "role": "tool", "toolCallId": "c1", "content": "shown"},
                {"id": "5", "role": "reasoning", "content": "hidden"},
            ],
            "tools": [
                {
                    "name": "show_map",
                    "description": "Show a map",
                    "parameters": {"type": "object", "properties": {}},
                }
            ],
            "context": [{"description": "user's city", "value": "Paris"}],
        }
    )
    assert (run.thread_id, run.run_id) == ("t", "r")
    assert [spec.name for spec in run.client_tools] == ["show_map"]
    assert run.messages == (
        SystemMessage(text="Context from the application:\n- user's city: Paris"),
        SystemMessage(text="Be brief."),
        UserMessage(
            text="What is this?",
            blocks=[ImageBlock(url="https://x.example/a.png", mime_type="image/png")],
        ),
        AssistantMessage(
            tool_calls=[ToolCall(id="c1", name="show_map", arguments_str='{"city":"Paris"}')]
        ),
        ToolMessage(tool_call_id="c1", name="show_map", content="shown"),
    )


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("run", "must be a JSON object"),
        ({"runId": "r", "messages": []}, "threadId"),
        ({"threadId": "t", "runId": "r", "messages": [{"id": "1", "role": "alien"}]}, "messages"),
        ({"threadId": "t", "runId": "r", "messages": []}, "at least one user message"),
    ],
)
def test_bad_agui_bodies(body: Any, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        run_from_agui(body)


def test_the_events_body() -> None:
    body = {
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    }
    assert messages_from_events(body) == (SystemMessage(text="Be brief."), UserMessage(text="Hi"))
    for bad, reason in [
        ({"messages": "Hi"}, "non-empty array"),
        ({"messages": [{"content": "x"}]}, "with a 'role'"),
        ({"messages": [{"role": "user", "content": 3}]}, "not a conversation"),
    ]:
        with pytest.raises(ValueError, match=reason):
            messages_from_events(bad)
