"""A cached answer: a response's events with their times, what may be stored, and how a
hit is replayed.

:class:`AnswerRecorder` keeps the events of a response as they pass (with the seconds
since its RESPONSE_START), and says whether the response may be stored
(:meth:`AnswerRecorder.refusal`): only a complete answer is. :class:`StoredAnswer` is
what a store keeps, and writes itself as bytes (:meth:`StoredAnswer.encode`: our JSON
events, :mod:`solon_events.adapters.native`) for the stores that keep bytes.
:func:`served_events` is a stored (or shared) answer as one client gets it: its own
response id, a STATUS event that says where the answer came from, the usage billed zero
and the original kept apart on the response (:class:`~solon_events.CachedAnswer`).
"""

from __future__ import annotations

import time
from decimal import Decimal
from typing import Any

import attrs
import orjson

from ...adapters.native import event_from_json, event_to_json
from ...event_model.events import EVENT_TYPES, ChatEvent, with_response_id
from ...event_model.results import CachedAnswer, ChatResponse, Cost, Usage, with_usage
from ...event_model.values import EMPTY_MAPPING, fast_replacer

__all__ = [
    "FORMAT_VERSION",
    "AnswerRecorder",
    "ServedAnswer",
    "StoredAnswer",
    "incomplete_finish",
]

FORMAT_VERSION = 1
"""The version of :meth:`StoredAnswer.encode`'s format (an entry of another is a miss)."""

_T = EVENT_TYPES
_NOT_KEPT = frozenset({_T.RAW, _T.HEARTBEAT, _T.STATUS})
"""What an answer does not keep: the provider's payloads, keep-alives, and the STATUS
events of the original's way to its answer (retries, fallbacks, routing)."""

_CUT_SHORT = frozenset(
    {
        # the providers' words for an answer that did not end by itself
        "length",
        "max_tokens",
        "max_output_tokens",
        "model_context_window_exceeded",
        "pause_turn",
        "incomplete",
        "error",
        "malformed_function_call",
        # and for one a filter stopped
        "content_filter",
        "content_filtered",
        "guardrail_intervened",
        "refusal",
        "safety",
        "recitation",
        "blocklist",
        "prohibited_content",
        "spii",
        "image_safety",
    }
)
_COMPLETE_FINISHES = frozenset({"stop", "tool_calls"})


def incomplete_finish(response: ChatResponse) -> str | None:
    """Why ``response`` did not end as a complete answer (its finish reason: cut at the
    token limit, stopped by a content filter, ...), or None when it did."""
    finish = getattr(response, "finish", None)  # the unified finish reason, when known
    if isinstance(finish, str) and finish:
        return None if finish in _COMPLETE_FINISHES else f"finish {finish}"
    reason = (response.finish_reason or "").lower()
    return f"finish reason {response.finish_reason}" if reason in _CUT_SHORT else None


class AnswerRecorder:
    """The events of one response as they pass (:meth:`add`), timed from its
    RESPONSE_START; :meth:`answer` once it completed."""

    __slots__ = ("_created", "_start", "_why_not", "events", "times")

    def __init__(self) -> None:
        self.events: list[ChatEvent] = []
        self.times: list[float] = []
        self._start = time.monotonic()
        self._created = time.time()
        self._why_not: str | None = None

    def add(self, event: ChatEvent) -> None:
        """Keep ``event`` (unless it is one an answer does not keep)."""
        kind = event.type
        if kind in _NOT_KEPT:
            return
        if kind is _T.TOOL_RESULT:
            self._why_not = "a tool ran here (a replay would not run it)"
        elif kind is _T.CONTENT_FILTER:
            self._why_not = "a content filter stopped it"
        self.events.append(event)
        self.times.append(time.monotonic() - self._start)

    def refusal(self) -> str | None:
        """Why the response may not be stored, or None when it may: it must have ended
        with RESPONSE_END (not an ERROR, an ABORT or a cancellation), as a complete answer
        (not cut at the token limit, not filtered, not paused for approval), with no tool
        run here."""
        if self._why_not is not None:
            return self._why_not
        last = self.events[-1] if self.events else None
        if last is None or last.type is not _T.RESPONSE_END or last.response is None:
            return "it did not complete"
        response = last.response
        if response.pending_approval is not None:
            return "it paused for approval"
        return incomplete_finish(response)

    def answer(self) -> StoredAnswer:
        """What a store keeps of the response (its events without the provider's
        payloads, which a parsed event holds as its frame's text). Every event is copied:
        reading ``raw`` to see whether it has one would decode its frame again."""
        events = tuple(_without_raw(e) for e in self.events)
        return StoredAnswer(events, tuple(self.times), self._created)


@attrs.frozen
class StoredAnswer:
    """A complete answer as a cache keeps it: its ``events`` (RESPONSE_START to
    RESPONSE_END, without RAW, HEARTBEAT and STATUS events), each one's seconds since the
    first (``times``), and when it started (``created``, Unix time)."""

    events: tuple[ChatEvent, ...]
    times: tuple[float, ...]
    created: float

    @property
    def response(self) -> ChatResponse:
        """The response of its RESPONSE_END."""
        response = self.events[-1].response
        assert response is not None
        return response

    def size(self) -> int:
        """About the size of :meth:`encode`'s bytes (its texts and a fixed share per event),
        for a store that keeps the answer as it is (no encoding on the way in)."""
        texts = 0
        for event in self.events:
            text = event.text
            if text:
                texts += len(text)
            call = event.tool_call
            if call is not None:
                texts += len(call.arguments_str)
        return texts + _PER_EVENT * len(self.events) + 2 * len(self.response.text)

    def encode(self) -> bytes:
        """The answer as bytes (JSON: the format version, ``created`` and each event with
        its time)."""
        return orjson.dumps(
            {
                "v": FORMAT_VERSION,
                "created": self.created,
                "events": [
                    [round(t, 6), event_to_json(event)] for t, event in zip(self.times, self.events)
                ],
            }
        )

    @classmethod
    def decode(cls, data: bytes | str) -> StoredAnswer:
        """The answer :meth:`encode` wrote; ``ValueError`` for anything else (another
        format version included)."""
        try:
            document = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise ValueError(f"not a stored answer: {exc}") from None
        if not isinstance(document, dict) or document.get("v") != FORMAT_VERSION:
            raise ValueError("not a stored answer of this version")
        try:
            pairs = [(float(t), event_from_json(item)) for t, item in document["events"]]
            created = float(document["created"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not a stored answer: {exc}") from None
        if not pairs or pairs[-1][1].type is not _T.RESPONSE_END:
            raise ValueError("not a stored answer: it does not end with RESPONSE_END")
        return cls(tuple(e for _, e in pairs), tuple(t for t, _ in pairs), created)


_ZERO = Usage()
_without_raw_of = fast_replacer(ChatEvent, "raw")


def _without_raw(event: ChatEvent) -> ChatEvent:
    return _without_raw_of(event, EMPTY_MAPPING)


_PER_EVENT = 120  # bytes: an event's JSON besides its text (type, step, ids, index)


@attrs.define(eq=False)
class ServedAnswer:
    """An answer as a client that did not ask the provider gets it, event by event
    (:meth:`convert`): stamped with its own ``response_id``; a STATUS event after
    RESPONSE_START (``sub_type="cache"``, ``attrs``: ``cache``, ``"hit"`` for an answer
    read from the store or ``"shared"`` for one shared with an identical request in
    flight; ``age``, the seconds since the original started; ``key``); the original's
    RAW, HEARTBEAT and STATUS events left out; every usage billed zero (USAGE events, each
    step's and the whole response's; a priced cost zero); the RESPONSE_END's response
    marked ``cached`` (:class:`~solon_events.CachedAnswer`: the original usage and cost)
    without the original's attempts, its structured answer checked again by ``settle``
    (the prompt's :class:`~solon_events.client.output.OutputRequest`, if any)."""

    response_id: str
    key: str = attrs.field(kw_only=True)
    created: float = attrs.field(kw_only=True)
    shared: bool = attrs.field(default=False, kw_only=True)
    settle: Any = attrs.field(default=None, kw_only=True)

    def convert(self, event: ChatEvent) -> list[ChatEvent]:
        """What the client gets for ``event`` of the answer."""
        t = event.type
        if t in _NOT_KEPT:
            return []
        if t is _T.USAGE:
            event = event.evolve(usage=_ZERO)
        elif t is _T.RESPONSE_END and event.response is not None:
            event = event.evolve(
                response=self._served(event.response),
                usage=_ZERO if event.usage is not None else None,
            )
        elif event.response is not None and (t is _T.STEP_END or t.is_terminal):
            event = event.evolve(
                response=_billed_zero(event.response),
                usage=_ZERO if event.usage is not None else None,
            )
        served = with_response_id(event, self.response_id)
        if t is not _T.RESPONSE_START:
            return [served]
        age = max(0.0, time.time() - self.created)
        text = (
            "answer shared with an identical request in flight"
            if self.shared
            else f"cached answer (stored {age:.0f} s ago)"
        )
        status = ChatEvent(
            _T.STATUS,
            text,
            sub_type="cache",
            response_id=self.response_id,
            attrs={
                "cache": "shared" if self.shared else "hit",
                "age": round(age, 3),
                "key": self.key,
            },
        )
        return [served, status]

    def _served(self, response: ChatResponse) -> ChatResponse:
        cached = CachedAnswer(
            usage=response.usage,
            cost=response.cost,
            created=self.created,
            shared=self.shared,
            key=self.key,
        )
        changes: dict[str, Any] = {"cached": cached, "attempts": ()}
        if self.settle is not None:
            changes["output"] = self.settle.settle(response, 1)
        return attrs.evolve(_billed_zero(response), **changes)


def _billed_zero(response: ChatResponse) -> ChatResponse:
    cost = response.cost
    if cost is not None:
        cost = Cost(
            total=Decimal(0), currency=cost.currency, model=cost.model, provider=cost.provider
        )
    return with_usage(response, _ZERO, cost)
