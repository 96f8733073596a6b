"""What the dialects' request builders share (solon_events.dialects.writing)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from solon_events import AssistantMessage, ToolCall
from solon_events.dialects.writing import (
    arguments_text,
    data_url,
    data_url_parts,
    function_tool,
    redacted_thinking,
    role_message,
    thinking_signature,
    tool_definition,
    verbatim,
)
from solon_events.event_model.messages import SystemMessage, ToolMessage, ToolSpec, UserMessage

_MIME = st.from_regex(r"[a-z]{1,8}/[a-z0-9.+-]{1,12}", fullmatch=True)
_BASE64 = st.from_regex(r"[A-Za-z0-9+/]{0,40}={0,2}", fullmatch=True)


@given(data=_BASE64, mime_type=_MIME)
def test_a_data_url_reads_back_as_its_media_type_and_payload(data: str, mime_type: str) -> None:
    url = data_url(data, mime_type, "image/png")
    assert data_url_parts(url) == (mime_type, data)
    assert data_url(url, "other/type", "image/png") == url  # a data: URL is kept


def test_other_urls_have_no_data_url_parts() -> None:
    assert data_url_parts("https://example.com/a.png") is None
    assert data_url_parts("data:text/plain,hello") is None  # not base64
    assert data_url_parts(None) is None


def test_arguments_text_prefers_the_streamed_text() -> None:
    assert arguments_text(ToolCall(id="c", name="f", arguments_str='{"a": 1}')) == '{"a": 1}'
    assert orjson.loads(arguments_text(ToolCall(id="c", name="f", arguments={"b": 2}))) == {"b": 2}
    assert arguments_text(ToolCall(id="c", name="f")) == "{}"


def test_thinking_sent_back_comes_from_the_metadata() -> None:
    signed = AssistantMessage(thinking="t", metadata={"thinking_signature": "sig"})
    assert thinking_signature(signed) == "sig"
    assert thinking_signature(AssistantMessage(metadata={"thinking_signature": ""})) is None
    assert thinking_signature(AssistantMessage()) is None
    assert list(redacted_thinking(AssistantMessage(metadata={"redacted_thinking": "r"}))) == ["r"]
    both = AssistantMessage(metadata={"redacted_thinking": ["r1", "r2"]})
    assert list(redacted_thinking(both)) == ["r1", "r2"]
    assert list(redacted_thinking(AssistantMessage(metadata={"redacted_thinking": 3}))) == []


def test_tool_definitions_name_the_description_only_when_there_is_one() -> None:
    spec = ToolSpec(
        name="f", parameters={"type": "object", "properties": {"x": {"type": "integer"}}}
    )
    assert tool_definition(spec, "input_schema", 1) == {"name": "f", "input_schema": 1}
    described = ToolSpec(name="f", description="does f")
    assert list(tool_definition(described, "schema", {})) == ["name", "description", "schema"]
    tool = function_tool(spec)
    assert tool["function"]["parameters"] == {
        "type": "object",
        "properties": {"x": {"type": "integer"}},
    }
    assert type(tool["function"]["parameters"]["properties"]) is dict  # plain JSON values
    orjson.dumps(tool)


def test_verbatim_sends_mappings_and_names_what_it_cannot_send() -> None:
    assert verbatim({"role": "user", "content": "x"}, "d", "message") == {
        "role": "user",
        "content": "x",
    }
    with pytest.raises(TypeError, match="the d dialect cannot send a int block"):
        verbatim(1, "d", "block")


def test_role_message_hands_each_kind_to_its_builder() -> None:
    def build(kind: str) -> Any:
        return lambda message: {"role": kind}

    def message_of(message: Any) -> dict[str, Any]:
        return role_message(message, "d", build("user"), build("assistant"), build("tool"))

    assert message_of(SystemMessage(text="be brief")) == {"role": "system", "content": "be brief"}
    assert message_of(UserMessage(text="hi")) == {"role": "user"}
    assert message_of(AssistantMessage(text="hello")) == {"role": "assistant"}
    assert message_of(ToolMessage(tool_call_id="c", name="f", content="1")) == {"role": "tool"}
    assert message_of({"role": "developer", "content": "x"})["role"] == "developer"
    with pytest.raises(TypeError, match="the d dialect cannot send a str message"):
        message_of("hi")
