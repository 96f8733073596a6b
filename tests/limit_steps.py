"""The limiter's decisions played step by step: a plain log of every grant (the reference
the memory and Redis stores are checked against), hypothesis strategies of limits and
steps, and :func:`run_steps`, which plays the steps on a store and on the plain log."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import strategies as st

from solon_events.client.limit_store import Claim
from solon_events.client.limits import Limits, period_of

__all__ = ["START", "Clock", "PlainLog", "limits_strategy", "run_steps", "steps_strategy"]

START = 1_796_000_000.25  # 2026-11-30 00:53:20.25 UTC


class Clock:
    """Unix time that moves when told."""

    def __init__(self, now: float = START) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class PlainLog:
    """What a limiter should decide, from a plain list of every grant: the reference the
    stores are checked against."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.grants: list[dict[str, Any]] = []
        self.in_flight: set[str] = set()
        self.spent: dict[str, list[int]] = {}

    def claim(self, id: str, now: float, tokens: int, nanos: int, counts: bool) -> bool:
        limits = self.limits
        second = math.floor(now)
        recent = [g for g in self.grants if g["second"] > second - 60]
        period, _ends = period_of(limits.window, now)
        spent = self.spent.get(period, [0, 0])
        passes = True
        if counts and limits.max_parallel is not None:
            passes &= len(self.in_flight) < limits.max_parallel
        if counts and limits.rpm is not None:
            passes &= sum(g["counts"] for g in recent) < limits.rpm
        if limits.tpm is not None:
            passes &= sum(g["tokens"] for g in recent) + tokens <= limits.tpm
        if limits.budget_tokens is not None:
            budget = limits.budget_tokens
            passes &= spent[0] < budget and spent[0] + tokens <= budget
        if limits.budget_usd is not None:
            budget = limits.budget_nanos
            assert budget is not None
            passes &= spent[1] < budget and spent[1] + nanos <= budget
        if passes:
            self.grants.append({"id": id, "second": second, "tokens": tokens, "counts": counts})
            if counts:
                self.in_flight.add(id)
            self.spent[period] = [spent[0] + tokens, spent[1] + nanos]
        return passes

    def adjust(self, id: str, period: str, tokens: int, nanos: int) -> None:
        for grant in self.grants:
            if grant["id"] == id:
                grant["tokens"] += tokens
                break
        if period in self.spent:
            self.spent[period][0] += tokens
            self.spent[period][1] += nanos


limits_strategy = st.builds(
    Limits,
    rpm=st.none() | st.integers(0, 4),
    tpm=st.none() | st.integers(0, 120),
    max_parallel=st.none() | st.integers(0, 3),
    budget_tokens=st.none() | st.integers(0, 300),
    budget_usd=st.none() | st.sampled_from([0.0, 1e-6, 5e-6]),
    window=st.sampled_from(["minute", "hour", "total"]),
)
steps_strategy = st.lists(
    st.one_of(
        st.tuples(st.just("wait"), st.floats(0, 40)),
        st.tuples(st.just("claim"), st.integers(0, 60), st.integers(0, 2000), st.booleans()),
        st.tuples(st.just("adjust"), st.integers(0, 30), st.integers(-20, 40), st.integers(0, 500)),
        st.tuples(st.just("release"), st.integers(0, 30)),
    ),
    max_size=40,
)


def run_steps(store: Any, limits: Limits, steps: list[tuple[Any, ...]], check: Any) -> None:
    """Play ``steps`` on ``store`` and on a :class:`PlainLog`, calling ``check`` with
    both decisions of each claim and with the counts after each step."""
    plain = PlainLog(limits)
    now = START
    granted: list[tuple[str, int, str]] = []
    for number, step in enumerate(steps):
        kind = step[0]
        if kind == "wait":
            now += step[1]
        elif kind == "claim":
            _, tokens, nanos, counts = step
            id = f"r{number}"
            asked = {"tokens": tokens, "nanos": nanos, "counts": counts}
            decision = store.claim(Claim(scope="s", limits=limits, id=id, now=now, **asked))
            expected = plain.claim(id, now, tokens, nanos, counts)
            check(decision, expected)
            if decision.granted:
                granted.append((id, decision.second, decision.period))
        elif kind == "adjust" and granted:
            id, second, period = granted[step[1] % len(granted)]
            store.adjust("s", second, period, step[2], step[3], per_minute=True)
            plain.adjust(id, period, step[2], step[3])
        elif kind == "release" and granted:
            id, _second, _period = granted[step[1] % len(granted)]
            store.release("s", id)
            plain.in_flight.discard(id)
