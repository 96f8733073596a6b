"""Tool approval (human in the loop) in the tool loop, against real providers on 127.0.0.1.

The embedded provider's ``weather`` scenario calls the first declared tool, then answers
quoting the tool result it is sent back ("It is <result> in Paris right now.", or "... the
call was denied (<reason>)." for a denial), so what the model read of an approved or a
denied call shows in its answer; ``agent:<n>:<tag>``
calls a declared tool on each of n turns. A small aiohttp provider below answers one step
with two parallel calls.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import orjson
import pytest
from aiohttp import web
from hypothesis import given
from hypothesis import strategies as st
from reactivex import operators as ops
from serving import serving_in_thread
from sockets import wait_for

from solon_events import (
    AssistantMessage,
    ChatError,
    ChatEventFilter,
    ChatEventType,
    ChatModel,
    ImageBlock,
    PendingApproval,
    StepResult,
    SystemMessage,
    TextBlock,
    ToolCall,
    ToolMessage,
    UserMessage,
    step_count_is,
    tool,
)
from solon_events.devserver import RunningServer
from solon_events.event_model.approvals import (
    approval_id,
    denied_text,
    message_from_json,
    message_to_json,
    parse_approval_id,
)

T = ChatEventType
TAG = itertools.count().__next__
RAN: list[tuple[str, dict[str, Any]]] = []


@pytest.fixture(autouse=True)
def _forget_runs() -> Iterator[None]:
    RAN.clear()
    yield
    RAN.clear()


@tool(requires_approval=True)
def get_weather(city: str) -> str:
    """The weather in a city.

    Args:
        city: The city.
    """
    RAN.append(("get_weather", {"city": city}))
    return f"18°C and sunny ({city})"


@tool(requires_approval=lambda args: args.get("city") != "Paris")
def forecast(city: str) -> str:
    """Tomorrow's weather in a city (free for Paris, approved elsewhere).

    Args:
        city: The city.
    """
    RAN.append(("forecast", {"city": city}))
    return f"rain tomorrow ({city})"


@tool
def local_time(city: str) -> str:
    """The local time in a city.

    Args:
        city: The city.
    """
    RAN.append(("local_time", {"city": city}))
    return f"noon ({city})"


def events_of(prompt: Any) -> list[Any]:
    return prompt.event_filter(ChatEventFilter.all()).stream().pipe(ops.to_list()).run()


def paused(model: ChatModel, *tools: Any) -> tuple[list[Any], PendingApproval]:
    events = events_of(model.prompt("What is the weather in Paris?").tools(*tools))
    pending = events[-1].response.pending_approval
    assert pending is not None
    return events, pending


class Paused(NamedTuple):
    """A "weather" model, its first response's events and what it paused on: the pending
    approval and its one call (get_weather, which requires approval)."""

    model: ChatModel
    events: list[Any]
    pending: PendingApproval
    call: ToolCall


@pytest.fixture
def weather_paused(server: RunningServer, make_model: Callable[..., ChatModel]) -> Paused:
    model = make_model(server, "weather")
    events, pending = paused(model, get_weather)
    return Paused(model, events, pending, pending.tool_calls[0])


def test_the_loop_stops_before_a_call_that_requires_approval(
    server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    model = make_model(server, "weather")
    before = len(server.requests)
    events, pending = paused(model, get_weather)
    assert RAN == []  # never run on the model's word alone
    assert len(server.requests) == before + 1  # and nothing more was asked
    kinds = [e.type for e in events]
    assert T.TOOL_RESULT not in kinds
    assert kinds[-3:] == [T.USAGE, T.STEP_END, T.RESPONSE_END]
    step_end, end = events[-2], events[-1]
    (call,) = end.response.tool_calls
    assert pending.tool_calls == (call,) and call.name == "get_weather"
    assert call.arguments == {"city": "Paris"}
    assert step_end.response.pending_approval == pending  # the step ends with the call pending
    assert end.response.finish_reason == "tool_calls"
    assert pending.response_id == end.response_id and pending.step == 0
    assert [s.step for s in pending.steps] == [0]
    assert pending.steps[0].tool_results == ()
    assert pending.messages == (UserMessage(text="What is the weather in Paris?"),)
    assert pending.approval_id(call.id) == f"{end.response_id}:{call.id}"


def test_an_approved_call_runs_and_the_response_goes_on(
    server: RunningServer, weather_paused: Paused
) -> None:
    model, first, pending, call = weather_paused
    count = len(server.requests)
    events = events_of(model.prompt(pending).tools(get_weather).approve(call.id))
    assert RAN == [("get_weather", {"city": "Paris"})]
    kinds = [e.type for e in events]
    assert kinds[:4] == [T.RESPONSE_START, T.STEP_START, T.TOOL_RESULT, T.STEP_END]
    assert events[1].sub_type == events[3].sub_type == "resumed"
    assert [e.step for e in events[1:4]] == [0, 0, 0]  # the paused step, finished
    result = events[2]
    assert result.tool_call_id == call.id and result.text == "18°C and sunny (Paris)"
    assert "denied" not in result.attrs
    assert [e.step for e in events if e.type is T.STEP_START] == [0, 1]
    end = events[-1]
    assert end.type is T.RESPONSE_END and end.step == 1
    assert "18°C and sunny (Paris)" in end.response.text  # what the model read
    assert end.response.pending_approval is None
    assert end.response_id != first[-1].response_id  # a response of its own
    # its usage counts its own step: the paused step's was the first response's
    assert end.usage == events[-2].usage == events[-2].response.usage
    sent = server.requests[count].body["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool"]
    assert sent[1]["tool_calls"][0]["id"] == call.id
    assert sent[2] == {
        "role": "tool",
        "tool_call_id": call.id,
        "content": "18°C and sunny (Paris)",
    }


def test_a_denied_call_goes_back_to_the_model_as_a_tool_result_saying_so(
    server: RunningServer, weather_paused: Paused
) -> None:
    model, _, pending, call = weather_paused
    count = len(server.requests)
    events = events_of(model.prompt(pending).tools(get_weather).deny(call.id, "not today"))
    assert RAN == []
    (result,) = [e for e in events if e.type is T.TOOL_RESULT]
    assert result.attrs["denied"] is True and result.attrs["is_error"] is False
    assert result.text == denied_text("not today")
    assert "not today" in result.text and "denied" in result.text
    sent = server.requests[count].body["messages"]
    assert sent[-1] == {
        "role": "tool",
        "tool_call_id": call.id,
        "content": denied_text("not today"),
    }
    # what the model read
    assert "the call was denied (not today)." in events[-1].response.text
    _, paused_again = paused(model, get_weather)  # a state continues once: another pause
    (asked_again,) = paused_again.tool_calls
    again = events_of(model.prompt(paused_again).tools(get_weather).deny(asked_again.id))
    assert again[-1].response.text.endswith("the call was denied.")


def test_approve_may_run_the_call_with_other_arguments(weather_paused: Paused) -> None:
    model, _, pending, call = weather_paused
    prompt = model.prompt(pending).tools(get_weather)
    events = events_of(prompt.approve(call.id, arguments={"city": "Lyon"}))
    assert RAN == [("get_weather", {"city": "Lyon"})]
    (result,) = [e for e in events if e.type is T.TOOL_RESULT]
    assert result.tool_call.arguments == {"city": "Lyon"}
    assert "18°C and sunny (Lyon)" in events[-1].response.text


def test_a_predicate_of_the_arguments_decides_which_calls_wait(
    server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    # forecast asks for approval except for Paris: the model's call for Paris runs at once
    model = make_model(server, "weather")
    response = model.prompt("Weather in Paris?").tools(forecast).call()
    assert RAN == [("forecast", {"city": "Paris"})]
    assert response.pending_approval is None
    assert "rain tomorrow (Paris)" in response.text
    assert forecast.needs_approval({"city": "Lyon"}) and not forecast.needs_approval(
        {"city": "Paris"}
    )

    @tool(requires_approval=lambda args: args["city"].startswith("P"))
    def strict_forecast(city: str) -> str:
        """Tomorrow's weather (approved for P cities).

        Args:
            city: The city.
        """
        return "rain"

    waiting = model.prompt("Weather in Paris?").tools(strict_forecast).call()
    assert [c.name for c in waiting.pending_approval.tool_calls] == ["strict_forecast"]


def test_a_predicate_that_raises_fails_the_response_naming_the_tool(
    server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    @tool(requires_approval=lambda args: args["no such argument"])
    def weather(city: str) -> str:
        """Weather.

        Args:
            city: The city.
        """
        return "sunny"

    model = make_model(server, "weather")
    with pytest.raises(
        ChatError, match=r"requires_approval predicate of tool 'weather' raised KeyError"
    ):
        model.prompt("Weather?").tools(weather).call()


def test_the_pending_approval_is_json_and_continues_in_another_model(
    server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    """What a web request keeps between two requests: JSON text, read by another model
    (another process would build its own the same way)."""
    _, pending = paused(make_model(server, "weather"), get_weather)
    kept = orjson.dumps(pending.to_json())
    again = PendingApproval.from_json(orjson.loads(kept))
    assert again == pending
    other = make_model(server, "weather")
    call_id = again.tool_calls[0].id
    response = other.prompt(again).tools(get_weather).approve(call_id).call()
    assert "18°C and sunny (Paris)" in response.text
    with pytest.raises(ValueError, match="not a pending approval"):
        PendingApproval.from_json({"format": 1, "response_id": "r"})
    with pytest.raises(ValueError, match="not a pending approval"):
        PendingApproval.from_json([1, 2])


def test_every_pending_call_must_be_decided_and_only_those(weather_paused: Paused) -> None:
    model, _, pending, _ = weather_paused
    prompt = model.prompt(pending).tools(get_weather)
    assert prompt.pending_calls == (pending.tool_calls[0].id,)
    with pytest.raises(ValueError, match="not decided: 'call_"):
        prompt.stream()
    with pytest.raises(ValueError, match="no pending tool call 'nope'"):
        prompt.approve("nope")
    with pytest.raises(ValueError, match="continue a response paused for approval"):
        model.prompt("Hi").approve("x")
    decided = prompt.deny(pending.tool_calls[0].id).approve(pending.tool_calls[0].id)
    assert decided.pending_calls == ()  # the later decision stands
    assert "18°C and sunny (Paris)" in decided.call().text


def test_a_response_pauses_at_each_step_and_numbers_its_steps_on(
    server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    model = make_model(server, f"agent:3:{TAG()}")
    prompt = model.prompt("Go").tools(get_weather)
    response = prompt.call()
    steps_seen = []
    while response.pending_approval is not None:
        pending = response.pending_approval
        steps_seen.append(pending.step)
        assert [s.step for s in pending.steps] == list(range(pending.step + 1))
        events = events_of(
            model.prompt(pending).tools(get_weather).approve(pending.tool_calls[0].id)
        )
        assert events[1].step == pending.step and events[1].sub_type == "resumed"
        response = events[-1].response
    assert steps_seen == [0, 1, 2]
    assert response.text == "Done after 3 tool calls."
    assert len(RAN) == 3
    sent = server.requests[-1].body["messages"]
    assert [m["role"] for m in sent] == ["user"] + ["assistant", "tool"] * 3


def test_stop_conditions_and_max_steps_count_the_steps_before_the_pause(
    server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    model = make_model(server, f"agent:3:{TAG()}")
    first = model.prompt("Go").tools(get_weather).call()
    pending = first.pending_approval
    count = len(server.requests)
    prompt = model.prompt(pending).tools(get_weather).stop_when(step_count_is(1))
    events = events_of(prompt.approve(pending.tool_calls[0].id))
    assert len(server.requests) == count  # one step ran in all: no new request
    assert [e.type for e in events] == [
        T.RESPONSE_START, T.STEP_START, T.TOOL_RESULT, T.STEP_END, T.RESPONSE_END
    ]  # fmt: skip
    assert events[-1].response.tool_calls == first.tool_calls
    limited = make_model(server, f"agent:3:{TAG()}", max_steps=1)
    pending = limited.prompt("Go").tools(get_weather).call().pending_approval
    with pytest.raises(ChatError, match="limit of 1 steps"):
        limited.prompt(pending).tools(get_weather).approve(pending.tool_calls[0].id).call()


def test_astream_continues_a_paused_response_too(
    server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    model = make_model(server, "weather")

    async def main() -> tuple[Any, Any]:
        first = await model.prompt("Weather in Paris?").tools(get_weather).acall()
        pending = first.pending_approval
        prompt = model.prompt(pending).tools(get_weather).deny(pending.tool_calls[0].id, "no")
        return first, [
            event async for event in prompt.event_filter(ChatEventFilter.all()).astream()
        ]

    first, events = asyncio.run(main())
    assert first.pending_approval is not None and RAN == []
    assert "the call was denied (no)." in events[-1].response.text


# Two calls in one step: a small provider speaking Chat Completions.


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    body = {"id": "c1", "object": "chat.completion.chunk", "model": "m", "choices": [choice]}
    return b"data: " + orjson.dumps(body) + b"\n\n"


def two_calls_provider() -> tuple[web.Application, list[Any]]:
    """Answers a conversation without tool results with two calls (get_weather and
    local_time, both for Paris), and one with them with the results' texts in order."""
    bodies: list[Any] = []

    async def chat(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        bodies.append(body)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        results = [m["content"] for m in body["messages"] if m["role"] == "tool"]
        if results:
            await response.write(_chunk({"role": "assistant", "content": " | ".join(results)}))
            await response.write(_chunk({}, "stop"))
        else:
            for index, name in enumerate(["get_weather", "local_time"]):
                call = {"index": index, "id": f"call_{name}", "type": "function"}
                call["function"] = {"name": name, "arguments": '{"city": "Paris"}'}
                await response.write(_chunk({"tool_calls": [call]}))
            await response.write(_chunk({}, "tool_calls"))
        await response.write(b"data: [DONE]\n\n")
        return response

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    return app, bodies


def test_the_other_calls_of_the_step_run_before_it_pauses() -> None:
    app, bodies = two_calls_provider()
    with serving_in_thread(app) as url, ChatModel(url + "/v1/chat/completions", "m") as model:
        events = events_of(
            model.prompt("Weather and time in Paris?").tools(get_weather, local_time)
        )
        assert RAN == [("local_time", {"city": "Paris"})]
        (result,) = [e for e in events if e.type is T.TOOL_RESULT]
        assert result.tool_call_id == "call_local_time"
        pending = events[-1].response.pending_approval
        assert [c.id for c in pending.tool_calls] == ["call_get_weather"]
        assert pending.steps[0].tool_results == (
            ToolMessage(tool_call_id="call_local_time", name="local_time", content="noon (Paris)"),
        )
        again = events_of(
            model.prompt(pending).tools(get_weather, local_time).approve("call_get_weather")
        )
        assert [e.tool_call_id for e in again if e.type is T.TOOL_RESULT] == ["call_get_weather"]
    # the model is sent both results, in the order of its calls
    assert [m["tool_call_id"] for m in bodies[-1]["messages"] if m["role"] == "tool"] == [
        "call_get_weather",
        "call_local_time",
    ]
    assert again[-1].response.text == "18°C and sunny (Paris) | noon (Paris)"


def test_approval_ids_name_the_paused_response_and_the_call() -> None:
    assert approval_id("resp_1", "call:a") == "resp_1:call:a"
    assert parse_approval_id("resp_1:call:a") == ("resp_1", "call:a")
    for bad in ("resp_1", ":x", "resp_1:", 3):
        with pytest.raises(ValueError):
            parse_approval_id(bad)  # type: ignore[arg-type]


def test_a_tool_says_whether_it_requires_approval() -> None:
    assert get_weather.requires_approval is True and local_time.requires_approval is False
    assert get_weather.needs_approval({}) and not local_time.needs_approval({})
    assert "requires_approval=True" in repr(get_weather)
    with pytest.raises(TypeError, match="requires_approval is True, False or a predicate"):
        tool(requires_approval="yes")(lambda city: city)  # type: ignore[call-overload]


# The JSON of a pending approval, for any conversation.

texts = st.text(max_size=20)
json_values = st.one_of(st.integers(-(2**63), 2**63 - 1), texts, st.booleans(), st.none())
calls = st.builds(
    ToolCall,
    id=st.one_of(st.none(), st.from_regex(r"call_[a-z0-9]{1,8}", fullmatch=True)),
    name=st.from_regex(r"[a-z_]{1,10}", fullmatch=True),
    arguments=st.dictionaries(texts, json_values, max_size=3),
)
messages = st.one_of(
    st.builds(SystemMessage, text=texts),
    st.builds(
        UserMessage,
        text=texts,
        blocks=st.lists(
            st.one_of(
                st.builds(TextBlock, text=texts),
                st.builds(
                    ImageBlock,
                    data=st.text(min_size=1, max_size=20),
                    mime_type=st.just("image/png"),
                ),
            ),
            max_size=2,
        ),
    ),
    st.builds(
        AssistantMessage,
        text=texts,
        thinking=texts,
        tool_calls=st.lists(calls, max_size=2),
        metadata=st.one_of(st.none(), st.fixed_dictionaries({"thinking_signature": texts})),
    ),
    st.builds(
        ToolMessage,
        tool_call_id=st.one_of(st.none(), texts),
        name=texts,
        content=texts,
        is_error=st.booleans(),
    ),
)


@given(st.lists(messages, min_size=1, max_size=5), st.lists(calls, min_size=1, max_size=2))
def test_a_pending_approval_reads_back_equal_from_its_json(
    conversation: list[Any], pending_calls: list[ToolCall]
) -> None:
    for message in conversation:
        assert message_from_json(orjson.loads(orjson.dumps(message_to_json(message)))) == message
    assistant = AssistantMessage(text="", tool_calls=pending_calls)
    from solon_events import ChatResponse

    pending = PendingApproval(
        response_id="resp_x",
        messages=conversation,
        steps=[
            StepResult(step=0, response=ChatResponse(message=assistant, finish_reason="tool_calls"))
        ],
        tool_calls=pending_calls,
    )
    again = PendingApproval.from_json(orjson.loads(orjson.dumps(pending.to_json())))
    assert again == pending
    assert again.to_json() == pending.to_json()


# --- what runs is what was shown, once; a state that travels can be signed (#42)


def edited(pending: PendingApproval, change: Callable[[dict[str, Any]], None]) -> PendingApproval:
    """``pending`` through JSON with the paused step's call edited by ``change`` (what the
    approver is shown, ``tool_calls``, left as it was)."""
    data = pending.to_json()
    change(data["steps"][-1]["response"]["message"]["tool_calls"][0])
    return PendingApproval.from_json(data)


def other_arguments(call: dict[str, Any]) -> None:
    call["arguments"], call["arguments_str"] = {"city": "Atlantis"}, '{"city": "Atlantis"}'


def another_tool(call: dict[str, Any]) -> None:
    call["name"] = "local_time"


@pytest.mark.parametrize("change", [other_arguments, another_tool])
def test_an_edited_state_runs_nothing(
    weather_paused: Paused, change: Callable[[dict[str, Any]], None]
) -> None:
    model, _, pending, call = weather_paused
    forged = edited(pending, change)
    assert forged.tool_calls == pending.tool_calls  # the approver sees the same call
    prompt = model.prompt(forged).tools(get_weather, local_time).approve(call.id)
    with pytest.raises(ChatError, match=r"would not run the call .* it shows for approval"):
        prompt.call()
    events = events_of_failed(prompt)
    assert events[-1].type is T.ERROR and not [e for e in events if e.type is T.TOOL_RESULT]
    assert RAN == []


def events_of_failed(prompt: Any) -> list[Any]:
    events: list[Any] = []
    prompt.event_filter(ChatEventFilter.all()).stream().subscribe(events.append, lambda _e: None)
    assert wait_for(lambda: bool(events) and events[-1].type is T.ERROR, 10)
    return events


@pytest.mark.parametrize("again", ["subscribed again", "read from its JSON", "acall"])
def test_a_state_continues_once(weather_paused: Paused, again: str) -> None:
    model, _, pending, call = weather_paused
    prompt = model.prompt(pending).tools(get_weather).approve(call.id)
    assert "18°C" in prompt.call().text
    if again == "subscribed again":
        second = prompt
    else:
        copy = PendingApproval.from_json(orjson.loads(orjson.dumps(pending.to_json())))
        second = model.prompt(copy).tools(get_weather).approve(call.id)
    with pytest.raises(ChatError, match="continued already"):
        if again == "acall":
            asyncio.run(second.acall())
        else:
            second.call()
    assert RAN == [("get_weather", {"city": "Paris"})]  # once


KEY = b"the-applications-own-key-012345"


def test_a_signed_state_is_read_back_only_as_it_was_written(weather_paused: Paused) -> None:
    _, _, pending, _ = weather_paused
    data = pending.to_json(key=KEY)
    assert data["signature"].startswith("hmac-sha256:")
    assert PendingApproval.from_json(orjson.loads(orjson.dumps(data)), key=KEY) == pending
    forged = orjson.loads(orjson.dumps(data))
    forged["tool_calls"][0]["name"] = "local_time"
    with pytest.raises(ValueError, match="signature does not match"):
        PendingApproval.from_json(forged, key=KEY)
    with pytest.raises(ValueError, match="signature does not match"):
        PendingApproval.from_json(data, key=b"another-key-0123456789abcdef")
    with pytest.raises(ValueError, match="no signature"):
        PendingApproval.from_json(pending.to_json(), key=KEY)
    with pytest.raises(ValueError, match="16 bytes"):
        pending.to_json(key="short")
