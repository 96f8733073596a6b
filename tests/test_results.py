"""Result values: usage, tool calls, sources, blocks, messages, responses (SPEC §3)."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import attrs
import pytest
from copies import WAYS, assert_built_alike, copied, keywords
from hypothesis import given
from hypothesis import strategies as st

from solon_events import (
    AssistantMessage,
    ChatResponse,
    Citation,
    FileBlock,
    ImageBlock,
    SearchResult,
    TextBlock,
    ToolCall,
    Usage,
)
from solon_events.event_model.results import (
    new_citation,
    new_message,
    new_response,
    new_search_result,
    new_tool_call,
    new_usage,
)

# Usage


def test_usage_defaults() -> None:
    usage = Usage()
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (0, 0, 0)
    assert (usage.thinking_tokens, usage.cache_creation_input_tokens) == (0, 0)
    assert usage.cache_read_input_tokens == 0
    assert dict(usage.server_tool_use) == {}
    assert usage.source is None


def test_usage_total_is_the_providers_or_prompt_plus_completion() -> None:
    assert Usage(prompt_tokens=3, completion_tokens=4).total_tokens == 7
    assert Usage(prompt_tokens=3, completion_tokens=4, total_tokens=10).total_tokens == 10


def test_usage_is_frozen_and_keyword_only() -> None:
    usage = Usage(prompt_tokens=1)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        usage.prompt_tokens = 2  # type: ignore[misc]
    with pytest.raises(TypeError):
        Usage(1, 2)  # type: ignore[misc]
    with pytest.raises(TypeError):
        usage.server_tool_use["web_search_requests"] = 1  # type: ignore[index]


def _usage(n: int, source: object = None, **server_tool_use: object) -> Usage:
    return Usage(
        prompt_tokens=n,
        completion_tokens=2 * n,
        total_tokens=3 * n + 1,
        thinking_tokens=n + 1,
        cache_creation_input_tokens=n + 2,
        cache_read_input_tokens=n + 3,
        server_tool_use=server_tool_use,
        source=source,
    )


def test_usage_add_adds_every_field() -> None:
    total = _usage(1) + _usage(10)
    assert total.prompt_tokens == 11
    assert total.completion_tokens == 22
    assert total.total_tokens == 4 + 31
    assert total.thinking_tokens == 2 + 11
    assert total.cache_creation_input_tokens == 3 + 12
    assert total.cache_read_input_tokens == 4 + 13


def test_usage_add_adds_numeric_server_tool_counters() -> None:
    a = _usage(1, web_search_requests=1, web_fetch_requests=2, tier="a")
    b = _usage(1, web_search_requests=3, code_execution_requests=1, tier="b")
    counters = dict((a + b).server_tool_use)
    assert counters == {
        "web_search_requests": 4,
        "web_fetch_requests": 2,
        "code_execution_requests": 1,
        "tier": "b",
    }
    assert dict((a + _usage(1)).server_tool_use) == dict(a.server_tool_use)
    assert dict((_usage(1) + b).server_tool_use) == dict(b.server_tool_use)


def test_usage_add_keeps_the_sources_as_steps() -> None:
    a, b, c = {"input_tokens": 1}, {"input_tokens": 2}, {"input_tokens": 3}
    two = _usage(1, a) + _usage(2, b)
    assert two.source == {"steps": [a, b]}
    three = two + _usage(3, c)
    assert three.source == {"steps": [a, b, c]}
    assert two.source == {"steps": [a, b]}
    assert (_usage(1) + _usage(2)).source == {"steps": [None, None]}


def test_usage_add_leaves_operands_alone_and_rejects_other_types() -> None:
    a, b = _usage(1, {"x": 1}), _usage(2, {"y": 2})
    _ = a + b
    assert a == _usage(1, {"x": 1})
    assert b.source == {"y": 2}
    with pytest.raises(TypeError):
        _ = a + 1  # type: ignore[operator]


# ToolCall


def test_tool_call_parses_arguments() -> None:
    call = ToolCall(id="c1", name="get_weather", arguments_str='{"city": "Paris"}', index=0)
    assert call.arguments == {"city": "Paris"}
    assert call.arguments_str == '{"city": "Paris"}'
    assert (call.id, call.name, call.index) == ("c1", "get_weather", 0)


@pytest.mark.parametrize("text", ["", "   ", "not json", "*** Begin Patch", "[1, 2]", '"s"', "{"])
def test_tool_call_arguments_are_empty_for_empty_or_non_object_input(text: str) -> None:
    call = ToolCall(name="apply_patch", arguments_str=text)
    assert call.arguments == {}
    assert call.arguments_str == text


def test_tool_call_defaults_and_explicit_arguments() -> None:
    call = ToolCall()
    assert (call.id, call.name, call.arguments, call.arguments_str, call.index) == (
        None, "", {}, "", -1,
    )  # fmt: skip
    given = ToolCall(name="f", arguments={"a": 1})
    assert given.arguments == {"a": 1}
    assert given.arguments_str == '{"a":1}'


def test_tool_call_is_frozen() -> None:
    call = ToolCall(name="f")
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        call.name = "g"  # type: ignore[misc]


# sources and blocks


def test_sources_and_blocks_are_keyword_built_and_frozen() -> None:
    citation = Citation(url="https://a", title="A", cited_text="quote", start_index=1, end_index=5)
    result = SearchResult(url="https://b", title="B", snippet="s", date="2024-01-01")
    for value in (
        citation,
        result,
        TextBlock(text="t"),
        ImageBlock(data="aGk=", mime_type="image/png"),
        FileBlock(file_id="f"),
    ):
        with pytest.raises(TypeError):
            type(value)("positional")
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            value.url = "x"  # type: ignore[union-attr]
    assert (citation.url, citation.cited_text, citation.start_index) == ("https://a", "quote", 1)
    assert (result.title, result.snippet) == ("B", "s")
    assert dict(Citation().raw) == {}
    assert Citation().url is None


def test_image_block_repr_hides_data() -> None:
    text = repr(ImageBlock(data="A" * 100_000, mime_type="image/png"))
    assert "AAAA" not in text
    assert "100000 chars" in text


# AssistantMessage


def test_assistant_message_defaults_and_tuples() -> None:
    message = AssistantMessage()
    assert (message.text, message.thinking, message.refusal) == ("", "", "")
    assert message.tool_calls == ()
    assert message.blocks == ()
    assert message.citations == ()
    assert message.search_results == ()
    assert dict(message.metadata) == {}
    built = AssistantMessage(tool_calls=[ToolCall(name="f")], citations=[Citation(url="u")])
    assert isinstance(built.tool_calls, tuple)
    assert isinstance(built.citations, tuple)
    with pytest.raises(TypeError):
        built.metadata["x"] = 1  # type: ignore[index]


def test_assistant_message_predicates() -> None:
    assert not AssistantMessage(text="x").is_thinking
    assert AssistantMessage(thinking="hmm").is_thinking
    assert not AssistantMessage(blocks=[TextBlock(text="x")]).has_media
    assert AssistantMessage(blocks=[ImageBlock(url="u")]).has_media
    assert AssistantMessage(blocks=[FileBlock(url="u")]).has_media
    assert not AssistantMessage().has_media


# ChatResponse


def test_chat_response_from_a_message_mirrors_it() -> None:
    call = ToolCall(id="c", name="f")
    citation = Citation(url="u")
    result = SearchResult(url="s")
    message = AssistantMessage(
        text="hi", thinking="th", tool_calls=[call], citations=[citation], search_results=[result]
    )
    response = ChatResponse(message=message, finish_reason="stop", model="m")
    assert response.message is message
    assert response.text == "hi"
    assert response.thinking == "th"
    assert response.tool_calls == (call,)
    assert response.citations == (citation,)
    assert response.search_results == (result,)
    assert (response.finish_reason, response.model) == ("stop", "m")
    assert ChatResponse(message=AssistantMessage(text="hi")).text == "hi"


def test_chat_response_defaults() -> None:
    response = ChatResponse()
    assert response.message is None
    assert (response.text, response.thinking) == ("", "")
    assert response.tool_calls == () and response.citations == () and response.search_results == ()
    assert response.usage is None
    assert response.finish_reason is None
    assert response.model is None
    assert response.provider_response_id is None
    assert response.is_empty


def test_chat_response_from_fields_builds_its_message() -> None:
    response = ChatResponse(text="hi", tool_calls=[ToolCall(name="f")])
    assert response.message is not None
    assert response.message.text == "hi"
    assert isinstance(response.tool_calls, tuple)
    assert response.tool_calls[0].name == "f"


def test_chat_response_is_frozen_and_keyword_only() -> None:
    response = ChatResponse(message=AssistantMessage(text="hi"))
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        response.text = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        ChatResponse(AssistantMessage())  # type: ignore[misc]


@pytest.mark.parametrize(
    ("message", "empty"),
    [
        (None, True),
        (AssistantMessage(), True),
        (AssistantMessage(citations=[Citation(url="u")]), True),
        (AssistantMessage(text="x"), False),
        (AssistantMessage(thinking="x"), False),
        (AssistantMessage(tool_calls=[ToolCall(name="f")]), False),
        (AssistantMessage(blocks=[ImageBlock(url="u")]), False),
        (AssistantMessage(refusal="no"), False),
    ],
)
def test_chat_response_is_empty(message: AssistantMessage | None, empty: bool) -> None:
    assert ChatResponse(message=message).is_empty is empty


# The positional builders the pipeline uses: the same values as the keyword constructors (the
# names, in the order the pipeline passes them)

USAGE_FIELDS = (
    "prompt_tokens completion_tokens total_tokens thinking_tokens cache_creation_input_tokens"
    " cache_read_input_tokens server_tool_use source"
)
CITATION_FIELDS = "url title cited_text start_index end_index document_index file_id type raw"

_counts = st.integers(min_value=0, max_value=10**6)
_maybe_text = st.none() | st.text(max_size=5)
_mapping = st.none() | st.dictionaries(st.text(max_size=3), st.integers(), max_size=3)


def _sequence(item: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.lists(item, max_size=3).flatmap(lambda xs: st.sampled_from([xs, tuple(xs)]))


@given(
    st.tuples(_counts, _counts, st.none() | _counts, _counts, _counts, _counts),
    _mapping,
    st.none() | st.integers(),
)
def test_new_usage_equals_the_keyword_constructor(
    counts: tuple[Any, ...], server_tool_use: Any, source: Any
) -> None:
    total = counts[2]
    values = (*counts, server_tool_use, source)
    built = new_usage(*values)
    expected = keywords(USAGE_FIELDS, values)
    if total is None:
        del expected["total_tokens"]
    assert_built_alike(built, Usage(**expected))
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        built.prompt_tokens = 1  # type: ignore[misc]


@given(
    st.text(max_size=5),
    st.text(max_size=5),
    _sequence(st.builds(ToolCall, name=st.text(max_size=3))),
    _sequence(st.builds(TextBlock, text=st.text(max_size=3))),
    _sequence(st.builds(Citation, url=_maybe_text)),
    _sequence(st.builds(SearchResult, url=_maybe_text)),
    st.text(max_size=5),
    _mapping,
    st.none() | st.sampled_from(["stop", "length"]),
    st.booleans(),
)
def test_new_message_and_new_response_equal_the_keyword_constructors(
    text: str,
    thinking: str,
    calls: Any,
    blocks: Any,
    citations: Any,
    results: Any,
    refusal: str,
    metadata: Any,
    finish: str | None,
    with_message: bool,
) -> None:
    fields = (text, thinking, calls, blocks, citations, results, refusal, metadata)
    message = new_message(*fields)
    names = ("text", "thinking", "tool_calls", "blocks", "citations", "search_results")
    expected = AssistantMessage(**dict(zip((*names, "refusal", "metadata"), fields)))
    assert type(message) is AssistantMessage and message == expected
    assert all(type(getattr(message, name)) is tuple for name in names[2:])
    assert message.metadata == expected.metadata and type(message.metadata) is MappingProxyType

    given_message = message if with_message else None
    usage = Usage(prompt_tokens=1)
    response = new_response(given_message, usage, finish, "m", "r")
    expected_response = ChatResponse(
        message=given_message,
        usage=usage,
        finish_reason=finish,
        model="m",
        provider_response_id="r",
    )
    assert response == expected_response
    assert_built_alike(response, expected_response)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        response.text = "x"  # type: ignore[misc]


_maybe_int = st.none() | st.integers()
_raw = st.none() | st.dictionaries(st.text(max_size=3), _maybe_text, max_size=3)


@given(
    st.tuples(_maybe_text, _maybe_text, _maybe_text),
    st.tuples(_maybe_int, _maybe_int, _maybe_int),
    st.tuples(_maybe_text, _maybe_text),
    _raw,
)
def test_new_citation_equals_the_keyword_constructor(
    texts: tuple[Any, ...], positions: tuple[Any, ...], ids: tuple[Any, ...], raw: Any
) -> None:
    values = (*texts, *positions, *ids, raw)
    built = new_citation(*values)
    expected = Citation(**keywords(CITATION_FIELDS, values))
    assert built == expected
    assert_built_alike(built, expected)
    assert type(built.raw) is MappingProxyType and built.raw is not raw
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        built.url = "x"  # type: ignore[misc]


@given(st.tuples(_maybe_text, _maybe_text, _maybe_text, _maybe_text, _maybe_text), _raw)
def test_new_search_result_equals_the_keyword_constructor(texts: tuple[Any, ...], raw: Any) -> None:
    built = new_search_result(*texts, raw)
    expected = SearchResult(**keywords("url title snippet date type raw", (*texts, raw)))
    assert built == expected
    assert_built_alike(built, expected)
    assert type(built.raw) is MappingProxyType and built.raw is not raw
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        built.url = "x"  # type: ignore[misc]


_arguments = st.none() | st.dictionaries(st.text(max_size=3), st.integers(-9, 9), max_size=2)
_arguments_text = st.sampled_from(["", " ", "{}", '{"a": 1}', "[1]", "{bad", '{"b": "x"}'])


@given(_maybe_text, st.text(max_size=4), _arguments, _arguments_text, st.integers(-1, 3))
def test_new_tool_call_equals_the_keyword_constructor(
    call_id: Any, name: str, arguments: Any, arguments_str: str, index: int
) -> None:
    built = new_tool_call(call_id, name, arguments, arguments_str, index)
    expected = ToolCall(
        id=call_id, name=name, arguments=arguments, arguments_str=arguments_str, index=index
    )
    assert built == expected
    assert_built_alike(built, expected)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        built.name = "x"  # type: ignore[misc]


@pytest.mark.parametrize("how", WAYS)
def test_every_result_copies_and_pickles_to_an_equal_value(how: str) -> None:
    values = [
        Usage(prompt_tokens=1, server_tool_use={"web": 2}, source={"raw": 1}),
        ToolCall(id="c", name="f", arguments_str='{"a": 1}', index=0),
        Citation(url="u", raw={"a": 1}),
        SearchResult(url="u", raw={"a": 1}),
        TextBlock(text="t"),
        ImageBlock(url="u"),
        FileBlock(file_id="f"),
        AssistantMessage(text="t", metadata={"m": 1}, citations=(Citation(url="u"),)),
        ChatResponse(text="t", usage=Usage(prompt_tokens=1), finish_reason="stop"),
        new_response(new_message("t"), new_usage(1, 2), "stop", "m", "p"),
    ]
    for value in values:
        again = copied(value, how)
        assert again == value and type(again) is type(value)
        assert attrs.evolve(again) == value
