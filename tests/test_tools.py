"""Tests of solon_events.tools: schemas from type hints and docstrings, invocation, ToolSet."""

from __future__ import annotations

import dataclasses
import enum
import functools
import inspect
import sys
from collections.abc import Mapping, Sequence  # noqa: F401 (Sequence: exec'd annotations)
from typing import (  # noqa: F401 (Literal, Union: used in exec'd annotations)
    Annotated,
    Any,
    Literal,
    Optional,
    TypedDict,
    Union,
)

import attrs
import pytest

if sys.version_info >= (3, 11):
    from typing import NotRequired
else:
    from typing_extensions import NotRequired

from solon_events.event_model.errors import ChatError, ToolCallError
from solon_events.event_model.messages import ToolSpec
from solon_events.tools import Tool, ToolSet, format_result, tool

# --------------------------------------------------------------------------- helpers and types


def props(t: Tool[..., Any]) -> dict[str, Any]:
    """The properties of a tool's parameter schema."""
    properties: dict[str, Any] = t.parameters["properties"]
    return properties


def schema_of(annotation: str) -> dict[str, Any]:
    """The schema of one required parameter annotated ``annotation`` (a module-level name)."""
    namespace: dict[str, Any] = {}
    exec(f"def f(x: {annotation}) -> None:\n    pass", globals(), namespace)
    schema: dict[str, Any] = props(tool(namespace["f"]))["x"]
    return schema


def obj(properties: dict[str, Any], required: list[str], **extra: Any) -> dict[str, Any]:
    """An object schema as the tools module writes it."""
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
        **extra,
    }


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Ratio(enum.Enum):
    HALF = 0.5
    FULL = 1.0


class Mixed(enum.Enum):
    ONE = 1
    TWO = "two"


class Shape(enum.Enum):
    POINT = (0, 0)


class Empty(enum.Enum):
    pass


class Address(TypedDict):
    street: str
    number: int
    note: NotRequired[str]


class Filters(TypedDict, total=False):
    """Search filters.

    Attributes:
        tag: only items with this tag
    """

    tag: str
    limit: int


@dataclasses.dataclass
class Point:
    """A point on the plane.

    Attributes:
        x: horizontal position
        y: vertical position
    """

    x: int
    y: int = 0
    tags: list[str] = dataclasses.field(default_factory=list)
    cached: int = dataclasses.field(default=0, init=False)


@dataclasses.dataclass
class Plain:
    label: str


@dataclasses.dataclass
class Positive:
    value: int

    def __post_init__(self) -> None:
        if self.value <= 0:
            raise ValueError("value must be positive")


@dataclasses.dataclass
class Node:
    value: int
    children: list[Node]


@attrs.define
class Window:
    """A window."""

    _width: float
    height: Annotated[float, "height in pixels"] = 100.0
    flags: list[str] = attrs.Factory(list)
    secret: int = attrs.field(default=0, init=False)


class NotSchema:
    pass


@attrs.frozen
class Result:
    ok: bool
    point: Plain


class PydanticLike:
    def model_dump(self, mode: str = "python") -> dict[str, Any]:
        return {"mode": mode, "n": 1}


class Custom:
    def __str__(self) -> str:
        return "custom text"


class OldModelDump:
    def model_dump(self) -> dict[str, Any]:
        return {"n": 2}


# --------------------------------------------------------------------------- primitive schemas


def test_primitive_parameters_schema_exactly() -> None:
    @tool
    def f(s: str, i: int, x: float, b: bool) -> None:
        pass

    assert f.parameters == obj(
        {
            "s": {"type": "string"},
            "i": {"type": "integer"},
            "x": {"type": "number"},
            "b": {"type": "boolean"},
        },
        ["s", "i", "x", "b"],
    )


def test_no_parameters_is_an_empty_object() -> None:
    @tool
    def ping() -> str:
        return "pong"

    assert ping.parameters == obj({}, [])


def test_defaults_make_parameters_optional_and_are_shown() -> None:
    @tool
    def f(a: int, b: int = 3, c: str = "x", d: bool = False, e: Color = Color.GREEN) -> None:
        pass

    assert f.parameters["required"] == ["a"]
    assert props(f)["b"] == {"type": "integer", "default": 3}
    assert props(f)["c"] == {"type": "string", "default": "x"}
    assert props(f)["d"] == {"type": "boolean", "default": False}
    assert props(f)["e"] == {"type": "string", "enum": ["red", "green"], "default": "green"}


def test_non_json_default_is_not_shown() -> None:
    @tool
    def f(a: tuple[int, ...] = (1, 2)) -> None:
        pass

    assert props(f)["a"] == {"type": "array", "items": {"type": "integer"}}
    assert f.parameters["required"] == []


def test_any_and_none() -> None:
    assert schema_of("Any") == {}
    assert schema_of("None") == {"type": "null"}


# --------------------------------------------------------------------------- optional and unions


def test_optional_without_default_stays_required_and_allows_null() -> None:
    @tool
    def f(a: Optional[int], b: str | None) -> None:  # noqa: UP045
        pass

    assert f.parameters == obj(
        {"a": {"type": ["integer", "null"]}, "b": {"type": ["string", "null"]}}, ["a", "b"]
    )


def test_optional_with_default_is_not_required() -> None:
    @tool
    def f(a: int | None = None, b: Optional[str] = "x") -> None:  # noqa: UP045
        pass

    assert f.parameters == obj(
        {
            "a": {"type": ["integer", "null"], "default": None},
            "b": {"type": ["string", "null"], "default": "x"},
        },
        [],
    )


def test_optional_enum_uses_any_of() -> None:
    assert schema_of("Color | None") == {
        "anyOf": [{"type": "string", "enum": ["red", "green"]}, {"type": "null"}]
    }


def test_optional_annotated_keeps_description_outside_any_of() -> None:
    assert schema_of('Optional[Annotated[Color, "the colour"]]') == {
        "anyOf": [{"type": "string", "enum": ["red", "green"]}, {"type": "null"}],
        "description": "the colour",
    }


def test_union_of_types_is_any_of() -> None:
    assert schema_of("Union[int, str]") == {"anyOf": [{"type": "integer"}, {"type": "string"}]}
    assert schema_of("int | str | None") == {
        "anyOf": [{"type": "integer"}, {"type": "string"}, {"type": "null"}]
    }


# --------------------------------------------------------------------------- enum and literal


def test_enum_schemas_take_their_type_from_the_values() -> None:
    assert schema_of("Color") == {"type": "string", "enum": ["red", "green"]}
    assert schema_of("Level") == {"type": "integer", "enum": [1, 2]}
    assert schema_of("Ratio") == {"type": "number", "enum": [0.5, 1.0]}
    assert schema_of("Mixed") == {"type": ["integer", "string"], "enum": [1, "two"]}


def test_literal_schemas() -> None:
    assert schema_of('Literal["asc", "desc"]') == {"type": "string", "enum": ["asc", "desc"]}
    assert schema_of("Literal[1, 2, 3]") == {"type": "integer", "enum": [1, 2, 3]}
    assert schema_of("Literal[True]") == {"type": "boolean", "enum": [True]}
    assert schema_of('Literal["a", None]') == {"type": ["string", "null"], "enum": ["a", None]}
    assert schema_of("Literal[Color.RED]") == {"type": "string", "enum": ["red"]}


# --------------------------------------------------------------------------- containers


def test_sequence_schemas() -> None:
    assert schema_of("list[int]") == {"type": "array", "items": {"type": "integer"}}
    assert schema_of("list") == {"type": "array"}
    assert schema_of("Sequence[float]") == {"type": "array", "items": {"type": "number"}}
    assert schema_of("tuple[str, ...]") == {"type": "array", "items": {"type": "string"}}
    assert schema_of("set[str]") == {
        "type": "array",
        "items": {"type": "string"},
        "uniqueItems": True,
    }
    assert schema_of("frozenset[int]") == {
        "type": "array",
        "items": {"type": "integer"},
        "uniqueItems": True,
    }


def test_fixed_tuple_schema() -> None:
    assert schema_of("tuple[int, str]") == {
        "type": "array",
        "prefixItems": [{"type": "integer"}, {"type": "string"}],
        "minItems": 2,
        "maxItems": 2,
    }


def test_mapping_schemas() -> None:
    assert schema_of("dict[str, int]") == {
        "type": "object",
        "additionalProperties": {"type": "integer"},
    }
    assert schema_of("dict") == {"type": "object"}
    assert schema_of("dict[str, Any]") == {"type": "object"}
    assert schema_of("Mapping[str, list[str]]") == {
        "type": "object",
        "additionalProperties": {"type": "array", "items": {"type": "string"}},
    }


def test_nested_combinations() -> None:
    assert schema_of("list[Color] | None") == {
        "type": ["array", "null"],
        "items": {"type": "string", "enum": ["red", "green"]},
    }
    assert schema_of("dict[str, list[Level]]") == {
        "type": "object",
        "additionalProperties": {"type": "array", "items": {"type": "integer", "enum": [1, 2]}},
    }
    assert schema_of("list[Plain]") == {
        "type": "array",
        "items": obj({"label": {"type": "string"}}, ["label"]),
    }


# --------------------------------------------------------------------------- structured parameters


def test_typed_dict_schema() -> None:
    assert schema_of("Address") == obj(
        {"street": {"type": "string"}, "number": {"type": "integer"}, "note": {"type": "string"}},
        ["street", "number"],
    )


def test_typed_dict_total_false_with_docstring() -> None:
    assert schema_of("Filters") == obj(
        {
            "tag": {"type": "string", "description": "only items with this tag"},
            "limit": {"type": "integer"},
        },
        [],
        description="Search filters.",
    )


def test_dataclass_schema() -> None:
    assert schema_of("Point") == obj(
        {
            "x": {"type": "integer", "description": "horizontal position"},
            "y": {"type": "integer", "description": "vertical position", "default": 0},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        ["x"],
        description="A point on the plane.",
    )


def test_dataclass_without_docstring_has_no_generated_description() -> None:
    assert schema_of("Plain") == obj({"label": {"type": "string"}}, ["label"])


def test_attrs_schema_uses_init_names() -> None:
    assert schema_of("Window") == obj(
        {
            "width": {"type": "number"},
            "height": {"type": "number", "description": "height in pixels", "default": 100.0},
            "flags": {"type": "array", "items": {"type": "string"}},
        },
        ["width"],
        description="A window.",
    )


def test_optional_dataclass_allows_null() -> None:
    schema = schema_of("Plain | None")
    assert schema["type"] == ["object", "null"]
    assert schema["required"] == ["label"]


# --------------------------------------------------------------------------- descriptions


def test_annotated_adds_descriptions() -> None:
    @tool
    def f(city: Annotated[str, "the city name"], days: Annotated[int, "how many"] = 1) -> None:
        pass

    assert f.parameters == obj(
        {
            "city": {"type": "string", "description": "the city name"},
            "days": {"type": "integer", "description": "how many", "default": 1},
        },
        ["city"],
    )


def test_annotated_wins_over_docstring() -> None:
    @tool
    def f(city: Annotated[str, "from Annotated"]) -> None:
        """Look up.

        Args:
            city: from the docstring
        """

    assert props(f)["city"]["description"] == "from Annotated"


# --------------------------------------------------------------------------- decorator forms


def test_decorator_forms() -> None:
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    plain, called, named = tool(add), tool()(add), tool(name="plus", return_direct=True)(add)
    assert isinstance(plain, Tool) and isinstance(called, Tool)
    assert (plain.name, called.name, named.name) == ("add", "add", "plus")
    assert (plain.return_direct, named.return_direct) == (False, True)
    assert named.description == "Add two numbers."


def test_from_function() -> None:
    def add(a: int, b: int) -> int:
        return a + b

    t = Tool.from_function(add, name="sum", description="Sum.", return_direct=True)
    assert (t.name, t.description, t.return_direct, t.function) == ("sum", "Sum.", True, add)


def test_retooling_a_tool_wraps_the_same_function() -> None:
    @tool
    def add(a: int, b: int) -> int:
        return a + b

    renamed = tool(name="plus")(add)
    assert renamed.function is add.function
    assert renamed.name == "plus" and add.name == "add"


def test_spec_is_a_tool_spec() -> None:
    @tool
    def add(a: int, b: int = 1) -> int:
        """Add."""
        return a + b

    assert isinstance(add.spec, ToolSpec)
    assert add.spec.name == "add"
    assert add.spec.description == "Add."
    assert dict(add.spec.parameters) == add.parameters


def test_parameters_is_a_copy() -> None:
    @tool
    def f(a: int) -> None:
        pass

    f.parameters["properties"]["a"]["type"] = "string"
    assert props(f)["a"] == {"type": "integer"}
    assert f.spec.parameters["properties"]["a"] == {"type": "integer"}


def test_tool_is_callable_like_the_function() -> None:
    @tool
    def add(a: int, b: int) -> int:
        return a + b

    assert add(2, 3) == 5
    assert add(a=2, b=3) == 5
    assert str(inspect.signature(add)) == "(a: 'int', b: 'int') -> 'int'"
    assert add.is_async is False
    assert repr(add) == "Tool(name='add', is_async=False, return_direct=False)"


@pytest.mark.asyncio
async def test_async_tool_stays_async() -> None:
    @tool
    async def double(x: int) -> int:
        return x * 2

    assert double.is_async is True
    call = double(4)
    assert inspect.isawaitable(call)
    assert await call == 8


def test_bad_names_are_rejected() -> None:
    def f(a: int) -> None:
        pass

    with pytest.raises(ValueError, match="1 to 64"):
        tool(name="has space")(f)
    with pytest.raises(ValueError, match="1 to 64"):
        tool(name="x" * 65)(f)
    with pytest.raises(ValueError, match="<lambda>"):
        tool(lambda: None)


def test_options_must_be_keywords() -> None:
    with pytest.raises(TypeError, match="by keyword"):
        tool("name")  # type: ignore[call-overload]


def test_bound_method_and_partial() -> None:
    class Calculator:
        def __init__(self, base: int) -> None:
            self.base = base

        def add(self, x: int) -> int:
            """Add to the base."""
            return self.base + x

    method = tool(Calculator(10).add)
    assert method.parameters == obj({"x": {"type": "integer"}}, ["x"])
    assert method.invoke({"x": 5}) == 15

    def power(base: int, exponent: int) -> int:
        """Raise to a power."""
        return int(base**exponent)

    square = tool(name="square")(functools.partial(power, exponent=2))
    assert square.description == "Raise to a power."
    assert square.parameters["required"] == ["base"]
    assert square.invoke({"base": 7}) == 49


# --------------------------------------------------------------------------- decoration errors


def test_missing_annotation_is_a_type_error() -> None:
    def f(a, b: int) -> None:  # type: ignore[no-untyped-def]
        pass

    with pytest.raises(TypeError, match=r"f.*'a'.*no type annotation"):
        tool(f)


def test_var_args_are_a_type_error() -> None:
    def f(*args: int) -> None:
        pass

    def g(a: int, **kwargs: int) -> None:
        pass

    with pytest.raises(TypeError, match=r"f.*'args'.*\*args"):
        tool(f)
    with pytest.raises(TypeError, match=r"g.*'kwargs'.*\*\*kwargs"):
        tool(g)


@pytest.mark.parametrize(
    ("annotation", "detail"),
    [
        ("NotSchema", "NotSchema is not a supported annotation"),
        ("bytes", "bytes is not a supported annotation"),
        ("complex", "complex is not a supported annotation"),
        ("dict[int, str]", "dict keys must be str"),
        ("list[NotSchema]", "NotSchema"),
        ("Node", "recursive"),
        ("Shape", "not JSON scalars"),
        ("Empty", "no members"),
        ("Literal[b'x']", "not a JSON scalar"),
        ("Optional[NotSchema]", "NotSchema"),
    ],
)
def test_unsupported_annotations_are_type_errors(annotation: str, detail: str) -> None:
    namespace: dict[str, Any] = {}
    exec(f"def tool_fn(param: {annotation}) -> None:\n    pass", globals(), namespace)
    with pytest.raises(TypeError) as info:
        tool(namespace["tool_fn"])
    message = str(info.value)
    assert "tool_fn" in message
    assert "'param'" in message
    assert detail in message


def test_unresolvable_annotation_is_a_type_error() -> None:
    def f(a: DoesNotExist) -> None:  # type: ignore[name-defined]  # noqa: F821
        pass

    with pytest.raises(TypeError, match="DoesNotExist"):
        tool(f)


def test_unresolvable_return_annotation_is_ignored() -> None:
    def f(a: int) -> OnlyForTypeCheckers:  # type: ignore[name-defined]  # noqa: F821
        return a

    t = tool(f)
    assert t.parameters == obj({"a": {"type": "integer"}}, ["a"])
    assert t.invoke({"a": 2}) == 2


# --------------------------------------------------------------------------- invoke


def test_invoke_calls_with_keyword_arguments() -> None:
    @tool
    def add(a: int, b: int = 10) -> int:
        return a + b

    assert add.invoke({"a": 1, "b": 2}) == 3
    assert add.invoke({"a": 1}) == 11


def test_invoke_with_no_arguments() -> None:
    @tool
    def ping() -> str:
        return "pong"

    assert ping.invoke({}) == "pong"
    assert ping.invoke(None) == "pong"


def test_unknown_argument_is_a_tool_call_error() -> None:
    @tool
    def add(a: int, b: int) -> int:
        return a + b

    with pytest.raises(ToolCallError) as info:
        add.invoke({"a": 1, "b": 2, "c": 3})
    assert isinstance(info.value, ChatError)
    assert info.value.tool_name == "add"
    assert "'add'" in str(info.value)
    assert str(info.value) == "tool 'add': unknown argument 'c' (expected: a, b)"


def test_missing_argument_is_a_tool_call_error() -> None:
    @tool
    def add(a: int, b: int) -> int:
        return a + b

    with pytest.raises(ToolCallError) as info:
        add.invoke({})
    assert str(info.value) == "tool 'add': missing required arguments 'a', 'b'"
    assert info.value.tool_name == "add"


def test_arguments_must_be_an_object() -> None:
    @tool
    def f(a: int) -> None:
        pass

    with pytest.raises(ToolCallError, match="JSON object, got array"):
        f.invoke([1])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("annotation", "value", "expected"),
    [
        ("int", 3, 3),
        ("int", 3.0, 3),
        ("float", 2, 2.0),
        ("float", 2.5, 2.5),
        ("str", "x", "x"),
        ("bool", False, False),
        ("Color", "green", Color.GREEN),
        ("Color", Color.RED, Color.RED),
        ("Level", 2, Level.HIGH),
        ("Ratio", 1, Ratio.FULL),
        ('Literal["asc", "desc"]', "desc", "desc"),
        ("Literal[Color.RED]", "red", Color.RED),
        ("list[int]", [1, 2], [1, 2]),
        ("tuple[int, ...]", [1, 2], (1, 2)),
        ("tuple[int, str]", [1, "a"], (1, "a")),
        ("set[str]", ["a", "b", "a"], {"a", "b"}),
        ("frozenset[int]", [1], frozenset({1})),
        ("dict[str, float]", {"a": 1}, {"a": 1.0}),
        ("int | None", None, None),
        ("int | str", "s", "s"),
        ("Any", {"x": [1]}, {"x": [1]}),
        ("list[Color]", ["red", "green"], [Color.RED, Color.GREEN]),
    ],
)
def test_invoke_converts_values(annotation: str, value: Any, expected: Any) -> None:
    namespace: dict[str, Any] = {}
    exec(f"def echo(x: {annotation}) -> Any:\n    return x", globals(), namespace)
    result = tool(namespace["echo"]).invoke({"x": value})
    assert result == expected
    assert type(result) is type(expected)


@pytest.mark.parametrize(
    ("annotation", "value", "message"),
    [
        ("int", "3", "expected an integer, got string"),
        ("int", True, "expected an integer, got boolean"),
        ("int", 2.5, "expected an integer, got number"),
        ("float", "1.5", "expected a number, got string"),
        ("str", 1, "expected a string, got integer"),
        ("bool", 1, "expected a boolean, got integer"),
        ("Color", "blue", "expected one of 'red', 'green', got 'blue'"),
        ("Level", True, "expected one of 1, 2, got True"),
        ('Literal["asc"]', "up", "expected one of 'asc', got 'up'"),
        ("list[int]", "1,2", "expected an array, got string"),
        ("list[int]", [1, "2"], "argument 'x[1]': expected an integer"),
        ("tuple[int, str]", [1], "expected an array of 2 items"),
        ("dict[str, int]", [], "expected an object, got array"),
        ("dict[str, int]", {"a": "b"}, "argument 'x.a': expected an integer"),
        ("set[Any]", [[1]], "unhashable"),
        ("int", None, "expected an integer, got null"),
        ("int | str", 1.5, "expected an integer, got number / argument 'x': expected a string"),
    ],
)
def test_invoke_rejects_ill_typed_values(annotation: str, value: Any, message: str) -> None:
    namespace: dict[str, Any] = {}
    exec(f"def echo(x: {annotation}) -> Any:\n    return x", globals(), namespace)
    with pytest.raises(ToolCallError) as info:
        tool(namespace["echo"]).invoke({"x": value})
    assert "tool 'echo'" in str(info.value)
    assert message in str(info.value)
    assert info.value.tool_name == "echo"


def test_null_for_a_defaulted_parameter_uses_the_default() -> None:
    @tool
    def f(limit: int = 10, name: str | None = "x") -> tuple[int, str | None]:
        return limit, name

    assert f.invoke({"limit": None}) == (10, "x")
    assert f.invoke({"name": None}) == (10, None)


def test_invoke_builds_dataclass() -> None:
    @tool
    def norm(p: Point) -> Point:
        return p

    assert norm.invoke({"p": {"x": 3}}) == Point(x=3, y=0, tags=[])
    assert norm.invoke({"p": {"x": 1, "y": 2, "tags": ["a"]}}) == Point(1, 2, ["a"])
    assert norm.invoke({"p": Point(5)}) == Point(5)


def test_invoke_builds_nested_dataclasses() -> None:
    @tool
    def total(points: list[Point], named: dict[str, Plain] | None = None) -> Any:
        return points, named

    points, named = total.invoke({"points": [{"x": 1}, {"x": 2}], "named": {"a": {"label": "A"}}})
    assert points == [Point(1), Point(2)]
    assert named == {"a": Plain("A")}


def test_invoke_dataclass_errors_name_the_path() -> None:
    @tool
    def norm(points: list[Point]) -> None:
        pass

    with pytest.raises(
        ToolCallError, match=r"argument 'points\[0\]': unknown field 'z' \(expected: x, y, tags\)"
    ):
        norm.invoke({"points": [{"x": 1, "z": 2}]})
    with pytest.raises(ToolCallError, match=r"argument 'points\[1\]': missing required field 'x'"):
        norm.invoke({"points": [{"x": 1}, {"y": 2}]})
    with pytest.raises(ToolCallError, match=r"argument 'points\[0\].x': expected an integer"):
        norm.invoke({"points": [{"x": "1"}]})
    with pytest.raises(ToolCallError, match=r"argument 'points\[0\]': expected an object"):
        norm.invoke({"points": [3]})


def test_invoke_wraps_dataclass_validation_errors() -> None:
    @tool
    def f(p: Positive) -> int:
        return p.value

    assert f.invoke({"p": {"value": 2}}) == 2
    with pytest.raises(ToolCallError, match="value must be positive"):
        f.invoke({"p": {"value": 0}})


def test_invoke_builds_attrs_instance() -> None:
    @tool
    def area(w: Window) -> float:
        return w._width * w.height

    assert area.invoke({"w": {"width": 2, "height": 3}}) == 6.0
    assert area.invoke({"w": {"width": 2}}) == 200.0
    with pytest.raises(ToolCallError, match="unknown field 'secret'"):
        area.invoke({"w": {"width": 2, "secret": 1}})


def test_invoke_checks_typed_dict() -> None:
    @tool
    def where(address: Address) -> Address:
        return address

    assert where.invoke({"address": {"street": "Main", "number": 3}}) == {
        "street": "Main",
        "number": 3,
    }
    with pytest.raises(ToolCallError, match="missing required field 'number'"):
        where.invoke({"address": {"street": "Main"}})
    with pytest.raises(ToolCallError, match=r"'address.number': expected an integer"):
        where.invoke({"address": {"street": "Main", "number": "3"}})


def test_positional_only_parameters() -> None:
    @tool
    def f(a: int, b: int = 2, /, c: int = 3) -> tuple[int, int, int]:
        return a, b, c

    assert f.invoke({"a": 1}) == (1, 2, 3)
    assert f.invoke({"a": 1, "c": 9}) == (1, 2, 9)
    assert f.invoke({"b": 5, "a": 1}) == (1, 5, 3)


def test_exceptions_from_the_tool_propagate_unchanged() -> None:
    error = ValueError("boom")

    @tool
    def explode(a: int) -> None:
        raise error

    with pytest.raises(ValueError) as info:
        explode.invoke({"a": 1})
    assert info.value is error


# --------------------------------------------------------------------------- async invoke


@pytest.mark.asyncio
async def test_ainvoke_awaits_async_tools() -> None:
    @tool
    async def double(x: float) -> float:
        return x * 2

    assert await double.ainvoke({"x": 2}) == 4.0
    pending = double.invoke({"x": 3})
    assert inspect.isawaitable(pending)
    assert await pending == 6.0


@pytest.mark.asyncio
async def test_ainvoke_runs_sync_tools() -> None:
    @tool
    def add(a: int, b: int) -> int:
        return a + b

    assert await add.ainvoke({"a": 1, "b": 2}) == 3


@pytest.mark.asyncio
async def test_async_argument_errors_and_tool_errors() -> None:
    @tool
    async def fail(x: int) -> None:
        raise KeyError("inner")

    with pytest.raises(ToolCallError, match="unknown argument 'y'"):
        await fail.ainvoke({"x": 1, "y": 2})
    with pytest.raises(KeyError, match="inner"):
        await fail.ainvoke({"x": 1})


def test_ainvoke_from_plain_asyncio_run() -> None:
    import asyncio

    @tool
    async def greet(name: str) -> str:
        return f"hi {name}"

    assert asyncio.run(greet.ainvoke({"name": "ada"})) == "hi ada"


def test_async_callable_object_is_async() -> None:
    class Fetch:
        """Fetch a page."""

        async def __call__(self, url: str) -> str:
            return url

    fetch = tool(name="fetch")(Fetch())
    assert fetch.is_async is True
    assert fetch.description == "Fetch a page."
    assert fetch.parameters == obj({"url": {"type": "string"}}, ["url"])


# --------------------------------------------------------------------------- return_direct


def test_return_direct_flag() -> None:
    @tool(return_direct=True)
    def final(answer: str) -> str:
        return answer

    @tool
    def normal(answer: str) -> str:
        return answer

    assert final.return_direct is True
    assert normal.return_direct is False


# --------------------------------------------------------------------------- format_result


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("already text", "already text"),
        ("", ""),
        (None, ""),
        ({"a": 1, "b": [1, 2]}, '{"a":1,"b":[1,2]}'),
        ([1, "x", None], '[1,"x",null]'),
        ((1, 2), "[1,2]"),
        ({1: "a"}, '{"1":"a"}'),
        ({"c": Color.RED}, '{"c":"red"}'),
        ({"s": frozenset({3})}, '{"s":[3]}'),
        ({"ü": "日本"}, '{"ü":"日本"}'),
        (Plain("a"), '{"label":"a"}'),
        (Result(ok=True, point=Plain("b")), '{"ok":true,"point":{"label":"b"}}'),
        ([Window(1.0)], '[{"_width":1.0,"height":100.0,"flags":[],"secret":0}]'),
        (PydanticLike(), '{"mode":"json","n":1}'),
        (OldModelDump(), '{"n":2}'),
        ({"o": Custom()}, '{"o":"custom text"}'),
        (Custom(), "custom text"),
        (42, "42"),
        (2.5, "2.5"),
        (True, "true"),
        (Color.RED, "red"),
        (Level.HIGH, "2"),
    ],
)
def test_format_result(value: Any, text: str) -> None:
    assert format_result(value) == text
    assert Tool.format_result(value) == text


def test_format_result_on_a_tool_instance() -> None:
    @tool
    def f(a: int) -> dict[str, int]:
        return {"a": a}

    assert f.format_result(f.invoke({"a": 1})) == '{"a":1}'


def test_format_result_unencodable_falls_back_to_str() -> None:
    value = {"big": 2**80}
    assert format_result(value) == str(value)


# --------------------------------------------------------------------------- ToolSet


def _add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool
def _mul(a: int, b: int) -> int:
    """Multiply two numbers."""
    return a * b


@tool
async def _neg(a: int) -> int:
    return -a


def test_toolset_from_tools_and_functions() -> None:
    tools = ToolSet([_add, _mul])
    assert isinstance(tools, Mapping)
    assert list(tools) == ["_add", "_mul"]
    assert len(tools) == 2
    assert "_add" in tools and "nope" not in tools
    assert isinstance(tools["_add"], Tool)
    assert tools["_mul"] is _mul
    assert tools.get("_add").invoke({"a": 2, "b": 3}) == 5
    assert repr(tools) == "ToolSet(_add, _mul)"


def test_toolset_unknown_tool() -> None:
    tools = ToolSet([_add, _mul])
    with pytest.raises(ToolCallError) as info:
        tools.get("div")
    assert str(info.value) == "unknown tool 'div'; known: _add, _mul"
    assert info.value.tool_name == "div"
    assert tools.get("div", None) is None
    with pytest.raises(KeyError):
        tools["div"]


def test_empty_toolset() -> None:
    tools = ToolSet()
    assert len(tools) == 0
    assert tools.specs() == ()
    with pytest.raises(ToolCallError, match=r"unknown tool 'x'; known: \(none\)"):
        tools.get("x")


def test_toolset_specs() -> None:
    specs = ToolSet([_add, _mul]).specs()
    assert isinstance(specs, tuple)
    assert [s.name for s in specs] == ["_add", "_mul"]
    assert all(isinstance(s, ToolSpec) for s in specs)
    assert specs[0].description == "Add two numbers."
    assert specs[1] == _mul.spec


def test_toolset_duplicate_names() -> None:
    with pytest.raises(ValueError, match="duplicate tool name '_add'"):
        ToolSet([_add, tool(_add)])
    with pytest.raises(ValueError, match="duplicate tool name '_mul'"):
        ToolSet([_mul, tool(name="_mul")(_add)])


def test_toolset_flattens_tool_sets() -> None:
    inner = ToolSet([_add])
    assert list(ToolSet(inner)) == ["_add"]
    assert list(ToolSet([inner, _mul])) == ["_add", "_mul"]


@pytest.mark.asyncio
async def test_toolset_invoke() -> None:
    tools = ToolSet([_add, _neg])
    assert tools.invoke("_add", {"a": 1, "b": 1}) == 2
    assert await tools.ainvoke("_neg", {"a": 4}) == -4
    with pytest.raises(ToolCallError, match="unknown tool 'x'"):
        await tools.ainvoke("x", {})
