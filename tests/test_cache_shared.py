"""Single flight across processes (solon_events.serve.shared_flights.RedisFlights) with a
real redis-server: two caches that share nothing but Redis (two replicas) answer 50
identical requests with one upstream request; a failure, and a leader that goes away,
reach the followers."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable

import pytest
from cache_runs import GATED_ANSWER, ask, at_the_gate
from redis_server import RedisServer, redis_server, redis_url  # noqa: F401  (fixtures)

from solon_events import ChatError, ChatEvent, ChatModel, MemoryCache, RedisCache, ResponseCache
from solon_events.devserver import RunningServer
from solon_events.event_model.events import EVENT_TYPES as T
from solon_events.serve.shared_flights import RedisFlights


@pytest.fixture
def prefix() -> str:
    """The test's own keys in Redis."""
    return f"t-{uuid.uuid4().hex}"


@pytest.fixture
def replica(redis_url: str, prefix: str) -> Callable[[], ResponseCache]:  # noqa: F811
    """A new replica's cache: the shared store and board (the test's keys in Redis), its
    own flights in process."""
    return lambda: ResponseCache(
        RedisCache(redis_url, prefix=prefix), single_flight=RedisFlights(redis_url, prefix=prefix)
    )


def test_two_replicas_share_one_upstream_request(
    replica: Callable[[], ResponseCache],
    fresh_server: RunningServer,
    make_model: Callable[..., ChatModel],
) -> None:
    replicas = [make_model(fresh_server, "gate", cache=replica()) for _ in "ab"]

    answers = at_the_gate(replicas, fresh_server)
    assert len(fresh_server.requests) == 1
    ends = [events[-1].response for events in answers]
    assert all(e is not None and e.text == GATED_ANSWER for e in ends)
    shared = [e.cached for e in ends if e is not None and e.cached is not None]
    assert len(shared) == 49 and all(c.shared for c in shared)
    later = make_model(fresh_server, "gate", cache=replica())
    hit = later.prompt("hi").call()  # stored in Redis by the leader, read by a third
    assert hit.cached is not None and not hit.cached.shared
    assert len(fresh_server.requests) == 1


def test_a_shared_failure_reaches_the_other_replica(
    replica: Callable[[], ResponseCache],
    fresh_server: RunningServer,
    make_model: Callable[..., ChatModel],
) -> None:
    options = {"idle_timeout": 0.2, "max_retries": 0}
    first, second = (
        make_model(fresh_server, "stall:0.6", cache=replica(), **options) for _ in "ab"
    )

    async def failure(model: ChatModel) -> BaseException | None:
        try:
            await ask(model)
        except ChatError as error:
            return error
        return None

    async def main() -> list[BaseException | None]:
        leading = asyncio.ensure_future(failure(first))
        await asyncio.sleep(0.05)
        return [await failure(second), await leading]

    failures = asyncio.run(main())
    assert len(fresh_server.requests) == 1
    assert all(f is not None and "idle" in str(f) for f in failures), failures


def test_a_leader_that_goes_away_fails_its_followers(
    redis_server: RedisServer,  # noqa: F811
    prefix: str,
    fresh_server: RunningServer,
    make_model: Callable[..., ChatModel],
) -> None:
    """Redis itself going away mid-flight: the follower fails (StreamLogError, a
    ChatError) rather than wait forever; the leader's own client still gets its answer."""
    board = RedisFlights(redis_server.url, prefix=prefix, lease=0.5)
    leader = make_model(
        fresh_server, "gate", cache=ResponseCache(MemoryCache(), single_flight=board)
    )
    follower = make_model(
        fresh_server,
        "gate",
        cache=ResponseCache(
            MemoryCache(), single_flight=RedisFlights(redis_server.url, prefix=prefix, lease=0.5)
        ),
    )

    async def main() -> tuple[list[ChatEvent], BaseException | None]:
        told: asyncio.Queue[int] = asyncio.Queue()
        leading = asyncio.ensure_future(ask(leader, told))
        await asyncio.wait_for(told.get(), 10)
        following = asyncio.ensure_future(ask(follower, told))
        await asyncio.wait_for(told.get(), 10)
        redis_server.stop()
        fresh_server.open_gate()
        try:
            await following
        except ChatError as error:
            return await leading, error
        return await leading, None

    led, failure = asyncio.run(main())
    assert led[-1].type is T.RESPONSE_END
    assert isinstance(failure, ChatError)
    assert len(fresh_server.requests) == 1


@pytest.mark.parametrize("lease", [0.0, -1.0])
def test_a_lease_must_be_positive(lease: float) -> None:
    with pytest.raises(ValueError, match="lease"):
        RedisFlights("redis://127.0.0.1:1/0", lease=lease)
