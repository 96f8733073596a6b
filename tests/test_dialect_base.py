"""The dialect interface and what every dialect shares: the context it records on, the
request helpers, the value readers and the tool-call assembler."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solon_events import (
    ChatEvent,
    ChatEventType,
    ChatProtocolError,
    Citation,
    ProviderError,
    Usage,
)
from solon_events.dialects import (
    ChatStreamContext,
    HttpRequest,
    ToolCallAssembler,
    dialect_names,
    get_dialect,
    make_usage,
)
from solon_events.dialects.context import Failure, Finish, NextResponse
from solon_events.dialects.reading import provider_error_message
from solon_events.dialects.request import request_headers
from solon_events.dialects.writing import data_url

T = ChatEventType


def test_every_named_dialect_loads() -> None:
    for name in dialect_names():
        assert get_dialect(name).name == name
    dialect = get_dialect("openai")
    assert get_dialect(dialect) is dialect


def test_unknown_dialect_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"'openai'.*'ollama'"):
        get_dialect("no-such-dialect")


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


def test_context_prefills_ids_and_records_events_finish_and_failure_in_order() -> None:
    ctx = ChatStreamContext(step=2, response_id="r")
    ctx.provider_response_id = "p"
    ctx.model = "m"
    ctx.send(T.TEXT_DELTA, text="x")
    ctx.finish("stop")
    ctx.fail({"error": {"message": "boom"}})
    event, finish, failure = ctx.take()
    assert isinstance(event, ChatEvent)
    assert (event.step, event.response_id, event.provider_response_id) == (2, "r", "p")
    assert finish == Finish("stop")
    assert isinstance(failure, Failure) and isinstance(failure.error, ProviderError)
    assert "boom" in str(failure.error)
    assert ctx.take() == []
    assert ctx.state_of("k", list) is ctx.state_of("k", list)


def test_next_response_records_the_ended_response_and_moves_to_the_next_step() -> None:
    ctx = ChatStreamContext(step=0, response_id="r")
    ctx.provider_response_id, ctx.model = "p1", "m1"
    ctx.state["mine"] = 1
    ctx.next_response()
    ctx.send(T.STATUS, text="in_progress")
    boundary, status = ctx.take()
    assert boundary == NextResponse(0, "m1", "p1")
    assert isinstance(status, ChatEvent) and status.step == 1
    assert (ctx.step, ctx.model, ctx.provider_response_id, ctx.state) == (1, None, None, {})


def test_tool_call_assembler_streams_start_deltas_end() -> None:
    ctx = ChatStreamContext()
    calls = ToolCallAssembler()
    calls.start(ctx, "a", id="call_1", name="f")
    calls.delta(ctx, "a", '{"x"')
    calls.delta(ctx, "a", "")
    calls.delta(ctx, "a", ": 1}")
    calls.start(ctx, "b", id="call_2", name="g")
    calls.end_all(ctx)
    events: list[Any] = ctx.take()
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


_maybe_text = st.none() | st.text(max_size=4)
_maybe_map = st.none() | st.dictionaries(st.text(max_size=3), st.integers(), max_size=2)


@settings(max_examples=200)
@given(
    kind=st.sampled_from(list(ChatEventType)),
    text=_maybe_text,
    index=st.integers(-1, 3),
    item_id=_maybe_text,
    tool_call_id=_maybe_text,
    raw_type=_maybe_text,
    sub_type=_maybe_text,
    raw=_maybe_map | st.builds(MappingProxyType, st.dictionaries(st.text(max_size=2), st.none())),
    extra=_maybe_map,
    step=st.integers(0, 3),
    provider_response_id=_maybe_text,
)
def test_send_emits_what_event_builds(
    kind: ChatEventType,
    text: str | None,
    index: int,
    item_id: str | None,
    tool_call_id: str | None,
    raw_type: str | None,
    sub_type: str | None,
    raw: Any,
    extra: dict[str, int] | None,
    step: int,
    provider_response_id: str | None,
) -> None:
    ctx = ChatStreamContext(step=step, response_id="r")
    ctx.provider_response_id = provider_response_id
    fields: dict[str, Any] = {
        "text": text,
        "index": index,
        "item_id": item_id,
        "tool_call_id": tool_call_id,
        "raw_type": raw_type,
        "sub_type": sub_type,
        "raw": raw,
        "attrs": extra,
        "usage": Usage(prompt_tokens=index + 1) if index > 1 else None,
        "citation": Citation(url="u") if index == 0 else None,
    }
    ctx.send(kind, **fields)
    sent = ctx.take()
    expected = ChatEvent(
        kind, step=step, response_id="r", provider_response_id=provider_response_id, **fields
    )
    assert sent == [expected] == [ctx.event(kind, **fields)]
    assert type(sent[0]) is ChatEvent
    if extra:
        extra["changed"] = 1
        assert "changed" not in sent[0].attrs
    with pytest.raises(TypeError):
        sent[0].raw["new"] = 1  # type: ignore[index]
