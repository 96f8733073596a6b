"""A router's state in a real redis-server, shared by routers that know nothing of each
other but the Redis: the replicas of a gateway, each a process of its own.

A deployment that answered one replica with 429 and ``Retry-After`` is skipped by every
other until then, and asked again after; requests in flight on one count on the others;
Redis gone, the routers route on without it."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from redis_server import RedisServer, redis_server, redis_url  # noqa: F401  (fixtures)
from serving import serve_command, sse_json

from solon_events import ChatModel, Router
from solon_events.client.router import deployment_id
from solon_events.client.router_state import DeploymentState, RedisRouterState
from solon_events.devserver import DevServer, RunningServer
from solon_events.event_model.events import EVENT_TYPES

Build = Callable[..., ChatModel]


def wait_for(check: Callable[[], bool], what: str, seconds: float = 15.0) -> None:
    """Wait until ``check()`` holds (the writes to Redis are sent as they come, not
    awaited by the response): AssertionError naming ``what`` after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.02)


def shared_routers(
    url: str, make_model: Build, server: RunningServer, strategy: str
) -> tuple[Router, Router]:
    """Two routers over the same two deployments (each with models of its own), whose
    states are two clients of one Redis: as two processes would have them."""
    prefix = f"test-{uuid.uuid4().hex}"
    routers = []
    for _ in range(2):
        models = [
            make_model(server, "gate", "openai", max_retries=0),
            make_model(server, "gate", "anthropic", max_retries=0),
        ]
        routers.append(
            Router(models, strategy=strategy, state=RedisRouterState(url, prefix=prefix))  # type: ignore[arg-type]
        )
    return routers[0], routers[1]


def test_requests_in_flight_on_one_router_count_on_the_other(
    redis_url: str,  # noqa: F811
    fresh_server: RunningServer,
    make_model: Build,
) -> None:
    one, other = shared_routers(redis_url, make_model, fresh_server, "least-busy")

    async def run() -> tuple[str, str]:
        async def first_label(router: Router) -> tuple[str, Any]:
            events = router.prompt("hi").astream()
            async for event in events:
                if event.type is EVENT_TYPES.STATUS and event.sub_type == "routed":
                    return str(event.attrs["model"]), events
            raise AssertionError("not routed")

        busy, held = await first_label(one)
        await asyncio.get_running_loop().run_in_executor(
            None, wait_for, lambda: other.states()[busy].in_flight == 1, "the lease in Redis"
        )
        idle, also_held = await first_label(other)  # the other router: the idle deployment
        fresh_server.open_gate()
        for events in (held, also_held):
            async for _ in events:
                pass
        return busy, idle

    busy, idle = asyncio.run(run())
    assert {busy, idle} == set(one.labels)
    wait_for(lambda: all(s.in_flight == 0 for s in other.states().values()), "leases freed")
    one.close()
    other.close()


def test_latency_and_cooldowns_are_the_same_for_every_router(
    redis_url: str,  # noqa: F811
    fresh_server: RunningServer,
    make_model: Build,
) -> None:
    prefix = f"test-{uuid.uuid4().hex}"
    state = RedisRouterState(redis_url, prefix=prefix)
    model = make_model(fresh_server, "echo", "ollama", max_retries=0)
    id = deployment_id(model)
    state.answered(id, 0.5)
    state.answered(id, 1.0)  # a moving average: 0.5 + 0.2 * (1.0 - 0.5)
    state.cool(id, 30, "HTTP 429 slow down")
    state.cool(id, 2, "HTTP 503")  # shorter than what runs: kept as it was
    lease = state.started(id)
    seen = RedisRouterState(redis_url, prefix=prefix)  # another process's view
    wait_for(lambda: seen.read([id]).result()[0].in_flight == 1, "the writes")
    (found,) = seen.read([id]).result()
    assert found.latency == pytest.approx(0.6)
    assert found.reason == "HTTP 429 slow down" and 29 < found.cooldown <= 30
    state.ended(id, lease)
    wait_for(lambda: seen.read([id]).result()[0].in_flight == 0, "the lease freed")
    state.close()
    seen.close()


def test_a_cooldown_of_zero_seconds_never_skips_the_deployment(
    redis_url: str,  # noqa: F811
) -> None:
    # A router with ``cooldown = 0`` asks a failed deployment again at once: Redis keeps
    # expiries in whole milliseconds, and a cooldown written as one millisecond made the
    # requests that read the state within it skip the deployment (about two reads in three
    # right after the write, on this machine).
    seen: list[DeploymentState] = []

    def written() -> bool:  # every state read until the lease, written after, shows
        seen.append(state.read(["deployment"]).result()[0])
        return seen[-1].in_flight == 1

    for _ in range(20):
        state = RedisRouterState(redis_url, prefix=f"test-{uuid.uuid4().hex}")
        state.cool("deployment", 0, "HTTP 503")
        lease = state.started("deployment")
        wait_for(written, "the writes")
        state.ended("deployment", lease)
        state.close()
    assert not [found for found in seen if found.cooling]


def test_without_redis_the_router_routes_on_and_says_so(
    redis_server: RedisServer,  # noqa: F811
    server: RunningServer,
    make_model: Build,
    caplog: pytest.LogCaptureFixture,
) -> None:
    state = RedisRouterState(redis_server.url, timeout=0.2)
    router = Router([make_model(server, "echo", "cohere", max_retries=0)], state=state)
    assert router.prompt("up").call().text == "up"
    redis_server.stop()
    assert router.prompt("still up").call().text == "still up"
    assert router.states() == {router.labels[0]: DeploymentState()}
    assert "could not read the deployments' state (routing goes on without it)" in caplog.text
    assert state.problem().result() is not None
    router.close()


# --- two gateway processes, one Redis


def _config(redis: str, server: RunningServer) -> str:
    return (
        f'redis = "{redis}"\n'
        '[models.fast]\nstrategy = "fallback"\n'
        f'[[models.fast.deployments]]\nupstream = "openai:{server.url}/v1/chat/completions"\n'
        'model = "limited:1:5"\n'
        f'[[models.fast.deployments]]\nupstream = "anthropic:{server.url}/v1/messages"\n'
        'model = "echo"\n'
    )


@pytest.fixture
def replicas(
    tmp_path: Path,
    redis_server: RedisServer,  # noqa: F811
) -> Iterator[tuple[RunningServer, str, list[str]]]:
    """An upstream, and two gateways (processes) sharing one redis-server (its URL)."""
    with DevServer.run_in_thread() as upstream:
        path = tmp_path / "gateway.toml"
        path.write_text(_config(redis_server.url, upstream))
        with serve_command("--config", str(path)) as a, serve_command("--config", str(path)) as b:
            urls = []
            for process in (a, b):
                assert process.stdout is not None
                urls.append(process.stdout.readline().strip())
            yield upstream, redis_server.url, urls


def _attempts(url: str) -> list[tuple[str, str]]:
    """The attempts of one response of the events route (the configuration's first model)."""
    body = {"messages": [{"role": "user", "content": "which one"}]}
    response = httpx.post(url + "/events", json=body, timeout=30)
    (end,) = [e for e in sse_json(response.content) if e["type"] == "RESPONSE_END"]
    return [(a["model"], a["outcome"]) for a in end["response"]["attempts"]]


def test_a_429_cools_the_deployment_on_every_replica_and_it_comes_back(
    replicas: tuple[RunningServer, str, list[str]],
) -> None:
    """About 6 s: the Retry-After is a real 5 s, long enough for a loaded machine to ask
    the second replica within it."""
    upstream, redis, (a, b) = replicas

    def limited() -> list[Any]:
        return [r for r in upstream.requests if r.body and r.body.get("model") == "limited:1:5"]

    assert httpx.get(a + "/health/ready", timeout=30).json()["redis"] == "ok"
    assert _attempts(a) == [("limited:1:5", "failed"), ("echo", "answered")]
    assert len(limited()) == 1  # answered 429 with Retry-After: 5
    state = RedisRouterState(redis)
    ids = [f"openai:{upstream.url}/v1/chat/completions#limited:1:5"]
    wait_for(lambda: state.read(ids).result()[0].cooling, "the cooldown in Redis")
    assert state.read(ids).result()[0].reason == "HTTP 429 Rate limit reached"
    # the other replica never asks it: it skips it, for five seconds
    chat = {"model": "fast", "messages": [{"role": "user", "content": "hi"}]}
    answered = httpx.post(b + "/v1/chat/completions", json=chat, timeout=30)
    assert answered.headers["x-solon-deployment"] == "echo"
    assert _attempts(b) == [("limited:1:5", "skipped"), ("echo", "answered")]
    assert len(limited()) == 1
    # after its Retry-After it is asked again, by either replica, and answers
    wait_for(lambda: not state.read(ids).result()[0].cooling, "the cooldown's end", 10)
    assert _attempts(b) == [("limited:1:5", "answered")]
    assert len(limited()) == 2
    state.close()
