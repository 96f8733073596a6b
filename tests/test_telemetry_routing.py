"""OpenTelemetry of many models as one (solon_events.telemetry.groups) over the embedded
provider: the group's span, one chat span per attempt under it, a failed attempt recorded
as an error, a hedge's loser as cancelled, nothing counted twice in the metrics. Spans go
to the real SDK's in-memory exporter (tests/otel_global.py)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode
from otel_global import EXPORTER, READER, install

from solon_events import ChatHttpError, ChatModel, Router, race
from solon_events.devserver import RunningServer

Build = Callable[..., ChatModel]


@pytest.fixture(autouse=True)
def telemetry() -> Iterator[None]:
    install()
    yield


def finished(count: int) -> dict[str, ReadableSpan]:
    """The spans finished so far, by name (waiting for ``count`` of them: a loser's span
    ends when its request has stopped, on its model's I/O thread)."""
    until = time.monotonic() + 5
    while len(EXPORTER.get_finished_spans()) < count and time.monotonic() < until:
        time.sleep(0.01)
    return {span.name: span for span in EXPORTER.get_finished_spans()}


def attributes(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def token_points() -> list[tuple[dict[str, Any], float]]:
    data = READER.get_metrics_data()
    found = []
    for resource in data.resource_metrics if data is not None else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == "gen_ai.client.token.usage":
                    found += [
                        (dict(p.attributes), p.sum) for p in metric.data.data_points if p.count
                    ]
    return found


@pytest.mark.parametrize("edge", ["call", "acall"])
def test_a_fallback_is_a_group_span_over_a_failed_and_an_answering_attempt(
    server: RunningServer, make_model: Build, edge: str
) -> None:
    failing = make_model(server, "status:503", telemetry=True, max_retries=0)
    backup = make_model(server, "echo", telemetry=True)
    prompt = failing.fallback(backup).prompt("one two")
    answer = prompt.call() if edge == "call" else asyncio.run(prompt.acall())
    spans = finished(3)
    group = spans["chat fallback(status:503, echo)"]
    failed, answered = spans["chat status:503"], spans["chat echo"]
    for attempt in (failed, answered):
        assert attempt.parent is not None and attempt.parent.span_id == group.context.span_id
        assert attempt.context.trace_id == group.context.trace_id
    assert failed.status.status_code is StatusCode.ERROR
    assert attributes(failed)["error.type"] == "503"
    assert answered.status.status_code is StatusCode.UNSET
    assert attributes(answered)["gen_ai.response.id"] == answer.provider_response_id
    assert group.status.status_code is StatusCode.UNSET
    mine = attributes(group)
    assert mine["solon_events.group.kind"] == "fallback"
    assert mine["solon_events.group.models"] == ("status:503", "echo")
    assert mine["solon_events.group.winner"] == "echo"
    assert mine["solon_events.group.attempts"] == 2
    assert [dict(e.attributes or {}) for e in group.events] == [
        {"model": "status:503", "outcome": "failed", "error.type": "503"},
        {"model": "echo", "outcome": "answered"},
    ]
    # The tokens are the attempts' own, once: the group's span records no metric.
    assert sorted(total for _, total in token_points()) == [2, 2]


def test_a_routers_skipped_deployment_is_an_attempt_of_its_span(
    fresh_server: RunningServer, make_model: Build
) -> None:
    failing = make_model(fresh_server, "status:503", "anthropic", telemetry=True, max_retries=0)
    backup = make_model(fresh_server, "echo", "ollama", telemetry=True)
    router = Router([failing, backup], strategy="fallback", cooldown=60)
    router.prompt("first").call()  # the 503 cools the first down
    EXPORTER.clear()
    assert router.prompt("second").call().text == "second"
    spans = finished(2)
    group = spans["chat fallback(status:503, echo)"]
    assert attributes(group)["solon_events.group.attempts"] == 1  # one started
    assert attributes(group)["solon_events.group.winner"] == "echo"
    assert [dict(e.attributes or {}) for e in group.events] == [
        {
            "model": "status:503",
            "outcome": "skipped",
            "error.type": "solon_events.client.router.CoolingDownError",
        },
        {"model": "echo", "outcome": "answered"},
    ]
    assert "chat status:503" not in spans  # never asked: no chat span


def test_a_hedges_loser_is_recorded_as_cancelled(
    fresh_server: RunningServer, make_model: Build
) -> None:
    slow = make_model(fresh_server, "first-delay:30", telemetry=True)
    fast = make_model(fresh_server, "echo", telemetry=True)
    assert slow.hedge(fast, after=0.05).prompt("one").call().text == "one"
    spans = finished(3)
    group, loser = spans["chat hedge(first-delay:30, echo)"], spans["chat first-delay:30"]
    assert loser.parent is not None and loser.parent.span_id == group.context.span_id
    assert spans["chat echo"].parent.span_id == group.context.span_id  # type: ignore[union-attr]
    assert attributes(loser)["solon_events.response.cancelled"] is True
    assert loser.status.status_code is StatusCode.UNSET
    assert [e.name for e in loser.events] == ["cancelled"]
    assert [dict(e.attributes or {})["outcome"] for e in group.events] == ["cancelled", "answered"]


def test_a_group_that_fails_records_the_failure(server: RunningServer, make_model: Build) -> None:
    first = make_model(server, "status:500", telemetry=True, max_retries=0)
    second = make_model(server, "status:429", telemetry=True, max_retries=0)
    with pytest.raises(ChatHttpError):
        race(first, second).prompt("one").call()
    spans = finished(3)
    group = spans["chat race(status:500, status:429)"]
    assert group.status.status_code is StatusCode.ERROR
    assert attributes(group)["error.type"] in ("500", "429")
    assert "solon_events.group.winner" not in attributes(group)


def test_disposing_a_group_response_is_a_cancellation(
    fresh_server: RunningServer, make_model: Build
) -> None:
    slow = make_model(fresh_server, "first-delay:30", telemetry=True)
    chain = slow.fallback(make_model(fresh_server, "echo", telemetry=True))
    subscription = chain.prompt("one").stream().subscribe(lambda _e: None)
    assert fresh_server.wait_disconnect(0.3) is False  # it runs
    subscription.dispose()
    spans = finished(2)
    group = spans["chat fallback(first-delay:30, echo)"]
    assert attributes(group)["solon_events.response.cancelled"] is True
    assert attributes(spans["chat first-delay:30"])["solon_events.response.cancelled"] is True


def test_no_group_span_without_telemetry(server: RunningServer, make_model: Build) -> None:
    chain = make_model(server, "status:503", max_retries=0).fallback(make_model(server, "echo"))
    assert chain.prompt("one").call().text == "one"
    assert EXPORTER.get_finished_spans() == ()
