"""The adapters without I/O: every recorded stream of ../shared/corpus (and hand-built ones
for what recordings lack) through the Vercel and AG-UI encoders, checked against each
protocol's rules and reassembled into the responses the pipeline aggregated."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest
import reactivex
from final_texts import BLOCKS, BLOCKS_TEXT, FINAL, STREAMED, rewritten_events
from partial_values import long_args_frames
from pydantic import TypeAdapter
from recorded import corpus_cases

from solon_events import (
    AssistantMessage,
    ChatEvent,
    ChatEventFilter,
    ChatEventType,
    ChatResponse,
    Citation,
    ImageBlock,
    JsonDelta,
    JsonDeltaBuilder,
    SearchResult,
    ToolCall,
    ToolCallError,
    Usage,
    replay,
)
from solon_events.adapters import (
    VercelEncoder,
    decode_event,
    encode_event,
    event_to_json,
    to_agui,
    to_vercel,
    vercel_sse,
)
from solon_events.adapters.agui import AguiEncoder, agui_sse
from solon_events.adapters.inputs import messages_from_vercel
from solon_events.adapters.vercel import finish_reason, ui_text

T = ChatEventType


def recorded(path: Path, dialect: str) -> list[ChatEvent]:
    events: list[ChatEvent] = []
    replay(path, dialect=dialect, event_filter=ChatEventFilter.all()).subscribe(
        events.append, lambda error: None
    )
    return events


def tool_loop() -> list[ChatEvent]:
    """A two-step response with a tool call (no id, as Gemini's), its result and usage."""
    call = ToolCall(id=None, name="get_weather", arguments_str='{"city":"Paris"}', index=0)
    usage = Usage(prompt_tokens=10, completion_tokens=5)
    step0 = ChatResponse(tool_calls=(call,), usage=usage, finish_reason="tool_calls")
    step1 = ChatResponse(text="Sunny.", usage=usage, finish_reason="stop")
    rid = "resp_1"
    return [
        ChatEvent(T.RESPONSE_START, response_id=rid),
        ChatEvent(T.STEP_START, response_id=rid),
        ChatEvent(T.TOOL_CALL_START, index=0, tool_call=ToolCall(name="get_weather", index=0)),
        ChatEvent(T.TOOL_CALL_ARGS_DELTA, index=0, text='{"city":'),
        ChatEvent(T.TOOL_CALL_ARGS_DELTA, index=0, text='"Paris"}'),
        ChatEvent(T.TOOL_CALL_END, index=0, tool_call=call),
        ChatEvent(
            T.STATUS,
            sub_type="tool_progress",
            index=0,
            tool_call=call,
            text="asked 1 of 2",
            attrs={"tool_name": "get_weather", "progress": 1, "total": 2},
        ),
        ChatEvent(T.TOOL_RESULT, index=0, tool_call=call, text="18°C"),
        ChatEvent(T.STEP_END, response=step0, usage=usage),
        ChatEvent(T.STEP_START, step=1),
        ChatEvent(T.TEXT_START, step=1),
        ChatEvent(T.TEXT_DELTA, step=1, text="Sunny."),
        ChatEvent(T.TEXT_END, step=1),
        ChatEvent(T.STEP_END, step=1, response=step1, usage=usage),
        ChatEvent(T.RESPONSE_END, step=1, response=step1, usage=usage + usage, response_id=rid),
    ]


# Vercel: the chunk schema of the ai package (uiMessageChunkSchema), and its reader's rules.

REQUIRED: dict[str, dict[str, type | tuple[type, ...]]] = {
    "start": {},
    "start-step": {},
    "finish-step": {},
    "text-start": {"id": str},
    "text-delta": {"id": str, "delta": str},
    "text-end": {"id": str},
    "reasoning-start": {"id": str},
    "reasoning-delta": {"id": str, "delta": str},
    "reasoning-end": {"id": str},
    "tool-input-start": {"toolCallId": str, "toolName": str},
    "tool-input-delta": {"toolCallId": str, "inputTextDelta": str},
    "tool-input-available": {"toolCallId": str, "toolName": str},
    "tool-output-available": {"toolCallId": str},
    "tool-output-error": {"toolCallId": str, "errorText": str},
    "source-url": {"sourceId": str, "url": str},
    "file": {"url": str, "mediaType": str},
    "message-metadata": {"messageMetadata": dict},
    "finish": {},
    "error": {"errorText": str},
    "abort": {},
}
FINISH_REASONS = {"stop", "length", "content-filter", "tool-calls", "error", "other"}


def read_ui_stream(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The steps a UI message stream describes, checked as the ai package's reader does:
    ``[{"text", "reasoning", "calls": {id: {"name", "input", "raw", "output"}}}]``."""
    steps: list[dict[str, Any]] = []
    open_parts: dict[str, str] = {}
    typed: dict[str, str] = {}  # what each part's deltas typed
    calls: dict[str, dict[str, Any]] = {}
    ended = False
    for n, chunk in enumerate(orjson.loads(orjson.dumps(chunks))):
        kind = chunk["type"]
        assert not ended, f"{kind} after the terminal chunk"
        if kind.startswith("data-"):
            assert "data" in chunk
            continue
        for name, expected in REQUIRED[kind].items():
            assert isinstance(chunk.get(name), expected), (kind, name, chunk)
        if kind == "start":
            assert n == 0
        elif kind == "start-step":
            steps.append({"text": "", "reasoning": "", "calls": {}})
        elif kind in ("text-start", "reasoning-start"):
            assert chunk["id"] not in open_parts
            open_parts[chunk["id"]] = kind.split("-")[0]
        elif kind in ("text-delta", "reasoning-delta"):
            assert open_parts.get(chunk["id"]) == kind.split("-")[0], "delta of no open part"
            steps[-1][kind.split("-")[0]] += chunk["delta"]
            typed[chunk["id"]] = typed.get(chunk["id"], "") + chunk["delta"]
        elif kind in ("text-end", "reasoning-end"):
            assert open_parts.pop(chunk["id"]) == kind.split("-")[0]
            shown = ui_text({"text": typed.get(chunk["id"], ""), **chunk})
            if kind == "text-end" and shown != typed.get(chunk["id"], ""):  # a final text
                text = steps[-1]["text"]
                steps[-1]["text"] = text[: len(text) - len(typed.get(chunk["id"], ""))] + shown
        elif kind == "tool-input-start":
            calls[chunk["toolCallId"]] = steps[-1]["calls"][chunk["toolCallId"]] = {
                "name": chunk["toolName"],
                "raw": "",
            }
        elif kind == "tool-input-delta":
            calls[chunk["toolCallId"]]["raw"] += chunk["inputTextDelta"]
        elif kind == "tool-input-available":
            call = steps[-1]["calls"].setdefault(chunk["toolCallId"], {"raw": ""})
            call.update(name=chunk["toolName"], input=chunk["input"])
        elif kind in ("tool-output-available", "tool-output-error"):
            assert chunk["toolCallId"] in calls, "output of an unknown tool call"
            calls[chunk["toolCallId"]]["output"] = chunk.get("output", chunk.get("errorText"))
        elif kind == "finish":
            assert chunk["finishReason"] in FINISH_REASONS
            ended = True
        elif kind in ("error", "abort"):
            ended = True
    assert ended and not open_parts
    return steps


def _json(text: str) -> bool:
    try:
        orjson.loads(text)
    except orjson.JSONDecodeError:
        return not text.strip()
    return True


def encoded(events: list[ChatEvent], encoder: Any) -> list[Any]:
    """What the adapter operator ``encoder`` makes of ``events``."""
    out: list[Any] = []
    reactivex.from_iterable(events).pipe(encoder).subscribe(out.append)
    return out


def step_responses(events: list[ChatEvent]) -> list[Any]:
    """The response of each STEP_END."""
    return [e.response for e in events if e.type is T.STEP_END]


def vercel_chunks(events: list[ChatEvent]) -> list[dict[str, Any]]:
    return encoded(events, to_vercel())


@pytest.mark.parametrize(("path", "dialect"), corpus_cases())
def test_vercel_chunks_of_every_recording_rebuild_each_step(path: Path, dialect: str) -> None:
    events = recorded(path, dialect)
    steps = read_ui_stream(vercel_chunks(events))
    responses = step_responses(events)
    assert len(steps) == len(responses)
    for step, response in zip(steps, responses):
        assert step["text"] == response.text
        assert step["reasoning"] == response.thinking
        client_calls = [c for c in step["calls"].values() if "input" in c and "output" not in c]
        assert [c["input"] for c in client_calls] == [
            c.arguments if c.arguments or _json(c.arguments_str) else c.arguments_str
            for c in response.tool_calls
        ]
        for call in client_calls:
            assert call["raw"] in ("", call["input"]) or orjson.loads(call["raw"]) == call["input"]


def test_vercel_tool_loop_without_provider_ids() -> None:
    chunks = vercel_chunks(tool_loop())
    steps = read_ui_stream(chunks)
    ((call_id, call),) = steps[0]["calls"].items()
    assert call == {
        "name": "get_weather",
        "raw": '{"city":"Paris"}',
        "input": {"city": "Paris"},
        "output": "18°C",
    }
    assert call_id.startswith("ui-call-")
    (progress,) = [c for c in chunks if c["type"] == "data-tool-progress"]
    assert progress == {
        "type": "data-tool-progress",
        "id": call_id,
        "data": {
            "toolCallId": call_id,
            "message": "asked 1 of 2",
            "tool_name": "get_weather",
            "progress": 1,
            "total": 2,
        },
        "transient": True,
    }
    assert steps[1]["text"] == "Sunny."
    failed = tool_loop()
    failed[7] = failed[7].evolve(text="Error: down", attrs={"is_error": True})
    errors = [c for c in vercel_chunks(failed) if c["type"] == "tool-output-error"]
    assert errors == [
        {"type": "tool-output-error", "toolCallId": call_id, "errorText": "Error: down"}
    ]
    metadata = [c for c in chunks if c["type"] == "message-metadata"]
    assert [m["messageMetadata"]["usage"]["total_tokens"] for m in metadata] == [15, 30]
    assert chunks[-1] == {
        "type": "finish",
        "finishReason": "stop",
        "messageMetadata": {
            "usage": {"prompt_tokens": 20, "completion_tokens": 10, "total_tokens": 30},
            "responseId": "resp_1",
        },
    }


def rebuilt_inputs(chunks: list[dict[str, Any]]) -> list[tuple[Any, Any]]:
    """Each call's input as its ``data-tool-input-delta`` parts rebuild it, beside the input
    of its ``tool-input-available``; each part right after a ``tool-input-delta`` of its
    call."""
    built: dict[str, JsonDeltaBuilder] = {}
    pairs = []
    for before, chunk in zip([{}, *chunks], chunks):
        if chunk["type"] == "data-tool-input-delta":
            assert chunk["transient"] is True
            call_id = chunk["data"]["toolCallId"]
            assert chunk["id"] == call_id
            assert (before["type"], before["toolCallId"]) == ("tool-input-delta", call_id)
            builder = built.setdefault(call_id, JsonDeltaBuilder())
            for delta in chunk["data"]["deltas"]:
                builder.apply(JsonDelta(tuple(delta["path"]), delta["op"], delta["value"]))
        elif chunk["type"] == "tool-input-available":
            pairs.append((built[chunk["toolCallId"]].value(), chunk["input"]))
    return pairs


@pytest.mark.parametrize("dialect", ["openai", "anthropic", "openai-responses", "gemini"])
def test_vercel_argument_deltas_rebuild_each_input_and_are_off_by_default(dialect: str) -> None:
    events = recorded(long_args_frames(dialect), dialect)  # type: ignore[arg-type]
    chunks = orjson.loads(orjson.dumps(encoded(events, to_vercel(argument_deltas=True))))
    pairs = rebuilt_inputs(chunks)
    assert pairs and all(rebuilt == sent for rebuilt, sent in pairs)
    parts = [c for c in chunks if c["type"] == "data-tool-input-delta"]
    assert len(parts) >= 20  # the long argument arrives in many deltas, each told
    plain = vercel_chunks(events)
    assert [c for c in chunks if c["type"] != "data-tool-input-delta"] == plain
    assert read_ui_stream(chunks) == read_ui_stream(plain)


def test_vercel_sources_files_refusals_and_abort() -> None:
    image = ImageBlock(data="aGk=", mime_type="image/png")
    encoder = VercelEncoder(message_id="m1")
    chunks = [
        c
        for event in [
            ChatEvent(T.RESPONSE_START, response_id="r"),
            ChatEvent(T.STEP_START),
            ChatEvent(T.CITATION, citation=Citation(url="https://a.example", title="A")),
            ChatEvent(T.SEARCH_RESULT, search_result=SearchResult(url="https://b.example")),
            ChatEvent(T.CITATION, citation=Citation(cited_text="no url")),
            ChatEvent(T.MEDIA_DONE, block=image),
            ChatEvent(T.REFUSAL_DELTA, text="I can't"),
            ChatEvent(T.REFUSAL_DELTA, text=" help."),
            ChatEvent(T.ABORT, text="stopped upstream"),
            ChatEvent(T.TEXT_DELTA, text="after the end"),
        ]
        for c in encoder.feed(event)
    ]
    assert chunks == [
        {"type": "start", "messageId": "m1"},
        {"type": "start-step"},
        {"type": "source-url", "sourceId": "source-1", "url": "https://a.example", "title": "A"},
        {"type": "source-url", "sourceId": "source-2", "url": "https://b.example"},
        {"type": "file", "url": "data:image/png;base64,aGk=", "mediaType": "image/png"},
        {"type": "data-refusal", "id": "refusal-0", "data": {"text": "I can't"}},
        {"type": "data-refusal", "id": "refusal-0", "data": {"text": "I can't help."}},
        {"type": "abort", "reason": "stopped upstream"},
    ]
    assert encoder.finished


def test_vercel_failed_tool_call_then_error() -> None:
    encoder = VercelEncoder()
    error = ToolCallError("tool 'x' raised", tool_name="x", tool_call_id="call_1")
    assert encoder.fail(error) == [
        {"type": "tool-output-error", "toolCallId": "call_1", "errorText": "tool 'x' raised"},
        {"type": "error", "errorText": "tool 'x' raised"},
    ]
    assert encoder.fail(error) == []


def test_to_vercel_ends_a_failed_stream_with_an_error_and_passes_the_failure_on() -> None:
    chunks: list[Any] = []
    errors: list[Exception] = []
    source = reactivex.concat(
        reactivex.of(ChatEvent(T.RESPONSE_START)), reactivex.throw(RuntimeError("boom"))
    )
    source.pipe(to_vercel()).subscribe(chunks.append, errors.append)
    assert chunks[-1] == {"type": "error", "errorText": "boom"}
    assert [str(e) for e in errors] == ["boom"]
    assert vercel_sse(chunks[-1]) == b'data: {"type":"error","errorText":"boom"}\n\n'


@pytest.mark.parametrize(
    ("reason", "expected"),
    [
        (None, "stop"),
        ("end_turn", "stop"),
        ("MAX_TOKENS", "length"),
        ("tool_use", "tool-calls"),
        ("SAFETY", "content-filter"),
        ("pause_turn", "stop"),
        ("guardrail_intervened", "content-filter"),
        ("something new", "other"),
    ],
)
def test_finish_reasons(reason: str | None, expected: str) -> None:
    assert finish_reason(reason) == expected


# AG-UI: events the ag-ui-protocol package validates, in the order @ag-ui/client verifies.

EVENT = TypeAdapter(Any)


def verify_agui(events: list[Any], inputs: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """The run as @ag-ui/client's verifyEvents sees it, after the ``inputs`` messages;
    returns the assembled messages (a MESSAGES_SNAPSHOT replacing what it names)."""
    from ag_ui.core import Event

    adapter = TypeAdapter(Event)
    texts: dict[str, str] = {}
    reasoning: dict[str, str] = {}
    calls: dict[str, dict[str, Any]] = {}
    open_text: set[str] = set()
    open_reasoning: set[str] = set()
    open_calls: set[str] = set()
    messages = {
        "TEXT_MESSAGE": (texts, open_text),
        "REASONING_MESSAGE": (reasoning, open_reasoning),
    }
    steps: list[str] = []
    snapshots: list[list[dict[str, Any]]] = []
    ended = False
    for n, event in enumerate(events):
        wire = agui_sse(event)
        assert wire.startswith(b"data: ") and wire.endswith(b"\n\n")
        data = adapter.validate_json(wire[6:-2])
        kind = data.type.value
        assert not ended, f"{kind} after the run ended"
        assert (kind == "RUN_STARTED") == (n == 0)
        message, _, phase = kind.rpartition("_")
        if message in messages:  # TEXT_MESSAGE_* or REASONING_MESSAGE_*
            contents, open_ids = messages[message]
            if phase == "START":
                assert data.message_id not in open_ids
                open_ids.add(data.message_id)
                contents.setdefault(data.message_id, "")
            elif phase == "CONTENT":
                assert data.message_id in open_ids
                contents[data.message_id] += data.delta
            elif phase == "END":
                open_ids.remove(data.message_id)
        elif kind == "TOOL_CALL_START":
            assert data.tool_call_id not in open_calls
            open_calls.add(data.tool_call_id)
            calls[data.tool_call_id] = {"name": data.tool_call_name, "args": ""}
        elif kind == "TOOL_CALL_ARGS":
            assert data.tool_call_id in open_calls
            calls[data.tool_call_id]["args"] += data.delta
        elif kind == "TOOL_CALL_END":
            open_calls.remove(data.tool_call_id)
        elif kind == "TOOL_CALL_RESULT":
            calls[data.tool_call_id]["result"] = data.content
        elif kind == "STEP_STARTED":
            steps.append(data.step_name)
        elif kind == "STEP_FINISHED":
            steps.remove(data.step_name)
        elif kind == "MESSAGES_SNAPSHOT":  # the conversation: the client keeps only these
            snapshot = [m.model_dump(by_alias=True, exclude_none=True) for m in data.messages]
            ids = [m["id"] for m in snapshot]
            assert ids[: len(inputs)] == [m["id"] for m in inputs], "the input messages first"
            assert set(texts) <= set(ids), "a text message the snapshot would drop"
            for message in snapshot[len(inputs) :]:
                assert message["role"] in ("assistant", "tool")
                if message["id"] in texts:
                    texts[message["id"]] = message.get("content") or ""
            snapshots.append(snapshot)
        elif kind in ("RUN_FINISHED", "RUN_ERROR"):
            if kind == "RUN_FINISHED":
                assert not (steps or open_text or open_reasoning or open_calls)
            ended = True
    assert ended
    return {"texts": texts, "reasoning": reasoning, "calls": calls, "snapshots": snapshots}


def agui_events(events: list[ChatEvent], **options: Any) -> list[Any]:
    return encoded(events, to_agui("thread", "run", **options))


@pytest.mark.parametrize(("path", "dialect"), corpus_cases())
def test_agui_events_of_every_recording_verify_and_rebuild(path: Path, dialect: str) -> None:
    events = recorded(path, dialect)
    run = verify_agui(agui_events(events))
    responses = step_responses(events)
    assert "".join(run["texts"].values()) == "".join(r.text for r in responses)
    assert "".join(run["reasoning"].values()) == "".join(r.thinking for r in responses)
    calls = [c for r in responses for c in r.tool_calls]
    assert [(c["name"], c["args"]) for c in run["calls"].values()] == [
        (c.name, c.arguments_str) for c in calls
    ]


def test_agui_tool_loop_results_usage_and_pending_client_calls() -> None:
    events = tool_loop()
    out = agui_events(events)
    run = verify_agui(out)
    (call,) = run["calls"].values()
    assert call == {"name": "get_weather", "args": '{"city":"Paris"}', "result": "18°C"}
    usage = [e.value for e in out if getattr(e, "name", None) == "solon.usage"]
    assert [u["step"] for u in usage] == [0, 1] and usage[0]["usage"]["total_tokens"] == 15
    (status,) = [e.value for e in out if getattr(e, "name", None) == "solon.status"]
    assert status["tool_call_id"] == next(iter(run["calls"]))
    assert (status["progress"], status["total"], status["text"]) == (1, 2, "asked 1 of 2")
    assert out[-1].usage[0].total_tokens == 30
    assert out[-1].outcome.pending_tool_call_ids is None
    client = agui_events([*events[:6], events[8], events[-1]], client_tools=["get_weather"])
    verify_agui(client)
    pending = client[-1].outcome.pending_tool_call_ids
    assert pending == [e.tool_call_id for e in client if e.type.value == "TOOL_CALL_END"]


# A final text that replaces what the deltas said (TEXT_END.text), in each protocol's way.


def rewritten() -> list[ChatEvent]:
    """A Responses stream whose final text rewrites its deltas (STREAMED into FINAL)."""
    events = rewritten_events()
    (end,) = [e for e in events if e.type is T.TEXT_END]
    assert end.text == FINAL and events[-1].response.text == FINAL  # type: ignore[union-attr]
    return events


def test_vercel_sends_a_final_text_on_its_text_end_and_reads_it_back() -> None:
    chunks = vercel_chunks(rewritten())
    (end,) = [c for c in chunks if c["type"] == "text-end"]
    assert end["providerMetadata"] == {"solon": {"final_text": FINAL}}
    deltas = "".join(c["delta"] for c in chunks if c["type"] == "text-delta")
    assert deltas == STREAMED  # what was streamed stays what was streamed
    (step,) = read_ui_stream(chunks)
    assert step["text"] == FINAL
    part = {"type": "text", "text": deltas, "providerMetadata": end["providerMetadata"]}
    assert ui_text(part) == FINAL and ui_text({"type": "text", "text": deltas}) == deltas
    ui = {"id": "a1", "role": "assistant", "parts": [{"type": "step-start"}, part]}
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Run it"}]}
    (_, turn) = messages_from_vercel({"messages": [user, ui]})
    assert turn.text == FINAL  # type: ignore[union-attr]
    # a block closed without a final text says nothing more
    assert all("providerMetadata" not in c for c in vercel_chunks(tool_loop()))


def test_both_protocols_end_each_block_with_its_final_text() -> None:
    """Blocks ending with a final text equal to the deltas, rewriting them, without
    deltas, and without a final text: the response's text, as each client assembles it."""
    response = ChatResponse(message=AssistantMessage(text=BLOCKS_TEXT))
    events = [
        ChatEvent(T.RESPONSE_START, response_id="resp_1"),
        ChatEvent(T.STEP_START),
        *BLOCKS,
        ChatEvent(T.STEP_END, response=response),
        ChatEvent(T.RESPONSE_END, response=response),
    ]
    (step,) = read_ui_stream(vercel_chunks(events))
    assert step["text"] == BLOCKS_TEXT
    run = verify_agui(agui_events(events, messages=agui_inputs()), INPUTS[:1])
    assert "".join(run["texts"].values()) == BLOCKS_TEXT
    assert len(run["snapshots"]) == 2  # the rewritten block and the one without deltas


INPUTS = [
    {"id": "u1", "role": "user", "content": "Run it"},
    {"id": "r0", "role": "reasoning", "content": "Earlier thoughts"},
]


def agui_inputs() -> list[Any]:
    from ag_ui.core import RunAgentInput

    run = {"threadId": "thread", "runId": "run", "state": {}, "messages": INPUTS, "tools": []}
    body = {**run, "context": [], "forwardedProps": {}}
    return list(RunAgentInput.model_validate(body).messages)


def test_agui_sends_a_final_text_as_a_snapshot_of_the_conversation() -> None:
    events = rewritten()
    out = agui_events(events, messages=agui_inputs())
    run = verify_agui(out, INPUTS[:1])
    assert "".join(run["texts"].values()) == FINAL
    kinds = [e.type.value for e in out]
    at = kinds.index("MESSAGES_SNAPSHOT")
    assert kinds.count("MESSAGES_SNAPSHOT") == 1 and kinds[at - 1] == "TEXT_MESSAGE_END"
    (snapshot,) = run["snapshots"]
    # the input messages as sent (reasoning left out: the client keeps its own), then ours
    assert snapshot == [INPUTS[0], {"id": "run-message-0", "role": "assistant", "content": FINAL}]
    deltas = "".join(e.delta for e in out if e.type.value == "TEXT_MESSAGE_CONTENT")
    assert deltas == STREAMED


def test_agui_snapshot_holds_the_runs_tool_calls_and_results_in_order() -> None:
    events = tool_loop()
    (at,) = [i for i, e in enumerate(events) if e.type is T.TEXT_END]
    events[at] = events[at].evolve(text="Sunny and 18°C.")
    out = agui_events(events, messages=agui_inputs())
    run = verify_agui(out, INPUTS[:1])
    (call_id,) = run["calls"]
    (snapshot,) = run["snapshots"]
    call = {"id": call_id, "type": "function"}
    call["function"] = {"name": "get_weather", "arguments": '{"city":"Paris"}'}
    assert snapshot == [
        INPUTS[0],
        {"id": "run-message-0", "role": "assistant", "toolCalls": [call]},
        {"id": f"run-result-{call_id}", "role": "tool", "content": "18°C", "toolCallId": call_id},
        {"id": "run-message-1", "role": "assistant", "content": "Sunny and 18°C."},
    ]


@pytest.mark.parametrize("final", [None, "Sunny."])
def test_agui_sends_no_snapshot_without_a_text_to_correct(final: str | None) -> None:
    events = tool_loop()
    (at,) = [i for i, e in enumerate(events) if e.type is T.TEXT_END]
    events[at] = events[at].evolve(text=final)  # none, or what the deltas said
    out = agui_events(events, messages=agui_inputs())
    assert "MESSAGES_SNAPSHOT" not in [e.type.value for e in out]


@pytest.mark.parametrize("messages", [None, []])
def test_agui_snapshots_only_with_the_runs_input_messages(messages: list[Any] | None) -> None:
    # without the input messages a snapshot would make the client drop them: none is sent
    out = agui_events(rewritten(), messages=messages)
    snapshots = [e for e in out if e.type.value == "MESSAGES_SNAPSHOT"]
    if messages is None:
        assert snapshots == []
    else:
        (snapshot,) = snapshots
        assert [m.content for m in snapshot.messages] == [FINAL]


def test_agui_custom_events_abort_and_failure() -> None:
    encoder = AguiEncoder("t", "r")
    out = [
        e
        for event in [
            ChatEvent(T.RESPONSE_START),
            ChatEvent(T.CITATION, citation=Citation(url="https://a.example")),
            ChatEvent(T.SERVER_TOOL_START, tool_call_id="s1", sub_type="web_search"),
            ChatEvent(
                T.SERVER_TOOL_RESULT, tool_call_id="s1", sub_type="web_search", raw={"hits": 1}
            ),
            ChatEvent(T.CONTENT_FILTER, text="blocked"),
            ChatEvent(T.ABORT),
        ]
        for e in encoder.feed(event)
    ]
    assert [(e.name, e.value) for e in out[1:-1]] == [
        ("solon.citation", {"url": "https://a.example"}),
        ("solon.server_tool", {"phase": "start", "id": "s1", "name": "web_search"}),
        (
            "solon.server_tool",
            {
                "phase": "result",
                "id": "s1",
                "name": "web_search",
                "result": {"hits": 1},
                "is_error": False,
            },
        ),
        ("solon.content_filter", {"text": "blocked"}),
    ]
    assert out[-1].outcome.type == "cancelled"
    failed = AguiEncoder("t", "r")
    failed.feed(ChatEvent(T.RESPONSE_START))
    (error,) = failed.fail(TimeoutError("too slow"))
    assert (error.message, error.code) == ("too slow", "TimeoutError")
    assert failed.fail(TimeoutError("again")) == []


# Our own events as JSON: every event of every recording round-trips exactly.


def _error_fields(error: BaseException | None) -> Any:
    if error is None:
        return None
    return (
        type(error),
        str(error),
        {k: v for k, v in vars(error).items() if k != "partial_response"},
    )


@pytest.mark.parametrize(("path", "dialect"), corpus_cases())
def test_every_recorded_event_round_trips_through_json(path: Path, dialect: str) -> None:
    """Same type and fields; results equal as values (JSON has no tuples: a free-form
    mapping such as a message's ``metadata`` comes back with lists where it had tuples)."""
    for event in recorded(path, dialect):
        back = decode_event(encode_event(event, with_raw=True))
        assert event_to_json(back, with_raw=True) == event_to_json(event, with_raw=True)
        assert back.evolve(response=None, error=None) == event.evolve(response=None, error=None)
        assert _error_fields(back.error) == _error_fields(event.error)
        if event.response is not None:
            assert type(back.response) is ChatResponse
            assert back.response.usage == event.response.usage
            assert back.response.tool_calls == event.response.tool_calls
            assert back.response.citations == event.response.citations
            assert back.response.message.blocks == event.response.message.blocks


def test_events_json_leaves_out_defaults_and_raw_unless_asked() -> None:
    event = ChatEvent(T.TEXT_DELTA, text="hi", raw={"x": 1}, step=2)
    assert event_to_json(event) == {"type": "TEXT_DELTA", "step": 2, "text": "hi"}
    assert event_to_json(event, with_raw=True)["raw"] == {"x": 1}
    error = ToolCallError("tool 'x' raised", tool_name="x", tool_call_id="c1")
    plain = event_to_json(ChatEvent(T.ERROR, error=error, text=str(error)))
    assert plain["error"] == {
        "type": "ToolCallError",
        "message": "tool 'x' raised",
        "tool_name": "x",
        "tool_call_id": "c1",
    }
    back = decode_event(orjson.dumps(plain)).error
    assert isinstance(back, ToolCallError) and back.tool_call_id == "c1"


@pytest.mark.parametrize(
    "data", [b"[1]", b"{}", b'{"type": "NOPE"}', b"{", b'{"type": "USAGE", "x": 1}']
)
def test_decoding_something_else_is_a_value_error(data: bytes) -> None:
    with pytest.raises(ValueError):
        decode_event(data)
