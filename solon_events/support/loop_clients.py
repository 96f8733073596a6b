"""One client per event loop: a network client (Redis's, say) whose connections belong to
the loop that opened them, made on first use in each loop that asks for one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Generic, Protocol, TypeVar

__all__ = ["LoopClients"]


class _Closable(Protocol):
    def aclose(self) -> Awaitable[Any]: ...


_C = TypeVar("_C", bound=_Closable)


class LoopClients(Generic[_C]):
    """The clients ``make()`` makes, one per event loop; those of closed loops are let go
    when the next one is made."""

    __slots__ = ("_clients", "_make")

    def __init__(self, make: Callable[[], _C]) -> None:
        self._make = make
        self._clients: dict[asyncio.AbstractEventLoop, _C] = {}

    def get(self) -> _C:
        """The running loop's client (made on first use)."""
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            for old in [other for other in self._clients if other.is_closed()]:
                del self._clients[old]
            client = self._make()
            self._clients[loop] = client
        return client

    async def aclose(self) -> None:
        """Close the running loop's client (the next :meth:`get` makes another)."""
        client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.aclose()

    def clear(self) -> None:
        """Let go of every client (their connections close with them)."""
        self._clients.clear()
