"""The spend log: records written in batches off the caller's thread to a JSON-lines file,
a Redis stream and OpenTelemetry logs, read back whole, summed by key, model and day;
``solon-events spend`` and ``solon-events keys hash``."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import threading
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
import pytest
from redis_server import redis_url  # noqa: F401  (fixture)

from solon_events.cli import main
from solon_events.client.metering import SpendRecord
from solon_events.client.spend_log import (
    JsonLinesSpendLog,
    OtelSpendLog,
    RedisSpendLog,
    read_spend,
    spend_totals,
)
from solon_events.event_model.pricing import Cost
from solon_events.event_model.results import Usage

DAY = 1_796_000_000.0  # 2026-11-30 UTC


def record(number: int, **fields: Any) -> SpendRecord:
    values: dict[str, Any] = {
        "time": DAY + number,
        "key": "team-a",
        "model": "fast",
        "deployment": "openai:http://127.0.0.1:1/v1/chat/completions#echo",
        "dialect": "openai",
        "outcome": "completed",
        "duration": 0.5,
        "usage": Usage(prompt_tokens=10 + number, completion_tokens=5),
        "cost": Cost(total=Decimal("0.000015")),
        "ttfe": 0.01,
        "response_id": f"resp_{number}",
    }
    values.update(fields)
    return SpendRecord(**values)


def test_a_file_log_keeps_every_record_of_many_writers(tmp_path: Path) -> None:
    path = tmp_path / "spend.jsonl"
    logs = [JsonLinesSpendLog(path, batch=7, interval=0.01) for _ in range(2)]
    written = [record(i, key=f"k{i % 3}") for i in range(400)]

    def writer(log: JsonLinesSpendLog, part: list[SpendRecord]) -> None:
        for one in part:
            log.write(one)

    threads = [threading.Thread(target=writer, args=(logs[i % 2], written[i::4])) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for log in logs:
        log.close()
    assert sum(log.written for log in logs) == 400
    read = sorted(read_spend(str(path)), key=lambda r: r.time)
    assert read == written
    late = record(500)
    logs[0].write(late)  # an attempt that ended after the log was closed: written at once
    assert list(read_spend(str(path)))[-1] == late


def test_a_bad_line_is_named(tmp_path: Path) -> None:
    path = tmp_path / "spend.jsonl"
    path.write_bytes(record(1).to_bytes() + b'{"time": 1}\n')
    with pytest.raises(ValueError, match=r"spend.jsonl:2: not a spend record"):
        list(read_spend(str(path)))


def test_a_redis_stream_log_reads_back_in_order(redis_url: str) -> None:  # noqa: F811
    stream = f"spend-{uuid.uuid4().hex[:8]}"
    with RedisSpendLog(redis_url, stream, batch=50, interval=0.01) as log:
        written = [record(i) for i in range(2_345)]
        for one in written:
            log.write(one)
        assert log.flush(10)
    assert list(read_spend(redis_url, stream=stream)) == written


def test_records_become_opentelemetry_logs() -> None:
    from opentelemetry.sdk._logs import LoggerProvider, export

    exporter = getattr(export, "InMemoryLogRecordExporter", None) or export.InMemoryLogExporter
    exporter = exporter()
    provider = LoggerProvider()
    provider.add_log_record_processor(export.SimpleLogRecordProcessor(exporter))
    with OtelSpendLog(provider) as log:
        log.write(record(1))
        log.write(record(2, usage=None, cost=None, outcome="failed", error="ChatHttpError 503"))
    logs = [data.log_record for data in exporter.get_finished_logs()]
    assert [dict(log.attributes)["solon_events.spend.outcome"] for log in logs] == [
        "completed",
        "failed",
    ]
    first = dict(logs[0].attributes)
    assert (first["gen_ai.usage.input_tokens"], first["gen_ai.usage.output_tokens"]) == (11, 5)
    assert first["solon_events.spend.key"] == "team-a"
    assert logs[0].body["response_id"] == "resp_1"


def test_totals_by_key_model_and_day() -> None:
    records = [
        record(0),
        record(1, usage=Usage(prompt_tokens=3, completion_tokens=4, estimated=True)),
        record(2, key=None, cost=None),
        record(86_400, model="smart"),
        record(3, cached=True),
    ]
    totals = {(t.key, t.model, t.day): t for t in spend_totals(records)}
    assert sorted(totals) == [
        ("-", "fast", "2026-11-30"),
        ("team-a", "fast", "2026-11-30"),
        ("team-a", "smart", "2026-12-01"),
    ]
    team = totals["team-a", "fast", "2026-11-30"]
    assert (team.attempts, team.input_tokens, team.output_tokens, team.estimated) == (3, 13, 9, 1)
    assert (team.cached, team.cost_usd) == (1, Decimal("0.000030"))
    assert totals["-", "fast", "2026-11-30"].unpriced == 1


def test_the_spend_command_sums_a_log(tmp_path: Path, capsys: Any, monkeypatch: Any) -> None:
    monkeypatch.setenv("COLUMNS", "160")
    path = tmp_path / "spend.jsonl"
    with JsonLinesSpendLog(path) as log:
        for i in range(3):
            log.write(record(i))
        log.write(record(5, key="team-b", model="smart"))
    assert main(["spend", str(path), "--json"]) == 0
    document = orjson.loads(capsys.readouterr().out)
    assert [(t["key"], t["model"], t["attempts"]) for t in document["totals"]] == [
        ("team-a", "fast", 3),
        ("team-b", "smart", 1),
    ]
    assert document["all"]["total_tokens"] == sum(
        r.usage.total_tokens for r in read_spend(str(path))
    )
    assert document["all"]["cost_usd"] == "0.00006"
    assert main(["spend", str(path), "--key", "team-b"]) == 0
    table = capsys.readouterr().out
    assert "team-b" in table and "team-a" not in table and "smart" in table
    assert main(["spend", str(tmp_path / "missing.jsonl")]) == 1
    assert "cannot read" in capsys.readouterr().err


def test_keys_hash_prints_the_digest_of_standard_input() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "solon_events", "keys", "hash"],
        input="sk-team-a-secret\n",
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == hashlib.sha256(b"sk-team-a-secret").hexdigest()
    assert "sk-team-a-secret" not in done.stdout + done.stderr
    empty = subprocess.run(
        [sys.executable, "-m", "solon_events", "keys", "hash"],
        input="\n",
        capture_output=True,
        text=True,
    )
    assert empty.returncode == 2 and "no key" in empty.stderr
