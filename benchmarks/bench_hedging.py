"""Hedged requests against a heavy tail: time to the first event, and what it costs.

The embedded provider (in a process of its own) answers its ``latency:0.2:3:<seed>``
scenario: before the first event of each request it waits a lognormal time of median
0.2 s and 99th percentile 3 s (drawn in turn from the seed, so every run draws the same
times). The same number of responses is asked, ``CONCURRENCY`` at a time, on one loop
with ``astream()``, each arm against a provider process of its own:

- **one model**: a ChatModel of that scenario;
- **hedged**: ``primary.hedge(backup, after=p90)``, two ChatModels of the scenario with
  seeds of their own, ``after`` the 90th percentile the one-model run measured.

Figures: the time to the first text event (p50, p90, p99, max) of each, the p99 cut
(one model / hedged), and the extra requests (the responses whose backup was asked, in
percent). The expected figures come from the same distribution, simulated in this process
(200,000 draws of ``first_event_delay``): the hedged time is ``min(X1, after + X2)``, the
backup is asked when ``X1 > after``. Measured and expected ratios are of the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import random
import time
from typing import Any

from solon_events import ChatEventType, ChatModel, HedgedModel
from solon_events.devserver.scenarios import Z_99, first_event_delay

from .bench_e2e import devserver

P50, P99 = 0.2, 3.0
CONCURRENCY = 100
RESPONSES = 1000
"""Responses per arm (300 with ``quick``)."""
SIMULATED = 200_000


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)]


def _model(url: str, seed: str) -> ChatModel:
    return ChatModel(
        url + "/v1/chat/completions",
        f"latency:{P50}:{P99}:{seed}",
        api_key="x",
        timeout=None,
        max_retries=0,
        connection_limit=2 * CONCURRENCY,
    )


async def _first_events(subject: Any, responses: int) -> tuple[list[float], int]:
    """Each response's seconds to its first text event, and how many asked a backup."""
    gate = asyncio.Semaphore(CONCURRENCY)
    times: list[float] = []
    hedged = 0

    async def one() -> None:
        nonlocal hedged
        async with gate:
            started = time.perf_counter()
            first = None
            async for event in subject.prompt("hi").astream():
                if first is None and event.type is ChatEventType.TEXT_DELTA:
                    first = time.perf_counter() - started
                elif event.type is ChatEventType.STATUS and event.sub_type == "hedge":
                    hedged += 1
            assert first is not None
            times.append(first)

    await asyncio.gather(*(one() for _ in range(responses)))
    return times, hedged


def expected(after: float, draws: int = SIMULATED) -> dict[str, float]:
    """The same distribution simulated: p99 of one model and of the hedge, and how often
    the backup is asked."""
    rng = random.Random(2024)
    sigma = math.log(P99 / P50) / Z_99
    mu = math.log(P50)
    single, hedged, asked = [], [], 0
    for _ in range(draws):
        x1, x2 = rng.lognormvariate(mu, sigma), rng.lognormvariate(mu, sigma)
        single.append(x1)
        hedged.append(min(x1, after + x2))
        asked += x1 > after
    return {
        "p99": _percentile(single, 0.99),
        "hedged_p99": _percentile(hedged, 0.99),
        "cut": _percentile(single, 0.99) / _percentile(hedged, 0.99),
        "extra_requests": 100 * asked / draws,
    }


def _row(name: str, times: list[float], extra: str) -> str:
    figures = [_percentile(times, q) for q in (0.5, 0.9, 0.99)] + [max(times)]
    return f"{name:<12}" + "".join(f"{f:>9.3f}" for f in figures) + f"  {extra}"


def main(quick: bool = False) -> dict[str, Any]:
    responses = 300 if quick else RESPONSES
    assert first_event_delay(P50, P99, "0", 1) > 0
    # Each arm has a provider process of its own: one that has served a thousand streams
    # answers later than a fresh one (a p50 0.09 s later on a loaded machine), which would
    # be laid to the arm that runs second.
    with devserver() as url, _model(url, "7") as single_model:
        single, _ = asyncio.run(_first_events(single_model, responses))
    after = _percentile(single, 0.9)
    with devserver() as url, HedgedModel(_model(url, "8"), _model(url, "9"), after=after) as group:
        hedged_times, asked = asyncio.run(_first_events(group, responses))
    want = expected(after)
    cut = _percentile(single, 0.99) / _percentile(hedged_times, 0.99)
    extra = 100 * asked / responses
    print(f"{responses} responses each, {CONCURRENCY} at a time; time to the first event (s)")
    print(f"{'':<12}{'p50':>9}{'p90':>9}{'p99':>9}{'max':>9}  requests per response")
    print(_row("one model", single, "1.00"))
    print(_row("hedged", hedged_times, f"{1 + asked / responses:.2f}  (after={after:.3f} s)"))
    print(
        f"p99 cut {cut:.2f}x (expected {want['cut']:.2f}x: p99 {want['p99']:.2f} s -> "
        f"{want['hedged_p99']:.2f} s) for {extra:.1f} % more requests "
        f"(expected {want['extra_requests']:.1f} %)"
    )
    return {
        "responses": responses,
        "after": after,
        "single": {q: _percentile(single, v) for q, v in (("p50", 0.5), ("p99", 0.99))},
        "hedged": {q: _percentile(hedged_times, v) for q, v in (("p50", 0.5), ("p99", 0.99))},
        "p99_cut": cut,
        "extra_requests_percent": extra,
        "expected": want,
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_hedging", description=__doc__)
    parser.add_argument("--quick", action="store_true", help=f"300 responses, not {RESPONSES}")
    main(parser.parse_args().quick)
