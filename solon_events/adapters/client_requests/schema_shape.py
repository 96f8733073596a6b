"""The shape of a client tool's JSON schema, checked before the gateway translates it.

A tool's parameters are written again in each upstream's own schema dialect, by walking
the keywords that hold schemas (``properties``, ``items``, ``anyOf``...). A keyword of the
wrong shape (``"properties": 1``, ``"required": "a"``) is a client's error the providers
answer with HTTP 400 ("invalid schema"); some would not notice, and a translation would
drop it silently. The gateway refuses it at once, naming where it is, whatever the
upstream: :func:`check_schema_shape`. Only the shapes of these keywords are checked (the
JSON Schema meta-schema's rules for them), not their values. Sans-I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..inputs import _kind

__all__ = ["check_schema_shape"]

_SCHEMA = frozenset(
    {
        *("additionalProperties", "additionalItems", "unevaluatedProperties"),
        *("unevaluatedItems", "propertyNames", "contains", "contentSchema"),
        *("not", "if", "then", "else"),
    }
)  # a keyword whose value is one schema
_SCHEMA_MAP = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
)  # an object whose every value is a schema
_SCHEMA_LIST = frozenset({"anyOf", "oneOf", "allOf", "prefixItems"})  # an array of schemas


def check_schema_shape(schema: Mapping[str, Any], where: str) -> None:
    """Raise ``ValueError`` naming the first keyword of ``schema`` (or of a schema nested
    in it) whose value has not the shape JSON Schema gives it: a subschema that is not an
    object or a boolean; ``properties``, ``$defs`` and the like not an object of schemas;
    ``anyOf``, ``oneOf``, ``allOf``, ``prefixItems`` not an array of schemas; ``items`` not
    a schema (or an array of schemas); ``type`` not a string or an array of strings;
    ``required`` not an array of strings; ``enum`` not an array. ``where`` names
    ``schema`` in the message. Nesting of any depth is walked without recursion."""
    pending: list[tuple[Any, str]] = [(schema, where)]
    while pending:
        node, at = pending.pop()
        if isinstance(node, bool):
            continue
        if not isinstance(node, Mapping):
            raise ValueError(f"{at} must be a schema (an object or a boolean), not {_kind(node)}")
        for key, value in node.items():
            here = f"{at}.{key}"
            if key in _SCHEMA:
                pending.append((value, here))
            elif key == "items" and isinstance(value, list):  # draft 7's tuple form
                pending.extend((item, f"{here}[{i}]") for i, item in enumerate(value))
            elif key == "items":
                pending.append((value, here))
            elif key in _SCHEMA_MAP:
                _must(isinstance(value, Mapping), here, "an object", value)
                pending.extend((item, f"{here}.{name}") for name, item in value.items())
            elif key in _SCHEMA_LIST:
                _must(isinstance(value, list), here, "an array", value)
                pending.extend((item, f"{here}[{i}]") for i, item in enumerate(value))
            elif key == "type":
                kinds = value if isinstance(value, list) else [value]
                _must(all(isinstance(k, str) for k in kinds), here, "a type name or names", value)
            elif key == "required":
                strings = isinstance(value, list) and all(isinstance(n, str) for n in value)
                _must(strings, here, "an array of property names", value)
            elif key == "enum":
                _must(isinstance(value, list), here, "an array", value)


def _must(holds: bool, where: str, what: str, value: Any) -> None:
    if not holds:
        raise ValueError(f"{where} must be {what}, not {_kind(value)}")
