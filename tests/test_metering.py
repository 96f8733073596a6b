"""A model's requests metered against the embedded provider: a limiter's refusal is the
response's ERROR (and a group's next member answers), waiting for capacity, every
attempt's usage charged and told as a SpendRecord (failed, cancelled, hedged), and a
stream stopped at its limit."""

from __future__ import annotations

import asyncio
import itertools
import threading
from typing import Any

import pytest
from routing_runs import acollect

from solon_events import ChatModel
from solon_events.client.limiter import Limiter
from solon_events.client.limits import LimitExceededError, Limits
from solon_events.client.metering import SpendRecord, deployment_id, price_usage
from solon_events.devserver import RunningServer
from solon_events.event_model.events import EVENT_TYPES
from solon_events.event_model.pricing import ModelPrice
from solon_events.event_model.results import Usage

CHAT = "/v1/chat/completions"


def model(server: RunningServer, name: str, **options: Any) -> ChatModel:
    return ChatModel(server.url + CHAT, name, max_retries=0, **options)


async def test_a_refused_request_is_a_response_that_fails_at_once(
    server: RunningServer,
) -> None:
    limiter = Limiter(rpm=1, name="one")
    with model(server, "echo", limiter=limiter) as echo:
        first = await echo.prompt("hello there").acall()
        assert first.text == "hello there"
        events, error = await acollect(echo.prompt("again"))
        assert [e.type for e in events] == [EVENT_TYPES.RESPONSE_START, EVENT_TYPES.ERROR]
        assert isinstance(error, LimitExceededError) and events[1].error is error
        assert (error.status, error.limit, error.scope) == (429, "rpm", "one")
        assert error.retry_after is not None and 0 < error.retry_after <= 60
        with pytest.raises(LimitExceededError):
            echo.prompt("and in a thread").call()  # stream(): the same refusal
    counts = await limiter.counts()
    assert (counts.requests, counts.in_flight) == (1, 0)


async def test_a_group_asks_its_next_member_when_a_limiter_refuses(
    server: RunningServer,
) -> None:
    spent = Limiter(rpm=0, name="spent")
    records: list[SpendRecord] = []
    with model(server, "echo", limiter=spent) as limited, model(server, "echo") as other:
        group = limited.fallback(other)
        response = await group.prompt("hi you").on_attempt(records.append).acall()
    assert response.text == "hi you"
    assert [a.outcome for a in response.attempts] == ["failed", "answered"]
    assert isinstance(response.attempts[0].error, LimitExceededError)
    assert len(records) == 1  # the refused one was never sent: no attempt to record
    assert records[0].outcome == "completed" and records[0].usage is not None


async def test_a_limiter_can_wait_for_a_place(server: RunningServer) -> None:
    limiter = Limiter(max_parallel=1, name="serial", wait=30.0)
    records: list[SpendRecord] = []
    with model(server, "slow:5:0.02", limiter=limiter) as slow:
        responses = await asyncio.gather(
            *(slow.prompt("count").on_attempt(records.append).acall() for _ in range(3))
        )
    assert [r.text for r in responses] == ["0 1 2 3 4 "] * 3
    spans = sorted((r.time, r.time + r.duration) for r in records)
    for (_, ended), (began, _) in itertools.pairwise(spans):
        assert began >= ended - 0.01  # one at a time


async def test_every_attempt_is_charged_and_recorded(server: RunningServer) -> None:
    limiter = Limiter(budget_tokens=100_000, name="every")
    records: list[SpendRecord] = []
    with (
        model(server, "error-frame", limiter=limiter) as failing,
        model(server, "status:503", limiter=limiter) as refusing,
        model(server, "echo", limiter=limiter) as echo,
    ):
        group = failing.fallback(refusing, echo, mid_stream="restart")
        response = await group.prompt("one two three").on_attempt(records.append).acall()
        await asyncio.sleep(0)
    assert response.text == "one two three"
    assert [r.outcome for r in records] == ["failed", "failed", "completed"]
    failed, refused, answered = records
    assert failed.usage is not None and failed.usage.estimated  # cut short: estimated
    assert refused.usage is None and refused.error == "ChatHttpError 503"  # not billed
    assert answered.usage == response.attempts[-1].usage
    assert len({r.response_id for r in records}) == 1
    assert records[0].deployment == deployment_id(failing)
    counts = await limiter.counts()
    assert counts.spent_tokens == sum(r.tokens for r in records)
    assert counts.in_flight == 0


async def test_a_hedged_loser_is_recorded_cancelled(server: RunningServer) -> None:
    records: list[SpendRecord] = []
    limiter = Limiter(tpm=1_000_000, name="hedged")
    with (
        model(server, "first-delay:3", limiter=limiter) as late,
        model(server, "echo", limiter=limiter) as quick,
    ):
        hedged = late.hedge(quick, after=0.05)
        response = await hedged.prompt("fast one").on_attempt(records.append).acall()
        for _ in range(100):
            if len(records) == 2:
                break
            await asyncio.sleep(0.02)
    assert response.text == "fast one"
    by_model = {r.model: r for r in records}
    assert by_model["first-delay:3"].outcome == "cancelled"
    assert by_model["first-delay:3"].usage is None  # it had sent nothing: nothing billed
    assert by_model["echo"].outcome == "completed" and by_model["echo"].ttfe is not None
    counts = await limiter.counts()
    assert (counts.in_flight, counts.tokens) == (0, by_model["echo"].tokens)


async def test_a_stream_past_its_reservation_finishes_by_default(server: RunningServer) -> None:
    limiter = Limiter(budget_tokens=200, output_allowance=5, name="finish")
    with model(server, "slow:40:0", limiter=limiter) as slow:
        response = await slow.prompt("count").acall()
    assert response.text.split() == [str(i) for i in range(40)]
    assert (await limiter.counts()).spent_tokens == response.usage.total_tokens


async def test_a_stream_is_stopped_at_the_limit_when_asked(server: RunningServer) -> None:
    limits = Limits(budget_tokens=40, output_allowance=5, overrun="stop")
    limiter = Limiter(limits, name="stop")
    with model(server, "slow:200:0.005", limiter=limiter) as slow:
        events, error = await acollect(slow.prompt("count"))
    assert isinstance(error, LimitExceededError) and error.stopped
    assert events[-1].type is EVENT_TYPES.ERROR and events[-1].error is error
    deltas = [e for e in events if e.type is EVENT_TYPES.TEXT_DELTA]
    assert 0 < len(deltas) < 200
    counts = await limiter.counts()
    assert counts.in_flight == 0
    assert counts.spent_tokens <= 40 + 1  # at most the delta that crossed it


async def test_records_price_usage_with_the_limiters_prices(server: RunningServer) -> None:
    prices = {"echo": ModelPrice(input=1.0, output=2.0)}
    limiter = Limiter(budget_usd=1.0, prices=prices, name="priced")
    records: list[SpendRecord] = []
    with model(server, "echo", limiter=limiter) as echo:
        response = await echo.prompt("a b c d").on_attempt(records.append).acall()
    usage = response.usage
    expected = (usage.prompt_tokens * 1.0 + usage.completion_tokens * 2.0) / 1_000_000
    assert float(records[0].cost.total) == pytest.approx(expected)
    counts = await limiter.counts()
    assert counts.spent_nanos == records[0].nanos == round(expected * 1e9)
    assert price_usage(Usage(prompt_tokens=5), "no-such-model", "openai", server.url) is None


def test_on_attempt_runs_on_the_models_thread_for_stream(server: RunningServer) -> None:
    done = threading.Event()
    seen: list[Any] = []
    with model(server, "echo") as echo:
        prompt = echo.prompt("via rx").on_attempt(lambda r: seen.append(r.outcome))
        prompt.stream().subscribe(on_completed=done.set, on_error=lambda e: done.set())
        assert done.wait(10)
        for _ in range(100):
            if seen:
                break
            threading.Event().wait(0.01)
    assert seen == ["completed"]


def test_records_read_back_from_their_json() -> None:
    record = SpendRecord(
        time=1.5,
        model="fast",
        deployment="openai:http://h:1/v1/chat/completions#m",
        dialect="openai",
        outcome="completed",
        duration=0.25,
        key="team-a",
        usage=Usage(prompt_tokens=3, completion_tokens=4, estimated=True),
        ttfe=0.1,
        response_id="resp_1",
    )
    again = SpendRecord.from_json(record.to_json())
    assert again == record
    with pytest.raises(ValueError, match="not a spend record"):
        SpendRecord.from_json({"model": "m"})


def test_the_embedded_provider_reports_the_usage_it_served(fresh_server: RunningServer) -> None:
    import urllib.request

    import orjson

    with (
        model(fresh_server, "echo") as echo,
        model(fresh_server, "status:503") as refusing,
        model(fresh_server, "slow:50:0.05") as slow,
    ):
        told = [echo.prompt("one two three").call().usage for _ in range(2)]
        with pytest.raises(Exception, match="503"):
            refusing.prompt("no").call()
        first = threading.Event()
        subscription = (
            slow.prompt("count")
            .stream()
            .subscribe(on_next=lambda e: e.type is EVENT_TYPES.TEXT_DELTA and first.set())
        )
        assert first.wait(10)
        subscription.dispose()
        assert fresh_server.wait_disconnect(10)
    served = orjson.loads(urllib.request.urlopen(fresh_server.url + "/devserver/usage").read())
    assert served == fresh_server.served_usage()
    assert served["models"]["echo"] == {
        "streams": 2,
        "finished": 2,
        "cut": 0,
        "prompt_tokens": sum(u.prompt_tokens for u in told),
        "completion_tokens": sum(u.completion_tokens for u in told),
    }
    assert served["models"]["slow:50:0.05"]["cut"] == 1  # its client left: nothing reported
    assert (served["streams"], served["finished"]) == (3, 2)
    assert "status:503" not in served["models"]  # refused: no stream served


async def test_a_routers_limited_deployment_cools_down_when_refused(
    server: RunningServer,
) -> None:
    from solon_events import Router

    spent = Limiter(rpm=1, name="deployment")
    with (
        model(server, "echo", limiter=spent) as limited,
        ChatModel(server.url + "/v1/messages", "echo", max_retries=0) as other,
    ):
        router = Router([limited, other], strategy="fallback")
        first = await router.prompt("first").acall()
        second = await router.prompt("second").acall()
        third = await router.prompt("third").acall()
        states = await router.astates()
    assert [a.outcome for a in first.attempts] == ["answered"]
    assert [a.outcome for a in second.attempts] == ["failed", "answered"]
    assert isinstance(second.attempts[0].error, LimitExceededError)
    assert [a.outcome for a in third.attempts] == ["skipped", "answered"]  # cooling down
    cooling = states[router.labels[0]]
    assert cooling.cooling and "429" in (cooling.reason or "")
    assert 50 < cooling.cooldown <= 60  # for the limiter's retry_after
