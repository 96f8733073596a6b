"""Run the whole event pipeline over a recorded stream, with no network."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Union

from reactivex import Observable, abc
from reactivex.disposable import CompositeDisposable, Disposable
from reactivex.scheduler import CurrentThreadScheduler

from .core import stages
from .core.parsing import ParseStage
from .core.session import new_response_id
from .dialects.base import ChatDialect, get_dialect
from .events import ChatEvent
from .filters import ChatEventFilter
from .sse import iter_frames

__all__ = ["ReplaySource", "replay"]

ReplaySource = Union[str, bytes, os.PathLike, Iterable[Any]]  # noqa: UP007
"""A path, the bytes or text of a recording (SSE or JSON lines), or an iterable of frames."""


def _looks_like_path(source: str) -> bool:
    return "\n" not in source and len(source) < 4096 and os.path.isfile(source)


def _frames(source: ReplaySource) -> Iterator[Any]:
    """The frames of ``source``; a file is read here, its frames decoded as they are taken."""
    if isinstance(source, os.PathLike) or (isinstance(source, str) and _looks_like_path(source)):
        return iter_frames(Path(source).read_bytes())
    if isinstance(source, (str, bytes, bytearray, memoryview)):
        return iter_frames(bytes(source) if not isinstance(source, str) else source)
    return iter(source)


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

    ChatEventFilter.guarded(event_filter or ChatEventFilter.DEFAULT)  # validate now

    def subscribe(
        observer: abc.ObserverBase[ChatEvent], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        # What parse() and respond() do, with direct calls instead of Rx subscriptions.
        response_id = new_response_id()
        head = stages.respond(
            observer, response_id=response_id, event_filter=event_filter, fold_steps=False
        )
        parser = ParseStage(chosen, head, response_id=response_id)
        parser.start()
        disposed = False

        def run(_scheduler: abc.SchedulerBase, _state: Any = None) -> None:
            try:
                frames = _frames(source)
            except Exception as exc:  # a file that cannot be read, an iterable that cannot
                parser.on_error(exc)
                return
            on_next = parser.on_next
            while not disposed:
                try:
                    frame = next(frames)
                except StopIteration:
                    parser.on_completed()
                    return
                except Exception as exc:  # reading the source: a missing file, an SSE error
                    parser.on_error(exc)
                    return
                on_next(frame)

        def dispose() -> None:
            nonlocal disposed
            disposed = True

        schedule = (scheduler or CurrentThreadScheduler.singleton()).schedule
        return CompositeDisposable(schedule(run), Disposable(dispose))

    return Observable(subscribe)
