"""One response from several attempts: which attempt its subscriber sees (sans-I/O).

A response asked of several models (a fallback chain, a hedged or raced request) is made
of *attempts*, each a whole response of one member. :class:`AttemptArbiter` receives every
attempt's events and decides what the response's subscriber sees; a driver (the Rx or the
asyncio edge of :mod:`solon_events.client.routing`) starts and stops the attempts it asks for.

An attempt's events are held back until its first *answer* event: anything but
RESPONSE_START, STEP_START, STEP_END, STATUS, HEARTBEAT, USAGE, RAW and ERROR (a text,
thinking or tool-call event, a citation, RESPONSE_END, ABORT, ...). The first attempt to
answer *wins*: every other running attempt is stopped at once and announced by a STATUS
event (``sub_type="hedge"``), then the winner's held events are delivered, then each of its
events as it comes (a pass-through). An attempt that fails before it answers is announced
by a STATUS event (``sub_type="fallback"``) and, when the policy allows another, the next
member is started; its own STATUS events (a retry's) pass at once, tagged with the model.
So a subscriber sees one RESPONSE_START (the arbiter's), one attempt's steps, and never an
event of an attempt after it was abandoned.

An abandoned attempt's usage is what its model reports once it has stopped
(:meth:`AttemptArbiter.usage_reported`: the provider's count, else an estimate marked
``Usage.estimated``); the winner's RESPONSE_END waits for those reports (they come as each
attempt stops; at most :data:`LOSER_REPORT_WAIT` seconds) so that its ``attempts`` and
usage total hold them.

After the winner's first answer event, a failure ends the response (``mid_stream="never"``)
or, with ``mid_stream="restart"`` or ``"continue"``, the arbiter asks the driver for the
next member from where the conversation is (see :class:`Continuation`): the failed step
is closed as it was (its STEP_END carries the partial response), a STATUS event
(``sub_type="fallback"``) says what becomes of its text, and the next member's steps
follow, numbered on. A restart abandons the text (``attrs["mode"] == "restart"``,
``attrs["abandoned_text"]``); a continuation keeps it (``attrs["mode"] == "continue"``,
``attrs["continued_text"]``): the next member is sent it as a trailing assistant turn
(a prefill) and its deltas are the rest of that text, the continued step's STEP_END and
RESPONSE_END carrying the whole text once. A failed step that is not text alone (a tool
call, thinking) or without text, or a next member whose dialect takes no prefill, is
restarted instead.

The arbiter is thread-safe: a Rx driver's attempts deliver on several threads. Until a
winner is chosen each callback takes a lock; the winner's events then pass without it.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, Protocol

import attrs

from ..event_model.errors import ChatError, ToolCallError
from ..event_model.events import EVENT_TYPES, ChatEvent, framing_event
from ..event_model.messages import Message, ToolMessage
from ..event_model.results import AssistantMessage, Attempt, ChatResponse, Usage
from .stages import Sink

__all__ = [
    "LOSER_REPORT_WAIT",
    "NO_ANSWER_YET",
    "Attempt",
    "AttemptArbiter",
    "AttemptDriver",
    "AttemptPolicy",
    "AttemptWatch",
    "Continuation",
    "MidStream",
]

MidStream = Literal["never", "restart", "continue"]
"""What a failure after the first answer event does: end the response (``"never"``), ask
the next member again from the start of the failed step (``"restart"``: the steps before
it are kept, their tools not run again), or ask it to continue the failed step's text
(``"continue"``: sent as an assistant prefill where the member's dialect takes one, else
a restart)."""

NO_ANSWER_YET = frozenset(
    {
        EVENT_TYPES.RESPONSE_START,
        EVENT_TYPES.STEP_START,
        EVENT_TYPES.STEP_END,
        EVENT_TYPES.STATUS,
        EVENT_TYPES.HEARTBEAT,
        EVENT_TYPES.USAGE,
        EVENT_TYPES.RAW,
        EVENT_TYPES.ERROR,
    }
)
"""The event types that are no answer yet: an attempt that has sent only these has said
nothing a subscriber could have read."""

LOSER_REPORT_WAIT = 0.5
"""Seconds the winner's RESPONSE_END waits at most for the usage reports of the attempts
abandoned for it (each comes as soon as its attempt has stopped)."""

_PASSED_AT_ONCE = frozenset({EVENT_TYPES.STATUS, EVENT_TYPES.HEARTBEAT})
_TERMINAL = frozenset({EVENT_TYPES.RESPONSE_END, EVENT_TYPES.ERROR, EVENT_TYPES.ABORT})


def every_chat_error(error: BaseException) -> bool:
    """The default ``on``: every :class:`~solon_events.ChatError`."""
    return isinstance(error, ChatError)


@attrs.frozen(kw_only=True)
class AttemptPolicy:
    """When the next member is asked.

    ``after``: None to start the next member only when an attempt fails (a fallback), a
    number of seconds to start it also when no attempt has answered that long after the
    last one started (a hedge), 0 to start every member at once (a race). ``on`` says
    which failures let the next member be asked (the others end the response).
    ``mid_stream``: see :data:`MidStream`.
    """

    after: float | None = None
    on: Callable[[BaseException], bool] = every_chat_error
    mid_stream: MidStream = "never"
    announce: bool = False
    """Whether the winner is announced by a STATUS event (``sub_type="routed"``,
    ``attrs``: ``model``, ``attempt``) before its first event (a router's)."""
    exhausted: Callable[[BaseException, Sequence[Attempt]], BaseException] | None = None
    """The error a response ends with when a failure ``on`` allows has no member left to
    ask, from that failure and every attempt (a skipped member's among them); None: the
    failure itself."""


@attrs.frozen(kw_only=True)
class Continuation:
    """Where a member asked after a failure mid-answer starts: the conversation so far
    (``messages``: the prompt's, then each finished tool step's assistant turn and tool
    results) and the number of its first step. ``prefill`` is the text it continues (then
    the last of ``messages``, an assistant turn), empty for a restart."""

    messages: tuple[Message, ...]
    first_step: int
    prefill: str = ""


class AttemptWatch(Protocol):
    """What an :class:`AttemptArbiter` tells of each attempt as it goes (a router's
    bookkeeping: requests in flight, time to the first answer, failures)."""

    def started(self, index: int) -> None:
        """Member ``index``'s attempt was started."""

    def answered(self, index: int) -> None:
        """Member ``index``'s attempt sent its first answer event and won."""

    def ended(self, index: int, error: BaseException | None) -> None:
        """Member ``index``'s attempt is over (told once per start): failed with ``error``,
        else completed, stopped or disposed (None)."""


class AttemptDriver(Protocol):
    """What an :class:`AttemptArbiter` asks of its edge."""

    def start(self, index: int, continuation: Continuation | None) -> None:
        """Start member ``index``'s attempt, its events into ``arbiter.sink(index)``."""

    def stop(self, index: int) -> None:
        """Stop member ``index``'s attempt at once: close its request, deliver nothing more."""

    def later(self, seconds: float, callback: Callable[[], None]) -> None:
        """Call ``callback`` after ``seconds`` (unless the response has ended)."""


_log = logging.getLogger(__name__)

_NOT_STARTED, _RUNNING, _WON, _FAILED, _ABANDONED, _SKIPPED = range(6)

_TEXT_ONLY = frozenset(
    {EVENT_TYPES.TEXT_START, EVENT_TYPES.TEXT_DELTA, EVENT_TYPES.TEXT_END} | NO_ANSWER_YET
)
"""What a step may have sent and still be continued: its text and no other answer."""


class _State:
    __slots__ = ("error", "held", "label", "state", "usage")

    def __init__(self, label: str) -> None:
        self.label = label
        self.state = _NOT_STARTED
        self.held: list[ChatEvent] = []
        self.error: BaseException | None = None
        self.usage: Usage | None = None


class AttemptSink:
    """What one attempt's events go into (``on_next``, ``on_error``, ``on_completed``)."""

    __slots__ = ("_arbiter", "index", "on_next")

    def __init__(self, arbiter: AttemptArbiter, index: int) -> None:
        self._arbiter = arbiter
        self.index = index
        push = arbiter._down.on_next
        terminal = _TERMINAL

        def on_next(event: ChatEvent) -> None:
            if arbiter.winner == index and arbiter.passing:
                if event.type in terminal:
                    arbiter._winner_ends(index, event)
                else:
                    push(event)
            else:
                arbiter._event(index, event)

        self.on_next = on_next

    def on_error(self, error: Exception) -> None:
        """The attempt failed (after its ERROR event)."""
        self._arbiter._failed(self.index, error)

    def on_completed(self) -> None:
        """The attempt ended (after its RESPONSE_END or ABORT)."""
        self._arbiter._completed(self.index)


class AttemptArbiter:
    """Chooses, for one response, which of its attempts ``down`` sees (see the module).

    ``labels`` name the members in order; ``driver`` starts and stops their attempts;
    ``response_id`` is the response's (every attempt stamps the same one); ``theirs`` tells
    an exception the subscriber raised from its own callbacks (passed on, never a reason to
    ask another member); ``redact`` masks secrets in the reasons STATUS events give;
    ``prefills`` says which members take an assistant prefill (``mid_stream="continue"``;
    by default none). ``skipped`` maps members that are not to be asked (a router's
    deployments cooling down) to why: they are never started and are listed on the
    response's attempts as ``"skipped"``. ``watch`` is told each attempt's start, answer
    and end. ``on_stopped`` is called, once, with the sum of every attempt's usage when
    the response was disposed and each attempt stopped has told its usage (a group
    abandoned by the group it is a member of reports so). Call :meth:`open` once,
    :meth:`dispose` to stop everything.
    """

    def __init__(
        self,
        down: Sink,
        labels: Sequence[str],
        policy: AttemptPolicy,
        driver: AttemptDriver,
        *,
        response_id: str,
        messages: Sequence[Message] = (),
        theirs: Callable[[BaseException], bool] = lambda _error: False,
        redact: Callable[[str], str] = lambda text: text,
        prefills: Sequence[bool] = (),
        skipped: Mapping[int, BaseException] | None = None,
        watch: AttemptWatch | None = None,
        on_stopped: Callable[[Usage | None], None] | None = None,
    ) -> None:
        if not labels:
            raise ValueError("a response needs at least one member to ask")
        self._down = down
        self._policy = policy
        self._driver = driver
        self._states = [_State(label) for label in labels]
        self._theirs = theirs
        self._redact = redact
        self._lock = threading.RLock()
        self.response_id = response_id
        self.winner: int | None = None
        """The member whose attempt is delivered, once one has answered."""
        self.passing = False
        """Whether the winner's events pass straight through (no mid-stream tracking)."""
        self.ended = False
        self._messages: list[Message] = list(messages)
        self._step = 0
        self._continuation: Continuation | None = None
        self._tool_results: list[ToolMessage] = []
        self._abandoned = ""
        self._prefills = tuple(prefills) or (False,) * len(labels)
        self._text_only = True  # the current step has sent no answer but its text
        self._continued_step: int | None = None  # the step a prefill continues
        self._prefix = ""  # the text it continues, as the subscriber saw it
        self._overlap = ""  # whitespace shown but not sent, dropped from what follows
        self._stripped = 0  # how much of it the continuation's text started with
        self._last_step = -1  # the winner's last STEP_END
        self._unreported: set[int] = set()  # abandoned attempts whose usage is not told yet
        self._held_end: ChatEvent | None = None  # the RESPONSE_END waiting for them
        self._completed_after_end = False
        self._on_stopped = on_stopped
        self._disposed = False  # disposed before its end
        self._sinks = [AttemptSink(self, i) for i in range(len(labels))]
        for index, reason in (skipped or {}).items():
            self._states[index].state = _SKIPPED
            self._states[index].error = reason
        self._watch = watch
        self._watched: set[int] = set()  # started attempts whose end the watch awaits

    @property
    def attempts(self) -> tuple[Attempt, ...]:
        """Every attempt started so far, in the order of the members."""
        return tuple(self._attempt(state) for state in self._states if state.state != _NOT_STARTED)

    def _attempt(self, state: _State) -> Attempt:
        if state.state == _WON:
            outcome: Literal["answered", "failed", "cancelled", "skipped"] = "answered"
        elif state.state == _FAILED:
            outcome = "failed"
        elif state.state == _ABANDONED:
            outcome = "cancelled"
        elif state.state == _SKIPPED:
            outcome = "skipped"
        else:
            outcome = "cancelled" if self.ended else "answered"
        return Attempt(model=state.label, outcome=outcome, error=state.error, usage=state.usage)

    def sink(self, index: int) -> AttemptSink:
        """Where member ``index``'s attempt pushes its events."""
        return self._sinks[index]

    def open(self) -> None:
        """Emit RESPONSE_START and start the first member (every member for a race); with
        every member skipped, end the response at once (an ERROR event, then
        ``on_error``)."""
        with self._lock:
            self._push(framing_event(EVENT_TYPES.RESPONSE_START, 0, self.response_id))
            first = self._next_to_start()
            if first is None:
                self._end_unasked()
            elif self._policy.after == 0:
                for index in range(first, len(self._states)):
                    if not self.ended and self._states[index].state == _NOT_STARTED:
                        self._start(index)
            else:
                self._start(first)

    def dispose(self) -> None:
        """Stop every running attempt; deliver nothing more."""
        with self._lock:
            self._disposed = self._disposed or not self.ended
            self.ended = True
            for index, state in enumerate(self._states):
                if state.state == _RUNNING or state.state == _WON:
                    state.state = _ABANDONED
                    self._unreported.add(index)
                    self._driver.stop(index)
                    self._told_end(index, None)
            for index in tuple(self._watched):  # completed attempts
                self._told_end(index, None)
            stopped = self._stopped_usage()
        if stopped is not None:
            stopped()

    def _told_end(self, index: int, error: BaseException | None) -> None:
        """Tell the watch that attempt ``index`` is over (once)."""
        if self._watch is not None and index in self._watched:
            self._watched.discard(index)
            self._watch.ended(index, error)

    # --- starting

    def _start(self, index: int) -> None:
        state = self._states[index]
        state.state = _RUNNING
        if self._watch is not None:
            self._watched.add(index)
            self._watch.started(index)
        after = self._policy.after
        if after and index + 1 < len(self._states):
            self._driver.later(after, lambda: self._due(index + 1))
        self._driver.start(index, self._continuation)

    def _due(self, index: int) -> None:
        """The hedge's delay after member ``index - 1`` started has passed."""
        with self._lock:
            if self.ended or self.winner is not None:
                return
            if self._states[index].state == _NOT_STARTED and self._next_to_start() == index:
                self._start(index)

    def _next_to_start(self) -> int | None:
        for index, state in enumerate(self._states):
            if state.state == _NOT_STARTED:
                return index
        return None

    def _running(self, but: int | None = None) -> list[int]:
        return [i for i, s in enumerate(self._states) if s.state == _RUNNING and i != but]

    # --- events before the winner's

    def _event(self, index: int, event: ChatEvent) -> None:
        with self._lock:
            state = self._states[index]
            if self.ended or state.state not in (_RUNNING, _WON):
                return  # an abandoned attempt's, in flight when it was stopped
            if state.state == _WON:  # the winner, mid-stream tracking on
                self._track(index, event)
                return
            t = event.type
            if t is EVENT_TYPES.USAGE and event.usage is not None:
                state.usage = event.usage
            if t not in NO_ANSWER_YET:
                self._win(index)
                self._track(index, event)
            elif t in _PASSED_AT_ONCE:
                self._push(_tagged(event, state.label))
            elif t is not EVENT_TYPES.RESPONSE_START:
                state.held.append(event)

    def _win(self, index: int) -> None:
        """Member ``index`` answered first: stop the others, announce them, deliver what
        it held."""
        self.winner = index
        winner = self._states[index]
        winner.state = _WON
        if self._watch is not None:
            self._watch.answered(index)
        for other in self._running(but=index):
            loser = self._states[other]
            loser.state = _ABANDONED
            self._unreported.add(other)
            self._driver.stop(other)
            self._told_end(other, None)
            self._push(
                self._status(
                    "hedge",
                    f"{loser.label} abandoned: {winner.label} answered first",
                    model=loser.label,
                    attempt=other,
                    winner=winner.label,
                )
            )
        if self._policy.announce:
            self._push(
                self._status(
                    "routed", f"answered by {winner.label}", model=winner.label, attempt=index
                )
            )
        held, winner.held = winner.held, []
        self.passing = self._policy.mid_stream == "never"
        for event in held:
            if self.passing:
                self._push(event)
            else:  # tracked: a later member may take over
                self._track(index, event)

    # --- the winner's own events, tracked (mid-stream policies)

    def _track(self, index: int, event: ChatEvent) -> None:
        """Deliver a winner's event, noting what a later restart needs."""
        t = event.type
        if t in _TERMINAL:
            self._winner_ends(index, event)
            return
        if t not in _TEXT_ONLY:
            self._text_only = False
            self._overlap = ""
        elif t is EVENT_TYPES.TEXT_DELTA and self._overlap:
            event = self._without_overlap(event)
            if not event.text:
                return
        if t is EVENT_TYPES.STEP_START:
            self._text_only = True
        elif t is EVENT_TYPES.TOOL_RESULT:
            call = event.tool_call
            self._tool_results.append(
                ToolMessage(
                    tool_call_id=event.tool_call_id,
                    name=call.name if call is not None else str(event.attr("tool_name", "")),
                    content=event.text or "",
                    is_error=bool(event.attr("is_error", False)),
                )
            )
        elif t is EVENT_TYPES.STEP_END:
            self._step = event.step + 1
            self._last_step = event.step
            if event.step == self._continued_step and event.response is not None:
                event = event.evolve(response=self._with_prefix(event.response))
            response = event.response
            message = response.message if response is not None else None
            self._abandoned = message.text if message is not None else ""
            if message is not None and len(self._tool_results) == len(message.tool_calls) > 0:
                self._messages.append(message)  # a tool step: the next one reads its results
                self._messages.extend(self._tool_results)
            self._tool_results = []
        self._push(event)

    def _winner_ends(self, index: int, event: ChatEvent) -> None:
        """The winner's terminal event: an ERROR is held until its ``on_error`` (another
        member may take over; else it is delivered carrying every attempt), a
        RESPONSE_END delivered carrying every attempt."""
        if event.type is EVENT_TYPES.ERROR:  # until its on_error: another member may take over
            self._states[index].held.append(event)
            return
        if event.type is EVENT_TYPES.RESPONSE_END and event.response is not None:
            response = event.response
            if self._continued_step is not None and self._last_step == self._continued_step:
                response = self._with_prefix(response)
            with self._lock:
                if self._unreported:  # held until the abandoned attempts' usage is told
                    self._states[index].usage = response.usage
                    self._held_end = event.evolve(response=response)
                    self._driver.later(LOSER_REPORT_WAIT, self._release_end)
                    return
            event = _carrying(event, self._with_attempts(index, response))
        self._push(event)

    # --- the usage of abandoned attempts

    def usage_reported(self, index: int, usage: Usage | None) -> None:
        """Member ``index``'s attempt has ended and its model told its ``usage`` (a
        :class:`~solon_events.UsageReport`'s: counted by the provider, else estimated):
        an abandoned attempt's is kept (the others' came with their events)."""
        with self._lock:
            state = self._states[index]
            if state.state == _ABANDONED and usage is not None:
                state.usage = usage
            self._unreported.discard(index)
            if self._held_end is not None and not self._unreported:
                self._release_end()
            stopped = self._stopped_usage()
        if stopped is not None:
            stopped()

    def _stopped_usage(self) -> Callable[[], None] | None:
        """The call of ``on_stopped`` that is due (once the response was disposed and
        every attempt stopped has told its usage), to be made outside the lock: the
        arbiter of an enclosing group takes its own."""
        on_stopped = self._on_stopped
        if on_stopped is None or not self._disposed or self._unreported:
            return None
        self._on_stopped = None
        total = total_usage(self.attempts)
        return lambda: on_stopped(total)

    def _release_end(self) -> None:
        """Deliver the held RESPONSE_END (once), with every attempt's usage known by now,
        then the completion that came after it."""
        with self._lock:
            held, self._held_end = self._held_end, None
            if held is None or self.ended:
                return
            winner = self.winner
            assert winner is not None and held.response is not None
            self._unreported.clear()
            self._push(_carrying(held, self._with_attempts(winner, held.response)))
            if self._completed_after_end:
                self.ended = True
                self._down.on_completed()

    # --- continuing a text (mid_stream="continue")

    def _without_overlap(self, event: ChatEvent) -> ChatEvent:
        """A continuation's text delta without the whitespace the subscriber has seen
        already (shown, but not sent in the prefill)."""
        text = event.text or ""
        overlap = self._overlap
        same = 0
        while same < len(text) and same < len(overlap) and text[same] == overlap[same]:
            same += 1
        self._stripped += same
        self._overlap = overlap[same:] if same == len(text) else ""
        return event.evolve(text=text[same:]) if same else event

    def _with_prefix(self, response: ChatResponse) -> ChatResponse:
        """The continued step's response with the text it continued: the whole text, as
        the subscriber saw it, once."""
        message = response.message
        if message is None:
            return response
        text = self._prefix + message.text[self._stripped :]
        return attrs.evolve(response, message=attrs.evolve(message, text=text))

    def _with_attempts(self, index: int | None, response: ChatResponse) -> ChatResponse:
        """Member ``index``'s response (the winner's, or the last failure's; None: no
        member's) with every attempt on it and, as its usage, the sum of theirs (a nested
        group's attempts in place of its own)."""
        if index is not None:
            self._states[index].usage = response.usage
        attempts: list[Attempt] = []
        for i, state in enumerate(self._states):
            if state.state == _NOT_STARTED:
                continue
            if i == index and response.attempts:
                attempts.extend(response.attempts)
            else:
                attempts.append(self._attempt(state))
        return attrs.evolve(response, attempts=tuple(attempts), usage=total_usage(attempts))

    # --- endings

    def _failed(self, index: int, error: BaseException) -> None:
        with self._lock:
            state = self._states[index]
            if self.ended or state.state not in (_RUNNING, _WON):
                return
            won = state.state == _WON
            state.state = _FAILED
            state.error = error
            held, state.held = state.held, []
            if held and held[-1].type is EVENT_TYPES.ERROR and held[-1].usage is not None:
                state.usage = held[-1].usage
            if self._theirs(error):
                self._told_end(index, None)
                self._end_with(index, error, held)
                return
            self._told_end(index, error)
            next_index = self._next_to_start()
            others = self._running()
            if won:  # mid-answer: another member takes over only by a mid-stream policy
                asked = (
                    self._policy.mid_stream != "never"
                    and next_index is not None
                    and not isinstance(error, ToolCallError)
                    and self._asks(error)
                )
            else:
                asked = (next_index is not None or bool(others)) and self._asks(error)
            if not asked:
                if not won and next_index is None and not others and self._policy.exhausted:
                    error, held = self._exhausted(error, held)
                self._end_with(index, error, held)
                return
            if won:  # its ERROR (held) is not delivered: the response goes on
                self._mid_stream_from(index, error)
            elif self._cannot_continue(next_index):
                self._continue_as_restart(index, error, next_index)  # type: ignore[arg-type]
            else:
                self._announce(index, error, next_index, others)
            if next_index is not None:
                self._start(next_index)

    def _asks(self, error: BaseException) -> bool:
        """Whether ``on`` lets ``error`` be answered by another member (a predicate that
        raises says no; it is logged)."""
        try:
            return bool(self._policy.on(error))
        except Exception:
            _log.exception("the condition 'on' of a model group raised; not falling back")
            return False

    def _announce(
        self, index: int, error: BaseException, next_index: int | None, others: list[int]
    ) -> None:
        then = (
            f"asking {self._states[next_index].label}"
            if next_index is not None
            else f"waiting for {', '.join(self._states[i].label for i in others)}"
        )
        self._push(self._fallback_status(index, error, then, mode="before_answer"))

    def _fallback_status(
        self, index: int, error: BaseException, then: str, *, mode: str, **extra: Any
    ) -> ChatEvent:
        state = self._states[index]
        reason = self._redact(str(error))
        status = getattr(error, "status", None)
        return self._status(
            "fallback",
            f"{state.label} failed ({reason}); {then}",
            model=state.label,
            attempt=index,
            error=type(error).__name__,
            status=status if isinstance(status, int) else None,
            reason=reason,
            mode=mode,
            **extra,
        )

    def _status(self, sub_type: str, text: str, **attrs: Any) -> ChatEvent:
        """A STATUS event of this response about its attempts."""
        return ChatEvent(
            EVENT_TYPES.STATUS,
            text,
            sub_type=sub_type,
            response_id=self.response_id,
            step=self._step,
            attrs=attrs,
        )

    def _mid_stream_from(self, index: int, error: BaseException) -> None:
        """The winner failed mid-answer (its failed step closed, its ERROR held back) and
        the next member takes over, numbered after that step: it continues the step's
        text (``mid_stream="continue"``, when it can) or starts that step again."""
        self.winner = None
        self.passing = False
        self._overlap = ""
        next_index = self._next_to_start()
        assert next_index is not None
        text = self._abandoned
        why = self._why_not_continued(next_index, text)
        self._text_only = True  # for the next member's first step (its STEP_START is held)
        if why is None:
            prefill = text.rstrip()
            self._continued_step = self._step
            self._prefix = text
            self._overlap = text[len(prefill) :]
            self._stripped = 0
            self._continuation = Continuation(
                messages=(*self._messages, AssistantMessage(text=prefill)),
                first_step=self._step,
                prefill=prefill,
            )
            self._push(
                self._fallback_status(
                    index,
                    error,
                    f"asking {self._states[next_index].label} to continue the text of step "
                    f"{self._step - 1} in step {self._step}",
                    mode="continue",
                    continued_text=text,
                )
            )
            return
        self._continued_step = None
        self._continuation = Continuation(messages=tuple(self._messages), first_step=self._step)
        extra = {} if self._policy.mid_stream != "continue" else {"not_continued": why}
        self._push(
            self._fallback_status(
                index,
                error,
                f"the text of step {self._step - 1} is abandoned; asking "
                f"{self._states[next_index].label} again from step {self._step}",
                mode="restart",
                abandoned_text=text,
                **extra,
            )
        )

    def _why_not_continued(self, next_index: int, text: str) -> str | None:
        """Why the failed step's text cannot be continued by member ``next_index`` (None
        when it can)."""
        if self._policy.mid_stream != "continue":
            return "restart"
        if not self._text_only:
            return "not text alone"  # a tool call, thinking, ... was begun
        if not text.strip():
            return "no text"
        if not self._prefills[next_index]:
            return "no prefill"  # its dialect takes no assistant prefill
        return None

    def _cannot_continue(self, next_index: int | None) -> bool:
        """Whether member ``next_index`` is to continue a text it cannot (its dialect takes
        no prefill): the member asked to continue it failed before answering."""
        continuation = self._continuation
        return (
            next_index is not None
            and continuation is not None
            and bool(continuation.prefill)
            and not self._prefills[next_index]
        )

    def _continue_as_restart(self, index: int, error: BaseException, next_index: int) -> None:
        """Member ``index``, asked to continue a text, failed before answering, and the
        next one cannot continue it: that one starts the step again, and the STATUS event
        announcing the failure says the text is abandoned."""
        continuation = self._continuation
        assert continuation is not None
        self._continued_step = None
        self._overlap = ""
        step = continuation.first_step
        self._continuation = Continuation(messages=continuation.messages[:-1], first_step=step)
        self._push(
            self._fallback_status(
                index,
                error,
                f"the text of step {step - 1} is abandoned; asking "
                f"{self._states[next_index].label} again from step {step}",
                mode="restart",
                abandoned_text=self._prefix,
                not_continued="no prefill",
            )
        )

    def _exhausted(
        self, error: BaseException, held: list[ChatEvent]
    ) -> tuple[BaseException, list[ChatEvent]]:
        """The policy's error for a failure ``on`` allows with no member left to ask (the
        last failure when its condition does not hold or it raises), and the failed
        attempt's held events with their ERROR event carrying it."""
        exhausted = self._policy.exhausted
        assert exhausted is not None
        if not self._asks(error):
            return error, held
        try:
            final = exhausted(error, self.attempts)
        except Exception:
            _log.exception("the policy's 'exhausted' of a model group raised")
            return error, held
        final.__cause__ = error
        with contextlib.suppress(AttributeError, TypeError):
            final.partial_response = getattr(error, "partial_response", None)  # type: ignore[attr-defined]
        if held and held[-1].type is EVENT_TYPES.ERROR:
            held = [*held[:-1], held[-1].evolve(error=final, text=str(final))]
        return final, held

    def _end_unasked(self) -> None:
        """No member can be asked (every one skipped): end with the policy's error."""
        reasons = [s.error for s in self._states if s.error is not None]
        last = reasons[-1] if reasons else ChatError("no member to ask")
        exhausted = self._policy.exhausted
        error = exhausted(last, self.attempts) if exhausted is not None else last
        event = ChatEvent(
            EVENT_TYPES.ERROR, response_id=self.response_id, error=error, text=str(error)
        )
        self._end_with(None, error, [event])

    def _end_with(self, index: int | None, error: BaseException, held: list[ChatEvent]) -> None:
        """End the response with ``error`` (member ``index``'s failure; None: no member
        could be asked): stop what runs, deliver the failed attempt's held events (its
        steps and ERROR, the ERROR's response carrying every attempt and their usage),
        then ``on_error``."""
        self.ended = True
        for other in self._running():
            self._states[other].state = _ABANDONED
            self._driver.stop(other)
            self._told_end(other, None)
        if held and held[-1].type is EVENT_TYPES.ERROR:
            held[-1] = self._failed_end(index, error, held[-1])
        for event in held:
            self._push(event)
        self._down.on_error(error)  # type: ignore[arg-type]

    def _failed_end(self, index: int | None, error: BaseException, event: ChatEvent) -> ChatEvent:
        """The failed attempt's ERROR event, its partial response listing every attempt
        and, as the usage, the sum of theirs; what ``call()`` raises carries it too."""
        partial = event.response
        response = self._with_attempts(
            index, partial if partial is not None else ChatResponse(usage=event.usage)
        )
        with contextlib.suppress(AttributeError, TypeError):
            error.partial_response = response  # type: ignore[attr-defined]
        return _carrying(event, response)

    def _completed(self, index: int) -> None:
        with self._lock:
            state = self._states[index]
            if self.ended or state.state not in (_RUNNING, _WON):
                return
            if state.state == _RUNNING:  # ended without an answer event: it answered nothing
                self._win(index)
            self._told_end(index, None)
            if self._held_end is not None:  # completes once its RESPONSE_END is delivered
                self._completed_after_end = True
                return
            self.ended = True
            self._down.on_completed()

    def _push(self, event: ChatEvent) -> None:
        self._down.on_next(event)


def _carrying(event: ChatEvent, response: ChatResponse) -> ChatEvent:
    """``event`` (a terminal event) carrying ``response`` and, as its ``usage``, the
    response's: one number for the response, whichever way it is read."""
    return event.evolve(response=response, usage=response.usage)


def _tagged(event: ChatEvent, label: str) -> ChatEvent:
    """``event`` with ``attrs["model"]`` set to ``label`` (a nested group's STATUS event
    names its own member already)."""
    if "model" in event.attrs:
        return event
    return event.evolve(attrs={**event.attrs, "model": label})


def total_usage(attempts: Sequence[Attempt]) -> Usage | None:
    """The sum of the attempts' usage (None when none reported any)."""
    total: Usage | None = None
    for attempt in attempts:
        if attempt.usage is not None:
            total = attempt.usage if total is None else total + attempt.usage
    return total
