"""Aggregated results: usage, tool calls, sources, content blocks, messages, responses.

Every class is a frozen attrs value built by keyword; sequences are tuples and mappings
are read-only, so a result handed to a subscriber cannot drift.

The pipeline builds a :class:`Usage`, :class:`AssistantMessage` and :class:`ChatResponse`
for every step, with :func:`new_usage`, :func:`new_message` and :func:`new_response`, and
the dialects build sources and calls with :func:`new_citation`, :func:`new_search_result`
and :func:`new_tool_call`: they fill a writable twin with the same slots by plain attribute
stores and then switch it to the frozen class, as :class:`~solon_events.events.ChatEvent`
is built. attrs' frozen ``__init__`` pays one ``object.__setattr__`` call per field, which
costs more than the whole build this way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

import attrs
import orjson

from .display_hooks import repr_html, repr_pretty

__all__ = [
    "AssistantMessage",
    "ChatResponse",
    "Citation",
    "FileBlock",
    "ImageBlock",
    "SearchResult",
    "TextBlock",
    "ToolCall",
    "Usage",
    "new_citation",
    "new_message",
    "new_partial_tool_call",
    "new_response",
    "new_search_result",
    "new_tool_call",
    "new_usage",
]

_EMPTY: Mapping[str, Any] = MappingProxyType({})


def _frozen_mapping(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    if not value:
        return _EMPTY
    if isinstance(value, MappingProxyType):
        return value
    return MappingProxyType(dict(value))


def _tuple(value: Iterable[Any] | None) -> tuple[Any, ...]:
    if value is None:
        return ()
    return value if isinstance(value, tuple) else tuple(value)


def _add_counters(a: Mapping[str, Any], b: Mapping[str, Any]) -> Mapping[str, Any]:
    if not a:
        return b
    if not b:
        return a
    merged = dict(a)
    for key, value in b.items():
        mine = merged.get(key)
        merged[key] = mine + value if _is_number(mine) and _is_number(value) else value
    return MappingProxyType(merged)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class _UsageSlots:
    """The storage layout of Usage, writable; only ever seen inside :func:`new_usage`."""

    __slots__ = (
        "__weakref__",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
        "completion_tokens",
        "prompt_tokens",
        "server_tool_use",
        "source",
        "thinking_tokens",
        "total_tokens",
    )  # fmt: skip


@attrs.frozen(kw_only=True)
class Usage(_UsageSlots):
    """Token accounting of one step, or of a whole response when steps are added.

    ``prompt_tokens`` counts every input token, cached ones included;
    ``completion_tokens`` counts every output token, thinking included;
    ``total_tokens`` is the provider's total, or prompt + completion.
    ``server_tool_use`` holds the provider's server-tool counters and ``source`` the
    provider's raw usage payload.
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = attrs.field(
        default=attrs.Factory(lambda u: u.prompt_tokens + u.completion_tokens, takes_self=True)
    )
    thinking_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    server_tool_use: Mapping[str, Any] = attrs.field(default=_EMPTY, converter=_frozen_mapping)
    source: Any = None

    _repr_html_ = repr_html
    _repr_pretty_ = repr_pretty

    def __add__(self, other: Usage) -> Usage:
        """The usage of two steps together; sources are kept as ``{"steps": [...]}``."""
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
            thinking_tokens=self.thinking_tokens + other.thinking_tokens,
            cache_creation_input_tokens=self.cache_creation_input_tokens
            + other.cache_creation_input_tokens,
            cache_read_input_tokens=self.cache_read_input_tokens + other.cache_read_input_tokens,
            server_tool_use=_add_counters(self.server_tool_use, other.server_tool_use),
            source={"steps": [*_steps_of(self.source), other.source]},
        )


def _steps_of(source: Any) -> list[Any]:
    if isinstance(source, Mapping) and set(source) == {"steps"}:
        return list(source["steps"])
    return [source]


def _parse_arguments(text: str) -> dict[str, Any]:
    if not text or not text.strip():
        return {}
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


class _ToolCallSlots:
    """The storage layout of ToolCall, writable; only ever seen inside :func:`new_tool_call`."""

    __slots__ = ("__weakref__", "arguments", "arguments_str", "id", "index", "name")


@attrs.frozen(kw_only=True)
class ToolCall(_ToolCallSlots):
    """A function call the model asked for.

    ``arguments_str`` is the raw text as streamed; ``arguments`` is that text parsed as a
    JSON object (``{}`` when empty or not a JSON object), unless given explicitly.
    """

    id: str | None = None
    name: str = ""
    arguments: dict[str, Any] = attrs.field(default=None, eq=False)
    arguments_str: str = ""
    index: int = -1

    _repr_html_ = repr_html
    _repr_pretty_ = repr_pretty

    def __attrs_post_init__(self) -> None:
        arguments, arguments_str = _completed(self.arguments, self.arguments_str)
        if arguments is not self.arguments:
            object.__setattr__(self, "arguments", arguments)
        if arguments_str is not self.arguments_str:
            object.__setattr__(self, "arguments_str", arguments_str)


def _completed(arguments: dict[str, Any] | None, arguments_str: str) -> tuple[dict[str, Any], str]:
    """A tool call's arguments and their text, each completed from the other: no arguments
    are the text parsed, and given arguments without text get their JSON as text."""
    if arguments is None:
        return _parse_arguments(arguments_str), arguments_str
    if not arguments_str and arguments:
        return arguments, orjson.dumps(arguments).decode()
    return arguments, arguments_str


class _CitationSlots:
    """The storage layout of Citation, writable; only ever seen inside :func:`new_citation`."""

    __slots__ = (
        "__weakref__",
        "cited_text",
        "document_index",
        "end_index",
        "file_id",
        "raw",
        "start_index",
        "title",
        "type",
        "url",
    )  # fmt: skip


@attrs.frozen(kw_only=True)
class Citation(_CitationSlots):
    """A source the answer cites, with the cited text and its position where given."""

    url: str | None = None
    title: str | None = None
    cited_text: str | None = None
    start_index: int | None = None
    end_index: int | None = None
    document_index: int | None = None
    file_id: str | None = None
    type: str | None = None
    raw: Mapping[str, Any] = attrs.field(default=None, converter=_frozen_mapping)


class _SearchResultSlots:
    """The storage layout of SearchResult, writable; only seen inside :func:`new_search_result`."""

    __slots__ = (
        "__weakref__",
        "date",
        "raw",
        "snippet",
        "title",
        "type",
        "url",
    )  # fmt: skip


@attrs.frozen(kw_only=True)
class SearchResult(_SearchResultSlots):
    """A source a search tool found (not necessarily cited)."""

    url: str | None = None
    title: str | None = None
    snippet: str | None = None
    date: str | None = None
    type: str | None = None
    raw: Mapping[str, Any] = attrs.field(default=None, converter=_frozen_mapping)


@attrs.frozen(kw_only=True)
class TextBlock:
    """A block of text content."""

    text: str = ""


@attrs.frozen(kw_only=True)
class ImageBlock:
    """An image, by ``url`` or base64 ``data`` with its ``mime_type``."""

    url: str | None = None
    data: str | None = None
    mime_type: str | None = None
    id: str | None = None

    def __repr__(self) -> str:
        size = f"{len(self.data)} chars" if self.data else None
        return f"ImageBlock(url={self.url!r}, data={size}, mime_type={self.mime_type!r})"


@attrs.frozen(kw_only=True)
class FileBlock:
    """A file, by ``url``, provider ``file_id`` or base64 ``data``."""

    url: str | None = None
    data: str | None = None
    mime_type: str | None = None
    file_id: str | None = None
    name: str | None = None


class _MessageSlots:
    """The storage layout of AssistantMessage, writable; only seen inside :func:`new_message`."""

    __slots__ = (
        "__weakref__",
        "blocks",
        "citations",
        "metadata",
        "refusal",
        "search_results",
        "text",
        "thinking",
        "tool_calls",
    )  # fmt: skip


@attrs.frozen(kw_only=True)
class AssistantMessage(_MessageSlots):
    """What the assistant said in one step: text, thinking, tool calls, media and sources."""

    text: str = ""
    thinking: str = ""
    tool_calls: tuple[ToolCall, ...] = attrs.field(default=(), converter=_tuple)
    blocks: tuple[Any, ...] = attrs.field(default=(), converter=_tuple)
    citations: tuple[Citation, ...] = attrs.field(default=(), converter=_tuple)
    search_results: tuple[SearchResult, ...] = attrs.field(default=(), converter=_tuple)
    refusal: str = ""
    metadata: Mapping[str, Any] = attrs.field(default=None, converter=_frozen_mapping)

    @property
    def is_thinking(self) -> bool:
        """True when the message holds thinking."""
        return bool(self.thinking)

    @property
    def has_media(self) -> bool:
        """True when the message holds an image or file block."""
        return any(isinstance(b, (ImageBlock, FileBlock)) for b in self.blocks)


_EMPTY_MESSAGE = AssistantMessage()


class _ResponseSlots:
    """The storage layout of ChatResponse, writable; only seen inside :func:`new_response`."""

    __slots__ = (
        "__weakref__",
        "citations",
        "finish_reason",
        "message",
        "model",
        "provider_response_id",
        "search_results",
        "text",
        "thinking",
        "tool_calls",
        "usage",
    )  # fmt: skip


@attrs.frozen(kw_only=True)
class ChatResponse(_ResponseSlots):
    """The aggregated result of a step or of a whole response.

    ``text``, ``thinking``, ``tool_calls``, ``citations`` and ``search_results`` mirror
    ``message``. Build it from a message, or from those fields alone, in which case the
    message is made from them: ``ChatResponse(text="hi").message.text == "hi"``.
    """

    message: AssistantMessage | None = None
    text: str = None  # type: ignore[assignment]
    thinking: str = None  # type: ignore[assignment]
    tool_calls: tuple[ToolCall, ...] = None  # type: ignore[assignment]
    citations: tuple[Citation, ...] = None  # type: ignore[assignment]
    search_results: tuple[SearchResult, ...] = None  # type: ignore[assignment]
    usage: Usage | None = None
    finish_reason: str | None = None
    model: str | None = None
    provider_response_id: str | None = None

    _repr_html_ = repr_html
    _repr_pretty_ = repr_pretty

    def __attrs_post_init__(self) -> None:
        message = self.message
        if message is None:
            given = {name: v for name in _MIRRORED if (v := getattr(self, name)) is not None}
            if given:
                message = AssistantMessage(**given)
                object.__setattr__(self, "message", message)
        source = message if message is not None else _EMPTY_MESSAGE
        set_field = object.__setattr__
        set_field(self, "text", source.text)
        set_field(self, "thinking", source.thinking)
        set_field(self, "tool_calls", source.tool_calls)
        set_field(self, "citations", source.citations)
        set_field(self, "search_results", source.search_results)

    @property
    def is_empty(self) -> bool:
        """True when there is no text, thinking, tool call, block or refusal."""
        m = self.message
        return m is None or not (m.text or m.thinking or m.tool_calls or m.blocks or m.refusal)


_MIRRORED = ("text", "thinking", "tool_calls", "citations", "search_results")


def new_usage(
    prompt_tokens: int = 0,
    completion_tokens: int = 0,
    total_tokens: int | None = None,
    thinking_tokens: int = 0,
    cache_creation_input_tokens: int = 0,
    cache_read_input_tokens: int = 0,
    server_tool_use: Mapping[str, Any] | None = None,
    source: Any = None,
) -> Usage:
    """``Usage(...)`` with its fields by position (``total_tokens`` None: prompt +
    completion), built at a fraction of the keyword constructor's cost."""
    this: Any = _UsageSlots()
    this.prompt_tokens = prompt_tokens
    this.completion_tokens = completion_tokens
    this.total_tokens = prompt_tokens + completion_tokens if total_tokens is None else total_tokens
    this.thinking_tokens = thinking_tokens
    this.cache_creation_input_tokens = cache_creation_input_tokens
    this.cache_read_input_tokens = cache_read_input_tokens
    this.server_tool_use = _frozen_mapping(server_tool_use)
    this.source = source
    this.__class__ = Usage
    return this  # type: ignore[no-any-return]


def new_message(
    text: str = "",
    thinking: str = "",
    tool_calls: Iterable[ToolCall] | None = (),
    blocks: Iterable[Any] | None = (),
    citations: Iterable[Citation] | None = (),
    search_results: Iterable[SearchResult] | None = (),
    refusal: str = "",
    metadata: Mapping[str, Any] | None = None,
) -> AssistantMessage:
    """``AssistantMessage(...)`` with its fields by position, built at a fraction of the
    keyword constructor's cost."""
    this: Any = _MessageSlots()
    this.text = text
    this.thinking = thinking
    this.tool_calls = tool_calls if tool_calls.__class__ is tuple else _tuple(tool_calls)
    this.blocks = blocks if blocks.__class__ is tuple else _tuple(blocks)
    this.citations = citations if citations.__class__ is tuple else _tuple(citations)
    this.search_results = (
        search_results if search_results.__class__ is tuple else _tuple(search_results)
    )
    this.refusal = refusal
    this.metadata = _frozen_mapping(metadata)
    this.__class__ = AssistantMessage
    return this  # type: ignore[no-any-return]


def new_response(
    message: AssistantMessage | None = None,
    usage: Usage | None = None,
    finish_reason: str | None = None,
    model: str | None = None,
    provider_response_id: str | None = None,
) -> ChatResponse:
    """``ChatResponse(message=message, ...)`` by position, built at a fraction of the
    keyword constructor's cost; the mirrored fields come from ``message``."""
    source = message if message is not None else _EMPTY_MESSAGE
    this: Any = _ResponseSlots()
    this.message = message
    this.text = source.text
    this.thinking = source.thinking
    this.tool_calls = source.tool_calls
    this.citations = source.citations
    this.search_results = source.search_results
    this.usage = usage
    this.finish_reason = finish_reason
    this.model = model
    this.provider_response_id = provider_response_id
    this.__class__ = ChatResponse
    return this  # type: ignore[no-any-return]


def new_citation(
    url: str | None = None,
    title: str | None = None,
    cited_text: str | None = None,
    start_index: int | None = None,
    end_index: int | None = None,
    document_index: int | None = None,
    file_id: str | None = None,
    type: str | None = None,
    raw: Mapping[str, Any] | None = None,
) -> Citation:
    """``Citation(...)`` with its fields by position, built at a fraction of the keyword
    constructor's cost."""
    this: Any = _CitationSlots()
    this.url = url
    this.title = title
    this.cited_text = cited_text
    this.start_index = start_index
    this.end_index = end_index
    this.document_index = document_index
    this.file_id = file_id
    this.type = type
    this.raw = _frozen_mapping(raw)
    this.__class__ = Citation
    return this  # type: ignore[no-any-return]


def new_search_result(
    url: str | None = None,
    title: str | None = None,
    snippet: str | None = None,
    date: str | None = None,
    type: str | None = None,
    raw: Mapping[str, Any] | None = None,
) -> SearchResult:
    """``SearchResult(...)`` with its fields by position, built at a fraction of the keyword
    constructor's cost."""
    this: Any = _SearchResultSlots()
    this.url = url
    this.title = title
    this.snippet = snippet
    this.date = date
    this.type = type
    this.raw = _frozen_mapping(raw)
    this.__class__ = SearchResult
    return this  # type: ignore[no-any-return]


def new_tool_call(
    id: str | None = None,
    name: str = "",
    arguments: dict[str, Any] | None = None,
    arguments_str: str = "",
    index: int = -1,
) -> ToolCall:
    """``ToolCall(...)`` with its fields by position, built at a fraction of the keyword
    constructor's cost; ``arguments`` and ``arguments_str`` complete each other as there."""
    arguments, arguments_str = _completed(arguments, arguments_str)
    return _tool_call(id, name, arguments, arguments_str, index)


def new_partial_tool_call(
    id: str | None, name: str, arguments: dict[str, Any], index: int
) -> ToolCall:
    """A call whose arguments are still streaming: ``arguments`` as parsed so far and an
    empty ``arguments_str`` (the text so far is in the ARGS_DELTA events; a copy of it in
    every snapshot would make a long argument cost quadratic time)."""
    return _tool_call(id, name, arguments, "", index)


def _tool_call(
    id: str | None, name: str, arguments: dict[str, Any], arguments_str: str, index: int
) -> ToolCall:
    this: Any = _ToolCallSlots()
    this.id = id
    this.name = name
    this.arguments = arguments
    this.arguments_str = arguments_str
    this.index = index
    this.__class__ = ToolCall
    return this  # type: ignore[no-any-return]
