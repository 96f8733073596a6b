"""No silent empty answer (#42): a stream whose every frame its dialect does not know, even
one that ends with its completion marker, fails with a ChatProtocolError naming the unknown
event types (the RAW events reach the subscriber first), unless the user accepts unknown
streams (``accept_unknown_streams=True``). Google's retired Interactions vocabulary
(``interaction.start``, ``content.delta``, ... ``interaction.complete``) does exactly this.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
import reactivex
from reactivex import operators as ops
from wire_server import serving_bodies

from solon_events import ChatEventFilter, ChatEventType, ChatModel, ChatProtocolError, replay
from solon_events.operators import parse

T = ChatEventType

RETIRED_INTERACTIONS = [
    {"event_type": "interaction.start", "interaction": {"id": "v1_abc", "status": "in_progress"}},
    {"event_type": "content.start", "index": 0, "content": {"type": "text"}},
    {"event_type": "content.delta", "index": 0, "delta": {"type": "text", "text": "Hello"}},
    {"event_type": "content.delta", "index": 0, "delta": {"type": "text", "text": " there"}},
    {"event_type": "content.stop", "index": 0},
    {
        "event_type": "interaction.complete",
        "interaction": {"id": "v1_abc", "status": "completed", "usage": {"total_tokens": 9}},
    },
]
UNKNOWN = "interaction.start, content.start, content.delta, content.stop, interaction.complete"


def sse(frames: list[Any]) -> bytes:
    body = b"".join(b"data: " + orjson.dumps(frame) + b"\n\n" for frame in frames)
    return body + b"data: [DONE]\n\n"


def events_of(source: Any) -> tuple[list[Any], BaseException | None]:
    events: list[Any] = []
    errors: list[BaseException] = []
    source.subscribe(events.append, errors.append)
    return events, errors[0] if errors else None


def test_a_stream_of_unknown_frames_fails_naming_their_types() -> None:
    stream = replay(
        sse(RETIRED_INTERACTIONS),
        dialect="google-interactions",
        event_filter=ChatEventFilter.all(),
    )
    events, error = events_of(stream)
    assert isinstance(error, ChatProtocolError)
    assert UNKNOWN in str(error) and "accept_unknown_streams=True" in str(error)
    raws = [e for e in events if e.type is T.RAW]
    assert len(raws) == len(RETIRED_INTERACTIONS)  # each frame reached the subscriber first
    assert events.index(raws[-1]) < [e.type for e in events].index(T.ERROR)
    assert events[-1].type is T.ERROR and T.RESPONSE_END not in [e.type for e in events]


def test_accepting_unknown_streams_takes_it_as_an_empty_answer() -> None:
    stream = replay(
        sse(RETIRED_INTERACTIONS), dialect="google-interactions", accept_unknown_streams=True
    )
    response = stream.pipe(ops.last()).run().response
    assert response is not None and response.is_empty and response.finish_reason is None


def test_the_parse_operator_takes_the_same_choice() -> None:
    frames = [orjson.dumps(frame).decode() for frame in RETIRED_INTERACTIONS] + ["[DONE]"]
    with pytest.raises(ChatProtocolError, match=r"content\.delta"):
        reactivex.from_iterable(frames).pipe(parse("google-interactions"), ops.to_list()).run()
    accepted = reactivex.from_iterable(frames).pipe(
        parse("google-interactions", accept_unknown_streams=True), ops.to_list()
    )
    assert accepted.run()[-1].type is T.STEP_END


def test_one_known_frame_that_answers_is_no_unknown_stream() -> None:
    # the current vocabulary's completion, with usage and a status, among unknown frames
    completed = {
        "event_type": "interaction.completed",
        "interaction": {"id": "v1_abc", "status": "completed", "usage": {"total_tokens": 9}},
    }
    frames = [*RETIRED_INTERACTIONS[:3], completed]
    response = replay(sse(frames), dialect="google-interactions").pipe(ops.last()).run().response
    assert response is not None and response.finish_reason == "completed"


def test_an_empty_answer_with_its_finish_reason_still_completes() -> None:
    frames = [
        {"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}}]},
        {"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]
    response = replay(sse(frames), dialect="openai").pipe(ops.last()).run().response
    assert response is not None and response.is_empty and response.finish_reason == "stop"


@pytest.mark.parametrize("accept", [False, True])
def test_a_chat_model_fails_or_accepts_as_asked(accept: bool) -> None:
    with serving_bodies() as server:
        server.answer(sse(RETIRED_INTERACTIONS), "text/event-stream")
        url = server.url + "/v1beta/interactions"
        with ChatModel(
            url, "gemini-x", dialect="google-interactions", accept_unknown_streams=accept
        ) as model:
            if accept:
                assert model.prompt("hi").call().is_empty
            else:
                with pytest.raises(ChatProtocolError, match=r"interaction\.complete"):
                    model.prompt("hi").call()
