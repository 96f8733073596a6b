"""The gateway's outbox: who writes a response's bytes to its client.

While the writer waits with nothing to write and the client's connection has sent all it
was given, the reader writes the bytes of each event itself, in its own turn of the loop;
otherwise the bytes wait for the writer, which joins what waits into one write. The
client here is a stand-in that records its writes and says whether its connection is
clear (the gateway's own ``_Client`` asks the connection's transport).
"""

from __future__ import annotations

import asyncio

from solon_events.event_model.events import EVENT_TYPES, ChatEvent
from solon_events.serve.gateway import _Backlog, _Outbox, _Wire


class _Frames:
    """A translator whose every event is its text."""

    def feed(self, event: ChatEvent) -> list[str]:
        return [event.text or ""]

    def fail(self, error: BaseException | None, text: str | None = None) -> list[str]:
        return ["failed"]


class _Client:
    def __init__(self, clear: bool = True) -> None:
        self.writes: list[bytes] = []
        self.is_clear = clear

    def clear(self) -> bool:
        return self.is_clear

    async def write(self, data: bytes) -> None:
        self.writes.append(data)


def _outbox() -> _Outbox:
    wire = _Wire("test", _Frames(), str.encode, {}, closing=b"end")
    return _Outbox(wire, 1 << 20, _Backlog(1 << 30), lambda: None)


def _delta(text: str) -> ChatEvent:
    return ChatEvent(EVENT_TYPES.TEXT_DELTA, text)


async def _writer(outbox: _Outbox, client: _Client) -> None:
    while (data := await outbox.get(client)) is not None:  # type: ignore[arg-type]
        await client.write(data)


async def test_the_reader_writes_while_the_writer_waits_idle() -> None:
    outbox, client = _outbox(), _Client()
    writer = asyncio.ensure_future(_writer(outbox, client))
    await asyncio.sleep(0)  # the writer waits for bytes
    for text in ("a", "b"):
        outbox.feed(_delta(text))
        await outbox.write_through()
    assert client.writes == [b"a", b"b"]  # each written at once, by the reader
    outbox.close()
    await writer
    assert client.writes == [b"a", b"b", b"end"]


async def test_bytes_wait_for_the_writer_while_the_connection_has_unsent_bytes() -> None:
    outbox, client = _outbox(), _Client(clear=False)
    writer = asyncio.ensure_future(_writer(outbox, client))
    await asyncio.sleep(0)
    outbox.feed(_delta("a"))
    await outbox.write_through()
    assert client.writes == []  # left for the writer
    outbox.feed(_delta("b"))
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert client.writes == [b"ab"]  # joined into one write
    outbox.close()
    await writer
    assert client.writes == [b"ab", b"end"]


async def test_bytes_fed_before_the_writer_starts_are_the_writers() -> None:
    outbox, client = _outbox(), _Client()
    outbox.feed(_delta("a"))
    await outbox.write_through()  # no writer waits: nothing is written here
    assert client.writes == []
    outbox.feed(_delta("b"))
    outbox.close()
    await _writer(outbox, client)
    assert client.writes == [b"abend"]
