"""JSON schema and argument conversion from Python type hints.

:func:`compile_annotation` turns an annotation into a :class:`Shape`: its JSON schema and the
function that checks a model's JSON value against it and converts it to the annotated type.
:func:`function_fields` reads a function's signature into the fields of the tool's argument
object. Pydantic types get their schema and validation from pydantic itself (see
:mod:`.pydantic_schema`, imported only when such a type appears).

Supported annotations: ``str``, ``int``, ``float``, ``bool``, ``None``, ``Any``, ``Enum``
subclasses, ``Literal``, ``Optional`` / ``X | None`` and other unions, ``list`` / ``Sequence``,
``tuple``, ``set`` / ``frozenset``, ``dict[str, X]`` / ``Mapping[str, X]``, ``TypedDict``,
dataclasses, attrs classes and pydantic models, nested freely. ``Annotated[X, "text"]`` adds
a description.
"""

from __future__ import annotations

import collections.abc as cabc
import dataclasses
import enum
import functools
import inspect
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal, Union

import attrs

from ..event_model.extras import install_hint
from .context import is_context_annotation
from .docstrings import class_doc
from .pydantic_schema import is_field_info, pydantic_installed, pydantic_shape, wants_pydantic
from .shape import BadValue, Shape, Unsupported, json_type

__all__ = [
    "MISSING",
    "FieldShape",
    "Signature",
    "compile_annotation",
    "convert_fields",
    "object_schema",
    "read_signature",
]

MISSING: Any = object()
"""A parameter or field without a default."""


def _bad(path: str, expected: str, value: object) -> BadValue:
    return BadValue(f"argument {path!r}: expected {expected}, got {json_type(value)}")


def _is_json_scalar(value: object) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def _type_of_values(values: list[Any]) -> str | list[str]:
    kinds: list[str] = []
    for value in values:
        kind = json_type(value)
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


_PRIMITIVES: dict[Any, Shape] = {
    str: Shape({"type": "string"}, _convert_str),
    int: Shape({"type": "integer"}, _convert_int),
    float: Shape({"type": "number"}, _convert_float),
    bool: Shape({"type": "boolean"}, _convert_bool),
    type(None): Shape({"type": "null"}, _convert_null, nullable=True),
    None: Shape({"type": "null"}, _convert_null, nullable=True),
    Any: Shape({}, _identity, nullable=True),
}


def _choices(pairs: list[tuple[Any, Any]]) -> Shape:
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
            raise BadValue(f"argument {path!r}: expected one of {allowed}, got {value!r}") from None

    schema = {"type": _type_of_values(values), "enum": values}
    return Shape(schema, convert, nullable=None in values)


def _enum_shape(tp: type[enum.Enum]) -> Shape:
    members = list(tp)
    if not members:
        raise Unsupported(f"enum {tp.__name__} has no members")
    if not all(_is_json_scalar(m.value) for m in members):
        raise Unsupported(f"enum {tp.__name__} has values that are not JSON scalars")
    return _choices([(m.value, m) for m in members])


def _literal_shape(tp: Any) -> Shape:
    pairs: list[tuple[Any, Any]] = []
    for value in typing.get_args(tp):
        json_value = value.value if isinstance(value, enum.Enum) else value
        if not _is_json_scalar(json_value):
            raise Unsupported(f"Literal value {value!r} is not a JSON scalar")
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


def _union_shape(tp: Any, seen: tuple[type, ...]) -> Shape:
    args = typing.get_args(tp)
    has_none = type(None) in args
    shapes = [compile_annotation(arg, seen) for arg in args if arg is not type(None)]
    if len(shapes) == 1:
        only = shapes[0]

        def convert_optional(value: Any, path: str) -> Any:
            return None if value is None else only.convert(value, path)

        return Shape(_nullable_schema(only.schema), convert_optional, nullable=True)

    def convert_union(value: Any, path: str) -> Any:
        if value is None and has_none:
            return None
        errors = []
        for shape in shapes:
            try:
                return shape.convert(value, path)
            except BadValue as error:
                errors.append(str(error))
        raise BadValue(" / ".join(errors))

    branches = [shape.schema for shape in shapes] + ([{"type": "null"}] if has_none else [])
    return Shape({"anyOf": branches}, convert_union, nullable=has_none)


def _sequence_shape(origin: Any, args: tuple[Any, ...], seen: tuple[type, ...]) -> Shape:
    items = compile_annotation(args[0], seen) if args else _PRIMITIVES[Any]
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
            raise BadValue(f"argument {path!r}: {error}") from None

    schema: dict[str, Any] = {"type": "array"}
    if args:
        schema["items"] = items.schema
    if unique:
        schema["uniqueItems"] = True
    return Shape(schema, convert)


def _tuple_shape(args: tuple[Any, ...], seen: tuple[type, ...]) -> Shape:
    if not args or (len(args) == 2 and args[1] is Ellipsis):
        variable = _sequence_shape(list, args[:1], seen)

        def convert_variable(value: Any, path: str) -> tuple[Any, ...]:
            return tuple(variable.convert(value, path))

        return Shape(variable.schema, convert_variable)
    fixed = [] if args == ((),) else [compile_annotation(arg, seen) for arg in args]

    def convert_fixed(value: Any, path: str) -> tuple[Any, ...]:
        if not isinstance(value, (list, tuple)) or len(value) != len(fixed):
            raise _bad(path, f"an array of {len(fixed)} items", value)
        return tuple(s.convert(v, f"{path}[{i}]") for i, (s, v) in enumerate(zip(fixed, value)))

    schema: dict[str, Any] = {"type": "array", "minItems": len(fixed), "maxItems": len(fixed)}
    if fixed:
        schema["prefixItems"] = [shape.schema for shape in fixed]
    return Shape(schema, convert_fixed)


def _mapping_shape(args: tuple[Any, ...], seen: tuple[type, ...]) -> Shape:
    if args and args[0] is not str:
        raise Unsupported(f"dict keys must be str, not {args[0]!r}")
    values = compile_annotation(args[1], seen) if args else _PRIMITIVES[Any]

    def convert(value: Any, path: str) -> dict[str, Any]:
        if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
            raise _bad(path, "an object", value)
        return {k: values.convert(v, f"{path}.{k}") for k, v in value.items()}

    schema: dict[str, Any] = {"type": "object"}
    if values.schema:
        schema["additionalProperties"] = values.schema
    return Shape(schema, convert)


@attrs.frozen
class FieldShape:
    """One property of an object parameter (or one parameter of the tool itself)."""

    name: str
    shape: Shape
    required: bool
    default: Any = MISSING


def _default_schema(default: Any) -> tuple[bool, Any]:
    value = default.value if isinstance(default, enum.Enum) else default
    return (_is_json_scalar(value), value)


def object_schema(fields: list[FieldShape], description: str = "") -> dict[str, Any]:
    properties: dict[str, Any] = {}
    for field in fields:
        schema = dict(field.shape.schema)
        if field.default is not MISSING:
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


def _check_keys(
    fields: Mapping[str, FieldShape], value: Mapping[str, Any], path: str | None
) -> None:
    prefix, noun = (f"argument {path!r}: ", "field") if path else ("", "argument")
    unknown = [key for key in value if key not in fields]
    if unknown:
        names = ", ".join(repr(key) for key in unknown)
        known = ", ".join(fields) or "none"
        plural = "s" if len(unknown) > 1 else ""
        raise BadValue(f"{prefix}unknown {noun}{plural} {names} (expected: {known})")
    missing = [f.name for f in fields.values() if f.required and f.name not in value]
    if missing:
        names = ", ".join(repr(name) for name in missing)
        plural = "s" if len(missing) > 1 else ""
        raise BadValue(f"{prefix}missing required {noun}{plural} {names}")


def convert_fields(
    fields: Mapping[str, FieldShape], value: Mapping[str, Any], path: str | None
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
        raise Unsupported(f"cannot resolve the annotations of {cls.__name__}: {error}") from None


def _class_shape(
    cls: type, fields: list[FieldShape], build: Callable[[dict[str, Any]], Any], description: str
) -> Shape:
    by_name = {field.name: field for field in fields}
    is_typed_dict = _is_typed_dict(cls)

    def convert(value: Any, path: str) -> Any:
        if not is_typed_dict and isinstance(value, cls):
            return value
        if not isinstance(value, Mapping):
            raise _bad(path, "an object", value)
        kwargs = convert_fields(by_name, value, path)
        try:
            return build(kwargs)
        except (TypeError, ValueError) as error:
            raise BadValue(f"argument {path!r}: {error}") from None

    return Shape(object_schema(fields, description), convert)


def _class_field(
    name: str, hint: Any, default: Any, doc: str, seen: tuple[type, ...]
) -> FieldShape:
    shape = compile_annotation(hint, seen)
    if "description" not in shape.schema:
        shape = shape.described(doc)
    return FieldShape(name, shape, required=default is MISSING, default=default)


def _fields_shape(
    cls: type, seen: tuple[type, ...], kind: str, fields: Iterable[tuple[str, str, Any, bool]]
) -> Shape:
    """The shape of the ``kind`` class ``cls`` from its init ``fields``: each one's attribute
    name, keyword, default (``MISSING`` for none or a factory) and whether it has one."""
    hints = _class_hints(cls)
    description, docs = class_doc(cls)
    shapes = []
    for name, keyword, default, has_default in fields:
        if name not in hints:
            raise Unsupported(f"{kind} field {cls.__name__}.{name} has no type annotation")
        doc = docs.get(name, docs.get(keyword, ""))
        item = _class_field(keyword, hints[name], default, doc, seen)
        shapes.append(attrs.evolve(item, required=not has_default))
    return _class_shape(cls, shapes, lambda kwargs: cls(**kwargs), description)


def _dataclass_shape(cls: type, seen: tuple[type, ...]) -> Shape:
    def described(field: dataclasses.Field[Any]) -> tuple[str, str, Any, bool]:
        given = field.default is not dataclasses.MISSING
        has_default = given or field.default_factory is not dataclasses.MISSING
        return field.name, field.name, field.default if given else MISSING, has_default

    fields = (described(field) for field in dataclasses.fields(cls) if field.init)
    return _fields_shape(cls, seen, "dataclass", fields)


_ATTRS_FACTORY: type = type(attrs.Factory(list))


def _attrs_shape(cls: type, seen: tuple[type, ...]) -> Shape:
    def described(field: attrs.Attribute[Any]) -> tuple[str, str, Any, bool]:
        has_default = field.default is not attrs.NOTHING
        plain = has_default and not isinstance(field.default, _ATTRS_FACTORY)
        keyword = field.alias or field.name  # attrs sets alias on every field (typed optional)
        return field.name, keyword, field.default if plain else MISSING, has_default

    fields = (described(field) for field in attrs.fields(cls) if field.init)
    return _fields_shape(cls, seen, "attrs", fields)


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


def _typed_dict_shape(cls: type, seen: tuple[type, ...]) -> Shape:
    hints = _class_hints(cls)
    required: frozenset[str] = getattr(cls, "__required_keys__", frozenset())
    description, docs = class_doc(cls)
    fields = []
    for name, hint in hints.items():
        bare, is_required = _strip_required(hint, name in required)
        item = _class_field(name, bare, MISSING, docs.get(name, ""), seen)
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


def compile_annotation(tp: Any, seen: tuple[type, ...]) -> Shape:
    """The shape of an annotation; raises :class:`Unsupported` for what JSON cannot carry."""
    if wants_pydantic(tp):
        return pydantic_shape(tp)
    if typing.get_origin(tp) is typing.Annotated:
        inner = compile_annotation(typing.get_args(tp)[0], seen)
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
) -> Shape:
    if origin in _SEQUENCES:
        return _sequence_shape(origin, args, seen)
    if origin is tuple:
        return _tuple_shape(args, seen)
    if origin in _MAPPINGS:
        return _mapping_shape(args, seen)
    if not isinstance(tp, type):
        raise Unsupported(f"{tp!r} is not a supported annotation")
    if tp in seen:
        raise Unsupported(f"{tp.__name__} refers to itself; recursive types are not supported")
    if _is_typed_dict(tp):
        return _typed_dict_shape(tp, (*seen, tp))
    if dataclasses.is_dataclass(tp):
        return _dataclass_shape(tp, (*seen, tp))
    if attrs.has(tp):
        return _attrs_shape(tp, (*seen, tp))
    hint = "" if pydantic_installed() else f"; pydantic is not installed: {install_hint('tools')}"
    raise Unsupported(
        f"{tp.__name__} is not a supported annotation (use str, int, float, bool, an Enum, "
        "Literal, Optional, list, dict, a TypedDict, a dataclass, an attrs class, a pydantic "
        f"model, or Annotated[T, pydantic.Field()] for any other type pydantic validates){hint}"
    )


# --------------------------------------------------------------------------- signatures


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


@attrs.frozen
class Signature:
    """A function's parameters as a tool sees them."""

    fields: list[FieldShape]
    """The parameters the model fills, as the fields of the argument object."""
    positional: list[str]
    """The names of positional-only parameters, in order."""
    context: str | None = None
    """The parameter that asks for the :class:`~.context.ToolContext`, if any."""
    defaults: dict[str, Callable[[], Any]] = attrs.field(factory=dict)
    """Defaults to fill in when not sent (parameters whose default is ``pydantic.Field``)."""


def read_signature(function: Callable[..., Any], label: str, docs: Mapping[str, str]) -> Signature:
    """The tool's view of ``function``; ``TypeError`` for what cannot be described to a model."""
    try:
        signature = inspect.signature(function)
        hints = _parameter_hints(function)
    except (NameError, TypeError, ValueError) as error:
        raise TypeError(
            f"tool {label}: cannot read its signature and annotations: {error}"
        ) from None
    result = Signature([], [])
    for param in signature.parameters.values():
        where = f"tool {label}, parameter {param.name!r}"
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"{where}: *args and **kwargs cannot be described to a model")
        if param.name not in hints:
            raise TypeError(
                f"{where} has no type annotation; annotate it (e.g. `{param.name}: str`)"
            )
        hint = hints[param.name]
        if is_context_annotation(hint):
            if param.kind is param.POSITIONAL_ONLY or result.context is not None:
                raise TypeError(f"{where}: a tool takes one ToolContext, by keyword")
            result = attrs.evolve(result, context=param.name)
            continue
        default = MISSING if param.default is param.empty else param.default
        required = default is MISSING
        if is_field_info(default):  # its default is shown by pydantic's schema, filled by us
            hint, fill, default = typing.Annotated[hint, default], _field_default(default), MISSING
            required = fill is MISSING
            if not required:
                result.defaults[param.name] = fill
        try:
            shape = compile_annotation(hint, ())
        except Unsupported as error:
            raise TypeError(f"{where}: unsupported annotation: {error}") from None
        if "description" not in shape.schema:
            shape = shape.described(docs.get(param.name, ""))
        result.fields.append(FieldShape(param.name, shape, required=required, default=default))
        if param.kind is param.POSITIONAL_ONLY:
            result.positional.append(param.name)
    return result


def _field_default(field_info: Any) -> Any:
    """A ``pydantic.Field``'s default as a function giving the value, or MISSING if required."""
    if field_info.is_required():
        return MISSING
    return functools.partial(field_info.get_default, call_default_factory=True)
