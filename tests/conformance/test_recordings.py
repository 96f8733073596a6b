"""Every public recording in ``tests/recordings`` (Cohere v2 chat, Google's Interactions API),
replayed end to end against its independent expectation.

The expectation of each is the provider SDK's own reading of the same stream
(:mod:`sdk_oracles`); the replay must keep the stream invariants and its final response
must agree with it field by field, read in the dialect named, sniffed (``dialect="auto"``),
and from the SSE body as well as from the recorded JSON lines.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from sdk_oracles import expected_of, recording_cases, sse_body
from stream_invariants import check_invariants, collect

from solon_events import ChatEvent, ChatEventType, ChatResponse
from solon_events.dialects import dialect_names
from solon_events.dialects.sniff import claims_frame

T = ChatEventType


def _citations(dialect: str, response: ChatResponse) -> list[dict[str, Any]]:
    """The response's citations in the oracle's terms."""
    if dialect == "cohere":
        return [
            {
                "cited_text": c.cited_text,
                "start_index": c.start_index,
                "end_index": c.end_index,
                "type": c.type,
                "title": c.title,
                "source_id": c.raw.get("id") if c.raw else None,
            }
            for c in response.citations
        ]
    return [
        {
            "url": c.url,
            "title": c.title,
            "start_index": c.start_index,
            "end_index": c.end_index,
            "type": c.type,
        }
        for c in response.citations
    ]


def _blocks(response: ChatResponse) -> list[dict[str, Any]]:
    """The response's media blocks in the API's content terms."""
    blocks = []
    for block in response.message.blocks if response.message else ():
        kind = "image" if type(block).__name__ == "ImageBlock" else block.mime_type.split("/")[0]
        item = {"type": kind, "mime_type": block.mime_type}
        item.update({"data": block.data} if block.data else {"uri": block.url})
        blocks.append(item)
    return blocks


def check_response(dialect: str, events: list[ChatEvent], expected: dict[str, Any]) -> None:
    """The final response of ``events`` is what ``expected`` says, field by field."""
    end = events[-1]
    response = end.response
    assert end.type is T.RESPONSE_END and response is not None
    assert response.text == expected["text"]
    assert response.thinking == expected["thinking"]
    calls = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in response.tool_calls]
    assert calls == expected["tool_calls"]
    assert _citations(dialect, response) == expected["citations"]
    assert _blocks(response) == expected["blocks"]
    usage = response.usage
    assert usage is not None
    assert {key: getattr(usage, key) for key in expected["usage"]} == expected["usage"]
    assert response.finish_reason == expected["finish_reason"]
    assert response.provider_response_id == expected["provider_response_id"]
    if "model" in expected:
        assert response.model == expected["model"]
    if expected.get("thinking_signature"):
        assert response.message.metadata["thinking_signature"] == expected["thinking_signature"]
    deltas = "".join(e.text or "" for e in events if e.type is T.TEXT_DELTA)
    assert deltas == response.text  # each piece of text sent once


@pytest.mark.parametrize(("path", "dialect"), recording_cases())
def test_recording_reconstructs_its_expectation(path: Path, dialect: str) -> None:
    events, error = collect(path, dialect)
    check_invariants(events, error)
    assert error is None, f"unexpected failure: {error!r}"
    check_response(dialect, events, expected_of(path, dialect))


@pytest.mark.parametrize(("path", "dialect"), recording_cases())
def test_recording_is_sniffed_and_read_alike_as_sse(path: Path, dialect: str) -> None:
    named, _ = collect(path, dialect)
    for source in (path, sse_body(path)):
        events, error = collect(source)  # dialect="auto"
        assert error is None
        assert [e.type for e in events] == [e.type for e in named]
        assert events[-1].response == named[-1].response


@pytest.mark.parametrize(("path", "dialect"), recording_cases())
def test_every_frame_is_claimed_by_its_dialect_alone(path: Path, dialect: str) -> None:
    for line in path.read_bytes().splitlines():
        frame = orjson.loads(line)
        assert [name for name in dialect_names() if claims_frame(name, frame)] == [dialect]


def test_every_recording_has_a_case() -> None:
    folders = {Path(p.values[0]).parent.name for p in recording_cases()}
    assert folders == {"cohere", "google-interactions"}
    assert len(recording_cases()) == 15
