"""What a structured answer is asked as: a Python type or a JSON schema, its schema for the
provider and the check of the value that comes back.

:meth:`OutputType.of` takes what ``prompt(..., output=...)`` is given:

- a pydantic model (or any type pydantic describes: the ``tools`` extra): the schema and
  the validation are pydantic's (``TypeAdapter``);
- an attrs class, a dataclass, a TypedDict (or ``list[...]`` of them, and the other
  annotations tools take): the schema from the type hints (as a tool's parameters are
  described), the value checked against it with ``jsonschema`` and made an instance with
  ``cattrs`` (the ``structured`` extra);
- a JSON schema (a mapping): the value checked with ``jsonschema`` and kept as it is.

References are inlined where the type does not refer to itself (not every provider reads
``$defs``). :meth:`OutputType.check` raises :class:`OutputMismatch` naming the failed field
as a JSON path (``$.cities[0].name``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from ..dialects.output_schema import SchemaError, absent_nulls, inline_refs, plain_schema
from ..event_model.extras import require
from .pydantic_schema import wants_pydantic
from .schema import compile_annotation
from .shape import Unsupported

__all__ = ["OutputMismatch", "OutputType"]


class OutputMismatch(ValueError):
    """A value that does not fit the output type: ``path`` (a JSON path) and ``reason``."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{reason} at {path}")
        self.path = path
        self.reason = reason


_NAME = re.compile(r"[^a-zA-Z0-9_-]+")


@attrs.frozen
class OutputType:
    """A structured answer's type: its ``name`` and JSON ``schema`` for the provider, and
    :meth:`check`, which turns a JSON value into the answer (an instance of the type)."""

    name: str
    schema: Mapping[str, Any]
    _check: Callable[[Any], Any] = attrs.field(alias="check")
    given: Any = None
    """What it was made of (the type, or the schema)."""

    @classmethod
    def of(cls, given: Any, name: str | None = None) -> OutputType:
        """The output type of ``given`` (a type or a JSON schema); ``name`` replaces the one
        taken from it (the type's name, the schema's ``title``, else ``"output"``).
        Raises ``TypeError`` for what cannot be described, and ImportError (saying which
        extra to install) when the package that checks it is missing."""
        if isinstance(given, Mapping):
            made = _of_schema(given)
        elif wants_pydantic(given):
            made = _of_pydantic(given)
        else:
            made = _of_annotation(given)
        schema, check = made
        default = getattr(given, "__name__", None) or (
            schema.get("title") if isinstance(schema.get("title"), str) else None
        )
        return cls(_NAME.sub("_", name or default or "output")[:64], schema, check, given)

    def check(self, value: Any) -> Any:
        """``value`` (the answer's JSON value) as the answer: an instance of the type, or the
        value itself for a schema. A ``null`` where the schema has an optional property
        that does not take one reads as absent (what a strict schema's answer means by it).
        Raises :class:`OutputMismatch`."""
        return self._check(absent_nulls(value, self.schema))


def _inlined(schema: Mapping[str, Any]) -> dict[str, Any]:
    try:
        inlined: dict[str, Any] = inline_refs(schema)
        return inlined
    except SchemaError:  # a type that refers to itself keeps its $defs
        return plain_schema(schema)  # type: ignore[no-any-return]


def _jsonschema_check(schema: Mapping[str, Any]) -> Callable[[Any], Any]:
    jsonschema = require("jsonschema", feature="checking a structured answer", extra="structured")
    validator_class = jsonschema.validators.validator_for(schema)
    try:
        validator_class.check_schema(schema)
    except jsonschema.SchemaError as error:
        raise TypeError(f"output is not a valid JSON schema: {error.message}") from None
    validator = validator_class(schema)

    def check(value: Any) -> Any:
        error = jsonschema.exceptions.best_match(validator.iter_errors(value))
        if error is not None:
            raise OutputMismatch(error.json_path, error.message)
        return value

    return check


def _of_schema(schema: Mapping[str, Any]) -> tuple[Mapping[str, Any], Callable[[Any], Any]]:
    plain = plain_schema(schema)
    return plain, _jsonschema_check(plain)


def _of_pydantic(tp: Any) -> tuple[Mapping[str, Any], Callable[[Any], Any]]:
    pydantic = require("pydantic", feature="a pydantic output type", extra="tools")
    adapter: Any = pydantic.TypeAdapter(tp)
    try:
        schema = _inlined(adapter.json_schema())
    except pydantic.PydanticUserError as error:
        raise TypeError(str(error).split("\n", 1)[0]) from None

    def check(value: Any) -> Any:
        try:
            return adapter.validate_python(value)
        except pydantic.ValidationError as error:
            first = error.errors(include_url=False, include_context=False, include_input=False)[0]
            raise OutputMismatch(_json_path(first["loc"]), first["msg"]) from None

    return schema, check


def _of_annotation(tp: Any) -> tuple[Mapping[str, Any], Callable[[Any], Any]]:
    try:
        shape = compile_annotation(tp, ())
    except Unsupported as error:
        raise TypeError(f"{tp!r} cannot be an output type: {error}") from None
    schema = plain_schema(shape.schema)
    validate = _jsonschema_check(schema)
    cattrs = require("cattrs", feature="an output type that is a class", extra="structured")

    def check(value: Any) -> Any:
        validate(value)
        try:
            return cattrs.structure(value, tp)
        except Exception as error:  # cattrs reports a group of failures
            detail = "; ".join(cattrs.transform_error(error)) if _from_cattrs(error) else error
            raise OutputMismatch("$", f"cannot be made {_type_name(tp)}: {detail}") from error

    return schema, check


def _from_cattrs(error: Exception) -> bool:
    return type(error).__module__.startswith("cattrs")


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or repr(tp)


def _json_path(location: tuple[Any, ...]) -> str:
    """A pydantic error's ``loc`` as a JSON path."""
    path = "$"
    for part in location:
        if isinstance(part, int):
            path += f"[{part}]"
        elif isinstance(part, str) and part.isidentifier():
            path += f".{part}"
        else:
            path += f"[{str(part)!r}]"
    return path
