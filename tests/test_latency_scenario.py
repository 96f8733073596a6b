"""The embedded provider's ``latency`` scenario: a heavy-tailed, seeded wait before the
first event (what the hedging benchmark asks), and the benchmark's expected figures."""

from __future__ import annotations

import math

import pytest

from benchmarks.bench_hedging import expected
from solon_events.devserver.scenarios import ScenarioError, first_event_delay


def test_the_draws_are_the_seeds_and_the_requests_own() -> None:
    first = [first_event_delay(0.2, 3.0, "7", n) for n in range(1, 50)]
    assert first == [first_event_delay(0.2, 3.0, "7", n) for n in range(1, 50)]
    assert first != [first_event_delay(0.2, 3.0, "8", n) for n in range(1, 50)]
    assert len(set(first)) == len(first)


def test_the_median_and_the_99th_percentile_are_the_ones_asked_for() -> None:
    draws = sorted(first_event_delay(0.2, 3.0, "0", n) for n in range(1, 40_001))
    assert draws[len(draws) // 2] == pytest.approx(0.2, rel=0.05)
    assert draws[int(0.99 * len(draws))] == pytest.approx(3.0, rel=0.1)
    assert draws[-1] > 3.0  # the tail goes on


def test_impossible_quantiles_are_refused() -> None:
    with pytest.raises(ScenarioError):
        first_event_delay(3.0, 0.2, "0", 1)
    with pytest.raises(ScenarioError):
        first_event_delay(0, 1, "0", 1)


def test_the_scenario_answers_after_its_wait(server, make_model) -> None:  # type: ignore[no-untyped-def]
    model = make_model(server, "latency:0.01:0.02:1")
    assert model.prompt("hi").call().text == "The first event came after a wait."


def test_hedging_after_p90_is_expected_to_halve_p99_for_a_tenth_more_requests() -> None:
    p90 = 0.2 * math.exp(1.2815515655446004 * math.log(3.0 / 0.2) / 2.3263478740408408)
    figures = expected(p90, draws=50_000)
    assert figures["p99"] == pytest.approx(3.0, rel=0.1)
    assert 1.8 < figures["cut"] < 2.6
    assert figures["extra_requests"] == pytest.approx(10.0, abs=1.0)
