"""A failure inside an operator, or inside the tool loop, ends the stream; it never hangs
(#29.17).

An exception is raised at a random line of solon_events' own code (a trace function raises
it at the N-th line executed there, N drawn by hypothesis) while a stream runs through
every operator, or through a ChatModel's tool loop: each stream still ends, exactly once,
and an error that reaches ``on_error`` is a ChatError (or the documented ValueError of
``partial_json()``). Only the code that delivers an operator's failure
(``solon_events/support/safe_callbacks.py``) is left out. Before #29.17 an exception in an
operator's ``on_completed`` was lost on the I/O thread and the subscriber waited forever
(``partial_json(SomeAttrsClass)`` without the ``structured`` extra), and one in an
operator's ``on_next`` escaped into the source's caller.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import io
import itertools
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import attrs
import pytest
import reactivex
from executables import run_python
from hypothesis import Phase, given, settings
from hypothesis import strategies as st
from reactivex.subject import Subject
from reactivex.testing import TestScheduler
from recorded import body_of
from redis_server import redis_url  # noqa: F401  (a fixture)
from rich.console import Console

import solon_events as se
from solon_events import (
    ChatError,
    ChatEvent,
    ChatEventFilter,
    ChatEventType,
    ChatModel,
    tool,
)
from solon_events.adapters import to_agui, to_vercel, to_wire
from solon_events.adapters.native import encode_event
from solon_events.adapters.provider_formats import WIRE_FORMATS
from solon_events.devserver import DevServer, RunningServer
from solon_events.devserver.turns import Finish, Script, Text, ToolCallPart, TurnUsage
from solon_events.display import live
from solon_events.serve.redis_log import RedisStreamLog, read_from_redis, tee_to_redis
from solon_events.telemetry import instrument
from solon_events.wire.sse import SSEDecoder

T = ChatEventType
PACKAGE = Path(se.__file__).resolve().parent
SAFETY_NET = str(PACKAGE / "support" / "safe_callbacks.py")
TOOL_LOOP = (str(PACKAGE / "tool_loop.py"), str(PACKAGE / "tools"))
PHASES = [Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink]  # explain would trace too


class Fault(RuntimeError):
    """The exception raised at a random line."""


class FaultAt:
    """A trace function raising :class:`Fault` at the ``at``-th line executed in the files
    ``wanted`` accepts, in any thread, while it is installed (None: only count the lines;
    a thread started meanwhile is traced after, but neither counted nor faulted)."""

    def __init__(self, wanted: Callable[[str], bool], at: int | None = None) -> None:
        self._wanted = wanted
        self._at = at
        self._lock = threading.Lock()
        self.lines = 0
        self.fired = False
        self.armed = False

    def _line(self, frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line" and self.armed:
            with self._lock:
                self.lines += 1
                fire = not self.fired and self.lines == self._at
                self.fired = self.fired or fire
            if fire:
                raise Fault(f"a fault at {frame.f_code.co_filename}:{frame.f_lineno}")
        return self._line

    def _call(self, frame: FrameType, event: str, arg: Any) -> Any:
        return self._line if self._wanted(frame.f_code.co_filename) else None

    @contextlib.contextmanager
    def installed(self) -> Iterator[FaultAt]:
        """Trace this thread and the threads started meanwhile."""
        sys.settrace(self._call)
        threading.settrace(self._call)
        self.armed = True
        try:
            yield self
        finally:
            self.armed = False
            sys.settrace(None)
            threading.settrace(None)  # type: ignore[arg-type]


def in_operators(filename: str) -> bool:
    return filename.startswith(str(PACKAGE)) and filename != SAFETY_NET


def in_tool_loop(filename: str) -> bool:
    return filename.startswith(TOOL_LOOP)


class Ending:
    """What a subscriber received: its items and every terminal call."""

    def __init__(self) -> None:
        self.items: list[Any] = []
        self.ends: list[BaseException | None] = []
        self.done = threading.Event()

    def on_next(self, item: Any) -> None:
        self.items.append(item)

    def on_error(self, error: BaseException) -> None:
        self.ends.append(error)
        self.done.set()

    def on_completed(self) -> None:
        self.ends.append(None)
        self.done.set()


def check_ending(ending: Ending, *allowed: type[BaseException]) -> None:
    """One end; an error among ``allowed`` (ChatError always)."""
    assert len(ending.ends) == 1, ending.ends
    error = ending.ends[0]
    assert error is None or isinstance(error, (ChatError, *allowed)), repr(error)


def check_named(ending: Ending, where: str, files: Callable[[str], bool]) -> None:
    """A fault raised in ``files`` that ended the stream as a ChatError names ``where``:
    '<where> failed: Fault: a fault at ...'."""
    error = ending.ends[0]
    if isinstance(error, ChatError) and isinstance(error.__cause__, Fault):
        raised_at = str(error.__cause__).removeprefix("a fault at ").rpartition(":")[0]
        if files(raised_at):
            assert str(error).startswith(f"{where} failed: Fault: "), str(error)


# --- every operator, fed from a subject


@attrs.frozen
class Place:
    city: str


FRAMES = SSEDecoder(data_only=True).feed(
    body_of(
        "openai",
        Script(
            [
                ToolCallPart("get_weather", ('{"ci', 'ty": "Pa', 'ris"}')),
                Text('{"city"'),
                Text(': "Paris", "note": "a city of bridges"}'),
                Finish("stop"),
            ],
            TurnUsage(prompt=5, completion=7),
        ),
    )
)
"""A step with a tool call and a JSON answer, as OpenAI sends it."""

Chain = Callable[[reactivex.Observable[Any], TestScheduler], reactivex.Observable[Any]]


def wire_chain(format: str) -> Chain:
    return lambda s, _: s.pipe(se.parse("openai"), se.respond(), to_wire(format, model="m"))


CHAINS: dict[str, Chain] = {
    "parse normalize aggregate guard": lambda s, _: s.pipe(
        se.parse("openai"), se.normalize(), se.aggregate(), se.guard(ChatEventFilter.all())
    ),
    "respond partial_arguments final_response": lambda s, _: s.pipe(
        se.parse("openai"), se.respond(), se.partial_arguments(), se.final_response()
    ),
    "respond(partial_arguments) text_deltas": lambda s, _: s.pipe(
        se.parse("openai"), se.respond(partial_arguments=True), se.text_deltas()
    ),
    "argument_deltas": lambda s, _: s.pipe(se.parse("openai"), se.respond(), se.argument_deltas()),
    "partial_json": lambda s, _: s.pipe(se.parse("openai"), se.respond(), se.partial_json(Place)),
    "smooth": lambda s, clock: s.pipe(
        se.parse("openai"), se.respond(), se.smooth(CLOCK_INTERVAL, scheduler=clock)
    ),
    "to_agui": lambda s, _: s.pipe(se.parse("openai"), se.respond(), to_agui()),
    "to_vercel": lambda s, _: s.pipe(se.parse("openai"), se.respond(), to_vercel()),
    "instrument": lambda s, _: s.pipe(
        se.parse("openai"), se.respond(), instrument(model="m", provider="openai")
    ),
    "live": lambda s, _: s.pipe(
        se.parse("openai"), se.respond(), live(console=Console(file=io.StringIO()))
    ),
    **{f"to_wire({format})": wire_chain(format) for format in WIRE_FORMATS},
}
"""Every operator, each fed by parse() (and respond()), to_wire() in every wire format;
smooth() paced on a virtual clock that moves CLOCK_STEP after each frame, so that its timer
releases some words."""
CLOCK_INTERVAL, CLOCK_STEP = 10.0, 12.0

NAMED: dict[Callable[[str], bool], str] = {
    str(PACKAGE / "operators" / "smoothing.py").__eq__: "the smooth() operator",
    lambda filename: filename.startswith(str(PACKAGE / "adapters" / "provider_formats")): (
        "the to_wire() operator"
    ),
}
"""The operators whose whole code is in files of their own, by those files."""


def run_chain(name: str, fault: FaultAt) -> tuple[Ending, bool]:
    """``CHAINS[name]`` over FRAMES, pushed by hand into a subject, under ``fault``; and
    whether the fault fired while subscribing (before the first frame).

    No operator lets its failure out into the subject's caller before its subscriber has
    its end; after it, only a failure to dispose of the subscription goes up (as in RxPY:
    an AutoDetachObserver disposes once its end is delivered, and there is nobody else
    left to tell)."""
    subject: Subject[Any] = Subject()
    clock = TestScheduler()
    ending = Ending()
    chain = CHAINS[name](subject, clock)  # built before: building is no callback
    with fault.installed():
        while_subscribing = feed(
            chain, subject, fault, ending, lambda: clock.advance_by(CLOCK_STEP)
        )
    return ending, while_subscribing


def feed(
    chain: reactivex.Observable[Any],
    subject: Subject[Any],
    fault: FaultAt,
    ending: Ending,
    after_frame: Callable[[], Any] = lambda: None,
) -> bool:
    """Subscribe ``ending`` to ``chain`` and push FRAMES into ``subject`` (calling
    ``after_frame`` after each) with ``fault`` installed; whether it fired while
    subscribing. A fault may go up into the pushing only once the stream has its end."""
    chain.subscribe(ending.on_next, ending.on_error, ending.on_completed)
    while_subscribing = fault.fired
    try:
        for frame in FRAMES:
            subject.on_next(frame)
            after_frame()
        subject.on_completed()
    except Fault:
        assert ending.ends, "a fault escaped into the source before the end"
    return while_subscribing


@functools.cache
def chain_lines(name: str) -> int:
    """The lines of our code a whole run of ``CHAINS[name]`` executes."""
    counter = FaultAt(in_operators)
    ending, _ = run_chain(name, counter)
    assert ending.ends == [None] and ending.items
    return counter.lines


@settings(max_examples=4000, phases=PHASES)
@given(data=st.data(), name=st.sampled_from(sorted(CHAINS)))
def test_a_fault_anywhere_in_the_operators_ends_the_stream(data: st.DataObject, name: str) -> None:
    at = data.draw(st.integers(1, chain_lines(name)), label="line")
    ending, while_subscribing = run_chain(name, FaultAt(in_operators, at))
    allowed: tuple[type[BaseException], ...] = ()
    if name == "partial_json":
        allowed += (ValueError,)  # its documented failure: the answer is not JSON
    if while_subscribing:
        allowed += (Fault,)  # Observable.subscribe hands a failure to subscribe on as it is
    check_ending(ending, *allowed)
    for files, where in NAMED.items():
        check_named(ending, where, files)


def test_an_operator_failing_in_on_completed_on_the_io_thread_ends_the_stream(
    server: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issue's hang: partial_json(an attrs class) raising from on_completed, on the
    model's I/O thread, because cattrs could not be imported then (here it goes away once
    the first value is out; before #29.17 the subscriber never got an end)."""
    ending = Ending()

    def on_next(value: Any) -> None:
        ending.on_next(value)
        monkeypatch.setitem(sys.modules, "cattrs", None)

    with ChatModel(server.url + "/v1/chat/completions", "echo") as model:
        model.prompt('{"city": "Paris"}').stream().pipe(se.partial_json(Place)).subscribe(
            on_next, ending.on_error, ending.on_completed
        )
        assert ending.done.wait(10.0), "the response never ended"
    (error,) = ending.ends
    assert isinstance(error, ChatError), repr(error)
    assert str(error).startswith("the partial_json() operator failed: MissingExtraError: ")
    assert "pip install 'solon-events[structured]'" in str(error)
    assert ending.items and ending.items[-1] == {"city": "Paris"}


def test_a_failing_translator_ends_the_stream_with_a_chat_error_naming_the_operator() -> None:
    subject: Subject[ChatEvent] = Subject()
    ending = Ending()
    subject.pipe(to_vercel()).subscribe(ending.on_next, ending.on_error, ending.on_completed)
    bad = ChatEvent(T.STEP_END, usage=object())  # type: ignore[arg-type]
    subject.on_next(bad)  # does not raise into the source
    (error,) = ending.ends
    assert isinstance(error, ChatError), repr(error)
    assert str(error).startswith("the to_vercel() operator failed: ")
    assert error.__cause__ is not None


def test_the_subscribers_own_exception_goes_up_to_the_source_unchanged() -> None:
    """As with RxPY's operators: the subscriber's exception is not the operator's."""
    subject: Subject[Any] = Subject()
    ending = Ending()

    def on_next(event: ChatEvent) -> None:
        if event.type is T.TEXT_DELTA:
            raise KeyError("the subscriber's")

    subject.pipe(se.parse("openai"), se.normalize(), se.text_deltas()).subscribe(
        lambda _text: on_next(ChatEvent(T.TEXT_DELTA)), ending.on_error, ending.on_completed
    )
    with pytest.raises(KeyError, match="the subscriber's"):
        for frame in FRAMES:
            subject.on_next(frame)
    assert not ending.ends


# --- smooth(): what its timer releases, on the scheduler's thread


def test_a_subscriber_raising_on_a_chunk_the_timer_releases_gets_its_exception() -> None:
    """Its exception reaches its on_error as it is, once, and nothing follows (before, it
    went up into the scheduler: on smooth()'s own thread, lost, and the stream went on)."""
    subject: Subject[ChatEvent] = Subject()
    clock = TestScheduler()
    ending = Ending()

    def on_next(event: ChatEvent) -> None:
        ending.on_next(event.text)
        if event.text == "two ":
            raise KeyError("the subscriber's")

    subject.pipe(se.smooth(1.0, scheduler=clock)).subscribe(
        on_next, ending.on_error, ending.on_completed
    )
    subject.on_next(ChatEvent(T.TEXT_DELTA, text="one two three four"))  # "one " at once
    clock.advance_by(1.0)  # "two ", released by the timer
    subject.on_next(ChatEvent(T.TEXT_END))
    subject.on_completed()
    clock.advance_by(10.0)
    assert ending.items == ["one ", "two "]
    (error,) = ending.ends
    assert isinstance(error, KeyError) and error.args == ("the subscriber's",)


# --- to_wire() on a ChatModel's I/O thread


@pytest.mark.parametrize("format", sorted(WIRE_FORMATS))
def test_an_encoder_failing_at_the_end_on_the_io_thread_ends_the_stream(
    server: RunningServer, monkeypatch: pytest.MonkeyPatch, format: str
) -> None:
    """to_wire() whose encoder raises when it closes the body, at the end of a ChatModel's
    stream (on its I/O thread): the subscriber gets a ChatError naming the operator, after
    the bytes encoded before (before, the exception was lost on the I/O thread and the
    subscriber waited forever)."""

    def close(self: Any) -> bytes:
        raise RuntimeError("a bug in close()")

    monkeypatch.setattr(WIRE_FORMATS[format], "close", close)
    ending = Ending()
    with ChatModel(server.url + "/v1/chat/completions", "echo") as model:
        model.prompt("hi there").stream().pipe(to_wire(format, model="m")).subscribe(
            ending.on_next, ending.on_error, ending.on_completed
        )
        assert ending.done.wait(10.0), "the response never ended"
    (error,) = ending.ends
    assert isinstance(error, ChatError), repr(error)
    assert str(error) == "the to_wire() operator failed: RuntimeError: a bug in close()"
    assert b" there" in b"".join(ending.items)  # the text, as encoded before the end


# --- tee_to_redis() and read_from_redis(), whose ends come from the log's own loop thread

REDIS_LOG = str(PACKAGE / "serve" / "redis_log.py")


def in_redis_log(filename: str) -> bool:
    """The log's code, on the source's thread and on its loop thread (the operators
    before it have the chains above; the loop thread's own start and stop, shared with
    ChatModel, are no operator's)."""
    return filename == REDIS_LOG


def run_tee(url: str, fault: FaultAt) -> tuple[Ending, bool, str]:
    """FRAMES through parse(), respond() and tee_to_redis() into a real Redis, under
    ``fault`` (the log is made before; its loop thread starts while it is installed);
    whether the fault fired while subscribing; and what a failure there is named."""
    subject: Subject[Any] = Subject()
    ending = Ending()
    log = RedisStreamLog(url, prefix=f"faults-{next(RUNS)}")
    chain = subject.pipe(se.parse("openai"), se.respond(), tee_to_redis(log, "r1"))
    try:
        with fault.installed():
            while_subscribing = feed(chain, subject, fault, ending)
            assert ending.done.wait(10.0), "the stream never ended"
    finally:
        log.close()
    return ending, while_subscribing, "the tee_to_redis() operator"


def run_read(url: str, fault: FaultAt) -> tuple[Ending, bool, str]:
    """FRAMES' events, written to a real Redis by tee_to_redis(), read back by
    read_from_redis() under ``fault`` (a log of its own, whose loop thread starts while
    it is installed); whether the fault fired while subscribing; and what a failure there
    is named."""
    prefix = f"faults-{next(RUNS)}"
    with RedisStreamLog(url, prefix=prefix) as log:
        subject: Subject[Any] = Subject()
        subject.pipe(se.parse("openai"), se.respond(), tee_to_redis(log, "r1")).subscribe()
        for frame in FRAMES:
            subject.on_next(frame)
        subject.on_completed()
        log.flush()
        where = f"reading {log.key('events', 'r1')} from Redis"
    ending = Ending()
    with RedisStreamLog(url, prefix=prefix) as log, fault.installed():
        try:
            read_from_redis(log, "r1").subscribe(
                ending.on_next, ending.on_error, ending.on_completed
            )
        except Fault as error:  # from the subscription, or from its disposal after the end
            if not ending.ends:
                ending.on_error(error)
        while_subscribing = fault.fired
        assert ending.done.wait(10.0), "the stream never ended"
    return ending, while_subscribing, where


REDIS_RUNS = {"tee_to_redis": run_tee, "read_from_redis": run_read}


@functools.cache
def redis_lines(url: str, name: str) -> int:
    counter = FaultAt(in_redis_log)
    ending, _, _ = REDIS_RUNS[name](url, counter)
    assert ending.ends == [None] and ending.items
    return counter.lines


@settings(max_examples=300, phases=PHASES)
@given(data=st.data(), name=st.sampled_from(sorted(REDIS_RUNS)))
def test_a_fault_anywhere_in_the_redis_log_ends_the_stream(
    redis_url: str,  # noqa: F811
    data: st.DataObject,
    name: str,
) -> None:
    at = data.draw(st.integers(1, redis_lines(redis_url, name)), label="line")
    ending, while_subscribing, where = REDIS_RUNS[name](redis_url, FaultAt(in_redis_log, at))
    check_ending(ending, *((Fault,) if while_subscribing else ()))
    check_named(ending, where, in_redis_log)


def written_by_hand(url: str, data: bytes) -> tuple[RedisStreamLog, str]:
    """A log whose stream r1 holds ``data`` and its end, written as the tee writes."""
    log = RedisStreamLog(url, prefix=f"faults-{next(RUNS)}")
    key = log.key("events", "r1")
    log.io.run(log.append(key, data, 0))
    log.io.run(log.finish(key, 1, "completed"))
    return log, key


def test_reading_an_entry_that_is_no_event_fails_the_stream_naming_it(
    redis_url: str,  # noqa: F811
) -> None:
    """Before, decoding it raised inside the reading task, where nobody looked, and the
    subscriber waited forever."""
    log, key = written_by_hand(redis_url, b"not an event")
    ending = Ending()
    with log:
        read_from_redis(log, "r1").subscribe(ending.on_next, ending.on_error, ending.on_completed)
        assert ending.done.wait(10.0), "the stream never ended"
    (error,) = ending.ends
    assert isinstance(error, ChatError), repr(error)
    assert str(error).startswith(f"reading {key} from Redis failed: ValueError: not a JSON event")


def test_a_subscriber_raising_on_an_event_read_from_redis_gets_its_exception(
    redis_url: str,  # noqa: F811
) -> None:
    """As with stream(): on the log's loop thread there is nobody else to tell (before, the
    subscriber waited forever)."""
    log, _ = written_by_hand(redis_url, encode_event(ChatEvent(T.TEXT_DELTA, text="hi")))
    ending = Ending()

    def on_next(event: ChatEvent) -> None:
        raise KeyError("the subscriber's")

    with log:
        read_from_redis(log, "r1").subscribe(on_next, ending.on_error, ending.on_completed)
        assert ending.done.wait(10.0), "the stream never ended"
    (error,) = ending.ends
    assert isinstance(error, KeyError) and error.args == ("the subscriber's",)


# --- partial_json() checks for its extra when it is built


def test_partial_json_of_an_attrs_class_without_the_extra_fails_at_once() -> None:
    """With cattrs unimportable (a None entry in sys.modules, in a subprocess), building
    the operator raises the ImportError naming the extra; before #29.17 it was raised on
    the I/O thread at the end of the answer, and call().run() never returned."""
    code = (
        "import sys; sys.modules['cattrs'] = None\n"
        "import attrs\n"
        "from solon_events.operators import partial_json\n"
        "from solon_events.core.structured import JsonAnswer\n"
        "@attrs.frozen\n"
        "class Place:\n"
        "    city: str\n"
        "for build in (lambda: partial_json(Place), lambda: JsonAnswer(Place)):\n"
        "    try:\n"
        "        build()\n"
        "    except ImportError as error:\n"
        "        print(error)\n"
        "    else:\n"
        "        print('built')\n"
        "print(partial_json() is not None, JsonAnswer({'type': 'object'}) is not None)\n"
    )
    result = run_python(code, check=True)
    needs = "validating against an attrs class needs cattrs: pip install 'solon-events[structured]'"
    assert result.stdout.splitlines() == [needs, needs, "True True"]


# --- the tool loop, over the embedded provider


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    running = DevServer.run_in_thread()
    yield running
    running.close()


@tool
def get_weather(city: str) -> str:
    """Current weather in a city.

    Args:
        city: The city's name.
    """
    return f"sunny in {city}"


@tool
async def get_forecast(city: str) -> str:
    """Tomorrow's weather in a city.

    Args:
        city: The city's name.
    """
    await asyncio.sleep(0)
    return f"rain in {city}"


EDGES = ("stream", "astream")


RUNS = itertools.count()


def run_tool_loop(server: RunningServer, edge: str, fault: FaultAt) -> Ending:
    """Two tool steps (get_weather, a sync tool, then get_forecast, an async one), then
    the answer, through ``edge``, under ``fault`` (the prompt is made before; the model's
    I/O thread starts while it is installed). Each run has a model name of its own (the
    scenario counts a name's requests)."""
    ending = Ending()
    url = server.url + "/v1/chat/completions"
    model = ChatModel(url, f"agent:2:faults-{next(RUNS)}", max_retries=0)
    prompt = model.prompt("Weather in Paris?").tools(get_weather, get_forecast)
    try:
        with fault.installed():
            if edge == "stream":
                try:
                    response = prompt.stream()
                except Fault as error:  # building the request: the call fails
                    ending.on_error(error)
                    return ending
                response.subscribe(ending.on_next, ending.on_error, ending.on_completed)
                assert ending.done.wait(10.0), "the response never ended"
            else:

                async def read() -> None:
                    try:
                        async for event in prompt.astream():
                            ending.on_next(event)
                    except Exception as error:
                        ending.on_error(error)
                    else:
                        ending.on_completed()

                asyncio.run(asyncio.wait_for(read(), 10.0))
    finally:
        model.close()
    return ending


@functools.cache
def tool_loop_lines(server: RunningServer, edge: str) -> int:
    counter = FaultAt(in_tool_loop)
    ending = run_tool_loop(server, edge, counter)
    assert ending.ends == [None] and len([e for e in ending.items if e.type is T.TOOL_RESULT]) == 2
    return counter.lines


@pytest.mark.filterwarnings("ignore:coroutine .* was never awaited")  # a fault before the await
@settings(max_examples=200, phases=PHASES)
@given(data=st.data(), edge=st.sampled_from(EDGES))
def test_a_fault_anywhere_in_the_tool_loop_ends_the_response(
    server: RunningServer, data: st.DataObject, edge: str
) -> None:
    at = data.draw(st.integers(1, tool_loop_lines(server, edge)), label="line")
    ending = run_tool_loop(server, edge, FaultAt(in_tool_loop, at))
    allowed: tuple[type[BaseException], ...] = ()
    if not ending.items:
        allowed += (Fault,)  # before RESPONSE_START (building the request): the call fails
    check_ending(ending, *allowed)
    release_frames(ending)


def release_frames(ending: Ending) -> None:
    """Clear the frames the failures' tracebacks hold: an async tool's coroutine that a
    fault left unawaited is then finalized here, where its "never awaited" warning is this
    test's (and ignored), not whenever the garbage collector runs next, in another test."""
    errors = [end for end in ending.ends if end is not None]
    errors += [item.error for item in ending.items if getattr(item, "error", None) is not None]
    seen: set[int] = set()
    while errors:
        error = errors.pop()
        if id(error) not in seen:
            seen.add(id(error))
            traceback.clear_frames(error.__traceback__)
            errors += [e for e in (error.__cause__, error.__context__) if e is not None]


# --- a subscriber whose callbacks raise


def test_a_subscriber_raising_on_every_event_still_gets_its_end(server: RunningServer) -> None:
    """Its exception reaches its on_error as it is; before #29.17 the response hung (the
    exception on RESPONSE_START, or on the ERROR event, was lost on the I/O thread)."""
    ending = Ending()

    def on_next(event: ChatEvent) -> None:
        raise KeyError("the subscriber's")

    with ChatModel(server.url + "/v1/chat/completions", "echo") as model:
        model.prompt("hi there").stream().subscribe(on_next, ending.on_error, ending.on_completed)
        assert ending.done.wait(10.0), "the response never ended"
    (error,) = ending.ends
    assert isinstance(error, KeyError) and error.args == ("the subscriber's",)


def test_a_subscriber_raising_on_a_tool_result_gets_its_exception(server: RunningServer) -> None:
    ending = Ending()

    def on_next(event: ChatEvent) -> None:
        ending.on_next(event)
        if event.type is T.TOOL_RESULT:
            raise KeyError("the subscriber's")

    with ChatModel(server.url + "/v1/chat/completions", "weather") as model:
        prompt = model.prompt("Weather?").tools(get_weather)
        prompt.stream().subscribe(on_next, ending.on_error, ending.on_completed)
        assert ending.done.wait(10.0), "the response never ended"
    (error,) = ending.ends
    assert isinstance(error, KeyError)
    assert ending.items[-1].type is T.ERROR and ending.items[-1].error is error
