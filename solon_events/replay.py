"""Run the whole event pipeline over a recorded stream, with no network."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Union

import reactivex
from reactivex import Observable

from .core.session import new_response_id
from .dialects.base import ChatDialect, get_dialect
from .events import ChatEvent
from .operators import parse, respond
from .sse import iter_frames

__all__ = ["ReplaySource", "replay"]

ReplaySource = Union[str, bytes, os.PathLike, Iterable[Any]]  # noqa: UP007
"""A path, the bytes or text of a recording (SSE or JSON lines), or an iterable of frames."""


def _looks_like_path(source: str) -> bool:
    return "\n" not in source and len(source) < 4096 and os.path.isfile(source)


def _frames(source: ReplaySource) -> Iterator[Any]:
    if isinstance(source, os.PathLike) or (isinstance(source, str) and _looks_like_path(source)):
        yield from iter_frames(Path(source).read_bytes())
    elif isinstance(source, (str, bytes, bytearray, memoryview)):
        yield from iter_frames(bytes(source) if not isinstance(source, str) else source)
    else:
        yield from source


def replay(
    source: ReplaySource,
    dialect: str | ChatDialect = "openai",
    event_filter: Callable[[ChatEvent], bool] | None = None,
) -> Observable[ChatEvent]:
    """The event stream of a recorded response: parse, normalize, aggregate, guard.

    ``source`` is a path, the bytes or text of a recording (SSE text or one JSON payload
    per line, detected automatically), or an iterable of frames (SSE ``Frame`` values,
    JSON strings or decoded payloads). The observable is cold: each subscription reads
    the source again (an iterator source can be read only once).
    """
    chosen = get_dialect(dialect)
    if not isinstance(source, (str, bytes, bytearray, memoryview, os.PathLike, Iterable)):
        raise TypeError(
            f"replay() takes a path, bytes, text or an iterable of frames, "
            f"not {type(source).__name__}"
        )

    def pipeline(_scheduler: object) -> Observable[ChatEvent]:
        response_id = new_response_id()
        return reactivex.from_iterable(_frames(source)).pipe(
            parse(chosen, response_id=response_id),
            respond(response_id=response_id, event_filter=event_filter),
        )

    return reactivex.defer(pipeline)
