"""An Interactions API request (``POST /v1beta/interactions``) read: the inverse of
:func:`~solon_events.dialects.google_interactions_request.interactions_request`.

``system_instruction`` becomes a system message; ``input`` is a text, a content item, a
list of content items (one user turn) or the conversation as steps: ``user_input`` (its
``text``, ``image`` and ``document`` content), the model's ``thought`` (its summary text as
the turn's thinking, its ``signature`` kept in ``metadata["thinking_signature"]``),
``model_output`` (its text) and ``function_call`` steps (one assistant turn as they follow
one another), and ``function_result`` steps (``call_id``, ``name``, ``result``,
``is_error``). Function tools are the client's; built-in tools and the steps of built-in
tools cannot be passed on and are refused, and so is ``previous_interaction_id`` (the
gateway keeps no conversation: send it whole). Options from ``generation_config``:
``temperature``, ``top_p``, ``max_output_tokens``, ``stop_sequences``, ``seed``,
``thinking_level`` with ``thinking_summaries``, ``tool_choice``; ``stream``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from ...event_model.messages import Message, ToolMessage, UserMessage
from ...event_model.results import AssistantMessage, FileBlock, ImageBlock
from .fields import field_of, json_text, kind_of, optional, texts, unknown_fields
from .options import GenerationOptions, sampling
from .request import ClientRequest, file_block, image_block, input_request, tool_call

__all__ = ["read_interaction"]

_KNOWN = frozenset(
    {"model", "input", "system_instruction", "tools", "generation_config", "stream", "store"}
    | {"response_format", "response_mime_type"}  # read by .output
)
_SAMPLING = ("temperature", "top_p", "max_output_tokens", "stop_sequences", "seed")
_CONFIG_KNOWN = {"thinking_level", "thinking_summaries", "tool_choice", *_SAMPLING}
_CONTENT_KINDS = ("text", "image", "document", "audio", "video")
_TURN = ("thought", "model_output", "function_call")  # an assistant turn's steps, in order


def read_interaction(body: Mapping[str, Any]) -> ClientRequest:
    """The :class:`ClientRequest` of an ``interactions.create`` body."""
    config = optional(body, "generation_config", Mapping, "") or {}
    ignored = unknown_fields(body, _KNOWN) + tuple(
        f"generation_config.{name}" for name in unknown_fields(config, _CONFIG_KNOWN)
    )
    return input_request(
        "google-interactions",
        body,
        _options(config),
        previous="previous_interaction_id",
        instructions="system_instruction",
        conversation=_input,
        turn="a user input or a function result",
        ignored=ignored,
    )


def _options(config: Mapping[str, Any]) -> GenerationOptions:
    where = "generation_config"
    level = optional(config, "thinking_level", str, where)
    summaries = optional(config, "thinking_summaries", str, where)
    reasoning = effort = None
    if level is not None:  # "minimal" without summaries is as little as the API thinks
        reasoning = level != "minimal" or summaries == "auto"
        effort = level if reasoning else None
    choice, name = _tool_choice(config.get("tool_choice"))
    return GenerationOptions(
        **sampling(config, _SAMPLING, where),
        reasoning=reasoning,
        reasoning_effort=effort,
        tool_choice=choice,
        tool_name=name,
    )


def _tool_choice(value: Any) -> tuple[str | None, str | None]:
    where = "generation_config.tool_choice"
    modes = {"auto": "auto", "validated": "auto", "any": "required", "none": "none"}
    if value is None:
        return None, None
    if isinstance(value, str):
        if value not in modes:
            raise ValueError(f"{where} must be auto, any, none or validated, not {value!r}")
        return modes[value], None
    allowed = field_of(field_of(value, Mapping, where).get("allowed_tools"), Mapping, where)
    mode = modes.get(optional(allowed, "mode", str, f"{where}.allowed_tools") or "auto", "auto")
    tools = optional(allowed, "tools", list, f"{where}.allowed_tools") or []
    if mode == "required" and len(tools) == 1:
        return mode, field_of(tools[0], str, f"{where}.allowed_tools.tools[0]")
    return mode, None  # several allowed tools: the choice, not the restriction


def _input(given: Any) -> list[Message]:
    if isinstance(given, str):
        return [UserMessage(text=given)]
    if isinstance(given, Mapping):
        return [_user([given], "input")]
    items = field_of(given, list, "input")
    if not items:
        raise ValueError("input must not be empty")
    if all(isinstance(item, Mapping) and item.get("type") in _CONTENT_KINDS for item in items):
        return [_user(items, "input")]
    return _steps(items)


def _steps(items: list[Any]) -> list[Message]:
    """The conversation of the input steps: a thought, model output and function calls
    that follow one another (in that order) are one assistant turn."""
    out: list[Message] = []
    turn: AssistantMessage | None = None
    last = -1  # the position in _TURN of the turn's last step

    for i, value in enumerate(items):
        where = f"input[{i}]"
        step = field_of(value, Mapping, where)
        kind = kind_of(step, where)
        if kind in _TURN:
            rank = _TURN.index(kind)
            if turn is not None and (rank < last or (rank == last and kind != "function_call")):
                out.append(turn)
                turn = None
            turn, last = _gather(turn or AssistantMessage(), step, kind, where), rank
            continue
        if turn is not None:
            out.append(turn)
            turn, last = None, -1
        if kind == "user_input":
            content = optional(step, "content", list, where) or []
            out.append(_user(content, f"{where}.content"))
        elif kind == "function_result":
            out.append(_result(step, where))
        else:
            raise ValueError(f"{where} ({kind}) cannot be passed on")
    if turn is not None:
        out.append(turn)
    return out


def _gather(
    turn: AssistantMessage, step: Mapping[str, Any], kind: str, where: str
) -> AssistantMessage:
    if kind == "thought":
        summary = optional(step, "summary", list, where) or []
        signature = optional(step, "signature", str, where)
        metadata = {**turn.metadata, "thinking_signature": signature} if signature else {}
        return attrs.evolve(
            turn,
            thinking=turn.thinking + texts(summary, f"{where}.summary"),
            metadata=metadata or turn.metadata,
        )
    if kind == "function_call":
        name = field_of(step.get("name"), str, f"{where}.name")
        call = tool_call(optional(step, "id", str, where), name, step.get("arguments"), where)
        return attrs.evolve(turn, tool_calls=(*turn.tool_calls, call))
    content = optional(step, "content", list, where) or []
    for j, item in enumerate(content):
        item = field_of(item, Mapping, f"{where}.content[{j}]")
        if item.get("type") != "text":
            raise ValueError(f"{where}.content[{j}] ({item.get('type')}) cannot be passed on")
    return attrs.evolve(turn, text=turn.text + texts(content, f"{where}.content"))


def _user(content: list[Any], where: str) -> UserMessage:
    blocks: list[ImageBlock | FileBlock] = []
    for i, item in enumerate(content):
        at = f"{where}[{i}]"
        item = field_of(item, Mapping, at)
        kind = item.get("type")
        if kind in ("image", "document"):
            blocks.append(_media(item, kind, at))
        elif kind != "text":
            raise ValueError(f"{at}.type {kind!r} cannot be passed on (text, image, document can)")
    return UserMessage(text=texts(content, where), blocks=blocks)


def _media(item: Mapping[str, Any], kind: str, where: str) -> ImageBlock | FileBlock:
    mime = optional(item, "mime_type", str, where)
    data = optional(item, "data", str, where)
    if data is not None:
        return (ImageBlock if kind == "image" else FileBlock)(data=data, mime_type=mime)
    uri = field_of(item.get("uri"), str, f"{where}.uri")
    return image_block(uri, mime) if kind == "image" else file_block(uri, mime)


def _result(step: Mapping[str, Any], where: str) -> ToolMessage:
    result = step.get("result")
    if isinstance(result, list):  # subcontent: its text items
        content = texts(result, f"{where}.result")
    else:
        content = json_text(result if result is not None else "")
    return ToolMessage(
        tool_call_id=field_of(step.get("call_id"), str, f"{where}.call_id"),
        name=optional(step, "name", str, where) or "",
        content=content,
        is_error=bool(optional(step, "is_error", bool, where)),
    )
