"""The error hierarchy (SPEC §9)."""

from __future__ import annotations

import pytest

from solon_events import (
    ChatError,
    ChatHttpError,
    ChatProtocolError,
    ChatTimeoutError,
    ProviderError,
    ToolCallError,
)


@pytest.mark.parametrize(
    "cls", [ChatHttpError, ChatTimeoutError, ChatProtocolError, ToolCallError, ProviderError]
)
def test_every_error_is_a_chat_error(cls: type[ChatError]) -> None:
    assert issubclass(cls, ChatError)
    assert issubclass(cls, Exception)


def test_timeout_error_is_a_builtin_timeout_error() -> None:
    error = ChatTimeoutError("idle for 30 s", budget="idle")
    assert isinstance(error, TimeoutError)
    assert error.budget == "idle"
    assert str(error) == "idle for 30 s"
    with pytest.raises(TimeoutError):
        raise error
    assert not issubclass(ChatProtocolError, TimeoutError)


def test_chat_error_fields() -> None:
    error = ChatError("boom")
    assert str(error) == "boom"
    assert error.message == "boom"
    assert dict(error.provider_error) == {}
    fields = {"type": "overloaded_error", "message": "Overloaded"}
    provider = ProviderError("provider error: Overloaded", provider_error=fields)
    assert dict(provider.provider_error) == fields


def test_http_error_fields() -> None:
    error = ChatHttpError(
        429, "rate limited", provider_error={"code": 429}, url="https://api.example.com/v1"
    )
    assert error.status == 429
    assert error.provider_message == "rate limited"
    assert error.url == "https://api.example.com/v1"
    assert dict(error.provider_error) == {"code": 429}
    assert "429" in str(error)
    assert "rate limited" in str(error)
    bare = ChatHttpError(500)
    assert bare.provider_message is None
    assert str(bare) == "HTTP 500"


def test_tool_call_error_fields() -> None:
    error = ToolCallError("unknown tool 'x'", tool_name="x", tool_call_id="c1")
    assert (error.tool_name, error.tool_call_id) == ("x", "c1")
    assert str(error) == "unknown tool 'x'"
    assert ToolCallError("m").tool_name is None


def test_protocol_error_message() -> None:
    error = ChatProtocolError("truncated")
    assert str(error) == "truncated"
    with pytest.raises(ChatError):
        raise error
