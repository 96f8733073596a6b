"""What the schema builders make: a :class:`Shape` per annotation, and their two errors."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from ..dialects.output_schema import inline_refs as schema_inline_refs

__all__ = ["BadValue", "Converter", "Shape", "Unsupported", "inline_refs", "json_type"]


class BadValue(Exception):
    """An argument value does not fit its annotation (turned into ToolCallError)."""


class Unsupported(TypeError):
    """An annotation cannot be described as JSON schema."""


Converter = Callable[[Any, str], Any]
"""Checks a JSON value found at a path and returns it as the annotated type."""


@attrs.frozen
class Shape:
    """The JSON schema of one annotation and the function that checks and converts a value."""

    schema: dict[str, Any]
    convert: Converter
    nullable: bool = False

    def described(self, description: str) -> Shape:
        """This shape with a description in its schema."""
        if not description:
            return self
        return attrs.evolve(self, schema={**self.schema, "description": description})


_JSON_TYPES: tuple[tuple[type | tuple[type, ...], str], ...] = (
    (bool, "boolean"),  # before int: a bool is an int
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    ((list, tuple), "array"),
    (Mapping, "object"),
)


def json_type(value: object) -> str:
    """The JSON type name of a value, for error messages."""
    if value is None:
        return "null"
    for kinds, name in _JSON_TYPES:
        if isinstance(value, kinds):
            return name
    return type(value).__name__


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with every ``$ref`` into its ``$defs`` replaced by the definition.

    Not every provider reads ``$defs`` (Gemini does not); a type that refers to itself
    cannot be written out so and raises :class:`Unsupported`.
    """
    resolved: dict[str, Any] = schema_inline_refs(schema, Unsupported)
    return resolved
