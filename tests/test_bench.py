"""The benchmark's arithmetic (sans-I/O): arrivals, percentiles, summaries and goodput,
the split of a load between worker processes, prompts from datasets and lengths."""

from __future__ import annotations

import math
import random

import numpy
import pytest
from hypothesis import given
from hypothesis import strategies as st

from solon_events.bench import (
    ClientStats,
    Lengths,
    Load,
    PointResult,
    RequestRecord,
    Slo,
    Stats,
    arrival_times,
    percentile,
    read_dataset,
    summarize,
    synthetic_prompts,
)
from solon_events.bench.runner import share
from solon_events.client.estimate import heuristic_tokens


def ks_exponential(gaps: list[float], rate: float) -> float:
    """The Kolmogorov-Smirnov statistic of ``gaps`` against the exponential CDF of
    ``rate``."""
    ordered = sorted(gaps)
    n = len(ordered)
    return max(
        max((i + 1) / n - (1 - math.exp(-rate * x)), (1 - math.exp(-rate * x)) - i / n)
        for i, x in enumerate(ordered)
    )


def gaps_of(times: list[float]) -> list[float]:
    return [b - a for a, b in zip([0.0, *times], times)]


@pytest.mark.parametrize("seed", range(5))
def test_poisson_arrivals_pass_a_goodness_of_fit_check(seed: int) -> None:
    gaps = gaps_of(arrival_times(Load(rate=40), seed, count=2000))
    # the 1 % critical value of the KS statistic: 1.628 / sqrt(n)
    assert ks_exponential(gaps, 40) < 1.628 / math.sqrt(len(gaps))
    assert ks_exponential(gaps, 20) > 1.628 / math.sqrt(len(gaps))  # the check can fail


def test_the_arrivals_are_the_seeds() -> None:
    assert arrival_times(Load(rate=5), 3, count=50) == arrival_times(Load(rate=5), 3, count=50)
    assert arrival_times(Load(rate=5), 3, count=50) != arrival_times(Load(rate=5), 4, count=50)


@pytest.mark.parametrize("burstiness", [0.25, 0.5, 2.0, 8.0])
def test_burstiness_keeps_the_rate_and_shapes_the_gaps(burstiness: float) -> None:
    gaps = gaps_of(arrival_times(Load(rate=10, burstiness=burstiness), 1, count=40_000))
    mean = sum(gaps) / len(gaps)
    variance = sum((g - mean) ** 2 for g in gaps) / len(gaps)
    assert mean == pytest.approx(0.1, rel=0.03)
    assert variance / mean**2 == pytest.approx(1 / burstiness, rel=0.08)  # gamma: CV^2 = 1/k


def test_constant_arrivals_are_evenly_spaced_from_zero() -> None:
    assert arrival_times(Load(rate=4, constant=True), count=5) == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert len(arrival_times(Load(rate=4, constant=True), until=1.0)) == 4


def test_an_infinite_rate_sends_everything_at_once() -> None:
    assert arrival_times(Load(rate=math.inf), count=3) == [0.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="count"):
        arrival_times(Load(rate=math.inf), until=1.0)


def test_a_load_is_a_rate_or_a_concurrency() -> None:
    with pytest.raises(ValueError):
        Load()
    with pytest.raises(ValueError):
        Load(rate=1, concurrency=2)
    with pytest.raises(ValueError):
        Load(concurrency=2, burstiness=0.5)
    with pytest.raises(ValueError):
        Load(rate=-1)
    assert Load(rate=2, burstiness=0.5).kind == "gamma"
    assert Load.from_json(Load(rate=3, constant=True).to_json()) == Load(rate=3, constant=True)


def test_percentiles_of_known_data() -> None:
    data = [float(x) for x in range(1, 101)]
    assert percentile(data, 50) == 50.5
    assert percentile(data, 99) == pytest.approx(99.01)
    assert percentile(data, 0) == 1 and percentile(data, 100) == 100
    assert percentile([3.0], 90) == 3.0
    assert percentile([], 50) is None
    stats = Stats.of([0.4, 0.1, 0.3, 0.2])
    assert (stats.count, stats.min, stats.max) == (4, 0.1, 0.4)
    assert stats.mean == pytest.approx(0.25) and stats.p50 == pytest.approx(0.25)


@given(st.lists(st.floats(0, 1e4), min_size=1, max_size=200), st.floats(0, 100))
def test_percentiles_agree_with_numpy(values: list[float], q: float) -> None:
    assert percentile(values, q) == pytest.approx(float(numpy.percentile(values, q)), abs=1e-6)


def record(index: int, ttft: float | None, e2e: float = 1.0, **kw: object) -> RequestRecord:
    return RequestRecord(index=index, start=float(index), ttft=ttft, e2e=e2e, **kw)  # type: ignore[arg-type]


def test_goodput_counts_the_completed_requests_within_every_slo() -> None:
    records = [
        record(0, 0.1, output_tokens=11),  # tpot 0.09
        record(1, 0.2, output_tokens=2),  # tpot 0.8
        record(2, 0.3, output_tokens=11),
        record(3, None, output_tokens=0, error="http 503"),
    ]
    summary = summarize(records, [Slo.parse("ttft:250"), Slo.parse("tpot:100ms")])
    assert summary.slo_met == 1
    assert summary.duration == 4.0  # the last request ends at 3 + 1
    assert summary.goodput == pytest.approx(0.25)
    assert summary.request_throughput == pytest.approx(0.75)
    assert summary.errors == {"http 503": 1}
    assert summarize(records, [Slo.parse("ttft:0.25s")]).slo_met == 2
    assert summarize(records).goodput is None


def test_an_slo_is_a_metric_and_milliseconds() -> None:
    assert Slo.parse("ttft:500") == Slo("ttft", 0.5)
    assert Slo.parse("E2E=2s") == Slo("e2e", 2.0)
    for wrong in ("ttft", "speed:3", "ttft:fast", "itl:5"):
        with pytest.raises(ValueError):
            Slo.parse(wrong)


def test_the_summary_pools_every_gap_and_counts_estimates() -> None:
    records = [
        record(0, 0.1, itl=(0.01, 0.02), output_tokens=3, frames=4),
        record(1, 0.1, itl=(0.03,), output_tokens=2, output_tokens_estimated=True, frames=3),
    ]
    summary = summarize(records)
    assert summary.metrics["itl"].count == 3
    assert summary.metrics["itl"].p50 == pytest.approx(0.02)
    assert summary.estimated_output_requests == 1
    assert summary.total_output_tokens == 5
    point = PointResult(Load(concurrency=1), tuple(records), ClientStats(frames=7))
    assert any("estimated" in w for w in point.warnings)


def test_a_saturated_client_is_said() -> None:
    client = ClientStats(cpu_seconds=0.95, wall_seconds=1.0, peak_cpu_share=0.95, frames=10)
    lagging = ClientStats(loop_lag=(0.001,) * 90 + (0.2,) * 10, wall_seconds=1.0)
    fine = ClientStats(loop_lag=(0.001,) * 100, wall_seconds=1.0, peak_cpu_share=0.2)
    records = (record(0, 0.1),)
    assert "saturated" in " ".join(PointResult(Load(rate=1), records, client).warnings)
    assert "ran late" in " ".join(PointResult(Load(rate=1), records, lagging).warnings)
    assert PointResult(Load(rate=1), records, fine).warnings == []
    assert client.cpu_per_frame == pytest.approx(0.095)


def summaries_equal(a: object, b: object) -> bool:
    return repr(a) == repr(b)


def test_merged_results_are_the_summary_of_the_merged_samples() -> None:
    rng = random.Random(0)
    records = [
        record(i, rng.random(), e2e=1 + rng.random(), itl=(rng.random(),), worker=i % 3)
        for i in range(60)
    ]
    by_worker = [[r for r in records if r.worker == w] for w in range(3)]
    merged = sorted((r for part in by_worker for r in part), key=lambda r: r.index)
    assert summarize(merged) == summarize(records)
    halves = ClientStats(1.0, 2.0, 10, (0.1, 0.3)).merged(ClientStats(2.0, 3.0, 20, (0.2,)))
    assert (halves.cpu_seconds, halves.wall_seconds, halves.frames) == (3.0, 3.0, 30)
    assert Stats.of(halves.loop_lag).p50 == pytest.approx(0.2)
    assert halves.processes == 2


@pytest.mark.parametrize("workers", [1, 2, 3, 7])
def test_workers_share_a_rate_exactly(workers: int) -> None:
    load = Load(rate=30, burstiness=0.5)
    whole = arrival_times(load, 9, count=100)
    shares = [share(load, w, workers, requests=100, duration=None, seed=9) for w in range(workers)]
    sent = sorted((n, at) for s in shares for n, at in zip(s.requests, s.arrivals or ()))
    assert sent == list(enumerate(whole))


@pytest.mark.parametrize(("concurrency", "workers"), [(1, 1), (5, 2), (3, 4), (100, 7)])
def test_workers_share_a_concurrency_exactly(concurrency: int, workers: int) -> None:
    shares = [
        share(Load(concurrency=concurrency), w, workers, requests=50, duration=None, seed=0)
        for w in range(workers)
    ]
    assert sum(s.concurrency for s in shares) == concurrency
    assert sorted(n for s in shares for n in s.requests) == list(range(50))


def test_synthetic_prompts_have_the_lengths_drawn() -> None:
    prompts = synthetic_prompts(50, Lengths.parse("uniform:5:40"), Lengths.parse("normal:64:8"), 3)
    assert prompts == synthetic_prompts(
        50, Lengths.parse("uniform:5:40"), Lengths.parse("normal:64:8"), 3
    )
    for prompt in prompts:
        assert 5 <= prompt.input_tokens <= 40
        assert heuristic_tokens(prompt.messages[0]["content"]) == prompt.input_tokens
        assert prompt.output_tokens is not None and prompt.output_tokens >= 1
    assert {p.input_tokens for p in prompts} != {prompts[0].input_tokens}
    assert Lengths.parse("lognormal:100:0.5").draw(random.Random(1)) >= 1
    for wrong in ("0", "uniform:9:3", "normal", "beta:1:2", "many"):
        with pytest.raises(ValueError):
            Lengths.parse(wrong)


def test_a_jsonl_dataset(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "prompts.jsonl"
    path.write_text(
        '{"prompt": "Tell me a joke", "output_tokens": 20}\n'
        "\n"
        '{"text": "Say hi"}\n'
        '{"messages": [{"role": "system", "content": "Be brief."}, '
        '{"role": "user", "content": "Why?"}], "max_tokens": 5}\n'
    )
    prompts = read_dataset(path, shuffle=False)
    assert [p.output_tokens for p in prompts] == [20, None, 5]
    assert prompts[0].messages == ({"role": "user", "content": "Tell me a joke"},)
    assert prompts[2].messages[0]["role"] == "system"
    assert sorted(map(repr, read_dataset(path, seed=1))) == sorted(map(repr, prompts))
    path.write_text('{"prompt": "ok"}\n{"output_tokens": 3}\n')
    with pytest.raises(ValueError, match=r"line 2|record 2"):
        read_dataset(path)
    path.write_text('{"prompt": "ok"}\nnot json\n')
    with pytest.raises(ValueError, match="line 2"):
        read_dataset(path)


def test_a_sharegpt_dataset(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "sharegpt.json"
    path.write_text(
        '[{"id": "a", "conversations": [{"from": "human", "value": "What is Rx?"}, '
        '{"from": "gpt", "value": "Reactive extensions for streams of events."}]},'
        ' {"id": "b", "conversations": [{"from": "gpt", "value": "alone"}]},'
        ' {"id": "c", "conversations": [{"from": "human", "value": "Hi"}, '
        '{"from": "gpt", "value": ""}]}]'
    )
    (prompt,) = read_dataset(path)
    assert prompt.messages == ({"role": "user", "content": "What is Rx?"},)
    assert prompt.output_tokens == heuristic_tokens("Reactive extensions for streams of events.")
    empty = tmp_path / "empty.json"
    empty.write_text('[{"conversations": []}]')
    with pytest.raises(ValueError, match="no prompt"):
        read_dataset(empty)
