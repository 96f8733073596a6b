"""One step's provider frames -> its events, through a dialect (sans-I/O).

:class:`ParseStage` is the observer behind :func:`~solon_events.operators.parse`: it decodes
each frame's JSON, hands the payload to the dialect, brackets the step with STEP_START and
STEP_END (carrying the step's folded response) and turns every way a stream can go wrong
into one :class:`~solon_events.errors.ChatError` that carries what was received before it.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable, Mapping
from typing import Any

import orjson

from ..dialects.base import ChatDialect, ChatStreamContext, plain_json
from ..errors import ChatError, ChatProtocolError
from ..events import TYPES, ChatEvent, framing_event
from ..results import ChatResponse
from ..sse import Frame
from .accumulator import ChatAccumulator
from .stages import Sink

__all__ = ["DONE", "ParseStage", "decode_payload"]

_T = TYPES
_loads = orjson.loads
_JSONDecodeError = orjson.JSONDecodeError


class _Done:
    """The type of :data:`DONE`."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "DONE"


DONE: Any = _Done()
"""What :func:`decode_payload` returns for the ``[DONE]`` sentinel."""


def _describe(data: str | bytes | bytearray) -> str:
    text = data if isinstance(data, str) else data.decode("utf-8", "replace")
    return repr(text[:80] + ("..." if len(text) > 80 else ""))


def decode_payload(frame: Any, number: int) -> Any:
    """The payload of frame ``number``: decoded JSON, or :data:`DONE` for the sentinel.

    A :class:`~solon_events.sse.Frame`, JSON text (str or bytes), or an already decoded
    payload. Dialects always receive plain JSON values: a decoded payload is copied with
    every mapping made a dict and every tuple a list. Malformed JSON and other frame types
    raise ChatProtocolError naming the frame.
    """
    if type(frame) is Frame:
        frame = frame.data
    if isinstance(frame, (bytes, bytearray)):
        try:
            return _loads(frame)
        except _JSONDecodeError:  # read as the text of a Frame: bad UTF-8 replaced
            frame = str(frame, "utf-8", "replace")
    if isinstance(frame, str):
        try:
            return _loads(frame)
        except _JSONDecodeError as exc:
            if frame.strip() == "[DONE]":
                return DONE
            raise ChatProtocolError(
                f"frame {number} is not valid JSON ({exc.msg}): {_describe(frame)}"
            ) from None
    if isinstance(frame, (Mapping, list, tuple)):  # given decoded: made plain JSON throughout
        return plain_json(frame)
    raise ChatProtocolError(
        f"frame {number} is a {type(frame).__name__}; expected a Frame, JSON text or a dict"
    )


def _weak_next_step(stage: ParseStage) -> Callable[[], None]:
    """``stage._next_step`` through a weak reference: the context that calls it is the
    stage's own, and a strong one would make a reference cycle."""
    ref = weakref.ref(stage)

    def next_step() -> None:
        alive = ref()
        if alive is not None:
            alive._next_step()

    return next_step


def _attach_partial(error: Exception, partial: ChatResponse) -> None:
    """Give ``error`` the step's partial response unless it already carries one."""
    if getattr(error, "partial_response", None) is None:
        with contextlib.suppress(AttributeError, TypeError):
            error.partial_response = partial  # type: ignore[attr-defined]


class _DownstreamError(Exception):
    """Carries an exception raised downstream through the dialect's frame handling."""

    def __init__(self, original: Exception) -> None:
        super().__init__(original)
        self.original = original


class _StepEvents:
    """Where the dialect's events go: into the step's accumulator, then downstream.

    It holds neither the stage nor its context, so no reference cycle keeps a finished
    stream's objects alive until the garbage collector finds them.
    """

    __slots__ = ("accumulator", "push")

    def __init__(self, push: Callable[[ChatEvent], Any]) -> None:
        self.accumulator = ChatAccumulator()
        self.push = push

    def emit(self, event: ChatEvent) -> None:
        self.accumulator.add(event)
        try:
            self.push(event)
        except Exception as exc:
            raise _DownstreamError(exc) from exc


class ParseStage:
    """Parses one step's frames with ``dialect`` and pushes the events into ``down``.

    Call :meth:`start` first (it emits STEP_START), then :meth:`on_next` per frame and
    :meth:`on_completed` or :meth:`on_error` once. The step's accumulator folds every event,
    and STEP_END carries its snapshot as ``response`` and its usage. A stream that ends
    without the provider's completion signal, or with no frame at all, fails with
    :class:`ChatProtocolError`; so does a malformed frame (naming its number) and a
    dialect's own bug; a provider-reported failure fails with its error. Every failure
    carries the step's partial response as ``partial_response``. An exception raised by
    ``down`` itself propagates unchanged.
    """

    __slots__ = ("__weakref__", "_dialect", "_down", "_events", "_push", "_response_id", "ctx",
                 "failed")  # fmt: skip

    def __init__(
        self,
        dialect: ChatDialect,
        down: Sink,
        *,
        step: int = 0,
        response_id: str | None = None,
    ) -> None:
        self._dialect = dialect
        self._down = down
        self._push = down.on_next
        self._response_id = response_id
        self._events = _StepEvents(self._push)
        self.failed = False
        """True once the stage has failed; later frames are ignored."""
        self.ctx = ChatStreamContext(
            self._events.emit,
            step=step,
            response_id=response_id,
            on_next_response=_weak_next_step(self),
        )
        """The context the dialect parses with."""

    def start(self) -> None:
        """Emit the step's STEP_START."""
        self._push(framing_event(_T.STEP_START, self.ctx.step, self._response_id))

    def _end_step(self) -> None:
        ctx = self.ctx
        snapshot = self._events.accumulator.snapshot(
            finish_reason=ctx.finish_reason,
            model=ctx.model,
            provider_response_id=ctx.provider_response_id,
        )
        self._push(
            framing_event(
                _T.STEP_END,
                ctx.step,
                self._response_id,
                ctx.provider_response_id,
                response=snapshot,
                usage=snapshot.usage,
            )
        )

    def _next_step(self) -> None:
        self._end_step()
        self._events.accumulator = ChatAccumulator()
        self._push(framing_event(_T.STEP_START, self.ctx.step + 1, self._response_id))

    def on_next(self, frame: Any) -> None:
        """Parse one frame: a :class:`~solon_events.sse.Frame`, JSON text or a payload.

        A :class:`~solon_events.events.ChatEvent` among the frames is not from the provider
        but from the I/O side about the request itself (a retry's STATUS): it is passed on
        through :meth:`relay`.
        """
        if self.failed:
            return
        kind = frame.__class__
        if kind is ChatEvent:
            self.relay(frame)
            return
        ctx = self.ctx
        ctx.frame_number += 1
        try:
            # the common cases inline; the sentinel and anything odd are decode_payload's
            if kind is bytes or kind is Frame:
                try:
                    payload = _loads(frame if kind is bytes else frame.data)
                except _JSONDecodeError:
                    payload = decode_payload(frame, ctx.frame_number)
            else:
                payload = decode_payload(frame, ctx.frame_number)
            if payload is DONE:
                self._dialect.parse_done(ctx)
            else:
                self._dialect.parse_frame(ctx, payload)
        except _DownstreamError as exc:
            raise exc.original from None
        except ChatError as exc:
            self.on_error(exc)
            return
        except Exception as exc:  # a dialect must never leak a bare KeyError
            self.on_error(
                ChatProtocolError(
                    f"frame {ctx.frame_number} could not be parsed by the {self._dialect.name!r} "
                    f"dialect ({type(exc).__name__}: {exc})"
                )
            )
            return
        if ctx.failure is not None:
            self.on_error(ctx.failure)

    def relay(self, event: ChatEvent) -> None:
        """Pass on ``event``, stamped with this step and response id, as it is.

        For what the I/O side reports about the request (a retry's STATUS event before the
        provider's first frame): it is not a frame, so it is not counted, parsed or folded
        into the step's response.
        """
        if not self.failed:
            self._push(event.evolve(step=self.ctx.step, response_id=self._response_id))

    def on_error(self, error: Exception) -> None:
        """Fail with ``error``, which gets the step's partial response (once only)."""
        if self.failed:
            return
        self.failed = True
        _attach_partial(error, self._events.accumulator.snapshot(model=self.ctx.model))
        self._down.on_error(error)

    def on_completed(self) -> None:
        """The frames ended: end the step, or fail if the stream was cut short."""
        if self.failed:
            return
        ctx = self.ctx
        try:
            self._dialect.end_of_stream(ctx)
        except ChatError as exc:
            self.on_error(exc)
            return
        if ctx.failure is not None:
            self.on_error(ctx.failure)
        elif ctx.frame_number == 0:
            self.on_error(ChatProtocolError("the stream ended without a single frame"))
        elif not ctx.finished:
            self.on_error(
                ChatProtocolError(
                    f"the stream ended after {ctx.frame_number} frames without the "
                    "provider's completion signal (truncated)"
                )
            )
        else:
            self._end_step()
            self._down.on_completed()
