"""A client's request read into our terms, and what every protocol's reader shares.

Each reader checks the body as it goes and raises ``ValueError`` naming the field that
is wrong (the gateway answers it with HTTP 400 in the protocol's error shape). Sans-I/O.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import attrs
import orjson

from ...dialects.writing import data_url_parts
from ...messages import Message, ToolMessage, ToolSpec, UserMessage
from ...results import AssistantMessage, FileBlock, ImageBlock, ToolCall, _tuple
from ..inputs import _kind, _object
from .options import GenerationOptions

__all__ = ["ClientRequest"]


@attrs.frozen(kw_only=True)
class ClientRequest:
    """What a provider SDK's request asks for, whatever its wire format.

    ``format`` is the protocol it was read from (a dialect name); ``model`` the model the
    client named (``""`` when it named none); ``messages`` the conversation (system
    instructions first, as :class:`~solon_events.SystemMessage`); ``tools`` the client's
    tools (never run by the gateway: their calls go back to the client); ``stream``
    whether it asked for a stream; ``include_usage`` whether a stream ends with usage
    (Chat Completions sends it only when ``stream_options.include_usage`` is set);
    ``ignored`` the body's fields that were not translated, by name.
    """

    format: str
    model: str = ""
    messages: tuple[Message, ...] = attrs.field(converter=_tuple)
    tools: tuple[ToolSpec, ...] = attrs.field(default=(), converter=_tuple)
    options: GenerationOptions = attrs.field(factory=GenerationOptions)
    stream: bool = False
    include_usage: bool = True
    ignored: tuple[str, ...] = attrs.field(default=(), converter=_tuple)


# Field readers: each names the field in its error.


def body_object(body: Any) -> Mapping[str, Any]:
    """The request body, which must be a JSON object."""
    return _object(body)


def field_of(value: Any, kind: type | tuple[type, ...], where: str) -> Any:
    """``value`` when it is of ``kind``, else a ValueError naming ``where``."""
    if isinstance(value, bool) and kind in (int, float, (int, float)):
        raise ValueError(f"{where} must be a number, not a boolean")
    if not isinstance(value, kind):
        raise ValueError(f"{where} must be {_what(kind)}, not {_kind(value)}")
    return value


def _what(kind: type | tuple[type, ...]) -> str:
    names = {
        str: "a string",
        int: "an integer",
        bool: "a boolean",
        list: "an array",
        dict: "an object",
        Mapping: "an object",
    }
    if isinstance(kind, tuple):
        return "a number" if set(kind) == {int, float} else " or ".join(_what(k) for k in kind)
    return names.get(kind, kind.__name__)


def optional(body: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    """``body[key]`` checked to be of ``kind``; None when absent or null."""
    value = body.get(key)
    if value is None:
        return None
    return field_of(value, kind, f"{where}.{key}" if where else key)


def number(body: Mapping[str, Any], key: str, where: str = "") -> float | None:
    """A numeric field (an int or a float), or None."""
    value = optional(body, key, (int, float), where)
    return None if value is None else value


def integer(body: Mapping[str, Any], key: str, where: str = "") -> int | None:
    """An integer field, or None (a float with no fraction is taken: JSON has one number)."""
    value = optional(body, key, (int, float), where)
    if value is None:
        return None
    if value != int(value):
        raise ValueError(f"{where + '.' if where else ''}{key} must be an integer, got {value}")
    return int(value)


def stop_sequences(value: Any, where: str) -> tuple[str, ...]:
    """A stop field: a string or an array of strings."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    items = field_of(value, list, where)
    return tuple(field_of(item, str, f"{where}[{i}]") for i, item in enumerate(items))


def each(
    body: Mapping[str, Any], key: str, read: Callable[[Any, str], Any], *, required: bool = False
) -> list[Any]:
    """``read(item, where)`` of each item of the array ``body[key]`` (none when it is absent;
    ``required``: it must hold one at least)."""
    items = body.get(key)
    if items is None and not required:
        return []
    items = field_of(items, list, key)
    if required and not items:
        raise ValueError(f"{key} must not be empty")
    return [read(item, f"{key}[{i}]") for i, item in enumerate(items)]


def json_text(value: Any) -> str:
    """A tool result's content as text: a string as it is, anything else as JSON."""
    if isinstance(value, str):
        return value
    return orjson.dumps(value).decode()


def arguments_of(value: Any, where: str) -> ToolCall | dict[str, Any]:
    """A tool call's arguments given as a JSON object or as JSON text: the mapping, or
    (for text) a ToolCall holding it, to keep the text as the client sent it."""
    if isinstance(value, str):
        return ToolCall(arguments_str=value)
    if value is None:
        return {}
    return dict(field_of(value, Mapping, where))


def tool_call(call_id: str | None, name: str, arguments: Any, where: str) -> ToolCall:
    """A tool call the client sends back (the model's earlier call)."""
    read = arguments_of(arguments, f"{where}.arguments")
    if isinstance(read, ToolCall):
        return ToolCall(id=call_id, name=name, arguments_str=read.arguments_str)
    return ToolCall(id=call_id, name=name, arguments=read)


def stateless(body: Mapping[str, Any], field: str) -> None:
    """Refuse a request that continues a conversation stored by the provider (its
    ``field``, ``previous_response_id`` say): the gateway keeps none."""
    if body.get(field) is not None:
        raise ValueError(
            f"{field} cannot be used here: the gateway keeps no conversation; "
            "send the whole conversation as input"
        )


def with_a_turn(messages: list[Message], what: str) -> list[Message]:
    """``messages``, which must hold a user message or a tool result (``what`` says so in
    the protocol's words)."""
    if not any(isinstance(m, (UserMessage, ToolMessage)) for m in messages):
        raise ValueError(f"input must hold {what}")
    return messages


def flat_function_tool(value: Any, where: str) -> ToolSpec:
    """A function tool declared flat (``{"type": "function", name, description,
    parameters}``: the Responses and Interactions APIs); a built-in tool is refused."""
    tool = field_of(value, Mapping, where)
    if tool.get("type") != "function":
        raise ValueError(
            f"{where} is a built-in tool ({tool.get('type')}): the gateway passes the client's "
            "function tools only"
        )
    return tool_spec(tool.get("name"), tool.get("description"), tool.get("parameters"), where)


def tool_spec(name: Any, description: Any, parameters: Any, where: str) -> ToolSpec:
    """A client tool: its name, description and JSON schema (an empty object schema when
    the client gave none)."""
    field_of(name, str, f"{where}.name")
    if not name:
        raise ValueError(f"{where}.name must not be empty")
    if description is not None:
        field_of(description, str, f"{where}.description")
    schema = (
        {"type": "object", "properties": {}}
        if parameters is None
        else dict(field_of(parameters, Mapping, f"{where}.parameters"))
    )
    return ToolSpec(name=name, description=description or "", parameters=schema)


def paired(messages: Iterable[Message]) -> tuple[Message, ...]:
    """The conversation with every tool result paired with its call.

    Some protocols name a result's call only by id (Chat Completions, Responses,
    Anthropic), others only by name and order (Ollama, Gemini without ids): a result
    without a name gets its call's name, and calls and results without ids get the
    same made-up id (``call_<turn>_<n>``), since most upstreams need both.
    """
    out: list[Message] = []
    names: dict[str, str] = {}
    waiting: list[ToolCall] = []  # the last assistant turn's calls not yet answered
    for position, message in enumerate(messages):
        if isinstance(message, AssistantMessage) and message.tool_calls:
            calls = tuple(
                call if call.id else attrs.evolve(call, id=f"call_{position}_{n}")
                for n, call in enumerate(message.tool_calls)
            )
            names.update((call.id or "", call.name) for call in calls)
            waiting = list(calls)
            message = attrs.evolve(message, tool_calls=calls)
        elif isinstance(message, ToolMessage):
            message = _answering(message, waiting, names)
        out.append(message)
    return tuple(out)


def _answering(message: ToolMessage, waiting: list[ToolCall], names: Mapping[str, str]) -> Message:
    call = None
    if message.tool_call_id:
        call = next((c for c in waiting if c.id == message.tool_call_id), None)
    if call is None and message.name:  # by name, the earliest call not yet answered
        call = next((c for c in waiting if c.name == message.name), None)
    if call is None and not message.tool_call_id and not message.name and waiting:
        call = waiting[0]
    if call is not None:
        waiting.remove(call)
    call_id = call.id if call is not None else message.tool_call_id
    name = message.name or (call.name if call else "") or names.get(call_id or "", "")
    if call_id == message.tool_call_id and name == message.name:
        return message
    return attrs.evolve(message, tool_call_id=call_id, name=name)


def image_block(url: str, mime_type: str | None = None) -> ImageBlock:
    """An image given by URL; a base64 ``data:`` URL becomes the image's data."""
    inline = data_url_parts(url)
    if inline is not None:
        return ImageBlock(data=inline[1], mime_type=inline[0] or mime_type)
    return ImageBlock(url=url, mime_type=mime_type)


def file_block(url: str, mime_type: str | None = None, name: str | None = None) -> FileBlock:
    """A file given by URL; a base64 ``data:`` URL becomes the file's data."""
    inline = data_url_parts(url)
    if inline is not None:
        return FileBlock(data=inline[1], mime_type=inline[0] or mime_type, name=name)
    return FileBlock(url=url, mime_type=mime_type, name=name)


_IMAGE_SIGNATURES = (
    (b"\x89PNG", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF8", "image/gif"),
)


def image_type(data: str) -> str | None:
    """The media type of a base64 image, read from its first bytes (PNG, JPEG, GIF, WebP);
    None when unknown."""
    try:
        head = base64.b64decode(data[:16], validate=False)
    except (ValueError, binascii.Error):
        return None
    for start, mime_type in _IMAGE_SIGNATURES:
        if head.startswith(start):
            return mime_type
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def texts(parts: Sequence[Any], where: str, kinds: tuple[str, ...] = ("text",)) -> str:
    """The text of content parts ``[{"type": "text", "text": ...}, ...]`` (other kinds
    of part are skipped), joined."""
    out = []
    for i, part in enumerate(parts):
        field_of(part, Mapping, f"{where}[{i}]")
        if part.get("type") in kinds:
            out.append(field_of(part.get("text"), str, f"{where}[{i}].text"))
    return "".join(out)


def effort_fields(effort: str | None) -> dict[str, Any]:
    """The :class:`GenerationOptions` fields of an OpenAI-style reasoning effort (``"none"``
    turns reasoning off)."""
    if effort is None:
        return {}
    return {"reasoning": effort != "none", "reasoning_effort": effort if effort != "none" else None}


def unknown_fields(body: Mapping[str, Any], known: Iterable[str]) -> tuple[str, ...]:
    """The body's fields that are not ``known`` (and not null), sorted."""
    known = frozenset(known)
    return tuple(sorted(k for k, v in body.items() if k not in known and v is not None))
