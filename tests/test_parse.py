"""parse() and replay(): frames to one step's events, and bad input to a clear ChatError."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import orjson
import pytest
import reactivex
from hypothesis import given, settings
from hypothesis import strategies as st
from reactivex import Observer
from reactivex import operators as ops
from reactivex.scheduler import CurrentThreadScheduler
from sinks import Recorder

from solon_events import (
    ChatError,
    ChatEvent,
    ChatEventFilter,
    ChatEventType,
    ChatProtocolError,
    ChatStreamContext,
    ProviderError,
    parse,
    replay,
)
from solon_events.dialects.base import ChatDialect
from solon_events.wire.sse import Frame, iter_frames

T = ChatEventType


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "gpt-test",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


USAGE = {
    "id": "chatcmpl-1",
    "object": "chat.completion.chunk",
    "choices": [],
    "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
}
GOOD = [chunk({"content": "Hel"}), chunk({"content": "lo"}), chunk({}, "stop"), USAGE]


def sse(payloads: list[Any]) -> bytes:
    return b"".join(b"data: " + orjson.dumps(p) + b"\n\n" for p in payloads) + b"data: [DONE]\n\n"


def run_parse(
    frames: list[Any], dialect: str | ChatDialect = "openai"
) -> tuple[list[ChatEvent], list[BaseException]]:
    events: list[ChatEvent] = []
    errors: list[BaseException] = []
    reactivex.from_iterable(frames).pipe(parse(dialect)).subscribe(events.append, errors.append)
    return events, errors


def run_replay(source: Any, dialect: str = "openai") -> tuple[list[ChatEvent], list[BaseException]]:
    events: list[ChatEvent] = []
    errors: list[BaseException] = []
    replay(source, dialect=dialect, event_filter=ChatEventFilter.all()).subscribe(
        events.append, errors.append
    )
    return events, errors


def test_parse_brackets_one_step_and_carries_the_snapshot() -> None:
    events, errors = run_parse(GOOD)
    assert not errors
    assert events[0].type is T.STEP_START and events[-1].type is T.STEP_END
    end = events[-1]
    assert end.response is not None and end.response.text == "Hello"
    assert end.response.finish_reason == "stop" and end.response.model == "gpt-test"
    assert end.usage is not None and end.usage.total_tokens == 5
    assert end.response.provider_response_id == "chatcmpl-1"


def test_parse_accepts_frames_text_bytes_and_dicts() -> None:
    frames: list[Any] = [
        Frame(data=orjson.dumps(GOOD[0]).decode()),
        orjson.dumps(GOOD[1]),
        orjson.dumps(GOOD[2]).decode(),
        GOOD[3],
        "[DONE]",
    ]
    events, errors = run_parse(frames)
    assert not errors
    assert events[-1].response is not None and events[-1].response.text == "Hello"


def test_malformed_frame_names_its_number_and_keeps_what_came_before() -> None:
    frames = [orjson.dumps(GOOD[0]).decode(), '{"choices": [', orjson.dumps(GOOD[1]).decode()]
    events, errors = run_parse(frames)
    assert len(errors) == 1 and isinstance(errors[0], ChatProtocolError)
    assert "frame 2" in str(errors[0])
    assert [e.text for e in events if e.type is T.TEXT_DELTA] == ["Hel"]


def test_bad_utf8_in_a_payload_is_replaced_as_in_text() -> None:
    body = sse([chunk({"content": "caf\u00e9"}), *GOOD[1:]]).replace(b"\xc3\xa9", b"\xe9")
    for source in (body, [Frame(f.data) for f in iter_frames(body)]):
        events, errors = run_replay(source)
        assert not errors
        assert events[-1].response is not None and events[-1].response.text == "caf\ufffdlo"


def test_a_malformed_bytes_frame_is_described_as_its_text_is() -> None:
    bad = '{"choices": ["caf\u00e9"'
    described = [str(run_parse([text])[1][0]) for text in (bad, bad.encode())]
    assert described[0] == described[1]
    assert "frame 1 is not valid JSON" in described[0] and "caf\u00e9" in described[0]


def test_truncated_stream_fails_after_the_partial_events() -> None:
    events, errors = run_replay(sse(GOOD[:2])[: -len(b"data: [DONE]\n\n")])
    assert isinstance(errors[0], ChatProtocolError)
    assert "truncated" in str(errors[0])
    deltas = [e.text for e in events if e.type is T.TEXT_DELTA]
    assert deltas == ["Hel", "lo"]
    assert events[-1].type is T.ERROR
    assert events[-1].response is not None and events[-1].response.text == "Hello"
    assert errors[0].partial_response.text == "Hello"  # the caller of call() sees it too
    assert not any(e.type is T.RESPONSE_END for e in events)


@pytest.mark.parametrize(
    "body",
    [b"", b"\n\n", b"<!DOCTYPE html><html><body>Not here</body></html>", b"HTTP/1.1 502 Bad"],
)
def test_no_recognisable_frame_is_a_protocol_error(body: bytes) -> None:
    events, errors = run_replay(body)
    assert len(errors) == 1 and isinstance(errors[0], ChatProtocolError)
    assert [e.type for e in events] == [T.RESPONSE_START, T.STEP_START, T.STEP_END, T.ERROR]


def test_provider_error_frame_reaches_on_error_with_its_fields() -> None:
    error = {"error": {"message": "overloaded", "type": "server_error", "code": 503}}
    events, errors = run_replay(sse([GOOD[0], error]))
    assert isinstance(errors[0], ProviderError)
    assert errors[0].provider_error["code"] == 503
    last = events[-1]
    assert last.type is T.ERROR and last.error is errors[0]
    assert last.raw["message"] == "overloaded"
    assert last.response is not None and last.response.text == "Hel"


def test_a_dialect_bug_becomes_a_protocol_error_naming_the_frame() -> None:
    class Broken(ChatDialect):
        name = "broken"

        def parse_frame(self, ctx: ChatStreamContext, frame: Any) -> None:
            raise KeyError("choices")

    _events, errors = run_parse([{"a": 1}], Broken())
    assert isinstance(errors[0], ChatProtocolError)
    assert "frame 1" in str(errors[0]) and "KeyError" in str(errors[0])


def test_a_subscriber_exception_is_not_blamed_on_the_dialect() -> None:
    def explode(event: ChatEvent) -> None:
        if event.type is T.TEXT_DELTA:
            raise ZeroDivisionError("subscriber bug")

    with pytest.raises(ZeroDivisionError):
        reactivex.from_iterable(GOOD).pipe(parse("openai")).subscribe(explode)


def test_next_response_splits_a_recorded_loop_into_steps() -> None:
    class TwoResponses(ChatDialect):
        name = "two"

        def parse_frame(self, ctx: ChatStreamContext, frame: Any) -> None:
            if frame.get("new") and ctx.state.get("done"):
                ctx.next_response()
            if "text" in frame:
                ctx.send(T.TEXT_DELTA, text=frame["text"])
            if frame.get("done"):
                ctx.state["done"] = True
                ctx.finish("stop")

    frames = [{"text": "a"}, {"done": True}, {"new": True, "text": "b"}, {"done": True}]
    events, errors = run_parse(frames, TwoResponses())
    assert not errors
    steps = [(e.type, e.step) for e in events if e.type.group.name == "STEP"]
    assert steps == [(T.STEP_START, 0), (T.STEP_END, 0), (T.STEP_START, 1), (T.STEP_END, 1)]
    ends = [e.response.text for e in events if e.type is T.STEP_END and e.response]
    assert ends == ["a", "b"]


def test_replay_reads_paths_bytes_text_and_iterables(tmp_path: Path) -> None:
    body = sse(GOOD)
    path = tmp_path / "rec.sse"
    path.write_bytes(body)
    jsonl = tmp_path / "rec.jsonl"
    jsonl.write_bytes(b"\n".join(orjson.dumps(p) for p in GOOD) + b"\n")
    sources: list[Any] = [path, str(path), jsonl, body, body.decode(), GOOD]
    for source in sources:
        events, errors = run_replay(source)
        assert not errors, source
        assert events[-1].type is T.RESPONSE_END
        assert events[-1].response is not None and events[-1].response.text == "Hello"


def test_replay_is_cold_and_each_subscription_is_fresh() -> None:
    stream = replay(sse(GOOD))
    first: list[ChatEvent] = []
    second: list[ChatEvent] = []
    stream.subscribe(first.append)
    stream.subscribe(second.append)
    assert [e.type for e in first] == [e.type for e in second]
    assert first[0].response_id != second[0].response_id
    assert all(e.response_id == first[0].response_id for e in first)


def test_replay_of_a_source_that_fails_midway_keeps_what_came_before() -> None:
    def frames() -> Any:
        yield from GOOD[:2]
        raise OSError("disk gone")

    events, errors = run_replay(frames())
    assert [type(e) for e in errors] == [OSError]
    assert events[-1].type is T.ERROR and events[-1].error is errors[0]
    assert events[-1].response is not None and events[-1].response.text == "Hello"
    assert errors[0].partial_response.text == "Hello"  # type: ignore[attr-defined]


def test_replay_of_a_file_gone_by_subscription_fails_through_on_error(tmp_path: Path) -> None:
    path = tmp_path / "gone.sse"
    path.write_bytes(sse(GOOD))
    stream = replay(path, event_filter=ChatEventFilter.all())  # a missing file fails here
    path.unlink()
    events: list[ChatEvent] = []
    errors: list[BaseException] = []
    stream.subscribe(events.append, errors.append)
    assert [type(e) for e in errors] == [FileNotFoundError]
    assert [e.type for e in events] == [T.RESPONSE_START, T.STEP_START, T.STEP_END, T.ERROR]


def test_replay_lets_a_subscriber_exception_propagate() -> None:
    errors: list[Exception] = []

    def explode(event: ChatEvent) -> None:
        if event.type is T.TEXT_DELTA:
            raise ZeroDivisionError("subscriber bug")

    with pytest.raises(ZeroDivisionError):
        replay(sse(GOOD)).subscribe(explode, errors.append)
    assert errors == []


def test_replay_with_a_filter_that_raises_fails_and_run_raises_instead_of_hanging() -> None:
    def needs_text(event: ChatEvent) -> bool:
        return event.text.startswith("H")  # type: ignore[union-attr]

    events, errors = [], []
    replay(sse(GOOD), event_filter=needs_text).subscribe(events.append, errors.append)
    assert [type(e) for e in errors] == [AttributeError]
    assert [e.type for e in events] == [T.RESPONSE_START, T.STEP_START]  # TEXT_START has no text
    outcome: list[BaseException] = []

    def run() -> None:  # .run() subscribes on a new thread and waits for the outcome
        try:
            replay(sse(GOOD), event_filter=needs_text).run()
        except AttributeError as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout=30)
    assert not thread.is_alive() and len(outcome) == 1


def test_replay_rejects_a_non_source() -> None:
    with pytest.raises(TypeError):
        replay(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown dialect"):
        replay(b"", dialect="nope")


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=300))
def test_arbitrary_bytes_only_ever_fail_with_chat_error(body: bytes) -> None:
    for dialect in ("openai", "anthropic", "openai-responses", "gemini", "ollama"):
        events, errors = run_replay(body, dialect)
        assert len(errors) <= 1
        if errors:
            assert isinstance(errors[0], ChatError)
            assert events[-1].type is T.ERROR
        else:
            assert events[-1].type is T.RESPONSE_END


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.dictionaries(
            st.sampled_from(
                ["type", "choices", "delta", "message", "candidates", "done", "error", "index"]
            ),
            st.one_of(
                st.none(),
                st.integers(-1000, 1000),
                st.text(max_size=5),
                st.lists(st.integers(-9, 9), max_size=2),
                st.dictionaries(st.text(max_size=3), st.integers(-9, 9), max_size=2),
            ),
            max_size=4,
        ),
        max_size=5,
    )
)
def test_odd_but_valid_json_only_ever_fails_with_chat_error(payloads: list[dict[str, Any]]) -> None:
    body = b"".join(orjson.dumps(p) + b"\n" for p in payloads)
    for dialect in ("openai", "anthropic", "openai-responses", "gemini", "ollama"):
        _events, errors = run_replay(body, dialect)
        assert all(isinstance(e, ChatError) for e in errors)


def test_decoded_payloads_reach_the_dialect_as_plain_json() -> None:
    from types import MappingProxyType

    from solon_events.core.parsing import decode_payload

    nested = {"a": MappingProxyType({"b": (1, MappingProxyType({"c": 2}))})}
    payload = decode_payload(MappingProxyType(nested), 1)
    assert payload == {"a": {"b": [1, {"c": 2}]}}
    assert type(payload["a"]) is dict and type(payload["a"]["b"][1]) is dict
    choice = MappingProxyType({"index": 0, "delta": MappingProxyType({"content": "Hi"})})
    events, errors = run_replay([{**chunk({}), "choices": (choice,)}, chunk({}, "stop")])
    assert not errors
    assert events[-1].response is not None and events[-1].response.text == "Hi"


def _summary(events: list[ChatEvent]) -> list[tuple[Any, ...]]:
    return [(e.type, e.step, e.text, e.response.text if e.response else None) for e in events]


def test_replay_delivers_the_same_subscribed_directly_or_through_operators() -> None:
    stream = replay(sse(GOOD))
    direct: list[ChatEvent] = []
    piped: list[ChatEvent] = []
    scheduled: list[ChatEvent] = []
    stream.subscribe(direct.append)
    stream.pipe(ops.map(lambda e: e)).subscribe(piped.append)
    stream.subscribe(scheduled.append, scheduler=CurrentThreadScheduler())
    assert _summary(direct) == _summary(piped) == _summary(scheduled)
    assert direct[-1].type is T.RESPONSE_END and direct[-1].response.text == "Hello"  # type: ignore[union-attr]


def test_replay_inside_a_running_trampoline_delivers_everything() -> None:
    seen: list[ChatEvent] = []

    def action(_scheduler: Any, _state: Any = None) -> None:
        replay(sse(GOOD)).subscribe(seen.append)

    CurrentThreadScheduler.singleton().schedule(action)
    assert seen[-1].type is T.RESPONSE_END and seen[-1].response.text == "Hello"  # type: ignore[union-attr]


def test_replay_through_take_stops_reading_the_source() -> None:
    pulled: list[Any] = []

    def frames() -> Any:
        for payload in [chunk({"content": str(n)}) for n in range(50)] + GOOD:
            pulled.append(payload)
            yield payload

    seen: list[ChatEvent] = []
    replay(frames()).pipe(ops.take(4)).subscribe(seen.append)
    assert len(seen) == 4
    assert len(pulled) < 10


def test_a_failure_stops_reading_the_source() -> None:
    pulled: list[Any] = []

    def frames(bad: Any) -> Any:
        for payload in [chunk({"content": "a"}), bad] + [chunk({"content": "b"})] * 50 + GOOD:
            pulled.append(payload)
            yield payload

    def no_refusal(event: ChatEvent) -> bool:
        if event.type is T.REFUSAL_DELTA:
            raise ValueError("a bug in the filter")
        return True

    class Observer:
        def __init__(self) -> None:
            self.errors: list[Exception] = []

        def on_next(self, _event: ChatEvent) -> None:
            pass

        def on_error(self, error: Exception) -> None:
            self.errors.append(error)

        def on_completed(self) -> None:
            pass

    cases = [
        ("{not json", None, ChatProtocolError),
        (chunk({"refusal": "no"}), no_refusal, ValueError),
    ]
    for bad, event_filter, kind in cases:
        for through_callbacks in (True, False):
            pulled.clear()
            errors: list[Exception] = []
            stream = replay(frames(bad), event_filter=event_filter)
            if through_callbacks:
                stream.subscribe(lambda _e: None, errors.append)
            else:
                observer = Observer()
                stream.subscribe(observer)
                errors = observer.errors
            assert [type(e) for e in errors] == [kind]
            assert len(pulled) == 2


def test_each_thread_tells_its_own_running_trampoline() -> None:
    results: list[tuple[int, str]] = []

    def in_a_thread() -> None:
        inside: list[ChatEvent] = []

        def action(_scheduler: Any, _state: Any = None) -> None:
            replay(sse(GOOD)).pipe(ops.take(3)).subscribe(inside.append)
            # inside this thread's running trampoline, the frames wait for this action (the
            # response and its step start at subscription)
            results.append((len(inside), "queued"))

        CurrentThreadScheduler.singleton().schedule(action)
        results.append((len(inside), "ran"))

    replay(sse(GOOD)).subscribe(lambda _e: None)  # this thread's trampoline, looked up
    for _ in range(2):
        thread = threading.Thread(target=in_a_thread)
        thread.start()
        thread.join(timeout=30)
    assert results == [(2, "queued"), (3, "ran")] * 2


def test_replay_takes_an_observer_object_and_its_failure_reaches_on_error() -> None:
    seen: list[ChatEvent] = []
    errors: list[Exception] = []
    done: list[bool] = []
    replay(sse(GOOD)).subscribe(Observer(seen.append, errors.append, lambda: done.append(True)))
    assert done == [True] and not errors and seen[-1].type is T.RESPONSE_END
    replay(sse(GOOD[:2])[: -len(b"data: [DONE]\n\n")]).subscribe(
        Observer(seen.append, errors.append, lambda: done.append(True))
    )
    assert done == [True] and [type(e) for e in errors] == [ChatProtocolError]


def test_replay_without_on_error_raises_the_failure() -> None:
    truncated = sse(GOOD[:2])[: -len(b"data: [DONE]\n\n")]
    with pytest.raises(ChatProtocolError):
        replay(truncated).subscribe(lambda e: None)


def test_replay_subscriber_can_subscribe_to_other_observables() -> None:
    inner: list[int] = []

    def on_next(event: ChatEvent) -> None:
        if event.type is T.TEXT_DELTA:
            reactivex.of(1, 2).subscribe(inner.append)

    disposable = replay(sse(GOOD)).subscribe(on_next)
    assert inner == [1, 2, 1, 2]
    disposable.dispose()  # after the end: harmless


# the parse stage owns the stream: what a dialect records, and what it raises


class _Lines(ChatDialect):
    """{"text": ...} frames, {"done": true} to finish, {"error": ...} to fail."""

    name = "lines"

    def parse_frame(self, ctx: ChatStreamContext, frame: Any) -> None:
        if "text" in frame:
            ctx.send(T.TEXT_DELTA, text=frame["text"], raw=frame)
        for error in frame.get("errors", ()):
            ctx.fail(error)
        if frame.get("done"):
            ctx.finish("stop")


def _stage(dialect: ChatDialect, frames: list[Any]) -> Recorder:
    from solon_events.core.parsing import ParseStage

    recorder = Recorder()
    stage = ParseStage(dialect, recorder, response_id="r")
    stage.start()
    for frame in frames:
        stage.on_next(frame)
    stage.on_completed()
    return recorder


@pytest.mark.parametrize("where", ["parse_frame", "parse_done", "end_of_stream"])
def test_an_exception_in_any_dialect_method_is_a_protocol_error_naming_the_frame(
    where: str,
) -> None:
    class Broken(_Lines):
        def parse_frame(self, ctx: ChatStreamContext, frame: Any) -> None:
            super().parse_frame(ctx, frame)
            if where == "parse_frame" and frame.get("boom"):
                raise KeyError("choices")

        def parse_done(self, ctx: ChatStreamContext) -> None:
            if where == "parse_done":
                raise KeyError("choices")
            super().parse_done(ctx)

        def end_of_stream(self, ctx: ChatStreamContext) -> None:
            if where == "end_of_stream":
                raise KeyError("choices")

    frames = [{"text": "a"}, {"text": "b", "boom": True}, "[DONE]"]
    out = _stage(Broken(), frames)
    (error,) = out.errors
    assert isinstance(error, ChatProtocolError) and "KeyError" in str(error)
    named = {"parse_frame": "frame 2", "parse_done": "frame 3", "end_of_stream": "after 3 frames"}
    assert named[where] in str(error)
    assert isinstance(error.__cause__, KeyError)
    # the failed step still ends, with what came before the failing frame, then on_error
    assert out.events[-1].type is T.STEP_END and not out.completed
    expected = "a" if where == "parse_frame" else "ab"
    assert out.events[-1].response is not None and out.events[-1].response.text == expected


def test_an_abort_sent_at_the_end_of_the_stream_ends_the_step_once() -> None:
    class StoppedAtTheEnd(_Lines):
        def end_of_stream(self, ctx: ChatStreamContext) -> None:
            ctx.send(T.ABORT, text="the provider stopped")

    out = _stage(StoppedAtTheEnd(), [{"text": "a"}])
    assert [e.type for e in out.events] == [T.STEP_START, T.TEXT_DELTA, T.STEP_END, T.ABORT]
    assert out.log[-1] == "completed" and out.log.count("completed") == 1 and not out.errors


def test_a_frame_that_raises_contributes_nothing() -> None:
    class HalfWay(_Lines):
        def parse_frame(self, ctx: ChatStreamContext, frame: Any) -> None:
            super().parse_frame(ctx, frame)
            raise ValueError("after the text")

    out = _stage(HalfWay(), [{"text": "lost"}])
    assert [e.type for e in out.events] == [T.STEP_START, T.STEP_END]
    assert out.events[-1].response is not None and out.events[-1].response.text == ""


def test_a_protocol_error_a_dialect_raises_keeps_its_provider_fields_and_names_the_frame() -> None:
    class Strict(_Lines):
        def parse_frame(self, ctx: ChatStreamContext, frame: Any) -> None:
            raise ChatProtocolError("no good", provider_error={"code": 7})

    (error,) = _stage(Strict(), [{"text": "x"}]).errors
    assert str(error) == "frame 1: no good" and error.provider_error == {"code": 7}  # type: ignore[attr-defined]


def test_the_first_provider_failure_wins_and_ends_the_stream_after_its_frame() -> None:
    failing = {"text": "b", "errors": [{"message": "first"}, "second"], "done": True}
    out = _stage(_Lines(), [{"text": "a"}, failing, {"text": "c"}])
    (error,) = out.errors
    assert isinstance(error, ProviderError) and str(error) == "provider error: first"
    texts = [e.text for e in out.events if e.type is T.TEXT_DELTA]
    assert texts == ["a", "b"]  # the failing frame's own events are kept, later frames are not
    assert out.events[-1].type is T.STEP_END and out.events[-1].response.text == "ab"  # type: ignore[union-attr]


def test_a_failed_parse_ends_its_step_with_the_partial_response_before_on_error() -> None:
    events, errors = run_parse(GOOD[:2])  # no finish: truncated
    assert isinstance(errors[0], ChatProtocolError)
    assert [e.type for e in events] == [
        T.STEP_START,
        T.TEXT_DELTA,
        T.TEXT_DELTA,
        T.STEP_END,
    ]
    assert events[-1].response is not None and events[-1].response.text == "Hello"


@pytest.mark.parametrize("dialect", ["openai", "openai-responses", "anthropic", "gemini", "ollama"])
def test_a_body_of_only_done_is_a_protocol_error_in_every_dialect(dialect: str) -> None:
    events, errors = run_replay(b"data: [DONE]\n\n", dialect)
    assert len(errors) == 1 and isinstance(errors[0], ChatProtocolError)
    assert "without a frame but [DONE]" in str(errors[0])
    assert [e.type for e in events] == [T.RESPONSE_START, T.STEP_START, T.STEP_END, T.ERROR]


def test_an_event_among_the_frames_is_an_event_of_the_step() -> None:
    status = ChatEvent(T.STATUS, sub_type="retry", text="retrying", attrs={"attempt": 1})
    frames: list[Any] = [status, *GOOD, "[DONE]"]
    events, errors = run_parse(frames)
    assert not errors
    assert [e.type for e in events[:2]] == [T.STEP_START, T.STATUS]
    assert events[1].sub_type == "retry" and events[1].attr("attempt") == 1
    assert events[-1].response is not None and events[-1].response.text == "Hello"
    # an event alone is no frame: the stream still has none
    _events, errors = run_parse([status])
    assert isinstance(errors[0], ChatProtocolError) and "without a single frame" in str(errors[0])


def test_an_event_among_the_frames_takes_the_steps_ids() -> None:
    from solon_events.core.parsing import ParseStage

    recorder = Recorder()
    stage = ParseStage(_Lines(), recorder, step=2, response_id="resp")
    stage.on_next(ChatEvent(T.STATUS, step=0, response_id="other", text="retrying"))
    (status,) = recorder.events
    assert (status.step, status.response_id, status.text) == (2, "resp", "retrying")
