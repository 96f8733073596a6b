"""The Interactions API dialect: step events -> semantic events, and request building.

The frames are small streams written from the Interactions API reference (the
``InteractionSSEEvent`` union of the official ``google-genai`` SDK: ``interaction.created``,
``step.start`` / ``step.delta`` / ``step.stop``, ``interaction.completed``, ``error``). The
requests are compared with what the official SDK itself sends for the same conversation.
The public recordings (``tests/recordings/google-interactions``) are replayed against the
SDK's reading of them in ``tests/conformance/test_recordings.py``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import orjson
import pytest
from dialect_runs import assert_same_outcome, block, feed, odd_frames, of, outcome, shape
from extra_modules import needed
from hypothesis import given, settings
from sdk_oracles import recording_paths, sdk_http_client

from solon_events import (
    ChatProtocolError,
    ChatRequest,
    ProviderError,
    SystemMessage,
    ToolMessage,
    ToolSpec,
    UserMessage,
)
from solon_events.core.parsing import ParseStage
from solon_events.dialects import dialect_names, get_dialect, google_interactions
from solon_events.dialects.google_interactions import (
    GoogleInteractionsDialect,
    interactions_url,
    interactions_usage,
)
from solon_events.dialects.request import Endpoint
from solon_events.dialects.sniff import claims_frame
from solon_events.event_model.events import ChatEvent, ChatEventType
from solon_events.event_model.results import AssistantMessage, FileBlock, ImageBlock, ToolCall

T = ChatEventType
DIALECT = GoogleInteractionsDialect()


# ---------------------------------------------------------------- frame builders


def created(interaction_id: str = "v1_abc", model: str = "gemini-2.5-flash") -> dict[str, Any]:
    interaction = {"id": interaction_id, "status": "in_progress", "model": model}
    return {"interaction": interaction, "event_type": "interaction.created"}


def start(index: int, **step: Any) -> dict[str, Any]:
    return {"index": index, "step": step, "event_type": "step.start"}


def delta(index: int, **payload: Any) -> dict[str, Any]:
    return {"index": index, "delta": payload, "event_type": "step.delta"}


def text(index: int, value: str) -> dict[str, Any]:
    return delta(index, text=value, type="text")


def stop(index: int) -> dict[str, Any]:
    return {"index": index, "event_type": "step.stop"}


USAGE = {
    "total_tokens": 148,
    "total_input_tokens": 7,
    "total_cached_tokens": 2,
    "total_output_tokens": 26,
    "total_tool_use_tokens": 3,
    "total_thought_tokens": 112,
}


def completed(status: str = "completed", usage: Any = USAGE, **more: Any) -> dict[str, Any]:
    interaction = {"id": "v1_abc", "status": status, "usage": usage}
    interaction.update(more)
    return {"interaction": interaction, "event_type": "interaction.completed"}


def run(frames: Iterable[Any]) -> tuple[list[ChatEvent], ParseStage]:
    """Feed ``frames`` to the dialect the way the parse operator does."""
    return feed(DIALECT, frames, response_id="resp-1", end=DIALECT.end_of_stream)


def general(frames: Iterable[Any]) -> tuple[list[ChatEvent], ParseStage]:
    """Feed ``frames`` to the general code only: what the text fast path must match."""
    return feed(
        google_interactions._parse_general, frames, response_id="resp-1", end=DIALECT.end_of_stream
    )


# ---------------------------------------------------------------- lifecycle, text, thoughts


def test_get_dialect_knows_google_interactions() -> None:
    assert "google-interactions" in dialect_names()
    assert isinstance(get_dialect("google-interactions"), GoogleInteractionsDialect)


def test_a_thought_then_text_interaction() -> None:
    status = {"interaction_id": "v1_abc", "status": "in_progress"}
    events, stage = run(
        [
            created(),
            {**status, "event_type": "interaction.status_update"},
            start(0, type="thought"),
            delta(0, signature="c2ln", type="thought_signature"),
            delta(0, content={"type": "text", "text": "Sum it."}, type="thought_summary"),
            stop(0),
            start(1, type="model_output"),
            text(1, "It is "),
            text(1, "4."),
            stop(1),
            completed(),
        ]
    )
    assert shape(events) == [
        ("STATUS", -1, "in_progress"),
        ("STATUS", -1, "in_progress"),
        ("THINKING_START", 0, None),
        ("THINKING_SIGNATURE", 0, "c2ln"),
        ("THINKING_DELTA", 0, "Sum it."),
        ("THINKING_END", 0, None),
        *block("TEXT", 1, "It is ", "4."),
        ("USAGE", -1, None),
    ]
    assert [e.raw_type for e in of(events, T.STATUS)] == [
        "interaction.created",
        "interaction.status_update",
    ]
    assert (stage.provider_response_id, stage.model) == ("v1_abc", "gemini-2.5-flash")
    assert stage.finished and stage.finish_reason == "completed"


def test_a_stateless_interaction_has_no_id() -> None:
    _, stage = run([created(""), completed(usage={}, id="")])
    assert stage.provider_response_id is None


def test_a_step_s_first_content_and_summary_come_with_its_start() -> None:
    events, _ = run(
        [
            start(0, type="thought", signature="c2ln", summary=[{"type": "text", "text": "Hm."}]),
            stop(0),
            start(1, type="model_output", content=[{"type": "text", "text": "Hi"}]),
            stop(1),
            completed(),
        ]
    )
    assert shape(of(events, T.THINKING_DELTA, T.THINKING_SIGNATURE, T.TEXT_DELTA)) == [
        ("THINKING_DELTA", 0, "Hm."),
        ("THINKING_SIGNATURE", 0, "c2ln"),
        ("TEXT_DELTA", 1, "Hi"),
    ]


def test_steps_left_open_are_closed_by_the_completed_interaction() -> None:
    events, _ = run([start(0, type="model_output"), text(0, "cut"), completed()])
    assert shape(events)[2:] == [("TEXT_END", 0, None), ("USAGE", -1, None)]


# ---------------------------------------------------------------- function calls


def test_a_function_call_streams_its_arguments_and_requires_action() -> None:
    events, stage = run(
        [
            start(
                0, id="fc_1", signature="", type="function_call", name="getWeather", arguments={}
            ),
            delta(0, arguments='{"location":', type="arguments_delta"),
            delta(0, arguments='"Paris"}', type="arguments_delta"),
            stop(0),
            completed("requires_action"),
        ]
    )
    (call_start,) = of(events, T.TOOL_CALL_START)
    assert (call_start.tool_call_id, call_start.tool_call.name) == ("fc_1", "getWeather")
    assert [e.text for e in of(events, T.TOOL_CALL_ARGS_DELTA)] == ['{"location":', '"Paris"}']
    (end,) = of(events, T.TOOL_CALL_END)
    assert end.tool_call == ToolCall(
        id="fc_1", name="getWeather", arguments={"location": "Paris"}, index=0
    )
    assert not of(events, T.THINKING_SIGNATURE)  # an empty signature is none
    assert stage.finish_reason == "requires_action"


def test_a_call_s_whole_arguments_and_signature_come_with_its_start() -> None:
    step = {"id": "fc_2", "type": "function_call", "name": "f", "arguments": {"a": 1}}
    events, _ = run([start(3, signature="c2ln", **step), stop(3), completed("requires_action")])
    (signature,) = of(events, T.THINKING_SIGNATURE)
    assert (signature.text, signature.tool_call_id) == ("c2ln", "fc_2")
    (end,) = of(events, T.TOOL_CALL_END)
    assert (end.tool_call.arguments, end.tool_call.arguments_str) == ({"a": 1}, '{"a":1}')


# ---------------------------------------------------------------- built-in tools, citations, media


def test_a_built_in_tool_call_and_its_result() -> None:
    queries = {"queries": ["AI news"]}
    item = {"url": "https://news.example/ai", "title": "AI news"}
    events, _ = run(
        [
            start(0, id="gs_1", signature="", type="google_search_call"),
            delta(0, type="google_search_call", arguments=queries),
            stop(0),
            start(1, call_id="gs_1", signature="", type="google_search_result"),
            delta(1, type="google_search_result", result=[item, {"search_suggestions": "<p>"}]),
            stop(1),
            completed(),
        ]
    )
    (begin,) = of(events, T.SERVER_TOOL_START)
    assert (begin.tool_call_id, begin.sub_type) == ("gs_1", "google_search")
    (arguments,) = of(events, T.SERVER_TOOL_ARGS_DELTA)
    assert json.loads(arguments.text) == queries
    (result,) = of(events, T.SERVER_TOOL_RESULT)
    assert (result.tool_call_id, result.sub_type, result.raw_type) == (
        "gs_1",
        "google_search",
        "google_search_result",
    )
    assert result.tool_call.arguments == queries and result.attrs["is_error"] is False
    (found,) = of(events, T.SEARCH_RESULT)
    assert (found.search_result.url, found.search_result.title) == (item["url"], item["title"])


def test_text_annotations_are_citations() -> None:
    annotations = [
        {
            "start_index": 3,
            "end_index": 9,
            "url": "https://a.x",
            "title": "a.x",
            "type": "url_citation",
        },
        {"document_uri": "files/1", "file_name": "f.pdf", "type": "file_citation"},
    ]
    events, _ = run(
        [
            start(0, type="model_output"),
            text(0, "Hello world"),
            delta(0, annotations=annotations, type="text_annotation_delta"),
            stop(0),
            completed(),
        ]
    )
    citations = [e.citation for e in of(events, T.CITATION)]
    assert [(c.url, c.title, c.start_index, c.end_index, c.type) for c in citations] == [
        ("https://a.x", "a.x", 3, 9, "url_citation"),
        ("files/1", "f.pdf", None, None, "file_citation"),
    ]


def test_media_deltas_are_blocks() -> None:
    events, _ = run(
        [
            start(0, type="model_output"),
            delta(0, type="image", mime_type="image/png", data="AAAA"),
            delta(0, type="audio", mime_type="audio/wav", uri="files/a"),
            stop(0),
            completed(),
        ]
    )
    blocks = [e.block for e in of(events, T.MEDIA_DONE)]
    assert blocks == [
        ImageBlock(data="AAAA", mime_type="image/png"),
        FileBlock(url="files/a", mime_type="audio/wav"),
    ]


# ---------------------------------------------------------------- the end: usage, status, errors


def test_usage_counts_thoughts_and_tool_prompts() -> None:
    usage = interactions_usage(USAGE)
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (10, 138, 148)
    assert (usage.thinking_tokens, usage.cache_read_input_tokens) == (112, 2)
    assert usage.source == USAGE
    assert interactions_usage({"total_input_tokens": 4}).total_tokens == 4


@pytest.mark.parametrize("status", ["completed", "requires_action", "incomplete", "cancelled"])
def test_the_status_is_the_finish_reason(status: str) -> None:
    _, stage = run([created(), completed(status)])
    assert stage.finished and stage.finish_reason == status and stage.failure is None


def test_a_failed_interaction_and_an_error_event_are_provider_failures() -> None:
    error = {"code": "resource_exhausted", "message": "quota"}
    frames = [start(0, type="model_output"), text(0, "partial"), completed("failed", error=error)]
    events, stage = run(frames)
    assert isinstance(stage.failure, ProviderError) and "quota" in str(stage.failure)
    assert [e.text for e in of(events, T.TEXT_DELTA)] == ["partial"]
    _, stage = run([created(), {"event_type": "error", "error": error}])
    assert isinstance(stage.failure, ProviderError)
    assert stage.failure.provider_error == error


def test_steps_of_a_completed_interaction_are_read_when_none_streamed() -> None:
    steps = [
        {"type": "user_input", "content": [{"type": "text", "text": "hi"}]},
        {"type": "thought", "signature": "c2ln"},
        {"type": "model_output", "content": [{"type": "text", "text": "Hello!"}]},
        {"type": "function_call", "id": "fc_1", "name": "f", "arguments": {"x": 1}},
    ]
    events, _ = run([completed("requires_action", steps=steps)])
    assert [e.text for e in of(events, T.TEXT_DELTA)] == ["Hello!"]
    assert [e.text for e in of(events, T.THINKING_SIGNATURE)] == ["c2ln"]
    (end,) = of(events, T.TOOL_CALL_END)
    assert (end.tool_call.id, end.tool_call.arguments) == ("fc_1", {"x": 1})
    streamed = [start(0, type="model_output"), text(0, "Hello!"), stop(0)]
    events, _ = run([*streamed, completed(steps=steps)])
    assert [e.text for e in of(events, T.TEXT_DELTA)] == ["Hello!"]  # not twice


def test_unknown_events_steps_and_deltas_are_raw() -> None:
    events, _ = run(
        [
            {"event_type": "interaction.heartbeat"},
            start(0, type="brand_new_step"),
            delta(0, type="brand_new_delta"),
            stop(0),
            stop(7),
            completed(),
        ]
    )
    assert [e.raw_type for e in of(events, T.RAW)] == [
        "interaction.heartbeat",
        "step.start:brand_new_step",
        "step.delta:brand_new_delta",
        "step.stop:brand_new_step",
        "step.stop",
    ]
    with pytest.raises(ChatProtocolError, match="frame 1"):
        run(["not an object"])


# ---------------------------------------------------------------- the text fast path


PATHS = recording_paths("google-interactions")
RECORDED = [
    [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
    for path in PATHS
]


@pytest.mark.parametrize("frames", RECORDED, ids=[p.name for p in PATHS])
def test_the_fast_path_gives_what_the_general_code_gives(frames: list[Any]) -> None:
    assert outcome(*run(frames)) == outcome(*general(frames))


def test_text_deltas_take_the_fast_path(record_frames: Any) -> None:
    calls = record_frames(google_interactions, "_parse_general")
    frames = [start(0, type="model_output"), text(0, "a"), text(0, ""), stop(0), completed()]
    run(frames)
    assert calls == [frames[0], frames[3], frames[4]]


ODD_PLACES = [("event_type",), ("index",), ("delta",), ("delta", "type"), ("delta", "text")]


@settings(max_examples=150, deadline=None, database=None)
@given(frames=odd_frames(RECORDED, [*ODD_PLACES, ("step",)], ["step.delta", "text", 1]))
def test_the_fast_path_matches_the_general_code_on_odd_frames(frames: list[Any]) -> None:
    assert_same_outcome(run, general, frames)


# ---------------------------------------------------------------- sniffing


def test_an_error_event_is_claimed_by_google_interactions_alone() -> None:
    # the recordings' frames: tests/conformance/test_recordings.py
    error = {"event_type": "error", "error": {"code": "x", "message": "y"}}
    assert [name for name in dialect_names() if claims_frame(name, error)] == [
        "google-interactions"
    ]


# ---------------------------------------------------------------- the request


WEATHER = ToolSpec(
    name="weather",
    description="The weather in a city",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)


def test_the_request_is_what_the_google_genai_sdk_sends() -> None:
    genai = needed("google.genai")
    from google.genai import types

    sent: list[Any] = []
    body = b"data: " + orjson.dumps(completed()) + b"\n\n"
    options = types.HttpOptions(
        base_url="http://sdk.test", httpx_client=sdk_http_client(body, sent)
    )
    client = genai.Client(api_key="k", http_options=options)
    list(
        client.interactions.create(
            model="gemini-2.5-flash",
            system_instruction="Be brief.",
            input=[
                {"type": "user_input", "content": [{"type": "text", "text": "Weather?"}]},
                {"type": "thought", "signature": "c2ln"},
                {
                    "type": "function_call",
                    "id": "fc_1",
                    "name": "weather",
                    "arguments": {"city": "Paris"},
                },
                {"type": "function_result", "call_id": "fc_1", "name": "weather", "result": "18C"},
            ],
            tools=[
                {
                    "type": "function",
                    "name": "weather",
                    "description": "The weather in a city",
                    "parameters": dict(WEATHER.parameters),
                }
            ],
            generation_config={"temperature": 0.2, "max_output_tokens": 100},
            stream=True,
        )
    )
    request = ChatRequest(
        model="gemini-2.5-flash",
        messages=(
            SystemMessage(text="Be brief."),
            UserMessage(text="Weather?"),
            AssistantMessage(
                tool_calls=(ToolCall(id="fc_1", name="weather", arguments={"city": "Paris"}),),
                metadata={"thinking_signature": "c2ln"},
            ),
            ToolMessage(tool_call_id="fc_1", name="weather", content="18C"),
        ),
        tools=(WEATHER,),
        options={"temperature": 0.2, "max_tokens": 100},
    )
    url, body = sent[0]
    ours = DIALECT.build_request(request, api_url="http://sdk.test/v1", api_key="k")
    assert dict(ours.body) == body
    assert ours.url == url == "http://sdk.test/v1/interactions"
    assert ours.headers["x-goog-api-key"] == "k"


def test_the_request_s_other_shapes() -> None:
    request = ChatRequest(
        model="m",
        messages=(
            UserMessage(text="Look", blocks=(ImageBlock(url="data:image/jpeg;base64,AAAA"),)),
            AssistantMessage(text="A cat.", thinking="Furry."),
            UserMessage(blocks=(FileBlock(url="files/doc", mime_type="application/pdf"),)),
        ),
        options={
            "previous_interaction_id": "v1_prev",
            "tools": [{"type": "google_search"}],
            "stop": "END",
            "generation_config": {"seed": 3},
        },
    )
    built = DIALECT.request_for(request, Endpoint("https://g.example/v1beta/interactions/"))
    assert built.url == "https://g.example/v1beta/interactions"
    assert "x-goog-api-key" not in built.headers
    body = built.body
    assert body["input"] == [
        {
            "type": "user_input",
            "content": [
                {"type": "text", "text": "Look"},
                {"type": "image", "data": "AAAA", "mime_type": "image/jpeg"},
            ],
        },
        {"type": "thought", "summary": [{"type": "text", "text": "Furry."}]},
        {"type": "model_output", "content": [{"type": "text", "text": "A cat."}]},
        {
            "type": "user_input",
            "content": [{"type": "document", "uri": "files/doc", "mime_type": "application/pdf"}],
        },
    ]
    assert body["previous_interaction_id"] == "v1_prev"
    assert body["tools"] == [{"type": "google_search"}]
    assert body["generation_config"] == {"seed": 3, "stop_sequences": ["END"]}
    assert body["stream"] is True


def test_the_url_takes_a_base_or_the_method_url() -> None:
    base = "https://generativelanguage.googleapis.com/v1beta"
    assert interactions_url(base) == f"{base}/interactions"
    assert interactions_url(f"{base}/interactions?x=1") == f"{base}/interactions?x=1"
