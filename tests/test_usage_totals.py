"""Usage follows the project's rule whatever the server counts (#42): ``completion_tokens``
counts every output token, thinking included. Servers differ: OpenAI's
``completion_tokens`` holds the reasoning tokens, xAI's does not (its total is prompt +
completion + reasoning). Wherever a server sends a total, the output count is reconciled
with it, in every dialect; tested on real recordings of both kinds (the shared corpus) and
on each dialect's documented shapes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from reactivex import operators as ops
from recorded import corpus_cases, corpus_recording, needs_corpus

from solon_events import Usage, replay
from solon_events.dialects.gemini import gemini_usage
from solon_events.dialects.google_interactions import interactions_usage
from solon_events.dialects.reading import output_by_total


def replayed_usage(frames: list[Any], dialect: str) -> Usage:
    response = replay(frames, dialect=dialect).pipe(ops.last()).run().response
    assert response is not None and response.usage is not None
    return response.usage


@pytest.mark.parametrize(("path", "dialect"), corpus_cases())
def test_every_recording_counts_its_output_as_its_total_says(path: Path, dialect: str) -> None:
    frames, expected = corpus_recording(path)
    if not expected.get("usage") or expected.get("error"):
        pytest.skip("a recording without usage")
    usage = replayed_usage(frames, dialect)
    assert usage.prompt_tokens + usage.completion_tokens == usage.total_tokens
    assert usage.completion_tokens >= usage.thinking_tokens


# (folder/recording, prompt, completion as the project counts it, thinking, total)
BOTH_KINDS = [
    # xAI's Chat Completions: completion_tokens 26 without its 227 reasoning tokens
    ("openai-chat/openai-compatible-xai-tool-call", "openai", 307, 26 + 227, 227, 560),
    # DeepSeek and OpenAI: completion_tokens hold the reasoning tokens
    ("openai-chat/deepseek-reasoning", "openai", 18, 219, 205, 237),
    ("openai-chat/openai-text", "openai", 16, 300, 0, 316),
    # xAI's Responses API counts its reasoning inside output_tokens
    ("openai-responses/xai-web-search-tool.1", "openai-responses", 1875, 695, 397, 2570),
    # Gemini's candidatesTokenCount leaves the thoughts out: they are added
    ("gemini/google-reasoning", "gemini", 9, 29 + 256, 256, 294),
]


@needs_corpus
@pytest.mark.parametrize(
    ("name", "dialect", "prompt", "completion", "thinking", "total"), BOTH_KINDS
)
def test_recordings_of_both_kinds(
    name: str, dialect: str, prompt: int, completion: int, thinking: int, total: int
) -> None:
    from recorded import CORPUS

    frames, _ = corpus_recording(CORPUS / f"{name}.jsonl")
    usage = replayed_usage(frames, dialect)
    counts = (usage.prompt_tokens, usage.completion_tokens, usage.thinking_tokens)
    assert (*counts, usage.total_tokens) == (prompt, completion, thinking, total)
    assert usage.source is not None  # the server's own numbers stay beside


def chat_chunk(usage: dict[str, Any]) -> dict[str, Any]:
    choice = {"index": 0, "delta": {"content": "Hi"}, "finish_reason": "stop"}
    return {"id": "c", "object": "chat.completion.chunk", "choices": [choice], "usage": usage}


@pytest.mark.parametrize(
    ("completion", "reasoning", "total", "counted"),
    [
        (26, 227, 560, 253),  # xAI: reasoning outside completion_tokens
        (253, 227, 560, 253),  # OpenAI: inside
        (26, 227, 333, 26),  # no reasoning in the total: as read
        (26, 0, 600, 26),  # a total that says neither: as read
        (26, 227, None, 26),  # no total: as read
    ],
)
def test_chat_completions_reconciles_with_the_total(
    completion: int, reasoning: int, total: int | None, counted: int
) -> None:
    usage: dict[str, Any] = {
        "prompt_tokens": 307,
        "completion_tokens": completion,
        "completion_tokens_details": {"reasoning_tokens": reasoning},
    }
    if total is not None:
        usage["total_tokens"] = total
    read = replayed_usage([chat_chunk(usage)], "openai")
    assert (read.completion_tokens, read.thinking_tokens) == (counted, reasoning)


@pytest.mark.parametrize(("output", "counted"), [(5, 25), (25, 25)])
def test_responses_reconciles_with_the_total(output: int, counted: int) -> None:
    usage = {
        "input_tokens": 10,
        "output_tokens": output,
        "output_tokens_details": {"reasoning_tokens": 20},
        "total_tokens": 35,
    }
    frames = [
        {"type": "response.created", "response": {"id": "r", "status": "in_progress"}},
        {
            "type": "response.completed",
            "response": {"id": "r", "status": "completed", "usage": usage},
        },
    ]
    assert replayed_usage(frames, "openai-responses").completion_tokens == counted


GEMINI = ("promptTokenCount", "candidatesTokenCount", "thoughtsTokenCount", "totalTokenCount")
INTERACTIONS = ("total_input_tokens", "total_output_tokens", "total_thought_tokens", "total_tokens")


@pytest.mark.parametrize(
    ("read", "names", "counts", "counted"),
    [
        # Google leaves the thoughts out of candidatesTokenCount; a compatible server that
        # puts them in has them counted once, as its total says
        (gemini_usage, GEMINI, (9, 29, 256, 294), 285),
        (gemini_usage, GEMINI, (9, 285, 256, 294), 285),
        (interactions_usage, INTERACTIONS, (5, 10, 20, 35), 30),
        (interactions_usage, INTERACTIONS, (5, 30, 20, 35), 30),
    ],
)
def test_google_counts_the_thoughts_once(
    read: Any, names: tuple[str, ...], counts: tuple[int, ...], counted: int
) -> None:
    usage = read(dict(zip(names, counts)))
    assert (usage.completion_tokens, usage.thinking_tokens) == (counted, counts[2])
    assert usage.total_tokens == counts[3]


def test_the_rule_itself() -> None:
    assert output_by_total(10, 5, 20, 35) == 25  # thinking outside the output count
    assert output_by_total(10, 25, 20, 35) == 25  # inside
    assert output_by_total(10, 45, 20, 35) == 25  # counted twice
    assert output_by_total(10, 5, 20, 99) == 5  # a total that says neither
    assert output_by_total(10, 5, 0, 35) == 5
    assert output_by_total(10, 5, 20, 0) == 5
