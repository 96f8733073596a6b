"""Fan-out (solon_events.client.fan_out): one prompt asked of several models at once over the
embedded provider on 127.0.0.1, their events merged and tagged, their responses side by side."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

import pytest
from routing_runs import collect, weather_tool
from stream_invariants import check_invariants

from solon_events import (
    ChatEvent,
    ChatEventFilter,
    ChatEventType,
    ChatHttpError,
    ChatModel,
    FanOutResponses,
    fan_out,
)
from solon_events.devserver import RunningServer

T = ChatEventType


Build = Callable[..., ChatModel]
PROMPT = "one two three"


def by_model(events: list[ChatEvent]) -> dict[str, list[ChatEvent]]:
    split: dict[str, list[ChatEvent]] = {}
    for event in events:
        split.setdefault(event.attrs["model"], []).append(event)
    return split


@pytest.mark.parametrize("edge", ["stream", "astream"])
def test_every_event_carries_its_model_and_each_response_is_whole(
    server: RunningServer, make_model: Build, edge: str
) -> None:
    echo = make_model(server, "echo", max_retries=0)
    think = make_model(server, "think", dialect="anthropic", max_retries=0)
    prompt = fan_out(echo, think).prompt(PROMPT).event_filter(ChatEventFilter.all())
    if edge == "stream":
        events, error = collect(prompt.stream())
    else:

        async def read() -> list[ChatEvent]:
            return [event async for event in prompt.astream()]

        events, error = asyncio.run(read()), None
    assert error is None
    split = by_model(events)
    assert set(split) == {"echo", "think"}
    for mine in split.values():
        check_invariants(mine, None)  # one lifecycle each, one response id each
    assert split["echo"][0].response_id != split["think"][0].response_id
    assert split["echo"][-1].response.text == PROMPT  # type: ignore[union-attr]
    assert split["think"][-1].response.thinking  # type: ignore[union-attr]
    assert split["think"][-1].usage.completion_tokens == 48  # type: ignore[union-attr]


def test_a_failing_model_ends_its_own_response_only(
    server: RunningServer, make_model: Build
) -> None:
    ok = make_model(server, "echo", max_retries=0)
    broken = make_model(server, "status:503", max_retries=0)
    events, error = collect(fan_out(ok, broken).prompt(PROMPT).stream())
    assert error is None
    split = by_model(events)
    assert split["status:503"][-1].type is T.ERROR
    check_invariants(split["status:503"], split["status:503"][-1].error)
    assert split["echo"][-1].type is T.RESPONSE_END
    answers = fan_out(ok, broken).prompt(PROMPT).call()
    assert isinstance(answers, FanOutResponses)
    assert list(answers) == ["echo"] and answers["echo"].text == PROMPT
    assert isinstance(answers.errors["status:503"], ChatHttpError)
    assert answers.labels == ("echo", "status:503")
    assert "failed (ChatHttpError)" in repr(answers)


def test_call_and_acall_give_the_responses_side_by_side(
    server: RunningServer, make_model: Build
) -> None:
    fan = fan_out(
        small=make_model(server, "echo"), big=make_model(server, "weather", dialect="anthropic")
    )
    answers = fan.prompt("And in <Lyon>?").call()
    assert answers.texts() == {
        "small": "And in <Lyon>?",
        "big": "I would look up the weather in Lyon, but I was given no tool for it.",
    }
    html = answers._repr_html_()
    assert html.index("small") < html.index("big")
    assert "&lt;Lyon&gt;" in html and "<Lyon>" not in html  # the model's text is escaped
    assert asyncio.run(fan.prompt("And in <Lyon>?").acall()).texts() == answers.texts()


def test_each_model_runs_its_own_tool_calls(server: RunningServer, make_model: Build) -> None:
    cities: list[str] = []
    get_weather = weather_tool(cities)
    fan = fan_out(make_model(server, "weather"), make_model(server, "weather", dialect="gemini"))
    assert fan.labels[0] != fan.labels[1]  # one model name, two providers
    answers = fan.prompt("Weather in Oslo?").tools(get_weather).call()
    assert cities == ["Oslo", "Oslo"]
    assert set(answers.texts().values()) == {"It is 18°C and sunny in Oslo right now."}


def test_a_group_answers_as_one_column(server: RunningServer, make_model: Build) -> None:
    chain = make_model(server, "status:503", max_retries=0).fallback(make_model(server, "echo"))
    answers = fan_out(chain, make_model(server, "think")).prompt(PROMPT).call()
    assert answers.labels == ("fallback(status:503, echo)", "think")
    assert answers["fallback(status:503, echo)"].text == PROMPT


def test_leaving_astream_early_stops_every_request(
    fresh_server: RunningServer, make_model: Build
) -> None:
    fan = fan_out(make_model(fresh_server, "slow:100:0.05"), make_model(fresh_server, "gate"))

    async def first() -> ChatEvent:
        async for event in fan.prompt(PROMPT).astream():
            if event.type is T.TEXT_DELTA and event.attrs["model"] == "gate":
                return event
        raise AssertionError("no text")

    assert asyncio.run(first()).text == "Before the gate."
    assert fresh_server.wait_disconnect(5, count=2)


def test_disposing_the_stream_stops_every_request(
    fresh_server: RunningServer, make_model: Build
) -> None:
    fan = fan_out(make_model(fresh_server, "gate"), make_model(fresh_server, "slow:100:0.05"))
    streaming: set[str] = set()
    both = threading.Event()

    def on_next(event: ChatEvent) -> None:
        if event.type is T.TEXT_DELTA:
            streaming.add(event.attrs["model"])
            if len(streaming) == 2:
                both.set()

    subscription = fan.prompt(PROMPT).stream().subscribe(on_next)
    assert both.wait(10)
    subscription.dispose()
    assert fresh_server.wait_disconnect(5, count=2)


def test_an_exception_of_the_subscriber_ends_the_stream(
    fresh_server: RunningServer, make_model: Build
) -> None:
    fan = fan_out(make_model(fresh_server, "gate"), make_model(fresh_server, "slow:100:0.05"))
    errors: list[BaseException] = []
    streaming: set[str] = set()
    done = threading.Event()

    class Mine(Exception):
        pass

    def on_next(event: ChatEvent) -> None:
        if event.type is T.TEXT_DELTA:
            streaming.add(event.attrs["model"])
            if streaming == {"gate", "slow:100:0.05"}:  # both answer: raise in the middle
                raise Mine

    def on_error(error: BaseException) -> None:
        errors.append(error)
        done.set()

    fan.prompt(PROMPT).stream().subscribe(on_next, on_error, done.set)
    assert done.wait(5) and isinstance(errors[0], Mine)
    assert fresh_server.wait_disconnect(5, count=2)  # both requests stopped


def test_fan_out_checks_its_models(server: RunningServer, make_model: Build) -> None:
    echo = make_model(server, "echo")
    with pytest.raises(ValueError, match="two"):
        fan_out(echo)
    with pytest.raises(TypeError):
        fan_out(echo, "gpt-4o")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="differ"):
        fan_out(echo, echo=make_model(server, "think"))
