"""Cost of the Rx pipeline itself: hand-built events through normalize, aggregate, guard.

The baseline is the same events through three no-op ``ops.map`` in the same run.
Run: ``python -m benchmarks.bench_pipeline [N]``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

import reactivex
from reactivex import operators as ops

from solon_events import (
    ChatEvent,
    ChatEventFilter,
    ChatEventType,
    ToolCall,
    Usage,
    aggregate,
    guard,
    normalize,
)

T = ChatEventType


def realistic_events(n: int) -> list[ChatEvent]:
    """``n`` events shaped like a reasoning model's answer with one tool call per step."""
    per_step = 1000
    events: list[ChatEvent] = []
    step = 0
    while len(events) < n:
        events.append(ChatEvent(T.STEP_START, step=step))
        for i in range(per_step // 4):
            events.append(ChatEvent(T.THINKING_DELTA, text=f"think {i} ", step=step))
        for i in range(per_step // 2):
            events.append(ChatEvent(T.TEXT_DELTA, text=f"word{i} ", step=step))
        events.append(
            ChatEvent(
                T.TOOL_CALL_START,
                index=0,
                tool_call_id=f"call_{step}",
                tool_call=ToolCall(id=f"call_{step}", name="weather"),
                step=step,
            )
        )
        for part in ('{"city"', ': "Paris"', "}"):
            events.append(
                ChatEvent(
                    T.TOOL_CALL_ARGS_DELTA,
                    index=0,
                    tool_call_id=f"call_{step}",
                    text=part,
                    step=step,
                )
            )
        events.append(ChatEvent(T.TOOL_CALL_END, index=0, tool_call_id=f"call_{step}", step=step))
        for i in range(per_step // 4 - 8):
            events.append(ChatEvent(T.TEXT_DELTA, text=f"more{i} ", step=step, index=1))
        events.append(
            ChatEvent(
                T.USAGE,
                usage=Usage(prompt_tokens=10, completion_tokens=990, total_tokens=1000),
                step=step,
            )
        )
        events.append(ChatEvent(T.STEP_END, step=step))
        step += 1
    return events[:n]


def run(events: list[ChatEvent], *operators: Callable) -> float:
    """Seconds to push ``events`` through ``operators`` to a counting subscriber."""
    count = 0

    def on_next(_: object) -> None:
        nonlocal count
        count += 1

    start = time.process_time()
    reactivex.from_iterable(events).pipe(*operators).subscribe(on_next)
    elapsed = time.process_time() - start
    assert count >= len(events) * 0.9, count
    return elapsed


def main(n: int = 1_000_000) -> None:
    events = realistic_events(n)
    identity = [ops.map(lambda e: e) for _ in range(3)]
    baseline = min(run(events, *identity) for _ in range(2))
    pipeline = min(
        run(events, normalize(), aggregate(), guard(ChatEventFilter.DEFAULT)) for _ in range(2)
    )
    us = 1e6 / n
    print(f"events: {n:,}")
    print(f"{'pipeline':<40}{'us/event':>10}{'ratio':>8}")
    print(f"{'baseline: 3 x ops.map(identity)':<40}{baseline * us:>10.3f}{1.0:>8.2f}")
    print(
        f"{'normalize + aggregate + guard(DEFAULT)':<40}{pipeline * us:>10.3f}"
        f"{pipeline / baseline:>8.2f}"
    )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000)
