"""A router: one model name over several deployments, balanced, with cooldowns.

``Router([a, b, c], strategy="weighted", weights=[3, 1, 1])`` is a model group whose
members are *deployments* (a :class:`~solon_events.ChatModel` each: a dialect, an endpoint,
a key, a model name, possibly of different providers). Each response picks the order in
which they are asked, by ``strategy``:

- ``"weighted"``: at random, in proportion to ``weights`` (then the others, the same way);
- ``"least-busy"``: the fewest requests in flight first;
- ``"latency"``: the lowest moving average of the time to the first answer event first
  (a deployment not measured yet before any);
- ``"fallback"``: in the order given;
- ``"hedge"``: in the order given, the next one also asked when none has answered
  ``hedge_after`` seconds after the last was (the first to answer wins: a
  :class:`~solon_events.HedgedModel`).

A deployment that fails in a way ``on`` allows (by default :func:`deployment_failure`:
HTTP 408, 409, 429 and 5xx, connection failures, timeouts, bodies that are no model
stream, the provider's errors in the stream) *cools down*: it is skipped for the
``Retry-After`` it answered with, else for ``cooldown`` seconds, then asked again. A
response falls through to the next healthy deployment as a
:class:`~solon_events.FallbackModel` does (a STATUS event ``sub_type="fallback"`` for each
failure before the answer); deployments that cool down are not asked and are listed on
the response's :attr:`~solon_events.ChatResponse.attempts` as ``"skipped"`` (their error
a :class:`CoolingDownError`); the deployment that answers is announced by a STATUS event
(``sub_type="routed"``, ``attrs["model"]`` its label) before its first event. When no
deployment is left to ask, the response fails with :class:`NoHealthyDeploymentError`,
which names each one's state.

The state (cooldowns, requests in flight, latency averages) is kept in the process, or
in Redis when ``state`` is a ``redis://`` URL (or a
:class:`~solon_events.client.router_state.RedisRouterState`): then every process sharing
it, the replicas of a gateway say, skips a deployment that any of them saw fail, and
counts every one's requests in flight. A router is a :class:`~solon_events.ModelGroup`:
``router.prompt(...)`` then ``stream()``, ``astream()``, ``call()`` or ``acall()``, and it
nests in other groups (``router.fallback(other)``).

Give deployments ``max_retries=0`` so that a failure moves on to the next deployment at
once rather than retrying the same one.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import threading
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, get_args

from reactivex import Observable, abc
from reactivex import create as rx_create
from reactivex.disposable import SerialDisposable

from ..core.attempts import Attempt, AttemptPolicy, MidStream
from ..event_model import errors
from ..event_model.errors import ChatError, ChatHttpError
from ..event_model.events import ChatEvent
from .metering import deployment_id
from .prompt import ChatPrompt
from .router_state import DeploymentState, MemoryRouterState, RedisRouterState, RouterState
from .routing import ErrorCondition, ModelGroup, _condition

if TYPE_CHECKING:
    from .model import ChatModel

__all__ = [
    "STRATEGIES",
    "CoolingDownError",
    "NoHealthyDeploymentError",
    "Router",
    "Strategy",
    "deployment_failure",
    "deployment_id",
]

Strategy = Literal["weighted", "least-busy", "latency", "fallback", "hedge"]
"""How a router orders its deployments for each response (see
:mod:`~solon_events.client.router`)."""

STRATEGIES: tuple[Strategy, ...] = get_args(Strategy)
"""Every strategy's name."""

COOLDOWN = 5.0
"""The default seconds a failed deployment is skipped when it gave no ``Retry-After``."""


def deployment_failure(error: BaseException) -> bool:
    """The failures that are a deployment's rather than the request's (a router's default
    ``on``): HTTP 408, 409, 429 and 5xx, connection failures, timeouts, a body that is no
    model stream, an error the provider reported in the stream."""
    if isinstance(error, ChatHttpError):
        return error.status in (408, 409, 429) or error.status >= 500
    return isinstance(error, _DEPLOYMENT_FAILURES)


_DEPLOYMENT_FAILURES = (
    errors.ChatConnectionError,
    errors.ChatTimeoutError,
    errors.ChatProtocolError,
    errors.ProviderError,
)


class CoolingDownError(ChatError):
    """Why a router skipped a deployment (a ``"skipped"`` attempt's error): it cools down
    for ``cooldown`` more seconds after ``reason``."""

    def __init__(self, label: str, cooldown: float, reason: str | None) -> None:
        because = f" after {reason}" if reason else ""
        super().__init__(f"{label} cools down for {cooldown:.1f} s more{because}")
        self.cooldown = cooldown
        self.reason = reason


class NoHealthyDeploymentError(ChatError):
    """No deployment of a router could answer: every one was skipped (cooling down) or
    failed. ``states`` maps each deployment's label to its state in words (``cooling down
    for 12.0 s (HTTP 429 ...)``, ``failed: ...``); ``retry_after`` is the seconds until the
    first one comes back (None when none cools down); ``rate_limited`` whether every one
    was refused for its rate (HTTP 429). Its ``__cause__`` is the last failure, if any."""

    def __init__(
        self,
        router: str,
        states: Mapping[str, str],
        *,
        retry_after: float | None = None,
        rate_limited: bool = False,
    ) -> None:
        said = "; ".join(f"{label}: {state}" for label, state in states.items())
        super().__init__(f"no healthy deployment of {router}: {said}")
        self.states: Mapping[str, str] = dict(states)
        self.retry_after = retry_after
        self.rate_limited = rate_limited


class Router(ModelGroup):
    """One model over several deployments (see :mod:`solon_events.client.router`).

    ``deployments``: ChatModels, each asked with the prompt as it is. ``strategy``: one
    of :data:`STRATEGIES`. ``weights``: one positive number per deployment (``weighted``;
    default: equal). ``on``: which failures cool a deployment down and let the next be
    asked (exception classes or a predicate; default :func:`deployment_failure`).
    ``cooldown``: the seconds a failed deployment is skipped when its failure gave no
    ``Retry-After`` (0: it is asked again by the next request). ``hedge_after``: the
    ``hedge`` strategy's delay. ``mid_stream``: what a failure after the first answer
    event does (see :class:`~solon_events.FallbackModel`).
    ``state``: where cooldowns, counts and averages are kept: in the process (None, or a
    :class:`~solon_events.client.router_state.MemoryRouterState` to share between routers),
    in Redis (a ``redis://`` URL, or a
    :class:`~solon_events.client.router_state.RedisRouterState`). ``name``: how errors and
    other groups name the router (default: ``strategy(label, ...)``). ``rng``: the random
    numbers of ``weighted`` and of ties. ``cache``: the router's response cache, as
    ``ChatModel(cache=...)`` takes it (see :mod:`solon_events.client.cache`): a hit answers
    without asking any deployment.
    """

    _fewest = 1

    def __init__(
        self,
        deployments: Sequence[ChatModel],
        *,
        strategy: Strategy = "weighted",
        weights: Sequence[float] | None = None,
        on: ErrorCondition | None = None,
        cooldown: float = COOLDOWN,
        hedge_after: float = 1.0,
        mid_stream: MidStream = "never",
        state: RouterState | str | None = None,
        name: str | None = None,
        rng: random.Random | None = None,
        cache: Any = None,
    ) -> None:
        from .model import ChatModel

        if strategy not in STRATEGIES:
            raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}, not {strategy!r}")
        for deployment in deployments:
            if not isinstance(deployment, ChatModel):
                raise TypeError(f"a deployment is a ChatModel, not {type(deployment).__name__}")
        if weights is None:
            weights = [1.0] * len(deployments)
        weights = [float(w) for w in weights]
        if len(weights) != len(deployments) or not all(w > 0 for w in weights):
            raise ValueError("weights must be one positive number per deployment")
        if not cooldown >= 0 or not hedge_after >= 0:
            raise ValueError("cooldown and hedge_after must be numbers of seconds >= 0")
        if mid_stream not in ("never", "restart", "continue"):
            raise ValueError(
                f"mid_stream must be 'never', 'restart' or 'continue', got {mid_stream!r}"
            )
        self.strategy: Strategy = strategy
        self.weights: tuple[float, ...] = tuple(weights)
        self.cooldown = float(cooldown)
        self.hedge_after = float(hedge_after)
        self.on = on if on is not None else deployment_failure
        self._own_state = not isinstance(state, RouterState)
        if state is None:
            state = MemoryRouterState()
        elif isinstance(state, str):
            state = RedisRouterState(state)
        elif not isinstance(state, RouterState):
            raise TypeError(f"state is a RouterState or a redis:// URL, not {type(state).__name__}")
        self.state: RouterState = state
        self._rng = rng or random.Random()
        policy = AttemptPolicy(
            after=self.hedge_after if strategy == "hedge" else None,
            on=_condition(self.on),
            mid_stream=mid_stream,
            announce=True,
            exhausted=self._exhausted,
        )
        super().__init__(deployments, policy, kind=strategy, cache=cache)
        if len(set(self.labels)) != len(self.labels):  # pragma: no cover - labels are unique
            raise ValueError("two deployments have the same label")
        ids = [deployment_id(model) for model in self.leaves()]
        self.ids: tuple[str, ...] = tuple(
            id if ids.count(id) == 1 else f"{id}#{ids[:i].count(id) + 1}"
            for i, id in enumerate(ids)
        )
        """Each deployment's :func:`deployment_id` (numbered when two share one)."""
        self._name = name

    @property
    def name(self) -> str:
        """The router's name: the one given, else ``strategy(label, ...)``."""
        return self._name or super().name

    def __repr__(self) -> str:
        return f"Router({list(self.members)!r}, strategy={self.strategy!r})"

    def states(self) -> dict[str, DeploymentState]:
        """Each deployment's state now, by label (read from Redis with a Redis state:
        this blocks; :meth:`astates` awaits)."""
        found = self.state.peek(self.ids)
        if found is None:
            found = self.state.read(self.ids).result()
        return dict(zip(self.labels, found))

    async def astates(self) -> dict[str, DeploymentState]:
        """Each deployment's state now, by label, awaited on the running loop."""
        found = self.state.peek(self.ids)
        if found is None:
            found = await asyncio.wrap_future(self.state.read(self.ids))
        return dict(zip(self.labels, found))

    def order(self, states: Mapping[str, DeploymentState]) -> list[ChatModel]:
        """The deployments a response would ask, in the order it would ask them, given
        their ``states`` (by label, as :meth:`states` gives them): the strategy's order,
        the ones cooling down left out."""
        listed = [states.get(label, DeploymentState()) for label in self.labels]
        healthy = [i for i, state in enumerate(listed) if not state.cooling]
        return [self.leaves()[i] for i in self._order(healthy, listed)]

    def deployment(self, label: str) -> ChatModel:
        """The deployment labelled ``label`` (``KeyError`` when there is none)."""
        try:
            return self.leaves()[self.labels.index(label)]
        except ValueError:
            raise KeyError(label) from None

    def close(self) -> None:
        """Close every deployment, and the state the router made itself."""
        super().close()
        if self._own_state:
            self.state.close()

    # --- routing a response

    def _stream(self, prompt: ChatPrompt) -> Observable[ChatEvent]:
        def subscribe(
            observer: abc.ObserverBase[ChatEvent], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            states = self.state.peek(self.ids)
            if states is not None:
                return self._routed(states)._stream(prompt).subscribe(observer)
            subscription = SerialDisposable()

            def read(future: Any) -> None:
                if subscription.is_disposed:
                    return
                try:
                    source = self._routed(future.result())._stream(prompt)
                except Exception as error:  # a bug: the subscriber still gets its end
                    observer.on_error(error)
                    return
                subscription.disposable = source.subscribe(observer)

            self.state.read(self.ids).add_done_callback(read)
            return subscription

        return rx_create(subscribe)

    def _astream(self, prompt: ChatPrompt) -> AsyncIterator[ChatEvent]:
        states = self.state.peek(self.ids)
        if states is not None:
            return self._routed(states)._astream(prompt)
        return self._read_then_astream(prompt)

    async def _read_then_astream(self, prompt: ChatPrompt) -> AsyncIterator[ChatEvent]:
        states = await asyncio.wrap_future(self.state.read(self.ids))
        events = self._routed(states)._astream(prompt)
        async with contextlib.aclosing(events):  # type: ignore[type-var]
            async for event in events:
                yield event

    def _routed(self, states: Sequence[DeploymentState]) -> _Routed:
        """This response's group: the deployments that cool down (skipped), then the
        others in the strategy's order."""
        skipped = [i for i, state in enumerate(states) if state.cooling]
        healthy = [i for i, state in enumerate(states) if not state.cooling]
        return _Routed(self, [*skipped, *self._order(healthy, states)], states)

    def _order(self, healthy: list[int], states: Sequence[DeploymentState]) -> list[int]:
        """``healthy`` (deployment indexes) in the order the strategy asks them."""
        strategy, rng = self.strategy, self._rng
        if strategy in ("fallback", "hedge") or len(healthy) < 2:
            return healthy
        if strategy == "weighted":  # sampling without replacement, by weight
            weights = self.weights
            return sorted(healthy, key=lambda i: -(rng.random() ** (1.0 / weights[i])))
        shuffled = rng.sample(healthy, len(healthy))  # ties in a random order
        if strategy == "least-busy":
            return sorted(shuffled, key=lambda i: states[i].in_flight)
        return sorted(  # latency: the ones not measured yet first
            shuffled, key=lambda i: (states[i].latency is not None, states[i].latency or 0.0)
        )

    # --- cooldowns and the error when none is left

    def cooldown_for(self, error: BaseException) -> float:
        """The seconds a deployment that failed with ``error`` is skipped: the
        ``Retry-After`` it gave, else :attr:`cooldown`."""
        retry_after = getattr(error, "retry_after", None)
        if isinstance(retry_after, (int, float)) and retry_after > 0:
            return float(retry_after)
        return self.cooldown

    def _exhausted(self, error: BaseException, attempts: Sequence[Attempt]) -> ChatError:
        states: dict[str, str] = {}
        waits: list[float] = []
        limited = True
        for attempt in attempts:
            failure = attempt.error
            if isinstance(failure, CoolingDownError):
                states[attempt.model] = f"cooling down for {failure.cooldown:.1f} s" + (
                    f" ({failure.reason})" if failure.reason else ""
                )
                waits.append(failure.cooldown)
                limited = limited and (failure.reason or "").startswith("HTTP 429")
            elif failure is not None:
                seconds = self.cooldown_for(failure)
                states[attempt.model] = f"failed ({_reason(failure)}); cooling down for " + (
                    f"{seconds:.1f} s"
                )
                waits.append(seconds)
                limited = limited and getattr(failure, "status", None) == 429
            else:
                states[attempt.model] = attempt.outcome
        return NoHealthyDeploymentError(
            self.name, states, retry_after=min(waits) if waits else None, rate_limited=limited
        )


def _reason(error: BaseException) -> str:
    """A failure in a few words (already redacted: it comes from an attempt)."""
    if isinstance(error, ChatHttpError):
        text = f"HTTP {error.status}"
        if error.provider_message:
            text += f" {error.provider_message}"
    else:
        text = f"{type(error).__name__}: {error}"
    return text if len(text) <= 200 else text[:199] + "…"


class _Routed(ModelGroup):
    """One response of a router: its deployments in the order of this response (the
    skipped ones first), each attempt's start, answer and end told to the router's
    state."""

    _fewest = 1

    def __init__(self, router: Router, order: list[int], states: Sequence[DeploymentState]) -> None:
        super().__init__(
            [router.members[i] for i in order],
            router.policy,
            kind=router._kind,
            scheduler=router._scheduler,
        )
        self.labels = tuple(router.labels[i] for i in order)
        self._router = router
        self._ids = [router.ids[i] for i in order]
        self._skipped = {
            position: CoolingDownError(router.labels[i], states[i].cooldown, states[i].reason)
            for position, i in enumerate(order)
            if states[i].cooling
        }

    @property
    def name(self) -> str:
        return self._router.name

    def _arbiter_options(self) -> dict[str, Any]:
        return {"skipped": self._skipped, "watch": _Watch(self._router, self._ids)}


class _Watch:
    """Tells a router's state of one response's attempts (see
    :class:`~solon_events.core.attempts.AttemptWatch`)."""

    def __init__(self, router: Router, ids: Sequence[str]) -> None:
        self._router = router
        self._state = router.state
        self._ids = ids
        self._asked: dict[int, tuple[float, object]] = {}
        self._lock = threading.Lock()

    def started(self, index: int) -> None:
        lease = self._state.started(self._ids[index])
        with self._lock:
            self._asked[index] = (time.monotonic(), lease)

    def answered(self, index: int) -> None:
        with self._lock:
            asked = self._asked.get(index)
        if asked is not None:
            self._state.answered(self._ids[index], time.monotonic() - asked[0])

    def ended(self, index: int, error: BaseException | None) -> None:
        with self._lock:
            asked = self._asked.pop(index, None)
        id = self._ids[index]
        if asked is not None:
            self._state.ended(id, asked[1])
        router = self._router
        if error is not None and _holds(router.policy.on, error):
            self._state.cool(id, router.cooldown_for(error), _reason(error))


def _holds(condition: Any, error: BaseException) -> bool:
    try:
        return bool(condition(error))
    except Exception:
        return False
