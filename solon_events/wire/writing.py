"""Frames to bytes: the wire framing the provider formats' encoders write (sans-I/O).

The inverse of :mod:`~solon_events.wire.sse`'s decoders: a payload (a JSON object, or a
raw data string such as ``[DONE]``) as one server-sent event (:func:`sse_frame`,
:func:`sse_data`, :func:`sse_event`) or as one line of JSON (:func:`json_line`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

__all__ = ["json_line", "sse_data", "sse_event", "sse_frame"]


def sse_data(payload: Mapping[str, Any] | str) -> bytes:
    """``payload`` as one SSE event of a ``data:`` line (a string payload as it is)."""
    data = payload.encode() if isinstance(payload, str) else orjson.dumps(payload)
    return b"data: " + data + b"\n\n"


def sse_event(payload: Mapping[str, Any], name_field: str = "type") -> bytes:
    """``payload`` as one SSE event named by its ``name_field`` (``event:`` then ``data:``)."""
    name = payload[name_field].encode()
    return b"event: " + name + b"\ndata: " + orjson.dumps(payload) + b"\n\n"


def sse_frame(payload: Mapping[str, Any] | str, name_field: str | None = None) -> bytes:
    """``payload`` as one SSE event: named by its ``name_field`` when it has one
    (:func:`sse_event`), a bare ``data:`` event otherwise (or when ``name_field`` is None)."""
    if isinstance(payload, str):
        return b"data: " + payload.encode() + b"\n\n"
    if name_field is None or name_field not in payload:
        return b"data: " + orjson.dumps(payload) + b"\n\n"
    name = payload[name_field].encode()
    return b"event: " + name + b"\ndata: " + orjson.dumps(payload) + b"\n\n"


_LINE_BREAKS = (
    (b"\xc2\x85", b"\\u0085"),
    (b"\xe2\x80\xa8", b"\\u2028"),
    (b"\xe2\x80\xa9", b"\\u2029"),
)
"""The characters other than control characters that ``str.splitlines`` (and so httpx's
``iter_lines``, which the ollama SDK reads lines with) breaks a line at, as JSON escapes."""


def json_line(payload: Mapping[str, Any] | str) -> bytes:
    """``payload`` as one line of JSON: NEL, LINE SEPARATOR and PARAGRAPH SEPARATOR escaped
    (``orjson`` writes them as they are; control characters it escapes already)."""
    data = orjson.dumps(payload)
    if b"\xc2\x85" in data or b"\xe2\x80" in data:
        for raw, escaped in _LINE_BREAKS:
            data = data.replace(raw, escaped)
    return data + b"\n"
