"""The models a gateway serves, by the name a client asks for.

A :class:`ModelTable` maps each name to a model: a :class:`~solon_events.Router` over the
deployments of a ``[models.NAME]`` section (:func:`build_table`), or any ChatModel or
group. A table of one model given on the command line (``--upstream/--model``) answers
every name with it (:meth:`ModelTable.of`).

A gateway swaps its table when its configuration is reloaded: the requests in flight
finish on the table they started with, and the models the new table does not keep are
closed once the old table has no request left (:meth:`ModelTable.retire`).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from ..client.model import ChatModel
from ..client.router import Router
from ..client.router_state import MemoryRouterState, RedisRouterState, RouterState
from .config import ConfigError, DeploymentConfig, GatewayConfig
from .model_caches import TableCaches

if TYPE_CHECKING:
    from ..client.routing import ModelGroup

__all__ = ["ModelTable", "build_table"]


class ModelTable:
    """The models a gateway serves: ``models`` by name, in order (the first serves the
    routes that name no model); ``any_name``: every name is answered by the first (a
    gateway of one model). ``config`` is the configuration it was built from, ``state``
    the routers' state (both None for a table made in code)."""

    def __init__(
        self,
        models: Mapping[str, ChatModel | ModelGroup],
        *,
        any_name: bool = False,
        config: GatewayConfig | None = None,
        state: RouterState | None = None,
    ) -> None:
        if not models:
            raise ValueError("a model table needs at least one model")
        self.models: Mapping[str, ChatModel | ModelGroup] = dict(models)
        self.any_name = any_name
        self.config = config
        self.state = state
        self._lock = threading.Lock()
        self._in_flight = 0
        self._on_idle: Callable[[], None] | None = None
        self._deployments: Mapping[tuple[str, ...], ChatModel] = {}  # build_table's
        self._caches: TableCaches | None = None  # build_table's
        self.created = time.time()
        """When the table was made (Unix time): the models' creation time in the lists."""

    @classmethod
    def of(cls, model: ChatModel | ModelGroup) -> ModelTable:
        """A table that answers every name with ``model``."""
        return cls({model.model: model}, any_name=True)

    def __repr__(self) -> str:
        return f"ModelTable({list(self.models)!r}{', any_name=True' if self.any_name else ''})"

    @property
    def default(self) -> ChatModel | ModelGroup:
        """The model of the routes that name none: the first."""
        return next(iter(self.models.values()))

    @property
    def default_name(self) -> str:
        """The name the routes that name no model are served under (the first's)."""
        return self.default.model if self.any_name else next(iter(self.models))

    def get(self, name: str) -> ChatModel | ModelGroup | None:
        """The model served as ``name`` (None: no such model)."""
        model = self.models.get(name)
        if model is None and self.any_name:
            return self.default
        return model

    def answer_name(self, name: str) -> str:
        """The model name a response to a request for ``name`` gives: the name asked for,
        or with ``any_name`` the model's own."""
        if self.any_name:
            return self.default.model
        return name

    def leaves(self) -> list[ChatModel]:
        """Every ChatModel of the table, once each."""
        found: dict[int, ChatModel] = {}
        for model in self.models.values():
            for leaf in model.leaves() if not isinstance(model, ChatModel) else (model,):
                found.setdefault(id(leaf), leaf)
        return list(found.values())

    # In flight, and retiring.

    def enter(self) -> None:
        """A request starts on this table."""
        with self._lock:
            self._in_flight += 1

    def leave(self) -> None:
        """A request on this table ended (closing what retiring asked, when it was the
        last)."""
        with self._lock:
            self._in_flight -= 1
            on_idle = self._on_idle if self._in_flight == 0 else None
            if on_idle is not None:
                self._on_idle = None
        if on_idle is not None:
            on_idle()

    @property
    def in_flight(self) -> int:
        """The requests running on this table."""
        return self._in_flight

    def retire(self, keep: ModelTable | None = None) -> None:
        """This table serves no new request: once its requests have ended, close its
        models (and its state) that ``keep`` (the table that replaces it) does not use."""
        kept = {id(model) for model in keep.leaves()} if keep is not None else set()
        state = self.state if keep is None or keep.state is not self.state else None
        closing = [model for model in self.leaves() if id(model) not in kept]
        caches = self._caches

        def close() -> None:
            for model in closing:
                model.close()
            if state is not None:
                state.close()
            if caches is not None:
                caches.retire(keep._caches if keep is not None else None)

        with self._lock:
            if self._in_flight:
                self._on_idle = close
                return
        close()

    def close(self) -> None:
        """Close every model and the state now."""
        self.retire()

    def __enter__(self) -> ModelTable:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def build_table(
    config: GatewayConfig,
    *,
    environ: Mapping[str, str] = os.environ,
    previous: ModelTable | None = None,
    connection_limit: int | None = None,
) -> ModelTable:
    """The routers of ``config``'s models, each deployment's key read from the variable
    its ``api_key_env`` names in ``environ`` (a :class:`ConfigError` when it is not set);
    ``connection_limit`` sizes each deployment's connection pool (ChatModel's default when
    None).
    The deployments, the state and the cache stores of ``previous`` (the table being
    replaced) that ``config`` still has are kept: their connections, cooldowns, counts and
    stored answers go on. A model with a ``cache`` gets its
    :class:`~solon_events.ResponseCache` (:class:`~.model_caches.TableCaches`)."""
    reusable = previous._deployments if previous is not None else {}
    state = _state(config, previous)
    caches = TableCaches(config, previous._caches if previous is not None else None)
    built: dict[tuple[str, ...], ChatModel] = {}
    models: dict[str, ChatModel | ModelGroup] = {}
    for name, section in config.models.items():
        deployments = []
        for index, deployment in enumerate(section.deployments):
            key = _key(config, name, index, deployment, environ)
            identity = _identity_of(deployment, key)
            model = built.get(identity) or reusable.get(identity)
            if model is None:
                model = ChatModel(
                    deployment.url,
                    deployment.model,
                    api_key=key,
                    dialect=deployment.dialect,
                    max_retries=0,
                    connection_limit=connection_limit,
                )
            built[identity] = model
            deployments.append(model)
        models[name] = Router(
            deployments,
            strategy=section.strategy,
            weights=[d.weight for d in section.deployments],
            cooldown=section.cooldown,
            hedge_after=section.hedge_after,
            state=state,
            name=name,
            cache=caches.for_model(section),
        )
    table = ModelTable(models, config=config, state=state)
    table._deployments = built
    table._caches = caches
    return table


def _state(config: GatewayConfig, previous: ModelTable | None) -> RouterState:
    """The routers' state: ``previous``'s when it is kept where ``config`` says."""
    old = previous.state if previous is not None else None
    if config.redis is None:
        return old if isinstance(old, MemoryRouterState) else MemoryRouterState()
    if isinstance(old, RedisRouterState) and old.url == config.redis:
        return old
    return RedisRouterState(config.redis)


def _key(
    config: GatewayConfig,
    name: str,
    index: int,
    deployment: DeploymentConfig,
    environ: Mapping[str, str],
) -> str | None:
    variable = deployment.api_key_env
    if variable is None:
        return None
    key = environ.get(variable)
    if not key:
        raise ConfigError(
            f"the environment variable {variable} is not set",
            path=config.path,
            key=f"models.{name}.deployments[{index}].api_key_env",
        )
    return key


def _identity_of(deployment: DeploymentConfig, key: str | None) -> tuple[str, ...]:
    return (deployment.dialect, deployment.url, deployment.model, key or "")
