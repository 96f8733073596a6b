"""ChatAccumulator: folding one step's events into its snapshot (SPEC §5)."""

from __future__ import annotations

from solon_events import (
    ChatAccumulator,
    ChatEvent,
    ChatEventType,
    ChatResponse,
    Citation,
    ImageBlock,
    SearchResult,
    TextBlock,
    ToolCall,
    Usage,
)

T = ChatEventType


def fold(*events: ChatEvent, **snapshot: object) -> ChatResponse:
    accumulator = ChatAccumulator()
    for event in events:
        accumulator.add(event)
    return accumulator.snapshot(**snapshot)  # type: ignore[arg-type]


def test_empty_step() -> None:
    response = fold()
    assert response.is_empty
    assert (response.text, response.thinking, response.tool_calls) == ("", "", ())
    assert response.usage is None
    assert response.finish_reason is None


def test_text_thinking_and_refusal_are_concatenated() -> None:
    response = fold(
        ChatEvent(T.THINKING_DELTA, text="let me "),
        ChatEvent(T.THINKING_DELTA, text="think"),
        ChatEvent(T.TEXT_START),
        ChatEvent(T.TEXT_DELTA, text="Hello"),
        ChatEvent(T.TEXT_DELTA, text=None),
        ChatEvent(T.TEXT_DELTA, text=", world"),
        ChatEvent(T.TEXT_END),
        ChatEvent(T.REFUSAL_DELTA, text="I can't "),
        ChatEvent(T.REFUSAL_DELTA, text="help"),
    )
    assert response.text == "Hello, world"
    assert response.thinking == "let me think"
    assert response.message is not None
    assert response.message.refusal == "I can't help"
    assert not response.is_empty


def test_tool_call_start_with_index_and_id_then_index_only_deltas_is_one_call() -> None:
    response = fold(
        ChatEvent(
            T.TOOL_CALL_START,
            index=0,
            tool_call_id="call_1",
            tool_call=ToolCall(id="call_1", name="f"),
        ),
        ChatEvent(T.TOOL_CALL_ARGS_DELTA, index=0, text='{"a"'),
        ChatEvent(T.TOOL_CALL_ARGS_DELTA, index=0, text=": 1}"),
        ChatEvent(T.TOOL_CALL_END, tool_call_id="call_1"),
    )
    assert len(response.tool_calls) == 1
    call = response.tool_calls[0]
    assert (call.id, call.name, call.index) == ("call_1", "f", 0)
    assert call.arguments_str == '{"a": 1}'
    assert call.arguments == {"a": 1}


def test_tool_calls_are_keyed_by_index() -> None:
    response = fold(
        ChatEvent(T.TOOL_CALL_START, index=0, tool_call=ToolCall(id="a", name="f")),
        ChatEvent(T.TOOL_CALL_START, index=1, tool_call=ToolCall(id="b", name="g")),
        ChatEvent(T.TOOL_CALL_ARGS_DELTA, index=1, text='{"y":'),
        ChatEvent(T.TOOL_CALL_ARGS_DELTA, index=0, text='{"x":1}'),
        ChatEvent(T.TOOL_CALL_ARGS_DELTA, index=1, text="2}"),
    )
    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [
        ("a", "f", {"x": 1}),
        ("b", "g", {"y": 2}),
    ]


def test_tool_calls_are_keyed_by_id_without_index() -> None:
    response = fold(
        ChatEvent(T.TOOL_CALL_START, tool_call_id="a", tool_call=ToolCall(id="a", name="f")),
        ChatEvent(T.TOOL_CALL_START, tool_call_id="b", tool_call=ToolCall(id="b", name="g")),
        ChatEvent(T.TOOL_CALL_ARGS_DELTA, tool_call_id="a", text="{}"),
        ChatEvent(T.TOOL_CALL_ARGS_DELTA, tool_call_id="b", text='{"z":3}'),
    )
    assert [(c.id, c.arguments_str) for c in response.tool_calls] == [("a", "{}"), ("b", '{"z":3}')]


def test_keyless_args_delta_goes_to_the_latest_call() -> None:
    response = fold(
        ChatEvent(T.TOOL_CALL_START, tool_call=ToolCall(id="a", name="f")),
        ChatEvent(T.TOOL_CALL_ARGS_DELTA, text='{"k":'),
        ChatEvent(T.TOOL_CALL_ARGS_DELTA, text='"v"}'),
    )
    assert [(c.id, c.arguments) for c in response.tool_calls] == [("a", {"k": "v"})]


def test_tool_call_end_and_chunk_are_authoritative() -> None:
    whole = ToolCall(id="a", name="f", arguments_str='{"final":true}', index=0)
    response = fold(
        ChatEvent(T.TOOL_CALL_START, index=0, tool_call=ToolCall(id="a", name="f")),
        ChatEvent(T.TOOL_CALL_ARGS_DELTA, index=0, text='{"partial'),
        ChatEvent(T.TOOL_CALL_END, index=0, tool_call=whole),
        ChatEvent(
            T.TOOL_CALL_CHUNK, tool_call=ToolCall(id="b", name="g", arguments_str="{}", index=1)
        ),
    )
    assert response.tool_calls[0] == whole
    assert response.tool_calls[0].arguments == {"final": True}
    assert (response.tool_calls[1].id, response.tool_calls[1].name) == ("b", "g")
    assert len(response.tool_calls) == 2


def test_citations_and_search_results_are_never_deduplicated() -> None:
    same = "https://example.com/a"
    response = fold(
        ChatEvent(T.CITATION, citation=Citation(url=same, cited_text="one")),
        ChatEvent(T.SEARCH_RESULT, search_result=SearchResult(url=same)),
        ChatEvent(T.CITATION, citation=Citation(url=same, cited_text="one")),
        ChatEvent(T.SEARCH_RESULT, search_result=SearchResult(url=same)),
        ChatEvent(T.CITATION, citation=Citation(url="https://b")),
        ChatEvent(T.CITATION),
    )
    assert [c.url for c in response.citations] == [same, same, "https://b"]
    assert [r.url for r in response.search_results] == [same, same]


def test_media_blocks_once_each_in_order_with_text() -> None:
    first, second = (
        ImageBlock(url="https://i/1.png"),
        ImageBlock(data="aGk=", mime_type="image/png"),
    )
    response = fold(
        ChatEvent(T.TEXT_DELTA, text="Here "),
        ChatEvent(T.TEXT_DELTA, text="it is: "),
        ChatEvent(T.MEDIA_PARTIAL, block=ImageBlock(data="cGFy")),
        ChatEvent(T.MEDIA_DONE, block=first),
        ChatEvent(T.MEDIA_DONE, block=first),
        ChatEvent(T.TEXT_DELTA, text="and "),
        ChatEvent(T.MEDIA_DONE, block=second),
        ChatEvent(T.MEDIA_DONE),
        ChatEvent(T.TEXT_DELTA, text="done."),
    )
    assert response.message is not None
    assert response.message.blocks == (
        TextBlock(text="Here it is: "),
        first,
        TextBlock(text="and "),
        second,
        TextBlock(text="done."),
    )
    assert response.text == "Here it is: and done."
    assert response.message.has_media


def test_text_only_step_has_no_blocks() -> None:
    response = fold(ChatEvent(T.TEXT_DELTA, text="plain"))
    assert response.message is not None
    assert response.message.blocks == ()


def test_within_a_step_the_latest_usage_wins() -> None:
    early = Usage(prompt_tokens=10, completion_tokens=1)
    late = Usage(prompt_tokens=10, completion_tokens=7)
    response = fold(
        ChatEvent(T.USAGE, usage=early), ChatEvent(T.USAGE), ChatEvent(T.USAGE, usage=late)
    )
    assert response.usage is late
    assert response.usage.total_tokens == 17


def test_snapshot_arguments_override() -> None:
    accumulator = ChatAccumulator()
    accumulator.add(ChatEvent(T.USAGE, usage=Usage(prompt_tokens=1)))
    accumulator.add(ChatEvent(T.TEXT_DELTA, text="x", provider_response_id="chatcmpl-1"))
    accumulator.add(ChatEvent(T.TEXT_DELTA, text="y", provider_response_id="other"))
    assert accumulator.snapshot().provider_response_id == "chatcmpl-1"
    assert accumulator.snapshot().finish_reason is None
    accumulator.finish_reason = "length"
    assert accumulator.snapshot().finish_reason == "length"
    given = Usage(prompt_tokens=5)
    response = accumulator.snapshot(
        finish_reason="stop", model="m", provider_response_id="p", usage=given
    )
    assert (response.finish_reason, response.model, response.provider_response_id) == (
        "stop", "m", "p",
    )  # fmt: skip
    assert response.usage is given
    assert accumulator.snapshot().text == "xy"


def test_errors_are_collected() -> None:
    boom = RuntimeError("boom")
    accumulator = ChatAccumulator()
    accumulator.add(ChatEvent(T.TEXT_DELTA, text="partial"))
    accumulator.add(ChatEvent(T.ERROR, error=boom))
    accumulator.add(ChatEvent(T.ERROR))
    assert accumulator.errors == [boom]
    response = accumulator.snapshot()
    assert response.message is not None
    assert response.message.metadata["errors"] == (boom,)
    assert response.text == "partial"


def test_thinking_metadata_and_content_filter() -> None:
    response = fold(
        ChatEvent(T.THINKING_DELTA, text="t"),
        ChatEvent(T.THINKING_SIGNATURE, text="sig=="),
        ChatEvent(T.THINKING_REDACTED, text="opaque1"),
        ChatEvent(T.THINKING_REDACTED, text="opaque2"),
        ChatEvent(T.CONTENT_FILTER, text="safety"),
    )
    assert response.message is not None
    metadata = response.message.metadata
    assert metadata["thinking_signature"] == "sig=="
    assert metadata["redacted_thinking"] == ("opaque1", "opaque2")
    assert metadata["content_filter"] == "safety"


def test_server_tools_are_not_tool_calls() -> None:
    response = fold(
        ChatEvent(
            T.SERVER_TOOL_START,
            tool_call_id="srv_1",
            sub_type="web_search",
            tool_call=ToolCall(id="srv_1", name="web_search"),
        ),
        ChatEvent(T.SERVER_TOOL_ARGS_DELTA, text='{"q":"x"}'),
        ChatEvent(T.SERVER_TOOL_RESULT, sub_type="web_search"),
    )
    assert response.tool_calls == ()
    assert response.message is not None
    assert response.message.metadata["server_tools"][0]["name"] == "web_search"


def test_snapshots_are_independent_values() -> None:
    accumulator = ChatAccumulator()
    accumulator.add(ChatEvent(T.CITATION, citation=Citation(url="u")))
    first = accumulator.snapshot()
    accumulator.add(ChatEvent(T.CITATION, citation=Citation(url="v")))
    accumulator.add(ChatEvent(T.TEXT_DELTA, text="more"))
    assert len(first.citations) == 1
    assert first.text == ""
    assert isinstance(first.citations, tuple)
    assert len(accumulator.snapshot().citations) == 2
