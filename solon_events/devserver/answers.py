"""Structured answers of the embedded provider: what a request asks for, and an instance of
its schema (sans-I/O).

:func:`asked_output` reads what shape a request wants its answer in, in every way the
library (and the SDKs) ask: a native mechanism (:func:`~solon_events.adapters.
client_requests.output.read_output`), a tool the model is made to call (``tool_choice``
naming it, or any tool: then the last one declared), or a schema in a
``"prompted"``-mode instruction. :func:`instance` makes a deterministic valid instance
of a schema; :func:`broken` one with a field missing or of the wrong type; :func:`answered`
puts the instance in a scenario's script in place of its text (or of its call of the
answer's tool), streamed in small fragments.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import attrs
import orjson

from ..adapters.client_requests.output import read_output
from ..client.output import RETRY_FEEDBACK
from ..dialects.output import OUTPUT_INSTRUCTION
from ..dialects.output_schema import SchemaError, resolve_ref
from .encoders.base import AskedOutput, ToolDecl
from .turns import Finish, Part, Script, Text, ToolCallPart

__all__ = ["answered", "asked_output", "broken", "fragments", "instance"]

_PROMPTED = OUTPUT_INSTRUCTION.split("{schema}", 1)[0]
_RETRY = RETRY_FEEDBACK.split("{where}", 1)[0]
_ANY_OBJECT: Mapping[str, Any] = {"type": "object", "properties": {}}


def _strings(value: Any) -> Iterator[str]:
    """Every string in a JSON value (the texts of a request, wherever its format puts them)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, Mapping):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _forced_tool(body: Mapping[str, Any]) -> str | None:
    """The tool a request makes the model call: its name, ``""`` for any tool, None for none
    (``tool_choice`` in each format's shape, Gemini's and Bedrock's tool configs)."""
    config = body.get("generation_config")  # the Interactions API's place for it
    choice = body.get("tool_choice") or (
        config.get("tool_choice") if isinstance(config, Mapping) else None
    )
    if choice in ("required", "any", "REQUIRED"):
        return ""
    if isinstance(choice, Mapping):
        if choice.get("type") in ("function", "tool"):
            function = choice.get("function")
            name = function.get("name") if isinstance(function, Mapping) else choice.get("name")
            return name if isinstance(name, str) else None
        if choice.get("type") == "any":
            return ""
        allowed = choice.get("allowed_tools")
        if isinstance(allowed, Mapping) and allowed.get("mode") == "any":
            return _the_one(allowed.get("tools"))
    config = body.get("toolConfig")
    if isinstance(config, Mapping):
        calling = config.get("functionCallingConfig")
        if isinstance(calling, Mapping) and calling.get("mode") == "ANY":
            return _the_one(calling.get("allowedFunctionNames"))
        bedrock = config.get("toolChoice")
        if isinstance(bedrock, Mapping):
            tool = bedrock.get("tool")
            if isinstance(tool, Mapping) and isinstance(tool.get("name"), str):
                return str(tool["name"])
            if "any" in bedrock:
                return ""
    return None


def _the_one(names: Any) -> str:
    """The one tool a list of allowed tools names, else ``""`` (any)."""
    if isinstance(names, list) and len(names) == 1 and isinstance(names[0], str):
        return names[0]
    return ""


def _prompted_schema(texts: Sequence[str]) -> Mapping[str, Any] | None:
    """The schema of a ``"prompted"``-mode instruction among the request's texts."""
    for text in texts:
        at = text.find(_PROMPTED)
        if at < 0:
            continue
        try:
            schema = orjson.loads(text[at + len(_PROMPTED) :].strip())
        except orjson.JSONDecodeError:
            continue
        if isinstance(schema, Mapping):
            return schema
    return None


def asked_output(
    format: str, body: Mapping[str, Any], tools: Sequence[ToolDecl]
) -> AskedOutput | None:
    """What structured answer the request (in wire ``format``) asks for, if any."""
    texts = list(_strings(body.get("messages") or body.get("input") or body.get("contents")))
    texts += list(_strings({k: v for k, v in body.items() if "system" in k.lower()}))
    retries = sum(1 for text in texts if _RETRY in text)
    forced = _forced_tool(body)
    if forced is not None and tools:
        tool = next((t for t in tools if t.name == forced), None) if forced else tools[-1]
        if tool is not None:
            return AskedOutput(schema=tool.schema, tool=tool.name, retries=retries)
    try:
        native = read_output(format, body)
    except ValueError:
        native = None
    if native is not None:
        schema = native.schema if native.schema is not None else _ANY_OBJECT
        return AskedOutput(schema=schema, retries=retries)
    prompted = _prompted_schema(texts)
    if prompted is not None:
        return AskedOutput(schema=prompted, retries=retries)
    return None


# ----------------------------------------------------------------------- instances

_FORMATS = {
    "date-time": "2024-05-01T12:30:00Z",
    "date": "2024-05-01",
    "time": "12:30:00",
    "duration": "P1D",
    "email": "ada@example.com",
    "hostname": "example.com",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
    "uri": "https://example.com/",
    "url": "https://example.com/",
    "uuid": "123e4567-e89b-42d3-a456-426614174000",
}
_WORDS = ("Paris", "Lyon", "Nantes", "Lille", "Nice", "Rennes")


def instance(schema: Mapping[str, Any]) -> Any:
    """A deterministic instance of ``schema``: every property given (each string a city
    name or what its ``format`` says, each number within its bounds, two items per
    array within ``minItems``/``maxItems``, an enum's first value)."""
    return _Maker(schema).make(schema, "", 0)


class _Maker:
    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root
        self.strings = 0

    def make(self, schema: Any, key: str, depth: int) -> Any:
        if not isinstance(schema, Mapping) or depth > 12:
            return None
        ref = schema.get("$ref")
        if isinstance(ref, str):
            try:
                target = resolve_ref(self.root, ref)
            except SchemaError:
                return None
            return self.make({**target, **{k: v for k, v in schema.items() if k != "$ref"}},
                             key, depth + 1)  # fmt: skip
        if "const" in schema:
            return schema["const"]
        if schema.get("enum"):
            return schema["enum"][0]
        for union in ("anyOf", "oneOf"):
            branches = [b for b in schema.get(union) or () if isinstance(b, Mapping)]
            if branches:
                chosen = next((b for b in branches if b.get("type") != "null"), branches[0])
                return self.make(chosen, key, depth + 1)
        parts = [b for b in schema.get("allOf") or () if isinstance(b, Mapping)]
        if parts:
            merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
            for part in parts:
                for name, value in part.items():
                    if name == "properties":
                        merged["properties"] = {**merged.get("properties", {}), **value}
                    elif name == "required":
                        merged["required"] = [*merged.get("required", []), *value]
                    else:
                        merged.setdefault(name, value)
            return self.make(merged, key, depth + 1)
        kind = schema.get("type")
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), "null")
        if kind is None:
            kind = (
                "object" if "properties" in schema else "array" if "items" in schema else "string"
            )
        return getattr(self, f"_{kind}", self._string)(schema, key, depth)

    def _object(self, schema: Mapping[str, Any], key: str, depth: int) -> Any:
        properties = schema.get("properties") or {}
        out = {name: self.make(item, name, depth + 1) for name, item in properties.items()}
        extra = schema.get("additionalProperties")
        if not properties and isinstance(extra, Mapping):
            out[_WORDS[0].lower()] = self.make(extra, key, depth + 1)
        return out

    def _array(self, schema: Mapping[str, Any], key: str, depth: int) -> Any:
        prefix = schema.get("prefixItems")
        if isinstance(prefix, list):
            return [self.make(item, key, depth + 1) for item in prefix]
        low, high = schema.get("minItems", 0), schema.get("maxItems", 2)
        count = max(low, min(2, high))
        return [self.make(schema.get("items") or {}, key, depth + 1) for _ in range(count)]

    def _string(self, schema: Mapping[str, Any], key: str, depth: int) -> Any:
        known = _FORMATS.get(str(schema.get("format")))
        if known is not None:
            return known
        text = _WORDS[self.strings % len(_WORDS)]
        self.strings += 1
        pattern = schema.get("pattern")
        if isinstance(pattern, str) and not re.search(pattern, text):
            text = next((w for w in (key, *_WORDS, "a", "1") if re.search(pattern, w)), text)
        low, high = schema.get("minLength", 0), schema.get("maxLength")
        text = text + "x" * max(0, low - len(text))
        return text[:high] if isinstance(high, int) else text

    def _integer(self, schema: Mapping[str, Any], key: str, depth: int) -> Any:
        return int(self._number(schema, key, depth, 3))

    def _number(self, schema: Mapping[str, Any], key: str, depth: int, value: float = 1.5) -> Any:
        low = schema.get("minimum", schema.get("exclusiveMinimum"))
        high = schema.get("maximum", schema.get("exclusiveMaximum"))
        if isinstance(low, (int, float)) and value <= low:
            value = low + 1 if "exclusiveMinimum" in schema else low
        if isinstance(high, (int, float)) and value >= high:
            value = high - 1 if "exclusiveMaximum" in schema else high
        step = schema.get("multipleOf")
        if isinstance(step, (int, float)) and step > 0:
            value = step * max(1, round(value / step))
        return value

    def _boolean(self, schema: Mapping[str, Any], key: str, depth: int) -> Any:
        return True

    def _null(self, schema: Mapping[str, Any], key: str, depth: int) -> Any:
        return None


def broken(schema: Mapping[str, Any], how: str = "type") -> Any:
    """An instance of ``schema`` that does not fit it: its first required property
    missing (``how="missing"``), or of the wrong type (``"type"``: a string where a number
    is, a number elsewhere)."""
    value = instance(schema)
    if not isinstance(value, dict) or not value:
        return [value] if not isinstance(value, list) else "not an array"
    required = [name for name in schema.get("required") or () if name in value]
    name = required[0] if required else next(iter(value))
    if how == "missing":
        del value[name]
    else:
        value[name] = "three" if isinstance(value[name], (int, float)) else 3
    return value


def fragments(value: Any, size: int = 8) -> tuple[str, ...]:
    """``value`` as JSON text in fragments of ``size`` characters (at most 64 of them)."""
    text = orjson.dumps(value).decode()
    size = max(size, -(-len(text) // 64))
    return tuple(text[i : i + size] for i in range(0, len(text), size)) or ("",)


def answered(script: Script, asked: AskedOutput, value: Any) -> Script:
    """``script`` answering with ``value``: in tool mode its call of the answer's tool
    (made when the script says text instead), else its text, streamed in fragments; a
    call of another tool (the request's own, run first) is kept."""
    parts: list[Part] = []
    placed = False
    for part in script.parts:
        if isinstance(part, ToolCallPart) and part.name == asked.tool:
            parts.append(ToolCallPart(part.name, fragments(value), streamed=True))
            placed = True
        elif isinstance(part, ToolCallPart):
            return script  # the request's own tools first: the answer comes after them
        elif isinstance(part, Text):
            if not placed:
                placed = True
                if asked.tool:
                    parts.append(ToolCallPart(asked.tool, fragments(value), streamed=True))
                else:
                    parts.extend(Text(piece) for piece in fragments(value))
        elif isinstance(part, Finish) and asked.tool:
            parts.append(Finish("tool_calls"))
        else:
            parts.append(part)
    return attrs.evolve(script, parts=parts)
