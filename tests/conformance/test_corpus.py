"""Every recorded provider stream in ../shared/corpus, replayed end to end.

The final RESPONSE_END must agree with the independently reconstructed
``<name>.expected.json`` and the stream must satisfy the stream invariants. The module is
skipped, saying where the corpus comes from, when it is absent (see ``recorded.CORPUS``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from recorded import CORPUS, CORPUS_ABSENT, corpus_cases
from stream_invariants import check_invariants, collect

from solon_events import ChatError, ChatEventType

T = ChatEventType

if not CORPUS.is_dir():
    pytest.skip(CORPUS_ABSENT, allow_module_level=True)


@pytest.mark.parametrize(("path", "dialect"), corpus_cases())
def test_recording_conforms(path: Path, dialect: str) -> None:
    expected = json.loads(path.with_name(path.stem + ".expected.json").read_text())
    events, error = collect(path, dialect)
    check_invariants(events, error)
    if "text" not in expected:  # no oracle: a well-formed stream is all that is asked
        return

    if "error" in expected or expected.get("finish_reason") == "failed":
        assert isinstance(error, ChatError)
        message = (expected.get("error") or {}).get("message")
        if message:
            assert message in str(error)
        return
    assert error is None, f"unexpected failure: {error!r}"
    end = events[-1]
    response = end.response
    assert response is not None

    assert response.text == expected.get("text", "")
    if "thinking_summary" in expected:  # raw reasoning text is thinking too, but not summary
        summary = "".join(
            e.text or ""
            for e in events
            if e.type is T.THINKING_DELTA and e.sub_type == "summary" and e.step == end.step
        )
        assert summary == expected["thinking_summary"]
    else:
        assert response.thinking == expected["thinking"]
    final_step_text = "".join(
        e.text or "" for e in events if e.type is T.TEXT_DELTA and e.step == end.step
    )
    assert final_step_text == response.text

    calls = [(c.id, c.name, c.arguments, c.arguments_str) for c in response.tool_calls]
    assert len(calls) == len(expected["tool_calls"])
    for (call_id, name, arguments, arguments_str), want in zip(calls, expected["tool_calls"]):
        if want.get("id") is not None:
            assert call_id == want["id"]
        assert name == want["name"]
        if isinstance(want["arguments"], str):
            assert arguments_str == want["arguments"]
        else:
            assert dict(arguments) == want["arguments"]

    if "server_tool_calls" in expected:  # the oracle lists server_tool_use blocks, not MCP
        started = [
            (e.tool_call_id, e.tool_call.name if e.tool_call else None)
            for e in events
            if e.type is T.SERVER_TOOL_START and e.sub_type != "mcp"
        ]
        assert started == [(s["id"], s["name"]) for s in expected["server_tool_calls"]]

    want_usage = expected.get("usage")
    if want_usage:  # a recorded tool loop replays as several steps: the last one is compared
        usage = [e for e in events if e.type is T.STEP_END][-1].usage
        assert usage is not None
        if {"prompt_tokens", "completion_tokens", "total_tokens"} <= set(want_usage):
            # the output counts the thinking whatever the server counted (xAI leaves its
            # reasoning out of completion_tokens): reconciled with the total it reports
            completion = want_usage["total_tokens"] - want_usage["prompt_tokens"]
            want_usage = {**want_usage, "completion_tokens": completion}
        got = {k: getattr(usage, k) for k in want_usage}
        assert got == want_usage
    assert response.finish is not None  # the unified reason, beside the provider's word
    if expected.get("finish_reason") is not None:
        assert response.finish_reason == expected["finish_reason"]
