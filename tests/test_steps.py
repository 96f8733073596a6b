"""Stop conditions and per-step preparation of the tool loop, against the embedded provider.

The provider's ``agent:<n>:<tag>`` scenario calls a declared tool each turn (the first,
then the second, ... in turn) for n turns, then answers (it counts the requests with its
model name: each test's tag makes a name of its own); the model name of each request picks
the scenario, so a step prepared with another model name is answered by another scenario.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from reactivex import operators as ops

from solon_events import (
    ChatError,
    ChatEventFilter,
    ChatEventType,
    ChatModel,
    StepContext,
    StepResult,
    StepSettings,
    ToolMessage,
    UserMessage,
    has_tool_call,
    step_count_is,
    tool,
)
from solon_events.devserver import ROUTES as WIRE_ROUTES
from solon_events.devserver import RunningServer

T = ChatEventType
WIRES = {dialect: wire for _path, wire, dialect in WIRE_ROUTES}
TAG = itertools.count().__next__
"""A new tag for each model name (the scenario counts the requests that carry its name)."""


@tool
def search(query: str) -> str:
    """Search the notes.

    Args:
        query: What to look for.
    """
    return f"found {query}"


@tool
def finish(answer: str) -> str:
    """Give the final answer.

    Args:
        answer: The answer.
    """
    return f"final: {answer}"


def events_of(prompt: Any) -> list[Any]:
    return prompt.event_filter(ChatEventFilter.all()).stream().pipe(ops.to_list()).run()


def sent(server: RunningServer, since: int) -> list[Any]:
    """The requests the provider read since ``since``, in our terms."""
    return [WIRES["openai"].read_request(r.body) for r in server.requests[since:]]


@pytest.mark.parametrize("dialect", ["openai", "anthropic", "gemini"])
def test_without_conditions_the_loop_runs_until_the_model_answers(
    server: RunningServer, make_model: Callable[..., ChatModel], dialect: str
) -> None:
    model = make_model(server, f"agent:3:{TAG()}", dialect)
    events = events_of(model.prompt("Go").tools(search, finish))
    assert [e.step for e in events if e.type is T.STEP_END] == [0, 1, 2, 3]
    assert events[-1].response.text == "Done after 3 tool calls."


def test_step_count_is_stops_after_that_many_steps(
    server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    model = make_model(server, f"agent:5:{TAG()}")
    before = len(server.requests)
    events = events_of(model.prompt("Go").tools(search, finish).stop_when(step_count_is(2)))
    assert len(server.requests) == before + 2  # no third request
    assert [e.step for e in events if e.type is T.STEP_END] == [0, 1]
    assert [e.text for e in events if e.type is T.TOOL_RESULT] == [
        "found Paris",
        "final: Paris",
    ]
    end = events[-1]
    assert end.type is T.RESPONSE_END
    assert [c.name for c in end.response.tool_calls] == ["finish"]  # the last step's calls
    assert end.response.finish_reason == "tool_calls"
    assert end.usage.prompt_tokens == 30 + 40  # both steps' usage


@pytest.mark.parametrize("dialect", ["openai", "anthropic"])
def test_has_tool_call_stops_once_that_tool_ran(
    server: RunningServer, make_model: Callable[..., ChatModel], dialect: str
) -> None:
    model = make_model(server, f"agent:5:{TAG()}", dialect)
    before = len(server.requests)
    response = model.prompt("Go").tools(search, finish).stop_when(has_tool_call("finish")).call()
    assert len(server.requests) == before + 2
    assert [c.name for c in response.tool_calls] == ["finish"]


def test_any_callable_and_the_first_condition_that_holds(
    server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    seen: list[tuple[StepResult, ...]] = []

    def two_results(steps: Sequence[StepResult]) -> bool:
        seen.append(tuple(steps))
        return sum(len(step.tool_results) for step in steps) >= 2

    model = make_model(server, f"agent:5:{TAG()}")
    prompt = model.prompt("Go").tools(search, finish)
    response = prompt.stop_when(has_tool_call("nothing"), two_results).call()
    assert [c.name for c in response.tool_calls] == ["finish"]
    assert [len(steps) for steps in seen] == [1, 2]
    first = seen[1][0]
    assert first.step == 0 and [c.name for c in first.tool_calls] == ["search"]
    assert first.tool_results == (
        ToolMessage(tool_call_id=first.tool_calls[0].id, name="search", content="found Paris"),
    )
    assert first.finish_reason == "tool_calls" and first.usage.prompt_tokens == 30


def test_max_steps_stays_the_backstop(
    server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    model = make_model(server, f"agent:9:{TAG()}", max_steps=3)
    with pytest.raises(ChatError, match="limit of 3 steps"):
        model.prompt("Go").tools(search).stop_when(has_tool_call("finish")).call()


def test_a_condition_that_raises_fails_the_response_naming_it(
    server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    def broken(steps: Sequence[StepResult]) -> bool:
        raise KeyError("oops")

    model = make_model(server, f"agent:3:{TAG()}")
    events: list[Any] = []
    errors: list[Exception] = []
    prompt = model.prompt("Go").tools(search).stop_when(broken).event_filter(ChatEventFilter.all())
    prompt.stream().subscribe(events.append, errors.append)
    _wait(lambda: errors)
    assert isinstance(errors[0], ChatError)
    assert "stop condition" in str(errors[0]) and "broken" in str(errors[0])
    assert "KeyError" in str(errors[0])
    assert [e.type for e in events[-3:]] == [T.TOOL_RESULT, T.STEP_END, T.ERROR]


def test_prepare_step_changes_the_model_tools_messages_and_options(
    server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    told: list[StepContext] = []

    def prepare(context: StepContext) -> StepSettings | None:
        told.append(context)
        if context.step == 0:
            return StepSettings(tools=[search], options={"temperature": 0.5})
        if context.step == 1:  # only the last turn, and only finish
            return StepSettings(messages=context.messages[-2:], tools=[finish])
        return StepSettings(model="weather")  # another scenario answers with the results

    name = f"agent:9:{TAG()}"
    model = make_model(server, name)
    before = len(server.requests)
    response = model.prompt("Go").tools(search, finish).prepare_step(prepare).call()
    requests = sent(server, before)
    assert len(requests) == 3
    assert [[t.name for t in r.tools] for r in requests] == [
        ["search"],
        ["finish"],
        ["search", "finish"],
    ]
    assert [r.model for r in requests] == [name, name, "weather"]
    assert server.requests[before].body["temperature"] == 0.5
    assert "temperature" not in server.requests[before + 1].body
    bodies = [r.body["messages"] for r in server.requests[before:]]
    assert [m["role"] for m in bodies[1]] == ["assistant", "tool"]  # the last turn alone
    assert [m["role"] for m in bodies[2]] == ["user", "assistant", "tool", "assistant", "tool"]
    assert response.text == "It is final: Paris in Paris right now."
    assert [c.step for c in told] == [0, 1, 2]
    assert told[0].steps == () and told[0].messages == (UserMessage(text="Go"),)
    assert told[0].model == name and [t.name for t in told[0].tools] == ["search", "finish"]
    assert [s.step for s in told[2].steps] == [0, 1]


def test_an_async_prepare_step_and_stop_when_together(
    server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    async def prepare(context: StepContext) -> StepSettings:
        await asyncio.sleep(0)
        return StepSettings(tools=[finish] if context.step else [search])

    model = make_model(server, f"agent:9:{TAG()}")

    async def main() -> Any:
        prompt = model.prompt("Go").tools(search, finish).prepare_step(prepare)
        return await prompt.stop_when(has_tool_call("finish")).acall()

    response = asyncio.run(main())
    assert [c.name for c in response.tool_calls] == ["finish"]


@pytest.mark.parametrize(
    ("prepare", "message"),
    [
        (lambda context: 1 / 0, "ZeroDivisionError"),
        (lambda context: {"model": "x"}, "returned dict, not StepSettings"),
        (lambda context: StepSettings(model=""), "model must be a model name"),
        (lambda context: StepSettings(messages=[42]), "TypeError"),
    ],
)
def test_a_prepare_step_that_fails_fails_the_response(
    server: RunningServer, make_model: Callable[..., ChatModel], prepare: Any, message: str
) -> None:
    model = make_model(server, f"agent:2:{TAG()}")
    before = len(server.requests)
    with pytest.raises(ChatError, match="prepare_step failed before step 0") as failure:
        model.prompt("Go").tools(search).prepare_step(prepare).call()
    assert message in str(failure.value)
    assert len(server.requests) == before  # nothing was sent


def test_conditions_and_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        step_count_is(0)
    with pytest.raises(ValueError, match="at least one"):
        has_tool_call()
    with ChatModel("http://127.0.0.1:9/v1/chat/completions", "m") as model:
        with pytest.raises(TypeError, match="callable"):
            model.prompt("x").stop_when("finish")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="callable"):
            model.prompt("x").prepare_step(3)  # type: ignore[arg-type]
    assert step_count_is(2).__qualname__ == "step_count_is(2)"
    assert has_tool_call("a", "b").__qualname__ == "has_tool_call('a', 'b')"
    assert not has_tool_call("a")(())


def _wait(ready: Callable[[], Any], timeout: float = 20.0) -> None:
    import threading

    done = threading.Event()
    for _ in range(int(timeout / 0.01)):
        if ready():
            return
        done.wait(0.01)
    raise AssertionError("not ready in time")
