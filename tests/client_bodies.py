"""Request bodies each provider SDK could send, for the gateway's request tests:
hypothesis strategies of conversations, tools and options that each format's request
builder writes (:func:`built_body`)."""

from __future__ import annotations

import base64
from typing import Any

from hypothesis import strategies as st

from solon_events.adapters.client_requests import GenerationOptions
from solon_events.dialects import get_dialect
from solon_events.event_model.messages import (
    ChatRequest,
    SystemMessage,
    ToolMessage,
    ToolSpec,
    UserMessage,
)
from solon_events.event_model.results import AssistantMessage, ImageBlock, ToolCall

PNG = base64.b64encode(
    base64.b64decode(
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
    )
).decode()
URLS = {
    "openai": "http://127.0.0.1:9/v1/chat/completions",
    "openai-responses": "http://127.0.0.1:9/v1/responses",
    "anthropic": "http://127.0.0.1:9/v1/messages",
    "gemini": "http://127.0.0.1:9/v1beta",
    "ollama": "http://127.0.0.1:9/api/chat",
    "cohere": "http://127.0.0.1:9/v2/chat",
    "google-interactions": "http://127.0.0.1:9/v1beta/interactions",
}
THINKING = ("ollama", "cohere", "google-interactions")  # assistant thinking sent back as text

# Strategies: conversations each format's builder can write.

words = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=12)
names = st.from_regex(r"[a-z][a-z0-9_]{0,11}", fullmatch=True)
values = st.one_of(st.integers(-5, 5), words, st.booleans(), st.none())
arguments = st.dictionaries(names, values, max_size=3)


@st.composite
def conversations(draw: Any, format: str) -> tuple[Any, ...]:
    messages: list[Any] = []
    if draw(st.booleans()):
        messages.append(SystemMessage(text=draw(words)))
    for turn in range(draw(st.integers(1, 3))):
        blocks = [ImageBlock(data=PNG, mime_type="image/png")] if draw(st.booleans()) else []
        messages.append(UserMessage(text=draw(words), blocks=blocks))
        if turn == 0 and not draw(st.booleans()):
            continue
        calls = [
            ToolCall(id=f"c{turn}{n}", name=draw(names), arguments=draw(arguments))
            for n in range(draw(st.integers(0, 2)))
        ]
        text = draw(words) if not calls or draw(st.booleans()) else ""
        thinking = draw(words) if format in THINKING and draw(st.booleans()) else ""
        messages.append(AssistantMessage(text=text, thinking=thinking, tool_calls=calls))
        for call in calls:
            failed = format in ("anthropic", "gemini", "google-interactions") and draw(
                st.booleans()
            )
            messages.append(
                ToolMessage(
                    tool_call_id=call.id, name=call.name, content=draw(words), is_error=failed
                )
            )
        if calls and draw(st.booleans()):
            messages.append(AssistantMessage(text=draw(words)))
    return tuple(messages)


tools = st.lists(
    st.builds(
        lambda name, description, props: ToolSpec(
            name=name,
            description=description,
            parameters={
                "type": "object",
                "properties": {p: {"type": "string"} for p in props},
                "required": sorted(props),
            },
        ),
        names,
        words,
        st.sets(names, min_size=1, max_size=3),
    ),
    max_size=2,
    unique_by=lambda spec: spec.name,
)


@st.composite
def options(draw: Any, format: str) -> GenerationOptions:
    """Options the format carries, in combinations it carries back as they were."""
    maybe = lambda strategy: draw(st.none() | strategy)  # noqa: E731
    fraction = st.floats(0, 1, allow_nan=False).map(lambda x: round(x, 3))
    fields: dict[str, Any] = {"temperature": maybe(fraction), "top_p": maybe(fraction)}
    fields["max_tokens"] = maybe(st.integers(2048, 100_000))
    choices = [None, "auto", "none", "required", "named"]
    if format == "cohere":  # its default is auto, written as nothing; no named tool
        choices = [None, "none", "required"]
    choice = draw(st.sampled_from(choices))
    if choice == "named":
        fields.update(tool_choice="required", tool_name=draw(names))
    else:
        fields["tool_choice"] = choice
    if format != "openai-responses":
        fields["stop"] = draw(st.lists(words, max_size=2))
    if format in ("anthropic", "gemini", "ollama", "cohere"):
        fields["top_k"] = maybe(st.integers(1, 100))
    if format in ("openai", "gemini", "ollama", "cohere", "google-interactions"):
        fields["seed"] = maybe(st.integers(0, 2**31))
    if format in ("openai", "gemini", "ollama", "cohere"):
        fields["presence_penalty"] = maybe(fraction)
        fields["frequency_penalty"] = maybe(fraction)
    if format in ("openai", "openai-responses"):
        fields["parallel_tool_calls"] = maybe(st.booleans())
        if draw(st.booleans()):
            fields.update(reasoning=True, reasoning_effort=draw(st.sampled_from(["low", "high"])))
    elif format == "anthropic":
        if choice != "none" and draw(st.booleans()):
            fields["parallel_tool_calls"] = False
            fields["tool_choice"] = fields["tool_choice"] or "auto"
        if draw(st.booleans()):
            budget = draw(st.integers(1024, 2047))
            fields.update(reasoning=True, reasoning_budget=budget)
    elif format == "gemini":
        if draw(st.booleans()):
            fields.update(reasoning=True, reasoning_budget=draw(st.integers(1, 8000)))
        elif draw(st.booleans()):
            fields.update(reasoning=False, reasoning_budget=0)
    elif format == "cohere":
        if draw(st.booleans()):
            fields.update(reasoning=True, reasoning_budget=draw(st.integers(1, 8000)))
        elif draw(st.booleans()):
            fields["reasoning"] = False
    elif format == "google-interactions":
        level = draw(st.sampled_from([None, False, "minimal", "low", "high"]))
        if isinstance(level, str):
            fields.update(reasoning=True, reasoning_effort=level)
        elif level is False:
            fields["reasoning"] = False
    elif format == "ollama":
        fields.pop("tool_choice"), fields.pop("tool_name", None)
        think = draw(st.sampled_from([None, True, False, "low", "high"]))
        if isinstance(think, str):
            fields.update(reasoning=True, reasoning_effort=think)
        elif think is not None:
            fields["reasoning"] = think
    return GenerationOptions(**fields)


def built_body(format: str, request: ChatRequest) -> dict[str, Any]:
    http = get_dialect(format).build_request(request, api_url=URLS[format], api_key=None)
    return dict(http.body)
