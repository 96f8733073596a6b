"""A finished stream leaves no reference cycle behind.

Its objects are then freed the moment the stream is, by reference counting, instead of
waiting for the garbage collector; on a short recording those collections cost about a
fifth of the whole replay. The check: with the collector off, replay a stream, then count
the library's objects the next collection finds unreachable.
"""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import orjson
import pytest
import reactivex
from aiohttp import web

from solon_events import ChatEventFilter, ChatEventType, ChatModel, parse, replay
from solon_events.operators import aggregate, guard, normalize
from solon_events.serve import serving

T = ChatEventType


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return {"id": "c1", "object": "chat.completion.chunk", "model": "m", "choices": [choice]}


OPENAI = [
    _chunk({"content": "Hi"}),
    _chunk({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                            "function": {"name": "f", "arguments": "{\"a\":"}}]}),
    _chunk({"tool_calls": [{"index": 0, "function": {"arguments": "1}"}}]}, "tool_calls"),
    {"id": "c1", "object": "chat.completion.chunk", "choices": [],
     "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}},
]  # fmt: skip

ANTHROPIC = [
    {"type": "message_start", "message": {"id": "msg_1", "model": "claude", "content": [],
     "usage": {"input_tokens": 5, "output_tokens": 1}}},
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
    {"type": "content_block_stop", "index": 0},
    {"type": "content_block_start", "index": 1,
     "content_block": {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}},
    {"type": "content_block_delta", "index": 1,
     "delta": {"type": "input_json_delta", "partial_json": "{\"a\":1}"}},
    {"type": "content_block_stop", "index": 1},
    {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}},
    {"type": "message_stop"},
]  # fmt: skip

GEMINI = [
    {"candidates": [{"content": {"role": "model", "parts": [{"text": "Hi"}]}, "index": 0}],
     "responseId": "r1", "modelVersion": "g"},
    {"candidates": [{"content": {"role": "model", "parts": [
        {"functionCall": {"name": "f", "args": {"a": 1}}, "thoughtSignature": "sig"}]},
      "finishReason": "STOP", "index": 0}],
     "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 9, "totalTokenCount": 14},
     "responseId": "r1", "modelVersion": "g"},
]  # fmt: skip

RESPONSES = [
    {"type": "response.created", "response": {"id": "resp_1", "status": "in_progress",
     "model": "m", "output": []}},
    {"type": "response.output_item.added", "output_index": 0, "item": {"id": "msg_1",
     "type": "message", "status": "in_progress", "role": "assistant", "content": []}},
    {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0,
     "content_index": 0, "delta": "Hi"},
    {"type": "response.output_item.done", "output_index": 0, "item": {"id": "msg_1",
     "type": "message", "status": "completed", "role": "assistant", "content": []}},
    {"type": "response.output_item.added", "output_index": 1, "item": {"id": "fc_1",
     "type": "function_call", "call_id": "call_1", "name": "f", "arguments": ""}},
    {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 1,
     "delta": "{\"a\":1}"},
    {"type": "response.output_item.done", "output_index": 1, "item": {"id": "fc_1",
     "type": "function_call", "call_id": "call_1", "name": "f", "arguments": "{\"a\":1}"}},
    {"type": "response.completed", "response": {"id": "resp_1", "status": "completed",
     "model": "m", "output": [], "usage": {"input_tokens": 5, "output_tokens": 9,
     "total_tokens": 14}}},
]  # fmt: skip

OLLAMA = [
    {"model": "llama", "message": {"role": "assistant", "content": "Hi"}, "done": False},
    {"model": "llama", "message": {"role": "assistant", "content": "", "tool_calls": [
        {"function": {"name": "f", "arguments": {"a": 1}}}]}, "done": False},
    {"model": "llama", "message": {"role": "assistant", "content": ""}, "done": True,
     "done_reason": "stop", "prompt_eval_count": 5, "eval_count": 9},
]  # fmt: skip

STREAMS = {
    "openai": OPENAI,
    "anthropic": ANTHROPIC,
    "gemini": GEMINI,
    "openai-responses": RESPONSES,
    "ollama": OLLAMA,
}


@pytest.fixture
def collector_off() -> Iterator[None]:
    """The garbage collector off for the test, so that only the test's own run is counted."""
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def cyclic_garbage(run: Callable[[], Any]) -> list[str]:
    """The library's objects that ``run()`` left in reference cycles, by type name."""
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        run()
        gc.collect()
        found = [
            type(thing).__qualname__
            for thing in gc.garbage
            if type(thing).__module__.startswith("solon_events")
        ]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    return found


def replayed(frames: list[Any], dialect: str, event_filter: Any = None) -> Callable[[], int]:
    """A run that replays ``frames`` and returns how many events it delivered (without
    ``on_error``, a failure raises)."""

    def run() -> int:
        events: list[Any] = []
        replay(frames, dialect, event_filter).subscribe(events.append)
        return len(events)

    return run


@pytest.mark.usefixtures("collector_off")
@pytest.mark.parametrize("dialect", list(STREAMS))
def test_a_replayed_stream_leaves_no_cycle(dialect: str) -> None:
    run = replayed(STREAMS[dialect], dialect)
    assert run() > 6  # the stream is a real one: text, a tool call, the boundaries
    assert cyclic_garbage(run) == []


@pytest.mark.usefixtures("collector_off")
@pytest.mark.parametrize(
    "event_filter",
    [ChatEventFilter.all(), ChatEventFilter.DEFAULT, lambda event: event.type is not T.USAGE],
    ids=["all", "default", "predicate"],
)
def test_no_cycle_whatever_the_filter(event_filter: Any) -> None:
    assert cyclic_garbage(replayed(OPENAI, "openai", event_filter)) == []


@pytest.mark.usefixtures("collector_off")
def test_no_cycle_in_a_recording_of_several_responses() -> None:
    # two provider responses in one recording: the stage's next-step callback is in play
    frames = [*RESPONSES, *RESPONSES]
    run = replayed(frames, "openai-responses", ChatEventFilter.all())
    events: list[Any] = []
    replay(frames, "openai-responses", ChatEventFilter.all()).subscribe(events.append)
    assert [e.step for e in events if e.type is T.STEP_START] == [0, 1]
    assert cyclic_garbage(run) == []


@pytest.mark.usefixtures("collector_off")
def test_no_cycle_through_the_rx_operators() -> None:
    def run() -> None:
        reactivex.from_iterable(OPENAI).pipe(
            parse("openai"), normalize(), aggregate(), guard(ChatEventFilter.all())
        ).subscribe(lambda _event: None)

    assert cyclic_garbage(run) == []


async def test_an_astream_cancelled_while_it_reads_is_freed_without_the_collector(
    collector_off: None,
) -> None:
    """A task reading ``astream()``, cancelled while the provider is silent, keeps the
    CancelledError; its traceback holds the frames the read went through. Nothing of them
    may hold the task again (the response's caller record and the read's watchdog did):
    such a cycle kept each cancelled response's buffers until the collector ran, which is
    how a gateway kept the memory of the clients it had dropped."""
    frame = b"data: " + orjson.dumps(_chunk({"content": "Hi"})) + b"\n\n"

    async def first_words_then_silence(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(frame)
        await asyncio.Event().wait()
        return response

    app = web.Application()
    app.router.add_post("/v1/chat/completions", first_words_then_silence)
    async with serving(app) as url:
        model = ChatModel(url + "/v1/chat/completions", "m")
        try:
            text = asyncio.Event()

            async def read() -> None:
                async for event in model.prompt("Hi").astream():
                    if event.type is T.TEXT_DELTA:
                        text.set()

            task = asyncio.ensure_future(read())
            await asyncio.wait({asyncio.ensure_future(text.wait()), task}, timeout=30)
            assert text.is_set() and not task.done()
            task.cancel()
            await asyncio.wait({task})
            assert task.cancelled()
            freed = weakref.ref(task)
            del task
            assert freed() is None, "the cancelled task is kept by a reference cycle"
        finally:
            await asyncio.to_thread(model.close)
