"""Real recordings stretched to any length, as a provider sends them on the wire.

One recording per dialect (the shared corpus's, ``../shared/corpus``; for Cohere and Google's
Interactions API a public one of ``tests/recordings``) is cut into three parts: its head
(the frames before the first text delta), its text-delta frames and its tail (the frames
after the last one). :func:`stretched` keeps the head and the tail and repeats the
text-delta frames, in their order, until the stream holds ``frames`` payloads; with no
delta at all it is the empty response whose cost :mod:`benchmarks.bench_stretched` reports
per stream.

Bodies are SSE as each provider sends it: ``event:`` lines for Anthropic, OpenAI Responses,
Cohere and the Interactions API, a final ``data: [DONE]`` for OpenAI Chat Completions.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import orjson

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"
PUBLIC = Path(__file__).resolve().parents[1] / "tests" / "recordings"
"""The public recordings kept in the repository (see its README for their sources)."""


def _openai_delta(p: dict[str, Any]) -> bool:
    choices = p.get("choices") or []
    return (
        len(choices) == 1
        and not choices[0].get("finish_reason")
        and set(choices[0].get("delta") or {}) == {"content"}
        and bool(choices[0]["delta"]["content"])
    )


def _anthropic_delta(p: dict[str, Any]) -> bool:
    return p.get("type") == "content_block_delta" and p["delta"].get("type") == "text_delta"


def _gemini_delta(p: dict[str, Any]) -> bool:
    candidates = p.get("candidates") or []
    if len(candidates) != 1 or candidates[0].get("finishReason"):
        return False
    parts = (candidates[0].get("content") or {}).get("parts") or []
    return bool(parts) and all(set(part) == {"text"} for part in parts)


def _responses_delta(p: dict[str, Any]) -> bool:
    return p.get("type") == "response.output_text.delta"


def _responses_text(p: dict[str, Any]) -> str:
    return str(p["delta"])


def _cohere_delta(p: dict[str, Any]) -> bool:
    return p.get("type") == "content-delta" and "text" in p["delta"]["message"]["content"]


def _interactions_delta(p: dict[str, Any]) -> bool:
    return p.get("event_type") == "step.delta" and p["delta"].get("type") == "text"


@attrs.frozen
class Recording:
    """A corpus recording of one dialect, split into head, text deltas and tail."""

    dialect: str
    """The dialect's name for :func:`solon_events.get_dialect`."""
    path: Path
    head: tuple[bytes, ...]
    deltas: tuple[bytes, ...]
    tail: tuple[bytes, ...]
    event_key: str | None
    """The payload field the provider names each SSE event by (``event: <name>``), if any."""
    text_of: Callable[[dict[str, Any]], str] | None
    """A delta's text when the tail restates the whole text (see ``_Source.text_of``)."""
    done: bool
    """Whether the provider ends the stream with ``data: [DONE]``."""

    @property
    def fixed_frames(self) -> int:
        """The frames of the head and the tail: the empty response's length."""
        return len(self.head) + len(self.tail)


@attrs.frozen
class _Source:
    folder: str
    name: str
    dialect: str
    is_delta: Callable[[dict[str, Any]], bool]
    text_of: Callable[[dict[str, Any]], str] | None = None
    """A delta's text, for a provider whose tail restates the whole text (OpenAI Responses'
    ``*.done`` events and final output); None: the tail restates nothing."""
    event_key: str | None = None
    done: bool = False
    root: Path = CORPUS


SOURCES = (
    _Source("openai-chat", "openai-text.jsonl", "openai", _openai_delta, done=True),
    _Source(
        "openai-responses",
        "azure-text.1.jsonl",
        "openai-responses",
        _responses_delta,
        _responses_text,
        event_key="type",
    ),
    _Source("anthropic", "anthropic-text.jsonl", "anthropic", _anthropic_delta, event_key="type"),
    _Source("gemini", "google-text.jsonl", "gemini", _gemini_delta),
    _Source(
        "cohere", "cohere-text.chunks.txt", "cohere", _cohere_delta, event_key="type", root=PUBLIC
    ),
    _Source(
        "google-interactions",
        "multi-turn-stateful-turn1.chunks.txt",
        "google-interactions",
        _interactions_delta,
        event_key="event_type",
        root=PUBLIC,
    ),
)
"""The recording each dialect is stretched from."""


def available() -> bool:
    """Whether the corpus is there (a sibling checkout of ``shared/``)."""
    return CORPUS.is_dir()


def missing(section: str) -> bool:
    """Whether the corpus is missing; if so, say that ``section`` is skipped."""
    if available():
        return False
    print(f"(../shared/corpus not present: {section} skipped)")
    return True


@functools.cache
def recordings() -> tuple[Recording, ...]:
    """The recording of each dialect of :data:`SOURCES`, split (the corpus's only when it is
    there)."""
    return tuple(_split(s) for s in SOURCES if s.root != CORPUS or available())


def _split(source: _Source) -> Recording:
    path = source.root / source.folder / source.name
    payloads = [line for line in path.read_bytes().splitlines() if line.strip()]
    marks = [source.is_delta(orjson.loads(p)) for p in payloads]
    first = marks.index(True)
    last = len(marks) - 1 - marks[::-1].index(True)
    return Recording(
        dialect=source.dialect,
        path=path,
        head=tuple(payloads[:first]),
        deltas=tuple(p for p, mark in zip(payloads[first : last + 1], marks[first:]) if mark),
        tail=tuple(payloads[last + 1 :]),
        event_key=source.event_key,
        text_of=source.text_of,
        done=source.done,
    )


def payloads(recording: Recording, frames: int) -> list[bytes]:
    """The payloads of ``recording`` stretched (or shrunk) to ``frames`` of them: head, the
    text deltas repeated in order, tail. ``frames`` at most the fixed frames: the empty
    response (head and tail alone)."""
    count = max(0, frames - recording.fixed_frames)
    deltas = recording.deltas
    middle = list(deltas) * (count // len(deltas)) + list(deltas[: count % len(deltas)])
    return [*recording.head, *middle, *_restated_tail(recording, middle)]


def _restated_tail(recording: Recording, middle: list[bytes]) -> tuple[bytes, ...]:
    """The tail, its restatements of the whole text (if any) made the stretched text, so
    the stream stays what a provider would send."""
    text_of = recording.text_of
    if text_of is None:
        return recording.tail
    original = "".join(text_of(orjson.loads(p)) for p in recording.deltas)
    stretched = "".join(text_of(orjson.loads(p)) for p in middle)
    return tuple(
        orjson.dumps(_replace_text(orjson.loads(p), original, stretched)) for p in recording.tail
    )


def _replace_text(value: Any, old: str, new: str) -> Any:
    """``value`` with every ``"text": old`` in it, at any depth, made ``"text": new``."""
    if isinstance(value, dict):
        return {
            key: new if key == "text" and item == old else _replace_text(item, old, new)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_replace_text(item, old, new) for item in value]
    return value


def sse_body(recording: Recording, payloads: list[bytes]) -> bytes:
    """``payloads`` as the SSE body the recording's provider sends."""
    key = recording.event_key
    if key is not None:
        events = [b"event: " + orjson.loads(p)[key].encode() + b"\ndata: " for p in payloads]
        body = b"".join(e + p + b"\n\n" for e, p in zip(events, payloads))
    else:
        body = b"".join(b"data: " + p + b"\n\n" for p in payloads)
    return body + (b"data: [DONE]\n\n" if recording.done else b"")


def stretched(recording: Recording, frames: int) -> bytes:
    """The SSE body of ``recording`` stretched to ``frames`` payloads."""
    return sse_body(recording, payloads(recording, frames))


def empty(recording: Recording) -> bytes:
    """The SSE body of ``recording`` with no text delta: the empty response."""
    return stretched(recording, 0)
