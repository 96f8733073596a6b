"""Pydantic types as tool parameters: their JSON schema and validation come from pydantic.

A pydantic model or dataclass, ``Annotated[X, Field(...)]`` or an ``annotated_types``
constraint, or any type the hand-written compiler does not know (``datetime.date``, ``UUID``,
``EmailStr``...) when pydantic is installed, becomes a :class:`~.shape.Shape` built on a
``pydantic.TypeAdapter``: the schema is the adapter's (``$ref`` resolved in place, since not
every provider reads ``$defs``), and a value is converted by ``validate_python``, whose
errors (a validator's own message included) become the message the model reads.

Pydantic is imported only when such a type is met.
"""

from __future__ import annotations

import importlib.util
import typing
from collections.abc import Mapping
from typing import Any

from ..event_model.extras import install_hint
from .shape import BadValue, Shape, Unsupported, inline_refs

__all__ = ["is_field_info", "pydantic_installed", "pydantic_shape", "wants_pydantic"]

_PYDANTIC_MODULES = ("pydantic", "annotated_types")


def _from_pydantic(value: object) -> bool:
    module = getattr(type(value), "__module__", "") or ""
    return module.split(".", 1)[0] in _PYDANTIC_MODULES


def wants_pydantic(tp: Any) -> bool:
    """Whether ``tp`` is for pydantic to describe and validate (without importing pydantic)."""
    if typing.get_origin(tp) is typing.Annotated:
        return any(_from_pydantic(item) for item in tp.__metadata__)
    if not isinstance(tp, type):
        return False
    module = getattr(tp, "__module__", "") or ""
    return hasattr(tp, "__pydantic_validator__") or module.split(".", 1)[0] == "pydantic"


def pydantic_installed() -> bool:
    """Whether pydantic can be imported (without importing it)."""
    return importlib.util.find_spec("pydantic") is not None


def is_field_info(value: object) -> bool:
    """Whether ``value`` is a ``pydantic.Field(...)`` (used as a parameter's default)."""
    return type(value).__name__ == "FieldInfo" and _from_pydantic(value)


def pydantic_shape(tp: Any) -> Shape:
    """The shape of ``tp`` as pydantic describes and validates it.

    Raises :class:`~.shape.Unsupported` when pydantic is missing, cannot build a
    schema for ``tp``, or the type refers to itself.
    """
    try:
        import pydantic
    except ImportError:
        name = getattr(tp, "__name__", None) or repr(tp)
        raise Unsupported(
            f"{name} needs pydantic to be described to a model: {install_hint('tools')}"
        ) from None
    try:
        adapter: Any = pydantic.TypeAdapter(tp)
        schema = inline_refs(adapter.json_schema())
    except pydantic.PydanticUserError as error:
        raise Unsupported(str(error).split("\n", 1)[0]) from None

    def convert(value: Any, path: str) -> Any:
        try:
            return adapter.validate_python(value)
        except pydantic.ValidationError as error:
            raise BadValue(_message(error, path)) from None

    return Shape(schema, convert, nullable=_accepts_null(schema))


def _message(error: Any, path: str) -> str:
    """Each of pydantic's errors as ``argument 'path.to.field': message``."""
    parts = []
    for item in error.errors(include_url=False, include_context=False, include_input=False):
        where = ".".join([path, *(str(part) for part in item["loc"])])
        parts.append(f"argument {where!r}: {item['msg']}")
    return "; ".join(parts)


def _accepts_null(schema: Mapping[str, Any]) -> bool:
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind) or not schema:
        return True
    return any(_accepts_null(option) for option in schema.get("anyOf") or ())
