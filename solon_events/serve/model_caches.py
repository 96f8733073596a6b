"""The response caches of the models a gateway serves from its configuration.

Each ``[models.NAME]`` with a ``cache`` gets a :class:`~solon_events.ResponseCache` over
one of the table's stores (one per kind the file names: ``"memory"``, each
``"sqlite:PATH"``, ``"redis"`` at the top-level ``redis`` URL), its ``cache_ttl``, and
single flight unless ``single_flight = false``: across the gateway's replicas when the
file has a ``redis`` URL (:class:`~solon_events.serve.shared_flights.RedisFlights`), else
within the process. A reloaded configuration keeps the stores and the board it still
names, so that what was stored before is read after.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..client.cache import CacheStore, ResponseCache, store_of
from .config import GatewayConfig, ModelConfig

if TYPE_CHECKING:
    from .shared_flights import RedisFlights

__all__ = ["TableCaches"]


class TableCaches:
    """The stores and the flight board of one configuration (``previous``: those of the
    configuration it replaces, kept where they are the same)."""

    def __init__(self, config: GatewayConfig, previous: TableCaches | None = None) -> None:
        self.redis = config.redis
        self.stores: dict[str, CacheStore] = {}
        self.board: RedisFlights | None = None
        old_stores = previous.stores if previous is not None else {}
        kept_redis = previous is not None and previous.redis == config.redis
        wanted = {section.cache for section in config.models.values() if section.cache}
        for spec in wanted:
            if spec in old_stores and (spec != "redis" or kept_redis):
                self.stores[spec] = old_stores[spec]
            else:
                self.stores[spec] = store_of(config.redis if spec == "redis" else spec)  # type: ignore[arg-type]
        sharing = any(s.cache and s.single_flight for s in config.models.values())
        if config.redis is not None and sharing:
            if previous is not None and kept_redis and previous.board is not None:
                self.board = previous.board
            else:
                from .shared_flights import RedisFlights

                self.board = RedisFlights(config.redis)

    def for_model(self, section: ModelConfig) -> ResponseCache | None:
        """The cache of the model ``section`` configures (None: it has none)."""
        if section.cache is None:
            return None
        single_flight: Any = False
        if section.single_flight:
            single_flight = self.board if self.board is not None else True
        return ResponseCache(
            self.stores[section.cache], ttl=section.cache_ttl, single_flight=single_flight
        )

    def retire(self, keep: TableCaches | None) -> None:
        """Close what ``keep`` (the caches that replace these) does not use."""
        kept_stores = {id(store) for store in keep.stores.values()} if keep is not None else set()
        for store in self.stores.values():
            if id(store) not in kept_stores:
                store.close()
        if self.board is not None and (keep is None or keep.board is not self.board):
            self.board.close()
