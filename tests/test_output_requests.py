"""A structured answer in requests, sans-I/O (issue #43): what each dialect writes (JSON mode,
Gemini's older schema, the prompted instruction), how the forced tool's call is read back
as text, what each client protocol's structured-output fields read as, and the embedded
provider's instances of a schema."""

from __future__ import annotations

from typing import Any

import jsonschema
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from solon_events import ChatEvent, ChatEventType, OutputFormat, SystemMessage, UserMessage
from solon_events.adapters.client_requests.output import read_output
from solon_events.cli import ROUTES
from solon_events.devserver.answers import broken, instance
from solon_events.dialects import get_dialect
from solon_events.dialects.context import ChatStreamContext, Finish
from solon_events.dialects.gemini_schema import gemini_schema, json_schema_of
from solon_events.dialects.output import OUTPUT_INSTRUCTION, claude_native, prepared
from solon_events.dialects.output_tool import OutputToolDialect
from solon_events.event_model.messages import ChatRequest
from solon_events.event_model.results import ToolCall

T = ChatEventType
SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "rank": {"type": ["integer", "null"]}},
    "required": ["name"],
}


def body(dialect: str, output: OutputFormat, model: str = "m", **more: Any) -> dict[str, Any]:
    request = ChatRequest(model=model, messages=[UserMessage(text="hi")], output=output, **more)
    built = get_dialect(dialect).build_request(
        request, api_url="http://x.test" + ROUTES[dialect].replace("{model}", model), api_key="k"
    )
    return orjson.loads(built.body_bytes())


@pytest.mark.parametrize(
    ("dialect", "expected"),
    [
        ("openai", {"response_format": {"type": "json_object"}}),
        ("openai-responses", {"text": {"format": {"type": "json_object"}}}),
        ("gemini", {"generationConfig": {"responseMimeType": "application/json"}}),
        ("ollama", {"format": "json"}),
        ("cohere", {"response_format": {"type": "json_object"}}),
        (
            "google-interactions",
            {"response_format": {"type": "text", "mime_type": "application/json"}},
        ),
    ],
)
def test_json_mode_without_a_schema(dialect: str, expected: dict[str, Any]) -> None:
    sent = body(dialect, OutputFormat())
    for key, value in expected.items():
        assert sent[key] == value


@pytest.mark.parametrize("dialect", ["anthropic", "bedrock"])
def test_claude_takes_json_mode_through_a_tool_of_any_object(dialect: str) -> None:
    sent = orjson.dumps(body(dialect, OutputFormat(name="answer"))).decode()
    assert '"answer"' in sent and "output_config" not in sent and "outputConfig" not in sent


def test_gemini_before_response_json_schema_takes_the_openapi_schema() -> None:
    sent = body("gemini", OutputFormat(schema=SCHEMA), model="gemini-2.0-flash")
    config = sent["generationConfig"]
    assert config["responseSchema"] == {
        "type": "OBJECT",
        "properties": {
            "name": {"type": "STRING"},
            "rank": {"type": "INTEGER", "nullable": True},
        },
        "propertyOrdering": ["name", "rank"],
        "required": ["name"],
    }
    assert json_schema_of(config["responseSchema"]) == SCHEMA
    newer = body("gemini", OutputFormat(schema=SCHEMA), model="gemini-2.5-flash")
    assert newer["generationConfig"]["responseJsonSchema"] == SCHEMA


def test_a_nullable_enum_reads_back_as_a_branch_of_its_own() -> None:
    schema = {"anyOf": [{"enum": ["a", "b"]}, {"type": "null"}]}
    written = gemini_schema({"type": "object", "properties": {"e": schema}})
    assert written["properties"]["e"] == {"nullable": True, "enum": ["a", "b"], "type": "STRING"}
    back = json_schema_of(written)["properties"]["e"]
    jsonschema.validate(None, back)
    jsonschema.validate("a", back)


def test_the_prompted_instruction_follows_the_system_messages() -> None:
    request = ChatRequest(
        model="m",
        messages=[SystemMessage(text="Be brief."), UserMessage(text="hi")],
        output=OutputFormat(schema=SCHEMA, mode="prompted"),
    )
    written = prepared(get_dialect("openai"), request)
    assert written.output is None
    first, instruction, user = written.messages
    assert first.text == "Be brief." and user.text == "hi"
    assert instruction.text == OUTPUT_INSTRUCTION.format(schema=orjson.dumps(SCHEMA).decode())


def test_tool_mode_forces_the_tool_or_any_tool_when_the_prompt_has_its_own() -> None:
    output = OutputFormat(schema=SCHEMA, name="Answer", mode="tool")
    alone = prepared(get_dialect("anthropic"), ChatRequest(model="m", messages=(), output=output))
    assert [t.name for t in alone.tools] == ["Answer"]
    assert alone.options["tool_choice"] == {"type": "tool", "name": "Answer"}
    weather = alone.tools[0].__class__(name="get_weather")
    both = prepared(
        get_dialect("anthropic"),
        ChatRequest(model="m", messages=(), tools=[weather], output=output),
    )
    assert [t.name for t in both.tools] == ["get_weather", "Answer"]
    assert both.options["tool_choice"] == {"type": "any"}


@pytest.mark.parametrize(
    ("model", "native"),
    [
        ("claude-sonnet-4-5-20250929", True),
        ("claude-opus-4-1-20250805", True),
        ("claude-haiku-4-5", True),
        ("claude-opus-5", True),
        ("claude-sonnet-4-20250514", False),
        ("claude-opus-4-20250514", False),
        ("claude-3-5-sonnet-latest", False),
        ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", True),
        ("a-model-of-my-own", True),
    ],
)
def test_which_claude_takes_a_native_structured_output(model: str, native: bool) -> None:
    assert claude_native(model) is native


# The forced tool's call, read as text.


def read(events: list[Any]) -> list[Any]:
    """What OutputToolDialect makes of what the wrapped dialect recorded for one frame."""

    class Recorded:
        name = "recorded"
        assistant_prefill = False
        native_output = False

        def parse_frame(self, ctx: ChatStreamContext, frame: Any) -> None:
            ctx.recorded.extend(events)

    ctx = ChatStreamContext()
    OutputToolDialect(Recorded(), "Answer").parse_frame(ctx, {})  # type: ignore[arg-type]
    return ctx.take()


def test_a_whole_call_of_the_output_tool_is_one_text_delta_and_its_finish_an_answer() -> None:
    call = ToolCall(id="c1", name="Answer", arguments={"name": "Paris"}, index=0)
    out = read([ChatEvent(T.TOOL_CALL_CHUNK, tool_call=call, index=0), Finish("tool_calls")])
    delta, end, finish = out
    assert (delta.type, delta.text, delta.tool_call) == (T.TEXT_DELTA, '{"name":"Paris"}', None)
    assert end.type is T.TEXT_END and finish == Finish("stop")


def test_other_tools_pass_as_they_are_and_the_finish_stays() -> None:
    call = ToolCall(id="c2", name="get_weather", arguments={}, index=0)
    events = [ChatEvent(T.TOOL_CALL_CHUNK, tool_call=call, index=0), Finish("tool_use")]
    assert read(events) == events


def test_an_end_that_says_more_than_the_deltas_adds_the_rest() -> None:
    start = ChatEvent(T.TOOL_CALL_START, tool_call=ToolCall(name="Answer"), tool_call_id="c1")
    first = read([start, ChatEvent(T.TOOL_CALL_ARGS_DELTA, text='{"na', tool_call_id="c1")])
    assert [e.type for e in first] == [T.TEXT_DELTA]
    whole = ToolCall(id="c1", name="Answer", arguments_str='{"name": "Paris"}')
    # (a fresh context each frame: the state is the stream's; here one frame says it all)
    events = [
        start,
        ChatEvent(T.TOOL_CALL_ARGS_DELTA, text='{"na', tool_call_id="c1"),
        ChatEvent(T.TOOL_CALL_END, tool_call=whole, tool_call_id="c1"),
    ]
    out = read(events)
    assert [(e.type, e.text) for e in out] == [
        (T.TEXT_DELTA, '{"na'),
        (T.TEXT_DELTA, 'me": "Paris"}'),
        (T.TEXT_END, None),
    ]


# What each client protocol asks for.


@pytest.mark.parametrize(
    ("format", "request_body", "expected"),
    [
        (
            "openai",
            {"response_format": {"type": "json_schema",
                                 "json_schema": {"name": "A", "schema": SCHEMA, "strict": True}}},
            OutputFormat(schema=SCHEMA, name="A", strict=True),
        ),
        ("openai", {"response_format": {"type": "text"}}, None),
        (
            "openai-responses",
            {"text": {"format": {"type": "json_schema", "name": "A", "schema": SCHEMA}}},
            OutputFormat(schema=SCHEMA, name="A"),
        ),
        ("openai-responses", {"text": {"verbosity": "low"}}, None),
        (
            "anthropic",
            {"output_config": {"effort": "low",
                               "format": {"type": "json_schema", "schema": SCHEMA}}},
            OutputFormat(schema=SCHEMA),
        ),
        (
            "anthropic",
            {"output_format": {"type": "json_schema", "schema": SCHEMA}},  # the beta's
            OutputFormat(schema=SCHEMA),
        ),
        (
            "gemini",
            {"generation_config": {"response_mime_type": "application/json"}},
            OutputFormat(),
        ),
        ("ollama", {"format": SCHEMA}, OutputFormat(schema=SCHEMA)),
        ("ollama", {"format": "json"}, OutputFormat()),
        ("cohere", {"response_format": {"type": "json_object"}}, OutputFormat()),
        (
            "google-interactions",
            {"response_format": [{"type": "text", "mime_type": "application/json",
                                  "schema": SCHEMA}]},
            OutputFormat(schema=SCHEMA),
        ),
        (
            "google-interactions",
            {"response_format": SCHEMA, "response_mime_type": "application/json"},  # older
            OutputFormat(schema=SCHEMA),
        ),
        (
            "bedrock",
            {"outputConfig": {"textFormat": {"type": "json_schema", "structure": {
                "jsonSchema": {"schema": orjson.dumps(SCHEMA).decode(), "name": "A"}}}}},
            OutputFormat(schema=SCHEMA, name="A"),
        ),
    ],
)  # fmt: skip
def test_each_protocols_fields_read_as_one_output_format(
    format: str, request_body: dict[str, Any], expected: OutputFormat | None
) -> None:
    assert read_output(format, request_body) == expected


@pytest.mark.parametrize(
    ("format", "request_body", "why"),
    [
        ("openai-responses", {"text": {"format": {"type": "yaml"}}}, "text.format.type must be"),
        ("anthropic", {"output_format": {"type": "tool"}}, "output_format.type must be"),
        ("gemini", {"generationConfig": {"responseSchema": 3}}, "responseSchema must be"),
        ("google-interactions", {"response_format": SCHEMA}, "or a JSON schema with"),
        ("google-interactions", {"response_format": [{"type": "audio"}]}, "one text format"),
        (
            "bedrock",
            {"outputConfig": {"textFormat": {"structure": {"jsonSchema": {"schema": "{"}}}}},
            "schema is not JSON",
        ),
    ],
)
def test_a_field_that_cannot_be_read_is_named(
    format: str, request_body: dict[str, Any], why: str
) -> None:
    with pytest.raises(ValueError, match=why):
        read_output(format, request_body)


# The embedded provider's instances.

LEAVES = st.sampled_from(
    [
        {"type": "string"},
        {"type": "string", "format": "date-time"},
        {"type": "string", "minLength": 12, "maxLength": 14},
        {"type": "string", "pattern": "^[A-Z]"},
        {"type": "integer", "minimum": 10, "maximum": 12},
        {"type": "number", "exclusiveMaximum": 0},
        {"type": "integer", "multipleOf": 5},
        {"type": "boolean"},
        {"enum": ["x", 1]},
        {"const": "k"},
        {"type": ["null", "integer"]},
    ]
)
SCHEMAS = st.recursive(
    LEAVES,
    lambda children: st.one_of(
        st.builds(
            lambda props, data: {
                "type": "object",
                "properties": props,
                "required": data.draw(st.lists(st.sampled_from(sorted(props)), unique=True)),
            },
            st.dictionaries(st.sampled_from(["a", "b", "c"]), children, min_size=1),
            st.data(),
        ),
        st.builds(lambda item: {"type": "array", "items": item, "minItems": 1}, children),
        st.builds(lambda a, b: {"anyOf": [a, b]}, children, children),
    ),
    max_leaves=10,
)


@given(SCHEMAS)
def test_the_embedded_providers_instance_fits_its_schema(schema: dict[str, Any]) -> None:
    jsonschema.validate(instance(schema), schema, format_checker=jsonschema.FormatChecker())
    assert instance(schema) == instance(schema)  # deterministic


@pytest.mark.parametrize("how", ["type", "missing"])
def test_a_broken_instance_does_not_fit(how: str) -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken(SCHEMA, how), SCHEMA)


def test_settings_beside_the_output_are_listed_as_ignored() -> None:
    from solon_events.adapters.client_requests import read_client_request

    messages = [{"role": "user", "content": "hi"}]
    anthropic = read_client_request(
        "anthropic",
        {
            "model": "m",
            "max_tokens": 10,
            "messages": messages,
            "output_config": {"effort": "low", "format": {"type": "json_schema", "schema": SCHEMA}},
        },
    )
    assert anthropic.output == OutputFormat(schema=SCHEMA)
    assert anthropic.ignored == ("output_config.effort",)
    responses = read_client_request(
        "openai-responses", {"model": "m", "input": "hi", "text": {"verbosity": "low"}}
    )
    assert responses.output is None and responses.ignored == ("text.verbosity",)
    chat = read_client_request(
        "openai", {"model": "m", "messages": messages, "response_format": {"type": "json_object"}}
    )
    assert chat.output == OutputFormat() and chat.ignored == ()
    with pytest.raises(ValueError, match=r"response_mime_type 'text/x\.enum' cannot be passed on"):
        read_output("google-interactions", {"response_mime_type": "text/x.enum"})
