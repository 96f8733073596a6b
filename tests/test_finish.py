"""One finish vocabulary (#42): every response says why it ended in one small vocabulary
(``response.finish``: stop, length, tool_calls, content_filter, error, other), with the
provider's own word kept beside it (``finish_reason``), in every dialect; the provider-format
encoders write each format's own word back from it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import orjson
import pytest
from reactivex import operators as ops
from routing_runs import collect
from wire_messages import Call, Message, Said, encode_all, events_of, read_back

from solon_events import (
    ChatEvent,
    ChatEventFilter,
    ChatEventType,
    ChatModel,
    ChatResponse,
    FinishReason,
    Usage,
    replay,
)
from solon_events.adapters.native import decode_event, encode_event
from solon_events.adapters.provider_formats import WIRE_FORMATS, response_body, wire_encoder
from solon_events.adapters.provider_formats.base import FINISH_WORDS
from solon_events.cli import ROUTES
from solon_events.devserver import RunningServer
from solon_events.event_model.finish import FINISH_REASONS, finish_reason_of, unified_finish

T = ChatEventType
F = FinishReason
Build = Callable[..., ChatModel]


def test_the_vocabulary() -> None:
    assert ",".join(F) == "stop,length,tool_calls,content_filter,error,other"
    assert F.STOP == "stop" and str(F.TOOL_CALLS) == "tool_calls"
    assert orjson.dumps({"finish": F.LENGTH}) == b'{"finish":"length"}'
    assert all(word == word.lower() for word in FINISH_REASONS)


SAID = {
    F.STOP: ["stop", "completed", "end_turn", "STOP", "COMPLETE", None],
    F.LENGTH: ["max_output_tokens", "incomplete", "MAX_TOKENS"],
    F.TOOL_CALLS: ["requires_action", "tool_use"],
    F.CONTENT_FILTER: ["SAFETY", "RECITATION", "guardrail_intervened", "refusal"],
    F.ERROR: ["MALFORMED_FUNCTION_CALL", "ERROR", "failed"],
    F.OTHER: ["cancelled", "something new"],
}
"""Words of the providers and what they say, for a step without tool calls."""


@pytest.mark.parametrize(
    ("word", "unified"), [(word, reason) for reason, words in SAID.items() for word in words]
)
def test_each_word_and_its_reason(word: str | None, unified: F) -> None:
    assert unified_finish(word) is unified
    # a stop of a step that made calls is a tool-call finish (Gemini's STOP, the Responses
    # API's completed); any other reason stays what it is
    assert unified_finish(word, True) is (F.TOOL_CALLS if unified is F.STOP else unified)


def test_a_response_takes_the_vocabulary_or_a_word() -> None:
    assert ChatResponse(finish="length").finish is F.LENGTH
    assert ChatResponse(finish="end_turn").finish is F.STOP
    assert ChatResponse().finish is None and finish_reason_of(None) is None


# --- every dialect, over the embedded provider


@pytest.mark.parametrize("dialect", list(ROUTES))
def test_the_same_answer_ends_with_one_reason_on_every_route(
    server: RunningServer, make_model: Build, dialect: str
) -> None:
    events = (
        make_model(server, "think", dialect)
        .prompt("Think, then answer.")
        .event_filter(ChatEventFilter.all())
        .stream()
        .pipe(ops.to_list())
        .run()
    )
    end = events[-1]
    assert end.type is T.RESPONSE_END and end.response is not None
    assert end.finish is end.response.finish is F.STOP
    assert end.response.finish_reason  # the provider's own word, kept beside it
    step_end = [e for e in events if e.type is T.STEP_END][-1]
    assert step_end.finish is F.STOP


@pytest.mark.parametrize("dialect", list(ROUTES))
def test_a_step_that_calls_a_tool_ends_with_tool_calls(
    server: RunningServer, make_model: Build, dialect: str
) -> None:
    model = make_model(server, "weather", dialect)
    response = model.prompt("Weather in Lyon?").tools(get_weather).auto_tool_call(False).call()
    assert response.tool_calls and response.finish is F.TOOL_CALLS


def get_weather(city: str) -> str:
    """Current weather in a city.

    Args:
        city: The city's name.
    """
    return "sunny"


def test_a_failed_response_ends_with_error(server: RunningServer, make_model: Build) -> None:
    model = make_model(server, "error-frame", max_retries=0)
    events, error = collect(model.prompt("hi").event_filter(ChatEventFilter.all()).stream())
    assert error is not None
    error = events[-1]
    assert error.type is T.ERROR and error.finish is F.ERROR
    assert error.response is not None and error.response.text == "Partial answer"


# --- the words each dialect says, read from their frames


def last(frames: list[Any], dialect: str) -> ChatEvent:
    events: list[ChatEvent] = []
    replay(frames, dialect=dialect, event_filter=ChatEventFilter.all()).subscribe(
        events.append, lambda _error: None
    )
    return events[-1]


WINDOW = "model_context_window_exceeded"


def incomplete(reason: str) -> list[dict[str, Any]]:
    response = {"id": "r", "status": "incomplete", "incomplete_details": {"reason": reason}}
    item = {"id": "m", "type": "message", "role": "assistant", "content": []}
    text = {"item_id": "m", "output_index": 0, "content_index": 0}
    return [
        {"type": "response.created", "response": {"id": "r", "status": "in_progress"}},
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {"type": "response.output_text.delta", **text, "delta": "Hi"},
        {"type": "response.incomplete", "response": response},
    ]


def gemini(reason: str) -> list[dict[str, Any]]:
    candidate = {"content": {"role": "model", "parts": [{"text": "Hi"}]}, "index": 0}
    return [{"candidates": [{**candidate, "finishReason": reason}]}]


def bedrock(reason: str) -> list[dict[str, Any]]:
    return [
        {"messageStart": {"role": "assistant"}},
        {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": "Hi"}}},
        {"contentBlockStop": {"contentBlockIndex": 0}},
        {"messageStop": {"stopReason": reason}},
    ]


def interactions(status: str) -> list[dict[str, Any]]:
    return [
        {"event_type": "interaction.created", "interaction": {"id": "i", "status": "in_progress"}},
        {"event_type": "step.start", "index": 0, "step": {"type": "model_output"}},
        {"event_type": "step.delta", "index": 0, "delta": {"type": "text", "text": "Hi"}},
        {"event_type": "step.stop", "index": 0},
        {"event_type": "interaction.completed", "interaction": {"id": "i", "status": status}},
    ]


def anthropic(reason: str) -> list[dict[str, Any]]:
    message = {"id": "m", "type": "message", "role": "assistant", "content": [], "usage": {}}
    return [
        {"type": "message_start", "message": message},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": reason}, "usage": {"output_tokens": 1}},
        {"type": "message_stop"},
    ]


def ollama(reason: str) -> list[dict[str, Any]]:
    return [
        {"message": {"role": "assistant", "content": "Hi"}, "done": False},
        {"message": {"role": "assistant", "content": ""}, "done": True, "done_reason": reason},
    ]


def cohere(reason: str) -> list[dict[str, Any]]:
    return [
        {"type": "message-start", "id": "c", "delta": {"message": {"role": "assistant"}}},
        {
            "type": "content-start",
            "index": 0,
            "delta": {"message": {"content": {"type": "text", "text": ""}}},
        },
        {"type": "content-delta", "index": 0, "delta": {"message": {"content": {"text": "Hi"}}}},
        {"type": "content-end", "index": 0},
        {"type": "message-end", "delta": {"finish_reason": reason}},
    ]


SAID_BY = {
    "openai-responses": {"max_output_tokens": F.LENGTH, "content_filter": F.CONTENT_FILTER},
    "gemini": {
        "SAFETY": F.CONTENT_FILTER,
        "RECITATION": F.CONTENT_FILTER,
        "MALFORMED_FUNCTION_CALL": F.ERROR,
        "MAX_TOKENS": F.LENGTH,
        "LANGUAGE": F.OTHER,
    },
    "bedrock": {"guardrail_intervened": F.CONTENT_FILTER, "max_tokens": F.LENGTH},
    "google-interactions": {"incomplete": F.LENGTH, "cancelled": F.OTHER},
    "anthropic": {"refusal": F.CONTENT_FILTER, "pause_turn": F.STOP, WINDOW: F.LENGTH},
    "ollama": {"length": F.LENGTH, "load": F.OTHER},
    "cohere": {"MAX_TOKENS": F.LENGTH},
}
"""What each dialect's words say (the frames of each made by its function below)."""
STREAMS = {
    "openai-responses": incomplete,
    "gemini": gemini,
    "bedrock": bedrock,
    "google-interactions": interactions,
    "anthropic": anthropic,
    "ollama": ollama,
    "cohere": cohere,
}


@pytest.mark.parametrize(
    ("dialect", "word", "unified"),
    [(dialect, word, reason) for dialect, said in SAID_BY.items() for word, reason in said.items()],
)
def test_each_dialects_words(dialect: str, word: str, unified: F) -> None:
    end = last(STREAMS[dialect](word), dialect)
    assert end.type is T.RESPONSE_END and end.response is not None
    assert (end.response.finish_reason, end.finish) == (word, unified)


def test_cohere_error_fails_the_response_with_error() -> None:
    end = last(cohere("ERROR"), "cohere")
    assert end.type is T.ERROR and end.finish is F.ERROR


# --- our own JSON and the provider formats


def test_our_json_carries_it_and_reads_it_back() -> None:
    end = last(gemini("SAFETY"), "gemini")
    plain = orjson.loads(encode_event(end))
    assert plain["response"]["finish"] == "content_filter"
    assert plain["response"]["finish_reason"] == "SAFETY"
    assert decode_event(encode_event(end)).finish is F.CONTENT_FILTER


def streamed(finish: F) -> list[ChatEvent]:
    """A response that says "Hi" (and calls ``f`` for tool_calls), ending with ``finish``."""
    call = Call(id="call_1", name="f", fragments=('{"a": 1}',))
    blocks = (Said(("Hi",)), call) if finish is F.TOOL_CALLS else (Said(("Hi",)),)
    usage = Usage(prompt_tokens=3, completion_tokens=2)
    events = events_of(Message(blocks, reason="", usage=usage))
    return [
        e.evolve(response=attrs.evolve(e.response, finish_reason=None, finish=finish))
        if e.response is not None
        else e
        for e in events
    ]


CARRIED = {  # what each format can say of each reason (else its plain stop)
    "openai": {F.STOP, F.LENGTH, F.TOOL_CALLS, F.CONTENT_FILTER},
    "openai-responses": {F.STOP, F.LENGTH, F.TOOL_CALLS, F.CONTENT_FILTER},
    "anthropic": {F.STOP, F.LENGTH, F.TOOL_CALLS, F.CONTENT_FILTER},
    "gemini": set(F),
    "ollama": {F.STOP, F.LENGTH, F.TOOL_CALLS},
    "cohere": {F.STOP, F.LENGTH, F.TOOL_CALLS, F.ERROR},
    "google-interactions": {F.STOP, F.LENGTH, F.TOOL_CALLS, F.ERROR},
}


@pytest.mark.parametrize("finish", list(F))
@pytest.mark.parametrize("format", sorted(WIRE_FORMATS))
def test_each_format_writes_its_own_word_back(format: str, finish: F) -> None:
    events = streamed(finish)
    body = encode_all(wire_encoder(format, model="m"), events)
    read, errors = read_back(format, body)
    expected = finish if finish in CARRIED[format] else F.STOP
    if finish is F.ERROR and format in ("cohere", "google-interactions"):
        # their error words (ERROR, failed) fail the stream
        assert errors and read[-1].type is T.ERROR and read[-1].finish is F.ERROR
        return
    assert not errors and read[-1].type is T.RESPONSE_END
    assert read[-1].finish is expected
    response = read[-1].response
    assert response is not None
    if format in FINISH_WORDS:
        assert response.finish_reason == FINISH_WORDS[format][expected]
    whole = response_body(format, events[-1].response, model="m")  # type: ignore[arg-type]
    assert orjson.dumps(whole)  # the non-streaming body (the gateway's clients read it)
