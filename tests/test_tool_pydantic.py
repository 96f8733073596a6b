"""Tests of pydantic types as tool parameters and results (solon_events.tools.pydantic_schema)."""

from __future__ import annotations

import enum
from typing import Annotated, Any

import annotated_types
import pytest
from city_names import CityName
from executables import run_python
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, model_validator
from pydantic.dataclasses import dataclass as pydantic_dataclass

from solon_events.event_model.errors import ToolCallError
from solon_events.event_model.extras import install_hint
from solon_events.tools import Tool, format_result, tool


class Unit(enum.Enum):
    CELSIUS = "celsius"
    FAHRENHEIT = "fahrenheit"


class City(BaseModel):
    """A city on the map."""

    model_config = ConfigDict(populate_by_name=True)

    name: CityName = Field(alias="cityName", description="The city's name, capitalised")
    country: str = Field("FR", min_length=2, max_length=2, description="ISO country code")
    unit: Unit = Unit.CELSIUS


class Trip(BaseModel):
    cities: list[City] = Field(min_length=1)
    days: Annotated[int, Field(ge=1, le=30)] = 3

    @model_validator(mode="after")
    def not_too_long(self) -> Trip:
        if self.days > 7 * len(self.cities):
            raise ValueError("at most a week per city")
        return self


class Tree(BaseModel):
    children: list[Tree] = []


@pydantic_dataclass
class Reading:
    celsius: float = Field(ge=-90, le=60)


def props(t: Tool[..., Any]) -> dict[str, Any]:
    properties: dict[str, Any] = t.parameters["properties"]
    return properties


def refs_in(value: Any) -> list[str]:
    """Every ``$ref`` / ``$defs`` key anywhere in a schema."""
    if isinstance(value, dict):
        found = [key for key in value if key in ("$ref", "$defs")]
        return found + [ref for item in value.values() for ref in refs_in(item)]
    if isinstance(value, list):
        return [ref for item in value for ref in refs_in(item)]
    return []


@tool
def plan_trip(trip: Trip, note: str = "") -> str:
    """Plan a trip.

    Args:
        trip: Where to go and for how long.
        note: Anything to remember.
    """
    return f"{len(trip.cities)} cities, {trip.days} days"


# --------------------------------------------------------------------------- schemas


def test_a_model_parameter_takes_pydantics_schema_with_refs_resolved() -> None:
    schema = props(plan_trip)["trip"]
    assert refs_in(plan_trip.parameters) == []
    city = schema["properties"]["cities"]["items"]
    assert city["description"] == "A city on the map."
    assert city["required"] == ["cityName"]
    assert city["properties"]["cityName"] == {
        "type": "string",
        "title": "Cityname",
        "description": "The city's name, capitalised",
    }
    assert city["properties"]["country"]["minLength"] == 2
    assert city["properties"]["unit"]["enum"] == ["celsius", "fahrenheit"]
    assert city["properties"]["unit"]["default"] == "celsius"
    assert schema["properties"]["cities"]["minItems"] == 1
    assert schema["properties"]["days"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 30,
        "default": 3,
        "title": "Days",
    }
    # The docstring describes the parameter; pydantic's own keys stay.
    assert schema["description"] == "Where to go and for how long."
    assert schema["title"] == "Trip"
    assert plan_trip.parameters["required"] == ["trip"]


def test_the_schema_is_pydantics_own_apart_from_the_refs() -> None:
    @tool
    def visit(city: City) -> None:
        pass

    expected = TypeAdapter(City).json_schema()
    definitions = expected.pop("$defs")
    expected["properties"]["unit"] = {
        **definitions["Unit"],
        "default": "celsius",
    }
    assert props(visit)["city"] == expected


def test_annotated_constraints_and_field_descriptions() -> None:
    @tool
    def count(
        n: Annotated[int, Field(ge=1, le=10, description="how many")],
        ratio: Annotated[float, annotated_types.Gt(0)] = 1.0,
        label: Annotated[str, "a plain description"] = "x",
    ) -> None:
        pass

    assert props(count) == {
        "n": {"type": "integer", "minimum": 1, "maximum": 10, "description": "how many"},
        "ratio": {"type": "number", "exclusiveMinimum": 0, "default": 1.0},
        "label": {"type": "string", "description": "a plain description", "default": "x"},
    }


def test_field_as_a_default() -> None:
    @tool
    def search(
        query: str = Field(description="what to look for"),
        limit: int = Field(5, ge=1, description="at most this many"),
        tags: list[str] = Field(default_factory=list),  # noqa: B008
    ) -> tuple[str, int, list[str]]:
        return query, limit, tags

    assert search.parameters["required"] == ["query"]
    assert props(search)["query"] == {"type": "string", "description": "what to look for"}
    assert props(search)["limit"] == {
        "type": "integer",
        "minimum": 1,
        "default": 5,
        "description": "at most this many",
    }
    assert search.invoke({"query": "q"}) == ("q", 5, [])
    assert search.invoke({"query": "q", "limit": 2, "tags": ["a"]}) == ("q", 2, ["a"])
    with pytest.raises(ToolCallError, match=r"'limit': Input should be greater than or equal to 1"):
        search.invoke({"query": "q", "limit": 0})


def test_optional_and_listed_models() -> None:
    @tool
    def visit(first: City | None, others: list[City] = []) -> int:  # noqa: B006
        return len(others) + (first is not None)

    first = props(visit)["first"]
    assert first["type"] == ["object", "null"]
    assert first["properties"]["cityName"]["type"] == "string"
    assert props(visit)["others"]["items"]["title"] == "City"
    assert visit.invoke({"first": None}) == 0
    assert visit.invoke({"first": {"cityName": "Paris"}, "others": [{"name": "Lyon"}]}) == 2


def test_a_pydantic_dataclass() -> None:
    @tool
    def record(reading: Reading) -> float:
        return reading.celsius

    assert props(record)["reading"]["properties"]["celsius"]["maximum"] == 60
    assert record.invoke({"reading": {"celsius": 21}}) == 21.0
    with pytest.raises(ToolCallError, match=r"'reading.celsius': Input should be less than"):
        record.invoke({"reading": {"celsius": 99}})


def test_a_recursive_model_is_a_type_error() -> None:
    def grow(tree: Tree) -> None:
        pass

    with pytest.raises(TypeError, match=r"grow.*'tree'.*Tree refers to itself"):
        tool(grow)


# --------------------------------------------------------------------------- validation


def test_invoke_builds_the_model_by_alias_or_name() -> None:
    @tool
    def visit(city: City) -> City:
        return city

    city = visit.invoke({"city": {"cityName": "Paris", "unit": "fahrenheit"}})
    assert city == City(name="Paris", unit=Unit.FAHRENHEIT)
    assert visit.invoke({"city": {"name": "Lyon"}}).name == "Lyon"


def test_the_validators_own_messages_name_the_path() -> None:
    with pytest.raises(ToolCallError) as caught:
        plan_trip.invoke({"trip": {"cities": [{"cityName": "paris", "country": "FRA"}]}})
    message = str(caught.value)
    assert message.startswith("tool 'plan_trip': ")
    assert "argument 'trip.cities.0.cityName': Value error, the city's name must be" in message
    assert "argument 'trip.cities.0.country': String should have at most 2 characters" in message
    assert "errors.pydantic.dev" not in message
    assert caught.value.tool_name == "plan_trip"


def test_a_model_validator_message() -> None:
    trip = {"cities": [{"cityName": "Paris"}], "days": 8}
    with pytest.raises(ToolCallError, match=r"'trip': Value error, at most a week per city"):
        plan_trip.invoke({"trip": trip})
    assert plan_trip.invoke({"trip": {**trip, "days": 7}}) == "1 cities, 7 days"


def test_missing_and_unknown_top_level_arguments_are_still_checked_by_the_tool() -> None:
    with pytest.raises(ToolCallError, match=r"missing required argument 'trip'"):
        plan_trip.invoke({})
    with pytest.raises(ToolCallError, match=r"unknown argument 'extra'"):
        plan_trip.invoke({"trip": {"cities": [{"cityName": "Paris"}]}, "extra": 1})


# --------------------------------------------------------------------------- results


def test_results_are_json_by_alias() -> None:
    city = City(name="Paris", unit=Unit.FAHRENHEIT)
    assert format_result(city) == '{"cityName":"Paris","country":"FR","unit":"fahrenheit"}'
    assert format_result([city]) == '[{"cityName":"Paris","country":"FR","unit":"fahrenheit"}]'
    assert format_result({"reading": Reading(celsius=3)}) == '{"reading":{"celsius":3.0}}'


# --------------------------------------------------------------------------- optional import


def test_pydantic_is_not_imported_by_tools_that_do_not_use_it() -> None:
    code = """
import sys
from typing import Annotated
import solon_events
from solon_events import tool

@tool
def f(city: str, days: Annotated[int, "how many"] = 1) -> dict[str, int]:
    '''Look up.

    Args:
        city: the city
    '''
    return {"days": days}

f.invoke({"city": "x"})
assert f.format_result({"a": 1}) == '{"a":1}'
print(sorted(m for m in ("pydantic", "mcp") if m in sys.modules))
"""
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_without_pydantic_a_constraint_names_the_extra() -> None:
    code = """
import sys
sys.modules["pydantic"] = None
from typing import Annotated
import annotated_types
from solon_events import tool

def f(n: Annotated[int, annotated_types.Ge(1)]) -> None:
    pass

try:
    tool(f)
except TypeError as error:
    print(error)
"""
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert "needs pydantic" in result.stdout and install_hint("tools") in result.stdout
