"""smooth(): text re-chunked and paced, checked on reactivex's virtual-time TestScheduler
(nothing here reads a wall clock), and its chunking rules (the CJK one against the regex
package's grapheme clusters)."""

from __future__ import annotations

import itertools
import re
from datetime import timedelta
from typing import Any

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reactivex import operators as ops
from reactivex.testing import ReactiveTest, TestScheduler

from solon_events import ChatEvent, ChatEventType, ChatModel, smooth, text_deltas
from solon_events.core.chunking import chunker
from solon_events.devserver import DevServer
from solon_events.operators import smooth as smooth_in_operators

T = ChatEventType
TEXT = (T.TEXT_DELTA, T.THINKING_DELTA)
PASSIVE = (T.HEARTBEAT, T.USAGE, T.RAW)
INTERVAL = 10.0  # virtual seconds (TestScheduler ticks)
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

assert smooth_in_operators is smooth


def run(
    timed: list[tuple[float, ChatEvent]],
    *,
    end: float | None = None,
    error: Exception | None = None,
    dispose_at: float = 100_000.0,
    **options: Any,
) -> list[tuple[float, str, Any]]:
    """``timed`` events (virtual times from 201 on) through ``smooth(INTERVAL, ...)`` on a
    TestScheduler, the source ending at ``end`` (by default long after the last event):
    what came out, as (time, "next" / "completed" / "error", value)."""
    scheduler = TestScheduler()
    messages = [ReactiveTest.on_next(at, event) for at, event in timed]
    end = end or max([at for at, _ in timed], default=201.0) + 500
    if error is not None:
        messages.append(ReactiveTest.on_error(end, error))
    else:
        messages.append(ReactiveTest.on_completed(end))
    source = scheduler.create_hot_observable(messages)
    options.setdefault("scheduler", scheduler)
    observer = scheduler.start(
        lambda: source.pipe(smooth(INTERVAL, **options)), disposed=dispose_at
    )
    out = []
    for message in observer.messages:
        kind = message.value.kind
        value = {"N": message.value.value if kind == "N" else None}.get(kind)
        if kind == "E":
            value = message.value.exception
        out.append((message.time, {"N": "next", "C": "completed", "E": "error"}[kind], value))
    return out


def delta(text: str, kind: ChatEventType = T.TEXT_DELTA, **fields: Any) -> ChatEvent:
    return ChatEvent(kind, text=text, **fields)


def texts(out: list[tuple[float, str, Any]]) -> list[tuple[float, str]]:
    return [(at, e.text) for at, kind, e in out if kind == "next" and e.type in TEXT]


def test_words_are_released_one_per_interval_and_the_end_flushes() -> None:
    out = run(
        [
            (201, ChatEvent(T.TEXT_START)),
            (201, delta("Hello big wide world, how")),
            (205, delta(" are you")),
            (260, delta(" to")),
            (300, ChatEvent(T.TEXT_END)),
            (300, ChatEvent(T.RESPONSE_END)),
        ]
    )
    assert texts(out) == [
        (201, "Hello "),
        (211, "big "),
        (221, "wide "),
        (231, "world, "),
        (241, "how "),
        (251, "are "),
        (261, "you "),  # " to" completed "you "; " to" itself waits for what follows
        (300, "to"),  # TEXT_END releases the rest at once
    ]
    assert [(at, e.type) for at, kind, e in out if kind == "next" and e.type not in TEXT] == [
        (201, T.TEXT_START),
        (300, T.TEXT_END),
        (300, T.RESPONSE_END),  # received at 300, sent at 300
    ]
    assert out[-1] == (800, "completed", None)


def test_a_non_text_event_flushes_every_waiting_chunk_first() -> None:
    call = ChatEvent(T.TOOL_CALL_START, index=0)
    out = run([(201, delta("one two three four five ")), (203, call)])
    assert texts(out) == [(201, "one "), (203, "two "), (203, "three "), (203, "four "),
                          (203, "five ")]  # fmt: skip
    assert out[5][:2] == (203, "next") and out[5][2] is call
    later = run([(201, delta("one two ")), (203, call), (205, delta("six seven "))])
    assert texts(later) == [(201, "one "), (203, "two "), (213, "six "), (223, "seven ")]


def test_passive_events_wait_for_the_text_before_them_without_flushing() -> None:
    usage = ChatEvent(T.USAGE)
    out = run([(201, delta("Hel")), (202, usage), (203, delta("lo wor")), (204, usage),
               (205, delta("ld again "))])  # fmt: skip
    assert [(at, e.type, e.text) for at, kind, e in out if kind == "next"] == [
        (203, T.TEXT_DELTA, "Hello "),
        (203, T.USAGE, None),  # right after the chunk holding the "Hel" before it
        (213, T.TEXT_DELTA, "world "),
        (213, T.USAGE, None),
        (223, T.TEXT_DELTA, "again "),
    ]
    alone = run([(201, usage)])
    assert [(at, e.type) for at, kind, e in alone if kind == "next"] == [(201, T.USAGE)]


def test_thinking_and_text_blocks_are_chunked_apart() -> None:
    thinking = dict(kind=T.THINKING_DELTA, item_id="r1")
    out = run([(201, delta("Let me th", **thinking)), (202, delta("ink. Sure", **thinking)),
               (203, delta("The answer ")), (250, ChatEvent(T.RESPONSE_END))])  # fmt: skip
    assert [(at, e.type, e.text) for at, kind, e in out if kind == "next"] == [
        (201, T.THINKING_DELTA, "Let "),
        (211, T.THINKING_DELTA, "me "),
        (221, T.THINKING_DELTA, "think. "),
        (231, T.THINKING_DELTA, "Sure"),  # the thinking's rest, cut when text began
        (241, T.TEXT_DELTA, "The "),
        (250, T.TEXT_DELTA, "answer "),
        (250, T.RESPONSE_END, None),
    ]
    assert all(e.item_id == "r1" for _at, _k, e in out[:4])


def test_lines_and_patterns_and_functions() -> None:
    lines = run([(201, delta("a b\nc d\ne"))], chunking="line", end=220)
    assert texts(lines) == [(201, "a b\n"), (211, "c d\n"), (220, "e")]  # completion flushes
    sentences = run([(201, delta("One. Two! Three"))], chunking=re.compile(r"[.!?]\s+"), end=215)
    assert texts(sentences) == [(201, "One. "), (211, "Two! "), (215, "Three")]
    pairs = run(
        [(201, delta("abcde"))], chunking=lambda text: text[:2] if len(text) > 2 else None, end=205
    )
    assert texts(pairs) == [(201, "ab"), (205, "cd"), (205, "e")]


@pytest.mark.parametrize(
    ("chunking", "message"),
    [
        (re.compile(r"x*"), "matched empty text"),
        (lambda text: "not a prefix", "not a non-empty start"),
    ],
)
def test_a_chunking_that_cuts_nothing_fails_the_stream(chunking: Any, message: str) -> None:
    out = run([(201, delta("abc"))], chunking=chunking)
    assert out[-1][1] == "error" and message in str(out[-1][2])


def test_bad_arguments_are_refused_at_once() -> None:
    with pytest.raises(ValueError, match="'word' or 'line'"):
        smooth(chunking="words")
    with pytest.raises(TypeError, match="chunking"):
        smooth(chunking=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="interval"):
        smooth(-1)


def test_an_error_flushes_then_fails() -> None:
    boom = RuntimeError("cut")
    out = run([(201, delta("one two three"))], end=205, error=boom)
    assert texts(out) == [(201, "one "), (205, "two "), (205, "three")]
    assert out[-1] == (205, "error", boom)


def test_disposal_stops_at_once() -> None:
    out = run([(201, delta("a b c d e f g "))], end=1000, dispose_at=225)
    assert texts(out) == [(201, "a "), (211, "b "), (221, "c ")]
    assert all(at <= 225 for at, _kind, _value in out)


def test_no_interval_releases_everything_at_once() -> None:
    scheduler = TestScheduler()
    source = scheduler.create_hot_observable(
        [ReactiveTest.on_next(201, delta("a b c ")), ReactiveTest.on_completed(202)]
    )
    observer = scheduler.start(lambda: source.pipe(smooth(0, scheduler=scheduler)))
    assert [(m.time, m.value.value.text) for m in observer.messages[:-1]] == [
        (201, "a "),
        (201, "b "),
        (201, "c "),
    ]
    assert smooth(timedelta(milliseconds=5)) is not None


# --- the properties, over any stream and any timing


_ALPHABET = st.sampled_from(
    [*"ab ,.\n\t", "你", "好", "か", "\u3099", "ア", "\ufe0f", "한", "👍", "\U0001f3fd", "é"]
)
EXTENDING = "[\\p{M}\U0001f3fb-\U0001f3ff\u200c\u200d\uff9e\uff9f]*"
"""What may follow a chunk's whitespace: characters that extend the one before."""
_KINDS = st.sampled_from(["text", "thinking", "usage", "tool", "heartbeat"])


@st.composite
def streams(draw: st.DrawFn) -> list[tuple[float, ChatEvent]]:
    """A response: blocks of text or thinking deltas, passive and other events between and
    inside them, at non-decreasing virtual times."""
    at = 201.0
    timed: list[tuple[float, ChatEvent]] = [(at, ChatEvent(T.RESPONSE_START))]
    for block in range(draw(st.integers(0, 4))):
        kind = draw(_KINDS)
        at += draw(st.integers(0, 25))
        if kind in ("text", "thinking"):
            start, delta_type, end = (
                (T.TEXT_START, T.TEXT_DELTA, T.TEXT_END)
                if kind == "text"
                else (T.THINKING_START, T.THINKING_DELTA, T.THINKING_END)
            )
            timed.append((at, ChatEvent(start, index=block)))
            for _ in range(draw(st.integers(0, 8))):
                at += draw(st.integers(0, 25))
                if draw(st.integers(0, 5)) == 0:
                    timed.append((at, ChatEvent(draw(st.sampled_from(PASSIVE)))))
                else:
                    text = "".join(draw(st.lists(_ALPHABET, max_size=12)))
                    timed.append((at, ChatEvent(delta_type, text=text, index=block)))
            at += draw(st.integers(0, 25))
            timed.append((at, ChatEvent(end, index=block)))
        elif kind == "usage":
            timed.append((at, ChatEvent(T.USAGE)))
        elif kind == "heartbeat":
            timed.append((at, ChatEvent(T.HEARTBEAT)))
        else:
            timed.append((at, ChatEvent(T.TOOL_CALL_START, index=block)))
    at += draw(st.integers(0, 25))
    timed.append((at, ChatEvent(T.RESPONSE_END)))
    return timed


def _marks(events: list[ChatEvent], passive: bool) -> list[Any]:
    """The text, a character at a time, with the non-text events in place (the passive ones
    too, or not)."""
    marks: list[Any] = []
    for event in events:
        if event.type in TEXT:
            marks += [(event.type, char) for char in event.text or ""]
        elif passive or event.type not in PASSIVE:
            marks.append(event)
    return marks


@SETTINGS
@given(streams(), st.sampled_from(["word", "line"]))
def test_the_text_and_the_order_never_change(
    timed: list[tuple[float, ChatEvent]], chunking: str
) -> None:
    out = run(timed, chunking=chunking)
    assert out[-1][1] == "completed"
    sent = [e for _at, kind, e in out if kind == "next"]
    received = [e for _at, e in timed]
    # the text joined, and the non-text events in order, are as they came
    assert "".join(e.text or "" for e in sent if e.type in TEXT) == "".join(
        e.text or "" for e in received if e.type in TEXT
    )
    assert [e for e in sent if e.type not in TEXT] == [e for e in received if e.type not in TEXT]
    # every flushing event sits exactly where it came among the text's characters
    assert _marks(sent, passive=False) == _marks(received, passive=False)
    # a passive event (or a delta with no text) comes after all the text before it
    for n, event in enumerate(received):
        if event.type in PASSIVE or (event.type in TEXT and not event.text):
            before = sum(len(e.text or "") for e in received[:n] if e.type in TEXT)
            m = next(i for i, e in enumerate(sent) if e is event)
            assert sum(len(e.text or "") for e in sent[:m] if e.type in TEXT) >= before
    empty = [e for e in sent if e.type in TEXT and not e.text]  # no empty chunk of ours
    assert empty == [e for e in received if e.type in TEXT and not e.text]


@SETTINGS
@given(streams())
def test_at_most_one_chunk_per_interval_and_no_event_delayed(
    timed: list[tuple[float, ChatEvent]],
) -> None:
    out = run(timed)
    received_at = {id(e): at for at, e in timed}
    flushes = {at for at, kind, e in out if kind != "next" or e.type not in (*TEXT, *PASSIVE)}
    chunk_times = [at for at, kind, e in out if kind == "next" and e.type in TEXT and e.text]
    paced = [at for at in chunk_times if at not in flushes]
    assert len(paced) == len(set(paced))  # one chunk at a time between flushes
    for earlier, later in itertools.pairwise(paced):
        assert later - earlier >= INTERVAL
    for at, kind, event in out:
        if kind == "next" and event.type not in (*TEXT, *PASSIVE):
            assert at == received_at[id(event)]  # RESPONSE_END and the rest: never delayed


@SETTINGS
@given(st.lists(_ALPHABET, max_size=30).map("".join))
def test_word_chunks_end_at_word_or_cluster_boundaries(text: str) -> None:
    first = chunker("word")
    chunks = []
    rest = text
    while (end := first(rest)) > 0:
        chunks.append(rest[:end])
        rest = rest[end:]
    assert "".join(chunks) + rest == text
    clusters = regex.findall(r"\X", text)
    boundaries = {0}
    for cluster in clusters:
        boundaries.add(max(boundaries) + len(cluster))
    position = 0
    for chunk in chunks:
        position += len(chunk)
        assert position in boundaries, (text, chunks)  # never inside a grapheme cluster
        if re.match("[你好かア]", chunk.strip()):  # a no-space script: one cluster a chunk
            assert regex.fullmatch(rf"\s*\X\s*{EXTENDING}", chunk), (chunk, chunks)
        else:  # one word, with the whitespace after it unless a no-space script follows
            word = regex.fullmatch(rf"\s*\S+?(\s+{EXTENDING})?", chunk)
            assert word is not None, (chunk, chunks)
            assert word.group(1) or text[position] in "你好かア", (chunk, chunks)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("今天天气很好。", ["今", "天", "天", "气", "很", "好"]),
        ("がぎぐ", ["が", "ぎ"]),  # kana with combining voicing marks
        ("ｶﾞｷﾞｸ", ["ｶﾞ", "ｷﾞ"]),  # halfwidth kana and their voicing marks
        ("葛\U000e0100城", ["葛\U000e0100"]),  # an ideographic variation sequence
        ("Use 東京 today ", ["Use ", "東", "京 ", "today "]),
        ("iPhone很好", ["iPhone", "很"]),
        ("안녕하세요 세계 ", ["안녕하세요 ", "세계 "]),  # Korean is written with spaces
    ],
)
def test_cjk_text_is_cut_by_grapheme_cluster(text: str, expected: list[str]) -> None:
    first = chunker("word")
    chunks = []
    while (end := first(text)) > 0:
        chunks.append(text[:end])
        text = text[end:]
    assert chunks == expected


def test_over_the_embedded_provider_the_answer_is_unchanged() -> None:
    with (
        DevServer.run_in_thread() as server,
        ChatModel(server.url + "/v1/chat/completions", "echo") as model,
    ):
        story = "Once upon a time, a fox met a crow. 从前有一只狐狸。 The end.\n"
        events = model.prompt(story).stream().pipe(smooth(0.001), ops.to_list()).run()
        plain = model.prompt(story).stream().pipe(text_deltas(), ops.to_list()).run()
    chunks = [e.text for e in events if e.type is T.TEXT_DELTA]
    assert "".join(chunks) == "".join(plain) == events[-1].response.text
    assert len(chunks) > len(plain)
    assert events[-1].type is T.RESPONSE_END
    assert "狐 " not in chunks and "狐" in chunks
