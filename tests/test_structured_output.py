"""Structured output end to end (issue #43): ``prompt(..., output=X)`` asked of every
dialect of the embedded provider in every mode, the answer streamed and checked, retries,
refusals, the tool loop, model groups, and each kind of output type.

One embedded provider serves the module; it answers a request that asks for a schema
(natively, through a forced tool or in a prompted instruction) with a deterministic
instance of it, streamed in fragments.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import threading
from collections.abc import Callable, Iterator
from typing import Any, Optional, TypedDict

import attrs
import orjson
import pydantic
import pytest
from partial_values import is_prefix
from routing_runs import collect

from solon_events import (
    ChatError,
    ChatEventType,
    ChatModel,
    OutputFormat,
    StructuredOutputError,
    partial_json,
    tool,
)
from solon_events.cli import ROUTES
from solon_events.devserver import RunningServer
from solon_events.devserver.answers import instance

T = ChatEventType
DIALECTS = tuple(ROUTES)
MODES = ("native", "tool", "prompted")
QUESTION = "Tell me about Paris"


class City(pydantic.BaseModel):
    """A city, as a pydantic model."""

    name: str
    population: int
    landmarks: list[str]
    mayor: Optional[str] = None  # noqa: UP045 (the optional field strict schemas rewrite)


@attrs.frozen
class Place:
    """A place, as an attrs class."""

    name: str
    rank: int


@dataclasses.dataclass
class Spot:
    """A spot, as a dataclass."""

    name: str
    rank: int


class Corner(TypedDict):
    """A corner, as a TypedDict."""

    name: str
    rank: int


PLACE_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "rank": {"type": "integer"}},
    "required": ["name", "rank"],
}


@pytest.fixture
def model(server: RunningServer) -> Iterator[Callable[..., ChatModel]]:
    made: list[ChatModel] = []

    def build(dialect: str, scenario: str = "weather", **options: Any) -> ChatModel:
        chat = ChatModel(
            server.url + ROUTES[dialect], scenario, api_key="k", dialect=dialect, **options
        )
        made.append(chat)
        return chat

    yield build
    for chat in made:
        chat.close()


def supported(dialect: str, mode: str) -> bool:
    return not (dialect == "ollama" and mode == "tool")  # Ollama cannot force a tool


def expected_city() -> City:
    return City.model_validate(instance(City.model_json_schema()))


# Every dialect, every mode.


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dialect", DIALECTS)
def test_every_dialect_answers_in_every_mode(
    server: RunningServer, model: Callable[..., ChatModel], dialect: str, mode: str
) -> None:
    if not supported(dialect, mode):
        pytest.skip("asserted by test_a_mode_the_dialect_cannot_ask_in_fails_naming_it")
    before = len(server.requests)
    events, error = collect(
        model(dialect).prompt(QUESTION, output=City).output(City, mode=mode).stream()
    )
    assert error is None
    end = events[-1]
    assert end.type is T.RESPONSE_END
    assert end.response.output == expected_city()
    assert City.model_validate_json(end.response.text) == end.response.output
    deltas = [e.text for e in events if e.type is T.TEXT_DELTA]
    assert len(deltas) > 3 and "".join(deltas) == end.response.text  # streamed in fragments
    start = next(e for e in events if e.type is T.STEP_START)
    assert dict(start.attrs) == {"output": "City", "output_mode": mode}
    assert not end.response.tool_calls  # tool mode: the call is read as the answer
    (sent,) = server.requests[before:]
    assert_asked(dialect, mode, sent.body)


def at(body: Any, path: str) -> Any:
    for key in path.split("."):
        body = body[key]
    return body


NATIVE = {  # where each dialect's native mechanism puts the schema in its request
    "openai": "response_format.json_schema.schema",
    "openai-responses": "text.format.schema",
    "anthropic": "output_config.format.schema",
    "gemini": "generationConfig.responseJsonSchema",
    "ollama": "format",
    "bedrock": "outputConfig.textFormat.structure.jsonSchema.schema",
    "cohere": "response_format.json_schema",
    "google-interactions": "response_format.schema",
}


def assert_asked(dialect: str, mode: str, body: Any) -> None:
    """The request carried the schema in the mode's way, and only that way."""
    text = orjson.dumps(body).decode()
    native = NATIVE[dialect]
    if mode == "native":
        schema = at(body, native)
        schema = orjson.loads(schema) if isinstance(schema, str) else schema
        assert set(schema["properties"]) == {"name", "population", "landmarks", "mayor"}
        return
    with pytest.raises((KeyError, TypeError)):
        at(body, native)
    if mode == "tool":
        assert '"City"' in text and "population" in text  # a tool named City
    else:
        assert "matches this JSON schema" in text


def test_a_mode_the_dialect_cannot_ask_in_fails_naming_it(
    model: Callable[..., ChatModel],
) -> None:
    with pytest.raises(ChatError, match="cannot make the model call a tool"):
        model("ollama").prompt(QUESTION).output(City, mode="tool").call()


def test_strict_and_closed_schemas_reach_openai_and_anthropic(
    server: RunningServer, model: Callable[..., ChatModel]
) -> None:
    before = len(server.requests)
    model("openai").prompt(QUESTION, output=City).call()
    model("anthropic").prompt(QUESTION, output=City).call()
    openai_body, anthropic_body = (r.body for r in server.requests[before:])
    strict = openai_body["response_format"]["json_schema"]
    assert strict["strict"] is True and strict["name"] == "City"
    assert strict["schema"]["required"] == ["name", "population", "landmarks", "mayor"]
    assert strict["schema"]["additionalProperties"] is False
    closed = anthropic_body["output_config"]["format"]["schema"]
    assert closed["required"] == ["name", "population", "landmarks"]  # optional stays so
    assert closed["additionalProperties"] is False
    assert "anthropic-beta" not in {k.lower() for k in server.requests[-1].headers}


def test_an_older_claude_is_asked_through_a_forced_tool(
    server: RunningServer, model: Callable[..., ChatModel]
) -> None:
    events, error = collect(
        model("anthropic", "weather:claude-3-5-sonnet").prompt(QUESTION, output=City).stream()
    )
    assert error is None
    assert events[-1].response.output == expected_city()
    body = server.requests[-1].body
    assert body["tool_choice"] == {"type": "tool", "name": "City"}
    assert "output_config" not in body


# The four ways to run it, and Rx.


def test_call_astream_and_rx_give_the_same_object(model: Callable[..., ChatModel]) -> None:
    chat = model("anthropic")
    prompt = chat.prompt(QUESTION, output=City)
    assert prompt.call().output == expected_city()

    async def streamed() -> Any:
        ends = [e async for e in prompt.astream() if e.type is T.RESPONSE_END]
        return ends[0].response.output, (await prompt.acall()).output

    assert asyncio.run(streamed()) == (expected_city(), expected_city())
    values, error = collect(prompt.stream().pipe(partial_json()))
    assert error is None
    assert values[-1] == expected_city()  # the checked object ends the growing values
    plain = [v for v in values if isinstance(v, dict)]
    assert len(plain) > 3 and all(is_prefix(a, b) for a, b in itertools.pairwise(plain))
    assert plain[-1] == expected_city().model_dump()


def test_the_object_grows_as_path_deltas_in_every_mode(model: Callable[..., ChatModel]) -> None:
    from solon_events import JsonDeltaBuilder, PartialJsonParser

    for mode in MODES:
        events, _ = collect(model("openai").prompt(QUESTION).output(City, mode=mode).stream())
        parser, built = PartialJsonParser(track_deltas=True), JsonDeltaBuilder()
        for event in events:
            if event.type is T.TEXT_DELTA:
                parser.feed(event.text)
                built.extend(parser.deltas())
        assert built.value() == expected_city().model_dump()


# Kinds of output type.


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (Place, Place(name="Paris", rank=3)),
        (Spot, Spot(name="Paris", rank=3)),
        (Corner, {"name": "Paris", "rank": 3}),
        (PLACE_SCHEMA, {"name": "Paris", "rank": 3}),
        (list[Place], [Place(name="Paris", rank=3), Place(name="Lyon", rank=3)]),
    ],
    ids=["attrs", "dataclass", "typeddict", "schema", "list-of-attrs"],
)
def test_each_kind_of_output_type(
    model: Callable[..., ChatModel], given: Any, expected: Any
) -> None:
    mode = "tool" if isinstance(given, (type, dict)) else "native"
    response = model("openai").prompt(QUESTION).output(given, mode=mode).call()
    assert response.output == expected
    assert type(response.output) is type(expected)


def test_an_output_type_that_cannot_be_described_fails_at_once(
    model: Callable[..., ChatModel],
) -> None:
    prompt = model("openai").prompt(QUESTION)
    with pytest.raises(TypeError, match="not a valid JSON schema"):
        prompt.output({"type": "nonsense"})
    with pytest.raises(TypeError, match="cannot be an output type"):
        prompt.output(threading.Lock)
    with pytest.raises(ValueError, match="mode must be"):
        prompt.output(City, mode="psychic")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="retries must be"):
        prompt.output(City, retries=-1)
    with pytest.raises(ChatError, match="not an object: tool mode needs"):
        prompt.output(list[Place], mode="tool").call()


# A wrong answer, asked again; a refusal.


@pytest.mark.parametrize("how", ["type", "missing"])
@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_wrong_answer_is_asked_again_with_what_was_wrong(
    server: RunningServer, model: Callable[..., ChatModel], dialect: str, how: str
) -> None:
    before = len(server.requests)
    chat = model(dialect, f"malformed:{how}")
    events, error = collect(chat.prompt(QUESTION).output(City, retries=2).stream())
    assert error is None
    retries = [e for e in events if e.type is T.STATUS and e.sub_type == "output_retry"]
    (retry,) = retries
    assert retry.attrs["path"] == "$.name" and retry.attrs["attempt"] == 1
    steps = [e for e in events if e.type is T.STEP_END]
    assert [e.step for e in steps] == [0, 1]
    assert events.index(retry) < events.index(steps[0])  # announced before the next step
    end = events[-1]
    assert end.response.output == expected_city()
    assert end.usage.prompt_tokens == sum(s.usage.prompt_tokens for s in steps)  # both billed
    sent = server.requests[before:]
    assert len(sent) == 2
    assert "does not fit the requested schema at $.name" in orjson.dumps(sent[1].body).decode()


def test_retries_run_out_into_a_typed_error_keeping_the_raw_text(
    model: Callable[..., ChatModel],
) -> None:
    chat = model("openai", "malformed:missing:5")
    events, error = collect(chat.prompt(QUESTION).output(City, retries=1).stream())
    assert isinstance(error, StructuredOutputError)
    assert error.path == "$.name" and error.attempts == 2
    assert "Field required" in error.reason and "$.name" in str(error)
    assert orjson.loads(error.raw) == {
        k: v for k, v in instance(City.model_json_schema()).items() if k != "name"
    }
    last = events[-1]
    assert last.type is T.ERROR and last.error is error
    assert last.response.text == error.raw and last.usage.prompt_tokens == 84  # both steps
    with pytest.raises(StructuredOutputError) as raised:
        chat.prompt(QUESTION).output(City).call()  # no retries: the first answer decides
    assert raised.value.attempts == 1
    assert raised.value.partial_response.text == raised.value.raw


@pytest.mark.parametrize("dialect", ["openai", "openai-responses", "anthropic", "gemini"])
def test_a_refusal_fails_at_once_and_is_not_asked_again(
    server: RunningServer, model: Callable[..., ChatModel], dialect: str
) -> None:
    before = len(server.requests)
    with pytest.raises(StructuredOutputError) as raised:
        model(dialect, "refuse").prompt(QUESTION).output(City, retries=3).call()
    assert raised.value.refusal
    assert len(server.requests) == before + 1


def test_an_output_format_is_asked_for_and_never_checked(
    model: Callable[..., ChatModel],
) -> None:
    asked = OutputFormat(schema=PLACE_SCHEMA, name="Place")
    response = model("openai", "malformed").prompt(QUESTION).output(asked).call()
    assert response.output is None
    assert orjson.loads(response.text)["name"] == 3  # passed on as it came


# The tool loop, and groups of models.


@tool
def get_weather(city: str) -> str:
    """The weather now in a city.

    Args:
        city: The city.
    """
    return "18°C and sunny"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dialect", ["openai", "anthropic", "gemini", "bedrock", "cohere"])
def test_tools_run_first_then_the_object(
    model: Callable[..., ChatModel], dialect: str, mode: str
) -> None:
    events, error = collect(
        model(dialect).prompt(QUESTION).tools(get_weather).output(City, mode=mode).stream()
    )
    assert error is None
    results = [e for e in events if e.type is T.TOOL_RESULT]
    assert [e.text for e in results] == ["18°C and sunny"]
    end = events[-1]
    assert end.response.output == expected_city()
    assert events.index(results[0]) < events.index(end)


def test_fallback_moves_on_from_a_model_whose_answers_do_not_fit(
    model: Callable[..., ChatModel],
) -> None:
    group = model("openai", "malformed:type:9").fallback(model("anthropic"), mid_stream="restart")
    events, error = collect(group.prompt(QUESTION, output=City).stream())
    assert error is None
    statuses = [e for e in events if e.type is T.STATUS]
    assert any("does not fit City" in (e.text or "") for e in statuses)
    end = events[-1]
    assert end.response.output == expected_city()
    assert [a.outcome for a in end.response.attempts][:1] == ["failed"]


def test_a_hedge_answers_with_the_winners_object(model: Callable[..., ChatModel]) -> None:
    group = model("gemini", "first-delay:0.5").hedge(model("cohere"), after=0.05)
    response = group.prompt(QUESTION).output(City, mode="prompted").call()
    assert response.output == expected_city()
    assert [a.outcome for a in response.attempts] == ["cancelled", "answered"]
