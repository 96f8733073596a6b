"""Tools: typed, documented Python functions a model may call.

:func:`tool` turns a function (sync or async) into a :class:`Tool`: its JSON schema comes from
the type hints, its descriptions from the docstring (Google, reST or NumPy style). A tool is
still callable like the function; :meth:`Tool.invoke` / :meth:`Tool.ainvoke` call it with the
arguments a model sent, checked against the schema and converted to the annotated types.
:class:`ToolSet` looks tools up by name.

Supported annotations: ``str``, ``int``, ``float``, ``bool``, ``None``, ``Any``, ``Enum``
subclasses, ``Literal``, ``Optional`` / ``X | None`` and other unions, ``list`` / ``Sequence``,
``tuple``, ``set`` / ``frozenset``, ``dict[str, X]`` / ``Mapping[str, X]``, ``TypedDict``,
dataclasses and attrs classes, nested freely. ``Annotated[X, "text"]`` adds a description.

Plain Python, no I/O: an async tool's coroutine is awaited by the caller.
"""

from __future__ import annotations

import collections.abc as cabc
import copy
import dataclasses
import enum
import functools
import inspect
import re
import types
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Generic, Literal, ParamSpec, TypeVar, Union, overload

import attrs
import orjson

from .errors import ToolCallError
from .messages import ToolSpec

__all__ = ["Tool", "ToolSet", "format_result", "tool"]

P = ParamSpec("P")
R = TypeVar("R")

_NAME_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_MISSING: Any = object()


# --------------------------------------------------------------------------- docstrings

_GOOGLE_PARAM_SECTIONS = frozenset(
    {
        "args",
        "arguments",
        "parameters",
        "params",
        "keyword args",
        "keyword arguments",
        "kwargs",
        "other parameters",
        "attributes",
    }
)
_GOOGLE_OTHER_SECTIONS = frozenset(
    {
        "returns",
        "return",
        "yields",
        "yield",
        "raises",
        "raise",
        "warns",
        "examples",
        "example",
        "note",
        "notes",
        "warning",
        "warnings",
        "see also",
        "references",
        "todo",
        "attention",
        "caution",
        "danger",
        "hint",
        "important",
        "tip",
        "methods",
    }
)
_NUMPY_PARAM_SECTIONS = frozenset({"parameters", "other parameters", "attributes"})
_GOOGLE_HEADER = re.compile(r"^\s*([A-Za-z][A-Za-z ]*?)\s*:\s*$")
_GOOGLE_ENTRY = re.compile(r"^\*{0,2}([A-Za-z_]\w*)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_NUMPY_RULE = re.compile(r"^\s*-{3,}\s*$")
_REST_FIELD = re.compile(r"^\s*:[A-Za-z]+(?:\s[^:]*)?:")
_REST_PARAM = re.compile(
    r"^:(?:param|parameter|arg|argument|key|keyword)\s+(?:[^:]*?\s+)?\*{0,2}([A-Za-z_]\w*)\s*:\s*(.*)$"
)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _google_header(line: str) -> str | None:
    match = _GOOGLE_HEADER.match(line)
    if match is None:
        return None
    name = match.group(1).lower()
    return name if name in _GOOGLE_PARAM_SECTIONS or name in _GOOGLE_OTHER_SECTIONS else None


def _is_numpy_header(lines: list[str], i: int) -> bool:
    return (
        i + 1 < len(lines)
        and bool(lines[i].strip())
        and not _NUMPY_RULE.match(lines[i])
        and bool(_NUMPY_RULE.match(lines[i + 1]))
    )


def _starts_section(lines: list[str], i: int) -> bool:
    line = lines[i]
    return bool(_google_header(line) or _is_numpy_header(lines, i) or _REST_FIELD.match(line))


def _block(lines: list[str], start: int, indent: int) -> tuple[list[str], int]:
    """The lines after ``start`` that are blank or indented deeper than ``indent``."""
    end = start
    while end < len(lines) and (not lines[end].strip() or _indent(lines[end]) > indent):
        end += 1
    return [line.strip() for line in lines[start:end] if line.strip()], end


def _join(first: str, rest: list[str]) -> str:
    return " ".join(part for part in [first.strip(), *rest] if part)


def _google_section(lines: list[str], i: int, out: dict[str, str]) -> int:
    header_indent = _indent(lines[i])
    j = i + 1
    while j < len(lines):
        line = lines[j]
        if not line.strip():
            j += 1
            continue
        indent = _indent(line)
        if indent <= header_indent:
            break
        body, end = _block(lines, j + 1, indent)
        match = _GOOGLE_ENTRY.match(line.strip())
        if match:
            out[match.group(1)] = _join(match.group(2), body)
        j = end
    return j


def _numpy_section(lines: list[str], i: int, out: dict[str, str]) -> int:
    header_indent = _indent(lines[i])
    j = i + 2
    while j < len(lines):
        line = lines[j]
        if not line.strip():
            j += 1
            continue
        if _is_numpy_header(lines, j) or _indent(line) < header_indent:
            break
        body, end = _block(lines, j + 1, _indent(line))
        names = line.strip().partition(":")[0]
        for name in names.split(","):
            if name.strip():
                out[name.strip().lstrip("*")] = _join("", body)
        j = end
    return j


def _parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a raw docstring into its description and per-parameter descriptions."""
    if not doc or not doc.strip():
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    first = next((i for i in range(len(lines)) if _starts_section(lines, i)), len(lines))
    description = "\n".join(lines[:first]).strip()
    params: dict[str, str] = {}
    i = first
    while i < len(lines):
        line = lines[i]
        header = _google_header(line)
        rest = _REST_PARAM.match(line.strip())
        if header in _GOOGLE_PARAM_SECTIONS:
            i = _google_section(lines, i, params)
        elif _is_numpy_header(lines, i) and line.strip().lower() in _NUMPY_PARAM_SECTIONS:
            i = _numpy_section(lines, i, params)
        elif rest:
            body, i = _block(lines, i + 1, _indent(line))
            params[rest.group(1)] = _join(rest.group(2), body)
        else:
            i += 1
    return description, params


def _class_doc(cls: type) -> tuple[str, dict[str, str]]:
    doc = cls.__dict__.get("__doc__")
    if not isinstance(doc, str) or doc.startswith(f"{cls.__name__}("):
        return "", {}
    return _parse_docstring(doc)


# --------------------------------------------------------------------------- schema shapes


class _BadValue(Exception):
    """An argument value does not fit its annotation (turned into ToolCallError)."""


class _Unsupported(TypeError):
    """An annotation cannot be described as JSON schema."""


_Converter = Callable[[Any, str], Any]


@attrs.frozen
class _Shape:
    """The JSON schema of one annotation and the function that checks and converts a value."""

    schema: dict[str, Any]
    convert: _Converter
    nullable: bool = False

    def described(self, description: str) -> _Shape:
        """This shape with a description in its schema."""
        if not description:
            return self
        return attrs.evolve(self, schema={**self.schema, "description": description})


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def _bad(path: str, expected: str, value: object) -> _BadValue:
    return _BadValue(f"argument {path!r}: expected {expected}, got {_json_type(value)}")


def _is_json_scalar(value: object) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def _type_of_values(values: list[Any]) -> str | list[str]:
    kinds: list[str] = []
    for value in values:
        kind = _json_type(value)
        if kind not in kinds:
            kinds.append(kind)
    return kinds[0] if len(kinds) == 1 else kinds


def _value_key(value: object) -> tuple[bool, object]:
    # True == 1 in Python, but not in JSON: keep booleans apart from numbers.
    return (isinstance(value, bool), value)


def _identity(value: Any, path: str) -> Any:
    return value


def _convert_null(value: Any, path: str) -> None:
    if value is not None:
        raise _bad(path, "null", value)
    return None


def _convert_str(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise _bad(path, "a string", value)
    return value


def _convert_int(value: Any, path: str) -> int:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise _bad(path, "an integer", value)
    return value


def _convert_float(value: Any, path: str) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise _bad(path, "a number", value)
    return float(value)


def _convert_bool(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise _bad(path, "a boolean", value)
    return value


_PRIMITIVES: dict[Any, _Shape] = {
    str: _Shape({"type": "string"}, _convert_str),
    int: _Shape({"type": "integer"}, _convert_int),
    float: _Shape({"type": "number"}, _convert_float),
    bool: _Shape({"type": "boolean"}, _convert_bool),
    type(None): _Shape({"type": "null"}, _convert_null, nullable=True),
    None: _Shape({"type": "null"}, _convert_null, nullable=True),
    Any: _Shape({}, _identity, nullable=True),
}


def _choices(pairs: list[tuple[Any, Any]]) -> _Shape:
    """A closed set of JSON values, each mapped to its Python value (Literal, Enum)."""
    values = [json_value for json_value, _ in pairs]
    lookup = {_value_key(json_value): py_value for json_value, py_value in pairs}
    python_values = [py_value for _, py_value in pairs]
    allowed = ", ".join(repr(v) for v in values)

    def convert(value: Any, path: str) -> Any:
        if any(value is v for v in python_values):
            return value
        try:
            return lookup[_value_key(value)]
        except (KeyError, TypeError):
            raise _BadValue(
                f"argument {path!r}: expected one of {allowed}, got {value!r}"
            ) from None

    schema = {"type": _type_of_values(values), "enum": values}
    return _Shape(schema, convert, nullable=None in values)


def _enum_shape(tp: type[enum.Enum]) -> _Shape:
    members = list(tp)
    if not members:
        raise _Unsupported(f"enum {tp.__name__} has no members")
    if not all(_is_json_scalar(m.value) for m in members):
        raise _Unsupported(f"enum {tp.__name__} has values that are not JSON scalars")
    return _choices([(m.value, m) for m in members])


def _literal_shape(tp: Any) -> _Shape:
    pairs: list[tuple[Any, Any]] = []
    for value in typing.get_args(tp):
        json_value = value.value if isinstance(value, enum.Enum) else value
        if not _is_json_scalar(json_value):
            raise _Unsupported(f"Literal value {value!r} is not a JSON scalar")
        pairs.append((json_value, value))
    return _choices(pairs)


def _nullable_schema(schema: dict[str, Any]) -> dict[str, Any]:
    kind = schema.get("type")
    if isinstance(kind, str) and kind != "null" and "enum" not in schema:
        return {**schema, "type": [kind, "null"]}
    inner = {k: v for k, v in schema.items() if k != "description"}
    merged: dict[str, Any] = {"anyOf": [inner, {"type": "null"}]}
    if "description" in schema:
        merged["description"] = schema["description"]
    return merged


def _union_shape(tp: Any, seen: tuple[type, ...]) -> _Shape:
    args = typing.get_args(tp)
    has_none = type(None) in args
    shapes = [_compile(arg, seen) for arg in args if arg is not type(None)]
    if len(shapes) == 1:
        only = shapes[0]

        def convert_optional(value: Any, path: str) -> Any:
            return None if value is None else only.convert(value, path)

        return _Shape(_nullable_schema(only.schema), convert_optional, nullable=True)

    def convert_union(value: Any, path: str) -> Any:
        if value is None and has_none:
            return None
        errors = []
        for shape in shapes:
            try:
                return shape.convert(value, path)
            except _BadValue as error:
                errors.append(str(error))
        raise _BadValue(" / ".join(errors))

    branches = [shape.schema for shape in shapes] + ([{"type": "null"}] if has_none else [])
    return _Shape({"anyOf": branches}, convert_union, nullable=has_none)


def _sequence_shape(origin: Any, args: tuple[Any, ...], seen: tuple[type, ...]) -> _Shape:
    items = _compile(args[0], seen) if args else _PRIMITIVES[Any]
    unique = origin in (set, frozenset, cabc.Set, cabc.MutableSet)
    build: Callable[[Iterable[Any]], Any] = (
        frozenset if origin in (frozenset, cabc.Set) else set if unique else list
    )

    def convert(value: Any, path: str) -> Any:
        if not isinstance(value, (list, tuple, set, frozenset)):
            raise _bad(path, "an array", value)
        try:
            return build(items.convert(item, f"{path}[{i}]") for i, item in enumerate(value))
        except TypeError as error:
            raise _BadValue(f"argument {path!r}: {error}") from None

    schema: dict[str, Any] = {"type": "array"}
    if args:
        schema["items"] = items.schema
    if unique:
        schema["uniqueItems"] = True
    return _Shape(schema, convert)


def _tuple_shape(args: tuple[Any, ...], seen: tuple[type, ...]) -> _Shape:
    if not args or (len(args) == 2 and args[1] is Ellipsis):
        variable = _sequence_shape(list, args[:1], seen)

        def convert_variable(value: Any, path: str) -> tuple[Any, ...]:
            return tuple(variable.convert(value, path))

        return _Shape(variable.schema, convert_variable)
    fixed = [] if args == ((),) else [_compile(arg, seen) for arg in args]

    def convert_fixed(value: Any, path: str) -> tuple[Any, ...]:
        if not isinstance(value, (list, tuple)) or len(value) != len(fixed):
            raise _bad(path, f"an array of {len(fixed)} items", value)
        return tuple(s.convert(v, f"{path}[{i}]") for i, (s, v) in enumerate(zip(fixed, value)))

    schema: dict[str, Any] = {"type": "array", "minItems": len(fixed), "maxItems": len(fixed)}
    if fixed:
        schema["prefixItems"] = [shape.schema for shape in fixed]
    return _Shape(schema, convert_fixed)


def _mapping_shape(args: tuple[Any, ...], seen: tuple[type, ...]) -> _Shape:
    if args and args[0] is not str:
        raise _Unsupported(f"dict keys must be str, not {args[0]!r}")
    values = _compile(args[1], seen) if args else _PRIMITIVES[Any]

    def convert(value: Any, path: str) -> dict[str, Any]:
        if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
            raise _bad(path, "an object", value)
        return {k: values.convert(v, f"{path}.{k}") for k, v in value.items()}

    schema: dict[str, Any] = {"type": "object"}
    if values.schema:
        schema["additionalProperties"] = values.schema
    return _Shape(schema, convert)


@attrs.frozen
class _Field:
    """One property of an object parameter (or one parameter of the tool itself)."""

    name: str
    shape: _Shape
    required: bool
    default: Any = _MISSING


def _default_schema(default: Any) -> tuple[bool, Any]:
    value = default.value if isinstance(default, enum.Enum) else default
    return (_is_json_scalar(value), value)


def _object_schema(fields: list[_Field], description: str = "") -> dict[str, Any]:
    properties: dict[str, Any] = {}
    for field in fields:
        schema = dict(field.shape.schema)
        if field.default is not _MISSING:
            shown, value = _default_schema(field.default)
            if shown:
                schema["default"] = value
        properties[field.name] = schema
    result: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "required": [field.name for field in fields if field.required],
        "additionalProperties": False,
    }
    if description:
        result["description"] = description
    return result


def _check_keys(fields: Mapping[str, _Field], value: Mapping[str, Any], path: str | None) -> None:
    prefix, noun = (f"argument {path!r}: ", "field") if path else ("", "argument")
    unknown = [key for key in value if key not in fields]
    if unknown:
        names = ", ".join(repr(key) for key in unknown)
        known = ", ".join(fields) or "none"
        plural = "s" if len(unknown) > 1 else ""
        raise _BadValue(f"{prefix}unknown {noun}{plural} {names} (expected: {known})")
    missing = [f.name for f in fields.values() if f.required and f.name not in value]
    if missing:
        names = ", ".join(repr(name) for name in missing)
        plural = "s" if len(missing) > 1 else ""
        raise _BadValue(f"{prefix}missing required {noun}{plural} {names}")


def _convert_fields(
    fields: Mapping[str, _Field], value: Mapping[str, Any], path: str | None
) -> dict[str, Any]:
    """Check keys and convert each value; ``None`` for a defaulted, non-null field is dropped."""
    _check_keys(fields, value, path)
    converted: dict[str, Any] = {}
    for key, item in value.items():
        field = fields[key]
        if item is None and not field.required and not field.shape.nullable:
            continue
        converted[key] = field.shape.convert(item, f"{path}.{key}" if path else key)
    return converted


def _class_hints(cls: type) -> dict[str, Any]:
    try:
        return typing.get_type_hints(cls, include_extras=True)
    except (NameError, TypeError) as error:
        raise _Unsupported(f"cannot resolve the annotations of {cls.__name__}: {error}") from None


def _class_shape(
    cls: type, fields: list[_Field], build: Callable[[dict[str, Any]], Any], description: str
) -> _Shape:
    by_name = {field.name: field for field in fields}
    is_typed_dict = _is_typed_dict(cls)

    def convert(value: Any, path: str) -> Any:
        if not is_typed_dict and isinstance(value, cls):
            return value
        if not isinstance(value, Mapping):
            raise _bad(path, "an object", value)
        kwargs = _convert_fields(by_name, value, path)
        try:
            return build(kwargs)
        except (TypeError, ValueError) as error:
            raise _BadValue(f"argument {path!r}: {error}") from None

    return _Shape(_object_schema(fields, description), convert)


def _class_field(name: str, hint: Any, default: Any, doc: str, seen: tuple[type, ...]) -> _Field:
    shape = _compile(hint, seen)
    if "description" not in shape.schema:
        shape = shape.described(doc)
    return _Field(name, shape, required=default is _MISSING, default=default)


def _dataclass_shape(cls: type, seen: tuple[type, ...]) -> _Shape:
    hints = _class_hints(cls)
    description, docs = _class_doc(cls)
    fields = []
    for field in dataclasses.fields(cls):
        if not field.init:
            continue
        has_default = (
            field.default is not dataclasses.MISSING
            or field.default_factory is not dataclasses.MISSING
        )
        default = field.default if field.default is not dataclasses.MISSING else _MISSING
        item = _class_field(field.name, hints[field.name], default, docs.get(field.name, ""), seen)
        fields.append(attrs.evolve(item, required=not has_default))
    return _class_shape(cls, fields, lambda kwargs: cls(**kwargs), description)


_ATTRS_FACTORY: type = type(attrs.Factory(list))


def _attrs_shape(cls: type, seen: tuple[type, ...]) -> _Shape:
    hints = _class_hints(cls)
    description, docs = _class_doc(cls)
    fields = []
    for field in attrs.fields(cls):
        if not field.init:
            continue
        if field.name not in hints:
            raise _Unsupported(f"attrs field {cls.__name__}.{field.name} has no type annotation")
        has_default = field.default is not attrs.NOTHING
        plain = has_default and not isinstance(field.default, _ATTRS_FACTORY)
        default = field.default if plain else _MISSING
        doc = docs.get(field.name, docs.get(field.alias, ""))
        item = _class_field(field.alias, hints[field.name], default, doc, seen)
        fields.append(attrs.evolve(item, required=not has_default))
    return _class_shape(cls, fields, lambda kwargs: cls(**kwargs), description)


_TYPED_DICT_WRAPPERS = frozenset({"Required", "NotRequired", "ReadOnly"})


def _strip_required(hint: Any, required: bool) -> tuple[Any, bool]:
    """The hint without Required / NotRequired / ReadOnly, and whether the key is required.

    Checked here too because ``__required_keys__`` misses string annotations on some Pythons.
    Forms are matched by name so that typing_extensions' are recognised as well.
    """
    while (form := getattr(typing.get_origin(hint), "_name", None)) in _TYPED_DICT_WRAPPERS:
        required = {"Required": True, "NotRequired": False}.get(form, required)
        hint = typing.get_args(hint)[0]
    return hint, required


def _is_typed_dict(tp: Any) -> bool:
    return (
        isinstance(tp, type)
        and issubclass(tp, dict)
        and hasattr(tp, "__required_keys__")
        and hasattr(tp, "__total__")
    )


def _typed_dict_shape(cls: type, seen: tuple[type, ...]) -> _Shape:
    hints = _class_hints(cls)
    required: frozenset[str] = getattr(cls, "__required_keys__", frozenset())
    description, docs = _class_doc(cls)
    fields = []
    for name, hint in hints.items():
        bare, is_required = _strip_required(hint, name in required)
        item = _class_field(name, bare, _MISSING, docs.get(name, ""), seen)
        fields.append(attrs.evolve(item, required=is_required))
    return _class_shape(cls, fields, dict, description)


def _annotation_description(metadata: Iterable[Any]) -> str:
    for item in metadata:
        if isinstance(item, str):
            return item
        documentation = getattr(item, "documentation", None)
        if isinstance(documentation, str):
            return documentation
    return ""


def _compile(tp: Any, seen: tuple[type, ...]) -> _Shape:
    """The shape of an annotation; raises :class:`_Unsupported` for what JSON cannot carry."""
    if typing.get_origin(tp) is typing.Annotated:
        inner = _compile(typing.get_args(tp)[0], seen)
        return inner.described(_annotation_description(tp.__metadata__))
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return _enum_shape(tp)
    try:
        primitive = _PRIMITIVES.get(tp)
    except TypeError:
        primitive = None
    if primitive is not None:
        return primitive
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is Literal:
        return _literal_shape(tp)
    if origin is Union or origin is types.UnionType:
        return _union_shape(tp, seen)
    return _compile_container(tp, origin or tp, args, seen)


_SEQUENCES = (list, set, frozenset, cabc.Sequence, cabc.MutableSequence, cabc.Set, cabc.MutableSet)
_MAPPINGS = (dict, cabc.Mapping, cabc.MutableMapping)


def _compile_container(
    tp: Any, origin: Any, args: tuple[Any, ...], seen: tuple[type, ...]
) -> _Shape:
    if origin in _SEQUENCES:
        return _sequence_shape(origin, args, seen)
    if origin is tuple:
        return _tuple_shape(args, seen)
    if origin in _MAPPINGS:
        return _mapping_shape(args, seen)
    if not isinstance(tp, type):
        raise _Unsupported(f"{tp!r} is not a supported annotation")
    if tp in seen:
        raise _Unsupported(f"{tp.__name__} refers to itself; recursive types are not supported")
    if _is_typed_dict(tp):
        return _typed_dict_shape(tp, (*seen, tp))
    if dataclasses.is_dataclass(tp):
        return _dataclass_shape(tp, (*seen, tp))
    if attrs.has(tp):
        return _attrs_shape(tp, (*seen, tp))
    raise _Unsupported(
        f"{tp.__name__} is not a supported annotation (use str, int, float, bool, an Enum, "
        "Literal, Optional, list, dict, a TypedDict, a dataclass or an attrs class)"
    )


# --------------------------------------------------------------------------- tools


def _hint_source(function: Callable[..., Any]) -> Any:
    while isinstance(function, functools.partial):
        function = function.func
    if inspect.isfunction(function) or inspect.ismethod(function):
        return function
    return type(function).__call__


def _stub() -> None:
    """Carries parameter annotations when the return annotation cannot be resolved."""


def _parameter_hints(function: Callable[..., Any]) -> dict[str, Any]:
    """The resolved annotations of the parameters; an unresolvable return type is ignored."""
    source = _hint_source(function)
    try:
        return typing.get_type_hints(source, include_extras=True)
    except NameError:
        annotations = getattr(source, "__annotations__", None) or {}
        stub = types.FunctionType(_stub.__code__, getattr(source, "__globals__", {}))
        stub.__annotations__ = {k: v for k, v in annotations.items() if k != "return"}
        return typing.get_type_hints(stub, include_extras=True)


def _raw_doc(function: Callable[..., Any]) -> str | None:
    """The uncleaned docstring (cleaning twice would flatten a first-line section)."""
    while isinstance(function, functools.partial):
        function = function.func
    if inspect.isfunction(function) or inspect.ismethod(function):
        return function.__doc__
    return type(function).__doc__ or type(function).__call__.__doc__


def _is_async(function: Callable[..., Any]) -> bool:
    while isinstance(function, functools.partial):
        function = function.func
    if inspect.isfunction(function) or inspect.ismethod(function):
        return inspect.iscoroutinefunction(function)
    return inspect.iscoroutinefunction(type(function).__call__)


def _function_fields(
    function: Callable[..., Any], label: str, docs: Mapping[str, str]
) -> tuple[list[_Field], list[str]]:
    """The tool's parameters as object fields, and the names that are positional-only."""
    try:
        signature = inspect.signature(function)
        hints = _parameter_hints(function)
    except (NameError, TypeError, ValueError) as error:
        raise TypeError(
            f"tool {label}: cannot read its signature and annotations: {error}"
        ) from None
    fields: list[_Field] = []
    positional: list[str] = []
    for param in signature.parameters.values():
        where = f"tool {label}, parameter {param.name!r}"
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"{where}: *args and **kwargs cannot be described to a model")
        if param.name not in hints:
            raise TypeError(
                f"{where} has no type annotation; annotate it (e.g. `{param.name}: str`)"
            )
        try:
            shape = _compile(hints[param.name], ())
        except _Unsupported as error:
            raise TypeError(f"{where}: unsupported annotation: {error}") from None
        if "description" not in shape.schema:
            shape = shape.described(docs.get(param.name, ""))
        default = _MISSING if param.default is param.empty else param.default
        fields.append(_Field(param.name, shape, required=default is _MISSING, default=default))
        if param.kind is param.POSITIONAL_ONLY:
            positional.append(param.name)
    return fields, positional


def _check_name(name: str) -> str:
    if not _NAME_PATTERN.match(name):
        raise ValueError(
            f"tool name {name!r} is not accepted by providers: use 1 to 64 letters, digits, "
            "'_' or '-'"
        )
    return name


class Tool(Generic[P, R]):
    """A function a model may call, with its name, description and JSON schema.

    Calling the tool calls the function (an async tool returns its coroutine). Build one with
    :func:`tool` or :meth:`from_function`; the analysis happens once, at construction, and
    raises ``TypeError`` for a parameter that cannot be described as JSON schema.
    """

    __slots__ = (
        "__wrapped__",
        "_description",
        "_fields",
        "_function",
        "_is_async",
        "_name",
        "_parameters",
        "_positional",
        "_return_direct",
        "_spec",
    )

    def __init__(
        self,
        function: Callable[P, R],
        *,
        name: str | None = None,
        description: str | None = None,
        return_direct: bool = False,
    ) -> None:
        if not callable(function):
            raise TypeError(f"a tool wraps a function, not {type(function).__name__}")
        label = getattr(function, "__qualname__", None) or repr(function)
        name = _check_name(name if name is not None else getattr(function, "__name__", ""))
        doc_description, docs = _parse_docstring(_raw_doc(function))
        fields, positional = _function_fields(function, label, docs)
        self.__wrapped__ = function
        self._function = function
        self._name = name
        self._description = doc_description if description is None else description
        self._return_direct = bool(return_direct)
        self._is_async = _is_async(function)
        self._fields = {field.name: field for field in fields}
        self._positional = positional
        self._parameters = _object_schema(fields)
        self._spec = ToolSpec(
            name=name, description=self._description, parameters=copy.deepcopy(self._parameters)
        )

    @classmethod
    def from_function(
        cls,
        function: Callable[P, R],
        *,
        name: str | None = None,
        description: str | None = None,
        return_direct: bool = False,
    ) -> Tool[P, R]:
        """Build a tool from ``function``; ``name`` and ``description`` override the defaults.

        The name defaults to the function's ``__name__``, the description to its docstring's
        text before the first section (Args, Returns, ...).
        """
        return cls(function, name=name, description=description, return_direct=return_direct)

    @property
    def function(self) -> Callable[P, R]:
        """The wrapped function."""
        return self._function

    @property
    def name(self) -> str:
        """The name the model calls the tool by."""
        return self._name

    @property
    def description(self) -> str:
        """What the tool does, as told to the model (``""`` when the function has no doc)."""
        return self._description

    @property
    def parameters(self) -> dict[str, Any]:
        """The JSON schema of the arguments (a fresh copy: changing it changes nothing)."""
        return copy.deepcopy(self._parameters)

    @property
    def return_direct(self) -> bool:
        """Whether the tool's result ends the response instead of going back to the model."""
        return self._return_direct

    @property
    def is_async(self) -> bool:
        """Whether the function is a coroutine function (its calls must be awaited)."""
        return self._is_async

    @property
    def spec(self) -> ToolSpec:
        """The tool as sent in a request: name, description and parameter schema."""
        return self._spec

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        """Call the function directly, exactly as without the decorator."""
        return self._function(*args, **kwargs)

    def __repr__(self) -> str:
        return (
            f"Tool(name={self._name!r}, is_async={self._is_async}, "
            f"return_direct={self._return_direct})"
        )

    def invoke(self, arguments: Mapping[str, Any] | None = None) -> Any:
        """Call the function with the arguments a model sent (a JSON object).

        The arguments are checked against the schema and converted to the annotated types
        (enum members, dataclass / attrs / TypedDict values, tuples, sets; an integer for a
        float). Unknown, missing or ill-typed arguments raise :class:`ToolCallError`; what
        the function itself raises propagates unchanged. An async tool returns its awaitable.
        """
        args, kwargs = self._bind(arguments)
        return self._function(*args, **kwargs)

    async def ainvoke(self, arguments: Mapping[str, Any] | None = None) -> Any:
        """Like :meth:`invoke`, awaiting the result of an async tool."""
        result = self.invoke(arguments)
        if inspect.isawaitable(result):
            result = await result
        return result

    @staticmethod
    def format_result(value: Any) -> str:
        """The text sent back to the model for a result: see :func:`format_result`."""
        return format_result(value)

    def _bind(self, arguments: Mapping[str, Any] | None) -> tuple[list[Any], dict[str, Any]]:
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, Mapping):
            raise ToolCallError(
                f"tool {self._name!r}: the arguments must be a JSON object, "
                f"got {_json_type(arguments)}",
                tool_name=self._name,
            )
        try:
            kwargs = _convert_fields(self._fields, arguments, None)
        except _BadValue as error:
            raise ToolCallError(f"tool {self._name!r}: {error}", tool_name=self._name) from None
        return self._split_positional(kwargs), kwargs

    def _split_positional(self, kwargs: dict[str, Any]) -> list[Any]:
        """Move positional-only values out of ``kwargs``, filling skipped defaults."""
        given = [i for i, name in enumerate(self._positional) if name in kwargs]
        if not given:
            return []
        args = []
        for name in self._positional[: given[-1] + 1]:
            args.append(kwargs.pop(name) if name in kwargs else self._fields[name].default)
        return args


@overload
def tool(function: Callable[P, R], /) -> Tool[P, R]: ...


@overload
def tool(
    *, name: str | None = None, description: str | None = None, return_direct: bool = False
) -> Callable[[Callable[P, R]], Tool[P, R]]: ...


def tool(
    function: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    return_direct: bool = False,
) -> Any:
    """Turn a typed, documented function (sync or async) into a :class:`Tool`.

    Use it as ``@tool``, ``@tool()`` or ``@tool(name=..., description=...,
    return_direct=True)``. Every parameter needs a type annotation; one without a default is
    required. Descriptions come from the docstring (Google ``Args:``, reST ``:param x:`` or
    NumPy ``Parameters`` sections) and from ``Annotated[T, "description"]``.
    """

    def build(target: Callable[..., Any]) -> Tool[..., Any]:
        if isinstance(target, Tool):
            target = target.function
        return Tool(target, name=name, description=description, return_direct=return_direct)

    if function is None:
        return build
    if not callable(function):
        raise TypeError(
            f"@tool takes a function, not {type(function).__name__}; "
            "pass options by keyword: @tool(name=...)"
        )
    return build(function)


# --------------------------------------------------------------------------- results


def _json_default(value: Any) -> Any:
    if attrs.has(type(value)):
        return attrs.asdict(value, recurse=False)
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):
        try:
            return dump(mode="json")
        except TypeError:
            return dump()
    if isinstance(value, (set, frozenset)):
        return list(value)
    if isinstance(value, Mapping):
        return dict(value)
    return str(value)


def _is_structured(value: Any) -> bool:
    if isinstance(value, type):
        return False
    return (
        isinstance(value, (Mapping, list, tuple, set, frozenset))
        or attrs.has(type(value))
        or dataclasses.is_dataclass(value)
        or callable(getattr(value, "model_dump", None))
    )


def format_result(value: Any) -> str:
    """The text of a tool's result for the model.

    A ``str`` as is; ``None`` as ``""``; dicts, lists, tuples, sets, dataclasses, attrs and
    pydantic-style (``model_dump``) values as JSON; anything else as ``str(value)``.
    """
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if not _is_structured(value):
        return str(value)
    try:
        return orjson.dumps(value, default=_json_default, option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:
        return str(value)


# --------------------------------------------------------------------------- tool sets


class ToolSet(Mapping[str, Tool[..., Any]]):
    """Tools by name, built from tools, plain functions (wrapped with :func:`tool`) or tool sets.

    Two tools with one name raise ``ValueError``. :meth:`get` of an unknown name raises
    :class:`ToolCallError` listing the known names.
    """

    __slots__ = ("_tools",)

    def __init__(
        self, tools: ToolSet | Iterable[Tool[..., Any] | Callable[..., Any] | ToolSet] = ()
    ) -> None:
        self._tools: dict[str, Tool[..., Any]] = {}
        for item in tools.values() if isinstance(tools, ToolSet) else tools:
            for one in item.values() if isinstance(item, ToolSet) else (item,):
                self._add(one if isinstance(one, Tool) else tool(one))

    def _add(self, item: Tool[..., Any]) -> None:
        if item.name in self._tools:
            raise ValueError(f"duplicate tool name {item.name!r}")
        self._tools[item.name] = item

    def __getitem__(self, name: str) -> Tool[..., Any]:
        return self._tools[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._tools)

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __repr__(self) -> str:
        return f"ToolSet({', '.join(self._tools)})"

    def get(self, name: str, default: Any = _MISSING) -> Any:
        """The tool called ``name``; unknown → ``default`` if given, else :class:`ToolCallError`."""
        found = self._tools.get(name)
        if found is not None:
            return found
        if default is not _MISSING:
            return default
        known = ", ".join(self._tools) or "(none)"
        raise ToolCallError(f"unknown tool {name!r}; known: {known}", tool_name=name)

    def specs(self) -> tuple[ToolSpec, ...]:
        """The specs of every tool, in the order they were given."""
        return tuple(item.spec for item in self._tools.values())

    def invoke(self, name: str, arguments: Mapping[str, Any] | None = None) -> Any:
        """Look up ``name`` and :meth:`Tool.invoke` it."""
        return self.get(name).invoke(arguments)

    async def ainvoke(self, name: str, arguments: Mapping[str, Any] | None = None) -> Any:
        """Look up ``name`` and :meth:`Tool.ainvoke` it."""
        return await self.get(name).ainvoke(arguments)
