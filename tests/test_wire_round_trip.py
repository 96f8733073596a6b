"""Round trip of the wire-format encoders: a message encoded in format F and read back by
F's own dialect says what it said, less what F cannot carry (``LOSSES`` in
``wire_messages.py``, the same list as each encoder's docstring).

Hypothesis draws the messages: text, thinking with signatures or redacted, tool calls with
their arguments cut anywhere, any finish reason and usage, or a failure in the middle.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import orjson
import pytest
from extra_modules import needed
from hypothesis import HealthCheck, given, settings
from wire_messages import (
    LOSSES,
    Message,
    Thought,
    encode_all,
    events_of,
    expected,
    finish_said,
    messages,
    read_back,
    semantic,
)
from wire_server import BodyServer, serving_bodies

from solon_events.adapters import response_body, wire_encoder
from solon_events.adapters.provider_formats.base import finish_kind, response_finish_kind
from solon_events.event_model.results import ChatResponse

FORMATS = sorted(LOSSES)


def assert_counts(
    counts: tuple[int, int], details: tuple[int, int], response: ChatResponse
) -> None:
    """An OpenAI SDK's usage: ``counts`` (prompt, completion) and ``details`` (cached,
    reasoning) are the response's."""
    usage = response.usage
    assert usage is not None
    assert counts == (usage.prompt_tokens, usage.completion_tokens)
    assert details == (usage.cache_read_input_tokens, usage.thinking_tokens)


@pytest.mark.parametrize("format", FORMATS)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(message=messages)
def test_a_message_encoded_and_read_back_says_the_same(format: str, message: Message) -> None:
    body = encode_all(wire_encoder(format, model="m"), events_of(message))
    events, errors = read_back(format, body)
    assert semantic(events, LOSSES[format]) == expected(message, LOSSES[format])
    assert len(errors) == (message.failure is not None)


# ------------------------------------------------------------------ the official SDKs' readers


@pytest.fixture(scope="module")
def bodies() -> Iterator[BodyServer]:
    with serving_bodies() as server:
        yield server


HELLO: Any = [{"role": "user", "content": "hi"}]


def _finished(message: Message) -> bool:
    return message.failure is None


def sdk_examples(test: Callable[..., None]) -> Callable[..., None]:
    """An SDK test's examples: 40 messages that end (the ``bodies`` server of the test
    serves them all, hence the health check let through; no deadline, as for every test)."""
    examples = settings(
        max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    return examples(given(message=messages.filter(_finished))(test))


def serve_stream(bodies: BodyServer, format: str, model: str, message: Message) -> None:
    """``bodies`` answers the next request with ``message`` streamed in ``format``."""
    encoder = wire_encoder(format, model=model)
    bodies.answer(encode_all(encoder, events_of(message)), encoder.media_type)


def serve_whole(bodies: BodyServer, format: str, model: str, response: ChatResponse) -> None:
    """``bodies`` answers the next request with ``response`` as ``format``'s whole body."""
    bodies.answer(orjson.dumps(response_body(format, response, model=model)), "application/json")


@sdk_examples
def test_the_openai_sdk_accumulates_what_was_said(bodies: BodyServer, message: Message) -> None:
    openai = needed("openai")
    serve_stream(bodies, "openai", "gpt-x", message)
    client = openai.OpenAI(base_url=bodies.url + "/v1", api_key="test", max_retries=0)
    try:
        with client.chat.completions.stream(model="gpt-x", messages=HELLO) as stream:
            completion = stream.get_final_completion()
    except (openai.LengthFinishReasonError, openai.ContentFilterFinishReasonError) as stopped:
        completion = stopped.completion  # the helper raises for these, with what it read
    response = message.response()
    assert_openai_completion(completion, response)

    serve_whole(bodies, "openai", "gpt-x", response)
    whole = client.chat.completions.create(
        model="gpt-x", messages=[{"role": "user", "content": "hi"}]
    )
    assert_openai_completion(whole, response)


def assert_openai_completion(completion: Any, response: ChatResponse) -> None:
    [choice] = completion.choices
    assert (choice.message.content or "") == response.text
    assert (getattr(choice.message, "reasoning_content", None) or "") == response.thinking
    calls = [
        (c.id, c.function.name, json.loads(c.function.arguments or "{}"))
        for c in choice.message.tool_calls or ()
    ]
    assert calls == [(c.id, c.name, c.arguments) for c in response.tool_calls]
    assert finish_kind(choice.finish_reason) == response_finish_kind(response)
    said = completion.usage
    assert said is not None
    said_counts = (said.prompt_tokens, said.completion_tokens)
    details = (
        said.prompt_tokens_details.cached_tokens,
        said.completion_tokens_details.reasoning_tokens,
    )
    assert_counts(said_counts, details, response)


@sdk_examples
def test_the_anthropic_sdk_accumulates_what_was_said(bodies: BodyServer, message: Message) -> None:
    anthropic = needed("anthropic")
    serve_stream(bodies, "anthropic", "claude-x", message)
    client = anthropic.Anthropic(base_url=bodies.url, api_key="test", max_retries=0)
    with client.messages.stream(model="claude-x", max_tokens=100, messages=HELLO) as stream:
        streamed = stream.get_final_message()
    response = message.response()
    assert_anthropic_message(streamed, response, message)

    serve_whole(bodies, "anthropic", "claude-x", response)
    whole = client.messages.create(model="claude-x", max_tokens=100, messages=HELLO)
    assert_anthropic_message(whole, response, None)


def assert_anthropic_message(message: Any, response: ChatResponse, said: Message | None) -> None:
    blocks = message.content
    texts = "".join(b.text for b in blocks if b.type == "text")
    thinking = "".join(b.thinking for b in blocks if b.type == "thinking")
    assert (texts, thinking) == (response.text, response.thinking)
    calls = [(b.id, b.name, b.input) for b in blocks if b.type == "tool_use"]
    assert calls == [(c.id, c.name, c.arguments) for c in response.tool_calls]
    redacted = [b.data for b in blocks if b.type == "redacted_thinking"]
    assert redacted == list(response.message.metadata.get("redacted_thinking", ()))
    if said is not None:  # streamed: each thinking block keeps its own signature
        signatures = [b.signature for b in blocks if b.type == "thinking"]
        expected = [
            b.signature or "" for b in said.blocks if isinstance(b, Thought) and b.redacted is None
        ]
        assert signatures == expected
    assert finish_kind(message.stop_reason) == response_finish_kind(response)
    usage = response.usage
    assert usage is not None
    assert message.usage.output_tokens == usage.completion_tokens
    assert message.usage.cache_read_input_tokens == usage.cache_read_input_tokens
    assert message.usage.cache_creation_input_tokens == usage.cache_creation_input_tokens
    assert message.usage.input_tokens == (
        usage.prompt_tokens - usage.cache_read_input_tokens - usage.cache_creation_input_tokens
    )


@sdk_examples
def test_the_openai_sdk_reads_what_a_responses_stream_said(
    bodies: BodyServer, message: Message
) -> None:
    openai = needed("openai")
    serve_stream(bodies, "openai-responses", "gpt-x", message)
    client = openai.OpenAI(base_url=bodies.url + "/v1", api_key="test", max_retries=0)
    with client.responses.stream(model="gpt-x", input="hi") as stream:
        ends = [e for e in stream if e.type in ("response.completed", "response.incomplete")]
    response = message.response()
    assert len(ends) == 1
    assert_openai_response(ends[0].response, response)

    serve_whole(bodies, "openai-responses", "gpt-x", response)
    assert_openai_response(client.responses.create(model="gpt-x", input="hi"), response)


def assert_openai_response(said: Any, response: ChatResponse) -> None:
    items = said.output
    assert said.output_text == response.text
    summaries = [s.text for i in items if i.type == "reasoning" for s in i.summary]
    assert "".join(summaries) == response.thinking
    encrypted = [
        i.encrypted_content for i in items if i.type == "reasoning" and i.encrypted_content
    ]
    assert encrypted == list(response.message.metadata.get("redacted_thinking", ()))
    calls = [
        (i.call_id, i.name, json.loads(i.arguments)) for i in items if i.type == "function_call"
    ]
    assert calls == [(c.id, c.name, c.arguments) for c in response.tool_calls]
    kind = response_finish_kind(response)
    if kind in ("length", "content_filter"):
        assert said.status == "incomplete"
        assert finish_kind(said.incomplete_details.reason) == kind
    else:
        assert said.status == "completed" and said.incomplete_details is None
    counts = (said.usage.input_tokens, said.usage.output_tokens)
    details = (
        said.usage.input_tokens_details.cached_tokens,
        said.usage.output_tokens_details.reasoning_tokens,
    )
    assert_counts(counts, details, response)


@sdk_examples
def test_the_google_genai_sdk_reads_what_a_gemini_stream_said(
    bodies: BodyServer, message: Message
) -> None:
    genai = needed("google.genai")
    serve_stream(bodies, "gemini", "gemini-x", message)
    client = genai.Client(api_key="test", http_options={"base_url": bodies.url})
    chunks = list(client.models.generate_content_stream(model="gemini-x", contents="hi"))
    response = message.response()
    parts = [part for chunk in chunks for part in chunk.candidates[0].content.parts or ()]
    assert_gemini_content(parts, chunks[-1], response)

    serve_whole(bodies, "gemini", "gemini-x", response)
    whole = client.models.generate_content(model="gemini-x", contents="hi")
    assert_gemini_content(whole.candidates[0].content.parts or [], whole, response)


def assert_gemini_content(parts: list[Any], last: Any, response: ChatResponse) -> None:
    texts = "".join(p.text or "" for p in parts if not p.thought and p.function_call is None)
    thinking = "".join(p.text or "" for p in parts if p.thought)
    assert (texts, thinking) == (response.text, response.thinking)
    calls = [(p.function_call.id, p.function_call.name, p.function_call.args or {})
             for p in parts if p.function_call is not None]  # fmt: skip
    assert calls == [(c.id, c.name, c.arguments) for c in response.tool_calls]
    [candidate] = last.candidates
    said = finish_kind(candidate.finish_reason.value, bool(calls))
    assert said == finish_said(response, LOSSES["gemini"])
    usage = response.usage
    assert usage is not None
    metadata = last.usage_metadata
    assert metadata.prompt_token_count == usage.prompt_tokens
    assert (metadata.thoughts_token_count or 0) == usage.thinking_tokens
    assert metadata.candidates_token_count == usage.completion_tokens - usage.thinking_tokens
    assert (metadata.cached_content_token_count or 0) == usage.cache_read_input_tokens


@sdk_examples
def test_the_ollama_sdk_reads_what_an_ollama_stream_said(
    bodies: BodyServer, message: Message
) -> None:
    ollama = needed("ollama")
    serve_stream(bodies, "ollama", "llama-x", message)
    client = ollama.Client(host=bodies.url)
    chunks = list(client.chat(model="llama-x", messages=HELLO, stream=True))
    response = message.response()
    content = "".join(c.message.content or "" for c in chunks)
    thinking = "".join(c.message.thinking or "" for c in chunks)
    calls = [call for c in chunks for call in c.message.tool_calls or ()]
    assert_ollama_message(content, thinking, calls, chunks[-1], response)

    serve_whole(bodies, "ollama", "llama-x", response)
    whole = client.chat(model="llama-x", messages=HELLO)
    said = whole.message
    assert_ollama_message(said.content, said.thinking, said.tool_calls or [], whole, response)


def assert_ollama_message(
    content: str | None, thinking: str | None, calls: list[Any], last: Any, response: ChatResponse
) -> None:
    assert (content or "", thinking or "") == (response.text, response.thinking)
    assert [(c.function.name, c.function.arguments) for c in calls] == [
        (c.name, c.arguments) for c in response.tool_calls
    ]
    assert last.done
    said = finish_kind(last.done_reason, bool(calls))
    assert said == finish_said(response, LOSSES["ollama"])
    usage = response.usage
    assert usage is not None
    assert (last.prompt_eval_count, last.eval_count) == (
        usage.prompt_tokens,
        usage.completion_tokens,
    )
