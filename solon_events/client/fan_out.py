"""Fan-out: one prompt asked of several models at once, their events merged (RxPY's
``merge``), their responses side by side.

``fan_out(gpt, claude).prompt("Why is the sky blue?")`` is a :class:`FanOutPrompt`: chain
``tools()``, ``options()``, ``event_filter()``... as on a ChatPrompt (each model gets the
same request), then

- ``stream()`` / ``astream()``: every model's whole response (its own RESPONSE_START,
  steps, usage and terminal event, its own response id), merged as they arrive; every
  event carries its model's label in ``attrs["model"]``. A model that fails ends its own
  response with its ERROR event; the merged stream goes on with the others and completes
  when every model has ended (an exception the subscriber raises from its callbacks ends
  it at once, every request stopped);
- ``call()`` / ``acall()``: a :class:`FanOutResponses`, each model's
  :class:`~solon_events.ChatResponse` (or its failure) by label, shown side by side in
  Jupyter.

A model's label is its model name (``name@host:port`` when two share it); name them
yourself with keywords: ``fan_out(fast=small_model, smart=big_model)``. A member may be a
:class:`~solon_events.ModelGroup` (a fallback chain answers as one column).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import attrs
from reactivex import Observable, abc
from reactivex import create as rx_create
from reactivex.disposable import CompositeDisposable

from ..event_model.approvals import PendingApproval
from ..event_model.errors import ChatError
from ..event_model.events import EVENT_TYPES, ChatEvent
from ..event_model.messages import Message, ToolSpec
from ..event_model.results import ChatResponse
from ..event_model.steps import PrepareStep, StopCondition
from ..support.safe_callbacks import raised_by
from ..tools import Tool, ToolSet
from .model import ChatModel, ChatPrompt
from .routing import ModelGroup, _labels, _member_prompt

__all__ = ["FanOut", "FanOutPrompt", "FanOutResponses", "fan_out"]

Member = ChatModel | ModelGroup


def fan_out(*models: Member, **named: Member) -> FanOut:
    """Several models asked the same prompt at once: see the module docs. Models given by
    keyword are labelled by their keyword."""
    members = [*models, *named.values()]
    if len(members) < 2:
        raise ValueError("fan_out needs at least two models")
    for member in members:
        if not isinstance(member, (ChatModel, ModelGroup)):
            raise TypeError(f"fan_out takes ChatModels, not {type(member).__name__}")
    labels = list(_labels(models)) + list(named)
    if len(set(labels)) != len(labels):
        raise ValueError(f"fan_out's labels must differ, got {labels}")
    return FanOut(tuple(members), tuple(labels))


@attrs.frozen
class FanOut:
    """Models asked together (made by :func:`fan_out`); ``labels`` name them in order."""

    members: tuple[Member, ...]
    labels: tuple[str, ...]

    def prompt(
        self, text_or_messages: str | Message | Iterable[Any] | PendingApproval
    ) -> FanOutPrompt:
        """The same request for every model; chain options, then ``stream``/``call``."""
        template = self.members[0].prompt(text_or_messages)
        return FanOutPrompt(self, template)

    def close(self) -> None:
        """Close every model (see :meth:`ChatModel.close`)."""
        for member in self.members:
            member.close()

    def __enter__(self) -> FanOut:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


@attrs.frozen
class FanOutPrompt:
    """A request for every model of a :class:`FanOut` (every chained method returns a new
    one, as ChatPrompt's do)."""

    fan: FanOut
    _template: ChatPrompt

    def _with(self, template: ChatPrompt) -> FanOutPrompt:
        return attrs.evolve(self, template=template)

    def tools(self, *tools: Tool | ToolSet | Callable[..., Any]) -> FanOutPrompt:
        """See :meth:`ChatPrompt.tools`: every model may call them (each runs its own)."""
        return self._with(self._template.tools(*tools))

    def client_tools(self, *specs: ToolSpec) -> FanOutPrompt:
        """See :meth:`ChatPrompt.client_tools`."""
        return self._with(self._template.client_tools(*specs))

    def options(self, **provider_options: Any) -> FanOutPrompt:
        """See :meth:`ChatPrompt.options`."""
        return self._with(self._template.options(**provider_options))

    def event_filter(self, event_filter: Callable[[ChatEvent], bool]) -> FanOutPrompt:
        """See :meth:`ChatPrompt.event_filter` (applied to each model's events)."""
        return self._with(self._template.event_filter(event_filter))

    def auto_tool_call(self, flag: bool = True) -> FanOutPrompt:
        """See :meth:`ChatPrompt.auto_tool_call`."""
        return self._with(self._template.auto_tool_call(flag))

    def stop_when(self, *conditions: StopCondition) -> FanOutPrompt:
        """See :meth:`ChatPrompt.stop_when`."""
        return self._with(self._template.stop_when(*conditions))

    def prepare_step(self, function: PrepareStep | None) -> FanOutPrompt:
        """See :meth:`ChatPrompt.prepare_step`."""
        return self._with(self._template.prepare_step(function))

    def partial_arguments(self, flag: bool = True) -> FanOutPrompt:
        """See :meth:`ChatPrompt.partial_arguments`."""
        return self._with(self._template.partial_arguments(flag))

    def prompts(self) -> dict[str, ChatPrompt]:
        """The request of each model, by label."""
        return {
            label: _member_prompt(
                self._template,
                member,
                response_id=None,
                event_filter=self._template._event_filter,
                continuation=None,
            )
            for label, member in zip(self.fan.labels, self.fan.members)
        }

    def stream(self) -> Observable[ChatEvent]:
        """Every model's response, merged (each event with ``attrs["model"]``): a cold
        Observable, each subscription a new request to each model."""
        prompts = self.prompts()

        def subscribe(
            observer: abc.ObserverBase[ChatEvent], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            return _Merge(prompts, observer).subscription

        return rx_create(subscribe)

    async def astream(self) -> AsyncIterator[ChatEvent]:
        """Every model's response on the caller's loop, merged as the events arrive (each
        with ``attrs["model"]``); leaving early stops every request."""
        queue: asyncio.Queue[ChatEvent | None] = asyncio.Queue()

        async def pump(label: str, prompt: ChatPrompt) -> None:
            try:
                async for event in prompt.astream():
                    queue.put_nowait(_tagged(event, label))
            except ChatError:
                pass  # its ERROR event said it
            finally:
                queue.put_nowait(None)

        loop = asyncio.get_running_loop()
        tasks = [loop.create_task(pump(label, p)) for label, p in self.prompts().items()]
        running = len(tasks)
        try:
            while running:
                event = await queue.get()
                if event is None:
                    running -= 1
                    continue
                yield event
            for task in tasks:
                task.result()  # anything but a ChatError: raised here
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    def call(self) -> FanOutResponses:
        """Block until every model has ended; their responses side by side."""
        collected = _Collected(self.fan.labels)
        done = threading.Event()
        errors: list[Exception] = []

        def on_error(error: Exception) -> None:
            errors.append(error)
            done.set()

        subscription = self.stream().subscribe(collected.add, on_error, done.set)
        try:
            done.wait()
        finally:
            subscription.dispose()
        if errors:
            raise errors[0]
        return collected.responses()

    async def acall(self) -> FanOutResponses:
        """:meth:`call` on the caller's loop (as :meth:`astream` runs it)."""
        collected = _Collected(self.fan.labels)
        async for event in self.astream():
            collected.add(event)
        return collected.responses()


class _Merge:
    """One subscription of :meth:`FanOutPrompt.stream`: every model's stream (delivered on
    its I/O thread) into ``observer``, one event at a time."""

    def __init__(
        self, prompts: Mapping[str, ChatPrompt], observer: abc.ObserverBase[ChatEvent]
    ) -> None:
        self._observer = observer
        self._lock = threading.RLock()
        self._running = len(prompts)
        self._ended = False
        self.subscription = CompositeDisposable()
        for label, prompt in prompts.items():
            self.subscription.add(
                prompt.stream().subscribe(self._on_next(label), self._on_error, self._on_completed)
            )

    def _on_next(self, label: str) -> Callable[[ChatEvent], None]:
        def on_next(event: ChatEvent) -> None:
            with self._lock:
                if not self._ended:
                    self._observer.on_next(_tagged(event, label))

        return on_next

    def _on_error(self, error: Exception) -> None:
        with self._lock:
            if self._ended:
                return
            if raised_by(error, self._observer) or not isinstance(error, ChatError):
                self._ended = True
                self.subscription.dispose()
                self._observer.on_error(error)
                return
        self._on_completed()  # its ERROR event said it

    def _on_completed(self) -> None:
        with self._lock:
            self._running -= 1
            if self._running or self._ended:
                return
            self._ended = True
        self._observer.on_completed()


def _tagged(event: ChatEvent, label: str) -> ChatEvent:
    return event.evolve(attrs={**event.attrs, "model": label})


class _Collected:
    """Each model's RESPONSE_END response or ERROR failure, from the merged events."""

    def __init__(self, labels: Sequence[str]) -> None:
        self._labels = labels
        self._responses: dict[str, ChatResponse] = {}
        self._errors: dict[str, Exception] = {}

    def add(self, event: ChatEvent) -> None:
        label = str(event.attrs.get("model"))
        if event.type is EVENT_TYPES.RESPONSE_END and event.response is not None:
            self._responses[label] = event.response
        elif event.type is EVENT_TYPES.ERROR and isinstance(event.error, Exception):
            self._errors[label] = event.error

    def responses(self) -> FanOutResponses:
        return FanOutResponses(self._labels, self._responses, self._errors)


class FanOutResponses(Mapping[str, ChatResponse]):
    """Each model's response by label (a read-only mapping, in the order of the models),
    and :attr:`errors`, the failure of each model that failed. Shown side by side in
    Jupyter (``_repr_html_``)."""

    def __init__(
        self,
        labels: Sequence[str],
        responses: Mapping[str, ChatResponse],
        errors: Mapping[str, Exception],
    ) -> None:
        self.labels: tuple[str, ...] = tuple(labels)
        self._responses = {label: responses[label] for label in labels if label in responses}
        self.errors: Mapping[str, Exception] = {
            label: errors[label] for label in labels if label in errors
        }
        """The failure of each model that failed, by label."""

    def __getitem__(self, label: str) -> ChatResponse:
        return self._responses[label]

    def __iter__(self) -> Iterator[str]:
        return iter(self._responses)

    def __len__(self) -> int:
        return len(self._responses)

    def texts(self) -> dict[str, str]:
        """Each answering model's text, by label."""
        return {label: response.text for label, response in self._responses.items()}

    def __repr__(self) -> str:
        parts = [f"{label}: {_short(self._responses[label].text)!r}" for label in self._responses]
        parts += [f"{label}: failed ({type(e).__name__})" for label, e in self.errors.items()]
        return f"FanOutResponses({', '.join(parts)})"

    def _repr_html_(self) -> str:
        from ..display.html import side_by_side_html

        return side_by_side_html(
            [(label, self._responses.get(label) or self.errors.get(label)) for label in self.labels]
        )


def _short(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[:limit] + "..."
