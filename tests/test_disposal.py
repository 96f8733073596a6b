"""Disposal is cancellation at every instant (#42): a subscription of ``stream()`` disposed
before the connection (``take(1)`` of RESPONSE_START, emitted before the request is sent),
during the connect, before the first byte of the answer, or mid-stream leaves no request
running; the same through a fan-out. The provider is a real aiohttp server on 127.0.0.1
that notes each request it received, how many frames it wrote and whether its client left.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import orjson
import pytest
from aiohttp import web
from reactivex import operators as ops
from sockets import wait_for

from solon_events import ChatEventType, ChatModel, UsageReport, fan_out
from solon_events.support.loop_thread import EventLoopThread

T = ChatEventType
FRAMES = 40
"""What the provider streams: 40 text chunks, 50 ms apart (2 s)."""


@attrs.define
class Served:
    """One request as the provider saw it."""

    model: str
    frames: int = 0
    client_left: bool = False
    finished: bool = False


@attrs.define
class Provider:
    """A Chat Completions provider that waits ``hold`` seconds before its first byte, then
    streams :data:`FRAMES` chunks; ``served`` notes every request."""

    url: str = ""
    port: int = 0
    hold: float = 0.0
    served: list[Served] = attrs.Factory(list)

    def asked(self, model: str) -> list[Served]:
        return [s for s in self.served if s.model == model]


def _chunk(text: str | None, finish: str | None = None) -> bytes:
    delta = {"content": text} if text is not None else {}
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    frame = {"id": "c1", "object": "chat.completion.chunk", "model": "m", "choices": [choice]}
    return b"data: " + orjson.dumps(frame) + b"\n\n"


def _app(provider: Provider) -> web.Application:
    async def chat(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        served = Served(model=body["model"])
        provider.served.append(served)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        try:
            await asyncio.sleep(provider.hold)  # cancelled when the client leaves
            await response.prepare(request)
            for number in range(FRAMES):
                await response.write(_chunk(f"{number} "))
                served.frames += 1
                await asyncio.sleep(0.05)
            await response.write(_chunk(None, "stop") + b"data: [DONE]\n\n")
            served.finished = True
        except (ConnectionError, asyncio.CancelledError):
            served.client_left = True
            raise
        return response

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    return app


@contextlib.contextmanager
def serving(listener: socket.socket, provider: Provider) -> Iterator[None]:
    """Serve the provider's app on ``listener`` from a loop thread of its own."""
    io = EventLoopThread(name="test-disposal-provider")

    async def start() -> web.AppRunner:
        runner = web.AppRunner(_app(provider), handler_cancellation=True)
        await runner.setup()
        await web.SockSite(runner, listener).start()
        return runner

    runner = io.run(start())
    try:
        yield
    finally:
        io.run(runner.cleanup())
        io.close()


def listening(backlog: int = 128) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(backlog)
    return sock


@pytest.fixture
def provider() -> Iterator[Provider]:
    listener = listening()
    port = listener.getsockname()[1]
    made = Provider(url=f"http://127.0.0.1:{port}/v1/chat/completions", port=port)
    with serving(listener, made):
        yield made


@pytest.fixture
def reports() -> list[UsageReport]:
    return []


@pytest.fixture
def model(provider: Provider, reports: list[UsageReport]) -> Iterator[Callable[[str], ChatModel]]:
    """``model(name)``: a model of the provider that notes its usage reports."""
    made: list[ChatModel] = []

    def build(name: str, url: str | None = None) -> ChatModel:
        chat = ChatModel(url or provider.url, name, max_retries=0, on_usage=reports.append)
        made.append(chat)
        return chat

    yield build
    for chat in made:
        chat.close()


def reported(reports: list[UsageReport], model: str) -> str:
    """How the response asked of ``model`` ended, as its usage report says (waited for)."""
    assert wait_for(lambda: any(r.model == model for r in reports), 10), f"no report of {model}"
    (report,) = [r for r in reports if r.model == model]
    return report.outcome


def nothing_more_asked(provider: Provider, model: ChatModel, name: str) -> None:
    """After the disposal, another request of the same model (on the same loop and pool,
    so sent after the disposed one would have been) is the only one the provider sees."""
    assert model.prompt("and now?").call().text.startswith("0 1 2 ")
    assert [s.model for s in provider.served] == [name]


def take_response_start(source: Any, *models: ChatModel) -> None:
    """Subscribe ``source.stream().pipe(take(1))`` and wait for its end: it takes
    RESPONSE_START, emitted before the request is sent. The models' I/O loops wait until the
    subscription is made, so that the disposal that ``take(1)`` makes happens on the loop
    that emits RESPONSE_START, during that emission (made from this thread, it would come
    after the start, a disposal mid-connect)."""
    subscribed = threading.Event()
    for chat in models:
        chat._io.loop.call_soon_threadsafe(subscribed.wait, 10)
    taken: list[Any] = []
    done = threading.Event()
    source.stream().pipe(ops.take(1)).subscribe(taken.append, on_completed=done.set)
    subscribed.set()
    assert done.wait(10)
    assert [e.type for e in taken] == [T.RESPONSE_START]


def test_disposal_on_response_start_sends_no_request(
    provider: Provider, model: Callable[[str], ChatModel], reports: list[UsageReport]
) -> None:
    chat = model("taken")
    take_response_start(chat.prompt("hi"), chat)
    assert reported(reports, "taken") == "cancelled"  # not "completed" 2 s later
    nothing_more_asked(provider, chat, "taken")


def test_disposal_on_response_start_through_a_fan_out_sends_no_request(
    provider: Provider, model: Callable[[str], ChatModel], reports: list[UsageReport]
) -> None:
    left, right = model("left"), model("right")
    take_response_start(fan_out(left, right).prompt("hi"), left, right)

    # The other model's response starts on its own loop meanwhile: disposed before it
    # started, it is never begun (nor reported); else it is cancelled, on the wire too.
    def outcomes() -> list[str]:
        return [r.outcome for r in reports if r.model in ("left", "right")]

    assert wait_for(lambda: bool(outcomes()), 10)
    assert model("after").prompt("and now?").call().text.startswith("0 1 2 ")
    ours = [s for s in provider.served if s.model != "after"]
    assert len(ours) <= 1 and not any(s.finished for s in ours)
    assert wait_for(lambda: all(s.client_left for s in ours), 5)
    assert outcomes() in (["cancelled"], ["cancelled"] * 2)


def syn_sent(port: int) -> int:
    """This machine's TCP sockets still connecting (SYN_SENT) to ``port``."""
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                if fields[3] == "02" and int(fields[2].rsplit(":", 1)[1], 16) == port:
                    count += 1
    return count


def test_disposal_during_the_connect_abandons_it(
    model: Callable[[str], ChatModel], reports: list[UsageReport]
) -> None:
    # A listener whose one-place accept queue is taken by another client: the kernel drops
    # the model's SYNs, so its connect waits (in SYN_SENT) until it is disposed.
    listener = listening(backlog=0)
    port = listener.getsockname()[1]
    filler = socket.create_connection(("127.0.0.1", port))
    try:
        chat = model("connecting", f"http://127.0.0.1:{port}/v1/chat/completions")
        subscription = chat.prompt("hi").stream().subscribe(lambda _e: None, lambda _e: None)
        assert wait_for(lambda: syn_sent(port) == 1, 10), "the connect did not start"
        subscription.dispose()
        assert wait_for(lambda: syn_sent(port) == 0, 5), "the connect went on"
        assert reported(reports, "connecting") == "cancelled"
        late = Provider(url=f"http://127.0.0.1:{port}/v1/chat/completions", port=port)
        with serving(listener, late):  # the queue empties: a connect still on would land
            filler.close()
            assert model("after", late.url).prompt("and now?").call().text.startswith("0 ")
            assert [s.model for s in late.served] == ["after"]
    finally:
        filler.close()
        listener.close()


def test_disposal_before_the_first_byte_leaves_the_provider(
    provider: Provider, model: Callable[[str], ChatModel], reports: list[UsageReport]
) -> None:
    provider.hold = 30
    chat = model("waiting")
    subscription = chat.prompt("hi").stream().subscribe(lambda _e: None, lambda _e: None)
    assert wait_for(lambda: len(provider.asked("waiting")) == 1, 10)
    subscription.dispose()
    (served,) = provider.asked("waiting")
    assert wait_for(lambda: served.client_left, 5), "the provider still holds the request"
    assert served.frames == 0
    assert reported(reports, "waiting") == "cancelled"


def test_disposal_before_the_first_byte_through_a_fan_out_leaves_the_provider(
    provider: Provider, model: Callable[[str], ChatModel], reports: list[UsageReport]
) -> None:
    provider.hold = 30
    subscription = (
        fan_out(model("left"), model("right"))
        .prompt("hi")
        .stream()
        .subscribe(lambda _e: None, lambda _e: None)
    )
    assert wait_for(lambda: len(provider.served) == 2, 10)
    subscription.dispose()
    assert wait_for(lambda: all(s.client_left for s in provider.served), 5)
    assert reported(reports, "left") == reported(reports, "right") == "cancelled"


@pytest.mark.parametrize("through", ["model", "fan-out"])
def test_disposal_mid_stream_leaves_the_provider(
    provider: Provider,
    model: Callable[[str], ChatModel],
    reports: list[UsageReport],
    through: str,
) -> None:
    seen = threading.Event()

    def note(event: Any) -> None:
        if event.type is T.TEXT_DELTA:
            seen.set()

    source: Any = (
        model("streaming").prompt("hi")
        if through == "model"
        else fan_out(model("streaming"), model("other")).prompt("hi")
    )
    subscription = source.stream().subscribe(note, lambda _e: None)
    assert seen.wait(10)
    # A fan-out's first delta may come from "other" before "streaming" has reached the
    # provider: dispose only once every model asked is mid-stream.
    asked = 1 if through == "model" else 2
    assert wait_for(
        lambda: len(provider.served) == asked and all(s.frames for s in provider.served), 10
    )
    subscription.dispose()
    assert wait_for(lambda: all(s.client_left for s in provider.served), 5)
    assert all(s.frames < FRAMES and not s.finished for s in provider.served)
    assert provider.asked("streaming")[0].frames > 0
    assert reported(reports, "streaming") == "cancelled"
