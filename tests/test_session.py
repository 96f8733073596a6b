"""ChatStreamSession: response id, step numbering, cross-step usage, start/end (SPEC §5)."""

from __future__ import annotations

from solon_events import ChatStreamSession, Usage


def test_response_id_is_generated_and_unique() -> None:
    a, b = ChatStreamSession(), ChatStreamSession()
    assert isinstance(a.response_id, str)
    assert a.response_id
    assert a.response_id != b.response_id
    assert ChatStreamSession("resp_given").response_id == "resp_given"


def test_step_numbering() -> None:
    session = ChatStreamSession()
    assert session.step == 0
    assert session.next_step() == 0
    assert session.step == 0
    assert session.next_step() == 1
    assert session.next_step() == 2
    assert session.step == 2


def test_accumulate_usage() -> None:
    session = ChatStreamSession()
    assert session.total_usage is None
    assert session.accumulate_usage(None) is None
    first = Usage(prompt_tokens=10, completion_tokens=5, source={"a": 1})
    assert session.accumulate_usage(first) is first
    assert session.total_usage is first
    assert session.accumulate_usage(None) is first
    second = Usage(prompt_tokens=20, completion_tokens=1, source={"b": 2})
    total = session.accumulate_usage(second)
    assert total is session.total_usage
    assert total == first + second
    assert (total.prompt_tokens, total.completion_tokens, total.total_tokens) == (30, 6, 36)
    assert total.source == {"steps": [{"a": 1}, {"b": 2}]}
    assert session.accumulate_usage(None) is total


def test_mark_response_started_and_ended_are_true_once() -> None:
    session = ChatStreamSession()
    assert not session.started
    assert session.mark_response_started() is True
    assert session.mark_response_started() is False
    assert session.started
    assert not session.ended
    assert session.mark_response_ended() is True
    assert session.mark_response_ended() is False
    assert session.ended


def test_repr_names_the_response() -> None:
    assert "resp_x" in repr(ChatStreamSession("resp_x"))
