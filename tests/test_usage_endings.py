"""Usage on every ending, in every dialect, over the embedded provider (real HTTP on
127.0.0.1): a response that completes, one the provider aborts, one that fails with an
error frame, one whose connection is cut after some frames, one whose body ends before its
last frame, one refused with an error status, one cancelled mid-text by disposal, by
``take(n)`` and by ``break`` out of ``astream()``, and a request retried after the provider
had accepted it.

Each ending's usage is the same in the terminal event (RESPONSE_END, ABORT, ERROR), in the
STEP_ENDs and in the ``on_usage`` report; a cancelled response's usage is in the report
alone (no event may follow a disposal). Where the provider had not counted the output yet
(its usage comes at the end, or Anthropic's and Gemini's counts came before the text), the
usage is marked estimated and covers what was streamed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from aborting import aborting
from outcomes import Watch, observed
from reactivex import operators as ops
from usage_reports import Reports

from solon_events import (
    ChatConnectionError,
    ChatError,
    ChatEvent,
    ChatEventType,
    ChatModel,
    Usage,
    UsageReport,
)
from solon_events.cli import ROUTES
from solon_events.client.estimate import heuristic_tokens
from solon_events.client.tool_loop import ResponseRun
from solon_events.devserver import RunningServer

T = ChatEventType
DIALECTS = list(ROUTES)


@pytest.fixture
def reports() -> Reports:
    return Reports()


def _streamed_text(events: list[ChatEvent]) -> str:
    return "".join(e.text or "" for e in events if e.type is T.TEXT_DELTA)


def _covers_the_stream(usage: Usage | None, deltas: list[str], dialect: str) -> None:
    """An estimated usage that counts a prompt and at least the text streamed after the
    provider's last count (the embedded provider's Gemini counts come with each frame, the
    first delta's included, as Gemini's do)."""
    uncounted = "".join(deltas[1:] if dialect == "gemini" else deltas)
    assert usage is not None and usage.prompt_tokens > 0
    if not uncounted:  # nothing came after the provider's count: it is kept as it is
        assert not usage.estimated
        return
    assert usage.estimated
    assert usage.completion_tokens >= heuristic_tokens(uncounted) > 0
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens


def _deltas(events: list[ChatEvent]) -> list[str]:
    return [e.text or "" for e in events if e.type is T.TEXT_DELTA]


def _summed(events: list[ChatEvent]) -> Usage | None:
    total: Usage | None = None
    for event in events:
        if event.type is T.STEP_END and event.usage is not None:
            total = event.usage if total is None else total + event.usage
    return total


def _collect(
    model: ChatModel, prompt: str = "count"
) -> tuple[list[ChatEvent], BaseException | None]:
    outcome = observed(model.prompt(prompt).stream(), timeout=20)
    return outcome.events, outcome.error


@pytest.mark.parametrize("dialect", DIALECTS)
def test_complete(
    server: RunningServer, make_model: Callable[..., ChatModel], reports: Reports, dialect: str
) -> None:
    model = make_model(server, "echo", dialect, on_usage=reports)
    events, failure = _collect(model, "one two three")
    assert failure is None
    end = events[-1]
    assert end.type is T.RESPONSE_END
    assert end.usage is not None and not end.usage.estimated
    assert (end.usage.prompt_tokens, end.usage.completion_tokens) == (3, 3)
    assert end.usage == _summed(events) == end.response.usage  # type: ignore[union-attr]
    report = reports.one()
    assert report.outcome == "completed" and report.error is None
    assert report.usage == end.usage and report.steps == (end.usage,)
    assert report.response_id == end.response_id and report.model == "echo"


def test_complete_without_usage_from_a_compatible_server_is_estimated(
    server: RunningServer, make_model: Callable[..., ChatModel], reports: Reports
) -> None:
    model = make_model(server, "echo", "openai", on_usage=reports)
    prompt = model.prompt("one two three").options(stream_options={"include_usage": False})
    events: list[ChatEvent] = []
    prompt.stream().pipe(ops.do_action(events.append)).run()
    end = events[-1]
    assert end.type is T.RESPONSE_END
    _covers_the_stream(end.usage, _deltas(events), "openai")
    assert end.usage is not None and end.usage.source == {"estimated_by": "heuristic"}
    assert reports.one().usage == end.usage


@pytest.mark.parametrize("dialect", DIALECTS)
def test_abort_frame(
    server: RunningServer, make_model: Callable[..., ChatModel], reports: Reports, dialect: str
) -> None:
    aborted = aborting(dialect, after=3)
    model = make_model(server, "slow:20:0.01", dialect, on_usage=reports)
    model = ChatModel(model.api_url, "slow:20:0.01", dialect=aborted, on_usage=reports)
    try:
        events, failure = _collect(model)
    finally:
        model.close()
    assert failure is None
    abort = events[-1]
    assert abort.type is T.ABORT and abort.text == "stopped by the provider"
    assert T.RESPONSE_END not in [e.type for e in events]
    text = _streamed_text(events)
    assert text.split() == ["0", "1", "2"]
    _covers_the_stream(abort.usage, _deltas(events), dialect)
    assert abort.usage == _summed(events)
    assert abort.response is not None and abort.response.text == text
    report = reports.one()
    assert report.outcome == "aborted" and report.usage == abort.usage


Failed = Callable[[str, str], tuple[ChatEvent, Exception, UsageReport]]


@pytest.fixture
def failed(
    server: RunningServer, make_model: Callable[..., ChatModel], reports: Reports, dialect: str
) -> Failed:
    """``failed(scenario, streamed)``: the ERROR, the failure and the report of a response
    of ``scenario`` (in the test's dialect, not retried) that failed after streaming
    ``streamed``; its usage covers the stream and is the STEP_ENDs' sum and the report's."""

    def run(scenario: str, streamed: str) -> tuple[ChatEvent, Exception, UsageReport]:
        model = make_model(server, scenario, dialect, on_usage=reports, max_retries=0)
        events, failure = _collect(model)
        assert isinstance(failure, ChatError)
        error = events[-1]
        assert error.type is T.ERROR
        assert _streamed_text(events) == streamed
        _covers_the_stream(error.usage, _deltas(events), dialect)
        assert error.usage == _summed(events)
        report = reports.one()
        assert report.outcome == "failed" and report.usage == error.usage
        return error, failure, report

    return run


@pytest.mark.parametrize("dialect", DIALECTS)
def test_error_frame(failed: Failed) -> None:
    error, failure, report = failed("error-frame", "Partial answer")
    assert failure.partial_response.usage == error.usage  # type: ignore[attr-defined]
    assert report.error is failure


@pytest.mark.parametrize("dialect", DIALECTS)
def test_http_failure_after_some_frames(failed: Failed) -> None:
    _, failure, _ = failed("cut", "This is a cut")
    assert isinstance(failure, ChatConnectionError)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_stream_ended_without_its_last_frame(failed: Failed) -> None:
    failed("truncate", "This is a partial answer")  # ends cleanly: no finish, no usage frame


@pytest.mark.parametrize("dialect", DIALECTS)
def test_an_error_status_before_any_frame_is_not_billed(
    server: RunningServer, make_model: Callable[..., ChatModel], reports: Reports, dialect: str
) -> None:
    model = make_model(server, "status:500", dialect, on_usage=reports, max_retries=0)
    events, failure = _collect(model)
    assert isinstance(failure, ChatError)
    assert events[-1].type is T.ERROR and events[-1].usage is None
    report = reports.one()
    assert report.outcome == "failed" and report.usage is None
    assert report.steps == (None,) and report.retried == ()


@pytest.mark.parametrize("dialect", DIALECTS)
def test_disposal_mid_text(
    server: RunningServer, make_model: Callable[..., ChatModel], reports: Reports, dialect: str
) -> None:
    model = make_model(server, "gate", dialect, on_usage=reports)
    first_text = Watch(T.TEXT_DELTA)
    subscription = model.prompt("wait").stream().subscribe(first_text.on_next)
    assert first_text.seen.wait(10)
    subscription.dispose()
    events = first_text.events
    delivered = len(events)
    report = reports.one()
    assert report.outcome == "cancelled"
    _covers_the_stream(report.usage, _deltas(events), dialect)
    assert report.steps == (report.usage,)
    assert len(events) == delivered  # nothing after the disposal
    assert not {T.STEP_END, T.RESPONSE_END, T.ERROR} & {e.type for e in events}


@pytest.mark.parametrize("dialect", DIALECTS)
def test_take(
    server: RunningServer, make_model: Callable[..., ChatModel], reports: Reports, dialect: str
) -> None:
    model = make_model(server, "slow:30:0.02", dialect, on_usage=reports)
    texts = (
        model.prompt("count")
        .stream()
        .pipe(ops.filter(lambda e: e.type is T.TEXT_DELTA), ops.take(3), ops.map(lambda e: e.text))
        .pipe(ops.to_list())
        .run()
    )
    assert "".join(texts).split() == ["0", "1", "2"]
    report = reports.one()
    assert report.outcome == "cancelled"
    _covers_the_stream(report.usage, texts, dialect)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_break(
    server: RunningServer, make_model: Callable[..., ChatModel], reports: Reports, dialect: str
) -> None:
    model = make_model(server, "slow:30:0.02", dialect, on_usage=reports)

    async def read() -> list[str]:
        texts: list[str] = []
        stream = model.prompt("count").astream()
        async for event in stream:
            if event.type is T.TEXT_DELTA:
                texts.append(event.text or "")
                if len(texts) == 3:
                    break
        await stream.aclose()  # type: ignore[attr-defined]
        return texts

    texts = asyncio.run(read())
    assert "".join(texts).split() == ["0", "1", "2"]
    report = reports.one()
    assert report.outcome == "cancelled"
    _covers_the_stream(report.usage, texts, dialect)


def test_a_prompts_own_hook_is_told_after_the_models_and_a_raising_hook_is_logged(
    server: RunningServer,
    make_model: Callable[..., ChatModel],
    reports: Reports,
    caplog: pytest.LogCaptureFixture,
) -> None:
    told: list[str] = []

    def model_hook(report: UsageReport) -> None:
        told.append("model")
        raise RuntimeError("a broken billing hook")

    def prompt_hook(report: UsageReport) -> None:
        told.append("prompt")
        reports(report)

    model = make_model(server, "echo", "anthropic", on_usage=model_hook)
    with caplog.at_level("ERROR", logger="solon_events.tool_loop"):
        response = model.prompt("one two").on_usage(prompt_hook).call()
        report = reports.one()
    assert told == ["model", "prompt"]
    assert report.usage == response.usage and report.outcome == "completed"
    assert any("on_usage hook raised" in r.getMessage() for r in caplog.records)
    with pytest.raises(TypeError, match="callable"):
        model.prompt("x").on_usage("not a function")  # type: ignore[arg-type]


def test_an_astream_read_to_its_end_is_not_stopped(
    server: RunningServer,
    make_model: Callable[..., ChatModel],
    reports: Reports,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # stop() is for a response left early (it reports it cancelled); one read to its end
    # must not run it, as whatever it raised would reach the consumer after the end
    def stop(self: ResponseRun) -> None:
        raise RuntimeError("stop() after the end")

    monkeypatch.setattr(ResponseRun, "stop", stop)
    model = make_model(server, "echo", "openai", on_usage=reports)

    async def read() -> list[ChatEvent]:
        return [event async for event in model.prompt("one two").astream()]

    events = asyncio.run(read())
    assert events[-1].type is T.RESPONSE_END
    assert reports.one().outcome == "completed"


def _answered_after_a_retry(model: ChatModel) -> tuple[list[ChatEvent], ChatEvent]:
    """The events of a response answered after one retry, and the retry's STATUS event."""
    events, failure = _collect(model, "one two three")
    assert failure is None
    retries = [e for e in events if e.type is T.STATUS and e.sub_type == "retry"]
    assert len(retries) == 1 and events[-1].type is T.RESPONSE_END
    return events, retries[0]


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_request_retried_after_the_provider_accepted_it_is_kept(
    server: RunningServer, make_model: Callable[..., ChatModel], reports: Reports, dialect: str
) -> None:
    # answered with a stream, then lost before its first frame: the input may be billed
    model = make_model(server, "cut-early:1", dialect, on_usage=reports)
    events, retry = _answered_after_a_retry(model)
    assert retry.attrs["accepted"] is True
    lost = retry.usage
    assert lost is not None and lost.estimated
    assert lost.prompt_tokens > 0 and lost.completion_tokens == 0
    assert lost.source["retried"] is True
    end = events[-1]
    assert end.type is T.RESPONSE_END and end.usage is not None and not end.usage.estimated
    assert end.usage == _summed(events)  # the events count the steps alone
    report = reports.one()
    assert report.outcome == "completed"
    assert report.retried == (lost,) and report.steps == (end.usage,)
    assert report.usage == end.usage + lost and report.usage.estimated


@pytest.mark.parametrize("dialect", ["openai", "bedrock"])
def test_a_request_refused_with_an_error_status_is_not_billed(
    server: RunningServer, make_model: Callable[..., ChatModel], reports: Reports, dialect: str
) -> None:
    model = make_model(server, "flaky:1:503:1", dialect, on_usage=reports)
    events, retry = _answered_after_a_retry(model)
    assert retry.attrs["accepted"] is False and retry.usage is None
    report = reports.one()
    assert report.retried == () and report.usage == events[-1].usage
