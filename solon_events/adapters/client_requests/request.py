"""A client's request read into our terms, and the pieces of a request that every
protocol's reader shares: tool calls and results, tools, media, the pairing of results
with their calls, and the :class:`ClientRequest` they make (the fields themselves are
read by :mod:`.fields`). Sans-I/O.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs

from ...dialects.writing import data_url_parts
from ...event_model.messages import (
    Message,
    OutputFormat,
    SystemMessage,
    ToolMessage,
    ToolSpec,
    UserMessage,
)
from ...event_model.results import AssistantMessage, FileBlock, ImageBlock, ToolCall, _tuple
from .fields import each, field_of, optional, texts, unknown_fields
from .options import GenerationOptions
from .output import OUTPUT_FIELDS, output_ignored, read_output
from .schema_shape import check_schema_shape

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
    ``output`` the structured answer it asks for (None: free text;
    :func:`~.output.read_output`); ``ignored`` the body's fields that were not translated,
    by name.
    """

    format: str
    model: str = ""
    messages: tuple[Message, ...] = attrs.field(converter=_tuple)
    tools: tuple[ToolSpec, ...] = attrs.field(default=(), converter=_tuple)
    options: GenerationOptions = attrs.field(factory=GenerationOptions)
    stream: bool = False
    include_usage: bool = True
    output: OutputFormat | None = None
    ignored: tuple[str, ...] = attrs.field(default=(), converter=_tuple)


def client_request(
    format: str,
    body: Mapping[str, Any],
    messages: Iterable[Message],
    options: GenerationOptions,
    *,
    tools: Iterable[ToolSpec] = (),
    known: Iterable[str] = (),
    model: str | None = None,
    stream: bool | None = None,
    ignored: tuple[str, ...] | None = None,
    include_usage: bool = True,
) -> ClientRequest:
    """The :class:`ClientRequest` of ``body`` in ``format``, from what its reader read: the
    ``messages`` (:func:`paired`), ``options`` and ``tools``; ``model`` and ``stream`` are
    the body's fields unless given; ``ignored`` its fields not ``known`` (nor the fields of
    its structured output) unless given."""
    if model is None:
        model = optional(body, "model", str, "") or ""
    if stream is None:
        stream = bool(optional(body, "stream", bool, ""))
    return ClientRequest(
        format=format,
        model=model,
        messages=paired(messages),
        tools=tuple(tools),
        options=options,
        stream=stream,
        include_usage=include_usage,
        output=read_output(format, body),
        ignored=(
            unknown_fields(body, {*known, *OUTPUT_FIELDS.get(format, ())})
            + output_ignored(format, body)
            if ignored is None
            else ignored
        ),
    )


def input_request(
    format: str,
    body: Mapping[str, Any],
    options: GenerationOptions,
    *,
    previous: str,
    instructions: str,
    conversation: Callable[[Any], list[Message]],
    turn: str,
    known: Iterable[str] = (),
    ignored: tuple[str, ...] | None = None,
) -> ClientRequest:
    """The :class:`ClientRequest` of an API that can keep a conversation itself (the
    Responses API, the Interactions API): a request continuing a stored one (its
    ``previous`` field) is refused (:func:`stateless`); the ``instructions`` field becomes
    a system message, the ``input`` field, read by ``conversation``, the rest, which must
    hold ``turn`` (:func:`with_a_turn`); tools are function tools declared flat."""
    stateless(body, previous)
    messages: list[Message] = []
    system = optional(body, instructions, str, "")
    if system:
        messages.append(SystemMessage(text=system))
    messages += conversation(body.get("input"))
    with_a_turn(messages, turn)
    tools = each(body, "tools", flat_function_tool)
    return client_request(
        format, body, messages, options, tools=tools, known=known, ignored=ignored
    )


def user_message(
    content: Any,
    where: str,
    block: Callable[[Mapping[str, Any], Any, str], ImageBlock | FileBlock],
    text_kinds: tuple[str, ...] = ("text",),
) -> UserMessage:
    """A user message whose ``content`` is a string or a list of parts: the text of its
    ``text_kinds`` parts joined, ``block(part, kind, where)`` of each other part (which
    raises ValueError for a kind that cannot be passed on)."""
    if content is None or isinstance(content, str):
        return UserMessage(text=content or "")
    parts = field_of(content, list, where)
    blocks = []
    for i, part in enumerate(parts):
        at = f"{where}[{i}]"
        kind = field_of(part, Mapping, at).get("type")
        if kind not in text_kinds:
            blocks.append(block(part, kind, at))
    return UserMessage(text=texts(parts, where, text_kinds), blocks=blocks)


def tool_result(
    item: Mapping[str, Any], id_field: str, content: str, where: str, *, is_error: bool = False
) -> ToolMessage:
    """A tool result the client sends back, naming its call by the id in ``item[id_field]``."""
    call_id = field_of(item.get(id_field), str, f"{where}.{id_field}")
    return ToolMessage(tool_call_id=call_id, name="", content=content, is_error=is_error)


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
    the client gave none; a schema whose keywords have not their shapes refused:
    :func:`~.schema_shape.check_schema_shape`)."""
    field_of(name, str, f"{where}.name")
    if not name:
        raise ValueError(f"{where}.name must not be empty")
    if description is not None:
        field_of(description, str, f"{where}.description")
    if parameters is None:
        schema = {"type": "object", "properties": {}}
    else:
        schema = dict(field_of(parameters, Mapping, f"{where}.parameters"))
        check_schema_shape(schema, f"{where}.parameters")
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
