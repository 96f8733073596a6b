"""Many models as one: fallback chains, hedged requests and races.

``primary.fallback(backup)`` is a model whose prompts ask ``primary`` and, should it fail
before its first answer event, ``backup`` (RxPY's ``catch``); ``primary.hedge(backup,
after=0.5)`` also asks ``backup`` when ``primary`` has not answered 0.5 s after it was
asked, and the first to answer wins (RxPY's ``amb``, the loser disposed and its connection
closed); :func:`race` asks every model at once. Each is a :class:`ModelGroup`, whose
:meth:`~ModelGroup.prompt` gives a :class:`~solon_events.ChatPrompt` like a ChatModel's:
chain ``tools()``, ``options()``, ``event_filter()``... then ``stream()``, ``astream()``,
``call()`` or ``acall()``. Groups nest (``primary.hedge(backup, after=1).fallback(third)``).

What the subscriber sees (the invariants of SPEC section 11):

- one response: one RESPONSE_START, then the events of the attempt that answered first,
  its steps numbered from 0, every event stamped with the response's id, one terminal
  event; no event of an attempt after it was abandoned;
- an attempt is held back until its first *answer* event (text, thinking, a tool call,
  a citation, RESPONSE_END, ...: anything but the lifecycle, STEP_START/STEP_END, STATUS,
  HEARTBEAT, USAGE, RAW and ERROR), so nothing is ever shown twice; only its STATUS events
  (a retry's) pass at once, with ``attrs["model"]``;
- each abandoned attempt is announced by a STATUS event before the next attempt's events:
  ``sub_type="fallback"`` for one that failed (``text`` names the model and the redacted
  reason; ``attrs``: ``model``, ``attempt`` (its position), ``error`` (the class name),
  ``status`` (an HTTP status or None), ``reason``, ``mode``), ``sub_type="hedge"`` for
  one that had not answered when another did (``attrs``: ``model``, ``attempt``,
  ``winner``);
- when every member failed (or ``on`` declined a failure), the response fails with the
  last failure: the failed attempt's STEP_START/STEP_END, its ERROR event, then
  ``on_error``.

``on`` says which failures let the next member be asked: an exception class or a tuple
of them (``on=(ChatHttpError, ChatTimeoutError)``), or a predicate of the
:class:`~solon_events.ChatError` (``on=lambda e: getattr(e, "status", 500) != 400``); by
default every ChatError. An exception the subscriber raised from its own callbacks is
never one: it ends the response as it does a ChatModel's.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

import attrs
from reactivex import Observable, abc
from reactivex import create as rx_create
from reactivex.disposable import CompositeDisposable, Disposable
from reactivex.scheduler import TimeoutScheduler

from ..core.attempts import (
    AttemptArbiter,
    AttemptPolicy,
    Continuation,
    MidStream,
    every_chat_error,
)
from ..core.session import new_response_id
from ..core.stages import GuardStage, Sink
from ..event_model.approvals import PendingApproval
from ..event_model.events import EVENT_TYPES, ChatEvent
from ..event_model.filters import ChatEventFilter
from ..event_model.messages import Message, to_messages
from ..event_model.results import Usage, UsageReport
from ..support.async_iterators import aclose
from ..support.safe_callbacks import raised_by
from .cache import CacheMode, ResponseCache, cache_of
from .prompt import ChatPrompt, _Gathered

if TYPE_CHECKING:
    from ..dialects.base import ChatDialect
    from ..telemetry.groups import GroupSpan
    from .model import ChatModel

__all__ = ["ErrorCondition", "FallbackModel", "HedgedModel", "ModelGroup", "race"]

_TERMINAL = frozenset({EVENT_TYPES.RESPONSE_END, EVENT_TYPES.ERROR, EVENT_TYPES.ABORT})
_Self = TypeVar("_Self", bound="_Combinable")

ErrorCondition = type[BaseException] | tuple[type[BaseException], ...] | Callable[[Any], bool]
"""Which failures let the next member be asked: exception classes or a predicate."""


class _Combinable:
    """What a response is asked of, combined with others by :meth:`fallback` and
    :meth:`hedge`: the base of :class:`~solon_events.ChatModel` and :class:`ModelGroup`."""

    def fallback(
        self,
        other: ChatModel | ModelGroup,
        *more: ChatModel | ModelGroup,
        on: ErrorCondition | None = None,
        mid_stream: MidStream = "never",
    ) -> FallbackModel:
        """A model that asks this one (a model or a group) and, should it fail before its
        first answer event, ``other`` (then each of ``more`` in turn): RxPY's ``catch``.
        ``on`` says which failures fall back (exception classes, or a predicate of the
        ChatError; default: every ChatError); ``mid_stream="restart"`` asks the next one
        again after a failure mid-answer, ``mid_stream="continue"`` asks it to continue the
        text so far where its dialect takes an assistant prefill (see
        :class:`~solon_events.FallbackModel`). Each failed attempt is a STATUS event
        (``sub_type="fallback"``) naming the model and why. See
        :mod:`solon_events.client.routing`."""
        first = cast("ChatModel | ModelGroup", self)
        return FallbackModel(first, other, *more, on=on, mid_stream=mid_stream)

    def hedge(
        self,
        other: ChatModel | ModelGroup,
        *more: ChatModel | ModelGroup,
        after: float,
        on: ErrorCondition | None = None,
    ) -> HedgedModel:
        """A model that asks this one and, when it has not answered ``after`` seconds
        later, ``other`` too (then each of ``more``, ``after`` apart): the first to answer
        wins, the others are stopped at once and their connections closed (RxPY's
        ``amb``). A member that fails first falls back to the next at once. See
        :mod:`solon_events.client.routing`."""
        return HedgedModel(cast("ChatModel | ModelGroup", self), other, *more, after=after, on=on)

    def prompt(
        self,
        text_or_messages: str | Message | Iterable[Any] | PendingApproval,
        *,
        output: Any = None,
        cache: CacheMode | None = None,
    ) -> ChatPrompt:
        """A request for this model or group; chain options, then ``call``/``stream``/
        ``astream``/``acall``.

        Given a :class:`~solon_events.event_model.approvals.PendingApproval` (a response paused for
        tool approval), the prompt continues that response: decide its calls with
        :meth:`ChatPrompt.approve` and :meth:`ChatPrompt.deny`, offer the same tools.
        ``output`` asks for a structured answer of that type or schema
        (:meth:`ChatPrompt.output`; in a group, each attempt asks for it and checks its own
        answer); ``cache`` how the cache is used (:meth:`ChatPrompt.cache`: ``cache=False``
        asks the provider)."""
        if isinstance(text_or_messages, PendingApproval):
            pending = text_or_messages
            prompt = self._new_prompt(pending.messages, pending)
        else:
            prompt = self._new_prompt(to_messages(text_or_messages), None)
        if cache is not None:
            prompt = prompt.cache(cache)
        return prompt if output is None else prompt.output(output)

    def _new_prompt(
        self, messages: tuple[Message, ...], resume: PendingApproval | None
    ) -> ChatPrompt:
        return ChatPrompt(self, messages, resume=resume)  # type: ignore[arg-type]

    def close(self) -> None:
        """Let go of what this model or group holds (see each one's own)."""
        raise NotImplementedError

    def __enter__(self: _Self) -> _Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class ModelGroup(_Combinable):
    """Several models answering one prompt as one response (see the module docs).

    Made by :meth:`ChatModel.fallback`, :meth:`ChatModel.hedge` and :func:`race` (or the
    :class:`FallbackModel` and :class:`HedgedModel` constructors). ``members`` are the
    models in the order they are asked, ``labels`` their names in STATUS events and
    attempts (the model name; ``name@host:port`` when two members share it, then
    ``dialect:name@host:port``).
    """

    _fewest = 2  # members a group needs

    def __init__(
        self,
        members: Sequence[ChatModel | ModelGroup],
        policy: AttemptPolicy,
        *,
        kind: str,
        scheduler: abc.SchedulerBase | None = None,
        cache: Any = None,
    ) -> None:
        if len(members) < self._fewest:
            raise ValueError(
                f"{kind} needs at least {'two models' if self._fewest == 2 else 'one model'}"
            )
        for member in members:
            if not isinstance(member, _Combinable):
                raise TypeError(
                    f"{kind} takes ChatModels (or groups of them), not {type(member).__name__}"
                )
        self.members: tuple[ChatModel | ModelGroup, ...] = tuple(members)
        self.policy = policy
        self.labels: tuple[str, ...] = _labels(self.members)
        self._kind = kind
        self._scheduler = scheduler
        self.cache: ResponseCache | None
        """The group's response cache (None: none; see :mod:`solon_events.client.cache`):
        a hit answers the group's prompt without asking any member."""
        self.cache, self._own_cache = cache_of(cache)

    @property
    def name(self) -> str:
        """How this group is named as a member of another: ``fallback(a, b)``."""
        return f"{self._kind}({', '.join(self.labels)})"

    @property
    def model(self) -> str:
        """The first member's model name (what a response is asked of first)."""
        return self.members[0].model

    @property
    def dialect(self) -> ChatDialect:
        """The first member's dialect (what a request's provider options are written
        for)."""
        return self.members[0].dialect

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(map(repr, self.members))})"

    prompt = _Combinable.prompt  # documented with the group's own methods

    def _new_prompt(
        self, messages: tuple[Message, ...], resume: PendingApproval | None
    ) -> ChatPrompt:
        return _GroupPrompt(self, messages, resume=resume)  # type: ignore[arg-type]

    @property
    def assistant_prefill(self) -> bool:
        """Whether every model of the group continues a trailing assistant turn (see
        ``mid_stream="continue"``)."""
        return all(model.dialect.assistant_prefill for model in self.leaves())

    fallback = _Combinable.fallback  # documented with the group's own methods
    hedge = _Combinable.hedge

    def leaves(self) -> tuple[ChatModel, ...]:
        """Every ChatModel of the group (nested groups' included), in order."""
        found: list[ChatModel] = []
        for member in self.members:
            found.extend(member.leaves() if isinstance(member, ModelGroup) else (member,))
        return tuple(found)

    def close(self) -> None:
        """Close every member model (see :meth:`ChatModel.close`), and the cache the group
        made."""
        for model in self.leaves():
            model.close()
        if self._own_cache and self.cache is not None:
            self.cache.close()

    def _arbiter_options(self) -> dict[str, Any]:
        """What a response's :class:`~solon_events.core.attempts.AttemptArbiter` is given
        besides the group's members and policy (a router's skipped members and watch)."""
        return {}

    def _telemetry_options(self) -> dict[str, Any] | None:
        """The telemetry options of the group's span: its first model's that records
        telemetry (None: no span)."""
        for model in self.leaves():
            if model.telemetry:
                return dict(model._telemetry or {})
        return None

    @property
    def _io(self) -> _LoopThreads:
        """What ``ChatPrompt.call()`` asks whether it runs on an I/O thread."""
        return _LoopThreads(self.leaves())

    # --- the edges

    def _stream(self, prompt: ChatPrompt) -> Observable[ChatEvent]:
        def subscribe(
            observer: abc.ObserverBase[ChatEvent], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            run = _RxRun(self, prompt, observer, self._scheduler or TimeoutScheduler.singleton())
            return Disposable(run.dispose)

        return rx_create(subscribe)

    def _astream(self, prompt: ChatPrompt) -> AsyncIterator[ChatEvent]:
        return _AsyncRun(self, prompt).events()


class FallbackModel(ModelGroup):
    """``primary``, then each of ``fallbacks`` in turn, each asked only when the one before
    failed before its first answer event and ``on`` allows it (see the module docs).

    ``mid_stream`` says what a failure after the first answer event does: ``"never"``
    (the default) ends the response with it; ``"restart"`` asks the next member again
    from the start of the failed step: the subscriber has seen that step's events up to
    the failure and its STEP_END (the partial response), then sees a STATUS event
    (``sub_type="fallback"``, ``attrs["mode"] == "restart"``, the abandoned text in
    ``attrs["abandoned_text"]``), then the next member's steps, numbered on from the
    failed one; the steps before it are kept (their tools are not run again), and
    RESPONSE_END carries the last member's answer. A tool's failure
    (:class:`~solon_events.ToolCallError`) is never restarted.

    ``"continue"`` asks the next member to continue the failed step's text instead: it is
    sent that text (trailing whitespace left out) as a trailing assistant turn, an
    assistant prefill, which a member takes when its dialect does
    (:attr:`~solon_events.dialects.base.ChatDialect.assistant_prefill`: Anthropic,
    Ollama, an OpenAI-compatible server declared to with ``OpenAIDialect(prefill=...)``; a
    group when each of its models does). The subscriber
    has seen the failed step's events and its STEP_END (the partial response), then sees a
    STATUS event (``sub_type="fallback"``, ``attrs["mode"] == "continue"``, the text
    continued in ``attrs["continued_text"]``), then the next member's step, numbered on,
    whose text deltas are the rest of the text: appended to what was seen, never repeated
    (the whitespace already shown is dropped from its first deltas). That step's STEP_END
    and RESPONSE_END carry the whole text (continued text + continuation), once; every
    attempt is on ``ChatResponse.attempts`` with its usage. The failed step is restarted
    instead (``attrs["mode"] == "restart"``, ``attrs["not_continued"]`` saying why) when it
    cannot be continued: it had begun anything but text (a tool call, thinking:
    ``"not text alone"``), it had no text (``"no text"``), or the next member takes no
    prefill (``"no prefill"``; also when a member asked to continue fails before answering
    and the one after it takes no prefill: the STATUS event of that failure then says
    ``"restart"``).
    """

    def __init__(
        self,
        primary: ChatModel | ModelGroup,
        *fallbacks: ChatModel | ModelGroup,
        on: ErrorCondition | None = None,
        mid_stream: MidStream = "never",
    ) -> None:
        if mid_stream not in ("never", "restart", "continue"):
            raise ValueError(
                f"mid_stream must be 'never', 'restart' or 'continue', got {mid_stream!r}"
            )
        policy = AttemptPolicy(after=None, on=_condition(on), mid_stream=mid_stream)
        super().__init__((primary, *fallbacks), policy, kind="fallback")


class HedgedModel(ModelGroup):
    """``primary`` and, each time no member has answered ``after`` seconds after the last
    was asked, the next of ``others``; the first to answer wins and the others are
    stopped at once (their connections closed). A member that fails before answering is
    announced and the next one asked at once (when ``on`` allows it). ``after=0`` asks
    every member at once (:func:`race`). ``scheduler`` (a reactivex scheduler) times the
    delays of ``stream()`` (default: a thread timer); ``astream()`` uses its own loop.
    """

    def __init__(
        self,
        primary: ChatModel | ModelGroup,
        *others: ChatModel | ModelGroup,
        after: float,
        on: ErrorCondition | None = None,
        scheduler: abc.SchedulerBase | None = None,
    ) -> None:
        if isinstance(after, bool) or not isinstance(after, (int, float)) or not after >= 0:
            raise ValueError(f"after must be a number of seconds >= 0, got {after!r}")
        policy = AttemptPolicy(after=float(after), on=_condition(on))
        super().__init__(
            (primary, *others), policy, kind="race" if after == 0 else "hedge", scheduler=scheduler
        )


def race(
    first: ChatModel | ModelGroup,
    second: ChatModel | ModelGroup,
    *more: ChatModel | ModelGroup,
    on: ErrorCondition | None = None,
) -> HedgedModel:
    """Every model asked at once; the first to answer wins, the others are stopped at once
    (RxPY's ``amb``). A :class:`HedgedModel` with ``after=0``."""
    return HedgedModel(first, second, *more, after=0, on=on)


def _condition(on: ErrorCondition | None) -> Callable[[BaseException], bool]:
    """``on`` as a predicate of the failure."""
    if on is None:
        return every_chat_error
    if isinstance(on, type) and issubclass(on, BaseException):
        classes: tuple[type[BaseException], ...] = (on,)
    elif (
        isinstance(on, tuple)
        and on
        and all(isinstance(c, type) and issubclass(c, BaseException) for c in on)
    ):
        classes = on
    elif callable(on):
        return cast(Callable[[BaseException], bool], on)
    else:
        raise TypeError(
            "on takes an exception class, a tuple of them, or a predicate of the ChatError; "
            f"got {on!r}"
        )

    def is_one_of(error: BaseException) -> bool:
        return isinstance(error, classes)

    return is_one_of


def _labels(members: Sequence[ChatModel | ModelGroup]) -> tuple[str, ...]:
    """Each member's name: its model name (a group's ``kind(a, b)``), with where it is
    served when two members share it, then its dialect when that is shared too, and a
    number when that is shared as well."""
    from urllib.parse import urlsplit

    names = [m.name if isinstance(m, ModelGroup) else m.model for m in members]
    for where in ("host", "dialect"):
        shared = list(names)
        for i, member in enumerate(members):
            if shared.count(shared[i]) < 2 or isinstance(member, ModelGroup):
                continue
            if where == "host":
                url = urlsplit(member.api_url)
                names[i] = f"{names[i]}@{url.hostname}:{url.port or ''}".rstrip(":")
            else:
                names[i] = f"{member.dialect.name}:{names[i]}"
    seen: dict[str, int] = {}
    labels = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        labels.append(name if names.count(name) == 1 else f"{name}#{seen[name]}")
    return tuple(labels)


@attrs.frozen
class _GroupPrompt(ChatPrompt):
    """A prompt of a :class:`ModelGroup`: each attempt is the same prompt of one member.
    ``on_stopped``: told the sum of its attempts' usage when the response is stopped (the
    group is a member of another, which abandoned it)."""

    _on_stopped: Callable[[Usage | None], None] | None = None

    def _stream_uncached(self) -> Observable[ChatEvent]:
        return self._group._stream(self)

    def _astream_uncached(self) -> AsyncIterator[ChatEvent]:
        return self._group._astream(self)

    @property
    def _group(self) -> ModelGroup:
        return cast(ModelGroup, self._model)


class _LoopThreads:
    """The I/O threads of a group's models, as ``ChatPrompt.call()`` asks about them."""

    def __init__(self, models: Sequence[ChatModel]) -> None:
        self._models = models

    def in_loop_thread(self) -> bool:
        return any(model._io.in_loop_thread() for model in self._models)


_PROMPT_FIELDS: tuple[tuple[str, str], ...] = tuple(
    (a.name, a.alias or a.name) for a in attrs.fields(ChatPrompt)
)


def _member_prompt(
    prompt: ChatPrompt,
    member: ChatModel | ModelGroup,
    *,
    response_id: str | None,
    event_filter: Callable[[ChatEvent], bool] | None,
    continuation: Continuation | None,
) -> ChatPrompt:
    """``prompt`` asked of ``member``: the same messages, tools and options, the response
    id (None: its own), ``event_filter`` for what is delivered of it."""
    values: dict[str, Any] = {alias: getattr(prompt, name) for name, alias in _PROMPT_FIELDS}
    values.update(model=member, response_id=response_id, event_filter=event_filter)
    if continuation is not None:
        values.update(messages=continuation.messages, first_step=continuation.first_step)
    cls = _GroupPrompt if isinstance(member, ModelGroup) else ChatPrompt
    return cls(**values)


class _Plan:
    """What both edges of one group response share: the arbiter's settings and each
    member's prompt."""

    def __init__(self, group: ModelGroup, prompt: ChatPrompt, down: Sink) -> None:
        self.group = group
        self.prompt = prompt
        self.response_id = prompt._response_id or new_response_id()
        self.redact = _redactor(group)
        self.trace: GroupSpan | None = None
        options = group._telemetry_options()
        if options is not None:
            from ..telemetry.groups import GroupSpan

            self.trace = GroupSpan(
                options,
                kind=group._kind,
                labels=group.labels,
                model=group.model,
                response_id=self.response_id,
                redact=self.redact,
            )
            down = _Traced(down, self)
        self.arbiter_: AttemptArbiter | None = None
        user_filter = prompt._event_filter
        self.filtered = user_filter is not None
        if user_filter is None:
            self.attempt_filter: Callable[[ChatEvent], bool] | None = None
            self.down: Sink = down
        else:
            types = getattr(user_filter, "types", None)
            self.attempt_filter = (
                ChatEventFilter.DEFAULT.or_(user_filter)
                if isinstance(types, frozenset)
                else ChatEventFilter.all()
            )
            self.down = GuardStage(down, user_filter)

    def member_prompt(self, index: int, continuation: Continuation | None) -> ChatPrompt:
        """Member ``index``'s prompt; a model's tells the arbiter its usage when it ends
        (the usage of an attempt abandoned for another)."""
        member = self.group.members[index]
        prompt = _member_prompt(
            self.prompt,
            member,
            response_id=self.response_id,
            event_filter=self.attempt_filter,
            continuation=continuation,
        )
        arbiter = self.arbiter_
        if arbiter is None:
            return prompt
        if isinstance(member, ModelGroup):  # its members tell its own arbiter, which tells
            return attrs.evolve(  # the sum of theirs when it is stopped
                cast(_GroupPrompt, prompt),
                on_stopped=lambda usage: arbiter.usage_reported(index, usage),
            )

        def reported(report: UsageReport) -> None:
            arbiter.usage_reported(index, report.usage)

        return prompt.on_usage(reported)

    def arbiter(
        self, driver: Any, theirs: Callable[[BaseException], bool] = lambda _e: False
    ) -> AttemptArbiter:
        self.arbiter_ = AttemptArbiter(
            self.down,
            self.group.labels,
            self.group.policy,
            driver,
            response_id=self.response_id,
            messages=self.prompt._messages,
            theirs=theirs,
            redact=self.redact,
            prefills=[_takes_prefill(member) for member in self.group.members],
            **self.group._arbiter_options(),
            on_stopped=getattr(self.prompt, "_on_stopped", None),
        )
        return self.arbiter_

    def start(
        self,
        start: Callable[[int, Continuation | None], None],
        index: int,
        continuation: Continuation | None,
    ) -> None:
        """``start(index, continuation)``, with the group's span current when it has one
        (the attempt's own span is its child)."""
        if self.trace is None:
            start(index, continuation)
        else:
            self.trace.run(start, index, continuation)

    def end_trace(self, error: BaseException | None = None, *, cancelled: bool = False) -> None:
        """End the group's span, if any (once)."""
        arbiter = self.arbiter_
        if self.trace is None or arbiter is None:
            return
        winner = arbiter.winner
        self.trace.end(
            arbiter.attempts,
            self.group.labels[winner] if winner is not None else None,
            error,
            cancelled=cancelled,
        )


class _Traced:
    """In front of the group's subscriber: ends the group's span with the response."""

    def __init__(self, down: Sink, plan: _Plan) -> None:
        self.on_next = down.on_next
        self._down = down
        self._plan = plan

    def on_error(self, error: Exception) -> None:
        self._plan.end_trace(error)
        self._down.on_error(error)

    def on_completed(self) -> None:
        self._plan.end_trace()
        self._down.on_completed()


def _takes_prefill(member: ChatModel | ModelGroup) -> bool:
    """Whether ``member`` continues a trailing assistant turn (its dialect's say)."""
    if isinstance(member, ModelGroup):
        return member.assistant_prefill
    return member.dialect.assistant_prefill


def _redactor(group: ModelGroup) -> Callable[[str], str]:
    redactors = [model._redactor for model in group.leaves()]

    def redact(text: str) -> str:
        for redactor in redactors:
            text = redactor.text(text)
        return text

    return redact


class _RxRun:
    """One subscription of a group prompt's ``stream()``: each attempt a subscription of a
    member's ``stream()`` (delivered on that member's I/O thread), the hedge's delays on
    ``scheduler``."""

    def __init__(
        self,
        group: ModelGroup,
        prompt: ChatPrompt,
        observer: abc.ObserverBase[ChatEvent],
        scheduler: abc.SchedulerBase,
    ) -> None:
        self._plan = _Plan(group, prompt, observer)
        self._scheduler = scheduler
        self._lock = threading.Lock()
        self._subscriptions: dict[int, abc.DisposableBase] = {}
        self._stopped: set[int] = set()
        self._timers = CompositeDisposable()
        self._arbiter = self._plan.arbiter(self, theirs=lambda e: raised_by(e, observer))
        self._arbiter.open()

    def start(self, index: int, continuation: Continuation | None) -> None:
        self._plan.start(self._subscribe, index, continuation)

    def _subscribe(self, index: int, continuation: Continuation | None) -> None:
        sink = self._arbiter.sink(index)
        source = self._plan.member_prompt(index, continuation).stream()
        subscription = source.subscribe(sink.on_next, sink.on_error, sink.on_completed)
        with self._lock:
            stopped = index in self._stopped
            if not stopped:
                self._subscriptions[index] = subscription
        if stopped:
            subscription.dispose()

    def stop(self, index: int) -> None:
        with self._lock:
            self._stopped.add(index)
            subscription = self._subscriptions.pop(index, None)
        if subscription is not None:
            subscription.dispose()

    def later(self, seconds: float, callback: Callable[[], None]) -> None:
        def action(_scheduler: abc.SchedulerBase, _state: Any = None) -> None:
            callback()

        self._timers.add(self._scheduler.schedule_relative(seconds, action))

    def dispose(self) -> None:
        self._timers.dispose()
        self._arbiter.dispose()
        self._plan.end_trace(cancelled=True)


class _AsyncRun:
    """One group prompt's ``astream()`` on the caller's loop: each attempt a member's
    ``astream()`` read by a task of its own until one answers; the consumer then reads the
    winner's iterator itself (no task, queue or hop per event from there on)."""

    def __init__(self, group: ModelGroup, prompt: ChatPrompt) -> None:
        self._group = group
        self._prompt = prompt
        self._tasks: dict[int, asyncio.Task[None]] = {}
        self._started: list[asyncio.Task[None]] = []
        self._iterators: dict[int, AsyncIterator[ChatEvent]] = {}
        self._timers: list[asyncio.TimerHandle] = []
        self._handed: tuple[int, AsyncIterator[ChatEvent]] | None = None

    def start(self, index: int, continuation: Continuation | None) -> None:
        self._plan.start(self._spawn, index, continuation)

    def _spawn(self, index: int, continuation: Continuation | None) -> None:
        """A task reading member ``index``'s attempt (it copies the context current now)."""
        events = self._plan.member_prompt(index, continuation).astream()
        self._iterators[index] = events
        task = self._tasks[index] = self._loop.create_task(self._pump(index, events))
        self._started.append(task)

    def stop(self, index: int) -> None:
        task = self._tasks.pop(index, None)
        if task is not None and not task.done():
            task.cancel()  # the read it awaits is cancelled: its connection closes

    def later(self, seconds: float, callback: Callable[[], None]) -> None:
        def wake() -> None:
            callback()
            self._wake.set()  # what it delivered is for the consumer to read

        self._timers.append(self._loop.call_later(seconds, wake))

    async def _pump(self, index: int, events: AsyncIterator[ChatEvent]) -> None:
        """Read attempt ``index`` into the arbiter until it ends or wins."""
        sink = self._arbiter.sink(index)
        arbiter = self._arbiter
        try:
            while True:
                try:
                    event = await events.__anext__()
                except StopAsyncIteration:
                    sink.on_completed()
                    return
                except Exception as error:
                    sink.on_error(error)
                    return
                sink.on_next(event)
                if arbiter.winner == index and not arbiter.ended:
                    self._handed = (index, events)  # the consumer reads it from here
                    return
        finally:
            self._tasks.pop(index, None)
            self._wake.set()

    async def events(self) -> AsyncIterator[ChatEvent]:
        """The response's events (set up when the first is asked for, on the running loop)."""
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        self._gathered = gathered = _Gathered()
        self._plan = _Plan(self._group, self._prompt, gathered)
        self._arbiter = self._plan.arbiter(self)
        queued = gathered.events
        arbiter = self._arbiter
        straight = not self._plan.filtered
        try:
            arbiter.open()
            while True:
                if queued:
                    for event in queued:
                        yield event
                    queued.clear()
                if gathered.ended:
                    break
                handed, self._handed = self._handed, None
                if handed is None:
                    self._wake.clear()
                    if not (self._handed or queued or gathered.ended):
                        await self._wake.wait()
                    continue
                index, events = handed
                sink = arbiter.sink(index)
                while not gathered.ended:
                    try:
                        event = await events.__anext__()
                    except StopAsyncIteration:
                        sink.on_completed()
                        break
                    except Exception as error:
                        sink.on_error(error)
                        break
                    if straight and arbiter.passing and event.type not in _TERMINAL:
                        yield event
                        continue
                    sink.on_next(event)
                    for queued_event in queued:
                        yield queued_event
                    queued.clear()
        finally:
            if not gathered.ended:
                self._plan.end_trace(cancelled=True)
            await self._close()
        if gathered.error is not None:
            raise gathered.error

    async def _close(self) -> None:
        """Stop every attempt and timer; close the iterators still open."""
        for timer in self._timers:
            timer.cancel()
        self._arbiter.dispose()
        tasks = [task for task in self._started if not task.done()]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        for events in self._iterators.values():
            with contextlib.suppress(Exception):
                await aclose(events)
