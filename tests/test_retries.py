"""Retries before the first frame, and how they show: STATUS events with sub_type="retry"."""

from __future__ import annotations

import email.utils
import time
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
import reactivex
from outcomes import Watch, outcome_of
from recorded import ENDPOINTS, text_body, weather_bodies

from solon_events import (
    ChatConnectionError,
    ChatEvent,
    ChatEventType,
    ChatHttpError,
    ChatModel,
    ChatProtocolError,
    ChatTimeoutError,
    parse,
    tool,
)
from solon_events.client.retry import RetryPolicy, retry_after_seconds
from solon_events.client.transport import RecordedResponse, ReplayTransport
from solon_events.devserver import DevServer, RunningServer

T = ChatEventType
RECORDED = "http://recorded.invalid/v1/chat/completions"


def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return orjson.dumps({"id": "c-1", "object": "chat.completion.chunk", "choices": [choice]})


def retry_status(attempt: int) -> ChatEvent:
    return ChatEvent(
        T.STATUS, sub_type="retry", attrs={"attempt": attempt, "delay": 0.5, "cause": "HTTP 503"}
    )


# --- the parse stage's hook: an event among the frames is relayed, not parsed


def test_an_event_among_the_frames_is_relayed_into_the_step_uncounted() -> None:
    frames: list[Any] = [retry_status(1), retry_status(2), chunk({"content": "Hi"}), "[DONE]"]
    frames.insert(3, chunk({}, "stop"))
    events: list[ChatEvent] = []
    errors: list[Exception] = []
    reactivex.from_iterable(frames).pipe(parse("openai", step=3, response_id="r-1")).subscribe(
        events.append, errors.append
    )
    assert not errors
    types = [e.type for e in events]
    assert types[:3] == [T.STEP_START, T.STATUS, T.STATUS]
    statuses = [e for e in events if e.type is T.STATUS]
    assert [e.attrs["attempt"] for e in statuses] == [1, 2]
    assert all(e.step == 3 and e.response_id == "r-1" for e in statuses)
    assert all(e.sub_type == "retry" and not e.raw for e in statuses)
    end = events[-1]
    assert end.type is T.STEP_END and end.response is not None and end.response.text == "Hi"


def test_relayed_events_are_not_frames() -> None:
    events: list[ChatEvent] = []
    errors: list[Exception] = []
    reactivex.from_iterable([retry_status(1)]).pipe(parse("openai")).subscribe(
        events.append, errors.append
    )
    assert [e.type for e in events] == [T.STEP_START, T.STATUS, T.STEP_END]  # the failed step
    (error,) = errors
    assert isinstance(error, ChatProtocolError) and "without a single frame" in str(error)


# --- the policy


def test_the_backoff_is_exponential_with_full_jitter_and_capped() -> None:
    policy = RetryPolicy(max_retries=9, initial_delay=0.5, max_delay=8.0)
    assert [policy.delay(n, jitter=lambda: 1.0) for n in range(1, 7)] == [
        0.5,
        1.0,
        2.0,
        4.0,
        8.0,
        8.0,
    ]
    assert policy.delay(3, jitter=lambda: 0.0) == 0.0
    assert policy.delay(3, jitter=lambda: 0.25) == 0.5
    assert policy.delay(1, retry_after=3.0) == 3.0
    assert policy.delay(1, retry_after=3600.0) == 60.0  # capped at max_retry_after
    assert policy.delay(1, retry_after=-5.0) == 0.0


def test_what_is_retried() -> None:
    policy = RetryPolicy(max_retries=2)
    for status in (408, 409, 429, 500, 502, 503, 504):
        assert policy.retries(ChatHttpError(status), 0)
    for status in (400, 401, 403, 404, 422, 501):
        assert not policy.retries(ChatHttpError(status), 0)
    assert policy.retries(ChatConnectionError("reset"), 1)
    assert not policy.retries(ChatConnectionError("reset"), 2)
    assert not policy.retries(ChatTimeoutError("slow", budget="timeout"), 0)
    assert not policy.retries(ChatProtocolError("not a stream"), 0)
    assert not RetryPolicy(max_retries=0).retries(ChatHttpError(503), 0)
    with pytest.raises(ValueError):
        RetryPolicy(max_retries=-1)


def test_retry_after_in_milliseconds_seconds_or_an_http_date() -> None:
    now = 1_700_000_000.0
    assert retry_after_seconds({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert retry_after_seconds({"Retry-After": "7"}) == 7.0
    date = email.utils.formatdate(now + 30, usegmt=True)
    assert retry_after_seconds({"retry-after": date}, now=lambda: now) == 30.0
    past = email.utils.formatdate(now - 30, usegmt=True)
    assert retry_after_seconds({"retry-after": past}, now=lambda: now) == 0.0
    for unreadable in ("soon", "-3", "nan", ""):
        assert retry_after_seconds({"retry-after": unreadable}) is None
    assert retry_after_seconds({}) is None


# --- over HTTP, against the embedded provider


@pytest.fixture
def server() -> Iterator[RunningServer]:
    """A provider of the test's own: flaky scenarios count requests per model name."""
    running = DevServer.run_in_thread()
    yield running
    running.close()


def model_for(server: RunningServer, scenario: str, **options: Any) -> ChatModel:
    return ChatModel(server.url + ENDPOINTS["openai"], scenario, **options)


def test_the_default_is_two_retries() -> None:
    with ChatModel("http://127.0.0.1:9/v1/chat/completions", "m") as model:
        assert model.max_retries == 2


def test_a_server_failing_twice_then_answering_is_retried_twice(server: RunningServer) -> None:
    with model_for(server, "flaky:2:503") as model:
        outcome = outcome_of(model.prompt("third time lucky"))
    assert outcome.error is None and len(server.requests) == 3
    types = [e.type for e in outcome.events]
    assert types[:4] == [T.RESPONSE_START, T.STEP_START, T.STATUS, T.STATUS]
    assert types.index(T.TEXT_START) == 4 and types[-1] is T.RESPONSE_END
    retries = outcome.of(T.STATUS)
    assert [e.sub_type for e in retries] == ["retry", "retry"]
    assert [e.attrs["attempt"] for e in retries] == [1, 2]
    assert all(e.attrs["delay"] == 0.01 for e in retries)  # the provider's retry-after-ms
    assert all("HTTP 503" in e.attrs["cause"] for e in retries)
    assert all(e.step == 0 and e.response_id == outcome.events[0].response_id for e in retries)
    final = outcome.events[-1].response
    assert final is not None and final.text == "third time lucky"


def test_retries_give_up_after_max_retries(server: RunningServer) -> None:
    with model_for(server, "flaky:5:502", max_retries=2) as model:
        outcome = outcome_of(model.prompt("never"))
    assert isinstance(outcome.error, ChatHttpError) and outcome.error.status == 502
    assert len(server.requests) == 3 and len(outcome.of(T.STATUS)) == 2
    assert outcome.events[-1].type is T.ERROR


def test_max_retries_zero_turns_retrying_off(server: RunningServer) -> None:
    with model_for(server, "flaky:1:503", max_retries=0) as model:
        outcome = outcome_of(model.prompt("once"))
    assert isinstance(outcome.error, ChatHttpError) and len(server.requests) == 1
    assert not outcome.of(T.STATUS)


@pytest.mark.parametrize("status", [400, 401, 404])
def test_a_client_error_is_not_retried(server: RunningServer, status: int) -> None:
    with model_for(server, f"status:{status}") as model:
        outcome = outcome_of(model.prompt("no"))
    assert isinstance(outcome.error, ChatHttpError) and outcome.error.status == status
    assert len(server.requests) == 1 and not outcome.of(T.STATUS)


def test_a_dropped_connection_is_retried(server: RunningServer) -> None:
    with model_for(server, "drop:1") as model:
        outcome = outcome_of(model.prompt("again please"))
    assert outcome.error is None and len(server.requests) == 2
    (retry,) = outcome.of(T.STATUS)
    assert "ServerDisconnectedError" in retry.attrs["cause"]
    assert 0.0 <= retry.attrs["delay"] <= 0.5  # full jitter below the first backoff step


def test_a_failure_after_the_first_frame_is_not_retried(server: RunningServer) -> None:
    with model_for(server, "cut") as model:
        outcome = outcome_of(model.prompt("cut me"))
    assert isinstance(outcome.error, ChatConnectionError)
    assert len(server.requests) == 1 and not outcome.of(T.STATUS)
    (error_event,) = outcome.of(T.ERROR)
    assert error_event.response is not None and error_event.response.text == "This is a cut"


def test_a_429_tells_when_to_retry_and_its_headers(server: RunningServer) -> None:
    with model_for(server, "status:429", max_retries=0) as model:
        outcome = outcome_of(model.prompt("too many"))
    error = outcome.error
    assert isinstance(error, ChatHttpError) and error.status == 429
    assert error.retry_after == 1.0 and error.headers["Retry-After"] == "1"
    assert error.headers["Content-Type"].startswith("application/json")


def test_a_429_is_retried_after_its_retry_after(server: RunningServer) -> None:
    with model_for(server, "flaky:1:429:0") as model:  # retry-after-ms: 0 beats retry-after: 1
        outcome = outcome_of(model.prompt("patience"))
    assert outcome.error is None
    (retry,) = outcome.of(T.STATUS)
    assert retry.attrs["delay"] == 0.0 and "HTTP 429" in retry.attrs["cause"]


def test_retry_after_in_seconds_is_honoured() -> None:
    transport = ReplayTransport(
        RecordedResponse(b"{}", status=503, headers={"Retry-After": "1"}),
        text_body("openai", "waited"),
    )
    with ChatModel(RECORDED, "m", transport=transport) as model:
        outcome = outcome_of(model.prompt("wait"))
    (retry,) = outcome.of(T.STATUS)
    assert retry.attrs["delay"] == 1.0
    assert outcome.events[-1].response is not None
    assert outcome.events[-1].response.text == "waited"


def test_no_retry_beyond_the_total_timeout() -> None:
    transport = ReplayTransport(
        RecordedResponse(b"{}", status=503, headers={"Retry-After": "30"}),
        text_body("openai", "too late"),
    )
    with ChatModel(RECORDED, "m", transport=transport, total_timeout=5.0) as model:
        outcome = outcome_of(model.prompt("wait"))
    assert isinstance(outcome.error, ChatHttpError) and not outcome.of(T.STATUS)
    assert len(transport.requests) == 1


def test_no_retry_after_disposal(server: RunningServer) -> None:
    retrying = Watch(T.STATUS)
    with model_for(server, "flaky:5:503:400") as model:
        subscription = model.prompt("stop").stream().subscribe(retrying.on_next)
        assert retrying.seen.wait(5.0)
        subscription.dispose()
        time.sleep(0.8)  # two retry-after waits
    assert len(server.requests) == 1, "a disposed response must not be retried"
    assert retrying.events[-1].type is T.STATUS


def test_a_later_step_is_retried_too() -> None:
    first, second = weather_bodies("openai", "sunny")
    transport = ReplayTransport(
        first, RecordedResponse(b"{}", status=500, headers={"retry-after-ms": "1"}), second
    )
    with ChatModel(RECORDED, "m", transport=transport) as model:
        outcome = outcome_of(model.prompt("weather?").tools(get_weather))
    assert outcome.error is None and len(transport.requests) == 3
    (retry,) = outcome.of(T.STATUS)
    types = [e.type for e in outcome.events]
    second_step = [i for i, t in enumerate(types) if t is T.STEP_START][1]
    assert retry.step == 1 and types.index(T.STATUS) == second_step + 1


@tool
def get_weather(city: str) -> str:
    """Current weather in a city.

    Args:
        city: The city's name.
    """
    return "sunny"
