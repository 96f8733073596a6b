"""The fault matrix (#13.6): every fault the embedded provider can act out, in every dialect,
through stream() (on the I/O thread) and astream() (on the caller's loop), and the faults
of replay() itself. For each: the error the subscriber gets (type and message), the
partial response kept (on the error and on its one ERROR event, the one terminal event),
the connection closed, and no task or thread left behind.

The errors guide (docs/guides/errors.rst) has the matrix as a table; a change here changes it there.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from outcomes import Outcome, astream_outcome_of, outcome_of
from recorded import DIALECTS, ENDPOINTS, text_body
from sockets import open_connections, wait_for

from solon_events import (
    ChatConnectionError,
    ChatError,
    ChatEventFilter,
    ChatEventType,
    ChatHttpError,
    ChatModel,
    ChatProtocolError,
    ChatTimeoutError,
    ProviderError,
    replay,
)
from solon_events.devserver import DevServer, RunningServer

T = ChatEventType
KEY = "sk-fault-matrix-0123456789abcdef"
_TERMINAL = (T.RESPONSE_END, T.ERROR)


@attrs.frozen
class Fault:
    """A scenario of the embedded provider, the model's options, and what must come of it."""

    scenario: str
    error: type[BaseException] | None  # None: the response succeeds
    message: str  # a regular expression the error's message matches
    partial: str  # the text of the partial (or whole) response
    options: dict[str, Any] = attrs.field(factory=dict)
    retries: int = 0  # the STATUS retry events expected
    cut_short: bool = False  # the body is not read to its end: its connection must be closed
    dialects: tuple[str, ...] = DIALECTS


FIRST = r"^timeout of 0\.3 s ran out waiting for the first frame from .* \(0 frames and"
NEXT = r"^idle_timeout of 0\.3 s ran out waiting for the next frame from .* \(\d+ frames? and"
MASKED = r"Incorrect API key provided: \*\*\*$"
# The budget a fault must run out of is short; any other is long, so that a loaded machine
# (a first frame late by a second) cannot make the wrong one run out first.
SHORT = {"timeout": 0.3, "idle_timeout": 30.0}  # the first frame never comes in time
IDLE = {"timeout": 5.0, "idle_timeout": 0.3}  # a first frame, then nothing in time
PINGED = {"timeout": 5.0, "idle_timeout": 1.0}  # pings 0.25 s apart, 1.5 s in all

FAULTS = {
    "trickling bytes": Fault("trickle:0.02", ChatTimeoutError, FIRST, "", SHORT, cut_short=True),
    "comments only": Fault("comments:0.05", ChatTimeoutError, FIRST, "", SHORT, cut_short=True),
    "a frame, then an endless line": Fault(
        "endless-line:0.05", ChatTimeoutError, NEXT, "Partial", IDLE, cut_short=True
    ),
    "a stall between frames": Fault(
        "stall:5", ChatTimeoutError, NEXT, "Stalling", IDLE, cut_short=True
    ),
    "no headers in time": Fault(
        "first-delay:5", ChatTimeoutError, FIRST + " 0 bytes", "", SHORT, cut_short=True
    ),
    "provider pings within idle_timeout": Fault(
        "pings:0.25:6", None, "", "Hello after the pings.", PINGED, dialects=("anthropic",)
    ),
    "the connection cut mid-frame": Fault(
        "cut", ChatConnectionError, r"^request to .* failed: ClientPayloadError",
        "This is a cut", cut_short=True,
    ),
    "the body ends without completion": Fault(
        "truncate", ChatProtocolError,
        r"^the stream ended after \d+ frames without .* \(truncated\)$",
        "This is a partial answer",
    ),
    "an in-stream provider error": Fault(
        "error-frame", ProviderError, r"^provider error: The engine is currently overloaded",
        "Partial answer",
    ),
    "a key echoed in an error frame": Fault(
        "echo-key:frame", ProviderError, "^provider error: " + MASKED, "Partial"
    ),
    "a 200 HTML page": Fault(
        "html", ChatProtocolError, r"answered with text/html \(starting '<!DOCTYPE", ""
    ),
    "a 503, then an answer": Fault(
        "flaky:1:503:10", None, "", "tell me", {"max_retries": 2}, retries=1
    ),
    "503s beyond max_retries": Fault(
        "flaky:9:503:10", ChatHttpError, r"^HTTP 503 from ", "", {"max_retries": 1}, retries=1
    ),
    "a 429 with max_retries=0": Fault("flaky:9:429:10", ChatHttpError, r"^HTTP 429 from ", ""),
    "a dropped connection, then an answer": Fault(
        "drop:1:a", None, "", "tell me", {"max_retries": 1}, retries=1
    ),
    "answered, cut before the first frame, then an answer": Fault(
        "cut-early:1:a", None, "", "tell me", {"max_retries": 1}, retries=1
    ),
    "a dropped connection, no retries": Fault(
        "drop:1:b", ChatConnectionError, r"^request to .* failed", ""
    ),
    "an error body nested 500 deep": Fault(
        "deep-error:500:500", ChatHttpError, r'^HTTP 500 from .*: \{"error": \{"error"', ""
    ),
    "a 401 quoting the key": Fault(
        "echo-key:status", ChatHttpError, "^HTTP 401 from .*: " + MASKED, ""
    ),
}  # fmt: skip

CASES = [
    pytest.param(fault, dialect, id=f"{name}-{dialect}")
    for name, fault in FAULTS.items()
    for dialect in fault.dialects
]


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    running = DevServer.run_in_thread()
    yield running
    running.close()


async def _other_tasks() -> list[str]:
    me = asyncio.current_task()
    return [repr(task) for task in asyncio.all_tasks() if task is not me]


def check_outcome(outcome: Outcome, fault: Fault) -> None:
    terminal = [event for event in outcome.events if event.type in _TERMINAL]
    assert len(terminal) == 1 and outcome.events[-1] is terminal[0], "one terminal event, last"
    assert outcome.events[0].type is T.RESPONSE_START
    retries = [e for e in outcome.of(T.STATUS) if e.sub_type == "retry"]
    assert len(retries) == fault.retries
    if fault.error is None:
        assert outcome.error is None and outcome.completed
        response = terminal[0].response
        assert response is not None and response.text == fault.partial
        return
    error = outcome.error
    assert type(error) is fault.error, repr(error)
    assert isinstance(error, ChatError)
    assert re.search(fault.message, str(error)), str(error)
    assert KEY not in repr(error.args) and KEY not in str(error.provider_error)
    (error_event,) = outcome.of(T.ERROR)
    assert error_event.error is error
    assert error.partial_response is not None
    assert error.partial_response.text == fault.partial
    assert error_event.response is not None and error_event.response.text == fault.partial


@pytest.mark.parametrize("edge", ["stream", "astream"])
@pytest.mark.parametrize(("fault", "dialect"), CASES)
def test_fault(server: RunningServer, fault: Fault, dialect: str, edge: str) -> None:
    threads = set(threading.enumerate())
    options = {"max_retries": 0, **fault.options}
    url = server.url + ENDPOINTS[dialect]
    scenario = fault.scenario
    if scenario.startswith(
        ("flaky:", "drop:", "cut-early:")
    ):  # the provider counts attempts per name
        scenario += f":{edge}"
    model = ChatModel(url, scenario, dialect=dialect, api_key=KEY, **options)
    try:
        if edge == "stream":
            outcome = outcome_of(model.prompt("tell me"))
        else:  # on a loop of its own: no task left on it, its pool closed at its end
            outcome, left_on_loop = astream_outcome_of(model.prompt("tell me"))
            assert not left_on_loop, left_on_loop
        check_outcome(outcome, fault)
        # a body read to its end leaves its connection to the pool; one cut short is closed
        kept = 0 if fault.cut_short else 1
        assert wait_for(lambda: open_connections(server.port) <= kept), "connection left open"
        left = model._io.run(_other_tasks(), timeout=5)
        assert not left, left
    finally:
        model.close()
    assert wait_for(lambda: set(threading.enumerate()) <= threads), "a thread was left"
    assert wait_for(lambda: open_connections(server.port) == 0), "connection left open"


# --- replay()'s own faults


def run_replay(source: Any, **options: Any) -> Outcome:
    outcome = Outcome()
    replay(source, event_filter=ChatEventFilter.all(), **options).subscribe(
        outcome.events.append, outcome.on_error, outcome.on_completed
    )
    return outcome


REPLAY_FAULTS = {
    "only [DONE]": (b"data: [DONE]\n\n", {}, ChatProtocolError, "without a frame but \\[DONE\\]"),
    "anthropic frames read as openai": (
        text_body("anthropic", "Hi"), {"dialect": "openai"}, ChatProtocolError,
        "'openai' dialect read \\d+ frames that are not its own: "
        'looks like anthropic frames: pass dialect="anthropic"',
    ),
    "openai frames read as gemini": (
        text_body("openai", "Hi"), {"dialect": "gemini"}, ChatProtocolError,
        'found nothing in \\d+ frames: looks like openai frames: pass dialect="openai"',
    ),
    "not an event stream": (
        b"<html>nope</html>", {}, ChatProtocolError, "not an event stream",
    ),
    "a malformed frame": (
        b'data: {"choices": [\n\n', {"dialect": "openai"}, ChatProtocolError,
        "frame 1 is not valid JSON",
    ),
}  # fmt: skip


@pytest.mark.parametrize(
    ("body", "options", "error_type", "message"),
    list(REPLAY_FAULTS.values()),
    ids=list(REPLAY_FAULTS),
)
def test_replay_fault(body: bytes, options: Any, error_type: type, message: str) -> None:
    threads = set(threading.enumerate())
    outcome = run_replay(body, **options)
    assert type(outcome.error) is error_type and re.search(message, str(outcome.error))
    terminal = [e for e in outcome.events if e.type in _TERMINAL]
    assert len(terminal) == 1 and terminal[0].type is T.ERROR
    assert outcome.error.partial_response is not None  # type: ignore[union-attr]
    assert set(threading.enumerate()) <= threads


@pytest.mark.parametrize(
    ("make", "error_type", "message"),
    [
        (lambda tmp: "missing.jsonl", FileNotFoundError, "'missing.jsonl' does not exist"),
        (lambda tmp: tmp / "absent.sse", FileNotFoundError, "does not exist"),
        (lambda tmp: tmp, IsADirectoryError, "is a directory"),
    ],
    ids=["a string naming no file", "a missing Path", "a directory"],
)
def test_replay_of_no_file_fails_at_the_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make: Any, error_type: type, message: str
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(error_type, match=message):
        replay(make(tmp_path))
