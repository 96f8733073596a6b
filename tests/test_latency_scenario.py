"""The embedded provider's ``latency`` scenario: a heavy-tailed, seeded wait before the
first event (what the hedging benchmark asks), and the benchmark's expected figures."""

from __future__ import annotations

import math

import pytest

from benchmarks.bench_hedging import expected
from solon_events import ChatModel
from solon_events.devserver import DevServer
from solon_events.devserver.scenarios import ScenarioError, first_event_delay, latency_script


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


def test_a_latency_script_draws_its_gaps_from_the_seed_and_the_request() -> None:
    script = latency_script(0.2, 3.0, "7", 1, deltas=20, gap_p50=0.01, gap_p99=0.05)
    assert script.first_event == first_event_delay(0.2, 3.0, "7", 1)
    assert len(script.gaps) == 19 and script.deltas == 20
    assert script == latency_script(0.2, 3.0, "7", 1, deltas=20, gap_p50=0.01, gap_p99=0.05)
    assert script.gaps != latency_script(0.2, 3.0, "7", 2, 20, 0.01, 0.05).gaps
    assert latency_script(0.2, 0.2, "7", 1, deltas=4, gap_p50=0.01).gaps == (0.01,) * 3
    assert latency_script(0.2, 0.2, "7", 1).gaps == ()


def test_the_gaps_have_the_median_and_99th_percentile_asked_for() -> None:
    gaps = sorted(
        gap for n in range(1, 401) for gap in latency_script(1, 1, "0", n, 101, 0.02, 0.1).gaps
    )
    assert gaps[len(gaps) // 2] == pytest.approx(0.02, rel=0.05)
    assert gaps[int(0.99 * len(gaps))] == pytest.approx(0.1, rel=0.1)


def test_impossible_gaps_are_refused() -> None:
    with pytest.raises(ScenarioError):
        latency_script(0.2, 0.3, "0", 1, deltas=3, gap_p50=0.05, gap_p99=0.01)


def test_the_scenario_streams_its_deltas_after_their_gaps(server, make_model) -> None:  # type: ignore[no-untyped-def]
    model = make_model(server, "latency:0.001:0.001:1:5:0.001:0.002")
    response = model.prompt("hi there").call()
    assert response.text == " alpha bravo charlie delta echo"
    assert response.usage.completion_tokens == 5
    assert not response.usage.estimated


def test_the_server_keeps_its_own_account_of_a_script() -> None:
    with DevServer.run_in_thread(timings=True) as running:
        model = ChatModel(running.url + "/v1/messages", "latency:0.001:0.001:t:4:0.001")
        with model:
            model.prompt("hi").call()
            model.prompt("hi").call()
        timings = running.server.stream_timings
    assert [(t.path, t.attempt) for t in timings] == [("/v1/messages", 1), ("/v1/messages", 2)]
    for timing in timings:
        assert len(timing.writes) == 5  # four deltas and the finish
        assert timing.writes[0] - timing.received >= 0.001
        assert list(timing.writes) == sorted(timing.writes)
    with DevServer.run_in_thread() as running:
        assert running.server.stream_timings is None
