"""Resumable streams on a real Redis: ids on every event, resumption by Last-Event-ID or
?after= on any replica (two gateway processes), stop requests across replicas, a client
that leaves, Redis restarted mid-stream, and 200 concurrent resumptions."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import aiohttp
import orjson
import pytest
from redis_server import RedisServer, redis_server, redis_url  # noqa: F401  (fixtures)
from serving import serve_command, sse_events

from solon_events import ChatModel
from solon_events.cli import get_weather
from solon_events.devserver import DevServer
from solon_events.serve import create_app, serving
from solon_events.serve.redis_log import RedisStreamLog

QUESTION = "What is the weather in Paris?"
EVENTS_BODY = {"messages": [{"role": "user", "content": QUESTION}]}
VERCEL_BODY = {"messages": [{"role": "user", "parts": [{"type": "text", "text": QUESTION}]}]}


async def read_events(url: str, *, method: str = "POST", body: Any = None, **kw: Any) -> Any:
    """The whole SSE reply: status, headers and (id, payload) pairs."""
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, url, json=body, **kw) as response,
    ):
        raw = await response.read()
        return response.status, response.headers, sse_events(raw)


async def read_some(url: str, body: Any, count: int) -> tuple[str, list[tuple[str, bytes]]]:
    """POST, read ``count`` events, drop the connection: the response id and what was read."""
    session = aiohttp.ClientSession()
    try:
        response = await session.post(url, json=body)
        rid = response.headers["x-response-id"]
        buffer = b""
        while len(sse_events(buffer)) <= count:
            chunk = await response.content.readany()
            assert chunk, "the stream ended early"
            buffer += chunk
        response.close()
        return rid, [(i, d) for i, d in sse_events(buffer)[:count] if i]
    finally:
        await session.close()


def assert_continuous(
    first: list[tuple[str, bytes]], rest: list[tuple[str, bytes]], whole: list[tuple[str, bytes]]
) -> None:
    """What a client read, then what it resumed, is exactly the whole stream: no entry
    twice, none missing, in order."""
    joined = first + rest
    ids = [i for i, _ in joined]
    assert len(ids) == len(set(ids)), "duplicates"
    assert joined == whole, "a gap or a difference"


# One gateway in this process.


@pytest.fixture
async def provider() -> AsyncIterator[DevServer]:
    async with DevServer(pace=0.01) as server:
        yield server


@contextlib.asynccontextmanager
async def gateway(
    provider: DevServer, redis: str | RedisStreamLog, scenario: str, **options: Any
) -> Any:
    model = ChatModel(provider.url + "/v1/chat/completions", scenario)
    try:
        app = create_app(model, tools=[get_weather], redis=redis, **options)
        async with serving(app) as url:
            yield url
    finally:
        await asyncio.to_thread(model.close)


async def test_every_event_has_an_id_and_any_of_them_resumes(
    provider: DevServer,
    redis_url: str,  # noqa: F811
) -> None:
    async with gateway(provider, redis_url, "weather") as url:
        status, headers, events = await read_events(url + "/events", body=EVENTS_BODY)
        rid = headers["x-response-id"]
        assert status == 200 and all(i for i, _ in events)
        last = orjson.loads(events[-1][1])
        assert last["type"] == "RESPONSE_END" and last["response_id"] == rid
        _s, again_headers, again = await read_events(url + f"/events?resume={rid}", method="GET")
        assert again == events and again_headers["x-response-id"] == rid
        for cut in (0, len(events) // 2, len(events) - 1):
            header = {"Last-Event-ID": events[cut][0]}
            _s, _h, rest = await read_events(
                url + f"/events?resume={rid}", method="GET", headers=header
            )
            assert rest == events[cut + 1 :]
            _s, _h, rest = await read_events(
                url + f"/events?resume={rid}&after={events[cut][0]}", method="GET"
            )
            assert rest == events[cut + 1 :]
        status, _h, _e = await read_events(url + "/events?resume=resp_nope", method="GET")
        assert status == 404
        status, _h, _e = await read_events(url + f"/api/chat?resume={rid}", method="GET")
        assert status == 404  # that response was not a Vercel stream


async def test_the_model_goes_on_when_its_client_leaves(
    provider: DevServer,
    redis_url: str,  # noqa: F811
) -> None:
    async with gateway(provider, redis_url, "slow:30:0.02") as url:
        rid, first = await read_some(url + "/api/chat", VERCEL_BODY, 5)
        _s, _h, rest = await read_events(
            url + f"/api/chat?resume={rid}", method="GET", headers={"Last-Event-ID": first[-1][0]}
        )
        _s, _h, whole = await read_events(url + f"/api/chat?resume={rid}", method="GET")
    assert_continuous(first, rest, whole)
    assert whole[-1] == (whole[-1][0], b"[DONE]")
    assert provider.disconnect_count == 0  # the model request ran to its end
    text = "".join(orjson.loads(d).get("delta", "") for _i, d in whole if d != b"[DONE]")
    assert text == "".join(f"{i} " for i in range(30))


async def test_with_cancel_a_leaving_client_stops_the_model(
    provider: DevServer,
    redis_url: str,  # noqa: F811
) -> None:
    async with gateway(provider, redis_url, "slow:300:0.02", on_disconnect="cancel") as url:
        rid, _first = await read_some(url + "/events", EVENTS_BODY, 5)
        assert await provider.wait_disconnect(timeout=5)
        _s, _h, whole = await read_events(url + f"/events?resume={rid}", method="GET")
    last = orjson.loads(whole[-1][1])
    assert (last["type"], last["text"]) == ("ABORT", "stopped on request")


async def test_the_stop_endpoint_stops_a_running_response(
    provider: DevServer,
    redis_url: str,  # noqa: F811
) -> None:
    async with gateway(provider, redis_url, "slow:300:0.02") as url:
        rid, _first = await read_some(url + "/agui", _agui_body(), 3)
        async with aiohttp.ClientSession() as session:
            stopped = await session.post(url + "/stop", json={"response_id": rid})
            assert stopped.status == 202
            unknown = await session.post(url + "/stop", json={"response_id": "resp_nope"})
            assert unknown.status == 404
        assert await provider.wait_disconnect(timeout=5)
        _s, _h, whole = await read_events(url + f"/agui?resume={rid}", method="GET")
        again = await read_events(url + "/stop", body={"response_id": rid})
    last = orjson.loads(whole[-1][1])
    assert last["type"] == "RUN_FINISHED" and last["outcome"] == {"type": "cancelled"}
    assert again[0] == 404  # it has ended


def _agui_body() -> dict[str, Any]:
    return {
        "threadId": "t",
        "runId": "r",
        "messages": [{"id": "1", "role": "user", "content": QUESTION}],
    }


async def interrupted(
    url: str, body: Any, meanwhile: Callable[[], Awaitable[None]]
) -> tuple[str, bytes, float]:
    """POST ``body`` to ``url``, read the stream's first bytes, run ``meanwhile()`` (Redis
    stopped, restarted), read the rest: the response id, the whole body, and how long the
    rest took."""
    session = aiohttp.ClientSession()
    try:
        response = await session.post(url, json=body)
        rid = response.headers["x-response-id"]
        read = await response.content.readany()
        await meanwhile()
        after = time.monotonic()
        read += await asyncio.wait_for(response.read(), 30)
        return rid, read, time.monotonic() - after
    finally:
        await session.close()


async def test_redis_gone_mid_stream_is_a_clear_error_not_a_hang(
    provider: DevServer,
    redis_server: RedisServer,  # noqa: F811
) -> None:
    """Redis killed, and not back within ``reconnect_for`` (0.5 s here): the stream ends
    with the protocol's error event, the model request is stopped."""
    log = RedisStreamLog(redis_server.url, reconnect_for=0.5)
    async with gateway(provider, log, "slow:400:0.02") as url:

        async def kill() -> None:
            redis_server.stop()

        rid, body, ended_after = await interrupted(url + "/api/chat", VERCEL_BODY, kill)
        events = sse_events(body)
        error = orjson.loads(events[-2][1])
        assert error["type"] == "error" and "Redis" in error["errorText"], error
        assert events[-1][1] == b"[DONE]"
        assert await provider.wait_disconnect(timeout=10)  # the model request was stopped
        print(f"\nRedis killed: the client's stream ended {ended_after:.2f} s later")
        restarted = RedisServer(redis_server.port).start()
        try:
            status, _h, _e = await read_events(url + f"/api/chat?resume={rid}", method="GET")
            assert status == 404  # what Redis held is gone with it
            fresh_id, fresh = await read_some(url + "/api/chat", VERCEL_BODY, 5)
            assert len(fresh) == 5 and fresh_id != rid  # the gateway works again
        finally:
            restarted.close()


async def test_redis_restarted_mid_stream_loses_nothing(provider: DevServer) -> None:
    """A Redis that keeps its writes (append-only, every write) killed mid-stream and
    started again 0.5 s later, within ``reconnect_for``: the writer and the reader wait
    for it, and the client reads the whole answer, every event once, with no error; the
    stream resumes whole from its start afterwards."""
    redis = RedisServer(persistent=True).start()
    try:
        async with gateway(provider, redis.url, "slow:60:0.02") as url:

            async def restart() -> None:
                redis.stop()
                await asyncio.sleep(0.5)
                await asyncio.to_thread(redis.start)

            rid, body, _seconds = await interrupted(url + "/events", EVENTS_BODY, restart)
            _status, _h, again = await read_events(url + f"/events?resume={rid}", method="GET")
    finally:
        redis.close()
    events = sse_events(body)
    ids = [event_id for event_id, _data in events]
    assert len(ids) == len(set(ids)), "an event twice"
    last = orjson.loads(events[-1][1])
    assert last["type"] == "RESPONSE_END", last
    assert last["response"]["text"] == "".join(f"{i} " for i in range(60))
    assert again == events
    assert provider.disconnect_count == 0  # the model request ran to its end


async def test_redis_down_is_a_503_never_an_empty_success(
    redis_server: RedisServer,  # noqa: F811
) -> None:
    """``solon-events serve --redis`` whose Redis is down (stopped), serving a short answer:
    the answer was over before Redis refused its first entry, and the client got a 200 with
    an empty stream (``/events``, ``/agui``) or ``data: [DONE]`` alone (``/api/chat``). It
    gets a 503 saying why, before any stream starts."""
    redis_server.stop()
    bodies = {"/events": EVENTS_BODY, "/api/chat": VERCEL_BODY, "/agui": _agui_body()}
    with replica(redis_server.url, "echo") as url:
        for path, body in bodies.items():
            async with (
                aiohttp.ClientSession() as session,
                session.post(url + path, json=body) as response,
            ):
                raw = await response.read()
            assert response.status == 503, (path, response.status, raw)
            error = orjson.loads(raw)["error"]
            assert "could not be stored" in error and "Redis" in error, error


# Two gateway processes on one Redis.


@contextlib.contextmanager
def replica(redis: str, model: str) -> Iterator[str]:
    """``solon-events serve --redis`` in its own process (its own embedded provider)."""
    with serve_command("--redis", redis, "--model", model) as process:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), process.stderr.read() if process.stderr else ""
        yield url


@pytest.mark.parametrize(
    ("model", "path", "body"),
    [("slow:40:0.03", "/events", EVENTS_BODY), ("weather", "/api/chat", VERCEL_BODY)],
    ids=["text", "tool-loop"],
)
async def test_half_an_answer_from_one_replica_the_rest_from_the_other(
    redis_url: str,  # noqa: F811
    model: str,
    path: str,
    body: Any,
) -> None:
    with replica(redis_url, model) as a, replica(redis_url, model) as b:
        rid, first = await read_some(a + path, body, 8)
        started = time.perf_counter()
        async with (
            aiohttp.ClientSession() as session,
            session.get(
                b + path + f"?resume={rid}", headers={"Last-Event-ID": first[-1][0]}
            ) as response,
        ):
            first_byte = await response.content.readany()
            resumed_in = time.perf_counter() - started
            rest = sse_events(first_byte + await response.read())
        _s, _h, whole = await read_events(a + path + f"?resume={rid}", method="GET")
    assert_continuous(first, rest, whole)
    print(
        f"\n{model}: {len(first)} events from A, {len(rest)} resumed from B, first byte "
        f"after {resumed_in * 1000:.1f} ms, 0 duplicates, 0 gaps"
    )
    payloads = [orjson.loads(d) for _i, d in whole if d != b"[DONE]"]
    if path == "/events":
        assert payloads[-1]["response"]["text"] == "".join(f"{i} " for i in range(40))
    else:
        kinds = [p["type"] for p in payloads]
        assert "tool-output-available" in kinds and kinds[-1] == "finish"
        text = "".join(p.get("delta", "") for p in payloads if p["type"] == "text-delta")
        assert text == "It is 18°C and sunny in Paris right now."


async def test_a_stop_request_on_one_replica_stops_the_response_on_the_other(
    redis_url: str,  # noqa: F811
) -> None:
    with replica(redis_url, "slow:400:0.02") as a, replica(redis_url, "slow:400:0.02") as b:
        rid, _first = await read_some(a + "/api/chat", VERCEL_BODY, 3)
        async with aiohttp.ClientSession() as session:
            stopped = await session.post(b + "/stop", json={"response_id": rid})
            assert stopped.status == 202
        _s, _h, whole = await asyncio.wait_for(
            read_events(b + f"/api/chat?resume={rid}", method="GET"), 20
        )
    chunks = [orjson.loads(d) for _i, d in whole[:-1]]
    assert chunks[-1] == {"type": "abort", "reason": "stopped on request"}
    assert len([c for c in chunks if c["type"] == "text-delta"]) < 400


async def test_200_concurrent_resumptions(redis_url: str) -> None:  # noqa: F811
    """One answer streams on replica A; 200 clients resume it at once, half on A and half
    on B, each after an entry picked at random; each gets exactly the rest."""
    with replica(redis_url, "slow:120:0.02") as a, replica(redis_url, "slow:120:0.02") as b:
        rid, first = await read_some(a + "/events", EVENTS_BODY, 20)
        rng = random.Random(7)
        cuts = [rng.randrange(len(first)) for _ in range(200)]
        connector = aiohttp.TCPConnector(limit=0)
        async with aiohttp.ClientSession(connector=connector) as session:

            async def resume(n: int) -> tuple[int, float, list[tuple[str, bytes]]]:
                base = a if n % 2 else b
                started = time.perf_counter()
                async with session.get(
                    f"{base}/events?resume={rid}", headers={"Last-Event-ID": first[cuts[n]][0]}
                ) as response:
                    head = await response.content.readany()
                    latency = time.perf_counter() - started
                    raw = head + await response.read()
                    assert response.status == 200, (response.status, raw)
                    events = sse_events(raw)
                    assert events, (response.status, raw, response.headers)
                return n, latency, events

            results = await asyncio.wait_for(asyncio.gather(*(resume(n) for n in range(200))), 120)
            _s, _h, whole = await read_events(a + f"/events?resume={rid}", method="GET")
    latencies = sorted(latency for _n, latency, _e in results)
    resumed = 0
    for n, _latency, events in results:
        assert_continuous(first[: cuts[n] + 1], events, whole)
        resumed += len(events)
    assert orjson.loads(whole[-1][1])["type"] == "RESPONSE_END"
    print(
        f"\n200 resumptions: {resumed} events resumed, first byte median "
        f"{latencies[100] * 1000:.1f} ms, p95 {latencies[190] * 1000:.1f} ms, "
        f"max {latencies[-1] * 1000:.1f} ms; 0 duplicates, 0 gaps"
    )


async def test_responses_that_ended_are_let_go(
    provider: DevServer,
    redis_url: str,  # noqa: F811
) -> None:
    """A response that ends before its handler registers it for stop requests (one that
    fails at once) is not registered after its end either: the gateway holds none of the responses
    it served once they ended (the chaos soak's gateways grew by ~5 KB a response)."""
    from solon_events.serve.resume import StoredResponse

    model = ChatModel(provider.url + "/v1/chat/completions", "status:503", max_retries=0)
    try:
        async with serving(create_app(model, redis=redis_url)) as url:
            for _ in range(30):
                status, _h, events = await read_events(url + "/events", body=EVENTS_BODY)
                assert status == 200 and orjson.loads(events[-1][1])["type"] == "ERROR"
            await asyncio.sleep(0.2)  # the last writes to Redis end
            gc.collect()
            held = [o for o in gc.get_objects() if isinstance(o, StoredResponse)]
    finally:
        await asyncio.to_thread(model.close)
    assert held == []
