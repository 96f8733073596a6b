"""A client's structured-output request read: the
:class:`~solon_events.event_model.messages.OutputFormat` each protocol asks for in its own fields.

=======================  ====================================================================
format                   fields read
=======================  ====================================================================
``openai``               ``response_format``: ``json_schema`` (``name``, ``schema``,
                         ``strict``, ``description``), ``json_object``, ``text``
``openai-responses``     ``text.format``: the same types, flat
``anthropic``            ``output_config.format`` (``json_schema``), or the beta's
                         ``output_format``
``gemini``               ``generationConfig.responseMimeType`` ``application/json`` with
                         ``responseJsonSchema``, or ``responseSchema`` (OpenAPI style)
``ollama``               ``format``: ``"json"`` or a schema
``cohere``               ``response_format``: ``json_object`` (with ``json_schema``), ``text``
``google-interactions``  ``response_format``: ``{"type": "text", "mime_type":
                         "application/json", "schema"}`` (or a list holding one), or a schema
                         with ``response_mime_type`` ``application/json``
``bedrock``              ``outputConfig.textFormat`` (``json_schema``, its schema as JSON text)
=======================  ====================================================================

A format the gateway cannot pass on (a ``text/x.enum`` answer, a response format of a
type it does not know) raises ``ValueError`` naming the field: HTTP 400, never a request
sent without it. Sans-I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import orjson

from ...dialects.gemini_schema import json_schema_of
from ...event_model.messages import OutputFormat
from .fields import field_of, optional

__all__ = ["OUTPUT_FIELDS", "output_ignored", "read_output"]

OUTPUT_FIELDS: Mapping[str, tuple[str, ...]] = {
    "openai": ("response_format",),
    "openai-responses": ("text",),
    "anthropic": ("output_config", "output_format"),
    "gemini": (),  # in generationConfig
    "ollama": ("format",),
    "cohere": ("response_format",),
    "google-interactions": ("response_format", "response_mime_type"),
    "bedrock": ("outputConfig",),
}
"""The top-level request fields each format asks for a structured answer in."""

_JSON = "application/json"


def _schema(value: Any, where: str) -> Mapping[str, Any]:
    return dict(field_of(value, Mapping, where))


def _name(value: Any, where: str) -> str:
    return field_of(value, str, where) if value is not None else "output"


def _openai_format(value: Any, where: str, nested: bool) -> OutputFormat | None:
    """An OpenAI response format: Chat Completions' (``nested``: the schema's fields
    under ``json_schema``) or the Responses API's ``text.format`` (flat)."""
    format = field_of(value, Mapping, where)
    kind = format.get("type")
    if kind == "text":
        return None
    if kind == "json_object":
        return OutputFormat()
    if kind != "json_schema":
        raise ValueError(f"{where}.type must be text, json_object or json_schema, not {kind!r}")
    at = f"{where}.json_schema" if nested else where
    fields = field_of(format.get("json_schema"), Mapping, at) if nested else format
    strict = optional(fields, "strict", bool, at)
    return OutputFormat(
        schema=_schema(fields.get("schema") or {}, f"{at}.schema"),
        name=_name(fields.get("name"), f"{at}.name"),
        description=optional(fields, "description", str, at) or "",
        strict=strict,
    )


def _openai(body: Mapping[str, Any]) -> OutputFormat | None:
    value = body.get("response_format")
    return None if value is None else _openai_format(value, "response_format", nested=True)


def _responses(body: Mapping[str, Any]) -> OutputFormat | None:
    text = optional(body, "text", Mapping, "")
    if text is None or text.get("format") is None:
        return None
    return _openai_format(text["format"], "text.format", nested=False)


def _anthropic(body: Mapping[str, Any]) -> OutputFormat | None:
    config = optional(body, "output_config", Mapping, "")
    value, where = (config or {}).get("format"), "output_config.format"
    if value is None:
        value, where = body.get("output_format"), "output_format"
    if value is None:
        return None
    format = field_of(value, Mapping, where)
    if format.get("type") != "json_schema":
        raise ValueError(f"{where}.type must be json_schema, not {format.get('type')!r}")
    return OutputFormat(schema=_schema(format.get("schema"), f"{where}.schema"))


def _camel_get(config: Mapping[str, Any], name: str) -> Any:
    """``config[name]`` in lowerCamelCase or snake_case (both spellings the API takes)."""
    snake = "".join(f"_{c.lower()}" if c.isupper() else c for c in name)
    return config.get(name, config.get(snake))


def _gemini(body: Mapping[str, Any]) -> OutputFormat | None:
    config = _camel_get(body, "generationConfig")
    if config is None:
        return None
    config = field_of(config, Mapping, "generationConfig")
    mime = _camel_get(config, "responseMimeType")
    json_schema = _camel_get(config, "responseJsonSchema")
    schema = _camel_get(config, "responseSchema")
    where = "generationConfig.responseMimeType"
    if mime is None and json_schema is None and schema is None:
        return None
    if mime not in (None, _JSON, "text/plain"):
        raise ValueError(f"{where} {mime!r} cannot be passed on (application/json can)")
    if mime == "text/plain" and json_schema is None and schema is None:
        return None
    if json_schema is not None:
        return OutputFormat(schema=_schema(json_schema, "generationConfig.responseJsonSchema"))
    if schema is not None:
        read = json_schema_of(field_of(schema, Mapping, "generationConfig.responseSchema"))
        return OutputFormat(schema=read)
    return OutputFormat()


def _ollama(body: Mapping[str, Any]) -> OutputFormat | None:
    value = body.get("format")
    if value is None or value == "":
        return None
    if value == "json":
        return OutputFormat()
    return OutputFormat(schema=_schema(value, "format"))


def _cohere(body: Mapping[str, Any]) -> OutputFormat | None:
    value = optional(body, "response_format", Mapping, "")
    if value is None or value.get("type") == "text":
        return None
    if value.get("type") != "json_object":
        raise ValueError(
            f"response_format.type must be text or json_object, not {value.get('type')!r}"
        )
    schema = value.get("json_schema")
    if schema is None:
        return OutputFormat()
    return OutputFormat(schema=_schema(schema, "response_format.json_schema"))


def _interactions(body: Mapping[str, Any]) -> OutputFormat | None:
    value = body.get("response_format")
    mime = optional(body, "response_mime_type", str, "")
    if value is None:
        if mime not in (None, _JSON, "text/plain"):
            raise ValueError(f"response_mime_type {mime!r} cannot be passed on")
        return OutputFormat() if mime == _JSON else None
    where = "response_format"
    if isinstance(value, list):  # one format per modality: the text one is ours
        texts = [v for v in value if isinstance(v, Mapping) and v.get("type") == "text"]
        if len(texts) != 1:
            raise ValueError(f"{where} must hold one text format to be passed on")
        value = texts[0]
    format = field_of(value, Mapping, where)
    if format.get("type") != "text":  # the older form: the schema itself, with its mime type
        if mime != _JSON:
            raise ValueError(
                f"{where} must be a text format ({{'type': 'text', ...}}), or a JSON schema "
                "with response_mime_type application/json"
            )
        return OutputFormat(schema=dict(format))
    kind = format.get("mime_type", _JSON)
    if kind == "text/plain":
        return None
    if kind != _JSON:
        raise ValueError(f"{where}.mime_type {kind!r} cannot be passed on (application/json can)")
    schema = format.get("schema")
    return OutputFormat(schema=None if schema is None else _schema(schema, f"{where}.schema"))


def _bedrock(body: Mapping[str, Any]) -> OutputFormat | None:
    config = optional(body, "outputConfig", Mapping, "")
    format = (config or {}).get("textFormat")
    if format is None:
        return None
    where = "outputConfig.textFormat"
    structure = field_of(field_of(format, Mapping, where).get("structure"), Mapping, where)
    definition = field_of(structure.get("jsonSchema"), Mapping, f"{where}.structure.jsonSchema")
    text = field_of(definition.get("schema"), str, f"{where}.structure.jsonSchema.schema")
    try:
        schema = orjson.loads(text)
    except orjson.JSONDecodeError as error:
        raise ValueError(f"{where}.structure.jsonSchema.schema is not JSON: {error}") from None
    return OutputFormat(
        schema=_schema(schema, f"{where}.structure.jsonSchema.schema"),
        name=_name(definition.get("name"), f"{where}.structure.jsonSchema.name"),
        description=optional(definition, "description", str, "") or "",
    )


_READERS: dict[str, Callable[[Mapping[str, Any]], OutputFormat | None]] = {
    "openai": _openai,
    "openai-responses": _responses,
    "anthropic": _anthropic,
    "gemini": _gemini,
    "ollama": _ollama,
    "cohere": _cohere,
    "google-interactions": _interactions,
    "bedrock": _bedrock,
}


_HOLDERS = {"anthropic": "output_config", "openai-responses": "text"}
"""The request fields that hold a structured output beside other settings."""


def output_ignored(format: str, body: Mapping[str, Any]) -> tuple[str, ...]:
    """The settings beside a structured output in the field that holds it, which are not
    passed on (Anthropic's ``output_config.effort``, the Responses API's
    ``text.verbosity``), by name."""
    holder = _HOLDERS.get(format)
    value = body.get(holder) if holder else None
    if not isinstance(value, Mapping):
        return ()
    return tuple(f"{holder}.{key}" for key in sorted(value) if key != "format")


def read_output(format: str, body: Mapping[str, Any]) -> OutputFormat | None:
    """The structured answer a request in wire ``format`` asks for (None: free text); a
    field that cannot be read, or asks what cannot be passed on, raises ``ValueError``
    naming it."""
    reader = _READERS.get(format)
    return None if reader is None else reader(body)
