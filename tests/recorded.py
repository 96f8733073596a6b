"""Recorded provider bodies for tests that need no server.

Two sources: bodies made offline by the embedded provider's encoders (a ReplayTransport
plays them), and the shared corpus of real provider streams, whose location and skip reason
are defined here and nowhere else.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import orjson
import pytest

from solon_events.devserver import ROUTES
from solon_events.devserver.encoders.base import RequestView, ToolDecl
from solon_events.devserver.scenarios import plan
from solon_events.devserver.turns import (
    Cut,
    Finish,
    KeepAlive,
    Pause,
    Ping,
    RawBytes,
    Script,
    Text,
    TurnUsage,
    WaitGate,
)

__all__ = [
    "CORPUS",
    "CORPUS_ABSENT",
    "CORPUS_DIALECTS",
    "DIALECTS",
    "ENDPOINTS",
    "TEXT_DIALECTS",
    "WIRES",
    "body_of",
    "corpus_cases",
    "corpus_paths",
    "corpus_presence_test",
    "corpus_recording",
    "needs_corpus",
    "text_body",
    "weather_bodies",
]

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"
"""The shared corpus: real provider streams recorded from OpenAI Chat Completions, OpenAI
Responses, Anthropic and Gemini (one JSON payload per line) with ``<name>.expected.json``
beside each, the final result an independent oracle reconstructed. It lives beside the
checkout, in ``../shared/corpus``, and is read in place, never copied into the project."""
CORPUS_DIALECTS = {
    "openai-chat": "openai",
    "openai-responses": "openai-responses",
    "anthropic": "anthropic",
    "gemini": "gemini",
}
"""The corpus's folders and the dialect that reads each."""
CORPUS_ABSENT = (
    "needs the shared corpus of recorded provider streams (OpenAI, OpenAI Responses, "
    "Anthropic, Gemini), which lives beside the checkout in ../shared/corpus and is not "
    f"part of the repository; absent here ({CORPUS}); CI runs these tests with it"
)
"""The skip reason of every test that reads the corpus."""
needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason=CORPUS_ABSENT)
"""Marks a test that reads the corpus: skipped, saying why, when it is absent."""


def corpus_paths(folder: str) -> list[Any]:
    """One ``pytest.param(path)`` per recording in the corpus's ``folder`` (its stem the id);
    when the corpus is absent, one skipped parameter whose reason says where it comes from."""
    if not CORPUS.is_dir():
        return [pytest.param(None, id="no-corpus", marks=pytest.mark.skip(reason=CORPUS_ABSENT))]
    return [pytest.param(path, id=path.stem) for path in sorted((CORPUS / folder).glob("*.jsonl"))]


def corpus_presence_test(recordings: list[Any], at_least: int) -> Callable[[], None]:
    """A test that the corpus holds at least ``at_least`` of the ``recordings`` a dialect's
    tests read (skipped, saying why, when it is absent)."""

    @needs_corpus
    def test() -> None:
        assert len(recordings) >= at_least

    return test


def corpus_recording(path: Path) -> tuple[list[Any], dict[str, Any]]:
    """The frames of the corpus recording at ``path`` (one JSON value a line) and what it
    is expected to read as (its ``.expected.json``)."""
    frames = [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
    return frames, orjson.loads(path.with_name(path.stem + ".expected.json").read_bytes())


def corpus_cases() -> list[Any]:
    """One ``pytest.param(path, dialect)`` per recording of every corpus folder (id
    ``folder/stem``); one skipped pair when the corpus is absent (see :func:`corpus_paths`)."""
    if not CORPUS.is_dir():
        skip = pytest.mark.skip(reason=CORPUS_ABSENT)
        return [pytest.param(None, None, id="no-corpus", marks=skip)]
    return [
        pytest.param(path, dialect, id=f"{folder}/{path.stem}")
        for folder, dialect in CORPUS_DIALECTS.items()
        for path in sorted((CORPUS / folder).glob("*.jsonl"))
    ]


WIRES = {dialect: wire for _path, wire, dialect in ROUTES}
DIALECTS = tuple(WIRES)
TEXT_DIALECTS = tuple(dialect for dialect in DIALECTS if dialect != "bedrock")
"""The embedded provider's dialects whose wire is text (all but Bedrock's binary AWS event
stream)."""
ENDPOINTS = {
    "openai": "/v1/chat/completions",
    "anthropic": "/v1/messages",
    "openai-responses": "/v1/responses",
    "gemini": "/v1beta",
    "ollama": "/api/chat",
    "bedrock": "",
    "cohere": "/v2/chat",
    "google-interactions": "/v1beta/interactions",
}
"""Each dialect's endpoint on the embedded provider (Gemini's base URL takes the model)."""
WEATHER_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}


def body_of(dialect: str, script: Script, model: str = "recorded") -> bytes:
    """The bytes ``dialect``'s provider sends for ``script``, as the embedded provider acts it
    out (pauses and gates take no time; a cut ends the body)."""
    wire = WIRES[dialect](model, script.usage)
    out: list[bytes] = []
    for part in script.parts:
        if isinstance(part, Cut):
            break
        if isinstance(part, RawBytes):
            out.append(wire.raw_bytes(part.data))
        elif isinstance(part, KeepAlive):
            out.append(wire.keep_alive_bytes())
        elif not isinstance(part, (Pause, WaitGate)):
            frames = wire.ping() if isinstance(part, Ping) else wire.encode(part)
            out += [wire.frame_bytes(frame) for frame in frames]
    return b"".join(out)


def text_body(dialect: str, *deltas: str) -> bytes:
    """A complete answer made of ``deltas``."""
    parts: list[Any] = [Text(delta) for delta in deltas]
    return body_of(dialect, Script([*parts, Finish("stop")], TurnUsage(prompt=5, completion=3)))


def weather_bodies(dialect: str, result: str) -> tuple[bytes, bytes]:
    """The weather scenario's two steps: a call of ``get_weather``, then the answer quoting
    ``result``."""
    tool = ToolDecl("get_weather", WEATHER_SCHEMA)
    first = plan(RequestView(model="weather", tools=(tool,)))
    second = plan(RequestView(model="weather", tools=(tool,), tool_results=(result,)))
    assert isinstance(first, Script) and isinstance(second, Script)
    return body_of(dialect, first), body_of(dialect, second)
