"""The limiter's counting, in the process: claims granted whole against every limit or
refused with the limit and the wait, checked against a plain log of grants (hypothesis);
reserve, charge and release; waiting for capacity; budget windows."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest
from hypothesis import given, settings
from limit_steps import START, Clock, limits_strategy, run_steps, steps_strategy

from solon_events.client.limit_store import Claim, MemoryLimitStore
from solon_events.client.limiter import Limiter, max_output_tokens
from solon_events.client.limits import LimitExceededError, Limits, period_of


@settings(max_examples=300)
@given(limits=limits_strategy, steps=steps_strategy)
def test_the_memory_store_decides_as_a_plain_log_of_grants(limits: Limits, steps: list) -> None:
    def check(decision: Any, expected: bool) -> None:
        assert decision.granted == expected
        if not decision.granted:
            assert decision.limit is not None
            assert decision.retry_after is None or 0 <= decision.retry_after <= 60 * 60 * 24 * 31

    run_steps(MemoryLimitStore(), limits, steps, check)


def test_a_refusal_says_the_limit_and_when_it_could_pass() -> None:
    store = MemoryLimitStore()
    limits = Limits(rpm=2)

    def claim(now: float, id: str) -> Any:
        return store.claim(Claim(scope="s", limits=limits, id=id, now=now))

    assert claim(START, "a").granted
    assert claim(START + 10, "b").granted
    refused = claim(START + 20, "c")
    assert (refused.granted, refused.limit) == (False, "rpm")
    # the first request leaves the window 60 whole seconds after its own second began
    assert refused.retry_after == pytest.approx(math.floor(START) + 60 - (START + 20))
    assert not claim(START + 59.5, "d").granted
    assert claim(math.floor(START) + 60, "e").granted


def test_a_request_larger_than_the_limit_itself_is_refused_for_good() -> None:
    store = MemoryLimitStore()
    decision = store.claim(
        Claim(scope="s", limits=Limits(tpm=100, rpm=1), id="a", now=START, tokens=101)
    )
    assert (decision.granted, decision.limit, decision.retry_after) == (False, "tpm", None)


def test_a_budget_refuses_until_its_window_ends() -> None:
    store = MemoryLimitStore()
    limits = Limits(budget_tokens=100, window="day")
    first = store.claim(Claim(scope="s", limits=limits, id="a", now=START, tokens=80))
    assert first.granted
    refused = store.claim(Claim(scope="s", limits=limits, id="b", now=START + 5, tokens=30))
    _period, ends = period_of("day", START)
    assert (refused.limit, refused.retry_after) == ("budget_tokens", ends - (START + 5))
    next_day = store.claim(Claim(scope="s", limits=limits, id="c", now=ends, tokens=30))
    assert next_day.granted and next_day.period != first.period
    total = Limits(budget_tokens=10, window="total")
    store.claim(Claim(scope="t", limits=total, id="a", now=START, tokens=10))
    spent = store.claim(Claim(scope="t", limits=total, id="b", now=START + 1e6))
    assert (spent.granted, spent.retry_after) == (False, None)


@pytest.mark.parametrize(
    ("window", "name"),
    [
        ("minute", "minute:2026-11-30T00:53"),
        ("hour", "hour:2026-11-30T00"),
        ("day", "day:2026-11-30"),
        ("month", "month:2026-11"),
        ("total", "total"),
    ],
)
def test_budget_periods_are_calendar_periods_in_utc(window: Any, name: str) -> None:
    period, ends = period_of(window, START)
    assert period == name
    if ends is not None:
        assert period_of(window, ends)[0] != period
        assert period_of(window, ends - 0.001)[0] == period
    assert period_of("month", 1_798_761_599.0)[0] == "month:2026-12"  # 2026-12-31 23:59:59
    assert period_of("month", 1_798_761_600.0)[0] == "month:2027-01"


async def test_reserve_charge_and_release_leave_the_exact_usage_counted() -> None:
    clock = Clock()
    limiter = Limiter(tpm=1000, budget_tokens=5000, budget_usd=1.0, name="k", clock=clock)
    reservation = await limiter.reserve(300, 2_000)
    counts = await limiter.counts()
    assert (counts.in_flight, counts.tokens, counts.spent_tokens) == (1, 300, 300)
    reservation.charge(120, 500)  # a failed attempt: its usage spends the reservation first
    reservation.charge(250, 900)  # the answer: beyond what was reserved
    assert (reservation.tokens, reservation.nanos) == (0, 600)
    counts = await limiter.counts()
    assert (counts.tokens, counts.spent_tokens, counts.spent_nanos) == (370, 370, 2_000)
    reservation.release()
    reservation.release()  # once
    counts = await limiter.counts()
    assert (counts.in_flight, counts.tokens, counts.spent_tokens, counts.spent_nanos) == (
        0,
        370,
        370,
        1_400,
    )
    reservation.charge(30, 100)  # a hedge's loser, told after the response ended
    counts = await limiter.counts()
    assert (counts.tokens, counts.spent_tokens, counts.spent_nanos) == (400, 400, 1_500)


async def test_a_released_reservation_gives_back_what_it_did_not_use() -> None:
    limiter = Limiter(tpm=100, name="k", clock=Clock())
    first = await limiter.reserve(90)
    with pytest.raises(LimitExceededError) as refused:
        await limiter.reserve(20)
    assert (refused.value.limit, refused.value.status, refused.value.scope) == ("tpm", 429, "k")
    first.charge(40)
    first.release()
    second = await limiter.reserve(60)
    assert (await limiter.counts()).tokens == 100
    assert await second.extend(0)
    assert not await second.extend(1)


async def test_waiting_for_a_place_in_flight() -> None:
    limiter = Limiter(max_parallel=1, name="k", wait=5.0)
    first = await limiter.reserve()
    waiting = asyncio.ensure_future(limiter.reserve())
    await asyncio.sleep(0.05)
    assert not waiting.done()
    first.release()
    second = await asyncio.wait_for(waiting, 5)
    assert (await limiter.counts()).in_flight == 1
    second.release()
    fail_fast = Limiter(max_parallel=1, name="k", store=limiter.store)
    held = await fail_fast.reserve()
    with pytest.raises(LimitExceededError) as refused:
        await fail_fast.reserve()
    assert refused.value.limit == "max_parallel"
    held.release()


async def test_a_wait_longer_than_allowed_is_refused_at_once() -> None:
    limiter = Limiter(rpm=1, name="k", wait=1.0)
    await limiter.reserve()
    loop = asyncio.get_running_loop()
    began = loop.time()
    with pytest.raises(LimitExceededError) as refused:
        await limiter.reserve()
    assert refused.value.retry_after is not None and refused.value.retry_after > 1.0
    assert loop.time() - began < 0.9  # did not sit through a wait that could not succeed


def test_limits_are_checked_when_made() -> None:
    with pytest.raises(ValueError, match="rpm"):
        Limits(rpm=-1)
    with pytest.raises(ValueError, match="window"):
        Limits(window="week")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="budget_usd"):
        Limits(budget_usd=math.inf)
    with pytest.raises(TypeError, match="not both"):
        Limiter(Limits(rpm=1), tpm=2)
    with pytest.raises(ValueError, match="wait"):
        Limiter(rpm=1, wait=-1)
    assert Limits(rpm=60, budget_usd=25.0).describe() == "60 requests/min, 25.0 USD/month"
    assert Limits().describe() == "no limits"


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"max_tokens": 50}, 50),
        ({"max_completion_tokens": 70}, 70),
        ({"generationConfig": {"maxOutputTokens": 30}}, 30),
        ({"options": {"num_predict": 12}}, 12),
        ({"inferenceConfig": {"maxTokens": 9}}, 9),
        ({"temperature": 0.2}, None),
        ({"max_tokens": True}, None),
    ],
)
def test_the_most_output_a_request_allows(options: dict, expected: int | None) -> None:
    assert max_output_tokens(options) == expected


class DecidingLater(MemoryLimitStore):
    """The in-process store answering each claim when told (as Redis answers later)."""

    def __init__(self) -> None:
        super().__init__()
        self.waiting: list[tuple[Claim, Any]] = []

    def claim(self, claim: Claim) -> Any:
        import concurrent.futures

        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self.waiting.append((claim, future))
        return future

    def decide(self) -> None:
        for claim, future in self.waiting:
            future.set_result(MemoryLimitStore.claim(self, claim))
        self.waiting.clear()


async def test_a_claim_granted_after_its_caller_left_is_given_back() -> None:
    store = DecidingLater()
    limiter = Limiter(max_parallel=1, budget_tokens=100, name="k", store=store, clock=Clock())
    leaving = asyncio.ensure_future(limiter.reserve(40))
    await asyncio.sleep(0)
    assert store.waiting  # the claim is being decided
    leaving.cancel()
    with pytest.raises(asyncio.CancelledError):
        await leaving
    store.decide()  # granted after all: given back at once
    counts = store.counts("k", limiter.limits, START)
    assert (counts.in_flight, counts.spent_tokens) == (0, 0)
    kept = asyncio.ensure_future(limiter.reserve(40))
    await asyncio.sleep(0)
    store.decide()
    reservation = await kept
    extending = asyncio.ensure_future(reservation.extend(30))
    await asyncio.sleep(0)
    extending.cancel()
    with pytest.raises(asyncio.CancelledError):
        await extending
    store.decide()
    assert store.counts("k", limiter.limits, START).spent_tokens == 40  # not 70
    reservation.charge(25)
    reservation.release()
    assert store.counts("k", limiter.limits, START).spent_tokens == 25
