"""A Gemini ``generateContent`` / ``streamGenerateContent`` request read: the inverse of
:func:`~solon_events.dialects.gemini_request.generate_content_request`.

``systemInstruction`` becomes a system message; ``contents`` hold user turns (``text``,
``inlineData``, ``fileData`` parts, and ``functionResponse`` parts, each a
:class:`~solon_events.ToolMessage`: ``response.result`` or ``response.output`` as its
content, ``response.error`` as a failed one, any other response as JSON) and model turns
(``text``, ``thought`` parts as thinking, ``functionCall`` parts; a ``thoughtSignature``
kept in ``metadata["thinking_signature"]``). ``functionDeclarations`` are the client's
tools, their OpenAPI-style schemas (``"type": "OBJECT"``, ``nullable``) turned into JSON
schemas (``parametersJsonSchema`` is taken as it is); built-in tools (``googleSearch``,
``codeExecution``, ...) are refused. Options from ``generationConfig``:
``temperature``, ``topP``, ``topK``, ``maxOutputTokens``, ``stopSequences``, ``seed``,
the penalties, ``thinkingConfig`` (``thinkingBudget``, ``includeThoughts``,
``thinkingLevel``), and ``toolConfig.functionCallingConfig``. The model and whether it
streams come from the URL (``models/{model}:streamGenerateContent``).

Field names are read in either of the spellings the API takes (proto3's JSON mapping):
``maxOutputTokens`` or ``max_output_tokens``. google-genai sends some in the second
(``thinkingConfig: {"thinking_budget": ...}``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...dialects.gemini_request import SKIP_SIGNATURE
from ...dialects.gemini_schema import json_schema_of as json_schema
from ...event_model.messages import Message, SystemMessage, ToolMessage, ToolSpec, UserMessage
from ...event_model.results import AssistantMessage, FileBlock, ImageBlock, ToolCall
from .fields import each, field_of, integer, json_text, optional, unknown_fields
from .options import GenerationOptions, sampling
from .request import ClientRequest, client_request, tool_spec

__all__ = ["json_schema", "read_generate_content"]

_KNOWN = frozenset({"contents", "systemInstruction", "tools", "toolConfig", "generationConfig"})
_SAMPLING = (
    "temperature",
    "topP",
    "topK",
    "maxOutputTokens",
    "stopSequences",
    "seed",
    "presencePenalty",
    "frequencyPenalty",
)
_CONFIG_KNOWN = {
    *("thinkingConfig", "candidateCount", *_SAMPLING),
    *("responseMimeType", "responseJsonSchema", "responseSchema"),  # read by .output
}


def _camel(value: Mapping[str, Any]) -> Mapping[str, Any]:
    """An object of the API's with its ``snake_case`` field names in ``lowerCamelCase``
    (its values as they are: arguments, responses and schemas hold the client's names)."""
    if not any("_" in key for key in value):
        return value
    out = dict(value)
    for key in value:
        if "_" in key:
            head, *rest = key.split("_")
            out.setdefault(head + "".join(word.capitalize() for word in rest), out.pop(key))
    return out


def _object(value: Any, where: str) -> Mapping[str, Any]:
    return _camel(field_of(value, Mapping, where))


def _field(body: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any] | None:
    value = optional(body, key, Mapping, where)
    return None if value is None else _camel(value)


def read_generate_content(
    body: Mapping[str, Any], *, model: str = "", stream: bool = False
) -> ClientRequest:
    """The :class:`ClientRequest` of a ``generateContent`` body; ``model`` and ``stream``
    come from the URL the client posted to."""
    body = _camel(body)
    contents = each(body, "contents", _content, required=True)
    messages: list[Message] = []
    system = _field(body, "systemInstruction", "")
    if system is not None:
        parts = field_of(system.get("parts") or [], list, "systemInstruction.parts")
        text = "".join(_part_text(p, f"systemInstruction.parts[{i}]") for i, p in enumerate(parts))
        if text:
            messages.append(SystemMessage(text=text))
    for content in contents:
        messages.extend(content)
    tools = [spec for entry in each(body, "tools", _tools) for spec in entry]
    config = _field(body, "generationConfig", "") or {}
    if (integer(config, "candidateCount", "generationConfig") or 1) != 1:
        raise ValueError("generationConfig.candidateCount must be 1")
    ignored = unknown_fields(body, _KNOWN) + tuple(
        f"generationConfig.{name}" for name in unknown_fields(config, _CONFIG_KNOWN)
    )
    options = _options(config, _field(body, "toolConfig", ""))
    return client_request(
        "gemini",
        body,
        messages,
        options,
        tools=tools,
        model=model.removeprefix("models/"),
        stream=stream,
        ignored=ignored,
    )


def _options(config: Mapping[str, Any], tool_config: Mapping[str, Any] | None) -> GenerationOptions:
    where = "generationConfig"
    thinking = _field(config, "thinkingConfig", where)
    reasoning = budget = effort = None
    if thinking is not None:
        budget = integer(thinking, "thinkingBudget", f"{where}.thinkingConfig")
        level = optional(thinking, "thinkingLevel", str, f"{where}.thinkingConfig")
        effort = level.lower() if level else None
        include = optional(thinking, "includeThoughts", bool, f"{where}.thinkingConfig")
        reasoning = (
            bool(include) and budget != 0
            if include is not None
            else (None if budget is None else budget != 0)
        )
        if budget is not None and budget < 0:  # -1: dynamic thinking, the model's choice
            budget = None
    tool_choice = tool_name = None
    calling = (tool_config or {}).get("functionCallingConfig")
    if calling is not None:
        calling = _object(calling, "toolConfig.functionCallingConfig")
        modes = {"AUTO": "auto", "ANY": "required", "VALIDATED": "auto", "NONE": "none"}
        mode = str(calling.get("mode") or "AUTO").upper()
        if mode not in modes:
            raise ValueError(f"toolConfig.functionCallingConfig.mode {mode!r} is not known")
        tool_choice = modes[mode]
        allowed = calling.get("allowedFunctionNames") or []
        if mode == "ANY" and isinstance(allowed, list) and len(allowed) == 1:
            tool_name = field_of(
                allowed[0], str, "toolConfig.functionCallingConfig.allowedFunctionNames[0]"
            )
    return GenerationOptions(
        **sampling(config, _SAMPLING, where),
        reasoning=reasoning,
        reasoning_effort=effort,
        reasoning_budget=budget,
        tool_choice=tool_choice,
        tool_name=tool_name,
    )


def _tools(value: Any, where: str) -> list[ToolSpec]:
    entry = _object(value, where)
    others = sorted(set(entry) - {"functionDeclarations"})
    if others:
        raise ValueError(
            f"{where} declares built-in tools ({', '.join(others)}): the gateway passes the "
            "client's function declarations only"
        )
    declarations = field_of(
        entry.get("functionDeclarations") or [], list, f"{where}.functionDeclarations"
    )
    specs = []
    for i, item in enumerate(declarations):
        at = f"{where}.functionDeclarations[{i}]"
        declaration = _object(item, at)
        schema = declaration.get("parametersJsonSchema")
        if schema is None and declaration.get("parameters") is not None:
            schema = json_schema(field_of(declaration["parameters"], Mapping, f"{at}.parameters"))
        specs.append(tool_spec(declaration.get("name"), declaration.get("description"), schema, at))
    return specs


def _content(value: Any, where: str) -> list[Message]:
    content = _object(value, where)
    role = content.get("role") or "user"
    parts = [
        _object(p, f"{where}.parts[{i}]")
        for i, p in enumerate(field_of(content.get("parts") or [], list, f"{where}.parts"))
    ]
    if role == "model":
        return [_model(parts, f"{where}.parts")]
    if role != "user":
        raise ValueError(f"{where}.role must be user or model, not {role!r}")
    messages: list[Message] = []
    text: list[str] = []
    media: list[ImageBlock | FileBlock] = []
    for i, part in enumerate(parts):
        at = f"{where}.parts[{i}]"
        if "functionResponse" in part:
            messages.append(
                _result(_object(part["functionResponse"], f"{at}.functionResponse"), at)
            )
        elif "inlineData" in part or "fileData" in part:
            media.append(_media(part, at))
        else:
            text.append(_part_text(part, at))
    if text or media or not messages:
        messages.append(UserMessage(text="".join(text), blocks=media))
    return messages


def _part_text(part: Any, where: str) -> str:
    part = field_of(part, Mapping, where)
    if "text" not in part:
        kinds = ", ".join(sorted(k for k in part if k not in ("thought", "thoughtSignature")))
        raise ValueError(f"{where} ({kinds or 'empty'}) cannot be passed on")
    return field_of(part.get("text"), str, f"{where}.text")


def _media(part: Mapping[str, Any], where: str) -> ImageBlock | FileBlock:
    if "inlineData" in part:
        inline = _object(part["inlineData"], f"{where}.inlineData")
        mime = optional(inline, "mimeType", str, f"{where}.inlineData") or ""
        data = field_of(inline.get("data"), str, f"{where}.inlineData.data")
        kind = ImageBlock if mime.startswith("image/") else FileBlock
        return kind(data=data, mime_type=mime or None)
    file = _object(part["fileData"], f"{where}.fileData")
    mime = optional(file, "mimeType", str, f"{where}.fileData") or ""
    uri = field_of(file.get("fileUri"), str, f"{where}.fileData.fileUri")
    kind = ImageBlock if mime.startswith("image/") else FileBlock
    return kind(url=uri, mime_type=mime or None)


def _result(response: Mapping[str, Any], where: str) -> ToolMessage:
    name = field_of(response.get("name"), str, f"{where}.functionResponse.name")
    value = response.get("response")
    failed = False
    if isinstance(value, Mapping) and len(value) == 1:
        key, inner = next(iter(value.items()))
        if key in ("result", "output", "error"):
            value, failed = inner, key == "error"
    return ToolMessage(
        tool_call_id=optional(response, "id", str, f"{where}.functionResponse"),
        name=name,
        content=json_text(value if value is not None else ""),
        is_error=failed,
    )


def _model(parts: list[Mapping[str, Any]], where: str) -> AssistantMessage:
    text: list[str] = []
    thinking: list[str] = []
    calls: list[ToolCall] = []
    signature = None
    for i, part in enumerate(parts):
        at = f"{where}[{i}]"
        signature = optional(part, "thoughtSignature", str, at) or signature
        if "functionCall" in part:
            call = _object(part["functionCall"], f"{at}.functionCall")
            arguments = optional(call, "args", Mapping, f"{at}.functionCall") or {}
            calls.append(
                ToolCall(
                    id=optional(call, "id", str, f"{at}.functionCall"),
                    name=field_of(call.get("name"), str, f"{at}.functionCall.name"),
                    arguments=dict(arguments),
                )
            )
        elif part.get("thought"):
            thinking.append(_part_text(part, at) if "text" in part else "")
        elif "text" in part:
            text.append(_part_text(part, at))
        elif "inlineData" not in part and "fileData" not in part:
            _part_text(part, at)  # says what cannot be passed on
    # the placeholder for an unknown signature is no signature (the builder adds it back)
    metadata = {"thinking_signature": signature} if signature not in (None, SKIP_SIGNATURE) else {}
    return AssistantMessage(
        text="".join(text), thinking="".join(thinking), tool_calls=calls, metadata=metadata
    )
