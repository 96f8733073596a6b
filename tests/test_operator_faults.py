"""A failure inside an operator, or inside the tool loop, ends the stream; it never hangs
(#29.17).

An exception is raised at a random line of solon_events' own code (a trace function raises
it at the N-th line executed there, N drawn by hypothesis) while a stream runs through
every operator, or through a ChatModel's tool loop: each stream still ends, exactly once,
and an error that reaches ``on_error`` is a ChatError (or the documented ValueError of
``partial_json()``). Only the code that delivers an operator's failure
(``solon_events/_safe_callbacks.py``) is left out. Before #29.17 an exception in an
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
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import attrs
import pytest
import reactivex
from hypothesis import Phase, given, settings
from hypothesis import strategies as st
from reactivex.subject import Subject
from recorded import body_of
from rich.console import Console

import solon_events
from solon_events import (
    ChatError,
    ChatEvent,
    ChatEventFilter,
    ChatEventType,
    ChatModel,
    tool,
)
from solon_events.adapters import to_agui, to_vercel
from solon_events.devserver import DevServer, RunningServer
from solon_events.devserver.turns import Finish, Script, Text, ToolCallPart, TurnUsage
from solon_events.display import live
from solon_events.operators import (
    aggregate,
    argument_deltas,
    final_response,
    guard,
    normalize,
    parse,
    partial_arguments,
    partial_json,
    respond,
    text_deltas,
)
from solon_events.telemetry import instrument
from solon_events.wire.sse import SSEDecoder

T = ChatEventType
PACKAGE = Path(solon_events.__file__).resolve().parent
SAFETY_NET = str(PACKAGE / "_safe_callbacks.py")
TOOL_LOOP = (str(PACKAGE / "tool_loop.py"), str(PACKAGE / "tools"))
PHASES = [Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink]  # explain would trace too


class Fault(RuntimeError):
    """The exception raised at a random line."""


class FaultAt:
    """A trace function raising :class:`Fault` at the ``at``-th line executed in the files
    ``wanted`` accepts, in any thread (None: only count the lines)."""

    def __init__(self, wanted: Callable[[str], bool], at: int | None = None) -> None:
        self._wanted = wanted
        self._at = at
        self._lock = threading.Lock()
        self.lines = 0
        self.fired = False

    def _line(self, frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line":
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
        try:
            yield self
        finally:
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
                Text(': "Paris"}'),
                Finish("stop"),
            ],
            TurnUsage(prompt=5, completion=7),
        ),
    )
)
"""A step with a tool call and a JSON answer, as OpenAI sends it."""

Chain = Callable[[reactivex.Observable[Any]], reactivex.Observable[Any]]
CHAINS: dict[str, Chain] = {
    "parse normalize aggregate guard": lambda s: s.pipe(
        parse("openai"), normalize(), aggregate(), guard(ChatEventFilter.all())
    ),
    "respond partial_arguments final_response": lambda s: s.pipe(
        parse("openai"), respond(), partial_arguments(), final_response()
    ),
    "respond(partial_arguments) text_deltas": lambda s: s.pipe(
        parse("openai"), respond(partial_arguments=True), text_deltas()
    ),
    "argument_deltas": lambda s: s.pipe(parse("openai"), respond(), argument_deltas()),
    "partial_json": lambda s: s.pipe(parse("openai"), respond(), partial_json(Place)),
    "to_agui": lambda s: s.pipe(parse("openai"), respond(), to_agui()),
    "to_vercel": lambda s: s.pipe(parse("openai"), respond(), to_vercel()),
    "instrument": lambda s: s.pipe(
        parse("openai"), respond(), instrument(model="m", provider="openai")
    ),
    "live": lambda s: s.pipe(parse("openai"), respond(), live(console=Console(file=io.StringIO()))),
}


def run_chain(name: str, fault: FaultAt) -> tuple[Ending, bool]:
    """``CHAINS[name]`` over FRAMES, pushed by hand into a subject, under ``fault``; and
    whether the fault fired while subscribing (before the first frame).

    No operator lets its failure out into the subject's caller before its subscriber has
    its end; after it, only a failure to dispose of the subscription goes up (as in RxPY:
    an AutoDetachObserver disposes once its end is delivered, and there is nobody else
    left to tell)."""
    subject: Subject[Any] = Subject()
    ending = Ending()
    chain = CHAINS[name](subject)  # built before: building is no callback
    with fault.installed():
        chain.subscribe(ending.on_next, ending.on_error, ending.on_completed)
        while_subscribing = fault.fired
        try:
            for frame in FRAMES:
                subject.on_next(frame)
            subject.on_completed()
        except Fault:
            assert ending.ends, "a fault escaped into the source before the end"
    return ending, while_subscribing


@functools.cache
def chain_lines(name: str) -> int:
    """The lines of our code a whole run of ``CHAINS[name]`` executes."""
    counter = FaultAt(in_operators)
    ending, _ = run_chain(name, counter)
    assert ending.ends == [None] and ending.items
    return counter.lines


@settings(max_examples=1000, phases=PHASES)
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
        model.prompt('{"city": "Paris"}').stream().pipe(partial_json(Place)).subscribe(
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

    subject.pipe(parse("openai"), normalize(), text_deltas()).subscribe(
        lambda _text: on_next(ChatEvent(T.TEXT_DELTA)), ending.on_error, ending.on_completed
    )
    with pytest.raises(KeyError, match="the subscriber's"):
        for frame in FRAMES:
            subject.on_next(frame)
    assert not ending.ends


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
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
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
