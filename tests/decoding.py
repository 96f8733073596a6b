"""Decoding a whole body through a frame decoder, for the decoder tests."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from solon_events.wire.sse import JSONLinesDecoder, SSEDecoder, StreamDecoder


def decode_all(
    decoder: SSEDecoder[Any] | JSONLinesDecoder[Any] | StreamDecoder[Any], chunks: Iterable[bytes]
) -> list[Any]:
    """Feed every chunk, then close; all frames in order (Frames, or strs under
    ``data_only``)."""
    frames: list[Any] = []
    for chunk in chunks:
        frames.extend(decoder.feed(chunk))
    frames.extend(decoder.close())
    return frames
