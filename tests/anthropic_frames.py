"""A short Anthropic Messages stream, as the recordings the CLI and devserver tests replay."""

from __future__ import annotations

from typing import Any

__all__ = ["anthropic_text_stream"]


def anthropic_text_stream(
    message_id: str,
    pieces: list[str],
    *,
    input_tokens: int,
    output_tokens: int,
    ping: bool = False,
) -> list[dict[str, Any]]:
    """The frames of one message answering ``pieces`` of text, after the public streaming
    reference: message_start, a ping (when ``ping``), one text block, message_delta and
    message_stop."""
    start = {
        "type": "message_start",
        "message": {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": 1},
        },
    }
    block = [
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
    ]
    for piece in pieces:
        block.append(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": piece},
            }
        )
    block.append({"type": "content_block_stop", "index": 0})
    end = [
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": output_tokens},
        },
        {"type": "message_stop"},
    ]
    return [start, *([{"type": "ping"}] if ping else []), *block, *end]
