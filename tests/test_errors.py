"""The error hierarchy (SPEC §9)."""

from __future__ import annotations

import pytest

import solon_events as se


@pytest.mark.parametrize(
    "cls",
    [
        se.ChatHttpError,
        se.ChatTimeoutError,
        se.ChatProtocolError,
        se.ToolCallError,
        se.ProviderError,
    ],
)
def test_every_error_is_a_chat_error(cls: type[se.ChatError]) -> None:
    assert issubclass(cls, se.ChatError)
    assert issubclass(cls, Exception)


def test_timeout_error_is_a_builtin_timeout_error() -> None:
    error = se.ChatTimeoutError("idle for 30 s", budget="idle")
    assert isinstance(error, TimeoutError)
    assert error.budget == "idle"
    assert str(error) == "idle for 30 s"
    with pytest.raises(TimeoutError):
        raise error
    assert not issubclass(se.ChatProtocolError, TimeoutError)


def test_chat_error_fields() -> None:
    error = se.ChatError("boom")
    assert str(error) == "boom"
    assert error.message == "boom"
    assert dict(error.provider_error) == {}
    fields = {"type": "overloaded_error", "message": "Overloaded"}
    provider = se.ProviderError("provider error: Overloaded", provider_error=fields)
    assert dict(provider.provider_error) == fields


def test_http_error_fields() -> None:
    error = se.ChatHttpError(
        429, "rate limited", provider_error={"code": 429}, url="https://api.example.com/v1"
    )
    assert error.status == 429
    assert error.provider_message == "rate limited"
    assert error.url == "https://api.example.com/v1"
    assert dict(error.provider_error) == {"code": 429}
    assert "429" in str(error)
    assert "rate limited" in str(error)
    bare = se.ChatHttpError(500)
    assert bare.provider_message is None
    assert str(bare) == "HTTP 500"


def test_tool_call_error_fields() -> None:
    error = se.ToolCallError("unknown tool 'x'", tool_name="x", tool_call_id="c1")
    assert (error.tool_name, error.tool_call_id) == ("x", "c1")
    assert str(error) == "unknown tool 'x'"
    assert se.ToolCallError("m").tool_name is None


def test_protocol_error_message() -> None:
    error = se.ChatProtocolError("truncated")
    assert str(error) == "truncated"
    with pytest.raises(se.ChatError):
        raise error
