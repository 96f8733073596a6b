"""Aggregated results: usage, tool calls, sources, content blocks, messages, responses.

Every class is a frozen attrs value built by keyword; sequences are tuples and mappings
are read-only, so a result handed to a subscriber cannot drift.

The pipeline builds a :class:`Usage`, :class:`AssistantMessage` and :class:`ChatResponse`
for every step, with :func:`new_usage`, :func:`new_message` and :func:`new_response`, and
the dialects build sources and calls with :func:`new_citation`, :func:`new_search_result`
and :func:`new_tool_call`: builders generated from each class's field list
(:func:`~solon_events.event_model.values.fast_builder`), as
:class:`~solon_events.event_model.events.ChatEvent`'s
constructor is. Every value can be copied and pickled
(:class:`~solon_events.event_model.values.FrozenValue`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

import attrs
import orjson

from .display_hooks import repr_html, repr_pretty
from .finish import FinishReason, finish_reason_of
from .pricing import Cost, price
from .values import (
    EMPTY_MAPPING,
    FrozenValue,
    fast_builder,
    read_held,
    read_through,
    snapshot,
    writable_base,
)

if TYPE_CHECKING:
    from .approvals import PendingApproval

__all__ = [
    "AssistantMessage",
    "Attempt",
    "CachedAnswer",
    "ChatResponse",
    "Citation",
    "Cost",
    "FileBlock",
    "ImageBlock",
    "SearchResult",
    "TextBlock",
    "ToolCall",
    "Usage",
    "UsageOutcome",
    "UsageReport",
    "new_citation",
    "new_message",
    "new_partial_tool_call",
    "new_response",
    "new_search_result",
    "new_tool_call",
    "new_usage",
    "with_usage",
]


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


@read_through("source", read_held)
@attrs.frozen(kw_only=True)
@writable_base
class Usage(FrozenValue):
    """Token accounting of one step, or of a whole response when steps are added.

    ``prompt_tokens`` counts every input token, cached ones included;
    ``completion_tokens`` counts every output token, thinking included;
    ``total_tokens`` is the provider's total, or prompt + completion.
    ``server_tool_use`` holds the provider's server-tool counters and ``source`` the
    provider's raw usage payload. A dialect may have it hold the payload as part of its
    frame's JSON text (:func:`~solon_events.event_model.values.held_member`), decoded on each read
    (a
    new value, equal every time), so that kept usage gives the garbage collector nothing
    to walk.

    ``estimated`` is True when some of the counts are estimates rather than the
    provider's (a step the provider sent no usage for, or output streamed after its last
    count: see :mod:`solon_events.client.estimate`); a sum is estimated when any part is. The
    displays show such a usage with "≈". :meth:`cost` prices it.
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = attrs.field(
        default=attrs.Factory(lambda u: u.prompt_tokens + u.completion_tokens, takes_self=True)
    )
    thinking_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    server_tool_use: Mapping[str, Any] = attrs.field(default=EMPTY_MAPPING, converter=snapshot)
    source: Any = None
    estimated: bool = False

    _repr_html_ = repr_html
    _repr_pretty_ = repr_pretty

    def __add__(self, other: Usage) -> Usage:
        """The usage of two steps together; sources are kept as ``{"steps": [...]}``; the
        sum is ``estimated`` when either is."""
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
            estimated=self.estimated or other.estimated,
        )

    def cost(self, model: str, provider: str | None = None) -> Cost:
        """What this usage costs with ``model`` of ``provider``, priced by the
        ``genai-prices`` package (``pip install 'solon-events[cost]'``).

        ``provider`` is a genai-prices provider id (``"openai"``, ``"anthropic"``,
        ``"google"``, ``"aws"``, ...), a dialect name (mapped: ``"gemini"`` is
        ``"google"``, ``"bedrock"`` is ``"aws"``) or None to let genai-prices find the
        provider from the model. A model it has no price for gives a :class:`Cost` whose
        ``total`` is None and whose ``reason`` says why: never a guess. See
        :func:`solon_events.event_model.pricing.price`.
        """
        return price(self, model, provider)


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


@attrs.frozen(kw_only=True)
@writable_base
class ToolCall(FrozenValue):
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


@attrs.frozen(kw_only=True)
@writable_base
class Citation(FrozenValue):
    """A source the answer cites, with the cited text and its position where given."""

    url: str | None = None
    title: str | None = None
    cited_text: str | None = None
    start_index: int | None = None
    end_index: int | None = None
    document_index: int | None = None
    file_id: str | None = None
    type: str | None = None
    raw: Mapping[str, Any] = attrs.field(default=None, converter=snapshot)


@attrs.frozen(kw_only=True)
@writable_base
class SearchResult(FrozenValue):
    """A source a search tool found (not necessarily cited)."""

    url: str | None = None
    title: str | None = None
    snippet: str | None = None
    date: str | None = None
    type: str | None = None
    raw: Mapping[str, Any] = attrs.field(default=None, converter=snapshot)


@attrs.frozen(kw_only=True)
class TextBlock(FrozenValue):
    """A block of text content."""

    text: str = ""


@attrs.frozen(kw_only=True)
class ImageBlock(FrozenValue):
    """An image, by ``url`` or base64 ``data`` with its ``mime_type``."""

    url: str | None = None
    data: str | None = None
    mime_type: str | None = None
    id: str | None = None

    def __repr__(self) -> str:
        size = f"{len(self.data)} chars" if self.data else None
        return f"ImageBlock(url={self.url!r}, data={size}, mime_type={self.mime_type!r})"


@attrs.frozen(kw_only=True)
class FileBlock(FrozenValue):
    """A file, by ``url``, provider ``file_id`` or base64 ``data``."""

    url: str | None = None
    data: str | None = None
    mime_type: str | None = None
    file_id: str | None = None
    name: str | None = None


@attrs.frozen(kw_only=True)
@writable_base
class AssistantMessage(FrozenValue):
    """What the assistant said in one step: text, thinking, tool calls, media and sources."""

    text: str = ""
    thinking: str = ""
    tool_calls: tuple[ToolCall, ...] = attrs.field(default=(), converter=_tuple)
    blocks: tuple[Any, ...] = attrs.field(default=(), converter=_tuple)
    citations: tuple[Citation, ...] = attrs.field(default=(), converter=_tuple)
    search_results: tuple[SearchResult, ...] = attrs.field(default=(), converter=_tuple)
    refusal: str = ""
    metadata: Mapping[str, Any] = attrs.field(default=None, converter=snapshot)

    @property
    def is_thinking(self) -> bool:
        """True when the message holds thinking."""
        return bool(self.thinking)

    @property
    def has_media(self) -> bool:
        """True when the message holds an image or file block."""
        return any(isinstance(b, (ImageBlock, FileBlock)) for b in self.blocks)


_EMPTY_MESSAGE = AssistantMessage()


@attrs.frozen(kw_only=True)
class Attempt(FrozenValue):
    """One model's attempt at a response asked of several (a fallback chain, a hedge, a
    race: :mod:`solon_events.client.routing`), as :attr:`ChatResponse.attempts` lists them.

    ``model`` is the member's label; ``outcome`` how the attempt ended: ``"answered"``
    (its answer is the response's), ``"failed"`` (``error``, redacted, says why),
    ``"cancelled"`` (stopped because another answered first, or the response was
    disposed) or ``"skipped"`` (never asked: a :class:`~solon_events.Router`'s deployment
    cooling down, ``error`` saying since what and for how long); ``usage`` is what the
    provider reported for it before it ended (None when it reported nothing: a refused
    request, or one stopped before its usage came).
    """

    model: str
    outcome: Literal["answered", "failed", "cancelled", "skipped"]
    error: BaseException | None = None
    usage: Usage | None = None


@attrs.frozen(kw_only=True)
class CachedAnswer(FrozenValue):
    """Where a response that no provider was asked for came from (see
    :mod:`solon_events.client.cache`): :attr:`ChatResponse.cached` and
    :attr:`UsageReport.cached`.

    ``usage`` and ``cost`` are what the original answer used and cost when it was asked
    for (kept apart: the cached response's own ``usage`` is zero and its ``cost`` zero,
    since nothing was billed again); ``created`` is when the original answer started
    (Unix time); ``shared`` is True when the answer was shared with an identical request
    in flight (single flight) rather than read from the cache's store; ``key`` is the
    cache key (a SHA-256 hex digest of the request, never of a secret).
    """

    usage: Usage | None = None
    cost: Cost | None = None
    created: float = 0.0
    shared: bool = False
    key: str = ""

    _repr_html_ = repr_html
    _repr_pretty_ = repr_pretty


@attrs.frozen(kw_only=True)
@writable_base
class ChatResponse(FrozenValue):
    """The aggregated result of a step or of a whole response.

    ``text``, ``thinking``, ``tool_calls``, ``citations`` and ``search_results`` mirror
    ``message``. Build it from a message, or from those fields alone, in which case the
    message is made from them: ``ChatResponse(text="hi").message.text == "hi"``.

    ``pending_approval`` is set on a response that paused because tool calls wait for a
    person's approval: which calls, and what it takes to continue
    (:class:`~solon_events.event_model.approvals.PendingApproval`).

    ``usage`` is the step's (a STEP_END's response) or the whole response's (RESPONSE_END,
    ABORT, ERROR: every step's, so far); ``cost`` its price, per step and in total, when
    the model was asked to price (``ChatModel(..., pricing=True)``), else None.
    """

    message: AssistantMessage | None = None
    text: str = None  # type: ignore[assignment]
    thinking: str = None  # type: ignore[assignment]
    tool_calls: tuple[ToolCall, ...] = None  # type: ignore[assignment]
    citations: tuple[Citation, ...] = None  # type: ignore[assignment]
    search_results: tuple[SearchResult, ...] = None  # type: ignore[assignment]
    usage: Usage | None = None
    finish_reason: str | None = None
    finish: FinishReason | None = attrs.field(default=None, converter=finish_reason_of)
    """Why the response ended, in one vocabulary across providers (``stop``, ``length``,
    ``tool_calls``, ``content_filter``, ``error``, ``other``:
    :mod:`solon_events.event_model.finish`),
    beside the provider's own word in ``finish_reason``."""
    model: str | None = None
    provider_response_id: str | None = None
    pending_approval: PendingApproval | None = None
    cost: Cost | None = None
    attempts: tuple[Attempt, ...] = ()
    """A response asked of several models: every attempt started, in the members' order
    (empty for one model's); ``usage`` is then the sum of their usage."""
    output: Any = None
    """The structured answer asked for (``prompt(..., output=...)``), validated: an
    instance of the type given, or the JSON value for a schema; None otherwise."""
    cached: CachedAnswer | None = None
    """Set when the response was not asked of a provider: replayed from a cache, or shared
    with an identical request in flight (:class:`CachedAnswer`: the original usage and
    cost, kept apart from this response's ``usage`` and ``cost``, which are zero)."""

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


UsageOutcome = Literal["completed", "failed", "aborted", "cancelled"]
"""How a response ended, as a :class:`UsageReport` says."""


@attrs.frozen(kw_only=True)
class UsageReport:
    """The usage of one response, however it ended: what ``ChatModel(on_usage=...)`` and
    ``prompt.on_usage(...)`` are called with, once per response, after its end.

    ``outcome`` is ``"completed"`` (RESPONSE_END), ``"failed"`` (ERROR; ``error`` is the
    failure, as the stream gave it), ``"aborted"`` (the provider's ABORT) or
    ``"cancelled"`` (disposed, ``take(n)``, ``break`` out of ``astream()``: no event may
    follow, so this report is the one place its usage is told). ``steps`` holds each
    step's usage in order (None for a step the provider sent no usage for and that was not
    estimated), the step cut short by a cancellation included. ``retried`` holds the
    estimated usage of each request that was retried after the provider had accepted it
    (answered with a stream) and before its first frame: its input, which the provider
    may have billed (a request refused with an error status, or never connected, is not
    billed and not listed). ``usage`` is the sum of both (None when none has one): what
    the response was billed for, equal to its RESPONSE_END's usage unless a request was
    retried so; ``cost`` is the sum of their prices, when priced. ``response_id`` is the
    response's, ``model`` the model asked for.
    """

    response_id: str | None = None
    model: str | None = None
    outcome: UsageOutcome = "completed"
    usage: Usage | None = None
    steps: tuple[Usage | None, ...] = attrs.field(default=(), converter=_tuple)
    retried: tuple[Usage, ...] = attrs.field(default=(), converter=_tuple)
    cost: Cost | None = None
    error: BaseException | None = None
    cached: CachedAnswer | None = None
    """Set when the response was not asked of a provider (a cache hit, or an answer shared
    with an identical request in flight): then ``usage`` is zero and ``cost`` zero (or
    None when not priced), and this holds the original usage (:class:`CachedAnswer`). A
    limit or a budget counts nothing for such a report."""


_build_usage = fast_builder(Usage)
_build_message = fast_builder(AssistantMessage)
_build_response = fast_builder(ChatResponse)
_build_tool_call = fast_builder(ToolCall)

new_citation = fast_builder(Citation)
"""``Citation(...)`` with its fields by position, at a fraction of the keyword constructor's
cost."""

new_search_result = fast_builder(SearchResult)
"""``SearchResult(...)`` with its fields by position, at a fraction of the keyword
constructor's cost."""

new_message = fast_builder(AssistantMessage)
"""``AssistantMessage(...)`` with its fields by position, at a fraction of the keyword
constructor's cost."""


def new_usage(
    prompt_tokens: int = 0,
    completion_tokens: int = 0,
    total_tokens: int | None = None,
    thinking_tokens: int = 0,
    cache_creation_input_tokens: int = 0,
    cache_read_input_tokens: int = 0,
    server_tool_use: Mapping[str, Any] | None = None,
    source: Any = None,
    estimated: bool = False,
) -> Usage:
    """``Usage(...)`` with its fields by position (``total_tokens`` None: prompt +
    completion), at a fraction of the keyword constructor's cost."""
    if total_tokens is None:
        total_tokens = prompt_tokens + completion_tokens
    return _build_usage(
        prompt_tokens,
        completion_tokens,
        total_tokens,
        thinking_tokens,
        cache_creation_input_tokens,
        cache_read_input_tokens,
        server_tool_use,
        source,
        estimated,
    )


def new_response(
    message: AssistantMessage | None = None,
    usage: Usage | None = None,
    finish_reason: str | None = None,
    model: str | None = None,
    provider_response_id: str | None = None,
    pending_approval: PendingApproval | None = None,
    cost: Cost | None = None,
    finish: FinishReason | None = None,
) -> ChatResponse:
    """``ChatResponse(message=message, ...)`` by position, at a fraction of the keyword
    constructor's cost; the mirrored fields come from ``message``."""
    source = message if message is not None else _EMPTY_MESSAGE
    return _build_response(
        message,
        source.text,
        source.thinking,
        source.tool_calls,
        source.citations,
        source.search_results,
        usage,
        finish_reason,
        finish,
        model,
        provider_response_id,
        pending_approval,
        cost,
    )


def new_tool_call(
    id: str | None = None,
    name: str = "",
    arguments: dict[str, Any] | None = None,
    arguments_str: str = "",
    index: int = -1,
) -> ToolCall:
    """``ToolCall(...)`` with its fields by position, at a fraction of the keyword
    constructor's cost; ``arguments`` and ``arguments_str`` complete each other as there."""
    arguments, arguments_str = _completed(arguments, arguments_str)
    return _build_tool_call(id, name, arguments, arguments_str, index)


def new_partial_tool_call(
    id: str | None, name: str, arguments: dict[str, Any], index: int
) -> ToolCall:
    """A call whose arguments are still streaming: ``arguments`` as parsed so far and an
    empty ``arguments_str`` (the text so far is in the ARGS_DELTA events; a copy of it in
    every snapshot would make a long argument cost quadratic time)."""
    return _build_tool_call(id, name, arguments, "", index)


def with_usage(response: ChatResponse, usage: Usage | None, cost: Cost | None) -> ChatResponse:
    """``response`` with ``usage`` and ``cost`` in place of its own (``response`` itself
    when they are its own already)."""
    if response.usage is usage and response.cost is cost:
        return response
    made = new_response(
        response.message,
        usage,
        response.finish_reason,
        response.model,
        response.provider_response_id,
        response.pending_approval,
        cost,
        response.finish,
    )
    if response.output is not None:  # a structured answer's, checked
        made = attrs.evolve(made, output=response.output)
    return made
