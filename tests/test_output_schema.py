"""The strict-schema transform (OpenAI's strict mode) and the closed one (Anthropic's):
a property that every instance of the original stays an instance of the transform where
it is exact, and one test for each case where it is not (issue #43)."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from solon_events.dialects.output import schema_for
from solon_events.dialects.output_schema import (
    SchemaError,
    absent_nulls,
    closed_schema,
    inline_refs,
    strict_schema,
)
from solon_events.event_model.messages import OutputFormat

NAMES = st.sampled_from(["a", "b", "city", "count", "tags"])
LEAVES = st.sampled_from(
    [
        {"type": "string"},
        {"type": "integer"},
        {"type": "number", "minimum": 0},
        {"type": "boolean"},
        {"type": "string", "minLength": 2},  # dropped by the transform: only looser
        {"type": ["string", "null"]},
        {"enum": ["red", "green"]},
        {"type": "string", "format": "date"},
    ]
)


def closed_objects(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[Any]:
    """Objects that forbid undeclared properties, whose optional properties do not take
    null: the schemas the transform is exact for."""

    def build(properties: dict[str, Any], data: st.DataObject) -> dict[str, Any]:
        names = list(properties)
        required = data.draw(st.lists(st.sampled_from(names), unique=True)) if names else []
        for name in names:  # an optional property must not take null for exactness
            if name not in required and properties[name].get("type") == ["string", "null"]:
                properties[name] = {"type": "string"}
        return {
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": False,
        }

    return st.builds(build, st.dictionaries(NAMES, children, min_size=1, max_size=4), st.data())


SCHEMAS = closed_objects(
    st.recursive(
        LEAVES,
        lambda children: st.one_of(
            closed_objects(children), st.builds(lambda i: {"type": "array", "items": i}, children)
        ),
        max_leaves=8,
    )
)


def instances(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Instances of one of the schemas above."""
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type")
    if kind == "object":
        properties = schema["properties"]
        required = {k: instances(properties[k]) for k in schema["required"]}
        optional = {k: instances(v) for k, v in properties.items() if k not in required}
        return st.fixed_dictionaries(required, optional=optional)
    if kind == "array":
        return st.lists(instances(schema["items"]), max_size=3)
    if kind == ["string", "null"]:
        return st.none() | st.text(max_size=5)
    if schema.get("format") == "date":
        return st.dates().map(str)
    return {
        "string": st.text(min_size=schema.get("minLength", 0), max_size=6),
        "integer": st.integers(-5, 5),
        "number": st.floats(0, 10, allow_nan=False),
        "boolean": st.booleans(),
    }[kind]


def as_strict(value: Any, schema: dict[str, Any]) -> Any:
    """``value`` written as the strict form asks: every absent property as null."""
    if schema.get("type") == "object" and isinstance(value, dict):
        return {
            k: as_strict(value[k], s) if k in value else None
            for k, s in schema["properties"].items()
        }
    if schema.get("type") == "array" and isinstance(value, list):
        return [as_strict(item, schema["items"]) for item in value]
    return value


@given(st.data(), SCHEMAS)
def test_every_instance_of_the_original_is_an_instance_of_the_transforms(
    data: st.DataObject, schema: dict[str, Any]
) -> None:
    strict, closed = strict_schema(schema), closed_schema(schema)
    assert strict.strict and strict.exact and closed.strict and closed.exact, strict.notes
    jsonschema.Draft202012Validator.check_schema(strict.schema)
    value = data.draw(instances(schema))
    jsonschema.validate(value, schema)
    written = as_strict(value, schema)
    jsonschema.validate(written, strict.schema)  # the strict form takes it ...
    assert absent_nulls(written, schema) == value  # ... and gives it back
    assert every_object_is_strict(strict.schema)
    jsonschema.validate(value, closed.schema)  # the closed form: optional stays optional


def every_object_is_strict(schema: Any) -> bool:
    if isinstance(schema, list):
        return all(every_object_is_strict(item) for item in schema)
    if not isinstance(schema, dict):
        return True
    if schema.get("type") == "object":
        if schema.get("additionalProperties") is not False:
            return False
        if sorted(schema["required"]) != sorted(schema["properties"]):
            return False
    return all(every_object_is_strict(value) for value in schema.values())


# Where the transform is not exact.


def test_an_object_open_to_other_properties_is_closed_and_says_so() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    made = strict_schema(schema)
    assert made.strict and not made.exact
    assert "$: closed to properties it does not declare" in made.notes
    extra = {"a": 1, "b": 2}
    jsonschema.validate(extra, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(extra, made.schema)  # the one kind of instance it loses


def test_an_optional_nullable_property_reads_absent_and_null_as_one() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": ["integer", "null"]}},
        "additionalProperties": False,
    }
    made = strict_schema(schema)
    assert made.strict and not made.exact
    assert made.schema["required"] == ["a"]
    assert "$.a: optional and nullable, so absent reads as null" in made.notes
    assert absent_nulls({"a": None}, schema) == {"a": None}  # was it absent? none can say


def test_an_optional_property_is_required_and_nullable_and_its_null_reads_absent() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "e": {"enum": ["x", "y"]}},
        "additionalProperties": False,
    }
    made = strict_schema(schema)
    assert made.exact
    assert made.schema["properties"] == {
        "a": {"type": ["integer", "null"]},
        "e": {"anyOf": [{"enum": ["x", "y"]}, {"type": "null"}]},
    }
    assert absent_nulls({"a": None, "e": "x"}, schema) == {"e": "x"}


@pytest.mark.parametrize(
    ("schema", "why"),
    [
        ({"type": "array", "items": {"type": "string"}}, "a root that is not an object"),
        ({"anyOf": [{"type": "object"}, {"type": "string"}]}, "a root that is not an object"),
        (
            {"type": "object", "additionalProperties": {"type": "integer"}},
            "an object open to undeclared properties",
        ),
        ({"type": "object"}, "an object that declares no property"),
        (
            {
                "type": "object",
                "properties": {"m": {"type": "object", "additionalProperties": True}},
            },
            "an object open to undeclared properties",
        ),
        (
            {"type": "object", "properties": {"a": {"type": "string"}}, "patternProperties": {}},
            "an object constrained by patternProperties",
        ),
        (
            {
                "type": "object",
                "properties": {"t": {"type": "array", "prefixItems": [{"type": "string"}]}},
            },
            "a tuple (prefixItems)",
        ),
        (
            {"type": "object", "properties": {"t": {"type": "array", "items": [{}]}}},
            "a tuple (items as a list)",
        ),
        (
            {"type": "object", "properties": {"a": {"allOf": [{"type": "string"}, {}]}}},
            "allOf with several schemas",
        ),
        ({"type": "object", "properties": {"a": True}}, "a boolean schema (true)"),
    ],
)
def test_what_cannot_be_strict_is_sent_as_it_is_and_says_why(
    schema: dict[str, Any], why: str
) -> None:
    made = strict_schema(schema)
    assert not made.strict and not made.exact
    assert made.schema == schema
    assert any(why in note and "cannot be strict" in note for note in made.notes), made.notes
    asked = OutputFormat(schema=schema, name="x")
    assert schema_for(asked, "strict") == (schema, False)  # sent not strict
    with pytest.raises(ValueError, match="cannot be made strict"):
        schema_for(OutputFormat(schema=schema, name="x", strict=True), "strict")


def test_dropped_keywords_only_loosen_and_are_named() -> None:
    schema = {
        "type": "object",
        "properties": {
            "s": {"type": "string", "minLength": 3, "default": "abc"},
            "u": {"type": "array", "items": {"type": "integer"}, "uniqueItems": True},
            "o": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
            "n": {"not": {"const": 0}, "type": "integer"},
        },
        "required": ["s", "u", "o", "n"],
        "additionalProperties": False,
    }
    made = strict_schema(schema)
    assert made.strict and made.exact
    for note in ("$.s: minLength dropped", "$.s: default dropped", "$.u: uniqueItems dropped",
                 "$.o: oneOf read as anyOf", "$.n: not dropped"):  # fmt: skip
        assert note in made.notes
    loose = {"s": "a", "u": [1, 1], "o": "x", "n": 0}  # fits the strict form, not the original
    jsonschema.validate(loose, made.schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(loose, schema)


def test_a_ref_with_siblings_is_inlined_and_a_recursive_one_kept() -> None:
    schema = {
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {"next": {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]}},
                "required": ["next"],
            }
        },
        "type": "object",
        "properties": {"head": {"$ref": "#/$defs/Node", "description": "The first"}},
        "required": ["head"],
    }
    made = strict_schema(schema)
    assert made.strict
    head = made.schema["properties"]["head"]
    assert head["description"] == "The first" and head["type"] == "object"  # inlined
    assert head["properties"]["next"]["anyOf"][0] == {"$ref": "#/$defs/Node"}  # kept
    assert made.schema["$defs"]["Node"]["additionalProperties"] is False
    chain = {"head": {"next": {"next": None}}}
    jsonschema.validate(chain, made.schema)
    with pytest.raises(SchemaError, match="refers to itself"):
        inline_refs(schema)


def test_the_closed_form_keeps_optional_properties_and_drops_what_claude_does_not_read() -> None:
    schema = {
        "type": "object",
        "properties": {
            "n": {"type": "integer", "minimum": 1, "maximum": 9},
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2},
            "one": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        },
        "required": ["n"],
    }
    made = closed_schema(schema)
    assert made.strict and not made.exact  # closed
    assert made.schema["required"] == ["n"]
    assert made.schema["properties"]["n"] == {"type": "integer"}
    assert "minItems" not in made.schema["properties"]["tags"]
    assert made.schema["properties"]["one"]["minItems"] == 1


def test_the_original_is_never_changed() -> None:
    inner = {"type": "object", "properties": {"a": {"type": "integer"}}}
    schema = {"type": "object", "properties": {"inner": inner}}
    strict_schema(schema)
    closed_schema(schema)
    assert inner == {"type": "object", "properties": {"a": {"type": "integer"}}}
    assert "required" not in schema
