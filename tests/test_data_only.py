"""The response reader decodes each frame's data alone (no Frame built) when nothing but the
parse stage reads the frames, and whole Frames when a recording's tap reads their SSE fields
too; over the embedded provider on 127.0.0.1."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from reactivex import operators as ops

from solon_events import ChatModel
from solon_events.devserver import DevServer, RunningServer
from solon_events.dialects.anthropic import AnthropicDialect
from solon_events.recording import record
from solon_events.wire.sse import Frame


class _Noting(AnthropicDialect):
    """Anthropic, noting what its frame decoder was asked for and what it gave."""

    def __init__(self) -> None:
        self.asked: list[bool] = []
        self.kinds: set[type] = set()

    def frame_decoder(self, max_frame_size: int, *, data_only: bool = False) -> Any:
        self.asked.append(data_only)
        decoder = super().frame_decoder(max_frame_size, data_only=data_only)
        kinds = self.kinds

        class Noting:
            def feed(self, chunk: bytes) -> Any:
                frames = decoder.feed(chunk)
                kinds.update(type(frame) for frame in frames)
                return frames

            def close(self) -> Any:
                frames = decoder.close()
                kinds.update(type(frame) for frame in frames)
                return frames

        return Noting()


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    with DevServer.run_in_thread() as running:
        yield running


def _model(server: RunningServer, dialect: _Noting) -> ChatModel:
    return ChatModel(server.url + "/v1/messages", "hello", dialect=dialect)


def test_stream_decodes_each_frames_data_alone(server: RunningServer) -> None:
    dialect = _Noting()
    with _model(server, dialect) as model:
        done = threading.Event()
        texts: list[str] = []
        model.prompt("hi").stream().subscribe(
            lambda e: texts.append(e.text or ""), lambda _: done.set(), done.set
        )
        assert done.wait(30)
        assert model.prompt("hi").call().text
    assert dialect.asked == [True, True]
    assert dialect.kinds == {str}
    assert "".join(texts)


def test_astream_decodes_each_frames_data_alone(server: RunningServer) -> None:
    dialect = _Noting()

    async def main() -> str:
        with _model(server, dialect) as model:
            return (await model.prompt("hi").acall()).text

    assert asyncio.run(main())
    assert dialect.asked == [True]
    assert dialect.kinds == {str}


def test_a_recording_still_notes_each_frames_event(server: RunningServer, tmp_path: Path) -> None:
    dialect = _Noting()
    out = tmp_path / "hello.jsonl"
    with _model(server, dialect) as model:
        response = record(model.prompt("hi"), out)
    assert response.text
    assert dialect.asked == [False]
    assert dialect.kinds == {Frame}
    frames = [line for line in map(orjson.loads, out.read_bytes().splitlines()[1:]) if "t" in line]
    events = [line.get("event") for line in frames if "json" in line or "data" in line]
    assert events and all(events), events  # every Anthropic frame is a named SSE event
    assert events[0] == "message_start"


class _Older(AnthropicDialect):
    """A dialect written before ``data_only``: ``frame_decoder(max_frame_size)`` alone."""

    def __init__(self) -> None:
        self.asked = 0

    def frame_decoder(self, max_frame_size: int) -> Any:  # type: ignore[override]
        self.asked += 1
        return super().frame_decoder(max_frame_size)


def test_a_dialect_whose_frame_decoder_takes_no_data_only_still_streams(
    server: RunningServer,
) -> None:
    dialect = _Older()
    with ChatModel(server.url + "/v1/messages", "hello", dialect=dialect) as model:
        events = list(model.prompt("hi").stream().pipe(ops.to_list()).run())
        assert model.prompt("hi").call().text
    assert dialect.asked == 2
    assert "".join(e.text or "" for e in events if e.type.name == "TEXT_DELTA")
