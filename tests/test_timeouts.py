"""Time budgets count decoded frames, never bytes (#13.1): against the embedded provider's
fault scenarios on 127.0.0.1, in every dialect."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from outcomes import Outcome, outcome_of
from recorded import DIALECTS, ENDPOINTS

from solon_events import ChatEventType, ChatModel, ChatTimeoutError
from solon_events.devserver import DevServer, RunningServer

T = ChatEventType


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    running = DevServer.run_in_thread()
    yield running
    running.close()


def run(server: RunningServer, dialect: str, scenario: str, **budgets: float) -> Outcome:
    url = server.url + ENDPOINTS[dialect]
    with ChatModel(url, scenario, dialect=dialect, max_retries=0, **budgets) as model:
        return outcome_of(model.prompt("tell me"))


def timed_out(outcome: Outcome, budget: str) -> ChatTimeoutError:
    error = outcome.error
    assert isinstance(error, ChatTimeoutError), error
    assert error.budget == budget
    (error_event,) = [e for e in outcome.events if e.type is T.ERROR]
    assert outcome.events[-1] is error_event and error_event.error is error
    return error


@pytest.mark.parametrize("scenario", ["trickle:0.01", "comments:0.05"])
@pytest.mark.parametrize("dialect", DIALECTS)
def test_trickling_bytes_or_comments_do_not_restart_the_first_frame_budget(
    server: RunningServer, dialect: str, scenario: str
) -> None:
    before = server.disconnect_count
    outcome = run(server, dialect, scenario, timeout=0.4, idle_timeout=30.0)
    error = timed_out(outcome, "timeout")
    assert error.frames_received == 0
    assert "timeout of 0.4 s ran out waiting for the first frame" in str(error)
    assert "0 frames and" in str(error) and "bytes received" in str(error)
    (error_event,) = [e for e in outcome.events if e.type is T.ERROR]
    assert error_event.response is not None and error_event.response.text == ""
    assert server.wait_disconnect(timeout=2.0, count=before + 1), "the connection stays open"


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_frame_then_an_endless_line_runs_out_of_idle_time(
    server: RunningServer, dialect: str
) -> None:
    before = server.disconnect_count
    outcome = run(server, dialect, "endless-line:0.05", timeout=30.0, idle_timeout=0.4)
    error = timed_out(outcome, "idle_timeout")
    assert error.frames_received is not None and error.frames_received >= 1
    frames = "1 frame " if error.frames_received == 1 else f"{error.frames_received} frames "
    assert "idle_timeout of 0.4 s ran out waiting for the next frame" in str(error)
    assert frames in str(error)
    (error_event,) = [e for e in outcome.events if e.type is T.ERROR]
    assert error_event.response is not None and error_event.response.text == "Partial"
    assert error.partial_response is not None and error.partial_response.text == "Partial"
    assert server.wait_disconnect(timeout=2.0, count=before + 1), "the connection stays open"


def test_a_providers_ping_frames_are_frames(server: RunningServer) -> None:
    """Anthropic's ping events keep a stream alive that would otherwise run out of idle
    time; the same pauses without pings (OpenAI has none) do run out."""
    # pings 0.25 s apart (2 s in all) against 1 s of idle time: margin for a loaded machine
    pinged = run(server, "anthropic", "pings:0.25:8", timeout=5.0, idle_timeout=1.0)
    assert pinged.error is None
    end = pinged.events[-1]
    assert end.type is T.RESPONSE_END and end.response is not None
    assert end.response.text == "Hello after the pings."
    silent = run(server, "openai", "pings:0.25:8", timeout=5.0, idle_timeout=1.0)
    assert timed_out(silent, "idle_timeout").frames_received


def test_total_timeout_bounds_a_stream_that_keeps_sending_frames(server: RunningServer) -> None:
    """A frame every 0.05 s for 20 s, cut by a total budget of 2 s: whatever the machine's
    load, some frames come before it runs out (the first within 2 s) and many after it."""
    outcome = run(server, "openai", "slow:400:0.05", timeout=30.0, idle_timeout=30.0,
                  total_timeout=2.0)  # fmt: skip
    error = timed_out(outcome, "total_timeout")
    assert error.frames_received and "total_timeout of 2.0 s" in str(error)
    assert "for the whole response" in str(error)
    assert error.frames_received < 400
    texts = [e.text for e in outcome.events if e.type is T.TEXT_DELTA]
    (error_event,) = [e for e in outcome.events if e.type is T.ERROR]
    assert error_event.response is not None and error_event.response.text == "".join(texts)
