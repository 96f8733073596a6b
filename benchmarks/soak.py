"""The chaos soak: many streamed responses against faulty providers, looking for what
breaks only after thousands (``python -m benchmarks --soak N``).

N responses run ``--concurrency`` at a time in this process, against the embedded provider
(on a thread of its own here: a long-lived provider), each with a plan drawn from a seed:

- **faults**: three models, ``told:a``, ``told:b`` and ``told:c`` (the provider's ``told``
  scenario), each told in the prompt what to do: answer whole (the echo of the prompt,
  slow frames, a short stall) or fail before answering (HTTP 429,
  500, 503, an HTML page, a reset connection) or after (a frame cut in half, a truncated
  body, an error frame, a stall past the idle timeout);
- **groups**: one model, a fallback chain, a hedge (after 0 to 50 ms), or one nested in
  the other;
- **ways and cancellations**: ``astream()`` read whole or left by ``break`` after some
  events, ``acall()``, ``stream()`` read whole, cut by ``take(k)`` or disposed after a
  random time.

What a plan says of the answer is known before it runs: whole (the first model of a
fallback that answers answers whole, or every model of a hedge that answers does), failed,
or either (a hedge between a whole answer and a failing one). Every 1,000 responses, and
at the end, it prints

- **hangs**: responses not ended 60 s after they started;
- **untyped**: failures that are not a :class:`~solon_events.ChatError`;
- **broken**: streams read whole that do not start with RESPONSE_START and end with one
  terminal event;
- **lost**: answers served whole but reported failed or empty;
- **wrong**: a success where the plan says failure, or a text that is none of the whole
  answers;
- the sockets open to the provider, the asyncio tasks, the threads and the RSS;

then, once every response ended and the models are closed, the sockets, tasks and threads
left over (**leaked**). A clean run prints zeros in each of those columns.
``--gateways`` runs the same plans through two ``solon-events serve`` processes sharing a
redis-server (:mod:`benchmarks.soak_gateways`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

import attrs
from reactivex import operators as ops

from solon_events import ChatError, ChatEvent, ChatEventType, ChatModel
from solon_events.client.routing import ModelGroup
from solon_events.devserver import DevServer

Kind = Literal["whole", "before", "mid", "either"]
"""What a model (or group) does with a response: answers it whole, fails before its first
answer event, fails after it, or (a hedge) either."""

NAMES = ("a", "b", "c")
FAULTS: Mapping[str, tuple[Kind, int]] = {  # the told scenario's words, their kind, weight
    "ok": ("whole", 40),
    "slow:6:0.01": ("whole", 6),
    "stall:0.3": ("whole", 4),
    "status:429": ("before", 5),
    "status:500": ("before", 5),
    "status:503": ("before", 5),
    "html": ("before", 3),
    "reset": ("before", 6),
    "cut": ("mid", 6),
    "truncate": ("mid", 5),
    "error-frame": ("mid", 5),
    "stall:6": ("mid", 2),
}
WHOLE_TEXTS = {"slow:6:0.01": "0 1 2 3 4 5 ", "stall:0.3": "Stalling and done."}
"""The answers of the whole faults that do not echo the prompt."""
IDLE_TIMEOUT = 4.0
HANG_AFTER = 60.0
REPORT_EVERY = 1000
T = ChatEventType


@attrs.frozen
class Plan:
    """One response: its prompt (which tells each model its fault), the shape of the
    models that answer it, and how it is read."""

    number: int
    faults: Mapping[str, str]
    shape: tuple[Any, ...]  # ("one", name) | ("fallback", *shapes) | ("hedge", after, *shapes)
    way: str  # "astream", "acall", "stream" (or the gateways' "http")
    cancel: tuple[str, float] | None  # ("break", k) | ("take", k) | ("dispose", seconds)
    table: Mapping[str, tuple[Kind, int]] = FAULTS  # what each fault does

    @property
    def prompt(self) -> str:
        told = "".join(f" {name}={fault}" for name, fault in self.faults.items() if fault != "ok")
        return f"soak {self.number}{told}"  # a model not told answers the echo of it

    def kind(self, shape: tuple[Any, ...] | None = None) -> Kind:
        """What the plan's models do with it (see :data:`Kind`)."""
        shape = shape or self.shape
        if shape[0] == "one":
            return self.table[self.faults[shape[1]]][0]
        kinds = [self.kind(member) for member in _members(shape)]
        if shape[0] == "fallback":
            return next((kind for kind in kinds if kind != "before"), "before")
        answering = {kind for kind in kinds if kind != "before"}
        if not answering:
            return "before"
        return answering.pop() if len(answering) == 1 else "either"

    def texts(self) -> set[str]:
        """The texts a whole answer of this plan may have."""
        found = set()
        for fault in self.faults.values():
            if self.table[fault][0] == "whole":
                found.add(WHOLE_TEXTS.get(fault, self.prompt))
        return found


def _members(shape: tuple[Any, ...]) -> tuple[tuple[Any, ...], ...]:
    return shape[1:] if shape[0] == "fallback" else shape[2:]


def draw(number: int, seed: int, table: Mapping[str, tuple[Kind, int]] = FAULTS) -> Plan:
    """The plan of response ``number`` of the soak seeded ``seed`` (its faults drawn from
    ``table``)."""
    rng = random.Random(f"{seed}:{number}")
    words, weights = list(table), [weight for _kind, weight in table.values()]
    faults = {name: rng.choices(words, weights)[0] for name in NAMES}
    one = [("one", name) for name in NAMES]
    shape: tuple[Any, ...] = rng.choice(
        [
            one[0],
            ("fallback", *one),
            ("fallback", one[0], one[1]),
            ("hedge", rng.choice([0.0, 0.01, 0.05]), *one),
            ("fallback", one[0], ("hedge", 0.02, one[1], one[2])),
            ("hedge", 0.03, one[0], ("fallback", one[1], one[2])),
        ]
    )
    way = rng.choice(["astream", "astream", "acall", "stream"])
    cancel: tuple[str, float] | None = None
    if way == "astream" and rng.random() < 0.25:
        cancel = ("break", rng.randint(1, 12))
    elif way == "stream" and rng.random() < 0.4:
        cancel = rng.choice([("take", rng.randint(1, 12)), ("dispose", rng.uniform(0, 0.2))])
    return Plan(number, faults, shape, way, cancel, table)


@attrs.define
class Tally:
    """What the soak counted so far."""

    responses: int = 0
    cancelled: int = 0
    hangs: int = 0
    untyped: int = 0
    broken: int = 0
    lost: int = 0
    wrong: int = 0
    succeeded: int = 0
    failed: int = 0
    examples: list[str] = attrs.Factory(list)

    def note(self, what: str, plan: Plan, detail: object) -> None:
        """Count one anomaly of kind ``what`` (a field) and keep its first examples."""
        setattr(self, what, getattr(self, what) + 1)
        if len(self.examples) < 20:
            self.examples.append(f"{what}: #{plan.number} {plan.shape} {plan.prompt!r}: {detail}")

    def figures(self) -> dict[str, Any]:
        """The counts, as a plain mapping."""
        return {k: v for k, v in attrs.asdict(self).items() if k != "examples"}


@attrs.frozen
class Outcome:
    """How one response ended: its events (when read as a stream), its text, its failure,
    whether it was cancelled on purpose."""

    events: tuple[ChatEvent, ...] = ()
    text: str | None = None
    error: BaseException | None = None
    cancelled: bool = False


def judge(plan: Plan, outcome: Outcome, tally: Tally) -> None:
    """Count ``outcome`` against what ``plan`` says of it."""
    tally.responses += 1
    error = outcome.error
    if error is not None and not isinstance(error, ChatError):
        tally.note("untyped", plan, repr(error))
    if outcome.cancelled:
        tally.cancelled += 1
        return
    if outcome.events and not _well_formed(outcome.events, error):
        tally.note("broken", plan, [event.type.name for event in outcome.events][-5:])
    kind = plan.kind()
    if error is None and outcome.text:
        tally.succeeded += 1
        if kind in ("before", "mid") or outcome.text not in plan.texts():
            tally.note("wrong", plan, f"{kind}, answered {outcome.text!r}")
    else:
        tally.failed += 1
        if kind == "whole":
            tally.note("lost", plan, repr(error) if error else "an empty answer")


def _well_formed(events: tuple[ChatEvent, ...], error: BaseException | None) -> bool:
    types = [event.type for event in events]
    terminal = [t for t in types if t.is_terminal]
    ends = T.ERROR if error is not None else T.RESPONSE_END
    return types[0] is T.RESPONSE_START and terminal == [ends] and types[-1] is ends


class Soak:
    """The soak's models, on one embedded provider."""

    def __init__(self, provider_url: str, concurrency: int) -> None:
        self.models = {
            name: ChatModel(
                f"{provider_url}/v1/chat/completions",
                f"told:{name}",
                max_retries=0,
                timeout=30,
                idle_timeout=IDLE_TIMEOUT,
                connection_limit=concurrency * 2,
            )
            for name in NAMES
        }

    def subject(self, shape: tuple[Any, ...]) -> ChatModel | ModelGroup:
        """The model or group of ``shape``."""
        if shape[0] == "one":
            return self.models[shape[1]]
        members = [self.subject(member) for member in _members(shape)]
        if shape[0] == "fallback":
            return members[0].fallback(*members[1:])
        return members[0].hedge(*members[1:], after=shape[1])

    async def run(self, plan: Plan) -> Outcome:
        """Run ``plan``'s response the way it says."""
        prompt = self.subject(plan.shape).prompt(plan.prompt)
        if plan.way == "acall":
            try:
                return Outcome(text=(await prompt.acall()).text)
            except Exception as exc:
                return Outcome(error=exc)
        if plan.way == "astream":
            return await _read_astream(prompt.astream(), plan.cancel)
        return await _read_stream(prompt, plan.cancel)

    def close(self) -> None:
        for model in self.models.values():
            model.close()


async def _read_astream(events: Any, cancel: tuple[str, float] | None) -> Outcome:
    seen: list[ChatEvent] = []
    try:
        async for event in events:
            seen.append(event)
            if cancel is not None and len(seen) >= cancel[1]:
                return Outcome(tuple(seen), cancelled=True)  # break
    except Exception as exc:
        return Outcome(tuple(seen), _text(seen), exc)
    finally:
        await events.aclose()
    return Outcome(tuple(seen), _text(seen))


async def _read_stream(prompt: Any, cancel: tuple[str, float] | None) -> Outcome:
    """``stream()`` (events on the model's I/O thread), cut by ``take`` or disposed."""
    loop = asyncio.get_running_loop()
    ended: asyncio.Future[BaseException | None] = loop.create_future()
    seen: list[ChatEvent] = []

    def end(error: BaseException | None) -> None:
        def settle() -> None:
            if not ended.done():
                ended.set_result(error)

        loop.call_soon_threadsafe(settle)

    source = prompt.stream()
    if cancel is not None and cancel[0] == "take":
        source = source.pipe(ops.take(int(cancel[1])))
    subscription = source.subscribe(seen.append, end, lambda: end(None))
    if cancel is not None and cancel[0] == "dispose":
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(ended), cancel[1])
        if not ended.done():
            subscription.dispose()
            return Outcome(tuple(seen), cancelled=True)
    error = await ended
    cut = cancel is not None and cancel[0] == "take" and len(seen) >= cancel[1]
    return Outcome(tuple(seen), _text(seen), error, cancelled=cut)


def _text(events: list[ChatEvent]) -> str | None:
    last = events[-1] if events else None
    if last is None or last.type is not T.RESPONSE_END or last.response is None:
        return None
    return last.response.text


# What the process holds.


def rss_mib() -> float:
    """This process's resident memory, MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def connections(port: int) -> tuple[int, int]:
    """The TCP connections of this machine established to ``port`` (clients' ends) and
    from it (the server's ends)."""
    clients = servers = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                if fields[3] != "01":  # established
                    continue
                clients += int(fields[2].rsplit(":", 1)[1], 16) == port
                servers += int(fields[1].rsplit(":", 1)[1], 16) == port
    return clients, servers


HEADER = (
    f"{'responses':>9} {'s/1000':>7} {'CPU s':>6} {'hangs':>5} {'untyped':>7} {'broken':>6} "
    f"{'lost':>5} {'wrong':>5} {'sockets':>7} {'tasks':>5} {'threads':>7} {'RSS MiB':>8}"
)


def progress_line(
    tally: Tally, seconds: float, cpu: float, sockets: int, tasks: int, threads: int
) -> str:
    """One line of the running figures: seconds and this process's CPU seconds per
    1,000 responses since the last line, the counts, the sockets, tasks and threads held
    now and the RSS."""
    return (
        f"{tally.responses:>9} {seconds:>7.2f} {cpu:>6.2f} {tally.hangs:>5} {tally.untyped:>7} "
        f"{tally.broken:>6} {tally.lost:>5} {tally.wrong:>5} {sockets:>7} {tasks:>5} "
        f"{threads:>7} {rss_mib():>8.1f}"
    )


def cpu_seconds() -> float:
    """This process's CPU time so far (user and system)."""
    times = os.times()
    return times.user + times.system


async def drive(
    plans: Iterator[Plan],
    run: Callable[[Plan], Any],
    tally: Tally,
    concurrency: int,
    report: Callable[[float, float], None],
    judged: Callable[[Plan, Outcome, Tally], None] = judge,
) -> None:
    """Run every plan, ``concurrency`` at a time, each ``judged`` as it ends (a hang when
    it has not ended after :data:`HANG_AFTER` seconds); ``report(seconds, CPU seconds)``
    (per 1,000 responses since the last report) every :data:`REPORT_EVERY` responses and
    at the end."""
    gate = asyncio.Semaphore(concurrency)
    since = [time.perf_counter(), cpu_seconds(), 0]  # the last report: when, CPU, how many

    def reported() -> None:
        now, cpu, count = time.perf_counter(), cpu_seconds(), tally.responses
        per = 1000 / max(1, count - since[2])
        report((now - since[0]) * per, (cpu - since[1]) * per)
        since[:] = [now, cpu, count]

    async def one(plan: Plan) -> None:
        try:
            outcome = await asyncio.wait_for(run(plan), HANG_AFTER)
        except asyncio.TimeoutError:
            tally.note("hangs", plan, f"not ended after {HANG_AFTER:g} s")
            tally.responses += 1
        else:
            judged(plan, outcome, tally)
        finally:
            gate.release()
        if tally.responses % REPORT_EVERY == 0:
            reported()

    running: set[asyncio.Future[None]] = set()
    for plan in plans:
        await gate.acquire()
        task = asyncio.ensure_future(one(plan))
        running.add(task)
        task.add_done_callback(running.discard)
    if running:
        await asyncio.wait(running)
    if tally.responses % REPORT_EVERY:
        reported()


def main(responses: int, concurrency: int = 50, seed: int = 1) -> dict[str, Any]:
    """Run the soak in this process; print its figures and return them."""
    baseline_threads = threading.active_count()
    provider = DevServer.run_in_thread()
    port = provider.port
    soak = Soak(provider.url, concurrency)
    tally = Tally()
    held: dict[str, Any] = {}
    print(f"{responses} responses, {concurrency} at a time, seed {seed}")
    print(HEADER)

    async def soaked() -> None:
        def report(seconds: float, cpu: float) -> None:
            sockets = connections(port)[0]
            tasks = len(asyncio.all_tasks()) - 1
            threads = threading.active_count()
            print(progress_line(tally, seconds, cpu, sockets, tasks, threads), flush=True)

        plans = (draw(number, seed) for number in range(responses))
        await drive(plans, soak.run, tally, concurrency, report)
        await asyncio.to_thread(soak.close)
        await asyncio.sleep(0.5)  # the closed connections' ends go
        held["tasks"] = len(asyncio.all_tasks()) - 1

    try:
        asyncio.run(soaked())
        held["sockets"] = sum(connections(port))
    finally:
        provider.close()
    time.sleep(0.2)
    held["threads"] = threading.active_count() - baseline_threads
    figures = {**tally.figures(), "leaked": held, "rss_mib": rss_mib()}
    print(
        f"leaked: {held['sockets']} sockets, {held['tasks']} tasks, {held['threads']} threads; "
        f"{tally.succeeded} answered, {tally.failed} failed, {tally.cancelled} cancelled"
    )
    for example in tally.examples:
        print("  " + example)
    return figures
