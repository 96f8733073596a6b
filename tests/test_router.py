"""The router (solon_events.Router): deployments of different dialects on the embedded
provider, each strategy's order, cooldowns that honour Retry-After, fall-through, the
typed error naming each deployment's state, in stream(), astream() and call().

Time in these tests is the router state's clock, moved by the test (a cooldown passes
when the test says so); nothing asserts on how long anything took."""

from __future__ import annotations

import asyncio
import collections
import math
from collections.abc import Callable
from typing import Any

import pytest
from routing_runs import acollect, collect

from solon_events import ChatModel, NoHealthyDeploymentError, Router
from solon_events.client.router import CoolingDownError, deployment_failure, deployment_id
from solon_events.client.router_state import MemoryRouterState
from solon_events.devserver import RunningServer
from solon_events.event_model.errors import ChatConnectionError, ChatHttpError, ChatTimeoutError
from solon_events.event_model.events import EVENT_TYPES

Build = Callable[..., ChatModel]


class Clock:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def deployment(make_model: Build, server: RunningServer, dialect: str, scenario: str) -> ChatModel:
    return make_model(server, scenario, dialect, max_retries=0)


def routed(
    make_model: Build, server: RunningServer, *deployments: tuple[str, str], **options: Any
) -> Router:
    """A router over ``deployments`` (dialect, scenario) of ``server``."""
    return Router([deployment(make_model, server, *d) for d in deployments], **options)


@pytest.fixture
def route(fresh_server: RunningServer, make_model: Build) -> Callable[..., Router]:
    """``route(*deployments, **options)``: a router over deployments of the test's own
    provider."""

    def build(*deployments: tuple[str, str], **options: Any) -> Router:
        return routed(make_model, fresh_server, *deployments, **options)

    return build


def on_a_clock(
    make_model: Build, server: RunningServer, *deployments: tuple[str, str], **options: Any
) -> tuple[Router, Clock]:
    """A fallback router over ``deployments`` whose state reads a clock the test moves."""
    clock = Clock()
    state = MemoryRouterState(clock)
    router = routed(make_model, server, *deployments, strategy="fallback", state=state, **options)
    return router, clock


def answered(response: Any) -> str:
    (label,) = [a.model for a in response.attempts if a.outcome == "answered"]
    return label


def outcomes(response_or_error: Any) -> list[tuple[str, str]]:
    return [(a.model, a.outcome) for a in response_or_error.attempts]


def asked(server: RunningServer, scenario: str) -> int:
    """How many requests ``server`` received for model ``scenario``."""
    return sum(
        1
        for r in server.requests
        if (isinstance(r.body, dict) and r.body.get("model") == scenario) or scenario in r.path
    )


def test_weights_hold_within_a_statistical_bound(server: RunningServer, make_model: Build) -> None:
    """3:1 over 200 responses: the heavier deployment answers 150 of them, give or take
    five standard deviations of the binomial (6.1 each)."""
    router = routed(make_model, server, ("openai", "echo"), ("anthropic", "echo"), weights=[3, 1])

    async def run() -> collections.Counter[str]:
        counts: collections.Counter[str] = collections.Counter()
        for _ in range(200):
            counts[answered(await router.prompt("hello").acall())] += 1
        return counts

    counts = asyncio.run(run())
    heavy, light = router.labels
    assert counts[heavy] + counts[light] == 200
    bound = 5 * math.sqrt(200 * 0.75 * 0.25)
    assert abs(counts[heavy] - 150) <= bound, counts


def test_fallback_asks_in_order_and_a_failure_cools_the_deployment_down(
    fresh_server: RunningServer, make_model: Build
) -> None:
    router, clock = on_a_clock(
        make_model, fresh_server, ("openai", "flaky:1:503:0"), ("gemini", "echo"), cooldown=7
    )
    events, error = collect(router.prompt("hi there").stream())
    assert error is None
    statuses = [(e.sub_type, e.attrs.get("model")) for e in events if e.type is EVENT_TYPES.STATUS]
    assert statuses == [("fallback", "flaky:1:503:0"), ("routed", "echo")]
    end = events[-1]
    assert end.type is EVENT_TYPES.RESPONSE_END and end.response is not None
    assert end.response.text == "hi there"
    assert outcomes(end.response) == [("flaky:1:503:0", "failed"), ("echo", "answered")]
    state = router.states()["flaky:1:503:0"]
    assert state.cooldown == 7 and state.reason == "HTTP 503 The service is temporarily unavailable"

    skipped = router.prompt("again").call()  # cooling down: not asked
    assert outcomes(skipped) == [("flaky:1:503:0", "skipped"), ("echo", "answered")]
    reason = skipped.attempts[0].error
    assert isinstance(reason, CoolingDownError) and reason.cooldown == 7
    assert asked(fresh_server, "flaky:1:503:0") == 1

    clock.now += 7.5  # the cooldown has passed: asked again, and it answers now
    back = router.prompt("back").call()
    assert outcomes(back) == [("flaky:1:503:0", "answered")]
    assert back.text == "back"


def test_a_429_cools_down_for_its_retry_after(
    fresh_server: RunningServer, make_model: Build
) -> None:
    router, clock = on_a_clock(
        make_model, fresh_server, ("anthropic", "flaky:1:429:30000"), ("ollama", "echo"), cooldown=1
    )
    assert router.prompt("hi").call().text == "hi"
    state = router.states()[router.labels[0]]
    assert state.cooldown == 30 and state.reason is not None and state.reason.startswith("HTTP 429")
    clock.now += 29
    assert outcomes(router.prompt("hi").call())[0] == (router.labels[0], "skipped")
    clock.now += 2
    assert outcomes(router.prompt("hi").call()) == [(router.labels[0], "answered")]


async def test_none_healthy_fails_with_each_deployments_state(
    fresh_server: RunningServer, make_model: Build
) -> None:
    deployments = [("openai", "status:503"), ("cohere", "status:429")]
    router, _clock = on_a_clock(make_model, fresh_server, *deployments, cooldown=4, name="fast")
    events, error = await acollect(router.prompt("hi"))
    assert isinstance(error, NoHealthyDeploymentError)
    assert isinstance(error.__cause__, ChatHttpError) and error.__cause__.status == 429
    assert set(error.states) == {"status:503", "status:429"}
    assert error.states["status:503"].startswith("failed (HTTP 503")
    assert error.states["status:429"].startswith("failed (HTTP 429")
    assert error.retry_after == 1  # the 429's Retry-After, before the 503's 4 s
    assert not error.rate_limited  # one of them was not refused for its rate
    assert str(error).startswith("no healthy deployment of fast: status:503: failed")
    assert events[-1].type is EVENT_TYPES.ERROR and events[-1].error is error

    # both cool down now: nobody is asked, the error says for how long each
    events, error = collect(router.prompt("hi").stream())
    assert isinstance(error, NoHealthyDeploymentError)
    assert [e.type for e in events] == [EVENT_TYPES.RESPONSE_START, EVENT_TYPES.ERROR]
    assert error.states == {
        "status:503": "cooling down for 4.0 s (HTTP 503 The service is temporarily unavailable)",
        "status:429": "cooling down for 1.0 s (HTTP 429 Rate limit reached)",
    }
    assert error.retry_after == 1
    assert asked(fresh_server, "status:503") == 1


def test_a_deployment_that_answers_400_is_not_cooled_and_nobody_else_is_asked(
    fresh_server: RunningServer, route: Callable[..., Router]
) -> None:
    router = route(("openai", "status:400"), ("anthropic", "echo"), strategy="fallback")
    with pytest.raises(ChatHttpError) as caught:
        router.prompt("hi").call()
    assert caught.value.status == 400
    assert not router.states()["status:400"].cooling
    assert asked(fresh_server, "echo") == 0


def test_least_busy_prefers_the_idle_deployment(
    fresh_server: RunningServer, route: Callable[..., Router]
) -> None:
    """Each new response goes to the deployment with fewer in flight: held open on the
    gate, six responses end up three and three, never two apart on the way."""
    router = route(("openai", "gate"), ("anthropic", "gate"), strategy="least-busy")
    first_text: list[asyncio.Event] = []

    async def run() -> list[tuple[int, int]]:
        seen: list[tuple[int, int]] = []
        tasks = []
        for _ in range(6):
            reached = asyncio.Event()
            first_text.append(reached)

            async def read(reached: asyncio.Event = reached) -> str:
                async for event in router.prompt("hi").astream():
                    if event.type is EVENT_TYPES.TEXT_DELTA:
                        reached.set()
                    if event.type is EVENT_TYPES.RESPONSE_END:
                        assert event.response is not None
                        return answered(event.response)
                raise AssertionError("no end")

            tasks.append(asyncio.ensure_future(read()))
            await reached.wait()
            states = router.states()
            seen.append(tuple(states[label].in_flight for label in router.labels))  # type: ignore[arg-type]
        fresh_server.open_gate()
        labels = await asyncio.gather(*tasks)
        assert collections.Counter(labels) == {label: 3 for label in router.labels}
        return seen

    seen = asyncio.run(run())
    assert all(abs(a - b) <= 1 for a, b in seen), seen
    assert seen[-1] == (3, 3)
    assert all(state.in_flight == 0 for state in router.states().values())


def test_latency_prefers_the_fastest_once_each_was_measured(
    route: Callable[..., Router],
) -> None:
    router = route(("gemini", "first-delay:0.3"), ("openai", "echo"), strategy="latency")
    first = {answered(router.prompt("hi").call()) for _ in range(2)}
    assert first == set(router.labels)  # neither measured yet: each is tried
    states = router.states()
    assert states["first-delay:0.3"].latency > states["echo"].latency  # type: ignore[operator]
    assert {answered(router.prompt("hi").call()) for _ in range(5)} == {"echo"}


def test_hedge_asks_the_next_when_the_first_is_slow(route: Callable[..., Router]) -> None:
    slow, quick = ("anthropic", "first-delay:30"), ("openai", "echo")
    router = route(slow, quick, strategy="hedge", hedge_after=0.05)
    response = router.prompt("hedged").call()
    assert response.text == "hedged"
    assert outcomes(response) == [("first-delay:30", "cancelled"), ("echo", "answered")]
    assert all(state.in_flight == 0 for state in router.states().values())


def test_a_killed_upstream_is_skipped_and_returns(make_model: Build) -> None:
    from solon_events.devserver import DevServer

    clock = Clock()
    steady = DevServer.run_in_thread()
    dying = DevServer.run_in_thread()
    port = dying.port
    try:
        router = Router(
            [
                deployment(make_model, dying, "openai", "echo"),
                deployment(make_model, steady, "anthropic", "echo"),
            ],
            strategy="fallback",
            cooldown=3,
            state=MemoryRouterState(clock),
        )
        first, second = router.labels
        dying.close()
        response = router.prompt("hi").call()
        assert outcomes(response) == [(first, "failed"), (second, "answered")]
        assert isinstance(response.attempts[0].error, ChatConnectionError)
        assert outcomes(router.prompt("hi").call())[0] == (first, "skipped")
        dying = DevServer.run_in_thread(port=port)  # back on the same port
        clock.now += 3.5
        assert outcomes(router.prompt("hi").call()) == [(first, "answered")]
    finally:
        dying.close()
        steady.close()


def test_a_router_nests_and_its_deployment_ids_are_stable(
    server: RunningServer, make_model: Build
) -> None:
    one = deployment(make_model, server, "openai", "status:503")
    router = Router([one], strategy="fallback")
    assert router.ids == (f"openai:{server.url}/v1/chat/completions#status:503",)
    assert deployment_id(one) == router.ids[0]
    chain = router.fallback(deployment(make_model, server, "ollama", "echo"))
    response = chain.prompt("nested").call()
    assert response.text == "nested"
    assert [a.outcome for a in response.attempts] == ["failed", "answered"]


def test_deployment_failures_are_the_deployments_own() -> None:
    assert deployment_failure(ChatHttpError(429)) and deployment_failure(ChatHttpError(502))
    assert deployment_failure(ChatConnectionError("refused"))
    assert deployment_failure(ChatTimeoutError("slow"))
    assert not deployment_failure(ChatHttpError(400)) and not deployment_failure(ValueError())


def test_invalid_arguments(server: RunningServer, make_model: Build) -> None:
    model = deployment(make_model, server, "openai", "echo")
    with pytest.raises(ValueError, match="strategy must be one of"):
        Router([model], strategy="random")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="one positive number per deployment"):
        Router([model], weights=[0])
    with pytest.raises(ValueError, match="at least one model"):
        Router([])
    with pytest.raises(TypeError, match="a deployment is a ChatModel"):
        Router([Router([model])])  # type: ignore[list-item]
