"""A structured answer's JSON schema as each provider takes it (sans-I/O).

:func:`strict_schema` writes a schema the way OpenAI's strict mode requires it (every
object closed with ``additionalProperties: false``, every property required, an optional
one made nullable instead, ``$ref`` with siblings inlined, keywords strict mode does not
know dropped) and says whether it could: :class:`StrictSchema`. ``closed_schema`` is the
same walk for Anthropic's (and Bedrock's Claude) structured outputs, which keep optional
properties and read fewer keywords. :func:`absent_nulls` reads an answer made under the
strict form back into the original's terms (a ``null`` where the original has an optional,
non-nullable property means the property is absent). :func:`inline_refs` writes a schema
without ``$defs`` for the providers that do not read them.

What cannot be made strict (the schema is then sent as it is, ``strict: false``): a root
that is not an object; an object open to properties it does not name
(``additionalProperties: true`` or a schema: ``dict[str, int]``), ``patternProperties``,
``propertyNames``, ``minProperties``/``maxProperties``; a tuple (``prefixItems``, or
``items`` as a list); ``allOf`` with more than one schema; a boolean schema. What is made
strict inexactly (:attr:`StrictSchema.exact` is False): an object that did not forbid
undeclared properties is closed to them; an optional property that already accepted
``null`` reads absent and ``null`` as one. Dropped keywords (``minLength``, ``uniqueItems``,
``not``...) only loosen the schema: the answer is checked against the original anyway.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

__all__ = [
    "SchemaError",
    "StrictSchema",
    "absent_nulls",
    "accepts_null",
    "closed_schema",
    "inline_refs",
    "plain_schema",
    "strict_schema",
]


class SchemaError(ValueError):
    """A schema that cannot be written as asked (a ``$ref`` to nothing, a type that refers
    to itself where references cannot be kept)."""


@attrs.frozen
class StrictSchema:
    """A schema made strict: the ``schema`` to send, whether it is ``strict`` (False: the
    original is sent as it is, not strict), whether the transform is ``exact`` (every
    instance of the original is an instance of ``schema`` once its absent optional
    properties are written as ``null``, and :func:`absent_nulls` gives it back), and
    ``notes``: what was changed or why it could not be made strict, each naming where."""

    schema: dict[str, Any]
    strict: bool
    exact: bool
    notes: tuple[str, ...] = ()


_STRUCTURE = frozenset(
    {"type", "properties", "required", "additionalProperties", "items", "anyOf", "oneOf",
     "allOf", "enum", "const", "$ref", "$defs", "definitions", "description", "title"}
)  # fmt: skip
_OPENAI_KEEPS = _STRUCTURE | {
    *("pattern", "format", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"),
    *("multipleOf", "minItems", "maxItems"),
}
_ANTHROPIC_KEEPS = _STRUCTURE | {"format", "default"}
_OPEN_OBJECT = ("patternProperties", "propertyNames", "minProperties", "maxProperties")
_TUPLE = ("prefixItems",)
_UNSTRICT = "cannot be strict"


def _path_key(path: str, key: str) -> str:
    return f"{path}.{key}" if key.isidentifier() else f"{path}[{key!r}]"


class _Walk:
    """One transform of one schema: the options, the root (for ``$ref``), what it noted."""

    def __init__(self, root: Mapping[str, Any], all_required: bool, keeps: frozenset[str]):
        self.root = root
        self.all_required = all_required
        self.keeps = keeps
        self.notes: list[str] = []
        self.strict = True
        self.exact = True

    def refuse(self, path: str, why: str) -> None:
        self.strict = False
        self.notes.append(f"{path}: {why} {_UNSTRICT}")

    def node(self, schema: Any, path: str) -> Any:
        if isinstance(schema, bool):
            self.refuse(path, f"a boolean schema ({str(schema).lower()})")
            return schema
        if not isinstance(schema, Mapping):
            raise SchemaError(f"{path}: a schema is an object, not {type(schema).__name__}")
        node = dict(schema)
        ref = node.get("$ref")
        if isinstance(ref, str) and len(node) > 1 and "$defs" not in node:
            target = resolve_ref(self.root, ref)
            siblings = {key: value for key, value in node.items() if key != "$ref"}
            return self.node({**target, **siblings}, path)  # a $ref with siblings: inlined
        out: dict[str, Any] = {}
        for key, value in node.items():
            self.keyword(out, key, value, path)
        if _is_object(out) and "additionalProperties" not in out:
            if not out.get("properties"):
                self.refuse(path, "an object that declares no property")
                return out
            out["additionalProperties"] = False
            self.exact = False
            self.notes.append(f"{path}: closed to properties it does not declare")
        if self.all_required and isinstance(out.get("properties"), dict):
            self.require_all(out, node, path)
        return out

    def keyword(self, out: dict[str, Any], key: str, value: Any, path: str) -> None:
        if key in ("$defs", "definitions") and isinstance(value, Mapping):
            out[key] = {name: self.node(item, f"#/{key}/{name}") for name, item in value.items()}
        elif key == "properties" and isinstance(value, Mapping):
            out[key] = {
                name: self.node(item, _path_key(path, name)) for name, item in value.items()
            }
        elif key == "additionalProperties":
            if value is False:
                out[key] = False
            else:
                self.refuse(path, "an object open to undeclared properties (additionalProperties)")
                out[key] = value
        elif key == "items":
            if isinstance(value, list):
                self.refuse(path, "a tuple (items as a list)")
                out[key] = value
            else:
                out[key] = self.node(value, f"{path}[*]")
        elif key in ("anyOf", "oneOf") and isinstance(value, list):
            if key == "oneOf":
                self.notes.append(f"{path}: oneOf read as anyOf")
            out["anyOf"] = [self.node(item, f"{path}|{i}") for i, item in enumerate(value)]
        elif key == "allOf" and isinstance(value, list):
            if len(value) == 1:
                merged = self.node(value[0], path)
                out.update({k: v for k, v in merged.items() if k not in out})
            else:
                self.refuse(path, "allOf with several schemas")
                out[key] = value
        elif key in _OPEN_OBJECT:
            self.refuse(path, f"an object constrained by {key}")
            out[key] = value
        elif key in _TUPLE:
            self.refuse(path, f"a tuple ({key})")
            out[key] = value
        elif key in self.keeps or (
            key == "minItems" and self.keeps is _ANTHROPIC_KEEPS_SET and value in (0, 1)
        ):
            out[key] = value
        else:
            self.notes.append(f"{path}: {key} dropped")

    def require_all(self, out: dict[str, Any], node: Mapping[str, Any], path: str) -> None:
        """Every property required; an optional one nullable (its absence sent as null)."""
        given = node.get("required") or ()
        properties = out["properties"]
        for name, item in properties.items():
            if name in given:
                continue
            where = _path_key(path, name)
            if accepts_null(item, self.root):
                self.exact = False
                self.notes.append(f"{where}: optional and nullable, so absent reads as null")
            else:
                properties[name] = _nullable(item)
                self.notes.append(f"{where}: optional, made required and nullable")
        out["required"] = list(properties)


_ANTHROPIC_KEEPS_SET = frozenset(_ANTHROPIC_KEEPS)


def _is_object(schema: Mapping[str, Any]) -> bool:
    kind = schema.get("type")
    return (
        kind == "object"
        or (isinstance(kind, list) and "object" in kind)
        or (kind is None and "properties" in schema)
    )


def _nullable(schema: Any) -> Any:
    """``schema`` that also accepts null."""
    if not isinstance(schema, dict):
        return schema
    kind = schema.get("type")
    if isinstance(kind, str) and not ({"enum", "const", "anyOf", "$ref"} & schema.keys()):
        return {**schema, "type": [kind, "null"]}
    if isinstance(kind, list) and "enum" not in schema:
        return {**schema, "type": [*kind, "null"]}
    return {"anyOf": [schema, {"type": "null"}]}


def _transform(
    schema: Mapping[str, Any], all_required: bool, keeps: frozenset[str], what: str
) -> StrictSchema:
    original = plain_schema(schema)
    walk = _Walk(original, all_required, keeps)
    if not _is_object(original) or "anyOf" in original or "oneOf" in original:
        walk.refuse("$", f"a root that is not an object ({what} wants one)")
        return StrictSchema(original, False, False, tuple(walk.notes))
    out = walk.node(original, "$")
    if not walk.strict:
        return StrictSchema(original, False, False, tuple(walk.notes))
    return StrictSchema(out, True, walk.exact, tuple(walk.notes))


def strict_schema(schema: Mapping[str, Any]) -> StrictSchema:
    """``schema`` as OpenAI's strict mode takes it (Chat Completions' ``json_schema``, the
    Responses API's ``text.format``, a strict function tool), or the reason it cannot be:
    see the module's documentation. The original is never changed."""
    return _transform(schema, True, frozenset(_OPENAI_KEEPS), "strict mode")


def closed_schema(schema: Mapping[str, Any]) -> StrictSchema:
    """``schema`` as Anthropic's structured outputs take it (``output_config.format``,
    Bedrock's ``outputConfig.textFormat`` for Claude): every object closed, optional
    properties kept, keywords it does not read dropped (numeric and length bounds,
    ``minItems`` above 1); or the reason it cannot be."""
    return _transform(schema, False, _ANTHROPIC_KEEPS_SET, "Anthropic")


def plain_schema(schema: Any) -> Any:
    """``schema`` with every mapping a dict and every tuple a list, copied (a schema held
    read-only, written into a request body)."""
    if isinstance(schema, Mapping):
        return {key: plain_schema(value) for key, value in schema.items()}
    if isinstance(schema, (list, tuple)):
        return [plain_schema(value) for value in schema]
    return schema


def resolve_ref(root: Mapping[str, Any], ref: str) -> Mapping[str, Any]:
    """The schema ``ref`` (``#/$defs/Name``, ``#/definitions/Name``, ``#``) points to in
    ``root``."""
    if ref == "#":
        return root
    if not ref.startswith("#/"):
        raise SchemaError(f"only local references (#/...) can be followed, not {ref!r}")
    node: Any = root
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, Mapping) or part not in node:
            raise SchemaError(f"the schema refers to {ref!r}, which it does not define")
        node = node[part]
    if not isinstance(node, Mapping):
        raise SchemaError(f"{ref!r} is not a schema")
    return node


def accepts_null(schema: Any, root: Mapping[str, Any] | None = None) -> bool:
    """Whether ``schema`` accepts ``null`` (by its type, enum, const or a branch)."""
    if schema is True or (isinstance(schema, Mapping) and not schema):
        return True
    if not isinstance(schema, Mapping):
        return False
    ref = schema.get("$ref")
    if isinstance(ref, str) and root is not None:
        try:
            return accepts_null(resolve_ref(root, ref), root)
        except SchemaError:
            return False
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    if None in (schema.get("enum") or ()) or ("const" in schema and schema["const"] is None):
        return True
    branches = (*(schema.get("anyOf") or ()), *(schema.get("oneOf") or ()))
    return any(accepts_null(branch, root) for branch in branches)


def absent_nulls(value: Any, schema: Mapping[str, Any]) -> Any:
    """``value`` (an answer made under :func:`strict_schema`'s form of ``schema``) with
    every ``null`` dropped where ``schema`` has an optional property that does not accept
    null: what the strict form's ``null`` stands for. Followed through properties, items
    and ``$ref``; anything else is left as it is. ``value`` is not changed."""
    return _absent_nulls(value, schema, schema, 0)


def _absent_nulls(value: Any, schema: Any, root: Mapping[str, Any], depth: int) -> Any:
    if not isinstance(schema, Mapping) or depth > 64:
        return value
    ref = schema.get("$ref")
    if isinstance(ref, str):
        try:
            schema = {**resolve_ref(root, ref), **{k: v for k, v in schema.items() if k != "$ref"}}
        except SchemaError:
            return value
    if isinstance(value, dict):
        properties = schema.get("properties")
        if not isinstance(properties, Mapping):
            return value
        required = schema.get("required") or ()
        out = {}
        for key, item in value.items():
            below = properties.get(key)
            if (
                item is None
                and key not in required
                and below is not None
                and not accepts_null(below, root)
            ):
                continue
            out[key] = _absent_nulls(item, below, root, depth + 1)
        return out
    if isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, Mapping):
            return [_absent_nulls(item, items, root, depth + 1) for item in value]
    return value


_REF_PREFIXES = ("#/$defs/", "#/definitions/")


def inline_refs(schema: Mapping[str, Any], error: Callable[[str], Exception] = SchemaError) -> Any:
    """``schema`` with every ``$ref`` into its ``$defs`` (or ``definitions``) replaced by
    the definition, for the providers that do not read ``$defs`` (Gemini's
    ``responseSchema`` and function declarations). A type that refers to itself cannot be
    written out so: ``error(message)`` is raised (:class:`SchemaError` by default)."""
    definitions = {**(schema.get("definitions") or {}), **(schema.get("$defs") or {})}

    def resolve(node: Any, seen: tuple[str, ...]) -> Any:
        if isinstance(node, (list, tuple)):
            return [resolve(item, seen) for item in node]
        if not isinstance(node, Mapping):
            return node
        ref = node.get("$ref")
        prefix = next((p for p in _REF_PREFIXES if isinstance(ref, str) and ref.startswith(p)), "")
        if prefix:
            name = str(ref)[len(prefix) :]
            if name in seen:
                raise error(f"{name} refers to itself; recursive types are not supported")
            if name not in definitions:
                raise error(f"the schema refers to {ref!r}, which it does not define")
            target = resolve(definitions[name], (*seen, name))
            siblings = {key: resolve(value, seen) for key, value in node.items() if key != "$ref"}
            return {**target, **siblings}
        return {key: resolve(value, seen) for key, value in node.items()}

    top = {k: v for k, v in schema.items() if k not in ("$defs", "definitions")}
    resolved: dict[str, Any] = resolve(top, ())
    return resolved
