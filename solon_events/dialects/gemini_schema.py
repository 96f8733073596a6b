"""Gemini's ``Schema`` (an OpenAPI 3.0 subset: ``"type": "OBJECT"``, ``nullable``) and JSON
schema, each written as the other (sans-I/O).

:func:`gemini_schema` writes a JSON schema as ``generationConfig.responseSchema`` takes it
(for the models before ``responseJsonSchema``): references inlined, ``type`` in capitals,
a nullable type as ``nullable: true``, ``propertyOrdering`` in the properties' order;
what the subset lacks is left out (``additionalProperties``, ``const`` other than a
string, ``pattern`` is kept). :func:`json_schema_of` reads one back, as the google-genai
SDK sends it for ``response_schema=Model``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .output_schema import inline_refs

__all__ = ["gemini_schema", "json_schema_of"]

_KEPT = (
    *("description", "title", "format", "pattern", "minimum", "maximum", "minItems"),
    *("maxItems", "minLength", "maxLength", "minProperties", "maxProperties", "default"),
)


def gemini_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` (JSON schema) as Gemini's ``Schema``; a type that refers to itself cannot
    be written so (a :class:`~.output_schema.SchemaError`)."""
    written: dict[str, Any] = _to_gemini(inline_refs(schema))
    return written


def _to_gemini(node: Any) -> Any:
    if not isinstance(node, Mapping):
        return {}
    out: dict[str, Any] = {key: node[key] for key in _KEPT if key in node}
    branches = [b for b in (node.get("anyOf") or node.get("oneOf") or ()) if isinstance(b, Mapping)]
    kind = node.get("type")
    kinds = [kind] if isinstance(kind, str) else [k for k in kind or () if isinstance(k, str)]
    if any(_is_null(b) for b in branches) or "null" in kinds:
        out["nullable"] = True
    branches = [b for b in branches if not _is_null(b)]
    kinds = [k for k in kinds if k != "null"]
    if len(branches) == 1 and not kinds:
        merged = _to_gemini(branches[0])
        return {**merged, **out}
    if branches:
        out["anyOf"] = [_to_gemini(b) for b in branches]
    if kinds:
        out["type"] = kinds[0].upper()
    elif "properties" in node:
        out["type"] = "OBJECT"
    enum = node.get("enum")
    if "const" in node:
        enum = [node["const"]]
    if isinstance(enum, list) and enum and all(isinstance(v, str) for v in enum):
        out["enum"] = list(enum)
        out.setdefault("type", "STRING")
    properties = node.get("properties")
    if isinstance(properties, Mapping):
        out["properties"] = {name: _to_gemini(item) for name, item in properties.items()}
        out["propertyOrdering"] = list(properties)
        required = [name for name in node.get("required") or () if name in properties]
        if required:
            out["required"] = required
    items = node.get("items")
    if isinstance(items, Mapping):
        out["items"] = _to_gemini(items)
    return out


def _is_null(node: Mapping[str, Any]) -> bool:
    return node.get("type") == "null" or node.get("type") == "NULL"


def json_schema_of(schema: Mapping[str, Any]) -> dict[str, Any]:
    """Gemini's ``Schema`` (an OpenAPI 3.0 subset) read as a JSON schema: type names in lower
    case, ``nullable: true`` as a ``"null"`` type (a branch of its own beside an ``enum``),
    ``propertyOrdering`` left out; the same for nested schemas."""
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "type" and isinstance(value, str):
            out["type"] = value.lower()
        elif key in ("nullable", "propertyOrdering"):
            continue
        elif key in ("properties", "$defs", "definitions") and isinstance(value, Mapping):
            out[key] = {name: _nested(item) for name, item in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, Mapping):
            out[key] = json_schema_of(value)
        elif key in ("anyOf", "oneOf", "allOf", "prefixItems") and isinstance(value, list):
            out[key] = [_nested(item) for item in value]
        else:
            out[key] = value
    if schema.get("nullable") is True:
        if "enum" in out:
            return {"anyOf": [out, {"type": "null"}]}
        if isinstance(out.get("type"), str):
            out["type"] = [out["type"], "null"]
    return out


def _nested(value: Any) -> Any:
    return json_schema_of(value) if isinstance(value, Mapping) else value
