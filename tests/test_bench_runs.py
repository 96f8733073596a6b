"""Benchmark runs over the embedded provider: every dialect, the ground truth of a latency
script, reasoning and errors, worker processes merged exactly, the command line and the
results' JSON schema."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest

from solon_events.bench import (
    BenchResult,
    Endpoint,
    Load,
    RequestRecord,
    arrival_times,
    benchmark,
    summarize,
)
from solon_events.bench.report import point_lines
from solon_events.bench.schema import RESULTS_SCHEMA, SCHEMA_ID
from solon_events.cli import main
from solon_events.cli.common import ROUTES
from solon_events.devserver import DevServer, RunningServer
from solon_events.devserver.scenarios import latency_script
from solon_events.dialects.base import dialect_names

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "guides" / "benchmarking.rst"
SCRIPT = "latency:0.005:0.005:{seed}:4:0.002"
"""Every request: its first event after 5 ms, then 4 one-token deltas 2 ms apart."""


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    with DevServer.run_in_thread() as running:
        yield running


def endpoint(server: RunningServer, model: str, dialect: str = "openai") -> Endpoint:
    key = "embedded-provider" if dialect == "bedrock" else None  # else SigV4 from AWS's chain
    return Endpoint(server.url + ROUTES[dialect], model, dialect, api_key=key)


@pytest.mark.parametrize("dialect", dialect_names())
def test_every_dialect_is_benchmarked(server: RunningServer, dialect: str) -> None:
    model = SCRIPT.format(seed=f"d-{dialect}")
    result = benchmark(endpoint(server, model, dialect), ["Hello there"], Load(concurrency=2),
                       requests=4, warmup=1)  # fmt: skip
    (point,) = result.points
    assert [r.index for r in point.records] == [0, 1, 2, 3]
    for r in point.records:
        assert r.ok, r.error_message
        assert (r.output_tokens, r.output_tokens_estimated) == (4, False)
        assert len(r.itl) == 3 and r.frames >= 4
        assert r.ttfe is not None and r.ttft is not None and r.first_answer == r.ttft
        assert r.ttfe <= r.ttft <= r.e2e  # type: ignore[operator]
        assert r.first_reasoning is None
    summary = point.summary
    assert (summary.completed, summary.total_output_tokens) == (4, 16)
    assert summary.metrics["itl"].count == 12
    assert point.client.frames == sum(r.frames for r in point.records)
    assert point.client.cpu_per_frame is not None and point.client.cpu_per_frame > 0


def test_the_bench_is_never_early_on_a_latency_script(server: RunningServer) -> None:
    """A scripted server's first event and deltas cannot arrive before they were sent: each
    request's timings are at least its script's (the requests the server numbered 1, 2,
    ... in the order they came; one at a time, so in the order they were sent)."""
    model = "latency:0.01:0.04:truth:5:0.002:0.01"
    (point,) = benchmark(endpoint(server, model), ["hi"], Load(concurrency=1), requests=6).points
    for r in point.records:
        truth = latency_script(0.01, 0.04, "truth", r.index + 1, 5, 0.002, 0.01)
        assert r.ttfe is not None and r.ttft is not None and r.e2e is not None
        assert r.ttfe >= truth.first_event
        assert r.ttft + sum(r.itl) >= truth.first_event + sum(truth.gaps)
        assert r.e2e >= truth.first_event + sum(truth.gaps)


def test_reasoning_and_answer_are_timed_apart(server: RunningServer) -> None:
    (point,) = benchmark(
        endpoint(server, "think"), ["why?"], Load(concurrency=1), requests=2
    ).points
    for r in point.records:
        assert r.first_reasoning is not None and r.first_answer is not None
        assert r.ttft == r.first_reasoning < r.first_answer


def test_failures_are_counted_by_kind(server: RunningServer) -> None:
    (point,) = benchmark(
        endpoint(server, "status:429"), ["hi"], Load(concurrency=2), requests=3
    ).points
    assert point.summary.errors == {"http 429": 3}
    assert point.summary.completed == 0
    (cut,) = benchmark(endpoint(server, "truncate"), ["hi"], Load(concurrency=1), requests=1).points
    (record,) = cut.records
    assert record.error == "ChatProtocolError" and record.frames > 0
    assert record.error_message and "truncated" in record.error_message


def test_a_rate_sends_each_request_at_its_arrival(server: RunningServer) -> None:
    load = Load(rate=200)
    (point,) = benchmark(endpoint(server, SCRIPT.format(seed="rate")), ["hi"], load, requests=30,
                         seed=4).points  # fmt: skip
    assert [r.scheduled for r in point.records] == arrival_times(load, 4, count=30)
    assert all(r.start >= r.scheduled for r in point.records)  # type: ignore[operator]


def test_a_duration_bounds_the_sends(server: RunningServer) -> None:
    (point,) = benchmark(endpoint(server, SCRIPT.format(seed="d")), ["hi"], Load(rate=100),
                         duration=0.2).points  # fmt: skip
    assert len(point.records) == len(arrival_times(Load(rate=100), 0, until=0.2))


def test_workers_merge_their_results_exactly(server: RunningServer, tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    url = server.url + "/v1/messages"
    load = ["--concurrency", "3", "--requests", "9", "--workers", "2", "--warmup", "2"]
    model = SCRIPT.format(seed="workers")
    code = main(
        ["bench", "--url", url, "--model", model, *load, "--no-progress", "--json", str(out)]
    )
    assert code == 0
    data = json.loads(out.read_text())
    (point,) = data["points"]
    assert sorted(r["index"] for r in point["requests"]) == list(range(9))
    assert {r["worker"] for r in point["requests"]} == {0, 1}
    assert point["client"]["processes"] == 2
    records = [RequestRecord.from_json(r) for r in point["requests"]]
    assert point["summary"] == summarize(records).to_json()
    assert point["client"]["frames"] == sum(r.frames for r in records)
    assert BenchResult.load(out).to_json() == data


def test_the_results_follow_their_documented_schema(server: RunningServer) -> None:
    result = benchmark(endpoint(server, "think"), ["why?"], [Load(concurrency=1), Load(rate=50)],
                       requests=2, slos=["ttft:1000"])  # fmt: skip
    data = json.loads(json.dumps(result.to_json()))
    jsonschema.validate(data, RESULTS_SCHEMA)
    assert data["schema"] == SCHEMA_ID == "solon-events/bench/1"
    assert data["points"][0]["summary"]["goodput"] is not None


def fields(schema: dict) -> list[str]:
    return list(schema["properties"])


def test_the_schema_is_stable_and_documented() -> None:
    """The fields of schema 1, as documented: a change here is a new schema id."""
    top = RESULTS_SCHEMA
    point = top["properties"]["points"]["items"]
    request = point["properties"]["requests"]["items"]
    summary = point["properties"]["summary"]
    client = point["properties"]["client"]
    assert fields(top) == ["schema", "endpoint", "settings", "points"]
    assert fields(point) == ["load", "summary", "client", "warnings", "requests"]
    assert fields(request) == [
        "index", "worker", "start", "scheduled", "ttfe", "ttft", "first_reasoning",
        "first_answer", "e2e", "tpot", "itl", "output_tokens", "output_tokens_estimated",
        "input_tokens", "frames", "error", "error_message", "cost",
    ]  # fmt: skip
    assert fields(summary) == [
        "requests", "completed", "failed", "errors", "duration", "request_throughput",
        "output_throughput", "total_input_tokens", "total_output_tokens",
        "estimated_output_requests", "slos", "slo_met", "goodput", "cost", "schedule_lag",
        "metrics",
    ]  # fmt: skip
    assert fields(client) == [
        "cpu_seconds", "wall_seconds", "frames", "cpu_per_frame", "processes",
        "peak_cpu_share", "machine_busy", "loop_lag", "loop_lag_samples",
    ]  # fmt: skip
    guide = GUIDE.read_text(encoding="utf-8")
    for name in fields(request) + fields(summary) + fields(client) + fields(point):
        assert f"``{name}``" in guide, name


def test_the_command_prints_its_table_and_json(server: RunningServer) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "solon_events", "bench", "--url", f"{server.url}{ROUTES['openai']}",
         "--model", SCRIPT.format(seed="cli"), "--rate", "50,100", "--requests", "4",
         "--slo", "e2e:5000", "--json", "-", "--output-tokens", "16"],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
        env={k: v for k, v in os.environ.items() if k != "COLUMNS"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert [p["load"]["rate"] for p in data["points"]] == [50, 100]
    assert data["settings"]["prompts"].startswith("synthetic")
    assert "time to first token" in done.stderr and "goodput" in done.stderr
    assert "sweep" in done.stderr


def test_the_command_says_what_is_wrong(
    server: RunningServer, capsys: pytest.CaptureFixture[str]
) -> None:
    url = server.url + "/v1/chat/completions"
    with pytest.raises(SystemExit):
        main(["bench", "--url", url, "--model", "echo", "--rate", "0"])
    wrong = ["--concurrency", "2", "--burstiness", "2"]
    assert main(["bench", "--url", url, "--model", "echo", *wrong]) == 2
    assert "go with --rate" in capsys.readouterr().err
    assert (
        main(["bench", "--url", url, "--model", "status:500", "--requests", "2", "--no-progress"])
        == 1
    )
    assert "http 500: 2" in capsys.readouterr().out


def test_the_result_plots_latency_against_load(server: RunningServer) -> None:
    result = benchmark(endpoint(server, SCRIPT.format(seed="plot")), ["hi"],
                       [Load(concurrency=1), Load(concurrency=4)], requests=4)  # fmt: skip
    picture = result.plot()
    assert picture.to_bytes("png").startswith(b"\x89PNG")
    assert len(picture.figure.axes) == 4  # ttft, itl, e2e and the throughput's axis
    assert "<table>" in result._repr_html_()
    with pytest.raises(ValueError):
        result.plot(metrics=("speed",))


def test_no_key_reaches_the_results(server: RunningServer) -> None:
    secret = "sk-bench-secret-123456"
    key_endpoint = Endpoint(server.url + "/v1/chat/completions", "echo-key:status", "openai",
                            api_key=secret)  # fmt: skip
    result = benchmark(key_endpoint, ["hi"], Load(concurrency=1), requests=1)
    assert secret not in json.dumps(result.to_json())
    assert secret not in repr(key_endpoint)
    assert math.isfinite(result.points[0].summary.duration)


def test_a_priced_model_has_a_cost(server: RunningServer) -> None:
    # An unknown scenario name is the weather answer: here under a model genai-prices prices.
    (point,) = benchmark(
        endpoint(server, "gpt-4o-mini"), ["hi"], Load(concurrency=1), requests=2
    ).points
    costs = [r.cost for r in point.records]
    assert all(c is not None and c > 0 for c in costs)
    assert point.summary.cost == pytest.approx(sum(costs))  # type: ignore[arg-type]
    assert any(line.startswith("cost: $") for line in point_lines(point))
    (unpriced,) = benchmark(
        endpoint(server, "echo"), ["hi"], Load(concurrency=1), requests=1
    ).points
    assert unpriced.summary.cost is None


async def test_a_notebooks_running_loop_is_left_alone(server: RunningServer) -> None:
    """In a notebook the main thread runs a loop: the benchmark runs on a thread of its own."""
    (point,) = benchmark(endpoint(server, SCRIPT.format(seed="nb")), ["hi"], Load(concurrency=2),
                         requests=2).points  # fmt: skip
    assert [r.ok for r in point.records] == [True, True]


def test_a_model_of_the_gateways_configuration(
    server: RunningServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "gateway.toml"
    config.write_text(
        "[models.fast]\n"
        "[[models.fast.deployments]]\n"
        f'upstream = "anthropic:{server.url}/v1/messages"\n'
        f'model = "{SCRIPT.format(seed="config")}"\n'
        "[models.pair]\n"
        "[[models.pair.deployments]]\n"
        f'upstream = "openai:{server.url}/v1/chat/completions"\n'
        'model = "echo"\n'
        "[[models.pair.deployments]]\n"
        f'upstream = "ollama:{server.url}/api/chat"\n'
        'model = "think"\n'
    )
    out = tmp_path / "results.json"
    common = ["bench", "--config", str(config), "--requests", "2", "--no-progress"]
    assert main([*common, "--model", "fast", "--json", str(out)]) == 0
    endpoint = json.loads(out.read_text())["endpoint"]
    assert endpoint == {
        "url": server.url + "/v1/messages",
        "dialect": "anthropic",
        "model": SCRIPT.format(seed="config"),
    }
    assert main([*common, "--model", "pair", "--deployment", "2", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert (data["endpoint"]["dialect"], data["endpoint"]["model"]) == ("ollama", "think")
    assert data["points"][0]["requests"][0]["first_reasoning"] is not None
    capsys.readouterr()
    assert main([*common, "--model", "pair"]) == 2
    assert "2 deployments" in capsys.readouterr().err
    assert main([*common, "--model", "slow"]) == 2
    assert "no model 'slow' (it has: fast, pair)" in capsys.readouterr().err
    assert main([*common, "--model", "fast", "--url", server.url]) == 2
    assert main(["bench", "--model", "fast", "--requests", "1"]) == 2
    assert "needs --url" in capsys.readouterr().err
