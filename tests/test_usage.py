"""Usage on every ending, in the core: ABORT and ERROR carry the usage so far, a step's
usage is settled at its end (the provider's count, else an estimate of what it did not
count), ``Usage.estimated`` and ``Cost`` add up as documented (sans-I/O, plain lists)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import orjson
import pytest
import reactivex

from solon_events import (
    ChatEvent,
    ChatEventType,
    ChatResponse,
    ChatStreamContext,
    Cost,
    ToolCall,
    Usage,
    UsageReport,
    aggregate,
    normalize,
    parse,
)
from solon_events.client.estimate import StepAccounting, heuristic_tokens, request_tokens
from solon_events.core.accumulator import ChatAccumulator
from solon_events.core.parsing import ParseStage
from solon_events.dialects.base import ChatDialect
from solon_events.event_model.messages import ChatRequest, ToolSpec, UserMessage

T = ChatEventType


class _Lines(ChatDialect):
    """``{"text": ...}``, ``{"usage": [prompt, completion]}``, ``{"abort": reason}``,
    ``{"error": message}``, ``{"done": true}``: a dialect of one's own."""

    name = "lines"

    def parse_frame(self, ctx: ChatStreamContext, frame: Any) -> None:
        if "text" in frame:
            ctx.send(T.TEXT_DELTA, text=frame["text"])
        if "usage" in frame:
            prompt, completion = frame["usage"]
            ctx.send(T.USAGE, usage=Usage(prompt_tokens=prompt, completion_tokens=completion))
        if "abort" in frame:
            ctx.send(T.ABORT, text=frame["abort"])
        if "error" in frame:
            ctx.fail(frame["error"])
        if frame.get("done"):
            ctx.finish("stop")


def _run(frames: list[dict[str, Any]]) -> tuple[list[ChatEvent], list[BaseException]]:
    events: list[ChatEvent] = []
    errors: list[BaseException] = []
    source = reactivex.from_iterable([orjson.dumps(f).decode() for f in frames])
    source.pipe(parse(_Lines()), normalize(), aggregate()).subscribe(events.append, errors.append)
    return events, errors


def test_an_abort_ends_the_step_with_its_response_and_carries_the_usage_so_far() -> None:
    events, errors = _run(
        [
            {"text": "Hel", "usage": [7, 1]},
            {"text": "lo"},
            {"abort": "stopped by the provider"},
            {"text": "never seen"},
            {"done": True},
        ]
    )
    assert not errors
    kinds = [e.type for e in events]
    assert kinds[-3:] == [T.TEXT_END, T.STEP_END, T.ABORT]
    assert T.RESPONSE_END not in kinds
    step_end, abort = events[-2], events[-1]
    assert step_end.response is not None and step_end.response.text == "Hello"
    assert step_end.usage == Usage(prompt_tokens=7, completion_tokens=1)
    assert abort.text == "stopped by the provider"
    assert abort.usage == step_end.usage
    assert abort.response is not None and abort.response.text == "Hello"
    assert abort.response.usage == abort.usage
    assert "never seen" not in "".join(e.text or "" for e in events)


def test_an_error_carries_the_total_usage_of_every_step_so_far() -> None:
    events: list[ChatEvent] = []
    errors: list[BaseException] = []
    first = Usage(prompt_tokens=10, completion_tokens=4)
    second = Usage(prompt_tokens=20, completion_tokens=2)
    hand_built = [
        ChatEvent(T.STEP_START, step=0),
        ChatEvent(T.TEXT_DELTA, text="one", step=0),
        ChatEvent(T.STEP_END, step=0, usage=first),
        ChatEvent(T.STEP_START, step=1),
        ChatEvent(T.TEXT_DELTA, text="two", step=1),
        ChatEvent(T.USAGE, usage=second, step=1),
    ]
    source = reactivex.concat(
        reactivex.from_iterable(hand_built), reactivex.throw(RuntimeError("cut"))
    )
    source.pipe(aggregate()).subscribe(events.append, errors.append)
    [error] = errors
    step_ends = [e for e in events if e.type is T.STEP_END]
    assert [e.usage for e in step_ends] == [first, second]
    error_event = events[-1]
    assert error_event.type is T.ERROR
    assert error_event.usage == first + second
    assert error_event.response is not None and error_event.response.usage == first + second
    assert error.partial_response is error_event.response  # type: ignore[attr-defined]


def test_the_unreported_output_is_what_came_after_the_last_usage_snapshot() -> None:
    accumulator = ChatAccumulator()
    accumulator.add(ChatEvent(T.THINKING_DELTA, text="hmm "))
    accumulator.add(ChatEvent(T.TEXT_DELTA, text="before "))
    assert accumulator.unreported_output() == ("before ", "hmm ")
    accumulator.add(ChatEvent(T.USAGE, usage=Usage(prompt_tokens=3, completion_tokens=2)))
    assert accumulator.unreported_output() == ("", "")
    accumulator.add(ChatEvent(T.TEXT_DELTA, text="after"))
    call = ToolCall(id="c1", name="f")
    accumulator.add(ChatEvent(T.TOOL_CALL_START, index=0, tool_call_id="c1", tool_call=call))
    accumulator.add(ChatEvent(T.TOOL_CALL_ARGS_DELTA, index=0, text='{"a": 1}'))
    assert accumulator.unreported_output() == ('after{"a": 1}', "")


def _settled_step(frames: list[dict[str, Any]]) -> tuple[list[ChatEvent], list[BaseException]]:
    events: list[ChatEvent] = []
    errors: list[BaseException] = []

    class Down:
        on_next = events.append
        on_error = errors.append

        def on_completed(self) -> None:
            pass

    stage = ParseStage(_Lines(), Down())
    stage.accounting = StepAccounting(
        ChatRequest(model="some-model", messages=(UserMessage(text="Say hello to the world"),))
    )
    stage.start()
    for frame in frames:
        stage.on_next(orjson.dumps(frame).decode())
    stage.on_completed()
    return events, errors


def test_a_finished_step_with_usage_keeps_the_providers_count() -> None:
    events, errors = _settled_step([{"text": "Hello"}, {"usage": [5, 2], "done": True}])
    assert not errors
    step_end = events[-1]
    assert step_end.usage == Usage(prompt_tokens=5, completion_tokens=2)
    assert step_end.usage is not None and not step_end.usage.estimated


def test_a_finished_step_without_usage_is_estimated_from_the_request_and_the_output() -> None:
    events, _ = _settled_step([{"text": "Hello there, world"}, {"done": True}])
    usage = events[-1].usage
    assert usage is not None and usage.estimated
    assert usage.completion_tokens == heuristic_tokens("Hello there, world")
    request = ChatRequest(model="m", messages=(UserMessage(text="Say hello to the world"),))
    assert usage.prompt_tokens == request_tokens(request, heuristic_tokens)
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    assert usage.source == {"estimated_by": "heuristic"}


def test_a_step_cut_after_a_snapshot_adds_an_estimate_of_what_came_after() -> None:
    events, errors = _settled_step(
        [{"text": "Hi", "usage": [9, 1]}, {"text": " and more words"}, {"error": "overloaded"}]
    )
    [error] = errors
    assert "overloaded" in str(error)
    usage = events[-1].usage
    assert events[-1].type is T.STEP_END
    assert usage is not None and usage.estimated
    assert usage.prompt_tokens == 9
    assert usage.completion_tokens == 1 + heuristic_tokens(" and more words")
    assert usage.source == {
        "estimated_by": "heuristic",
        "reported": None,
    }


def test_a_step_with_no_frame_is_not_estimated() -> None:
    events, errors = _settled_step([])
    assert errors and events[-1].type is T.STEP_END and events[-1].usage is None


def test_estimated_usage_and_costs_add_up_as_documented() -> None:
    reported = Usage(prompt_tokens=10, completion_tokens=5)
    estimated = Usage(prompt_tokens=3, completion_tokens=1, estimated=True)
    assert not (reported + reported).estimated
    assert (reported + estimated).estimated and (estimated + reported).estimated
    assert (reported + estimated).total_tokens == 19
    a = Cost(total=Decimal("0.25"), input=Decimal("0.05"), output=Decimal("0.2"), model="m")
    b = Cost(total=Decimal("0.5"), input=Decimal("0.5"), cache_read=Decimal(0), model="m")
    total = a + b
    assert (total.total, total.input, total.output, total.cache_read) == (
        Decimal("0.75"),
        Decimal("0.55"),
        Decimal("0.2"),
        Decimal(0),
    )
    assert total.known and total.model == "m" and total.reasoning is None
    unknown = Cost(reason="no price for model 'x'", model="x")
    mixed = a + unknown
    assert mixed.total is None and not mixed.known
    assert mixed.reason == "no price for model 'x'" and mixed.model is None


def test_values_stay_frozen_and_picklable() -> None:
    import pickle

    report = UsageReport(
        response_id="r",
        model="m",
        outcome="cancelled",
        usage=Usage(prompt_tokens=1, estimated=True),
        steps=[Usage(prompt_tokens=1, estimated=True)],
    )
    assert report.steps == (Usage(prompt_tokens=1, estimated=True),)
    cost = Cost(total=Decimal("1.5"), estimated=True)
    assert pickle.loads(pickle.dumps(cost)) == cost
    assert pickle.loads(pickle.dumps(report.usage)) == report.usage
    with pytest.raises(AttributeError):
        cost.total = Decimal(0)  # type: ignore[misc]
    response = ChatResponse(text="hi", cost=cost)
    assert response.cost is cost


def test_request_tokens_count_messages_and_tools() -> None:
    bare = ChatRequest(model="m", messages=(UserMessage(text="hello"),))
    spec = ToolSpec(
        name="get_weather",
        description="The weather in a city",
        parameters={"type": "object", "properties": {"city": {"type": "string"}}},
    )
    with_tool = ChatRequest(model="m", messages=bare.messages, tools=(spec,))
    assert request_tokens(with_tool, heuristic_tokens) > request_tokens(bare, heuristic_tokens)
    assert request_tokens(bare, heuristic_tokens) == 4 + 4 + heuristic_tokens("hello")
