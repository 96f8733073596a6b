"""support/: the closing of wrapped async iterators, and one client per event loop."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from solon_events.support.async_iterators import aclose, ending_with
from solon_events.support.loop_clients import LoopClients


async def _counted(log: list[str], n: int) -> AsyncIterator[int]:
    try:
        for i in range(n):
            yield i
    finally:
        log.append("inner closed")


async def test_ending_with_calls_done_when_the_items_end() -> None:
    log: list[str] = []
    got = [i async for i in ending_with(_counted(log, 3), lambda: log.append("done"))]
    assert got == [0, 1, 2]
    assert log == ["inner closed", "done"]


async def test_ending_with_calls_done_then_closes_the_items_when_left_early() -> None:
    log: list[str] = []
    wrapped = ending_with(_counted(log, 10), lambda: log.append("done"))
    assert await wrapped.__anext__() == 0
    assert log == []
    await wrapped.aclose()
    assert log == ["done", "inner closed"]


async def test_ending_with_calls_done_when_the_items_fail() -> None:
    log: list[str] = []

    async def failing() -> AsyncIterator[int]:
        yield 1
        raise ValueError("broken")

    got: list[int] = []
    try:
        async for i in ending_with(failing(), lambda: log.append("done")):
            got.append(i)
    except ValueError as error:
        assert str(error) == "broken"
    assert got == [1]
    assert log == ["done"]


async def test_aclose_closes_an_async_generator_and_leaves_other_iterators() -> None:
    log: list[str] = []
    items = _counted(log, 5)
    assert await items.__anext__() == 0
    await aclose(items)
    assert log == ["inner closed"]
    await aclose(iter([1, 2]))  # nothing to close: no error


class _Client:
    def __init__(self, made: list[_Client]) -> None:
        self.closed = False
        made.append(self)

    async def aclose(self) -> None:
        self.closed = True


def test_loop_clients_makes_one_client_per_loop_and_lets_closed_loops_go() -> None:
    made: list[_Client] = []
    clients = LoopClients(lambda: _Client(made))

    async def twice() -> tuple[_Client, _Client]:
        return clients.get(), clients.get()

    first, again = asyncio.run(twice())
    assert first is again
    second, _ = asyncio.run(twice())  # another loop: another client; the closed loop's let go
    assert second is not first
    assert made == [first, second]
    assert len(clients._clients) == 1


def test_loop_clients_aclose_closes_the_running_loops_client() -> None:
    made: list[_Client] = []
    clients = LoopClients(lambda: _Client(made))

    async def use() -> None:
        first = clients.get()
        await clients.aclose()
        assert first.closed
        assert clients.get() is not first
        await clients.aclose()
        await clients.aclose()  # none left: nothing to close

    asyncio.run(use())
    assert [client.closed for client in made] == [True, True]
    clients.clear()
    assert not clients._clients
