"""Response streams in a real Redis: events teed in and read back equal, live and resumed,
and every way a stream cannot be read whole is an error, never a hang or a silent gap."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import reactivex
from outcomes import observed
from reactivex import operators as ops
from redis_server import RedisServer, redis_server, redis_url  # noqa: F401  (fixtures)

from solon_events import ChatEvent, ChatEventFilter, ChatModel, ProviderError, replay
from solon_events.adapters import event_to_json
from solon_events.cli import get_weather
from solon_events.devserver import DevServer
from solon_events.serve.redis_log import (
    RedisStreamLog,
    StreamLogError,
    read_from_redis,
    tee_to_redis,
)

RECORDINGS = Path(__file__).resolve().parents[1] / "examples" / "recordings"


@pytest.fixture
def log(redis_url: str) -> Any:  # noqa: F811
    with RedisStreamLog(redis_url, prefix=f"test-{uuid.uuid4().hex[:8]}") as log:
        yield log


@contextlib.contextmanager
def embedded(scenario: str) -> Iterator[ChatModel]:
    """A model on its own embedded provider, playing ``scenario``."""
    with (
        DevServer.run_in_thread() as provider,
        ChatModel(provider.url + "/v1/chat/completions", scenario) as model,
    ):
        yield model


def collect(source: reactivex.Observable[ChatEvent]) -> tuple[list[ChatEvent], Any]:
    """Every event of ``source`` and how it ended (``None``, or the error)."""
    outcome = observed(source, 30)
    return outcome.events, outcome.error


def same(a: list[ChatEvent], b: list[ChatEvent]) -> None:
    assert [event_to_json(e, with_raw=True) for e in a] == [
        event_to_json(e, with_raw=True) for e in b
    ]
    assert [e.response for e in a] == [e.response for e in b]


def test_a_live_tool_loop_round_trips(log: RedisStreamLog) -> None:
    with embedded("weather") as model:
        stream = model.prompt("Weather in Paris?").tools(get_weather)
        stream = stream.event_filter(ChatEventFilter.all()).stream()
        original, ending = collect(stream.pipe(tee_to_redis(log)))
    assert ending is None and original[-1].type.name == "RESPONSE_END"
    back, back_ending = collect(read_from_redis(log, original[0].response_id))
    same(back, original)
    assert back_ending is None


def test_a_failed_stream_fails_again_with_the_same_error(log: RedisStreamLog) -> None:
    with embedded("error-frame") as model:
        original, ending = collect(model.prompt("Hi").stream().pipe(tee_to_redis(log, "r1")))
    assert isinstance(ending, ProviderError)
    back, back_ending = collect(read_from_redis(log, "r1"))
    same(back, original)
    assert type(back_ending) is ProviderError and str(back_ending) == str(ending)
    assert back_ending.provider_error == ending.provider_error


def test_a_replayed_recording_round_trips_with_raw_frames(log: RedisStreamLog) -> None:
    for path in sorted(RECORDINGS.glob("*.jsonl")):
        original, _ = collect(replay(path, event_filter=ChatEventFilter.all()))
        key = f"rec-{path.stem}"
        reactivex.from_iterable(original).pipe(tee_to_redis(log, key)).run()
        log.flush()
        back, ending = collect(read_from_redis(log, key))
        same(back, original)
        assert ending is None


def test_a_reader_follows_a_live_stream_and_resumes_after_any_entry(log: RedisStreamLog) -> None:
    with embedded("slow:30:0.02") as model:
        live: list[ChatEvent] = []
        first = threading.Event()
        source = (
            model.prompt("Hi")
            .stream()
            .pipe(tee_to_redis(log, "live"), ops.do_action(lambda e: first.set()))
        )
        writer = threading.Thread(target=lambda: live.extend(collect(source)[0]))
        writer.start()
        assert first.wait(10)
        assert log.io.run(_appears(log, log.key("events", "live")))
        followed, ending = collect(read_from_redis(log, "live"))  # joins while it streams
        writer.join(30)
    assert ending is None
    same(followed, live)
    entries = log.io.run(_entries(log, log.key("events", "live")))
    middle = entries[len(entries) // 2]
    rest, _ = collect(read_from_redis(log, "live", after=middle))
    same(rest, live[len(entries) // 2 + 1 :])


async def _appears(log: RedisStreamLog, key: str) -> bool:
    for _ in range(500):
        if await log.exists(key):
            return True
        await asyncio.sleep(0.01)
    return False


async def _entries(log: RedisStreamLog, key: str) -> list[str]:
    return [entry.id async for entry in log.read(key) if entry.outcome is None]


def test_an_unknown_stream_or_entry_is_an_error(log: RedisStreamLog) -> None:
    _, ending = collect(read_from_redis(log, "nobody"))
    assert isinstance(ending, StreamLogError) and "no stream" in str(ending)
    reactivex.from_iterable(replay_events()).pipe(tee_to_redis(log, "r2")).run()
    log.flush()
    _, ending = collect(read_from_redis(log, "r2", after="1-1"))
    assert isinstance(ending, StreamLogError) and "no entry '1-1'" in str(ending)
    _, ending = collect(read_from_redis(log, "r2", after="not-an-id"))
    assert isinstance(ending, StreamLogError) and "no entry 'not-an-id'" in str(ending)


def test_a_trimmed_stream_is_a_gap_error_not_a_silent_skip(log: RedisStreamLog) -> None:
    reactivex.from_iterable(replay_events()).pipe(tee_to_redis(log, "r3")).run()
    log.flush()
    key = log.key("events", "r3")
    ids = log.io.run(_entries(log, key))
    log.io.run(_delete(log, key, ids[1]))
    events, ending = collect(read_from_redis(log, "r3"))
    assert len(events) == 1
    assert isinstance(ending, StreamLogError) and "no longer holds entries 1 to 1" in str(ending)


async def _delete(log: RedisStreamLog, key: str, entry_id: str) -> None:
    await log.client().xdel(key, entry_id)


async def test_a_stream_whose_writer_went_away_is_an_error(redis_url: str) -> None:  # noqa: F811
    log = RedisStreamLog(redis_url, prefix=f"test-{uuid.uuid4().hex[:8]}", lease=0.5)
    try:
        key = log.key("events", "gone")
        await log.keep_alive(key)
        await log.append(key, b"x", 0)  # and then nothing: its writer crashed
        entries = []
        with pytest.raises(StreamLogError, match="stopped without an end"):
            async with asyncio.timeout(10):
                async for entry in log.read(key):
                    entries.append(entry)
        assert [e.data for e in entries] == [b"x"]
    finally:
        await log.aclose()


def replay_events() -> list[ChatEvent]:
    path = RECORDINGS / "text-openai.jsonl"
    return collect(replay(path))[0]


def test_a_short_stream_teed_to_an_unreachable_redis_fails_and_so_does_flush(
    redis_server: RedisServer,  # noqa: F811
) -> None:
    """Redis stopped: a stream whose last event passed before any write failed completed
    as if stored, and flush() returned. Now the stream fails with the StreamLogError (a
    write that fails after the last event fails the stream's end) and so does flush()."""
    redis_server.stop()
    with RedisStreamLog(redis_server.url, prefix="test-down") as log:
        events, ending = collect(reactivex.from_iterable(replay_events()).pipe(tee_to_redis(log)))
        assert isinstance(ending, StreamLogError) and "Redis at" in str(ending), ending
        assert [e.type.name for e in events] == [e.type.name for e in replay_events()]
        with pytest.raises(StreamLogError, match="Redis at"):
            log.flush()
        log.flush()  # each failure is raised once


def test_flush_raises_nothing_when_every_write_succeeded(log: RedisStreamLog) -> None:
    for key in ("ok-1", "ok-2"):
        events, ending = collect(
            reactivex.from_iterable(replay_events()).pipe(tee_to_redis(log, key))
        )
        assert ending is None
    log.flush()
    back, ending = collect(read_from_redis(log, "ok-2"))
    assert ending is None and len(back) == len(events)


async def test_an_entry_written_twice_is_read_once(redis_url: str) -> None:  # noqa: F811
    """A write tried again after Redis came back may have been done already: the reader
    skips the second copy (same sequence number), and a real gap is still an error."""
    log = RedisStreamLog(redis_url, prefix=f"test-{uuid.uuid4().hex[:8]}")
    try:
        key = log.key("events", "twice")
        await log.keep_alive(key)
        for data, seq in ((b"a", 0), (b"b", 1), (b"b", 1), (b"c", 2)):
            await log.append(key, data, seq)
        await log.finish(key, 3, "completed")
        read = [entry async for entry in log.read(key)]
        assert [(e.data, e.outcome) for e in read] == [
            (b"a", None),
            (b"b", None),
            (b"c", None),
            (b"", "completed"),
        ]
        gap = log.key("events", "gap")
        await log.keep_alive(gap)
        await log.append(gap, b"a", 0)
        await log.append(gap, b"c", 2)
        with pytest.raises(StreamLogError, match="no longer holds entries 1 to 1"):
            async for _entry in log.read(gap):
                pass
    finally:
        await log.aclose()
