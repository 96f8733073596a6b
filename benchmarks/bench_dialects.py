"""Cost per frame of the whole replay pipeline, per dialect, against a JSON-decode baseline.

Times are CPU time of this process (time.process_time), best of several runs.

For each dialect: parse -> normalize -> aggregate -> guard over (a) every corpus recording
(when ../shared/corpus exists) and (b) a synthetic stream of N text-delta frames. The
baseline, measured in the same run, splits the same bytes into frames and ``orjson.loads``
each payload: the least any consumer of these bytes must do. The "floor" column is the
least any implementation of the event model must do, as a ratio to the same baseline: the
baseline's work plus building as many events as the pipeline delivers and handing each to
the subscriber (no parsing logic, no snapshots).
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

import orjson

from solon_events import ChatError, ChatEventFilter, ChatEventType, replay
from solon_events.dialects import ChatStreamContext

from .recordings import CORPUS

CORPUS_DIALECTS = {
    "openai-chat": "openai",
    "anthropic": "anthropic",
    "gemini": "gemini",
    "openai-responses": "openai-responses",
}


def _sse(payloads: list[bytes]) -> bytes:
    return b"".join(b"data: " + p + b"\n\n" for p in payloads)


def _ndjson(payloads: list[bytes]) -> bytes:
    return b"".join(p + b"\n" for p in payloads)


def _openai(n: int) -> bytes:
    head = b'{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m",'
    delta = head + b'"choices":[{"index":0,"delta":{"content":"word "},"finish_reason":null}]}'
    end = head + b'"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}'
    usage = (
        head + b'"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":9,"total_tokens":14}}'
    )
    return _sse([delta] * (n - 2) + [end, usage]) + b"data: [DONE]\n\n"


def _anthropic(n: int) -> bytes:
    start = (
        b'{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant",'
        b'"model":"claude","content":[],"usage":{"input_tokens":5,"output_tokens":1}}}'
    )
    block = b'{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}'
    delta = b'{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"word "}}'
    tail = [
        b'{"type":"content_block_stop","index":0}',
        b'{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":9}}',
        b'{"type":"message_stop"}',
    ]
    return _sse([start, block] + [delta] * (n - 5) + tail)


def _responses(n: int) -> bytes:
    created = b'{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","status":"in_progress","model":"m","output":[]}}'
    added = b'{"type":"response.output_item.added","output_index":0,"item":{"id":"msg_1","type":"message","status":"in_progress","role":"assistant","content":[]}}'
    delta = b'{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"word "}'
    done = b'{"type":"response.output_item.done","output_index":0,"item":{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[]}}'
    completed = b'{"type":"response.completed","response":{"id":"resp_1","status":"completed","model":"m","output":[],"usage":{"input_tokens":5,"output_tokens":9,"total_tokens":14}}}'
    return _sse([created, added] + [delta] * (n - 4) + [done, completed])


def _gemini(n: int) -> bytes:
    delta = b'{"candidates":[{"content":{"parts":[{"text":"word "}],"role":"model"},"index":0}],"modelVersion":"g","responseId":"r1"}'
    end = b'{"candidates":[{"content":{"parts":[{"text":"."}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":9,"totalTokenCount":14},"modelVersion":"g","responseId":"r1"}'
    return _sse([delta] * (n - 1) + [end])


def _ollama(n: int) -> bytes:
    delta = b'{"model":"llama","created_at":"2025-01-01T00:00:00Z","message":{"role":"assistant","content":"word "},"done":false}'
    end = b'{"model":"llama","created_at":"2025-01-01T00:00:00Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","prompt_eval_count":5,"eval_count":9}'
    return _ndjson([delta] * (n - 1) + [end])


SYNTHETIC: dict[str, Callable[[int], bytes]] = {
    "openai": _openai,
    "anthropic": _anthropic,
    "openai-responses": _responses,
    "gemini": _gemini,
    "ollama": _ollama,
}


def split_and_decode(body: bytes) -> int:
    """The baseline's work: split ``body`` into payloads and decode each; their number."""
    count = 0
    for line in body.splitlines():
        if line.startswith(b"data: "):
            line = line[6:]
        elif not line or line.startswith((b"event:", b":")):
            continue
        if line != b"[DONE]":
            orjson.loads(line)
        count += 1
    return count


def replay_once(body: bytes, dialect: str) -> None:
    """The pipeline's work: replay ``body``: decode, parse, normalize, aggregate and guard."""
    failures: list[BaseException] = []
    replay(body, dialect, ChatEventFilter.DEFAULT).subscribe(lambda _e: None, failures.append)
    if failures:
        raise failures[0]


def delivered_events(body: bytes, dialect: str) -> int:
    """How many events replaying ``body`` delivers (with the default filter)."""
    events: list[object] = []
    replay(body, dialect, ChatEventFilter.DEFAULT).subscribe(events.append, lambda _e: None)
    return len(events)


def floor_once(body: bytes, events: int) -> None:
    """The floor's work: the baseline's, then ``events`` events built and delivered."""
    split_and_decode(body)
    record: list[object] = []
    send = ChatStreamContext(record=record).send  # type: ignore[arg-type]
    delta = ChatEventType.TEXT_DELTA
    take = record.pop
    for _ in range(events):
        send(delta)
        _discard(take())


def _discard(_event: object) -> None:
    """A subscriber's on_next that does nothing."""


def _seconds(work: Callable[[], object], loops: int) -> float:
    """CPU seconds per call of ``work``, over ``loops`` calls in a row."""
    start = time.process_time()
    for _ in range(loops):
        work()
    return (time.process_time() - start) / loops


def best_of(works: dict[str, Callable[[], object]], loops: int, repeat: int) -> dict[str, float]:
    """The least CPU seconds per call of each of ``works`` over ``repeat`` rounds.

    In each round every work runs ``loops`` times in a row, after a full garbage
    collection, one work after the other: a burst of load on the machine weighs on all
    of them alike.
    """
    best = dict.fromkeys(works, float("inf"))
    for _ in range(repeat):
        for name, work in works.items():
            gc.collect()
            best[name] = min(best[name], _seconds(work, loops))
    return best


def loops_for(work: Callable[[], object], batch_seconds: float) -> int:
    """How many calls of ``work`` in a row last about ``batch_seconds``."""
    return max(1, int(batch_seconds / max(_seconds(work, 1), 1e-6)))


def measure(
    body: bytes, dialect: str, repeat: int = 5, batch_seconds: float = 0.02
) -> tuple[float, float, float, int]:
    """Best-of-``repeat`` (pipeline, baseline and floor seconds, frames) for one pass over
    ``body``.

    Small bodies are processed many times in a row per batch (as ``timeit`` does), so
    that a batch lasts about ``batch_seconds`` and the clock's resolution and cold caches
    weigh on neither side (see :func:`best_of`).
    """
    frames = split_and_decode(body)
    replay_once(body, dialect)  # fails early on a recording of a provider error
    events = delivered_events(body, dialect)
    best = best_of(
        {
            "base": lambda: split_and_decode(body),
            "ours": lambda: replay_once(body, dialect),
            "floor": lambda: floor_once(body, events),
        },
        loops_for(lambda: replay_once(body, dialect), batch_seconds),
        repeat,
    )
    return best["ours"], best["base"], best["floor"], frames


def _row(label: str, ours: float, base: float, floor: float, frames: int) -> str:
    per = 1e6 / frames
    return (
        f"{label:<48}{frames:>9,}{ours * per:>10.2f}{base * per:>10.2f}"
        f"{ours / base:>8.2f}{floor / base:>8.2f}"
    )


HEADER = f"{'stream':<48}{'frames':>9}{'us/frame':>10}{'baseline':>10}{'ratio':>8}{'floor':>8}"


def corpus_rows() -> list[str]:
    """One row per dialect over all of its corpus recordings together."""
    rows = []
    if not CORPUS.is_dir():
        return ["(../shared/corpus not present: corpus rows skipped)"]
    for folder, dialect in CORPUS_DIALECTS.items():
        ours = base = floor = 0.0
        frames = 0
        for path in sorted((CORPUS / folder).glob("*.jsonl")):
            body = path.read_bytes()
            try:  # many short batches: the least of each side is steadier on a noisy machine
                times = measure(body, dialect, repeat=15, batch_seconds=0.01)
            except ChatError:  # recordings of provider failures end in an error
                continue
            ours += times[0]
            base += times[1]
            floor += times[2]
            frames += times[3]
        rows.append(_row(f"corpus {folder} (all recordings)", ours, base, floor, frames))
    return rows


def synthetic_rows(n: int) -> list[str]:
    """One row per dialect over a synthetic ``n``-frame stream."""
    return [
        _row(f"synthetic {dialect}", *measure(make(n), dialect))
        for dialect, make in SYNTHETIC.items()
    ]


def main(n: int = 100_000) -> None:
    print(HEADER)
    for row in corpus_rows():
        print(row)
    for row in synthetic_rows(n):
        print(row)
