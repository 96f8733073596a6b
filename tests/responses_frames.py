"""OpenAI Responses stream frames written from the Responses API streaming reference (event
and item shapes as documented), for the dialect's tests and for tests of what consumers
show (tests/final_texts.py)."""

from __future__ import annotations

from typing import Any

__all__ = [
    "USAGE",
    "added",
    "completed",
    "created",
    "done",
    "ev",
    "message_stream",
    "response",
    "rewritten_stream",
]


def response(status: str = "in_progress", **fields: Any) -> dict[str, Any]:
    return {"id": "resp_1", "object": "response", "model": "gpt-test", "status": status} | fields


def created() -> dict[str, Any]:
    return {"type": "response.created", "sequence_number": 0, "response": response()}


def completed(usage: dict[str, Any] | None = None, output: list[Any] | None = None) -> dict:
    body = response("completed", output=output or [], usage=usage)
    return {"type": "response.completed", "response": body}


def added(index: int, item: dict[str, Any]) -> dict[str, Any]:
    return {"type": "response.output_item.added", "output_index": index, "item": item}


def done(index: int, item: dict[str, Any]) -> dict[str, Any]:
    return {"type": "response.output_item.done", "output_index": index, "item": item}


def ev(kind: str, item_id: str, index: int = 0, **fields: Any) -> dict[str, Any]:
    return {"type": kind, "item_id": item_id, "output_index": index} | fields


def message_stream(item_id: str = "msg_1", index: int = 0, parts: tuple[str, ...] = ()) -> list:
    """A message item whose text streams as ``parts``."""
    text = "".join(parts)
    part = {"type": "output_text", "text": "", "annotations": []}
    frames: list[dict[str, Any]] = [
        added(index, {"id": item_id, "type": "message", "role": "assistant", "content": []}),
        ev("response.content_part.added", item_id, index, content_index=0, part=part),
    ]
    frames += [
        ev("response.output_text.delta", item_id, index, content_index=0, delta=p) for p in parts
    ]
    final_part = {"type": "output_text", "text": text, "annotations": []}
    frames += [
        ev("response.output_text.done", item_id, index, content_index=0, text=text),
        ev("response.content_part.done", item_id, index, content_index=0, part=final_part),
        done(
            index, {"id": item_id, "type": "message", "role": "assistant", "content": [final_part]}
        ),
    ]
    return frames


USAGE = {
    "input_tokens": 120,
    "input_tokens_details": {"cached_tokens": 100},
    "output_tokens": 50,
    "output_tokens_details": {"reasoning_tokens": 30},
    "total_tokens": 170,
}


def rewritten_stream(done_kinds: tuple[str, ...]) -> list[dict[str, Any]]:
    """Deltas that say one thing and final texts (in ``done_kinds``) that say another."""
    frames = [
        f
        for f in message_stream(parts=("It ran ", "successfully."))
        if f["type"]
        in (
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
        )
    ]
    final = "It ran successfully in the container."
    part = {"type": "output_text", "text": final, "annotations": []}
    item = {"id": "msg_1", "type": "message", "role": "assistant", "content": [part]}
    ends = {
        "response.output_text.done": ev(
            "response.output_text.done", "msg_1", content_index=0, text=final
        ),
        "response.content_part.done": ev(
            "response.content_part.done", "msg_1", content_index=0, part=part
        ),
        "response.output_item.done": done(0, item),
    }
    frames += [ends[kind] for kind in done_kinds]
    return [created(), *frames, completed(USAGE, [item])]
