"""Which dialect a stream's frames are in, told from the first frames' shapes.

The first frame that exactly one registered dialect claims
(:meth:`~solon_events.ChatDialect.claims`; the built-in dialects' shapes are in
:mod:`~solon_events.dialects.frame_shapes`) names the stream's dialect. A frame of no such
shape (an error object, ``[DONE]``, a comment) tells nothing, and the next one is looked
at; a dialect added outside this package overrides ``claims``.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import islice
from typing import Any

import orjson

from ..wire.sse import Frame
from .base import ChatDialect, dialect_names, get_dialect
from .frame_shapes import claims_frame

__all__ = ["SNIFF_FRAMES", "claims_frame", "decoded", "dialect_hint", "sniff_dialect"]

SNIFF_FRAMES = 16
"""How many of a stream's first frames :func:`sniff_dialect` looks at."""


def decoded(frame: Any) -> Any:
    """A frame as :func:`sniff_dialect` looks at it: JSON decoded when it is text, a Frame
    or bytes; None when it is not JSON."""
    if isinstance(frame, Frame):
        frame = frame.data
    if isinstance(frame, (str, bytes, bytearray, memoryview)):
        try:
            return orjson.loads(frame)
        except orjson.JSONDecodeError:
            return None
    return frame


def _claimants(frame: Any) -> list[str]:
    return [name for name in dialect_names() if get_dialect(name).claims(frame)]


def sniff_dialect(frames: Iterable[Any], *, limit: int = SNIFF_FRAMES) -> str | None:
    """The name of the dialect ``frames`` are in, or None when none of the first ``limit``
    frames tells.

    ``frames`` are decoded payloads, JSON text or bytes, or :class:`~solon_events.wire.sse.Frame`
    values (what :func:`~solon_events.wire.sse.iter_frames` gives for a body). The first frame
    exactly one dialect claims decides; a frame no dialect or several claim is skipped.
    """
    for frame in islice(frames, limit):
        names = _claimants(decoded(frame))
        if len(names) == 1:
            return names[0]
    return None


def dialect_hint(dialect: ChatDialect, first_frame: Any) -> str:
    """``': looks like anthropic frames: pass dialect="anthropic"'`` when ``first_frame``
    plainly belongs to another dialect than ``dialect`` (which does not claim it), else
    ``""``: what the parse stage adds to the failure of a stream read in the wrong dialect."""
    frame = decoded(first_frame)
    if dialect.claims(frame):
        return ""
    names = _claimants(frame)
    if len(names) != 1 or names[0] == dialect.name:
        return ""
    return f': looks like {names[0]} frames: pass dialect="{names[0]}"'
