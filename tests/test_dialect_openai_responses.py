"""The OpenAI Responses dialect: hand-written fixtures, request building, and the corpus.

Fixtures are small streams written from the Responses API streaming reference (event and
item shapes as documented). The corpus test reads ``../shared/corpus/openai-responses`` when
it exists and is skipped otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson
import pytest
from dialect_runs import feed, of
from hypothesis import given, settings
from hypothesis import strategies as st
from reactivex import Observer
from recorded import corpus_paths, corpus_presence_test, corpus_recording
from responses_frames import (
    USAGE,
    added,
    completed,
    created,
    done,
    ev,
    message_stream,
    response,
    rewritten_stream,
)

from solon_events import ChatRequest, SystemMessage, ToolMessage, ToolSpec, UserMessage
from solon_events.core.parsing import ParseStage
from solon_events.dialects import ChatStreamContext, get_dialect, openai_responses
from solon_events.dialects.openai_responses import OpenAIResponsesDialect
from solon_events.event_model.errors import ChatProtocolError, ProviderError
from solon_events.event_model.events import ChatEvent, ChatEventType
from solon_events.event_model.results import AssistantMessage, FileBlock, ImageBlock, ToolCall
from solon_events.operators import final_response
from solon_events.replay import replay

T = ChatEventType
DIALECT = OpenAIResponsesDialect()
TERMINAL = ("response.completed", "response.incomplete", "response.failed")


# drivers


def parse(frames: Iterable[Any]) -> tuple[list[ChatEvent], ParseStage]:
    """Parse ``frames`` through a fresh parse stage: the dialect's events, and the stage."""
    return feed(DIALECT, frames)


def texts(events: list[ChatEvent], type: ChatEventType) -> str:
    return "".join(e.text or "" for e in events if e.type is type)


# basics


def test_dialect_is_registered_under_its_name() -> None:
    dialect = get_dialect("openai-responses")
    assert isinstance(dialect, OpenAIResponsesDialect)
    assert dialect.name == "openai-responses"


@pytest.mark.parametrize("kind", ["response.created", "response.in_progress", "response.queued"])
def test_lifecycle_events_are_status_and_set_the_provider_ids(kind: str) -> None:
    status = "queued" if kind == "response.queued" else "in_progress"
    events, ctx = parse([{"type": kind, "response": response(status)}])
    assert [(e.type, e.text, e.raw_type) for e in events] == [(T.STATUS, status, kind)]
    assert ctx.provider_response_id == "resp_1"
    assert ctx.model == "gpt-test"
    assert events[0].provider_response_id == "resp_1"
    assert not ctx.finished


def test_text_streams_once_between_part_boundaries() -> None:
    events, ctx = parse([created(), *message_stream(parts=("Hel", "lo")), completed(USAGE)])
    text_events = of(events, T.TEXT_START, T.TEXT_DELTA, T.TEXT_END)
    assert [e.type for e in text_events] == [T.TEXT_START, T.TEXT_DELTA, T.TEXT_DELTA, T.TEXT_END]
    assert texts(events, T.TEXT_DELTA) == "Hello"
    assert {(e.item_id, e.index) for e in text_events} == {("msg_1", 0)}
    assert ctx.finished and ctx.finish_reason == "completed"


def test_text_sent_only_in_done_events_is_sent_once() -> None:
    part = {"type": "output_text", "text": "Whole", "annotations": []}
    item = {"id": "msg_1", "type": "message", "role": "assistant", "content": [part]}
    frames = [
        added(0, {"id": "msg_1", "type": "message", "content": []}),
        ev("response.output_text.done", "msg_1", content_index=0, text="Whole"),
        ev("response.content_part.done", "msg_1", content_index=0, part=part),
        done(0, item),
        completed(output=[item]),
    ]
    events, _ = parse(frames)
    assert [e.text for e in of(events, T.TEXT_DELTA)] == ["Whole"]
    assert [e.type for e in of(events, T.TEXT_START, T.TEXT_END)] == [T.TEXT_START, T.TEXT_END]


def test_done_text_longer_than_the_deltas_sends_only_the_rest() -> None:
    frames = [
        ev("response.output_text.delta", "msg_1", content_index=0, delta="Hel"),
        ev("response.output_text.done", "msg_1", content_index=0, text="Hello"),
    ]
    events, _ = parse(frames)
    assert [(e.type, e.text) for e in events] == [
        (T.TEXT_START, None),
        (T.TEXT_DELTA, "Hel"),
        (T.TEXT_DELTA, "lo"),
    ]


def test_output_of_the_completed_response_fills_in_what_was_never_streamed() -> None:
    part = {"type": "output_text", "text": "only here", "annotations": []}
    output = [
        {"id": "msg_1", "type": "message", "role": "assistant", "content": [part]},
        {
            "id": "fc_1",
            "type": "function_call",
            "call_id": "call_1",
            "name": "f",
            "arguments": "{}",
        },
    ]
    events, ctx = parse([created(), completed(USAGE, output)])
    assert texts(events, T.TEXT_DELTA) == "only here"
    ends = of(events, T.TOOL_CALL_END)
    assert [(e.tool_call_id, e.tool_call.name) for e in ends] == [("call_1", "f")]
    assert ctx.finish_reason == "completed"


def test_items_already_streamed_are_not_repeated_from_the_completed_output() -> None:
    stream = message_stream(parts=("Hi",))
    final = stream[-1]["item"]
    events, _ = parse([created(), *stream, completed(USAGE, [final])])
    assert texts(events, T.TEXT_DELTA) == "Hi"
    assert len(of(events, T.TEXT_END)) == 1


def final_text(frames: list[Any]) -> str:
    """The text of the response that replay() makes of ``frames``."""
    response = replay(frames, dialect="openai-responses").pipe(final_response()).run()
    return response.message.text


def renamed_per_event(frames: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``frames`` as some compatible servers send them (GitHub Copilot's among them): a new
    ``item_id`` (and item ``id``) on every event of one output item."""
    out = []
    for n, frame in enumerate(frames):
        frame = dict(frame)
        if "item_id" in frame:
            frame["item_id"] = f"{frame['item_id']}-{n}"
        if isinstance(frame.get("item"), dict) and "id" in frame["item"]:
            frame["item"] = frame["item"] | {"id": f"{frame['item']['id']}-{n}"}
        out.append(frame)
    return out


def test_an_item_whose_id_changes_on_every_event_is_one_block_keyed_by_position() -> None:
    stream = message_stream(parts=("The ", "answer ", "is ", "42."))
    final = stream[-1]["item"]
    frames = renamed_per_event([created(), *stream, completed(USAGE, [final])])
    events, _ = parse(frames)
    assert texts(events, T.TEXT_DELTA) == "The answer is 42."
    blocks = of(events, T.TEXT_START, T.TEXT_END)
    assert [e.type for e in blocks] == [T.TEXT_START, T.TEXT_END]
    assert {e.item_id for e in of(events, T.TEXT_START, T.TEXT_DELTA, T.TEXT_END)} == {"msg_1-1"}
    assert final_text(frames) == "The answer is 42."


def test_two_items_whose_ids_change_stay_apart_by_position() -> None:
    first = message_stream("msg_a", 0, ("one",))
    second = message_stream("msg_b", 1, ("two",))
    frames = renamed_per_event([created(), *first, *second, completed(USAGE)])
    events, _ = parse(frames)
    assert [(e.type, e.index) for e in of(events, T.TEXT_START, T.TEXT_END)] == [
        (T.TEXT_START, 0),
        (T.TEXT_END, 0),
        (T.TEXT_START, 1),
        (T.TEXT_END, 1),
    ]
    assert final_text(frames) == "onetwo"


@pytest.mark.parametrize(
    "done_kinds",
    [
        ("response.output_text.done", "response.content_part.done", "response.output_item.done"),
        ("response.content_part.done",),
        ("response.output_item.done",),
        (),
    ],
)
def test_a_final_text_that_does_not_extend_the_deltas_replaces_them(done_kinds: tuple) -> None:
    frames = rewritten_stream(done_kinds)
    events, _ = parse(frames)
    assert texts(events, T.TEXT_DELTA) == "It ran successfully."
    ends = of(events, T.TEXT_END)
    assert [e.text for e in ends] == ["It ran successfully in the container."]
    assert final_text(frames) == "It ran successfully in the container."


def test_a_final_text_that_extends_the_deltas_closes_the_block_without_text() -> None:
    events, _ = parse([created(), *message_stream(parts=("Hel", "lo")), completed(USAGE)])
    assert [e.text for e in of(events, T.TEXT_END)] == [None]


# citations


ANNOTATIONS = [
    {"type": "url_citation", "url": "https://a.example", "title": "A", "start_index": 3,
     "end_index": 9},
    {"type": "file_citation", "file_id": "file-1", "filename": "doc.pdf", "index": 12},
    {"type": "container_file_citation", "container_id": "cntr_1", "file_id": "cfile_1",
     "filename": "out.csv", "start_index": 20, "end_index": 40},
    {"type": "file_path", "file_id": "file-2", "index": 7},
]  # fmt: skip


def test_annotations_become_citations_once() -> None:
    frames = [*message_stream(parts=("x" * 50,))]
    notes = [
        ev("response.output_text.annotation.added", "msg_1", content_index=0, annotation_index=i,
           annotation=a)
        for i, a in enumerate(ANNOTATIONS)
    ]  # fmt: skip
    frames[3:3] = notes
    final_part = {"type": "output_text", "text": "x" * 50, "annotations": ANNOTATIONS}
    frames[-2]["part"] = final_part
    frames[-1]["item"]["content"] = [final_part]
    events, _ = parse(frames)
    citations = [e.citation for e in of(events, T.CITATION)]
    assert [c.type for c in citations] == [a["type"] for a in ANNOTATIONS]
    url, file, container, path = citations
    assert (url.url, url.title, url.start_index, url.end_index) == ("https://a.example", "A", 3, 9)
    assert (file.file_id, file.title, file.start_index) == ("file-1", "doc.pdf", 12)
    assert (container.file_id, container.start_index, container.end_index) == ("cfile_1", 20, 40)
    assert (path.file_id, path.start_index, path.url) == ("file-2", 7, None)
    assert all(e.item_id == "msg_1" for e in of(events, T.CITATION))


def test_annotations_given_only_in_the_finished_part_are_sent() -> None:
    frames = message_stream(parts=("text",))
    final_part = {"type": "output_text", "text": "text", "annotations": ANNOTATIONS[:2]}
    frames[-2]["part"] = final_part
    frames[-1]["item"]["content"] = [final_part]
    events, _ = parse(frames)
    assert [e.citation.type for e in of(events, T.CITATION)] == ["url_citation", "file_citation"]


# thinking


def reasoning_stream(summaries: tuple[tuple[str, ...], ...], encrypted: str | None = None) -> list:
    item_id = "rs_1"
    first: dict[str, Any] = {"id": item_id, "type": "reasoning", "summary": []}
    if encrypted:
        first["encrypted_content"] = "early-" + encrypted
    frames: list[dict[str, Any]] = [added(0, first)]
    for i, parts in enumerate(summaries):
        text = "".join(parts)
        frames.append(
            ev("response.reasoning_summary_part.added", item_id, summary_index=i,
               part={"type": "summary_text", "text": ""})
        )  # fmt: skip
        frames += [
            ev("response.reasoning_summary_text.delta", item_id, summary_index=i, delta=p)
            for p in parts
        ]
        frames.append(
            ev("response.reasoning_summary_text.done", item_id, summary_index=i, text=text)
        )
        frames.append(
            ev("response.reasoning_summary_part.done", item_id, summary_index=i,
               part={"type": "summary_text", "text": text})
        )  # fmt: skip
    last: dict[str, Any] = {
        "id": item_id,
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": "".join(p)} for p in summaries],
    }
    if encrypted:
        last["encrypted_content"] = encrypted
    frames.append(done(0, last))
    return frames


def test_reasoning_summary_parts_are_thinking_separated_as_the_provider_does() -> None:
    events, _ = parse(reasoning_stream((("**Plan**", "\n\nI will"), ("Then", " act"))))
    assert texts(events, T.THINKING_DELTA) == "**Plan**\n\nI will\n\nThen act"
    deltas = of(events, T.THINKING_DELTA)
    assert [e.text for e in deltas] == ["**Plan**", "\n\nI will", "\n\n", "Then", " act"]
    assert {e.sub_type for e in deltas} == {"summary"}
    kinds = [e.type for e in of(events, T.THINKING_START, T.THINKING_END)]
    assert kinds == [T.THINKING_START, T.THINKING_END]
    assert not of(events, T.TEXT_DELTA)


def test_summary_given_only_in_the_finished_item_is_sent() -> None:
    item = {"id": "rs_1", "type": "reasoning",
            "summary": [{"type": "summary_text", "text": "One"},
                        {"type": "summary_text", "text": "Two"}]}  # fmt: skip
    events, _ = parse([added(0, {"id": "rs_1", "type": "reasoning", "summary": []}), done(0, item)])
    assert texts(events, T.THINKING_DELTA) == "One\n\nTwo"


def test_reasoning_text_is_thinking() -> None:
    item_id = "rs_1"
    part = {"type": "reasoning_text", "text": ""}
    frames = [
        added(0, {"id": item_id, "type": "reasoning", "summary": [], "content": []}),
        ev("response.content_part.added", item_id, content_index=0, part=part),
        ev("response.reasoning_text.delta", item_id, content_index=0, delta="The user "),
        ev("response.reasoning_text.delta", item_id, content_index=0, delta="asks."),
        ev("response.reasoning_text.done", item_id, content_index=0, text="The user asks."),
        ev("response.content_part.done", item_id, content_index=0,
           part={"type": "reasoning_text", "text": "The user asks."}),
        done(0, {"id": item_id, "type": "reasoning", "summary": [],
                 "content": [{"type": "reasoning_text", "text": "The user asks."}]}),
    ]  # fmt: skip
    events, _ = parse(frames)
    assert texts(events, T.THINKING_DELTA) == "The user asks."
    assert {e.sub_type for e in of(events, T.THINKING_DELTA)} == {"reasoning"}
    assert not of(events, T.TEXT_START, T.TEXT_DELTA)


def test_encrypted_reasoning_is_redacted_thinking_once_with_the_final_value() -> None:
    stream = reasoning_stream((("sum",),), encrypted="gAAAA-final")
    item = stream[-1]["item"] | {"encrypted_content": "gAAAA-in-terminal-payload"}
    events, _ = parse([*stream, completed(USAGE, [item])])
    redacted = of(events, T.THINKING_REDACTED)
    assert [(e.text, e.item_id) for e in redacted] == [("gAAAA-final", "rs_1")]
    assert texts(events, T.THINKING_DELTA) == "sum"


# function and custom tool calls


def function_call_stream(
    item_id: str, call_id: str, name: str, fragments: tuple[str, ...], index: int = 0
) -> list[dict[str, Any]]:
    arguments = "".join(fragments)
    item = {"id": item_id, "type": "function_call", "call_id": call_id, "name": name}
    return [
        added(index, item | {"arguments": "", "status": "in_progress"}),
        *(ev("response.function_call_arguments.delta", item_id, index, delta=f) for f in fragments),
        ev("response.function_call_arguments.done", item_id, index, arguments=arguments),
        done(index, item | {"arguments": arguments, "status": "completed"}),
    ]


def test_function_call_streams_start_arguments_end_keyed_by_call_id() -> None:
    frames = function_call_stream("fc_1", "call_1", "weather", ('{"city"', ': "Paris"}'))
    events, _ = parse([created(), *frames, completed(USAGE)])
    calls = of(events, T.TOOL_CALL_START, T.TOOL_CALL_ARGS_DELTA, T.TOOL_CALL_END)
    assert [e.type for e in calls] == [
        T.TOOL_CALL_START,
        T.TOOL_CALL_ARGS_DELTA,
        T.TOOL_CALL_ARGS_DELTA,
        T.TOOL_CALL_END,
    ]
    assert {(e.tool_call_id, e.item_id, e.index) for e in calls} == {("call_1", "fc_1", 0)}
    end = calls[-1].tool_call
    assert (end.id, end.name, end.arguments) == ("call_1", "weather", {"city": "Paris"})
    assert calls[0].tool_call.name == "weather"


def test_function_call_without_argument_deltas_sends_them_whole() -> None:
    item = {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "f"}
    frames = [
        added(0, item | {"arguments": ""}),
        ev("response.function_call_arguments.done", "fc_1", arguments='{"a": 1}'),
        done(0, item | {"arguments": '{"a": 1}'}),
    ]
    events, _ = parse(frames)
    assert [e.text for e in of(events, T.TOOL_CALL_ARGS_DELTA)] == ['{"a": 1}']
    assert [e.tool_call.arguments for e in of(events, T.TOOL_CALL_END)] == [{"a": 1}]


def test_parallel_function_calls_get_their_own_positions() -> None:
    one = function_call_stream("fc_1", "call_1", "a", ('{"x":', "1}"), index=0)
    two = function_call_stream("fc_2", "call_2", "b", ('{"y":', "2}"), index=1)
    interleaved = [one[0], two[0], one[1], two[1], one[2], two[2], one[3], two[3], *one[4:]]
    interleaved += two[4:]
    events, _ = parse(interleaved)
    ends = {e.tool_call_id: e for e in of(events, T.TOOL_CALL_END)}
    assert (ends["call_1"].index, ends["call_1"].tool_call.arguments) == (0, {"x": 1})
    assert (ends["call_2"].index, ends["call_2"].tool_call.arguments) == (1, {"y": 2})
    deltas = of(events, T.TOOL_CALL_ARGS_DELTA)
    assert [e.tool_call_id for e in deltas] == ["call_1", "call_2", "call_1", "call_2"]


def custom_call_stream(fragments: tuple[str, ...], with_done: bool) -> list[dict[str, Any]]:
    text = "".join(fragments)
    item = {"id": "ctc_1", "type": "custom_tool_call", "call_id": "call_c", "name": "write_sql"}
    frames = [added(0, item | {"input": ""})]
    frames += [ev("response.custom_tool_call_input.delta", "ctc_1", delta=f) for f in fragments]
    if with_done:
        frames.append(ev("response.custom_tool_call_input.done", "ctc_1", input=text))
    frames.append(done(0, item | {"input": text, "status": "completed"}))
    return frames


@pytest.mark.parametrize("with_done", [True, False])
def test_custom_tool_input_is_kept_raw(with_done: bool) -> None:
    events, _ = parse(custom_call_stream(("SELECT * ", "FROM users"), with_done))
    (end,) = of(events, T.TOOL_CALL_END)
    call = end.tool_call
    assert (call.id, call.name) == ("call_c", "write_sql")
    assert call.arguments_str == "SELECT * FROM users"
    assert call.arguments == {}
    assert texts(events, T.TOOL_CALL_ARGS_DELTA) == "SELECT * FROM users"


def test_custom_tool_input_that_is_json_parses() -> None:
    events, _ = parse(custom_call_stream(('{"q": ', '"x"}'), with_done=True))
    assert of(events, T.TOOL_CALL_END)[0].tool_call.arguments == {"q": "x"}


def test_arguments_for_a_call_never_started_is_a_protocol_error() -> None:
    with pytest.raises(ChatProtocolError):
        parse([ev("response.function_call_arguments.delta", "fc_unknown", delta="{")])


# built-in (server) tools


def server_tool_case(
    item_type: str, start: dict[str, Any], final: dict[str, Any], middle: list[Any] | None = None
) -> list[dict[str, Any]]:
    base = {"id": "it_1", "type": item_type}
    return [added(0, base | start), *(middle or []), done(0, base | final)]


SERVER_TOOL_CASES: dict[str, tuple[str, list[dict[str, Any]]]] = {
    "web_search": (
        "web_search",
        server_tool_case(
            "web_search_call",
            {"status": "in_progress"},
            {"status": "completed",
             "action": {"type": "search", "query": "q",
                        "sources": [{"type": "url", "url": "https://s1.example"},
                                    {"type": "url", "url": "https://s2.example"}]}},
            [ev("response.web_search_call.in_progress", "it_1"),
             ev("response.web_search_call.searching", "it_1"),
             ev("response.web_search_call.completed", "it_1")],
        ),
    ),
    "file_search": (
        "file_search",
        server_tool_case(
            "file_search_call",
            {"status": "in_progress", "queries": [], "results": None},
            {"status": "completed", "queries": ["what is x"],
             "results": [{"file_id": "file-1", "filename": "a.pdf", "score": 0.9,
                          "text": "x is y", "attributes": {}}]},
            [ev("response.file_search_call.searching", "it_1")],
        ),
    ),
    "code_interpreter": (
        "code_interpreter",
        server_tool_case(
            "code_interpreter_call",
            {"status": "in_progress", "code": "", "container_id": "cntr_1", "outputs": []},
            {"status": "completed", "code": "print(1)", "container_id": "cntr_1",
             "outputs": [{"type": "logs", "logs": "1"}]},
            [ev("response.code_interpreter_call_code.delta", "it_1", delta="print("),
             ev("response.code_interpreter_call_code.delta", "it_1", delta="1)"),
             ev("response.code_interpreter_call_code.done", "it_1", code="print(1)"),
             ev("response.code_interpreter_call.interpreting", "it_1")],
        ),
    ),
    "image_generation": (
        "image_generation",
        server_tool_case(
            "image_generation_call",
            {"status": "in_progress"},
            {"status": "completed", "result": "RklOQUw=", "output_format": "webp"},
            [ev("response.image_generation_call.generating", "it_1"),
             ev("response.image_generation_call.partial_image", "it_1", partial_image_index=0,
                partial_image_b64="UEFSVA==", output_format="webp")],
        ),
    ),
    "mcp": (
        "mcp",
        server_tool_case(
            "mcp_call",
            {"name": "roll", "server_label": "dice", "arguments": ""},
            {"name": "roll", "server_label": "dice", "arguments": '{"n": 2}', "output": "4"},
            [ev("response.mcp_call_arguments.delta", "it_1", delta='{"n": 2}'),
             ev("response.mcp_call_arguments.done", "it_1", arguments='{"n": 2}'),
             ev("response.mcp_call.completed", "it_1")],
        ),
    ),
    "mcp_list_tools": (
        "mcp_list_tools",
        server_tool_case(
            "mcp_list_tools",
            {"server_label": "dice", "tools": []},
            {"server_label": "dice", "tools": [{"name": "roll", "input_schema": {}}]},
            [ev("response.mcp_list_tools.in_progress", "it_1")],
        ),
    ),
    "mcp_approval_request": (
        "mcp_approval_request",
        server_tool_case(
            "mcp_approval_request",
            {"name": "roll", "server_label": "dice", "arguments": '{"n": 1}'},
            {"name": "roll", "server_label": "dice", "arguments": '{"n": 1}'},
        ),
    ),
    "local_shell": (
        "local_shell",
        server_tool_case(
            "local_shell_call",
            {"call_id": "call_ls", "status": "in_progress",
             "action": {"type": "exec", "command": ["ls"], "env": {}}},
            {"call_id": "call_ls", "status": "completed",
             "action": {"type": "exec", "command": ["ls"], "env": {}}},
        ),
    ),
    "shell": (
        "shell",
        server_tool_case(
            "shell_call",
            {"call_id": "call_sh", "status": "in_progress", "action": {"commands": []}},
            {"call_id": "call_sh", "status": "completed", "action": {"commands": ["ls -la"]}},
            [{"type": "response.shell_call_command.added", "output_index": 0, "command_index": 0},
             {"type": "response.shell_call_command.delta", "output_index": 0, "command_index": 0,
              "delta": "ls -la"},
             {"type": "response.shell_call_command.done", "output_index": 0, "command_index": 0,
              "command": "ls -la"}],
        ),
    ),
    "computer": (
        "computer",
        server_tool_case(
            "computer_call",
            {"call_id": "call_cu", "status": "in_progress",
             "action": {"type": "click", "x": 1, "y": 2}},
            {"call_id": "call_cu", "status": "completed",
             "action": {"type": "click", "x": 1, "y": 2}, "pending_safety_checks": []},
        ),
    ),
    "apply_patch": (
        "apply_patch",
        server_tool_case(
            "apply_patch_call",
            {"call_id": "call_ap", "status": "in_progress"},
            {"call_id": "call_ap", "status": "completed",
             "operation": {"type": "create_file", "path": "a.txt", "diff": "+a"}},
        ),
    ),
    "future_tool": (
        "future_tool",
        server_tool_case("future_tool_call", {"status": "in_progress"}, {"status": "completed"}),
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(SERVER_TOOL_CASES))
def test_server_tools_start_when_added_and_end_with_their_result(case: str) -> None:
    sub_type, frames = SERVER_TOOL_CASES[case]
    events, _ = parse([created(), *frames, completed(USAGE, [frames[-1]["item"]])])
    (start,) = of(events, T.SERVER_TOOL_START)
    (result,) = of(events, T.SERVER_TOOL_RESULT)
    assert (start.sub_type, result.sub_type) == (sub_type, sub_type)
    assert start.item_id == result.item_id == "it_1"
    assert start.tool_call is not None and start.tool_call.name
    assert result.raw == frames[-1]["item"]
    assert events.index(start) < events.index(result)
    assert not of(events, T.TOOL_CALL_START, T.TOOL_CALL_END, T.TEXT_DELTA)


@pytest.mark.parametrize(
    ("case", "call_id"),
    [("local_shell", "call_ls"), ("shell", "call_sh"), ("computer", "call_cu"), ("mcp", "it_1")],
)
def test_server_tool_call_id_is_the_call_id_else_the_item_id(case: str, call_id: str) -> None:
    events, _ = parse(SERVER_TOOL_CASES[case][1])
    assert {e.tool_call_id for e in of(events, T.SERVER_TOOL_START, T.SERVER_TOOL_RESULT)} == {
        call_id
    }


def test_web_search_sources_are_search_results_and_progress_is_status() -> None:
    events, _ = parse(SERVER_TOOL_CASES["web_search"][1])
    results = [e.search_result for e in of(events, T.SEARCH_RESULT)]
    assert [(r.url, r.type) for r in results] == [
        ("https://s1.example", "url"),
        ("https://s2.example", "url"),
    ]
    statuses = of(events, T.STATUS)
    assert [(e.text, e.sub_type, e.item_id) for e in statuses] == [
        ("in_progress", "web_search", "it_1"),
        ("searching", "web_search", "it_1"),
        ("completed", "web_search", "it_1"),
    ]
    assert all(e.sub_type == "web_search" for e in of(events, T.SEARCH_RESULT))
    start = of(events, T.SERVER_TOOL_START)[0]
    result = of(events, T.SERVER_TOOL_RESULT)[0]
    assert result.tool_call.arguments["action"]["query"] == "q"
    assert start.tool_call.arguments == {}


def test_file_search_results_are_search_results() -> None:
    events, _ = parse(SERVER_TOOL_CASES["file_search"][1])
    (result,) = [e.search_result for e in of(events, T.SEARCH_RESULT)]
    assert (result.title, result.snippet, result.type) == ("a.pdf", "x is y", "file")
    assert result.raw["file_id"] == "file-1"


def test_code_interpreter_code_streams_as_server_tool_arguments() -> None:
    events, _ = parse(SERVER_TOOL_CASES["code_interpreter"][1])
    deltas = of(events, T.SERVER_TOOL_ARGS_DELTA)
    assert [(e.text, e.item_id) for e in deltas] == [("print(", "it_1"), ("1)", "it_1")]
    assert of(events, T.SERVER_TOOL_RESULT)[0].tool_call.arguments["code"] == "print(1)"


def test_mcp_arguments_stream_and_shell_commands_stream_by_output_index() -> None:
    mcp, _ = parse(SERVER_TOOL_CASES["mcp"][1])
    assert texts(mcp, T.SERVER_TOOL_ARGS_DELTA) == '{"n": 2}'
    assert of(mcp, T.SERVER_TOOL_RESULT)[0].tool_call.arguments == {"n": 2}
    shell, _ = parse(SERVER_TOOL_CASES["shell"][1])
    assert [(e.text, e.item_id) for e in of(shell, T.SERVER_TOOL_ARGS_DELTA)] == [
        ("ls -la", "it_1")
    ]


def test_image_generation_partial_and_final_images_are_media() -> None:
    events, _ = parse(SERVER_TOOL_CASES["image_generation"][1])
    (partial,) = of(events, T.MEDIA_PARTIAL)
    (final,) = of(events, T.MEDIA_DONE)
    assert isinstance(partial.block, ImageBlock) and isinstance(final.block, ImageBlock)
    assert (partial.block.data, partial.block.mime_type) == ("UEFSVA==", "image/webp")
    assert (final.block.data, final.block.mime_type) == ("RklOQUw=", "image/webp")
    assert partial.attrs["partial_image_index"] == 0
    assert events.index(final) < events.index(of(events, T.SERVER_TOOL_RESULT)[0])


def test_image_without_a_format_defaults_to_png() -> None:
    frames = server_tool_case(
        "image_generation_call", {"status": "in_progress"}, {"result": "QQ==", "status": "done"}
    )
    events, _ = parse(frames)
    assert of(events, T.MEDIA_DONE)[0].block.mime_type == "image/png"


def test_xai_style_server_tool_sent_whole_with_arguments() -> None:
    item = {
        "id": "fc_x_0",
        "type": "web_search_call",
        "call_id": "",
        "name": "web_search",
        "arguments": '{"query":"what is xAI"}',
        "status": "completed",
    }
    events, _ = parse([added(0, item), done(0, item)])
    (start,) = of(events, T.SERVER_TOOL_START)
    assert start.tool_call_id == "fc_x_0"
    assert start.tool_call.arguments == {"query": "what is xAI"}
    assert len(of(events, T.SERVER_TOOL_RESULT)) == 1


def test_tool_call_output_items_are_server_tool_results() -> None:
    item = {"id": "sho_1", "type": "shell_call_output", "call_id": "call_sh", "output": []}
    events, _ = parse([added(1, item), done(1, item)])
    assert [(e.type, e.sub_type, e.tool_call_id) for e in events] == [
        (T.SERVER_TOOL_RESULT, "shell", "call_sh")
    ]


# refusal, completion, usage, failures


def test_refusal_streams_as_refusal_deltas_once() -> None:
    part = {"type": "refusal", "refusal": ""}
    frames = [
        added(0, {"id": "msg_1", "type": "message", "content": []}),
        ev("response.content_part.added", "msg_1", content_index=0, part=part),
        ev("response.refusal.delta", "msg_1", content_index=0, delta="I can't "),
        ev("response.refusal.delta", "msg_1", content_index=0, delta="help."),
        ev("response.refusal.done", "msg_1", content_index=0, refusal="I can't help."),
        ev("response.content_part.done", "msg_1", content_index=0,
           part={"type": "refusal", "refusal": "I can't help."}),
        done(0, {"id": "msg_1", "type": "message",
                 "content": [{"type": "refusal", "refusal": "I can't help."}]}),
    ]  # fmt: skip
    events, _ = parse(frames)
    assert [e.text for e in of(events, T.REFUSAL_DELTA)] == ["I can't ", "help."]
    assert not of(events, T.TEXT_START, T.TEXT_DELTA, T.TEXT_END)


def test_completed_reports_usage_with_cached_and_reasoning_tokens() -> None:
    events, ctx = parse([created(), completed(USAGE)])
    (usage_event,) = of(events, T.USAGE)
    usage = usage_event.usage
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (120, 50, 170)
    assert (usage.cache_read_input_tokens, usage.thinking_tokens) == (100, 30)
    assert usage.source == USAGE
    assert (ctx.finished, ctx.finish_reason, ctx.failure) == (True, "completed", None)


def test_provider_usage_counters_are_server_tool_use() -> None:
    usage = USAGE | {"num_sources_used": 0, "num_server_side_tools_used": 2}
    events, _ = parse([completed(usage)])
    assert dict(of(events, T.USAGE)[0].usage.server_tool_use) == {"num_server_side_tools_used": 2}


def test_usage_without_total_adds_prompt_and_completion() -> None:
    events, _ = parse([completed({"input_tokens": 3, "output_tokens": 4})])
    assert of(events, T.USAGE)[0].usage.total_tokens == 7


@pytest.mark.parametrize(
    ("details", "reason"),
    [({"reason": "max_output_tokens"}, "max_output_tokens"), (None, "incomplete")],
)
def test_incomplete_finishes_with_the_reason(details: Any, reason: str) -> None:
    body = response("incomplete", incomplete_details=details, usage=USAGE, output=[])
    events, ctx = parse([created(), {"type": "response.incomplete", "response": body}])
    assert (ctx.finished, ctx.finish_reason, ctx.failure) == (True, reason, None)
    assert len(of(events, T.USAGE)) == 1
    assert not of(events, T.CONTENT_FILTER)


def test_incomplete_for_content_filter_reports_the_filter() -> None:
    body = response("incomplete", incomplete_details={"reason": "content_filter"}, output=[])
    events, ctx = parse([{"type": "response.incomplete", "response": body}])
    assert [e.text for e in of(events, T.CONTENT_FILTER)] == ["content_filter"]
    assert ctx.finish_reason == "content_filter"


def test_failed_response_is_a_provider_failure() -> None:
    error = {"code": "server_error", "message": "The model failed."}
    body = response("failed", error=error, output=[])
    _, ctx = parse([created(), {"type": "response.failed", "response": body}])
    assert isinstance(ctx.failure, ProviderError)
    assert dict(ctx.failure.provider_error) == error
    assert "The model failed." in str(ctx.failure)
    assert ctx.finish_reason == "failed"


@pytest.mark.parametrize(
    "frame",
    [
        {"type": "error", "sequence_number": 2,
         "error": {"type": "invalid_request_error", "code": "bad", "message": "Bad.",
                   "param": None}},
        {"type": "error", "sequence_number": 2, "code": "bad", "message": "Bad.", "param": None},
    ],
    ids=["nested", "flat"],
)  # fmt: skip
def test_error_events_fail_with_the_provider_fields(frame: dict[str, Any]) -> None:
    failed = response("failed", error={"code": "other", "message": "Later."})
    _, ctx = parse([created(), frame, {"type": "response.failed", "response": failed}])
    assert isinstance(ctx.failure, ProviderError)
    assert ctx.failure.provider_error["code"] == "bad"
    assert ctx.failure.provider_error["message"] == "Bad."
    assert ctx.finish_reason == "failed"


def test_an_error_event_without_details_still_fails() -> None:
    _, ctx = parse([{"type": "error"}])
    assert isinstance(ctx.failure, ProviderError)


def test_failure_closes_open_tool_calls() -> None:
    frames = function_call_stream("fc_1", "call_1", "f", ('{"a"',))[:2]
    events, _ = parse([*frames, {"type": "response.failed", "response": response("failed")}])
    assert [e.tool_call_id for e in of(events, T.TOOL_CALL_END)] == ["call_1"]


# unknown and odd input


def test_unknown_event_types_are_raw() -> None:
    frames = [
        {"type": "response.audio.delta", "delta": "AAAA"},
        {"type": "response.shell_call_output_content.delta", "output_index": 0, "delta": "x"},
        {"no_type": True},
    ]
    events, _ = parse(frames)
    assert [(e.type, e.raw_type) for e in events] == [
        (T.RAW, "response.audio.delta"),
        (T.RAW, "response.shell_call_output_content.delta"),
        (T.RAW, None),
    ]
    assert events[0].raw == frames[0]


def test_unknown_output_items_are_raw_with_their_item_type() -> None:
    item = {"id": "cmp_1", "type": "compaction", "encrypted_content": "x"}
    events, _ = parse([added(0, item), done(0, item)])
    assert [(e.type, e.raw_type, e.sub_type) for e in events] == [
        (T.RAW, "response.output_item.added", "compaction"),
        (T.RAW, "response.output_item.done", "compaction"),
    ]


def test_keepalive_is_a_heartbeat() -> None:
    events, _ = parse([{"type": "keepalive"}])
    assert [e.type for e in events] == [T.HEARTBEAT]


ODD_FRAMES: list[dict[str, Any]] = [
    {"type": "response.created", "response": None},
    {"type": "response.created", "response": {"id": 5, "model": ["x"], "status": None}},
    {"type": "response.output_item.added", "item": "not an item"},
    {"type": "response.output_item.added", "output_index": "0", "item": {}},
    {"type": "response.output_item.done", "item": None},
    {"type": "response.output_item.done", "item": {"type": "message", "content": "oops"}},
    {"type": "response.output_item.done", "item": {"type": "reasoning", "summary": [1, None]}},
    {"type": "response.content_part.added", "part": "text"},
    {"type": "response.content_part.done", "part": None},
    {"type": "response.output_text.delta", "item_id": "m", "delta": None},
    {"type": "response.output_text.delta", "item_id": 3, "delta": ""},
    {"type": "response.output_text.done", "item_id": "m", "text": 12},
    {"type": "response.output_text.annotation.added", "item_id": "m", "annotation": "x"},
    {"type": "response.refusal.delta", "delta": {"a": 1}},
    {"type": "response.reasoning_summary_text.delta", "delta": 7},
    {"type": "response.reasoning_summary_part.done", "part": []},
    {"type": "response.function_call_arguments.done", "item_id": "nope"},
    {"type": "response.image_generation_call.partial_image", "partial_image_b64": None},
    {"type": "response.web_search_call.searching"},
    {"type": "response.completed", "response": {"usage": "lots", "output": "none"}},
    {"type": "response.completed", "response": {"usage": {"input_tokens": "3",
                                                           "input_tokens_details": 4}}},
]  # fmt: skip


def test_odd_but_valid_json_never_crashes() -> None:
    events, ctx = parse(ODD_FRAMES)
    assert ctx.finished
    assert not of(events, T.TEXT_DELTA, T.THINKING_DELTA, T.REFUSAL_DELTA, T.TOOL_CALL_END)
    usages = [e.usage for e in of(events, T.USAGE)]
    assert [(u.prompt_tokens, u.completion_tokens) for u in usages] == [(0, 0)]


@pytest.mark.parametrize("frame", [["a", "list"], "text", 42, None])
def test_a_frame_that_is_not_an_object_is_a_protocol_error(frame: Any) -> None:
    with pytest.raises(ChatProtocolError, match="frame 1: expected a JSON object"):
        parse([orjson.dumps(frame).decode()])


def test_every_event_carries_its_raw_payload_and_the_provider_id() -> None:
    frames = [
        created(),
        *reasoning_stream((("a",),), encrypted="enc"),
        *message_stream(index=1, parts=("hi",)),
        *function_call_stream("fc_1", "call_1", "f", ("{}",), index=2),
        *SERVER_TOOL_CASES["image_generation"][1],
        completed(USAGE),
    ]
    events, _ = parse(frames)
    assert events
    assert all(e.raw for e in events)
    assert all(e.provider_response_id == "resp_1" for e in events)


def test_state_belongs_to_the_context_not_the_dialect() -> None:
    frames = function_call_stream("fc_1", "call_1", "f", ('{"a":', "1}"))
    first, _ = parse(frames[:2])
    second, _ = parse(frames)
    assert [e.type for e in first] == [T.TOOL_CALL_START, T.TOOL_CALL_ARGS_DELTA]
    assert of(second, T.TOOL_CALL_END)[0].tool_call.arguments == {"a": 1}


# the fast path: a delta of the part the previous frame streamed into


def general(frames: Iterable[Any]) -> list[ChatEvent]:
    """The events of ``frames`` when every frame takes the general path."""
    return feed(openai_responses._parse_general, frames)[0]


@pytest.fixture
def general_calls(record_frames: Callable[[ModuleType, str], list[Any]]) -> list[Any]:
    """The frames that take the general path during the test."""
    return record_frames(openai_responses, "_parse_general")


def reasoning_text_stream(deltas: tuple[str, ...]) -> list[dict[str, Any]]:
    text = "".join(deltas)
    return [
        added(0, {"id": "rs_1", "type": "reasoning", "summary": [], "content": []}),
        *(ev("response.reasoning_text.delta", "rs_1", content_index=0, delta=d) for d in deltas),
        ev("response.reasoning_text.done", "rs_1", content_index=0, text=text),
        done(0, {"id": "rs_1", "type": "reasoning", "summary": [],
                 "content": [{"type": "reasoning_text", "text": text}]}),
    ]  # fmt: skip


def annotated_text_stream() -> list[dict[str, Any]]:
    """A message whose text deltas are interleaved with annotations, keepalives and ignored
    boundary events (none of which cool the hot part)."""
    frames = message_stream(parts=("a", "b", "c", "d", "e"))
    note = ev("response.output_text.annotation.added", "msg_1", content_index=0,
              annotation_index=0, annotation=ANNOTATIONS[0])  # fmt: skip
    frames[4:4] = [note]
    frames[6:6] = [{"type": "keepalive"}, note | {"annotation_index": 1}]
    frames[8:8] = [ev("response.reasoning_summary_part.added", "rs_9")]
    return frames


def code_stream(deltas: tuple[str, ...]) -> list[dict[str, Any]]:
    """A code interpreter item whose code streams as ``deltas``, then its progress."""
    code = "".join(deltas)
    return server_tool_case(
        "code_interpreter_call",
        {"status": "in_progress", "code": "", "container_id": "cntr_1", "outputs": []},
        {"status": "completed", "code": code, "container_id": "cntr_1", "outputs": []},
        [*(ev("response.code_interpreter_call_code.delta", "it_1", delta=d) for d in deltas),
         ev("response.code_interpreter_call_code.done", "it_1", code=code),
         ev("response.code_interpreter_call.interpreting", "it_1")],
    )  # fmt: skip


FAST_STREAMS = {
    "text": message_stream(parts=("a", "b", "c", "d")),
    "annotated-text": annotated_text_stream(),
    "code": code_stream(("print(", "1", ")")),
    "mcp-arguments": SERVER_TOOL_CASES["mcp"][1][:1]
    + [ev("response.mcp_call_arguments.delta", "it_1", delta=d) for d in ('{"n"', ": ", "2}")]
    + SERVER_TOOL_CASES["mcp"][1][2:],
    "summary": reasoning_stream((("a", "b", "c"), ("d", "e")), encrypted="enc"),
    "reasoning-text": reasoning_text_stream(("a", "b", "c")),
    "function-call": function_call_stream("fc_1", "call_1", "f", ('{"a"', ": ", "1", "}")),
    "custom-tool": custom_call_stream(("SELECT ", "* ", "FROM t"), with_done=True),
}


@pytest.mark.parametrize("name", sorted(FAST_STREAMS))
def test_the_fast_path_takes_every_delta_after_the_first_of_a_part(
    name: str, general_calls: list[Any]
) -> None:
    frames = [created(), *FAST_STREAMS[name], completed(USAGE)]
    parse(frames)
    deltas = [f for f in frames if f["type"].endswith(".delta")]
    parts = {(f["type"], f.get("content_index"), f.get("summary_index")) for f in deltas}
    assert len(frames) - len(general_calls) == len(deltas) - len(parts)


@pytest.mark.parametrize("name", sorted(FAST_STREAMS))
def test_the_fast_path_sends_what_the_general_path_sends(name: str) -> None:
    frames = [created(), *FAST_STREAMS[name], completed(USAGE)]
    assert parse(frames)[0] == general(frames)


DROP = object()
"""A field value meaning: leave the field out."""


def hot_text(*fields: dict[str, Any]) -> list[dict[str, Any]]:
    """An open message part two deltas into its text ("ab"), then ``fields`` as deltas."""
    deltas = [ev("response.output_text.delta", "msg_1", content_index=0) | f for f in fields]
    return [
        *message_stream(parts=("a", "b"))[:4],
        *({k: v for k, v in d.items() if v is not DROP} for d in deltas),
    ]


def text_done(text: str) -> dict[str, Any]:
    return ev("response.output_text.done", "msg_1", content_index=0, text=text)


NEAR_MISSES: dict[str, tuple[dict[str, Any], list[tuple[Any, ...]]]] = {
    "another item_id at the same position": (
        {"item_id": "msg_9", "delta": "x"},
        [(T.TEXT_DELTA, "x", "msg_1", 0)],
    ),
    "an item_id never added": (
        {"item_id": "msg_9", "output_index": DROP, "delta": "x"},
        [(T.TEXT_START, None, "msg_9", -1), (T.TEXT_DELTA, "x", "msg_9", -1)],
    ),
    "other content_index": ({"content_index": 1, "delta": "x"}, [(T.TEXT_DELTA, "x", "msg_1", 0)]),
    "content_index True": (
        {"content_index": True, "delta": "x"},
        [(T.TEXT_DELTA, "x", "msg_1", 0)],
    ),
    "content_index 0.0": ({"content_index": 0.0, "delta": "x"}, [(T.TEXT_DELTA, "x", "msg_1", 0)]),
    "no content_index": ({"content_index": DROP, "delta": "x"}, [(T.TEXT_DELTA, "x", "msg_1", 0)]),
    "no item_id": ({"item_id": DROP, "delta": "x"}, [(T.TEXT_DELTA, "x", "msg_1", 0)]),
    "empty item_id": ({"item_id": "", "delta": "x"}, [(T.TEXT_DELTA, "x", "msg_1", 0)]),
    "item_id by position": (
        {"item_id": DROP, "output_index": 1, "delta": "x"},
        [(T.TEXT_START, None, "output:1", 1), (T.TEXT_DELTA, "x", "output:1", 1)],
    ),
    "other output_index": ({"output_index": 1, "delta": "x"}, [(T.TEXT_DELTA, "x", "msg_1", 1)]),
    "output_index False": (
        {"output_index": False, "delta": "x"},
        [(T.TEXT_DELTA, "x", "msg_1", -1)],
    ),
    "no output_index": ({"output_index": DROP, "delta": "x"}, [(T.TEXT_DELTA, "x", "msg_1", -1)]),
    "big output_index": (
        {"output_index": 10**6, "delta": "x"},
        [(T.TEXT_DELTA, "x", "msg_1", 10**6)],
    ),
    "number delta": ({"delta": 5}, []),
    "null delta": ({"delta": None}, []),
    "list delta": ({"delta": ["x"]}, []),
    "empty delta": ({"delta": ""}, []),
    "no delta": ({}, []),
    "refusal delta": (
        {"type": "response.refusal.delta", "delta": "x"},
        [(T.REFUSAL_DELTA, "x", "msg_1", 0)],
    ),
    "reasoning delta": (
        {"type": "response.reasoning_text.delta", "delta": "x"},
        [(T.THINKING_START, None, "msg_1", 0), (T.THINKING_DELTA, "x", "msg_1", 0)],
    ),
    "untyped delta": ({"type": DROP, "delta": "x"}, [(T.RAW, None, None, -1)]),
}


@pytest.mark.parametrize("name", sorted(NEAR_MISSES))
def test_near_misses_of_the_fast_path_send_their_own_events(name: str) -> None:
    fields, expected = NEAR_MISSES[name]
    frames = hot_text({"delta": "c"}, fields)
    events, _ = parse(frames)
    before = len(events) - len(expected)
    assert events[:before] == parse(frames[:-1])[0]
    assert [(e.type, e.text, e.item_id, e.index) for e in events[before:]] == expected
    assert events == general(frames)
    whole = [*frames, *hot_text({"delta": "d"}, {"delta": "e"})[4:], text_done("abcxdef")]
    assert parse(whole)[0] == general(whole)


def test_fast_deltas_count_towards_their_part() -> None:
    events, _ = parse([*hot_text({"delta": "c"}, {"delta": "d"}), text_done("abcdef")])
    assert [e.text for e in of(events, T.TEXT_DELTA)] == ["a", "b", "c", "d", "ef"]


def test_a_delta_of_another_part_counts_towards_that_part() -> None:
    frames = [*hot_text({"delta": "x", "content_index": 1}), text_done("abcd")]
    events, _ = parse(frames)
    assert [e.text for e in of(events, T.TEXT_DELTA)] == ["a", "b", "x", "cd"]


def test_a_delta_after_its_part_closed_opens_it_again() -> None:
    part = {"type": "output_text", "text": "ab", "annotations": []}
    frames = [
        *hot_text(),
        ev("response.content_part.done", "msg_1", content_index=0, part=part),
        *hot_text({"delta": "x"}, {"delta": "y"})[4:],
    ]
    events, _ = parse(frames)
    assert events == general(frames)
    assert [(e.type, e.text) for e in events[-4:]] == [
        (T.TEXT_END, None),
        (T.TEXT_START, None),
        (T.TEXT_DELTA, "x"),
        (T.TEXT_DELTA, "y"),
    ]


def test_a_new_thinking_part_is_separated_after_fast_deltas() -> None:
    delta = "response.reasoning_summary_text.delta"
    frames = [
        added(0, {"id": "rs_1", "type": "reasoning", "summary": []}),
        ev(delta, "rs_1", summary_index=0, delta="a"),
        ev(delta, "rs_1", summary_index=0, delta="b"),
        ev(delta, "rs_1", summary_index=1, delta="c"),
        ev(delta, "rs_1", summary_index=1, delta="d"),
    ]
    events, _ = parse(frames)
    assert events == general(frames)
    deltas = of(events, T.THINKING_DELTA)
    assert [(e.text, e.sub_type) for e in deltas] == [
        ("a", "summary"),
        ("b", "summary"),
        ("\n\n", "summary"),
        ("c", "summary"),
        ("d", "summary"),
    ]


def test_a_frame_that_is_not_an_object_after_fast_deltas_is_a_protocol_error() -> None:
    with pytest.raises(ChatProtocolError):
        parse([*hot_text({"delta": "x"}), ["a", "list"]])


def test_a_delta_after_an_annotation_counts_towards_its_part() -> None:
    note = ev("response.output_text.annotation.added", "msg_1", content_index=0,
              annotation=ANNOTATIONS[0])  # fmt: skip
    frames = [*hot_text({"delta": "c"}), note, *hot_text({"delta": "d"})[4:], text_done("abcdef")]
    events, _ = parse(frames)
    assert events == general(frames)
    assert [e.text for e in of(events, T.TEXT_DELTA)] == ["a", "b", "c", "d", "ef"]


# random streams: every frame kind that heats, keeps or cools a part, with near-miss fields

ITEMS = [
    added(0, {"id": "msg_1", "type": "message", "content": []}),
    added(1, {"id": "rs_1", "type": "reasoning", "summary": []}),
    added(2, {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "f"}),
    added(3, {"id": "ci_1", "type": "code_interpreter_call", "code": ""}),
    added(4, {"id": "mcp_1", "type": "mcp_call", "name": "roll", "server_label": "dice"}),
]
RANDOM_KINDS = {
    "response.output_text.delta": ("msg_1", 0, "content_index"),
    "response.refusal.delta": ("msg_1", 0, "content_index"),
    "response.reasoning_summary_text.delta": ("rs_1", 1, "summary_index"),
    "response.reasoning_text.delta": ("rs_1", 1, "content_index"),
    "response.function_call_arguments.delta": ("fc_1", 2, None),
    "response.code_interpreter_call_code.delta": ("ci_1", 3, None),
    "response.mcp_call_arguments.delta": ("mcp_1", 4, None),
    "response.shell_call_command.delta": ("ci_1", 3, None),
    "response.output_text.annotation.added": ("msg_1", 0, "content_index"),
    "response.code_interpreter_call.interpreting": ("ci_1", 3, None),
    "response.code_interpreter_call_code.done": ("ci_1", 3, None),
    "response.output_text.done": ("msg_1", 0, "content_index"),
    "response.content_part.done": ("msg_1", 0, "content_index"),
    "response.reasoning_summary_part.done": ("rs_1", 1, "summary_index"),
    "response.function_call_arguments.done": ("fc_1", 2, None),
    "keepalive": ("msg_1", 0, None),
}
NEAR = st.sampled_from([0, 1, -1, True, 0.0, 10**6, None, "0", DROP])
RANDOM_IDS = st.sampled_from(["msg_1", "rs_1", "fc_1", "ci_1", "mcp_1", "", 3, None, DROP])
RANDOM_DELTAS = st.sampled_from(["x", "yz", "", 5, None, ["x"], DROP])


@st.composite
def random_frames(draw: st.DrawFn, kinds: list[str]) -> dict[str, Any]:
    """A frame of one of ``kinds``, well formed but for up to three near-miss fields."""
    kind = draw(st.sampled_from(kinds))
    item_id, index, part_field = RANDOM_KINDS[kind]
    frame: dict[str, Any] = {"type": kind, "item_id": item_id, "output_index": index}
    if part_field is not None:
        frame[part_field] = 0
    frame |= {
        "delta": "ab",
        "text": "abcdefgh",
        "arguments": "{}",
        "part": {"type": "output_text", "text": "abcdefgh", "annotations": ANNOTATIONS},
        "annotation": ANNOTATIONS[1],
    }
    changes = {
        "item_id": RANDOM_IDS,
        "output_index": NEAR,
        "content_index": NEAR,
        "summary_index": NEAR,
        "delta": RANDOM_DELTAS,
        "type": st.sampled_from(sorted(RANDOM_KINDS)),
    }
    for key in draw(st.lists(st.sampled_from(sorted(changes)), max_size=3)):
        frame[key] = draw(changes[key])
    return {k: v for k, v in frame.items() if v is not DROP}


@st.composite
def random_streams(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Frames of a few of ``RANDOM_KINDS`` (so that related frames often follow each other)."""
    kinds = draw(st.lists(st.sampled_from(sorted(RANDOM_KINDS)), min_size=1, max_size=3))
    frames = draw(st.lists(random_frames(kinds), max_size=12))
    return [created(), *ITEMS, *frames, completed(USAGE)]


@settings(max_examples=500, deadline=None)
@given(random_streams())
def test_any_stream_gives_the_events_of_the_general_path(stream: list[dict[str, Any]]) -> None:
    assert outcome(DIALECT.parse_frame, stream) == outcome(openai_responses._parse_general, stream)


def outcome(
    parse_frame: Callable[[ChatStreamContext, Any], None], frames: list[Any]
) -> tuple[list[ChatEvent], str | None]:
    """The events ``parse_frame`` sends for ``frames``, and the protocol error that ends them."""
    for count in range(len(frames), -1, -1):
        try:
            events, _stage = feed(parse_frame, frames[:count])
        except ChatProtocolError as exc:
            error = str(exc)
            continue
        return events, (error if count < len(frames) else None)
    raise AssertionError("unreachable")


def test_an_error_downstream_of_a_fast_delta_is_not_swallowed() -> None:
    sent: list[ChatEvent] = []
    errors: list[Exception] = []

    def on_next(event: ChatEvent) -> None:
        if event.text == "x":
            raise KeyError("downstream")
        sent.append(event)

    stage = ParseStage(DIALECT, Observer(on_next, errors.append))
    for frame in hot_text():
        stage.on_next(frame)
    with pytest.raises(KeyError, match="downstream"):
        stage.on_next(hot_text({"delta": "x"})[-1])
    assert [e.text for e in of(sent, T.TEXT_DELTA)] == ["a", "b"] and not errors


# the whole pipeline


def test_replay_aggregates_a_fixture_stream() -> None:
    from solon_events.replay import replay

    frames = [
        created(),
        *reasoning_stream((("Think",),)),
        *message_stream(index=1, parts=("Hello", " there")),
        *function_call_stream("fc_1", "call_1", "weather", ('{"city":"Oslo"}',), index=2),
        completed(USAGE),
    ]
    events: list[ChatEvent] = []
    errors: list[BaseException] = []
    replay([orjson.dumps(f) for f in frames], dialect="openai-responses").subscribe(
        events.append, errors.append
    )
    assert errors == []
    final = events[-1]
    assert final.type is T.RESPONSE_END
    assert (final.response.text, final.response.thinking) == ("Hello there", "Think")
    call = final.response.tool_calls[0]
    assert (call.id, call.name, call.arguments) == ("call_1", "weather", {"city": "Oslo"})
    assert final.response.finish_reason == "completed"
    assert final.response.usage.prompt_tokens == 120


# request building


def build(**request: Any) -> Any:
    fields = {"model": "gpt-test", "messages": (UserMessage(text="hi"),)} | request
    return DIALECT.build_request(
        ChatRequest(**fields),
        api_url="https://api.example/v1/responses",
        api_key="sk-secret",
        headers={"X-Extra": "1"},
    )


def test_request_has_bearer_auth_stream_and_url() -> None:
    http = build()
    assert http.url == "https://api.example/v1/responses"
    assert http.headers["Authorization"] == "Bearer sk-secret"
    assert http.headers["X-Extra"] == "1"
    assert http.body["stream"] is True
    assert http.body["model"] == "gpt-test"
    assert "sk-secret" not in repr(http)
    assert orjson.loads(http.body_bytes())["input"] == [
        {"type": "message", "role": "user", "content": "hi"}
    ]


def test_request_without_a_key_sends_no_authorization() -> None:
    http = DIALECT.build_request(
        ChatRequest(model="m", messages=(UserMessage(text="hi"),)), api_url="http://x/v1/responses"
    )
    assert "Authorization" not in http.headers


def test_request_translates_the_conversation_into_input_items() -> None:
    call = ToolCall(id="call_1", name="weather", arguments={"city": "Oslo"})
    messages = (
        SystemMessage(text="Be brief."),
        UserMessage(
            text="Look:",
            blocks=(
                ImageBlock(url="https://img.example/a.png"),
                ImageBlock(data="QUJD", mime_type="image/jpeg"),
                FileBlock(file_id="file-1"),
            ),
        ),
        AssistantMessage(text="Checking.", tool_calls=(call,)),
        ToolMessage(tool_call_id="call_1", name="weather", content="Sunny"),
    )
    body = orjson.loads(build(messages=messages).body_bytes())
    assert body["input"] == [
        {"type": "message", "role": "system", "content": "Be brief."},
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_text", "text": "Look:"},
                {"type": "input_image", "image_url": "https://img.example/a.png"},
                {"type": "input_image", "image_url": "data:image/jpeg;base64,QUJD"},
                {"type": "input_file", "file_id": "file-1"},
            ],
        },
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Checking."}],
        },
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "weather",
            "arguments": '{"city":"Oslo"}',
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "Sunny"},
    ]


def test_request_tools_are_functions_and_options_override() -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}}
    tool = ToolSpec(name="weather", description="Weather now.", parameters=schema)
    http = build(tools=(tool,), options={"temperature": 0.2, "reasoning": {"effort": "low"}})
    body = orjson.loads(http.body_bytes())
    assert body["tools"] == [
        {"type": "function", "name": "weather", "description": "Weather now.", "parameters": schema}
    ]
    assert (body["temperature"], body["reasoning"]) == (0.2, {"effort": "low"})
    overridden = build(options={"stream": False, "model": "other"})
    assert (overridden.body["stream"], overridden.body["model"]) == (False, "other")


def test_request_with_an_unknown_message_type_is_refused() -> None:
    with pytest.raises(TypeError):
        build(messages=(object(),))


# the recorded corpus


def _responses(frames: list[Any]) -> list[list[Any]]:
    """A recording split into provider responses (a tool loop records several)."""
    responses: list[list[Any]] = [[]]
    for frame in frames:
        ended = any(f.get("type") in TERMINAL for f in responses[-1])
        if frame.get("type") == "response.created" and ended:
            responses.append([])
        responses[-1].append(frame)
    return responses


def _thinking_parts(terminal: dict[str, Any]) -> list[str]:
    """Summary and reasoning texts of the reasoning items of a terminal response payload."""
    parts = []
    for item in terminal.get("response", {}).get("output") or []:
        if item.get("type") == "reasoning":
            for part in [*(item.get("summary") or []), *(item.get("content") or [])]:
                if part.get("text"):
                    parts.append(part["text"])
    return parts


RECORDINGS = corpus_paths("openai-responses")


test_corpus_is_present = corpus_presence_test(RECORDINGS, at_least=10)


@pytest.mark.parametrize("path", RECORDINGS)
def test_corpus_recording_matches_its_expected_result(path: Path) -> None:
    frames, expected = corpus_recording(path)
    steps = _responses(frames)
    for earlier in steps[:-1]:
        _, ctx = parse(earlier)
        assert (ctx.finish_reason, ctx.failure) == ("completed", None)
    events, ctx = parse(steps[-1])

    assert texts(events, T.TEXT_DELTA) == expected["text"]
    summary = "".join(e.text or "" for e in of(events, T.THINKING_DELTA) if e.sub_type == "summary")
    assert summary == expected["thinking_summary"]
    if steps[-1][-1].get("type") in TERMINAL:
        assert texts(events, T.THINKING_DELTA) == "\n\n".join(_thinking_parts(steps[-1][-1]))

    calls = [e.tool_call for e in of(events, T.TOOL_CALL_END)]
    assert [(c.id, c.name) for c in calls] == [(c["id"], c["name"]) for c in expected["tool_calls"]]
    for call, want in zip(calls, expected["tool_calls"]):
        if isinstance(want["arguments"], str):
            assert call.arguments_str == want["arguments"]
        else:
            assert call.arguments == want["arguments"]

    usages = of(events, T.USAGE)
    if expected["usage"] is None:
        assert usages == []
    else:
        usage = usages[-1].usage
        got = (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens)
        want_usage = expected["usage"]
        assert got == (
            want_usage["prompt_tokens"],
            want_usage["completion_tokens"],
            want_usage["total_tokens"],
        )
    assert ctx.finish_reason == expected["finish_reason"]
    if "error" in expected:
        assert isinstance(ctx.failure, ProviderError)
        assert dict(ctx.failure.provider_error) == expected["error"]
    else:
        assert ctx.failure is None
