"""The aiohttp application: one POST route per provider wire format, and Anthropic's
token counting (``POST /v1/messages/count_tokens``: a made-up count, a token per four
bytes of the request's ``system``, ``messages`` and ``tools``; ``"model": "status:<code>"``
answers that status).

Every stream is written frame by frame (``StreamResponse.write``, which drains), so a
client sees each event as it is produced. Headers go out with the first frame, so a
leading pause delays the status line too.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn, Protocol

import attrs
import orjson
from aiohttp import web

from .answers import asked_output
from .encoders import WIRES, Frame, Wire
from .scenarios import (
    HTML_BODY,
    BodyReply,
    DropReply,
    HtmlReply,
    Replay,
    ScenarioError,
    StatusReply,
    plan,
)
from .turns import Control, Cut, KeepAlive, Pause, Ping, RawBytes, Script, TurnUsage, WaitGate

__all__ = [
    "COUNT_TOKENS",
    "ROUTES",
    "USAGE_ROUTE",
    "ServedStream",
    "ServerState",
    "StreamTiming",
    "create_app",
]

ROUTES: tuple[tuple[str, type[Wire], str], ...] = tuple(
    (path, wire, wire.format) for path, wire in WIRES.items()
)
"""Each route's path, wire format and the name of the dialect that reads it."""

COUNT_TOKENS = "/v1/messages/count_tokens"
"""Anthropic's token counting route."""


@attrs.frozen
class StreamTiming:
    """When the server did what a stream's script says (``DevServer(timings=True)``):
    the request's ``path``, ``model`` and ``attempt`` number, when it was received and
    when each content part's frames were written (``time.monotonic()``, after the write).
    A latency script's first token is ``writes[0] - received``, its gaps those between
    the writes of its deltas: the server's own account, late by whatever kept it busy."""

    path: str
    model: str
    attempt: int
    received: float
    writes: tuple[float, ...]


@attrs.frozen
class ServedStream:
    """One stream the server served: its ``path`` and ``model``, the usage its script
    bills (``prompt_tokens``, ``completion_tokens``: what it reports at its end), whether
    it was written to its end (``finished``; else its client left, or the script cut it)
    and how many of its content parts were written (``parts_written``)."""

    path: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    finished: bool
    parts_written: int


USAGE_ROUTE = "/devserver/usage"
"""``GET``: the usage the server served, as JSON (:meth:`DevServer.served_usage
<solon_events.devserver.server.DevServer.served_usage>`)."""


class ServerState(Protocol):
    """What the application asks of the server it serves for
    (:class:`~solon_events.devserver.server.DevServer`)."""

    pace: float
    recording: Path | None
    recording_frames: list[Frame]
    stream_timings: list[StreamTiming] | None

    def _record(self, path: str, headers: Mapping[str, str], body: Any) -> None: ...

    def _count_attempt(self, path: str, model: str) -> int: ...

    async def _gate_opened(self) -> None: ...

    def _note_disconnect(self) -> None: ...

    def _note_served(self, stream: ServedStream) -> None: ...

    def served_usage(self) -> dict[str, Any]: ...


_Step = Control | Sequence[Frame]
_CONTROLS = (Pause, WaitGate, KeepAlive, Ping, RawBytes, Cut)


def create_app(server: ServerState) -> web.Application:
    """The application serving every route for ``server``."""
    app = web.Application()
    for path, wire, _dialect in ROUTES:
        app.router.add_post(path, functools.partial(_handle, server, wire))
    app.router.add_post(COUNT_TOKENS, functools.partial(_count_tokens, server))

    async def usage(_request: web.Request) -> web.Response:
        return web.json_response(server.served_usage())

    app.router.add_get(USAGE_ROUTE, usage)
    return app


async def _count_tokens(server: ServerState, request: web.Request) -> web.Response:
    """Anthropic's ``count_tokens``: a token per four bytes of what the request holds."""
    from .encoders.anthropic import AnthropicWire

    try:
        body = orjson.loads(await request.read())
    except orjson.JSONDecodeError:
        body = None
    server._record(request.path, request.headers, body)
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        return _error(AnthropicWire, 400, "messages: Field required")
    model = str(body.get("model", ""))
    if model.startswith("status:"):
        return _error(AnthropicWire, int(model.partition(":")[2] or 500))
    held = {key: body[key] for key in ("system", "messages", "tools") if key in body}
    return web.json_response({"input_tokens": max(1, len(orjson.dumps(held)) // 4)})


async def _handle(
    server: ServerState, wire_type: type[Wire], request: web.Request
) -> web.StreamResponse:
    received = time.monotonic()
    try:
        body = orjson.loads(await request.read())
    except orjson.JSONDecodeError:
        body = None
    server._record(request.path, request.headers, body)
    if not isinstance(body, dict):
        return _error(wire_type, 400, "The request body is not a JSON object")
    try:
        view = wire_type.read_request(body)
        model = request.match_info.get("model") or view.model
        view = attrs.evolve(
            view,
            model=model,
            credential=_credential(request),
            attempt=server._count_attempt(request.path, model),
            output=asked_output(wire_type.format, body, view.tools),
        )
        chosen = plan(view, has_recording=server.recording is not None)
    except ScenarioError as error:
        return _error(wire_type, 400, str(error))
    except (TypeError, ValueError, LookupError, AttributeError) as error:
        # A request of a shape the scenarios cannot read (a tool schema whose properties
        # are not an object...): refused as a provider refuses it, not a crash.
        return _error(wire_type, 400, f"The request could not be read: {error}")
    if isinstance(chosen, StatusReply):
        return _error(wire_type, chosen.status, chosen.message, chosen.headers, chosen.body)
    if isinstance(chosen, HtmlReply):
        return web.Response(text=HTML_BODY, content_type="text/html")
    if isinstance(chosen, BodyReply):
        return web.Response(body=chosen.body, content_type=chosen.content_type)
    if isinstance(chosen, DropReply):
        return _drop(request)
    if isinstance(chosen, Replay):
        wire = wire_type(view.model, TurnUsage())
        steps: Iterable[_Step] = ([frame] for frame in server.recording_frames)
        byte_interval = 0.0
    else:
        wire = wire_type(view.model, chosen.usage)
        wire.send_usage = view.include_usage
        steps = _script_steps(wire, chosen)
        byte_interval = chosen.byte_interval
    writes: list[float] | None = None if server.stream_timings is None else []
    written = _Written()
    try:
        return await _stream(server, request, wire, steps, byte_interval, writes, written)
    finally:
        if not isinstance(chosen, Replay):
            usage = chosen.usage
            server._note_served(
                ServedStream(
                    request.path,
                    model,
                    usage.prompt,
                    usage.completion,
                    written.finished,
                    written.parts,
                )
            )
        if server.stream_timings is not None and writes is not None:
            timing = StreamTiming(request.path, model, view.attempt, received, tuple(writes))
            server.stream_timings.append(timing)


def _credential(request: web.Request) -> str:
    """The API key the request carries, wherever its dialect puts it (a SigV4 signature
    only when there is no key)."""
    signature = ""
    for name in ("Authorization", "x-api-key", "x-goog-api-key", "api-key"):
        value = request.headers.get(name)
        if value and value.startswith("AWS4-"):
            signature = value
        elif value:
            return value.removeprefix("Bearer ").strip()
    return request.query.get("key", "") or signature


def _drop(request: web.Request) -> NoReturn:
    if request.transport is not None:
        request.transport.abort()
    raise asyncio.CancelledError  # nothing is answered on a dropped connection


def _script_steps(wire: Wire, script: Script) -> Iterator[_Step]:
    for part in script.parts:
        yield part if isinstance(part, _CONTROLS) else wire.encode(part)


def _error(
    wire_type: type[Wire],
    status: int,
    message: str | None = None,
    headers: Mapping[str, str] | None = None,
    body: bytes | None = None,
) -> web.Response:
    all_headers = {"retry-after": "1"} if status == 429 else {}
    all_headers.update(headers or {})
    if body is None:
        body = orjson.dumps(wire_type.error_body(status, message))
    return web.Response(
        body=body, status=status, content_type="application/json", headers=all_headers
    )


class _Written:
    """How far a stream was written: its content parts, and whether to its end."""

    parts = 0
    finished = False


async def _stream(
    server: ServerState,
    request: web.Request,
    wire: Wire,
    steps: Iterable[_Step],
    byte_interval: float = 0.0,
    writes: list[float] | None = None,
    written: _Written | None = None,
) -> web.StreamResponse:
    charset = "" if wire.framing in ("ndjson", "eventstream") else "; charset=utf-8"
    response = web.StreamResponse(
        headers={"Content-Type": wire.content_type + charset, "Cache-Control": "no-cache"}
    )

    async def write(data: bytes) -> None:
        if not response.prepared:
            await response.prepare(request)
        if not byte_interval:
            await response.write(data)
            return
        for i in range(len(data)):
            await response.write(data[i : i + 1])
            await asyncio.sleep(byte_interval)

    cut = False
    try:
        for step in steps:
            if isinstance(step, Cut):
                cut = True
                break
            if isinstance(step, Pause):
                await asyncio.sleep(step.seconds)
            elif isinstance(step, WaitGate):
                await server._gate_opened()
            elif isinstance(step, KeepAlive):
                await write(wire.keep_alive_bytes())
            elif isinstance(step, RawBytes):
                await write(wire.raw_bytes(step.data))
            else:
                frames = wire.ping() if isinstance(step, Ping) else step
                for frame in frames:
                    if response.prepared and server.pace:
                        await asyncio.sleep(server.pace)
                    await write(wire.frame_bytes(frame))
                if writes is not None and not isinstance(step, Ping):
                    writes.append(time.monotonic())
                if written is not None and not isinstance(step, Ping):
                    written.parts += 1
        if not cut:
            if not response.prepared:
                await response.prepare(request)
            await response.write_eof()
            if written is not None:
                written.finished = True
    except ConnectionResetError:
        server._note_disconnect()
    except asyncio.CancelledError:
        server._note_disconnect()
        raise
    if cut:
        _drop(request)
    return response
