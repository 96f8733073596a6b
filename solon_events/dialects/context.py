"""What a dialect reports about one stream: :class:`ChatStreamContext` and its outcomes.

A dialect never acts on a stream. For each frame it records on the context, in order, what
the frame means: events, the provider's completion signal, a provider failure, or the start
of another provider response. The parse stage, the one owner of the stream's state (step,
frame count, finish, failure, the step's response), takes the record after the frame and
acts on it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import attrs

from ..event_model.errors import ChatError, ProviderError
from ..event_model.events import EVENT_TYPES, ChatEvent, ChatEventType
from ..event_model.values import EMPTY_MAPPING, fast_recorder
from .reading import expect_object, provider_error_message

__all__ = [
    "ChatStreamContext",
    "Failure",
    "Finish",
    "FrameHandler",
    "HeldEvent",
    "NextResponse",
    "Outcome",
    "dispatch",
    "identify",
    "text_first",
]

_S = TypeVar("_S")


@attrs.frozen
class Finish:
    """The provider's completion signal, with its finish reason (None: not given)."""

    reason: str | None = None


@attrs.frozen
class Failure:
    """A failure the provider reported: the stream fails with ``error`` after this frame."""

    error: ChatError


@attrs.frozen
class NextResponse:
    """Another provider response begins in the same stream (a recorded tool loop).

    The step of the response that ends (``step``, whose response's ``model`` and
    ``provider_response_id`` these are) ends, and step ``step + 1`` begins.
    """

    step: int
    model: str | None = None
    provider_response_id: str | None = None


Outcome = ChatEvent | Finish | Failure | NextResponse
"""One thing a frame means, as a dialect records it on its :class:`ChatStreamContext`."""


class ChatStreamContext:
    """Where a dialect records what one step's frames mean (sans-I/O).

    The parse stage makes one per stream and hands it to every call of the dialect. The
    dialect records, in order:

    - ``send(type, **fields)`` (or ``emit(event)``): an event of the step; :meth:`event`
      builds one stamped with ``step``, ``response_id`` and ``provider_response_id``;
    - ``finish(reason)``: the provider's completion signal (a later non-None reason wins);
    - ``fail(error)``: a provider failure; the stream fails after the current frame, with
      the first failure recorded;
    - ``next_response()``: another provider response starts in this stream; the current
      step ends and the next one begins (``step`` goes up by one).
    - ``hold(make, value)``: an event that a later frame's makes stale (a usage snapshot
      repeated on every frame), built and sent only as the step ends, the latest one held.

    Nothing recorded acts at once: the parse stage, which gives the context its ``record``
    list, reads the record after each call and acts on it (:meth:`take` hands it to
    anyone else). The context also holds what the dialect learns about the
    response, ``provider_response_id`` (stamped on the events it builds) and ``model``,
    and ``state``, the dialect's scratch dict for the current step (emptied by
    :meth:`next_response`).

    An event sent with ``raw=`` the payload of the frame being read (:attr:`frame`, which
    the parse stage sets with :attr:`frame_text`) holds that frame's JSON text instead,
    shared by all the frame's events and decoded when the event's ``raw`` is read. A
    dialect must therefore not change a payload it sends as ``raw``.
    """

    __slots__ = ("_held", "_record", "frame", "frame_text", "model", "provider_response_id",
                 "response_id", "state", "step")  # fmt: skip

    def __init__(
        self,
        *,
        step: int = 0,
        response_id: str | None = None,
        record: list[Outcome] | None = None,
    ) -> None:
        self._record: list[Outcome] = [] if record is None else record
        """Where the outcomes go: the ``record`` list given (the parse stage's), else a new one."""
        self.response_id = response_id
        """The response id stamped on every event built here."""
        self.provider_response_id: str | None = None
        """The provider's id of the current response, stamped on every event built here."""
        self.step = step
        """The current step, stamped on every event built here."""
        self.model: str | None = None
        """The model the provider says answered, when it says so."""
        self.state: dict[str, Any] = {}
        """The dialect's own scratch dict for the current step."""
        self.frame: Any = EMPTY_MAPPING
        """The payload of the frame being read, decoded from :attr:`frame_text` (the parse
        stage sets both; an empty mapping before the first)."""
        self.frame_text: Any = EMPTY_MAPPING
        """The JSON text :attr:`frame` was decoded from: what an event sent with that
        payload as ``raw`` holds."""
        self._held: tuple[HeldEvent, Any, Any] | None = None

    @property
    def recorded(self) -> list[Outcome]:
        """What was recorded since the parse stage last acted, in order: the live list,
        which a dialect wrapping another may rewrite in place after the other's call
        (:class:`~solon_events.dialects.output_tool.OutputToolDialect`)."""
        return self._record

    def take(self) -> list[Outcome]:
        """What was recorded since the last call, in order; the record is then empty."""
        taken = list(self._record)
        self._record.clear()
        return taken

    def emit(self, event: ChatEvent) -> None:
        """Record ``event`` as an event of the step."""
        self._record.append(event)

    def event(self, type: ChatEventType, **fields: Any) -> ChatEvent:
        """A new event of ``type`` carrying this step's ids (``step``, ``response_id``,
        ``provider_response_id``) and ``fields``, any other fields of ChatEvent by keyword."""
        return ChatEvent(
            type,
            step=self.step,
            response_id=self.response_id,
            provider_response_id=self.provider_response_id,
            **fields,
        )

    send = fast_recorder(
        ChatEvent,
        ("step", "response_id", "provider_response_id"),
        "_record",
        shared=("raw", "frame", "frame_text"),
    )
    """``send(type, text=None, ...)``: record an event built as :meth:`event` builds it (the
    hot path: ChatEvent's fields but the three ids are its parameters, in their order);
    given ``raw=ctx.frame``, the event holds :attr:`frame_text`."""

    def hold(self, make: HeldEvent, value: Any, source: Any = None) -> None:
        """Hold back an event of the step that a later frame makes stale: a snapshot the
        provider repeats on every frame (Gemini's usage). The latest one held wins;
        ``make(ctx, value, source)`` builds its event (or None) only when the step ends,
        however it ends, just before its STEP_END (:meth:`take_held`)."""
        self._held = (make, value, source)

    def take_held(self) -> ChatEvent | None:
        """The event held back by :meth:`hold`, built now (None if nothing is held); nothing
        is held afterwards. The parse stage calls it as the step ends."""
        held = self._held
        if held is None:
            return None
        self._held = None
        make, value, source = held
        return make(self, value, source)

    def finish(self, reason: str | None = None) -> None:
        """Record the provider's completion signal; a later non-None reason wins."""
        self._record.append(Finish(reason))

    def fail(self, error: ChatError | Mapping[str, Any] | str) -> None:
        """Record a provider failure: a ChatError, the provider's error fields, or a message.

        The stream fails after the current frame, with the first failure recorded.
        """
        if isinstance(error, ChatError):
            failure = error
        elif isinstance(error, Mapping):
            message = provider_error_message(error) or "no message"
            failure = ProviderError(f"provider error: {message}", provider_error=error)
        else:
            failure = ProviderError(f"provider error: {error}")
        self._record.append(Failure(failure))

    def next_response(self) -> None:
        """Record that another provider response starts in the same stream.

        The current step ends (with the event held back, if any, and its response's
        ``model`` and ``provider_response_id``) and the next begins: ``step`` goes up by
        one; ``provider_response_id``, ``model`` and ``state`` start empty.
        """
        held = self.take_held()
        if held is not None:
            self._record.append(held)
        self._record.append(NextResponse(self.step, self.model, self.provider_response_id))
        self.step += 1
        self.provider_response_id = None
        self.model = None
        self.state = {}

    def state_of(self, key: str, factory: Callable[[], _S]) -> _S:
        """The dialect's state object under ``key`` in :attr:`state`, made on first use."""
        value = self.state.get(key)
        if value is None:
            value = self.state[key] = factory()
        return value  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return f"<ChatStreamContext step={self.step} recorded={len(self._record)}>"


HeldEvent = Callable[[ChatStreamContext, Any, Any], ChatEvent | None]
"""What :meth:`ChatStreamContext.hold` builds a held event with: ``make(ctx, value, source)``."""

FrameHandler = Callable[[ChatStreamContext, _S, dict[str, Any]], None]
"""What :func:`dispatch` hands a frame to: ``handler(ctx, state, frame)``, with the dialect's
state of the step."""


def dispatch(
    ctx: ChatStreamContext,
    frame: Any,
    key: str,
    handlers: Mapping[str, FrameHandler[_S]],
    state_key: str,
    state: Callable[[], _S],
) -> None:
    """Hand a frame named by its ``key`` field (Anthropic's ``type``, the Interactions API's
    ``event_type``) to the handler of that name, with the step's state
    (``ctx.state_of(state_key, state)``): the general path of such a dialect. A frame that is
    not a JSON object is a ChatProtocolError; one of no known name a RAW event naming it."""
    expect_object(frame)
    name = frame.get(key)
    handler = handlers.get(name) if isinstance(name, str) else None
    if handler is None:
        ctx.send(EVENT_TYPES.RAW, raw_type=str(name), raw=frame)
        return
    handler(ctx, ctx.state_of(state_key, state), frame)


def identify(ctx: ChatStreamContext, response_id: Any, model: Any) -> None:
    """Take a response's id and model as ``ctx.provider_response_id`` and ``ctx.model``, each
    when it is a non-empty string."""
    if isinstance(response_id, str) and response_id:
        ctx.provider_response_id = response_id
    if isinstance(model, str) and model:
        ctx.model = model


_TEXT_DELTA = EVENT_TYPES.TEXT_DELTA  # a module constant: looking up an enum member costs per frame


def text_first(
    ctx: ChatStreamContext,
    frame: Any,
    text_delta: Callable[[Any], tuple[Any, Any]],
    general: Callable[[ChatStreamContext, Any], None],
) -> None:
    """Parse ``frame`` the way most frames are, a text delta, first: ``text_delta(frame)`` reads
    its text and index by plain lookups (None, None for another event; a missing key or a
    non-object raises KeyError or TypeError on the way). A text (a str) at an index (an int) is
    sent as TEXT_DELTA right here (when not empty); any other frame goes to ``general(ctx,
    frame)``, which decides."""
    try:
        text, index = text_delta(frame)
    except (KeyError, TypeError):
        text = index = None
    if type(text) is str and type(index) is int:
        if text:
            ctx.send(_TEXT_DELTA, text, index=index, raw=frame)
        return
    general(ctx, frame)
