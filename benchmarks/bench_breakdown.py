"""Where a corpus replay's time goes: the pipeline's layers added one at a time.

For each dialect's corpus recordings together, each column runs one more layer of
``replay()`` than the column before it, and prints its cost as a ratio to the baseline
of :mod:`benchmarks.bench_dialects` (split the bytes into frames, ``orjson.loads`` each):

- ``decode``: read the payloads out of the body as ``replay()`` does, and decode each;
- ``dialect``: and hand each to the dialect, which builds its events (sent nowhere);
- ``parse``: through a ``ParseStage`` instead: the step's accumulator, STEP_START and
  STEP_END with the step's response, the end-of-stream checks (into a no-op observer);
- ``respond``: and on through normalize, aggregate and guard (RESPONSE_START,
  RESPONSE_END with the final response);
- ``replay``: the whole ``replay(...).subscribe(...)``, the ratio of the corpus rows.

The difference between two columns is what that layer costs. On recordings of a few frames
the fixed costs of a stream dominate every layer: its objects, the events every response
has (start, step, end) and the two response snapshots.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from solon_events import ChatError, ChatEventFilter, get_dialect
from solon_events.core import stages
from solon_events.core.parsing import DONE, ParseStage, decode_payload
from solon_events.dialects import ChatDialect, ChatStreamContext
from solon_events.wire.sse import iter_frames

from .bench_dialects import (
    CORPUS,
    CORPUS_DIALECTS,
    best_of,
    loops_for,
    replay_once,
    split_and_decode,
)

LAYERS = ("decode", "dialect", "parse", "respond", "replay")


class _Discard:
    """An observer that drops everything (a failure is raised: the benchmark is wrong)."""

    def on_next(self, _event: object) -> None:
        pass

    def on_error(self, error: Exception) -> None:
        raise error

    def on_completed(self) -> None:
        pass


def decode_only(body: bytes) -> None:
    """Read the payloads out of ``body`` as replay() does and decode each."""
    for number, frame in enumerate(iter_frames(body), 1):
        decode_payload(frame, number)


def dialect_only(body: bytes, dialect: ChatDialect) -> None:
    """Decode, then translate each payload with ``dialect`` (its events go nowhere)."""
    record: list[object] = []
    ctx = ChatStreamContext(record=record)  # type: ignore[arg-type]
    for number, frame in enumerate(iter_frames(body), 1):
        payload = decode_payload(frame, number)
        if payload is DONE:
            dialect.parse_done(ctx)
        else:
            dialect.parse_frame(ctx, payload)
        record.clear()
    dialect.end_of_stream(ctx)


def parse_into(body: bytes, dialect: ChatDialect, down: stages.Sink) -> None:
    """One step's ParseStage over ``body``, into ``down``."""
    stage = ParseStage(dialect, down, response_id="resp_bench")
    stage.start()
    for frame in iter_frames(body):
        stage.on_next(frame)
    stage.on_completed()


def respond_into_discard() -> stages.Sink:
    """normalize -> aggregate -> guard (the default filter) into a no-op observer."""
    return stages.respond(
        _Discard(),
        response_id="resp_bench",
        event_filter=ChatEventFilter.DEFAULT,
        fold_steps=False,
    )


def layers(body: bytes, name: str) -> dict[str, Callable[[], object]]:
    """The baseline and each layer of :data:`LAYERS` as a call over ``body``."""
    dialect = get_dialect(name)
    return {
        "baseline": lambda: split_and_decode(body),
        "decode": lambda: decode_only(body),
        "dialect": lambda: dialect_only(body, dialect),
        "parse": lambda: parse_into(body, dialect, _Discard()),
        "respond": lambda: parse_into(body, dialect, respond_into_discard()),
        "replay": lambda: replay_once(body, name),
    }


def breakdown(paths: list[Path], dialect: str, repeat: int = 15) -> dict[str, float]:
    """Seconds per pass of the baseline and of each layer, summed over ``paths``.

    A recording of a provider failure is left out, as in the corpus rows.
    """
    total = dict.fromkeys(("baseline", *LAYERS), 0.0)
    for path in paths:
        body = path.read_bytes()
        try:
            replay_once(body, dialect)
        except ChatError:
            continue
        works = layers(body, dialect)
        best = best_of(works, loops_for(works["replay"], 0.01), repeat)
        for name, seconds in best.items():
            total[name] += seconds
    return total


HEADER = f"{'corpus':<20}{'baseline us':>12}" + "".join(f"{name:>9}" for name in LAYERS)


def rows(repeat: int = 15) -> list[str]:
    """One row per corpus dialect: the baseline in us, then each layer as a ratio to it."""
    if not CORPUS.is_dir():
        return ["(../shared/corpus not present: breakdown skipped)"]
    lines = []
    for folder, dialect in CORPUS_DIALECTS.items():
        total = breakdown(sorted((CORPUS / folder).glob("*.jsonl")), dialect, repeat)
        base = total["baseline"]
        ratios = "".join(f"{total[name] / base:>9.2f}" for name in LAYERS)
        lines.append(f"{folder:<20}{base * 1e6:>12.1f}{ratios}")
    return lines


def main(repeat: int = 15) -> None:
    print(HEADER)
    for row in rows(repeat):
        print(row)


if __name__ == "__main__":
    main()
