"""Text blocks whose final text (TEXT_END.text) is not what their deltas said, for the
tests of what each consumer shows: the adapters, the terminal renderer, the live view and
the gateway's real clients."""

from __future__ import annotations

from typing import Any

from responses_frames import rewritten_stream

from solon_events import ChatEvent, ChatEventFilter, ChatEventType, replay

T = ChatEventType
STREAMED = "It ran successfully."
FINAL = "It ran successfully in the container."


def rewritten_frames() -> list[dict[str, Any]]:
    """An OpenAI Responses stream whose ``output_text.done`` rewrites its deltas
    (STREAMED) into FINAL."""
    return rewritten_stream(("response.output_text.done",))


def rewritten_events() -> list[ChatEvent]:
    """Every event ``replay()`` makes of :func:`rewritten_frames`."""
    events: list[ChatEvent] = []
    frames = rewritten_frames()
    replay(frames, dialect="openai-responses", event_filter=ChatEventFilter.all()).subscribe(
        events.append
    )
    return events


BLOCKS = [
    # a final text equal to the deltas
    ChatEvent(T.TEXT_START),
    ChatEvent(T.TEXT_DELTA, text="Sunny."),
    ChatEvent(T.TEXT_END, text="Sunny."),
    # a final text that rewrites them
    ChatEvent(T.TEXT_START, index=1),
    ChatEvent(T.TEXT_DELTA, index=1, text=" Warm"),
    ChatEvent(T.TEXT_END, index=1, text=" Warm and dry."),
    # a final text and no deltas
    ChatEvent(T.TEXT_START, index=2),
    ChatEvent(T.TEXT_END, index=2, text=" Bye."),
    # no final text
    ChatEvent(T.TEXT_START, index=3),
    ChatEvent(T.TEXT_DELTA, index=3, text=" See you."),
    ChatEvent(T.TEXT_END, index=3),
]
"""Four text blocks of one step, each ending differently; the response's text is
BLOCKS_TEXT."""
BLOCKS_TEXT = "Sunny. Warm and dry. Bye. See you."
