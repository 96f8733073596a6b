"""``ChatModel(io_loop="uvloop")``: the I/O thread on a uvloop loop (the ``uvloop`` extra),
against the embedded provider on 127.0.0.1; and astream() on a uvloop caller loop."""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Callable

import pytest
from extra_modules import needed

from solon_events import ChatEvent, ChatEventType, ChatModel
from solon_events.devserver import RunningServer

uvloop = needed("uvloop")
T = ChatEventType


def test_stream_and_call_run_on_a_uvloop_io_thread(
    server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    plain = make_model(server, "slow:20:0")
    fast = make_model(server, "slow:20:0", io_loop="uvloop")
    seen: list[ChatEvent] = []
    loops: set[str] = set()
    done = threading.Event()

    def on_next(event: ChatEvent) -> None:
        loops.add(type(asyncio.get_running_loop()).__module__)
        seen.append(event)

    fast.prompt("hi").stream().subscribe(on_next, lambda error: done.set(), done.set)
    assert done.wait(10)
    assert loops == {"uvloop"}
    expected = plain.prompt("hi").call()
    assert seen[-1].type is T.RESPONSE_END and seen[-1].response is not None
    assert seen[-1].response.text == expected.text == fast.prompt("hi").call().text
    assert [e.type for e in seen] == [e.type for e in plain.prompt("hi").stream().to_list().run()]


def test_astream_on_a_uvloop_caller_loop(
    server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    model = make_model(server, "slow:20:0")

    async def read() -> list[ChatEvent]:
        return [event async for event in model.prompt("hi").astream()]

    events = uvloop.run(read())
    assert events[-1].type is T.RESPONSE_END and events[-1].response is not None
    assert events[-1].response.text == model.prompt("hi").call().text


def test_an_unknown_io_loop_is_refused(server: RunningServer) -> None:
    with pytest.raises(ValueError, match="io_loop"):
        ChatModel(server.url + "/v1/chat/completions", "echo", io_loop="trio")  # type: ignore[arg-type]


def test_io_loop_uvloop_without_uvloop_says_which_extra(
    server: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)  # as if it were not installed
    with pytest.raises(ImportError, match=r"solon-events\[uvloop\]"):
        ChatModel(server.url + "/v1/chat/completions", "echo", io_loop="uvloop")
