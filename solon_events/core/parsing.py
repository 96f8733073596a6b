"""A stream's provider frames -> its events, through a dialect (sans-I/O).

:class:`ParseStage` is the observer behind :func:`~solon_events.operators.parse` and the
one owner of a stream's state: it decodes each frame's JSON, hands the payload to the
dialect, acts on what the dialect records, brackets each step with STEP_START and STEP_END
(carrying the step's folded response) and turns every way a stream can go wrong into one
:class:`~solon_events.event_model.errors.ChatError`, after a STEP_END holding what came before it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import orjson

from ..dialects.base import ChatDialect
from ..dialects.context import ChatStreamContext, Failure, Finish, NextResponse, Outcome
from ..dialects.reading import plain_json
from ..dialects.sniff import dialect_hint
from ..event_model.errors import ChatError, ChatProtocolError
from ..event_model.events import EVENT_TYPES, ChatEvent, framing_event
from ..event_model.finish import FinishReason, unified_finish
from ..event_model.results import ChatResponse, Cost, Usage
from ..wire.sse import Frame
from .accumulator import ChatAccumulator
from .stages import Sink

__all__ = ["DONE", "ParseStage", "StepSettlement", "decode_payload"]

_STEP_START = EVENT_TYPES.STEP_START
_STEP_END = EVENT_TYPES.STEP_END
_ABORT = EVENT_TYPES.ABORT
_ERROR = FinishReason.ERROR
_OTHER = FinishReason.OTHER
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


def _is_done(text: str | bytes | bytearray) -> bool:
    """Whether ``text`` is the ``[DONE]`` sentinel (blank space around it allowed)."""
    return text.strip() == ("[DONE]" if isinstance(text, str) else b"[DONE]")


def decode_payload(frame: Any, number: int) -> Any:
    """The payload of frame ``number``: decoded JSON, or :data:`DONE` for the sentinel.

    A :class:`~solon_events.wire.sse.Frame`, JSON text (str or bytes), or an already decoded
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
            if _is_done(frame):
                return DONE
            raise ChatProtocolError(
                f"frame {number} is not valid JSON ({exc.msg}): {_describe(frame)}"
            ) from None
    if isinstance(frame, (Mapping, list, tuple)):  # given decoded: made plain JSON throughout
        return plain_json(frame)
    raise ChatProtocolError(
        f"frame {number} is a {type(frame).__name__}; expected a Frame, JSON text or a dict"
    )


class StepSettlement(Protocol):
    """What settles a step's usage at its end (the model's
    :class:`~solon_events.client.estimate.StepAccounting`): see :meth:`ParseStage.settled`."""

    def settle(
        self,
        response: ChatResponse,
        unreported: tuple[str, str] | None,
        finished: bool,
        frames: int,
    ) -> ChatResponse: ...

    def retried(self) -> tuple[Usage, Cost | None]:
        """The usage and price of a request of the step that the provider accepted but
        that was lost before its first frame (and retried)."""
        ...


class ParseStage:
    """One stream's frames -> its events, through a dialect: the owner of the stream's state.

    The stage alone holds the stream's state: the step and its accumulator, the frames
    counted, the provider's completion signal and finish reason, and the failure. The
    dialect only records on its :class:`~solon_events.dialects.ChatStreamContext` what each
    frame means; after each call the stage takes that record and acts on it: each event
    is folded into the step's response and pushed into ``down``, a finish is noted, a
    provider failure fails the stream after the frame, and another provider response
    ends the step and starts the next.

    Call :meth:`start` first (it emits STEP_START), then :meth:`on_next` per frame and
    :meth:`on_completed` or :meth:`on_error` once. Frames are :class:`~solon_events.wire.sse.Frame`
    values, JSON text or bytes, or decoded payloads; a :class:`~solon_events.ChatEvent`
    among them (a transport's retry STATUS, say) is an event of the current step, passed
    on as it is with the step's ids, and counts as no frame.

    STEP_END carries the step's response and usage. A stream that ends without the
    provider's completion signal, or with no frame but ``[DONE]``, fails with
    :class:`ChatProtocolError`; so does one whose last step's frames are all unknown to
    the dialect (RAW events and nothing else: no content, usage or finish reason), naming
    their event types, unless :attr:`accept_unknown_streams`; so does a malformed frame
    and any exception a dialect raises, each naming the frame; a provider-reported
    failure fails with its error. A failed step still ends with its STEP_END, carrying
    the partial response, before ``on_error``. An ABORT event the dialect sends (the
    provider stopped the response) ends the step the same way, STEP_END first, then the
    ABORT, then ``on_completed``; later frames are ignored. An exception raised by
    ``down`` itself propagates unchanged.

    ``accounting`` (None by default), when set, settles each step's usage and price as
    the step ends, however it ends (see :meth:`settled`).
    """

    __slots__ = (
        "_accumulator",
        "_ctx",
        "_dialect",
        "_done_count",
        "_down",
        "_first",
        "_push",
        "_record",
        "_response_id",
        "aborted",
        "accept_unknown_streams",
        "accounting",
        "closed",
        "failure",
        "finish_reason",
        "finished",
        "frame_count",
        "retried",
        "step",
    )  # fmt: skip

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
        self._record: list[Outcome] = []
        """What the dialect records while it handles a frame; emptied as it is acted on."""
        self._ctx = ChatStreamContext(step=step, response_id=response_id, record=self._record)
        self._accumulator = ChatAccumulator()
        self.step = step
        """The current step."""
        self.frame_count = 0
        """Frames received, the ``[DONE]`` sentinel included."""
        self._done_count = 0
        self._first: Any = None
        """The first frame's payload: what tells a stream read in the wrong dialect."""
        self.finished = False
        """Whether the current step's provider response gave its completion signal."""
        self.finish_reason: str | None = None
        """The current step's finish reason, when the provider gave one."""
        self.failure: Exception | None = None
        """What the stream failed with, once it has."""
        self.closed = False
        """True once the stream has completed or failed; later calls do nothing."""
        self.aborted = False
        """True once the dialect sent an ABORT (the stream then ended)."""
        self.accept_unknown_streams = False
        """Whether a step whose every frame is unknown to the dialect (only RAW events, no
        content, usage or finish reason) ends as an empty answer; by default it fails with
        :class:`ChatProtocolError` naming the unknown event types."""
        self.accounting: StepSettlement | None = None
        """What settles each step's usage and price at its end (None: as the provider
        sent it)."""
        self.retried: list[tuple[Usage, Cost | None]] = []
        """The usage and price of each request the provider accepted and lost before its
        first frame (a retry STATUS event with ``attrs["accepted"]``), given
        :attr:`accounting`: each such event carries its usage."""

    @property
    def payload_count(self) -> int:
        """Frames received other than the ``[DONE]`` sentinel."""
        return self.frame_count - self._done_count

    @property
    def model(self) -> str | None:
        """The model the provider named for the current step's response."""
        return self._ctx.model

    @property
    def provider_response_id(self) -> str | None:
        """The provider's id of the current step's response."""
        return self._ctx.provider_response_id

    def use_dialect(self, dialect: ChatDialect) -> None:
        """Read the frames in ``dialect`` instead: for a dialect told from the first frames
        (``replay(dialect="auto")``), before any is parsed."""
        if self.frame_count:
            raise RuntimeError("the dialect can change only before the first frame")
        self._dialect = dialect

    def start(self, attrs: Mapping[str, Any] | None = None) -> None:
        """Emit the step's STEP_START (with ``attrs``, when given: what the step is asked
        for, a structured answer say)."""
        event = framing_event(_STEP_START, self.step, self._response_id)
        self._push(event if attrs is None else event.evolve(attrs=attrs))

    def on_next(self, frame: Any) -> None:
        """Parse one frame: a :class:`~solon_events.wire.sse.Frame`, JSON text or a payload."""
        if self.closed:
            return
        kind = frame.__class__
        if kind is ChatEvent:
            self.relay(frame)
            return
        self.frame_count += 1
        # the common cases inline; the sentinel and anything odd are decode_payload's
        try:
            if kind is str or kind is Frame or kind is bytes:
                text = frame.data if kind is Frame else frame
                try:
                    payload = _loads(text)
                except _JSONDecodeError:  # the sentinel, or what decode_payload names
                    payload = DONE if _is_done(text) else decode_payload(frame, self.frame_count)
                else:  # events sent with this payload as raw hold its text (never stale)
                    ctx = self._ctx
                    ctx.frame = payload
                    ctx.frame_text = text
            else:
                payload = decode_payload(frame, self.frame_count)
        except ChatError as exc:
            self._fail(exc)
            return
        if self._first is None:
            self._first = payload
        record = self._record
        try:
            if payload is DONE:
                self._done_count += 1
                self._dialect.parse_done(self._ctx)
            else:
                self._dialect.parse_frame(self._ctx, payload)
        except Exception as exc:
            record.clear()  # a frame that fails contributes nothing
            self._fail(self._dialect_error(exc, f"frame {self.frame_count}"))
            return
        if len(record) == 1:  # most frames: one event, folded and pushed here
            event = record[0]
            if type(event) is ChatEvent and event.type is not _ABORT:
                record.clear()
                self._accumulator.add(event)
                self._push(event)
                return
        failure = self._act()
        if failure is not None:
            self._fail(failure)

    def on_error(self, error: Exception) -> None:
        """The frames failed: end the step with its partial response, then fail with ``error``."""
        if not self.closed:
            self._fail(error)

    def on_completed(self) -> None:
        """The frames ended: end the step, or fail if the stream was cut short."""
        if self.closed:
            return
        ctx = self._ctx
        try:
            self._dialect.end_of_stream(ctx)
        except Exception as exc:
            self._record.clear()
            where = f"the end of the stream after {self.frame_count} frames"
            self._fail(self._dialect_error(exc, where))
            return
        failure = self._act()
        if self.closed:  # an ABORT the dialect sent at the end ended the step and the stream
            return
        self._release_held()
        if failure is None:
            response = self._step_response(ctx.model, ctx.provider_response_id)
            failure = self._end_failure(response)
        if failure is not None:
            self._fail(failure)
            return
        self.closed = True
        response = self.settled(response)
        self._push(self._step_end(response, self.step, ctx.provider_response_id))
        self._down.on_completed()

    def _end_failure(self, response: ChatResponse) -> ChatProtocolError | None:
        """What a stream that ended with ``response`` (its last step's, unsettled) fails
        with: it was cut short, gave no frame, is another dialect's, or holds only frames
        the dialect does not know; None when it ended well."""
        if self.payload_count == 0:
            what = "a single frame" if self.frame_count == 0 else "a frame but [DONE]"
            return ChatProtocolError(f"the stream ended without {what}")
        if not self.finished:
            hint = self._hint()  # frames of another dialect never carry this one's signal
            return ChatProtocolError(
                f"the {self._dialect.name!r} dialect read {self.frame_count} frames "
                f"that are not its own{hint}"
                if hint
                else f"the stream ended after {self.frame_count} frames without the "
                "provider's completion signal (truncated)"
            )
        if self._nothing_understood(response):
            return ChatProtocolError(
                f"the {self._dialect.name!r} dialect found nothing in "
                f"{self.frame_count} frames{self._hint()}"
            )
        if not self.accept_unknown_streams and (unknown := self._only_unknown(response)):
            return ChatProtocolError(
                f"the {self._dialect.name!r} dialect knows none of the frames of this "
                f"step ({self.frame_count} frames; unknown event types: "
                f"{', '.join(unknown)}): not taken for an empty answer (pass "
                "accept_unknown_streams=True to take it so)"
            )
        return None

    def _act(self) -> ChatError | None:
        """Act on what the dialect recorded, in order; the first failure it recorded."""
        record = self._record
        failure = None
        for outcome in record:
            if outcome.__class__ is ChatEvent:  # most of any record
                if outcome.type is _ABORT:
                    record.clear()
                    self._abort(outcome)
                    return None
                self._accumulator.add(outcome)
                self._push(outcome)
            elif type(outcome) is Finish:
                self.finished = True
                if outcome.reason is not None:
                    self.finish_reason = outcome.reason
            elif type(outcome) is Failure:
                if failure is None:
                    failure = outcome.error
            elif type(outcome) is NextResponse:
                self._next_response(outcome)
        record.clear()
        return failure

    def _abort(self, abort: ChatEvent) -> None:
        """The provider stopped the response: end the step with what came so far, pass on
        the ABORT, complete."""
        self.closed = self.aborted = True
        ctx = self._ctx
        self._release_held()
        partial = self.settled(self._accumulator.snapshot(model=ctx.model, finish=_OTHER))
        self._push(self._step_end(partial, self.step, ctx.provider_response_id))
        self._push(abort)
        self._down.on_completed()

    def _next_response(self, boundary: NextResponse) -> None:
        """End the step of the response that ended; start the next step."""
        response = self.settled(self._step_response(boundary.model, boundary.provider_response_id))
        self._push(self._step_end(response, boundary.step, boundary.provider_response_id))
        self._accumulator = ChatAccumulator()
        self.finished = False
        self.finish_reason = None
        self.step = boundary.step + 1
        self._push(framing_event(_STEP_START, self.step, self._response_id))

    def relay(self, event: ChatEvent) -> None:
        """Pass on ``event``, stamped with this step and response id, as it is.

        For what the I/O side reports about the request (a retry's STATUS event before the
        provider's first frame): it is not a frame, so it is not counted, parsed or folded
        into the step's response. :meth:`on_next` relays a ChatEvent found among the frames.
        Given :attr:`accounting`, a retry of a request the provider had accepted carries
        that request's estimated usage (see :attr:`retried`).
        """
        if self.closed:
            return
        step = self.step
        response_id = self._response_id or event.response_id
        accounting = self.accounting
        if (
            accounting is not None
            and event.type is EVENT_TYPES.STATUS
            and event.sub_type == "retry"
            and event.attrs.get("accepted")
        ):  # a request the provider accepted, lost before its first frame: it may be billed
            usage, cost = accounting.retried()
            self.retried.append((usage, cost))
            event = event.evolve(step=step, response_id=response_id, usage=usage)
        elif event.step != step or event.response_id != response_id:
            event = event.evolve(step=step, response_id=response_id)
        self._push(event)

    def _step_response(self, model: str | None, provider_response_id: str | None) -> ChatResponse:
        """The response of a step that ended well, before :meth:`settled`: its finish reason
        mapped to the unified vocabulary here, once
        (:func:`~solon_events.event_model.finish.unified_finish`)."""
        accumulator = self._accumulator
        return accumulator.snapshot(
            finish_reason=self.finish_reason,
            model=model,
            provider_response_id=provider_response_id,
            finish=unified_finish(self.finish_reason, accumulator.has_tool_calls),
        )

    def settled(self, response: ChatResponse | None = None) -> ChatResponse:
        """``response`` (by default the step's response so far) with its usage settled by
        :attr:`accounting`: the provider's count when the step finished with one, else an
        estimate of what it did not count, and priced. As it is without ``accounting``.

        What a step that ends early (a failure, an ABORT, a cancellation) is billed for
        so far: the model reads it when the response is cancelled, as no event may follow.
        """
        if response is None:
            self._fold_held()  # no event may follow: folded, not sent
            response = self._accumulator.snapshot(
                model=self._ctx.model, provider_response_id=self._ctx.provider_response_id
            )
        accounting = self.accounting
        if accounting is None:
            return response
        return accounting.settle(
            response,
            self._accumulator.unreported_output(),
            self.finished,
            self.payload_count,
        )

    def _step_end(
        self, response: ChatResponse, step: int, provider_response_id: str | None
    ) -> ChatEvent:
        return framing_event(
            _STEP_END,
            step,
            self._response_id,
            provider_response_id,
            response=response,
            usage=response.usage,
        )

    def _fail(self, error: Exception) -> None:
        """End the step with its partial response, then fail with ``error``."""
        self.closed = True
        self.failure = error
        ctx = self._ctx
        self._release_held()
        partial = self.settled(self._accumulator.snapshot(model=ctx.model, finish=_ERROR))
        self._push(self._step_end(partial, self.step, ctx.provider_response_id))
        self._down.on_error(error)

    def _release_held(self) -> None:
        """The step ends: the event its dialect held back (its latest usage), if any, folded
        and sent before the STEP_END."""
        held = self._fold_held()
        if held is not None:
            self._push(held)

    def _fold_held(self) -> ChatEvent | None:
        """The event the dialect held back (None if none), folded into the step."""
        held = self._ctx.take_held()
        if held is not None:
            self._accumulator.add(held)
        return held

    def _dialect_error(self, error: Exception, where: str) -> ChatError:
        """What the dialect raised, as a ChatProtocolError naming ``where`` it happened."""
        name = self._dialect.name
        if isinstance(error, ChatError):
            failure = ChatProtocolError(f"{where}: {error}", provider_error=error.provider_error)
        else:  # a dialect's own bug: a bare KeyError must not reach on_error
            failure = ChatProtocolError(
                f"{where} could not be parsed by the {name!r} dialect "
                f"({type(error).__name__}: {error}){self._hint()}"
            )
        failure.__cause__ = error
        return failure

    def _nothing_understood(self, response: ChatResponse) -> bool:
        """Whether a stream that ended well with ``response`` gave nothing (no content or
        usage) while its frames plainly belong to another dialect: the ``[DONE]`` of
        another dialect's stream is all this one understood."""
        if self.step:
            return False
        if response.text or response.thinking or response.tool_calls or response.usage:
            return False
        return bool(self._hint())

    def _only_unknown(self, response: ChatResponse) -> list[str]:
        """The unknown event types (RAW events) of a step that ended with ``response`` and
        gave nothing else: no content, usage or finish reason, only frames its dialect does
        not know; else ``[]``."""
        unknown = self._accumulator.raw_types
        if not unknown or self.finish_reason is not None:
            return []
        if not response.is_empty or response.usage or response.citations or response.search_results:
            return []
        return list(unknown)

    def _hint(self) -> str:
        """Which dialect the stream's frames are in when they are plainly not this one's
        (``': looks like anthropic frames: pass dialect="anthropic"'``), else ``""``."""
        if self._first is None or self._first is DONE:
            return ""
        return dialect_hint(self._dialect, self._first)
