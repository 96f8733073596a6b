"""The response cache of the library (solon_events.client.cache) against the embedded
provider on 127.0.0.1: hits and misses in every store (memory, a SQLite file, a real
redis-server), what is never stored, what the key holds and never holds, time to live and
size caps, per-prompt modes, hits billed zero, and single flight."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

import attrs
import orjson
import pytest
from aborting import aborting
from cache_runs import GATED_ANSWER, at_the_gate
from reactivex import operators as ops
from redis_server import redis_url  # noqa: F401  (fixture)
from routing_runs import weather_tool
from usage_reports import Reports

from solon_events import (
    CachedAnswer,
    ChatError,
    ChatEvent,
    ChatModel,
    ChatResponse,
    MemoryCache,
    RedisCache,
    ResponseCache,
    SQLiteCache,
    ToolSpec,
    Usage,
)
from solon_events.client.cache import CacheStore, StoredAnswer, request_key
from solon_events.client.cache.key import request_document
from solon_events.devserver import RunningServer
from solon_events.event_model.events import EVENT_TYPES as T

STORES = ["memory", "sqlite", "redis"]
get_weather = weather_tool([])


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[CacheStore]:
    """A new, empty store of each kind."""
    made: CacheStore
    if request.param == "memory":
        made = MemoryCache()
    elif request.param == "sqlite":
        made = SQLiteCache(tmp_path / "answers.sqlite3")
    else:
        made = RedisCache(request.getfixturevalue("redis_url"), prefix=f"t-{uuid.uuid4().hex}")
    yield made
    made.close()


GET_TIME = ToolSpec(
    name="get_time",
    description="The time in a city",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)


def _events(model: ChatModel, text: str = "one two three", **options: Any) -> list[ChatEvent]:
    prompt = model.prompt(text)
    if options:
        prompt = prompt.options(**options)
    return prompt.stream().pipe(ops.to_list()).run()


def _answer(events: list[ChatEvent]) -> list[tuple[str, str | None]]:
    """What an answer's events say, without ids, usage and the cache's own STATUS."""
    return [(e.type.name, e.text) for e in events if e.type not in (T.STATUS, T.USAGE)]


def test_a_miss_then_hits_in_every_store(
    store: CacheStore, fresh_server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    model = make_model(fresh_server, "echo", cache=ResponseCache(store))
    first = _events(model)
    assert len(fresh_server.requests) == 1
    assert T.STATUS not in [e.type for e in first]
    second = _events(model)
    called = model.prompt("one two three").call()
    streamed = asyncio.run(_collect(model.prompt("one two three").astream()))
    assert len(fresh_server.requests) == 1  # three hits: no request
    assert model.cache is not None
    assert (model.cache.hits, model.cache.misses, model.cache.stored) == (3, 1, 1)
    for hit in (second, streamed):
        assert hit[0].type is T.RESPONSE_START
        status = hit[1]
        assert status.type is T.STATUS and status.sub_type == "cache"
        assert status.attrs["cache"] == "hit" and status.attrs["key"]
        assert _answer(hit) == _answer(first)
        assert len({e.response_id for e in hit}) == 1
        assert not any(e.raw for e in hit)  # the provider's payloads are not kept
        assert hit[0].response_id != first[0].response_id
    original = first[-1].response
    assert isinstance(original, ChatResponse) and original.cached is None
    for response in (second[-1].response, called, streamed[-1].response):
        assert isinstance(response, ChatResponse)
        assert response.text == original.text == "one two three"
        assert response.usage == Usage()  # billed zero
        assert isinstance(response.cached, CachedAnswer) and not response.cached.shared
        assert response.cached.usage == original.usage and original.usage.total_tokens > 0


async def _collect(events: Any) -> list[ChatEvent]:
    return [event async for event in events]


def test_an_answer_survives_its_store_s_encoding(store: CacheStore) -> None:
    """What a store gives back is the answer it was given (its bytes when it keeps bytes)."""
    events = (
        ChatEvent(T.RESPONSE_START, response_id="r"),
        ChatEvent(T.TEXT_DELTA, "héllo", response_id="r"),
        ChatEvent(
            T.RESPONSE_END,
            response=ChatResponse(text="héllo", usage=Usage(prompt_tokens=2, completion_tokens=1)),
            response_id="r",
        ),
    )
    answer = StoredAnswer(events, (0.0, 0.25, 0.5), 1_700_000_000.0)

    async def roundtrip() -> StoredAnswer | None:
        assert await store.put("k", answer, None)
        return await store.get("k")

    got = asyncio.run(roundtrip())
    assert got is not None
    assert got.times == answer.times and got.created == answer.created
    assert [(e.type, e.text) for e in got.events] == [(e.type, e.text) for e in events]
    assert got.response.usage == events[-1].response.usage  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("scenario", "why"),
    [
        ("status:500", "an HTTP error"),
        ("error-frame", "an error in the stream"),
        ("cut", "a connection cut mid-answer"),
        ("truncate", "a body that ends without its completion"),
        ("refuse", "an answer a content filter stopped"),
        ("length", "an answer cut at its token limit"),
    ],
)
def test_nothing_is_stored_for(
    scenario: str,
    why: str,
    fresh_server: RunningServer,
    make_model: Callable[..., ChatModel],
) -> None:
    model = make_model(fresh_server, scenario, cache="memory", max_retries=0)
    for _ in range(2):
        with _no_raise() if scenario in ("refuse", "length") else pytest.raises(ChatError):
            model.prompt("hi").call()
    assert len(fresh_server.requests) == 2, why  # the second was asked again
    assert model.cache is not None and model.cache.stored == 0
    assert len(model.cache.store) == 0  # type: ignore[arg-type]


class _no_raise:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *_: object) -> bool:
        return False


def test_nothing_is_stored_for_an_abort(fresh_server: RunningServer) -> None:
    url = fresh_server.url + "/v1/chat/completions"
    with ChatModel(
        url, "slow:8:0.001", dialect=aborting("openai", after=2), cache="memory"
    ) as model:
        for _ in range(2):
            events = _events(model)
            assert events[-1].type is T.ABORT
        assert len(fresh_server.requests) == 2
        assert model.cache is not None and model.cache.stored == 0


def test_nothing_is_stored_for_a_cancelled_stream(
    fresh_server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    model = make_model(fresh_server, "gate", cache="memory")

    async def first_delta_then_leave() -> str:
        async for event in model.prompt("hi").astream():
            if event.type is T.TEXT_DELTA:
                return event.text or ""
        return ""

    assert asyncio.run(first_delta_then_leave()) == "Before the gate."
    taken = model.prompt("hi").stream().pipe(ops.filter(lambda e: e.type is T.TEXT_DELTA))
    assert taken.pipe(ops.take(1), ops.to_list()).run()[0].text == "Before the gate."
    assert model.cache is not None and model.cache.stored == 0
    fresh_server.open_gate()
    assert model.prompt("hi").call().text == "Before the gate. After the gate."
    assert model.prompt("hi").call().cached is not None
    assert len(fresh_server.requests) == 3


def test_an_answer_whose_tools_ran_here_is_not_stored(
    fresh_server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    model = make_model(fresh_server, "weather", cache="memory")
    for _ in range(2):
        response = model.prompt("weather in Oslo?").tools(get_weather).call()
        assert "Oslo" in response.text and response.cached is None
    assert len(fresh_server.requests) == 4  # two steps, twice
    offered = model.prompt("weather in Oslo?").tools(get_weather).auto_tool_call(False)
    calls = [offered.call() for _ in range(2)]  # the calls come back: nothing ran here
    assert calls[1].cached is not None and calls[1].tool_calls == calls[0].tool_calls
    assert len(fresh_server.requests) == 5


def test_what_the_request_changes_misses(
    fresh_server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    model = make_model(fresh_server, "echo", cache="memory")
    asked = [
        model.prompt("one two"),
        model.prompt("one two three"),  # the conversation
        model.prompt("one two").options(temperature=0.2),  # a setting
        model.prompt("one two").options(temperature=0.7),
        model.prompt("one two").tools(get_weather).auto_tool_call(False),  # a tool
        model.prompt("one two").client_tools(GET_TIME),
        make_model(fresh_server, "echo", cache=model.cache).prompt("one two").options(seed=1),
    ]
    keys = [request_key(prompt) for prompt in asked]
    assert len(set(keys)) == len(keys)
    for prompt in asked:
        assert prompt.call().cached is None
    assert len(fresh_server.requests) == len(asked)
    other_model = make_model(fresh_server, "echo:x", cache=model.cache)
    assert other_model.prompt("one two").call().cached is None  # another model name


def test_what_the_request_does_not_change_hits(
    fresh_server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    """The key has no secret, no header, no delivery detail: another key, other headers,
    a stream or a call, another event filter all read the same entry."""
    shared = ResponseCache(MemoryCache())
    first = make_model(fresh_server, "echo", api_key="sk-first-secret", cache=shared)
    other = make_model(
        fresh_server, "echo", api_key="sk-other-secret", headers={"x-team": "b"}, cache=shared
    )
    assert first.prompt("one two").call().cached is None
    assert other.prompt("one two").call().cached is not None
    only_text = other.prompt("one two").event_filter(lambda e: e.type is T.TEXT_DELTA)
    delivered = only_text.stream().pipe(ops.to_list()).run()
    assert [e.type for e in delivered if e.type is T.TEXT_DELTA]
    assert delivered[1].sub_type == "cache"  # lifecycle events always pass
    assert len(fresh_server.requests) == 1


def test_the_key_never_holds_a_secret(tmp_path: Any) -> None:
    secret = "sk-ant-" + "k" * 40
    url = f"https://user:{secret}@example.com/v1beta/models/gemini-2.0-flash?key={secret}"
    model = ChatModel(
        url, "gemini-2.0-flash", api_key=secret, headers={"x-goog-api-key": secret}, cache=False
    )
    try:
        prompt = model.prompt("hi").options(temperature=0)
        document = orjson.dumps(request_document(prompt)).decode()
        assert secret not in document and "user" not in document
        assert "example.com" in document and "gemini-2.0-flash" in document
        assert request_key(prompt) == request_key(
            ChatModel(url.replace(secret, "other"), "gemini-2.0-flash", api_key="other")
            .prompt("hi")
            .options(temperature=0)
        )
    finally:
        model.close()


def test_a_stored_answer_holds_no_secret(
    tmp_path: Any, fresh_server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    secret = "sk-proj-" + "s" * 40
    path = tmp_path / "answers.sqlite3"
    model = make_model(fresh_server, "echo", api_key=secret, cache=f"sqlite:{path}")
    model.prompt("one two").call()
    assert model.cache is not None and model.cache.stored == 1
    assert (
        secret.encode() not in path.read_bytes() + (tmp_path / "answers.sqlite3-wal").read_bytes()
    )


def test_time_to_live(
    store: CacheStore, fresh_server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    kept = make_model(fresh_server, "echo", cache=ResponseCache(store, ttl=600))
    assert kept.prompt("one").call().cached is None
    assert kept.prompt("one").call().cached is not None  # within its time to live
    brief = ResponseCache(store, ttl=0.05)
    fleeting = make_model(fresh_server, "echo", cache=brief)
    assert fleeting.prompt("two").call().cached is None
    assert brief.stored == 1
    asyncio.run(asyncio.sleep(0.2))  # past its time to live
    assert fleeting.prompt("two").call().cached is None
    assert len(fresh_server.requests) == 3


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_size_caps_push_out_the_least_recently_read(
    kind: str, tmp_path: Any, fresh_server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    store: CacheStore = (
        MemoryCache(max_entries=2)
        if kind == "memory"
        else SQLiteCache(tmp_path / "a", max_entries=2)
    )
    model = make_model(fresh_server, "echo", cache=store)
    for text in ("one", "two", "one", "three"):  # "one" read again: "two" is the oldest
        model.prompt(text).call()
    assert len(store) == 2  # type: ignore[arg-type]
    assert model.prompt("one").call().cached is not None
    assert model.prompt("three").call().cached is not None
    assert model.prompt("two").call().cached is None
    small = MemoryCache(max_entry_bytes=100)
    assert make_model(fresh_server, "echo", cache=small).prompt("one").call().text == "one"
    assert len(small) == 0  # larger than it takes
    store.close()


def test_a_prompt_s_own_mode(
    fresh_server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    model = make_model(fresh_server, "echo", cache="memory")
    assert model.prompt("one", cache=False).call().cached is None
    assert model.prompt("one").call().cached is None  # cache=False stored nothing
    assert model.prompt("one").call().cached is not None
    assert model.prompt("one").cache("refresh").call().cached is None  # asked again
    assert model.prompt("one").call().cached is not None
    assert len(fresh_server.requests) == 3
    with pytest.raises(ValueError, match="True, False or 'refresh'"):
        model.prompt("one").cache("sometimes")  # type: ignore[arg-type]


def test_a_hit_at_its_recorded_pace(
    fresh_server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    model = make_model(
        fresh_server, "slow:4:0.1", cache=ResponseCache(MemoryCache(), pace="recorded")
    )
    model.prompt("hi").call()
    loop_times: list[float] = []

    async def paced() -> None:
        loop = asyncio.get_running_loop()
        async for event in model.prompt("hi").astream():
            if event.type is T.TEXT_DELTA:
                loop_times.append(loop.time())

    asyncio.run(paced())
    assert len(loop_times) == 4
    assert loop_times[-1] - loop_times[0] >= 0.25  # the recorded gaps, kept (at least)
    fast = model.prompt("hi").cache(pace="fast").stream().pipe(ops.to_list()).run()
    assert fast[-1].response is not None and fast[-1].response.cached is not None


def test_a_hit_is_billed_zero_and_reported(
    fresh_server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    """What a limit or a budget reads of a hit: a usage report with zero usage and zero
    cost, marked cached, the original usage kept apart."""
    reports = Reports()
    model = make_model(fresh_server, "echo", cache="memory", pricing=True, on_usage=reports)
    asked = model.prompt("one two").call()
    reports.one()
    reports.items.clear()
    hit = model.prompt("one two").call()
    report = reports.one()
    assert report.outcome == "completed" and report.usage == Usage()
    assert report.cost is not None and report.cost.total == Decimal(0)
    assert report.cached is not None and report.cached.usage == asked.usage
    assert hit.cost is not None and hit.cost.total == Decimal(0)
    assert hit.cached is not None and hit.cached.cost == asked.cost
    assert report.response_id


def test_a_budget_sees_zero_spend_for_hits(
    fresh_server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    """A limiter's token and dollar budgets count the answer asked once, never its hits:
    with the budget all but spent by the miss, its hits are still answered (they ask
    nobody, reserve nothing) while a new question is refused."""
    from solon_events.client.limiter import Limiter
    from solon_events.client.limits import LimitExceededError
    from solon_events.event_model.pricing import ModelPrice

    limiter = Limiter(
        budget_tokens=20,
        budget_usd=1.0,
        window="total",
        name="team",
        prices={"echo": ModelPrice(input=1.0, output=2.0)},
    )
    model = make_model(fresh_server, "echo", cache="memory", limiter=limiter)
    question = model.prompt("one two three").options(max_tokens=5)
    asked = question.call()
    assert asked.cached is None and asked.usage is not None
    spent = asyncio.run(limiter.counts())
    assert spent.spent_tokens == asked.usage.total_tokens > 0 and spent.spent_nanos > 0
    hits = [question.call() for _ in range(5)]
    assert all(hit.cached is not None and hit.usage == Usage() for hit in hits)
    after = asyncio.run(limiter.counts())
    assert (after.spent_tokens, after.spent_nanos) == (spent.spent_tokens, spent.spent_nanos)
    with pytest.raises(LimitExceededError, match="budget"):
        model.prompt("another question").options(max_tokens=50).call()
    assert len(fresh_server.requests) == 1


def test_a_structured_answer_is_checked_again(
    tmp_path: Any, fresh_server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    @attrs.frozen
    class City:
        name: str
        population: int

    model = make_model(fresh_server, "echo", cache=f"sqlite:{tmp_path / 'answers.sqlite3'}")
    asked = model.prompt("a city", output=City).call()
    hit = model.prompt("a city", output=City).call()
    assert hit.cached is not None and isinstance(hit.output, City)
    assert hit.output == asked.output and isinstance(asked.output, City)
    assert len(fresh_server.requests) == 1


def test_single_flight(fresh_server: RunningServer, make_model: Callable[..., ChatModel]) -> None:
    """50 identical requests at once: one upstream request, 50 complete answers; the one
    that asked is billed, the others are told the answer was shared."""
    cache = ResponseCache(MemoryCache(), single_flight=True)
    model = make_model(fresh_server, "gate", cache=cache)
    answers = at_the_gate([model], fresh_server)
    assert len(fresh_server.requests) == 1
    ends = [events[-1] for events in answers]
    assert all(e.type is T.RESPONSE_END for e in ends)
    assert {e.response.text for e in ends if e.response} == {GATED_ANSWER}
    shared = [e.response.cached for e in ends if e.response and e.response.cached]
    assert len(shared) == 49 and all(c.shared for c in shared)
    owner = [e.response for e in ends if e.response and e.response.cached is None]
    assert len(owner) == 1 and owner[0].usage is not None and owner[0].usage.total_tokens > 0
    assert all(c.usage == owner[0].usage for c in shared)
    assert len({events[0].response_id for events in answers}) == 50
    assert model.prompt("hi").call().cached is not None  # stored once complete
    assert len(fresh_server.requests) == 1


async def _outcome(model: Any) -> ChatResponse | ChatError:
    """The response of ``model.prompt("hi")``, or the error that ended it."""
    try:
        async for event in model.prompt("hi").astream():
            if event.type is T.RESPONSE_END:
                assert event.response is not None
                return event.response
    except ChatError as error:
        return error
    raise AssertionError("no RESPONSE_END and no error")


def _stalling(fresh_server: RunningServer, make_model: Callable[..., ChatModel]) -> ChatModel:
    """A model with single flight whose upstream stalls past its idle timeout."""
    cache = ResponseCache(MemoryCache(), single_flight=True)
    return make_model(fresh_server, "stall:0.3", cache=cache, idle_timeout=0.1, max_retries=0)


def test_a_shared_failure_reaches_every_client(
    fresh_server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    model = _stalling(fresh_server, make_model)

    async def main() -> list[ChatResponse | ChatError]:
        return await asyncio.gather(*(_outcome(model) for _ in range(5)))

    failures = asyncio.run(main())
    assert len(fresh_server.requests) == 1
    assert all(isinstance(f, ChatError) and "idle" in str(f) for f in failures)
    assert model.cache is not None and model.cache.stored == 0


def test_a_shared_failure_and_a_client_s_own_fallback(
    fresh_server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    """Of two identical requests sharing one failing upstream, the one asked through a
    fallback group gets its backup's answer; the other sees the failure."""
    from solon_events import FallbackModel

    model = _stalling(fresh_server, make_model)
    group = FallbackModel(model, make_model(fresh_server, "echo"), mid_stream="restart")

    async def main() -> list[ChatResponse | ChatError]:
        return await asyncio.gather(_outcome(model), _outcome(group))

    alone, grouped = asyncio.run(main())
    assert isinstance(alone, ChatError) and "idle" in str(alone)
    assert isinstance(grouped, ChatResponse) and grouped.text == "hi"
    assert len(grouped.attempts) == 2 and grouped.attempts[0].error is not None
    assert [r.body["model"] for r in fresh_server.requests] == ["stall:0.3", "echo"]


def test_a_group_s_cache(fresh_server: RunningServer, make_model: Callable[..., ChatModel]) -> None:
    from solon_events import FallbackModel

    first = make_model(fresh_server, "status:503", max_retries=0)
    second = make_model(fresh_server, "echo")
    group = FallbackModel(first, second)
    group.cache = ResponseCache(MemoryCache())
    asked = group.prompt("one two").call()
    assert asked.text == "one two" and asked.cached is None and len(asked.attempts) == 2
    hit = group.prompt("one two").call()
    assert hit.text == "one two" and hit.cached is not None and hit.attempts == ()
    assert len(fresh_server.requests) == 2


def test_a_router_s_cache(
    fresh_server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    """``Router(cache=...)``: a hit answers without asking any deployment, whichever one
    answered first."""
    from solon_events import Router

    router = Router(
        [make_model(fresh_server, "echo"), make_model(fresh_server, "echo")], cache="memory"
    )
    try:
        asked = router.prompt("one two").call()
        hits = [router.prompt("one two").call() for _ in range(4)]
        assert asked.cached is None and asked.text == "one two"
        assert all(hit.cached is not None and hit.text == "one two" for hit in hits)
        assert router.cache is not None and (router.cache.hits, router.cache.misses) == (4, 1)
        assert len(fresh_server.requests) == 1
    finally:
        router.close()


def test_jupyter_and_the_terminal_say_cached(
    fresh_server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    from rich.console import Console

    from solon_events.display.html import to_html
    from solon_events.display.pretty import to_text
    from solon_events.display.render import LiveRenderer, event_summary

    model = make_model(fresh_server, "echo", cache="memory")
    asked = model.prompt("one two").call()
    assert "cached" not in to_text(asked) and "<th>cached</th>" not in to_html(asked)
    events = _events(model, "one two")
    hit = events[-1].response
    assert hit is not None and hit.cached is not None
    assert to_text(hit).splitlines()[0].endswith("cached")
    assert "the original used prompt" in to_text(hit)
    assert "<th>cached</th><td><span class='se-cached'>cached (stored" in to_html(hit)
    assert "cached (stored" in hit.cached._repr_html_()
    assert "; cached (stored" in event_summary(events[-1])
    console = Console(record=True, width=200)
    renderer = LiveRenderer(console)
    for event in events:
        renderer(event)
    renderer.close()
    shown = console.export_text()
    assert "↺ cached answer (stored" in shown and "the original used" in shown
