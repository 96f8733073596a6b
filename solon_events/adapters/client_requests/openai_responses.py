"""A Responses API request (``POST /v1/responses``) read: the inverse of
:func:`~solon_events.dialects.openai_responses_request.responses_request`.

``instructions`` and ``system``/``developer`` messages become system messages; ``input``
(a string, or items) holds user messages (``input_text``, ``input_image``,
``input_file`` parts), assistant messages (``output_text``), ``reasoning`` items (their
summary text, as the next assistant turn's thinking), ``function_call`` items (joined to
the assistant turn before them) and ``function_call_output`` items. Function tools are
the client's; built-in tools (``web_search``, ``file_search``, ...) cannot be passed on
and are refused, and so is ``previous_response_id`` (the gateway keeps no conversation:
send it whole, with ``store: false``). Options: ``temperature``, ``top_p``,
``max_output_tokens``, ``reasoning.effort``, ``tool_choice``, ``parallel_tool_calls``;
``stream``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from ...event_model.messages import Message, SystemMessage, UserMessage
from ...event_model.results import AssistantMessage, FileBlock, ImageBlock
from .fields import field_of, json_text, optional, texts
from .openai_chat import tool_choice
from .options import GenerationOptions, effort_fields, sampling
from .request import (
    ClientRequest,
    file_block,
    image_block,
    input_request,
    tool_call,
    tool_result,
    user_message,
)

__all__ = ["read_responses"]

_SAMPLING = ("temperature", "top_p", "max_output_tokens")
_KNOWN = {
    "model",
    "input",
    "instructions",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "reasoning",
    "stream",
    "store",
    *_SAMPLING,
}
_TEXT_PARTS = ("input_text", "output_text", "text", "refusal", "summary_text")


def read_responses(body: Mapping[str, Any]) -> ClientRequest:
    """The :class:`ClientRequest` of a Responses API body."""
    return input_request(
        "openai-responses",
        body,
        _options(body),
        previous="previous_response_id",
        instructions="instructions",
        conversation=_input,
        turn="a user message or a function call's output",
        known=_KNOWN,
    )


def _input(given: Any) -> list[Message]:
    if isinstance(given, str):
        return [UserMessage(text=given)]
    return _conversation(field_of(given, list, "input"))


def _options(body: Mapping[str, Any]) -> GenerationOptions:
    reasoning = optional(body, "reasoning", Mapping, "")
    choice, name = tool_choice(body.get("tool_choice"), nested=False)
    return GenerationOptions(
        **sampling(body, _SAMPLING),
        tool_choice=choice,
        tool_name=name,
        parallel_tool_calls=optional(body, "parallel_tool_calls", bool, ""),
        **effort_fields(optional(reasoning, "effort", str, "reasoning") if reasoning else None),
    )


def _conversation(items: list[Any]) -> list[Message]:
    """The messages of the input items: an assistant turn gathers the reasoning, text and
    function calls that follow one another."""
    out: list[Message] = []
    turn: AssistantMessage | None = None  # the assistant turn being gathered

    def close_turn() -> None:
        nonlocal turn
        if turn is not None:
            out.append(turn)
            turn = None

    for i, value in enumerate(items):
        where = f"input[{i}]"
        item = field_of(value, Mapping, where)
        kind = item.get("type", "message")
        role = item.get("role")
        if (kind == "message" and role == "assistant") or kind in ("reasoning", "function_call"):
            turn = _gather(turn or AssistantMessage(), item, kind, where)
            continue
        close_turn()
        if kind == "function_call_output":
            output = _output_text(item.get("output"), f"{where}.output")
            out.append(tool_result(item, "call_id", output, where))
        elif kind == "message" and role in ("system", "developer"):
            out.append(SystemMessage(text=_text(item.get("content"), f"{where}.content")))
        elif kind == "message" and role == "user":
            out.append(user_message(item.get("content"), f"{where}.content", _block, _TEXT_PARTS))
        else:
            raise ValueError(f"{where} ({kind}, role {role!r}) cannot be passed on")
    close_turn()
    return out


def _gather(
    turn: AssistantMessage, item: Mapping[str, Any], kind: str, where: str
) -> AssistantMessage:
    if kind == "reasoning":
        summary = optional(item, "summary", list, where) or []
        return attrs.evolve(
            turn, thinking=turn.thinking + texts(summary, f"{where}.summary", _TEXT_PARTS)
        )
    if kind == "function_call":
        name = field_of(item.get("name"), str, f"{where}.name")
        call = tool_call(optional(item, "call_id", str, where), name, item.get("arguments"), where)
        return attrs.evolve(turn, tool_calls=(*turn.tool_calls, call))
    return attrs.evolve(turn, text=turn.text + _text(item.get("content"), f"{where}.content"))


def _text(content: Any, where: str) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    return texts(field_of(content, list, where), where, _TEXT_PARTS)


def _output_text(output: Any, where: str) -> str:
    if isinstance(output, list):
        return texts(output, where, _TEXT_PARTS)
    return json_text(output if output is not None else "")


def _block(part: Mapping[str, Any], kind: Any, where: str) -> ImageBlock | FileBlock:
    if kind == "input_image":
        if part.get("file_id"):
            raise ValueError(f"{where}.file_id cannot be passed on: send the image's URL or data")
        return image_block(field_of(part.get("image_url"), str, f"{where}.image_url"))
    if kind == "input_file":
        return _file(part, where)
    raise ValueError(f"{where}.type {kind!r} cannot be passed on")


def _file(part: Mapping[str, Any], where: str) -> FileBlock:
    name = optional(part, "filename", str, where)
    if part.get("file_id"):
        return FileBlock(file_id=field_of(part.get("file_id"), str, f"{where}.file_id"), name=name)
    if part.get("file_url"):
        return FileBlock(url=field_of(part.get("file_url"), str, f"{where}.file_url"), name=name)
    return file_block(field_of(part.get("file_data"), str, f"{where}.file_data"), name=name)
