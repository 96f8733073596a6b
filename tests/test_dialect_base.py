"""The shared dialect helpers in solon_events.dialects.base."""

from __future__ import annotations

import pytest

from solon_events import ChatEvent, ChatEventType, ChatProtocolError, ProviderError
from solon_events.dialects import (
    ChatStreamContext,
    HttpRequest,
    ToolCallAssembler,
    dialect_names,
    get_dialect,
    make_usage,
)
from solon_events.dialects.base import data_url, provider_error_message, request_headers

T = ChatEventType


def test_every_named_dialect_loads() -> None:
    for name in dialect_names():
        assert get_dialect(name).name == name
    dialect = get_dialect("openai")
    assert get_dialect(dialect) is dialect


def test_unknown_dialect_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"'openai'.*'ollama'"):
        get_dialect("cohere")


def test_http_request_repr_hides_headers() -> None:
    request = HttpRequest(url="http://x/v1", headers={"Authorization": "Bearer sk-SECRET"})
    assert "sk-SECRET" not in repr(request)
    assert request.body_bytes() == b"{}"


def test_request_headers_let_extra_replace_defaults_whatever_the_case() -> None:
    headers = request_headers({"Accept": "text/event-stream"}, {"accept": "*/*", "X-A": "1"})
    assert headers == {"Content-Type": "application/json", "accept": "*/*", "X-A": "1"}


def test_data_url_keeps_data_urls() -> None:
    assert data_url("AAAA", "image/jpeg", "image/png") == "data:image/jpeg;base64,AAAA"
    assert data_url("AAAA", None, "image/png") == "data:image/png;base64,AAAA"
    assert data_url("data:x/y;base64,B", None, "image/png") == "data:x/y;base64,B"


def test_make_usage_defaults_total_and_tolerates_missing_numbers() -> None:
    usage = make_usage(prompt_tokens=3, completion_tokens=None, source={"a": 1})
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (3, 0, 3)
    assert make_usage(prompt_tokens=1, completion_tokens=1, total_tokens=7).total_tokens == 7


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"error": {"message": "bad key", "type": "auth"}}, "bad key"),
        ({"error": "rate limited"}, "rate limited"),
        ({"message": "nope"}, "nope"),
        ([{"error": {"code": 400, "message": "gemini says"}}], "gemini says"),
        ("not json", None),
        ({}, None),
    ],
)
def test_provider_error_message_shapes(body: object, message: str | None) -> None:
    assert provider_error_message(body) == message


def test_context_prefills_ids_and_records_finish_and_failure() -> None:
    events: list[ChatEvent] = []
    ctx = ChatStreamContext(events.append, step=2, response_id="r")
    ctx.provider_response_id = "p"
    ctx.send(T.TEXT_DELTA, text="x")
    assert (events[0].step, events[0].response_id, events[0].provider_response_id) == (2, "r", "p")
    ctx.finish("stop")
    ctx.finish()
    assert ctx.finished and ctx.finish_reason == "stop"
    ctx.fail({"error": {"message": "boom"}})
    assert isinstance(ctx.failure, ProviderError) and "boom" in str(ctx.failure)
    assert ctx.state_of("k", list) is ctx.state_of("k", list)


def test_tool_call_assembler_streams_start_deltas_end() -> None:
    events: list[ChatEvent] = []
    ctx = ChatStreamContext(events.append)
    calls = ToolCallAssembler()
    calls.start(ctx, "a", id="call_1", name="f")
    calls.delta(ctx, "a", '{"x"')
    calls.delta(ctx, "a", "")
    calls.delta(ctx, "a", ": 1}")
    calls.start(ctx, "b", id="call_2", name="g")
    calls.end_all(ctx)
    assert [e.type for e in events] == [
        T.TOOL_CALL_START,
        T.TOOL_CALL_ARGS_DELTA,
        T.TOOL_CALL_ARGS_DELTA,
        T.TOOL_CALL_START,
        T.TOOL_CALL_END,
        T.TOOL_CALL_END,
    ]
    first_end = events[4].tool_call
    assert first_end is not None and first_end.arguments == {"x": 1} and first_end.index == 0
    assert events[5].tool_call is not None and events[5].tool_call.arguments == {}
    with pytest.raises(ChatProtocolError):
        calls.delta(ctx, "never-started", "{}")
