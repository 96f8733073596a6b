"""``fallback(..., mid_stream="continue")``: after a failure mid-answer the next model
continues the text so far, sent as an assistant prefill in its dialect's form, over the
embedded provider on 127.0.0.1 (which continues its scripted answer from a prefill), through
stream(), astream() and call(); and the cases that restart instead (a dialect without
prefill, a cut inside a tool call, no text).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from routing_runs import acollect, collect, weather_tool
from stream_invariants import check_invariants

from solon_events import (
    AssistantMessage,
    ChatEvent,
    ChatEventFilter,
    ChatEventType,
    ChatModel,
    ChatResponse,
    UserMessage,
)
from solon_events.cli import ROUTES
from solon_events.devserver import DevServer, RunningServer
from solon_events.devserver.scenarios import continued
from solon_events.devserver.turns import Finish, Pause, Script, Text
from solon_events.dialects.openai import OpenAIDialect

T = ChatEventType
PROMPT = "one two three"
STALLED = "Stalling"  # what stall:S says before its pause
ANSWER = "Stalling and done."  # stall:S's whole answer


@pytest.fixture
def provider() -> Iterator[RunningServer]:
    running = DevServer.run_in_thread()
    yield running
    running.close()


@pytest.fixture
def build(provider: RunningServer) -> Iterator[Any]:
    """``build(model, dialect)``: a model on the dialect's route (``"openai:prefix"``: Chat
    Completions declared to take a prefill in that form), closed after the test."""
    made: list[ChatModel] = []

    def make(name: str, dialect: str = "openai", **options: Any) -> ChatModel:
        route, _, form = dialect.partition(":")
        chosen: Any = OpenAIDialect(prefill=form) if form else route  # type: ignore[arg-type]
        options.setdefault("max_retries", 0)
        options.setdefault("timeout", 5)
        model = ChatModel(provider.url + ROUTES[route], name, dialect=chosen, **options)
        made.append(model)
        return model

    yield make
    for model in made:
        model.close()


def stalling(build: Any, dialect: str = "openai") -> ChatModel:
    """A model that says "Stalling", then fails mid-answer (its idle budget runs out)."""
    return build("stall:5", dialect, idle_timeout=0.3)


def run_edge(edge: str, prompt: Any) -> tuple[list[ChatEvent], BaseException | None]:
    prompt = prompt.event_filter(ChatEventFilter.all())
    if edge == "stream":
        return collect(prompt.stream())
    return asyncio.run(acollect(prompt))


def texts(events: list[ChatEvent]) -> list[str]:
    return [e.text or "" for e in events if e.type is T.TEXT_DELTA]


def fallbacks(events: list[ChatEvent]) -> list[ChatEvent]:
    return [e for e in events if e.type is T.STATUS and e.sub_type == "fallback"]


def last_request(provider: RunningServer, model: str) -> dict[str, Any]:
    bodies = [r.body for r in provider.requests if isinstance(r.body, dict)]
    return [b for b in bodies if b.get("model") == model][-1]


def prefill_sent(dialect: str, body: dict[str, Any]) -> str:
    """The trailing assistant turn of a request body, in the dialect's form (asserted)."""
    last = body["messages"][-1]
    assert last["role"] == "assistant"
    if dialect == "anthropic":
        assert [b["type"] for b in last["content"]] == ["text"]
        return str(last["content"][0]["text"])
    if dialect == "openai:continue_final_message":
        assert body["continue_final_message"] is True and body["add_generation_prompt"] is False
    elif dialect.startswith("openai:"):
        assert last[dialect.partition(":")[2]] is True
    return str(last["content"])


CONTINUING = [
    "anthropic",
    "ollama",
    "openai:prefix",
    "openai:partial",
    "openai:continue_final_message",
]


@pytest.mark.parametrize("edge", ["stream", "astream"])
@pytest.mark.parametrize("dialect", CONTINUING)
def test_the_next_model_continues_the_text(
    provider: RunningServer, build: Any, edge: str, dialect: str
) -> None:
    chain = stalling(build).fallback(build("stall:5", dialect), mid_stream="continue")
    events, error = run_edge(edge, chain.prompt(PROMPT))
    assert error is None
    check_invariants(events, None)
    assert texts(events) == [STALLED, " and done."]  # each once, appended
    (status,) = fallbacks(events)
    assert status.attrs["mode"] == "continue" and status.attrs["continued_text"] == STALLED
    assert status.attrs["error"] == "ChatTimeoutError" and status.attrs["attempt"] == 0
    assert "to continue the text of step 0" in (status.text or "")
    steps = [(e.type, e.step) for e in events if e.type in (T.STEP_START, T.STEP_END)]
    assert steps == [(T.STEP_START, 0), (T.STEP_END, 0), (T.STEP_START, 1), (T.STEP_END, 1)]
    at = events.index(status)
    after = [e.type for e in events[at + 1 :] if e.type is not T.HEARTBEAT]
    assert events[at - 1].type is T.STEP_END and after[0] is T.STEP_START
    step_ends = [e.response for e in events if e.type is T.STEP_END]
    assert [r.text for r in step_ends if r is not None] == [STALLED, ANSWER]
    assert not [e for e in events if e.type is T.ERROR]
    end = events[-1].response
    assert end is not None and end.text == ANSWER  # the prefix and its continuation, once
    assert [(a.outcome, a.usage is not None) for a in end.attempts] == [
        ("failed", True),
        ("answered", True),
    ]
    assert end.attempts[0].usage.estimated  # type: ignore[union-attr]  # cut: estimated
    assert end.usage == end.attempts[0].usage + end.attempts[1].usage  # type: ignore[operator]
    assert prefill_sent(dialect, last_request(provider, "stall:5")) == STALLED


@pytest.mark.parametrize("dialect", ["anthropic", "ollama", "openai:prefix"])
def test_continue_through_call(build: Any, dialect: str) -> None:
    chain = stalling(build).fallback(build("stall:5", dialect), mid_stream="continue")
    response = chain.prompt(PROMPT).call()
    assert isinstance(response, ChatResponse)
    assert response.text == ANSWER
    assert [a.outcome for a in response.attempts] == ["failed", "answered"]
    assert all(a.usage is not None for a in response.attempts)
    acalled = asyncio.run(chain.prompt(PROMPT).acall())
    assert acalled.text == ANSWER


def test_whitespace_shown_is_not_sent_nor_shown_again(provider: RunningServer, build: Any) -> None:
    # slow:3:0.5 says "0 ", "1 ", "2 " half a second apart: the first fails after "0 ".
    failing = build("slow:3:0.5", idle_timeout=0.2)
    chain = failing.fallback(build("slow:3:0.5", "anthropic"), mid_stream="continue")
    events, error = run_edge("astream", chain.prompt(PROMPT))
    assert error is None
    # the prefill leaves the trailing space out; the continuation's leading space, shown
    # already, is dropped (its delta, " ", is nothing more)
    assert prefill_sent("anthropic", last_request(provider, "slow:3:0.5")) == "0"
    assert texts(events) == ["0 ", "1 ", "2 "]
    assert "".join(texts(events)) == events[-1].response.text == "0 1 2 "  # type: ignore[union-attr]
    step_end = [e.response for e in events if e.type is T.STEP_END][-1]
    assert step_end is not None and step_end.text == "0 1 2 "


@pytest.mark.parametrize("edge", ["stream", "astream", "call"])
@pytest.mark.parametrize("dialect", ["gemini", "openai", "openai-responses", "cohere"])
def test_a_dialect_without_prefill_restarts(build: Any, edge: str, dialect: str) -> None:
    chain = stalling(build).fallback(build("stall:0", dialect), mid_stream="continue")
    if edge == "call":
        assert chain.prompt(PROMPT).call().text == ANSWER
        return
    events, error = run_edge(edge, chain.prompt(PROMPT))
    assert error is None
    check_invariants(events, None)
    assert texts(events) == [STALLED, STALLED, " and done."]  # the abandoned text stays shown
    (status,) = fallbacks(events)
    assert status.attrs["mode"] == "restart" and status.attrs["not_continued"] == "no prefill"
    assert status.attrs["abandoned_text"] == STALLED
    assert events[-1].response is not None and events[-1].response.text == ANSWER


@pytest.mark.parametrize("edge", ["stream", "astream", "call"])
def test_a_cut_inside_a_tool_call_restarts(build: Any, edge: str) -> None:
    calls: list[str] = []
    chain = build("cut-in-call").fallback(build("echo", "anthropic"), mid_stream="continue")
    prompt = chain.prompt(PROMPT).tools(weather_tool(calls))
    if edge == "call":
        response = prompt.call()
        assert response.text == PROMPT and calls == []
        assert [a.outcome for a in response.attempts] == ["failed", "answered"]
        return
    events, error = run_edge(edge, prompt)
    assert error is None
    check_invariants(events, None)
    assert [e.type for e in events].count(T.TOOL_CALL_START) == 1  # the cut call, seen
    assert calls == []  # never run
    (status,) = fallbacks(events)
    assert status.attrs["mode"] == "restart" and status.attrs["not_continued"] == "not text alone"
    assert texts(events) == ["Let me check.", "one", " two", " three"]
    assert events[-1].response is not None and events[-1].response.text == PROMPT


def test_a_model_asked_to_continue_that_fails_first_passes_the_text_on(
    provider: RunningServer, build: Any
) -> None:
    refusing = build("status:503", "anthropic")
    chain = stalling(build).fallback(refusing, build("stall:5", "ollama"), mid_stream="continue")
    events, error = run_edge("stream", chain.prompt(PROMPT))
    assert error is None
    assert texts(events) == [STALLED, " and done."]
    modes = [(s.attrs["mode"], s.attrs["attempt"]) for s in fallbacks(events)]
    assert modes == [("continue", 0), ("before_answer", 1)]
    assert events[-1].response.text == ANSWER  # type: ignore[union-attr]
    assert prefill_sent("ollama", last_request(provider, "stall:5")) == STALLED


def test_a_model_after_it_that_takes_no_prefill_restarts_and_says_so(build: Any) -> None:
    refusing = build("status:503", "anthropic")
    chain = stalling(build).fallback(refusing, build("stall:0", "gemini"), mid_stream="continue")
    events, error = run_edge("astream", chain.prompt(PROMPT))
    assert error is None
    check_invariants(events, None)
    statuses = fallbacks(events)
    assert [(s.attrs["mode"], s.attrs["attempt"]) for s in statuses] == [
        ("continue", 0),
        ("restart", 1),  # the second failed before answering: the text is abandoned
    ]
    assert statuses[1].attrs["abandoned_text"] == STALLED
    assert statuses[1].attrs["not_continued"] == "no prefill"
    assert statuses[1].attrs["status"] == 503
    assert texts(events) == [STALLED, STALLED, " and done."]
    assert events[-1].response.text == ANSWER  # type: ignore[union-attr]


# --- the embedded provider continues its scripted answer from a prefill


@pytest.mark.parametrize(
    ("dialect", "answer"),
    [
        ("anthropic", " and done."),
        ("ollama", " and done."),
        ("openai:prefix", " and done."),
        ("openai:continue_final_message", " and done."),
        ("openai", ANSWER),  # not marked: a turn of the history, answered after
        ("gemini", ANSWER),
    ],
)
def test_the_provider_continues_a_trailing_assistant_turn(
    build: Any, dialect: str, answer: str
) -> None:
    # continued, stall:30 goes on at once (its pause was said with the prefill's text)
    model = build("stall:0" if answer == ANSWER else "stall:30", dialect)
    conversation = [UserMessage(text=PROMPT), AssistantMessage(text=STALLED)]
    assert model.prompt(conversation).call().text == answer


def test_the_provider_continues_only_its_own_text() -> None:
    script = Script([Text("Hello"), Pause(1), Text(" wide"), Text(" world"), Finish("stop")])
    assert continued(script, "Hello wi").parts == [Text("de"), Text(" world"), Finish("stop")]
    assert continued(script, "  Hello ").parts == [Text(" wide"), Text(" world"), Finish("stop")]
    assert continued(script, "Goodbye") == script  # not its text: said whole, anew
    assert continued(script, "wide") == script


@pytest.mark.parametrize("edge", ["stream", "astream", "call"])
def test_anthropic_continues_anthropic(provider: RunningServer, build: Any, edge: str) -> None:
    chain = stalling(build, "anthropic").fallback(
        build("stall:5", "anthropic"), mid_stream="continue"
    )
    if edge == "call":
        response = chain.prompt(PROMPT).call()
    else:
        events, error = run_edge(edge, chain.prompt(PROMPT))
        assert error is None
        check_invariants(events, None)
        assert texts(events) == [STALLED, " and done."]
        assert [s.attrs["mode"] for s in fallbacks(events)] == ["continue"]
        response = events[-1].response  # type: ignore[assignment]
    assert response is not None and response.text == ANSWER
    assert [a.outcome for a in response.attempts] == ["failed", "answered"]
    assert prefill_sent("anthropic", last_request(provider, "stall:5")) == STALLED


def test_the_reason_of_a_continued_failure_is_redacted(build: Any) -> None:
    secret = "sk-test-SECRET-continue-123"
    # "Partial", then an error frame that quotes the key, as careless providers do
    leaky = build("echo-key:frame", api_key=secret)
    chain = leaky.fallback(build("stall:0", "ollama"), mid_stream="continue")
    events, error = run_edge("stream", chain.prompt(PROMPT))
    assert error is None
    (status,) = fallbacks(events)
    assert status.attrs["mode"] == "continue" and status.attrs["continued_text"] == "Partial"
    assert "Incorrect API key provided" in (status.text or "")
    for event in events:
        assert secret not in repr(event.attrs) and secret not in (event.text or "")
        assert secret[:12] not in (event.text or "")
    # the continuing model does not know "Partial": it says its whole answer after it
    assert events[-1].response.text == "Partial" + ANSWER  # type: ignore[union-attr]


@pytest.mark.parametrize("edge", ["stream", "call"])
def test_a_continuation_that_calls_a_tool_sends_one_assistant_turn(
    provider: RunningServer, build: Any, edge: str
) -> None:
    # #42: the prefill, then the continuing model's turn with its call, were two assistant
    # turns in a row in the request after the tool ran
    calls: list[str] = []
    chain = stalling(build).fallback(build("weather", "anthropic"), mid_stream="continue")
    prompt = chain.prompt("Weather in Lyon?").tools(weather_tool(calls))
    if edge == "call":
        response = prompt.call()
    else:
        events, error = run_edge(edge, prompt)
        assert error is None
        assert [s.attrs["mode"] for s in fallbacks(events)] == ["continue"]
        response = events[-1].response  # type: ignore[assignment]
    assert calls == ["Lyon"] and response is not None
    assert response.text == "It is 18°C and sunny in Lyon right now."
    first, after_tool = [
        r.body
        for r in provider.requests
        if isinstance(r.body, dict) and r.body["model"] == "weather"
    ]
    assert [m["role"] for m in first["messages"]] == ["user", "assistant"]  # the prefill
    roles = [m["role"] for m in after_tool["messages"]]
    assert roles == ["user", "assistant", "user"]  # the tool's result is a user turn
    turn = after_tool["messages"][1]["content"]
    assert [b["type"] for b in turn if b["type"] != "thinking"] == ["text", "tool_use"]
    assert next(b["text"] for b in turn if b["type"] == "text") == STALLED
