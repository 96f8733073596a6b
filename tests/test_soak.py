"""The chaos soak (``python -m benchmarks --soak N``, :mod:`benchmarks.soak`): a slice of
500 responses against the embedded provider's faults, groups and cancellations prints
zeros (no hang, no untyped failure, no broken stream, no answer lost or wrong, nothing
leaked), and its plans say what they expect."""

from __future__ import annotations

import re

import pytest
from redis_server import redis_server_binary

from benchmarks import soak, soak_gateways


def test_a_slice_of_the_soak_prints_zeros(capsys: pytest.CaptureFixture[str]) -> None:
    """500 responses, 50 at a time (about 10 s: a soak's slice, as the issue asks)."""
    figures = soak.main(500, concurrency=50, seed=42)
    printed = capsys.readouterr().out
    for counted in ("hangs", "untyped", "broken", "lost", "wrong"):
        assert figures[counted] == 0, printed
    assert figures["leaked"] == {"sockets": 0, "tasks": 0, "threads": 0}, printed
    assert "leaked: 0 sockets, 0 tasks, 0 threads" in printed
    last = [line for line in printed.splitlines() if re.match(r"\s+500\s", line)][-1].split()
    assert last[3:8] == ["0"] * 5, printed  # hangs, untyped, broken, lost, wrong
    # The slice went down every path: answers, failures and cancellations of each way.
    assert figures["succeeded"] > 150 and figures["failed"] > 50 and figures["cancelled"] > 30


def test_a_slice_through_two_gateways_and_a_redis_restart_prints_zeros(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """100 responses through two ``solon-events serve`` replicas sharing a redis-server
    killed and restarted halfway, with resumption on (about 12 s: two gateway processes
    and a Redis restart): no hang, no untyped failure, nothing broken, lost or wrong, no
    response cut by the restart (the gateways wait for Redis to come back), and no
    traceback in the gateways' logs."""
    redis_server_binary()  # skips (fails in CI) without redis-server
    figures = soak_gateways.main(100, concurrency=20, seed=3)
    printed = capsys.readouterr().out
    zeros = ("hangs", "untyped", "broken", "lost", "wrong", "cut_by_restart")
    for counted in (*zeros, "gateway_tracebacks"):
        assert figures[counted] == 0, printed
    assert figures["succeeded"] > 30 and figures["failed"] > 5, printed


def test_what_a_plan_expects_of_its_models() -> None:
    def plan(shape: tuple, **faults: str) -> soak.Plan:
        return soak.Plan(0, {"a": "ok", "b": "ok", "c": "ok", **faults}, shape, "acall", None)

    a, b, c = (("one", name) for name in "abc")
    assert plan(("fallback", a, b), a="status:503").kind() == "whole"
    assert plan(("fallback", a, b), a="cut").kind() == "mid"  # answered, then failed
    assert plan(("fallback", a, b), a="reset", b="html").kind() == "before"
    assert plan(("hedge", 0.0, a, b), a="truncate").kind() == "either"
    assert plan(("hedge", 0.0, a, b), a="truncate", b="cut").kind() == "mid"
    assert plan(("fallback", a, ("hedge", 0.02, b, c)), a="status:429", c="reset").kind() == (
        "whole"
    )
    told = plan(a, b="stall:0.3", c="cut")
    assert told.prompt == "soak 0 b=stall:0.3 c=cut"
    assert told.texts() == {"soak 0 b=stall:0.3 c=cut", "Stalling and done."}
