"""Recordings: the raw frames of a live response with their arrival times, as JSON lines.

A recording is a JSON-lines file. Its first line is a header naming the format and what was
recorded; each later line has ``"t"``, the seconds since the first request was sent::

    {"solon_events_recording": 1, "dialect": "openai", "model": "weather", "url": "...", ...}
    {"t": 0.0, "step": 0}
    {"t": 0.0031, "json": {"id": "chatcmpl-1", "choices": [...]}}
    {"t": 0.0034, "data": "[DONE]"}
    {"t": 0.0035, "tool_result": {"tool_call_id": "call_1", "name": "get_weather", "text": "18°C"}}
    {"t": 0.0036, "step": 1}
    ...

:func:`record` writes no secret the model knows: a frame or tool result that quotes one
(an error frame echoing the key) is written with it masked as ``***``.

A ``step`` line marks a provider request being sent (a tool loop makes one per step); the
lines after it are that request's frames, as the provider sent them: a payload that is a
JSON object or array under ``"json"`` (readable, and equal to what was received once
decoded), any other payload as its text under ``"data"``, an SSE ``event:`` name as
``"event"``. A ``tool_result`` line is what a tool returned between two steps. A file
without step lines is one step.

:func:`~solon_events.replay` reads recordings: each step's frames go through the same
pipeline as a live response (``parse`` per step, then ``respond``), tool results are
emitted where the tool loop emitted them, and every event carries the arrival time of the
frame that produced it in ``event.attrs["received_at"]`` (which
:func:`solon_events.display.timeline` draws over).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import orjson

from ._version import __version__
from .event_model.events import EVENT_TYPES, ChatEvent
from .sources import Source, is_recording, read_recorded, recording_dialect
from .wire.recordings import (
    FORMAT_KEY,
    RecordedStep,
    RecordedToolResult,
    frame_line,
    recording_bytes,
)

if TYPE_CHECKING:
    from reactivex import Observable

    from .client.model import ChatPrompt
    from .dialects.base import ChatDialect
    from .event_model.results import ChatResponse
    from .support.redaction import Redactor
    from .wire.sse import Frame

__all__ = [
    "FORMAT_KEY",
    "RECEIVED_AT",
    "RecordedStep",
    "RecordedToolResult",
    "Recording",
    "is_recording",
    "read_recording",
    "record",
    "replay_recording",
    "write_recording",
]

RECEIVED_AT = "received_at"
"""The ``attrs`` key of a replayed event's arrival time, in seconds from the first request."""


@attrs.frozen
class Recording:
    """A recording read back: its header and its steps."""

    header: Mapping[str, Any]
    steps: tuple[RecordedStep, ...]

    @property
    def dialect(self) -> str | None:
        """The dialect the stream was recorded in, from the header."""
        value = self.header.get("dialect")
        return value if isinstance(value, str) else None

    @property
    def frames(self) -> tuple[Frame, ...]:
        """Every frame of every step, in order."""
        return tuple(frame for step in self.steps for frame in step.frames)

    @property
    def times(self) -> tuple[float, ...]:
        """The arrival time of each of :attr:`frames`."""
        return tuple(at for step in self.steps for at in step.times)

    def replay(
        self,
        dialect: str | ChatDialect | None = None,
        event_filter: Callable[[ChatEvent], bool] | None = None,
        partial_arguments: bool = False,
        accept_unknown_streams: bool = False,
    ) -> Observable[ChatEvent]:
        """The recorded response's events, as the live pipeline made them, each with
        ``attrs["received_at"]``: the arrival time of the frame that produced it (a step's
        STEP_START has the time its request was sent; an event made at the end, such as
        RESPONSE_END, the last frame's). ``dialect`` defaults to the header's (else the
        one the frames' shapes tell);
        ``partial_arguments`` and ``accept_unknown_streams`` as in
        :func:`~solon_events.replay`."""
        import reactivex
        from reactivex import operators as ops

        from .core.session import new_response_id
        from .operators import parse, respond

        chosen = dialect if dialect not in (None, "auto") else None
        if chosen is None:
            chosen = recording_dialect(self.header, self.frames)
        if chosen is None:
            raise ValueError(
                "the recording's header names no dialect and its frames do not tell: pass dialect="
            )

        def timed_replay(_scheduler: Any) -> Observable[ChatEvent]:
            response_id = new_response_id()
            clock = [0.0]

            def step_events(step: RecordedStep) -> Observable[ChatEvent]:
                def frames() -> Iterator[Frame]:
                    # parse() turns each frame into events before it takes the next, so
                    # those events are stamped while the clock shows the frame's time.
                    for at, frame in zip(step.times, step.frames):
                        clock[0] = at
                        yield frame

                def start(_scheduler: Any) -> Observable[ChatEvent]:
                    clock[0] = step.sent_at
                    events = reactivex.from_iterable(frames()).pipe(
                        parse(
                            chosen,
                            step=step.number,
                            response_id=response_id,
                            accept_unknown_streams=accept_unknown_streams,
                        )
                    )
                    if step.tool_results:
                        events = events.pipe(_tool_results_before_step_end(step, clock))
                    return events

                return reactivex.defer(start)

            def stamp(event: ChatEvent) -> ChatEvent:
                return event.evolve(attrs={**event.attrs, RECEIVED_AT: clock[0]})

            steps = [step_events(step) for step in self.steps]
            return reactivex.concat(*steps).pipe(
                respond(
                    response_id=response_id,
                    event_filter=event_filter,
                    partial_arguments=partial_arguments,
                ),
                ops.map(stamp),
            )

        return reactivex.defer(timed_replay)


def _tool_results_before_step_end(
    step: RecordedStep, clock: list[float]
) -> Callable[[Observable[ChatEvent]], Observable[ChatEvent]]:
    """Emit the step's TOOL_RESULT events just before its STEP_END, as the tool loop does."""
    import reactivex

    from .support.safe_callbacks import safe_callbacks

    def tool_results(step_end: ChatEvent) -> Iterator[ChatEvent]:
        response = step_end.response
        calls = {call.id: call for call in (response.tool_calls if response else ())}
        for result in step.tool_results:
            clock[0] = result.at
            call = calls.get(result.tool_call_id)
            yield ChatEvent(
                EVENT_TYPES.TOOL_RESULT,
                step=step_end.step,
                response_id=step_end.response_id,
                index=call.index if call is not None else -1,
                tool_call_id=result.tool_call_id,
                tool_call=call,
                text=result.text,
                provider_response_id=step_end.provider_response_id,
            )

    def operator(source: Observable[ChatEvent]) -> Observable[ChatEvent]:
        def subscribe(observer: Any, scheduler: Any = None) -> Any:
            def on_next(event: ChatEvent) -> None:
                if event.type is EVENT_TYPES.STEP_END:
                    for result in tool_results(event):
                        observer.on_next(result)
                observer.on_next(event)

            callbacks = safe_callbacks(
                observer,
                on_next,
                observer.on_error,
                observer.on_completed,
                where="replaying the recording",
            )
            return source.subscribe(*callbacks, scheduler=scheduler)

        return reactivex.create(subscribe)

    return operator


def replay_recording(
    source: str | os.PathLike[str] | bytes | Source,
    dialect: str | ChatDialect | None = None,
    event_filter: Callable[[ChatEvent], bool] | None = None,
    partial_arguments: bool = False,
    accept_unknown_streams: bool = False,
) -> Observable[ChatEvent]:
    """:meth:`Recording.replay` of the recording ``source``, read at each subscription."""
    import reactivex

    return reactivex.defer(
        lambda _: read_recording(source).replay(
            dialect, event_filter, partial_arguments, accept_unknown_streams
        )
    )


def read_recording(source: str | os.PathLike[str] | bytes | Source) -> Recording:
    """Read a recording from a path, its bytes or its text; a line that is wrong raises
    :class:`~solon_events.event_model.errors.ChatProtocolError` naming it."""
    header, steps = source.recorded() if isinstance(source, Source) else read_recorded(source)
    return Recording(header, steps)


def write_recording(
    path: str | os.PathLike[str], lines: Iterable[Mapping[str, Any]], **header: Any
) -> None:
    """Write a recording: a header holding ``header``, then ``lines`` (step, frame and
    tool-result lines as dicts, each with its time ``t``, rounded here to microseconds)."""
    Path(path).write_bytes(recording_bytes(lines, header))


class _Log:
    """The lines of a live response as they happen on the model's I/O thread: requests
    sent (seen as STEP_START), frames received, tool results."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.lines: list[dict[str, Any]] = []
        self.frame_count = 0
        self._lock = threading.Lock()

    def _now(self) -> float:
        return time.monotonic() - self.started

    def frame(self, frame: Frame | str | bytes) -> None:
        with self._lock:
            self.lines.append(frame_line(self._now(), frame))
            self.frame_count += 1

    def event(self, event: ChatEvent) -> None:
        if event.type is EVENT_TYPES.STEP_START:
            line: dict[str, Any] = {"step": event.step}
        elif event.type is EVENT_TYPES.TOOL_RESULT:
            call = event.tool_call
            line = {
                "tool_result": {
                    "tool_call_id": event.tool_call_id,
                    "name": call.name if call is not None else "",
                    "text": event.text or "",
                }
            }
        else:
            return
        with self._lock:
            self.lines.append({"t": self._now(), **line})


def record(
    prompt: ChatPrompt,
    out: str | os.PathLike[str],
    *,
    on_event: Callable[[ChatEvent], Any] | None = None,
    header: Mapping[str, Any] | None = None,
) -> ChatResponse:
    """Run ``prompt`` (its tool loop included), write what it received to the recording
    ``out`` and return the response; blocks like :meth:`ChatPrompt.call`.

    ``on_event`` sees each event the prompt's filter delivers, as it arrives (on the
    model's I/O thread); ``header`` adds fields to the recording's header, or replaces them (the
    command line adds the prompt). When the response fails, what was received is written all the
    same, then its error is raised. Every secret the model knows (its key, auth headers, the
    secrets of its URL) is masked in what is written.
    """
    from .client.prompt import _outcome
    from .event_model.filters import ChatEventFilter
    from .support.redaction import redact_url

    log = _Log()
    done = threading.Event()
    outcome: dict[str, Any] = {}
    model = prompt._model
    delivered = ChatEventFilter.guarded(prompt._event_filter or ChatEventFilter.DEFAULT)

    def on_next(event: ChatEvent) -> None:
        log.event(event)
        if on_event is not None and delivered(event):
            on_event(event)
        if event.type is EVENT_TYPES.RESPONSE_END:
            outcome["response"] = event.response

    def on_error(error: Exception) -> None:
        outcome["error"] = error
        done.set()

    tapped = attrs.evolve(prompt, frame_tap=log.frame, event_filter=ChatEventFilter.all())
    subscription = tapped.stream().subscribe(on_next, on_error, done.set)
    try:
        done.wait()
    finally:
        subscription.dispose()
    fields = {
        "dialect": model.dialect.name,
        "model": model.model,
        "url": redact_url(model.api_url),
        "recorded_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "solon_events": __version__,
        **(header or {}),
    }
    redactor = model._redactor
    lines = [_redacted(redactor, line) for line in log.lines]
    write_recording(out, lines, **_redacted(redactor, fields))
    return _outcome(outcome)


def _redacted(redactor: Redactor, line: dict[str, Any]) -> dict[str, Any]:
    """``line`` with the secrets ``redactor`` knows masked in its text: an error frame that
    quotes the key is recorded with ``***`` (a line that shows none is left as it is)."""
    if not redactor:
        return line
    shown = orjson.dumps(line).decode()
    if redactor.text(shown) == shown:
        return line
    redacted: dict[str, Any] = redactor.value(line)
    return redacted
