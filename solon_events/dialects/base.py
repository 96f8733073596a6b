"""The dialect interface and the helpers every dialect shares.

A dialect is a sans-I/O translator: :meth:`ChatDialect.build_request` turns a
:class:`~solon_events.messages.ChatRequest` into the provider's HTTP request, and
:meth:`ChatDialect.parse_frame` turns one decoded frame into events through a
:class:`ChatStreamContext`. Logic two dialects would share lives here.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, TypeVar

import attrs
import orjson

from ..errors import ChatError, ChatProtocolError, ProviderError
from ..events import (
    EMPTY_MAPPING,
    TYPES,
    ChatEvent,
    ChatEventType,
    _EventSlots,
    _read_only,
    _snapshot,
)
from ..messages import ChatRequest
from ..results import (
    ChatResponse,
    Citation,
    SearchResult,
    ToolCall,
    Usage,
    new_tool_call,
    new_usage,
)

__all__ = [
    "ChatDialect",
    "ChatStreamContext",
    "HttpRequest",
    "ToolCallAssembler",
    "data_url",
    "request_headers",
    "get_dialect",
    "make_usage",
    "plain_json",
    "provider_error_message",
]

_T = TYPES
_S = TypeVar("_S")


@attrs.frozen(kw_only=True)
class HttpRequest:
    """What to POST: ``url``, ``headers`` and a JSON ``body``.

    The repr hides header values, so an API key never reaches a log line.
    """

    url: str
    headers: Mapping[str, str] = attrs.field(factory=dict)
    body: Mapping[str, Any] = attrs.field(factory=dict)

    def body_bytes(self) -> bytes:
        """The body encoded as JSON."""
        return orjson.dumps(self.body)

    def __repr__(self) -> str:
        return f"HttpRequest(url={self.url!r}, headers=<{len(self.headers)} hidden>, body=...)"


class ChatStreamContext:
    """What a dialect sees while it parses one step's frames.

    ``emit(event)`` sends an event on; ``event(type, **fields)`` builds one pre-filled with
    ``response_id``, ``provider_response_id`` and ``step``; ``finish(reason)`` records the
    provider's completion signal; ``fail(error)`` records a provider failure, which ends
    the stream after the current frame; ``state`` is the dialect's own scratch dict.
    """

    __slots__ = (
        "_emit",
        "_on_next_response",
        "failure",
        "finish_reason",
        "finished",
        "frame_number",
        "model",
        "provider_response_id",
        "response_id",
        "state",
        "step",
    )

    def __init__(
        self,
        emit: Callable[[ChatEvent], None],
        *,
        step: int = 0,
        response_id: str | None = None,
        on_next_response: Callable[[], None] | None = None,
    ) -> None:
        self._emit = emit
        self.response_id = response_id
        self.provider_response_id: str | None = None
        self.step = step
        self.state: dict[str, Any] = {}
        self.model: str | None = None
        self.finished = False
        self.finish_reason: str | None = None
        self.failure: ChatError | None = None
        self.frame_number = 0
        self._on_next_response = on_next_response

    def emit(self, event: ChatEvent) -> None:
        """Send ``event`` downstream (and into the step's accumulator)."""
        self._emit(event)

    def event(
        self,
        type: ChatEventType,
        text: str | None = None,
        index: int = -1,
        item_id: str | None = None,
        tool_call_id: str | None = None,
        tool_call: ToolCall | None = None,
        block: Any = None,
        citation: Citation | None = None,
        search_result: SearchResult | None = None,
        raw_type: str | None = None,
        sub_type: str | None = None,
        raw: Mapping[str, Any] | None = None,
        attrs: Mapping[str, Any] | None = None,
        usage: Usage | None = None,
        response: ChatResponse | None = None,
        error: BaseException | None = None,
    ) -> ChatEvent:
        """A new event of ``type`` carrying this step's ids (step, response ids) and the
        given fields."""
        return ChatEvent(
            type,
            text=text,
            response=response,
            usage=usage,
            error=error,
            step=self.step,
            index=index,
            response_id=self.response_id,
            provider_response_id=self.provider_response_id,
            item_id=item_id,
            tool_call_id=tool_call_id,
            tool_call=tool_call,
            block=block,
            citation=citation,
            search_result=search_result,
            raw_type=raw_type,
            sub_type=sub_type,
            raw=raw,
            attrs=attrs,
        )

    def send(
        self,
        type: ChatEventType,
        text: str | None = None,
        index: int = -1,
        item_id: str | None = None,
        tool_call_id: str | None = None,
        tool_call: ToolCall | None = None,
        block: Any = None,
        citation: Citation | None = None,
        search_result: SearchResult | None = None,
        raw_type: str | None = None,
        sub_type: str | None = None,
        raw: Mapping[str, Any] | None = None,
        attrs: Mapping[str, Any] | None = None,
        usage: Usage | None = None,
        response: ChatResponse | None = None,
        error: BaseException | None = None,
    ) -> None:
        """Build an event as :meth:`event` does and :meth:`emit` it (the hot path).

        The event is built here, as ``ChatEvent.__new__`` builds it, rather than by a call
        to it: one call less for every event of every stream.
        """
        this: Any = _EventSlots()
        this.type = type
        this.text = text
        this.response = response
        this.usage = usage
        this.error = error
        this.step = self.step
        this.index = index
        this.response_id = self.response_id
        this.provider_response_id = self.provider_response_id
        this.item_id = item_id
        this.tool_call_id = tool_call_id
        this.tool_call = tool_call
        this.block = block
        this.citation = citation
        this.search_result = search_result
        this.raw_type = raw_type
        this.sub_type = sub_type
        if not raw:
            this.raw = EMPTY_MAPPING
        elif raw.__class__ is dict:
            this.raw = MappingProxyType(raw)
        else:
            this.raw = _read_only(raw)
        this.attrs = EMPTY_MAPPING if not attrs else _snapshot(attrs)
        this.__class__ = ChatEvent
        self._emit(this)

    def finish(self, reason: str | None = None) -> None:
        """Record the provider's completion signal; a later non-None reason wins."""
        self.finished = True
        if reason is not None:
            self.finish_reason = reason

    def next_response(self) -> None:
        """Another provider response starts in the same stream (a recorded tool loop).

        The current step ends (its completion signal must have come) and the next one
        begins: ``step`` goes up by one and ``finished`` / ``finish_reason`` are reset.
        """
        if self._on_next_response is not None:
            self._on_next_response()
        self.step += 1
        self.finished = False
        self.finish_reason = None
        self.provider_response_id = None
        self.model = None

    def state_of(self, key: str, factory: Callable[[], _S]) -> _S:
        """The dialect's state object under ``key`` in :attr:`state`, made on first use."""
        value = self.state.get(key)
        if value is None:
            value = self.state[key] = factory()
        return value  # type: ignore[no-any-return]

    def fail(self, error: ChatError | Mapping[str, Any] | str) -> None:
        """Record a provider failure: a ChatError, the provider's error fields, or a message."""
        if isinstance(error, ChatError):
            self.failure = error
        elif isinstance(error, Mapping):
            self.failure = ProviderError(
                f"provider error: {provider_error_message(error) or 'no message'}",
                provider_error=error,
            )
        else:
            self.failure = ProviderError(f"provider error: {error}")


class ChatDialect:
    """A provider's wire format: request building and frame parsing (sans-I/O).

    Subclasses set :attr:`name` and implement :meth:`build_request` and
    :meth:`parse_frame`. A dialect sends each piece of content exactly once.
    """

    name: str = ""
    """The name :func:`get_dialect` knows this dialect by."""

    def build_request(
        self,
        request: ChatRequest,
        *,
        api_url: str,
        api_key: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> HttpRequest:
        """The provider's streaming HTTP request for ``request``."""
        raise NotImplementedError

    def parse_frame(self, ctx: ChatStreamContext, frame: Any) -> None:
        """Translate one decoded frame (usually a JSON object) into events on ``ctx``.

        ``frame`` is a plain JSON value: dicts, lists, str, int, float, bool and None only
        (the parse stage copies any other mapping into dicts first).
        """
        raise NotImplementedError

    def parse_done(self, ctx: ChatStreamContext) -> None:
        """The ``[DONE]`` sentinel arrived: by default, the stream is complete."""
        ctx.finish()

    def end_of_stream(self, ctx: ChatStreamContext) -> None:
        """The source ended: close whatever the dialect still holds open (default: nothing)."""

    def error_message(self, body: Any) -> str | None:
        """The provider's own message in an HTTP error body, if there is one."""
        return provider_error_message(body)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


def provider_error_message(body: Any) -> str | None:
    """The message of an error payload in any of the common shapes, or None.

    Understands ``{"error": {"message": ...}}``, ``{"error": "..."}``, ``{"message": ...}``
    and lists of those (Gemini sends a one-element list).
    """
    if isinstance(body, list) and body:
        return provider_error_message(body[0])
    if not isinstance(body, Mapping):
        return None
    error = body.get("error")
    if isinstance(error, Mapping):
        message = error.get("message") or error.get("type") or error.get("code")
        return str(message) if message is not None else None
    if isinstance(error, str) and error:
        return error
    for key in ("message", "detail", "error_message"):
        value = body.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def plain_json(value: Any) -> Any:
    """``value`` with every mapping made a dict and every tuple a list, recursively.

    For the JSON encoder (read-only mappings in tool schemas) and for payloads handed to
    :meth:`ChatDialect.parse_frame`, which only ever sees plain JSON values.
    """
    if isinstance(value, Mapping):
        return {key: plain_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_json(item) for item in value]
    return value


def request_headers(
    defaults: Mapping[str, str], extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """JSON request headers: ``Content-Type``, then ``defaults`` (auth, versions), then
    ``extra``, which replaces a default of the same name whatever its letter case."""
    headers = {"Content-Type": "application/json", **defaults}
    if extra:
        replaced = {name.lower() for name in extra}
        headers = {k: v for k, v in headers.items() if k.lower() not in replaced}
        headers.update(extra)
    return headers


def data_url(data: str, mime_type: str | None, default: str) -> str:
    """``data`` (base64) as a ``data:`` URL; a value that already is one is kept."""
    return data if data.startswith("data:") else f"data:{mime_type or default};base64,{data}"


def make_usage(
    *,
    prompt_tokens: int | None = 0,
    completion_tokens: int | None = 0,
    total_tokens: int | None = None,
    thinking_tokens: int | None = 0,
    cache_read_input_tokens: int | None = 0,
    cache_creation_input_tokens: int | None = 0,
    server_tool_use: Mapping[str, Any] | None = None,
    source: Any = None,
) -> Usage:
    """A :class:`Usage` from provider numbers, any of which may be missing (None).

    ``total_tokens`` defaults to prompt + completion when the provider gives none.
    """
    prompt = prompt_tokens or 0
    completion = completion_tokens or 0
    return new_usage(
        prompt,
        completion,
        total_tokens if total_tokens else prompt + completion,
        thinking_tokens or 0,
        cache_creation_input_tokens or 0,
        cache_read_input_tokens or 0,
        server_tool_use,
        source,
    )


class ToolCallAssembler:
    """Streams tool calls whose fragments arrive keyed by a provider key (index or item id).

    ``start`` opens a call, ``delta`` adds an argument fragment, ``end`` closes it with the
    whole :class:`ToolCall`; ``end_all`` closes what is still open. Each call gets the
    next position (0, 1, ...) as its event ``index`` unless the provider gives one.
    """

    __slots__ = ("_count", "_open")

    def __init__(self) -> None:
        self._open: dict[Any, list[Any]] = {}
        self._count = 0

    def __contains__(self, key: Any) -> bool:
        return key in self._open

    def start(
        self,
        ctx: ChatStreamContext,
        key: Any,
        *,
        id: str | None,
        name: str,
        index: int | None = None,
        raw: Mapping[str, Any] | None = None,
        item_id: str | None = None,
    ) -> None:
        """Open the call ``key`` and emit TOOL_CALL_START."""
        position = self._count if index is None else index
        self._count += 1
        self._open[key] = [id, name, position, [], item_id]
        ctx.send(
            _T.TOOL_CALL_START,
            index=position,
            tool_call_id=id,
            item_id=item_id,
            tool_call=new_tool_call(id, name, {}, "", position),
            raw=raw,
        )

    def delta(
        self,
        ctx: ChatStreamContext,
        key: Any,
        fragment: str,
        *,
        raw: Mapping[str, Any] | None = None,
    ) -> None:
        """Emit TOOL_CALL_ARGS_DELTA for the open call ``key``; empty fragments are skipped."""
        if not fragment:
            return
        call = self._open.get(key)
        if call is None:
            raise ChatProtocolError(f"arguments for tool call {key!r} that was never started")
        call[3].append(fragment)
        ctx.send(
            _T.TOOL_CALL_ARGS_DELTA,
            index=call[2],
            tool_call_id=call[0],
            item_id=call[4],
            text=fragment,
            raw=raw,
        )

    def end(
        self,
        ctx: ChatStreamContext,
        key: Any,
        *,
        arguments_str: str | None = None,
        raw: Mapping[str, Any] | None = None,
    ) -> ToolCall | None:
        """Close the call ``key`` with TOOL_CALL_END; ``arguments_str`` overrides the fragments."""
        call = self._open.pop(key, None)
        if call is None:
            return None
        id, name, position, fragments, item_id = call
        text = arguments_str if arguments_str is not None else "".join(fragments)
        tool_call = new_tool_call(id, name, None, text, position)
        ctx.send(
            _T.TOOL_CALL_END,
            index=position,
            tool_call_id=id,
            item_id=item_id,
            tool_call=tool_call,
            raw=raw,
        )
        return tool_call

    def end_all(self, ctx: ChatStreamContext) -> None:
        """Close every call still open, in the order they were opened."""
        for key in list(self._open):
            self.end(ctx, key)


_DIALECTS: dict[str, str] = {
    "openai": "solon_events.dialects.openai:OpenAIDialect",
    "openai-responses": "solon_events.dialects.openai_responses:OpenAIResponsesDialect",
    "anthropic": "solon_events.dialects.anthropic:AnthropicDialect",
    "gemini": "solon_events.dialects.gemini:GeminiDialect",
    "ollama": "solon_events.dialects.ollama:OllamaDialect",
}


def dialect_names() -> tuple[str, ...]:
    """The names :func:`get_dialect` accepts."""
    return tuple(_DIALECTS)


def get_dialect(name: str | ChatDialect) -> ChatDialect:
    """The dialect called ``name`` (a ChatDialect instance is returned as it is).

    Raises ``ValueError`` naming the known dialects for an unknown name.
    """
    if isinstance(name, ChatDialect):
        return name
    dialect_class = _DIALECT_CLASSES.get(name) if isinstance(name, str) else None
    if dialect_class is None:
        dialect_class = _DIALECT_CLASSES[name] = _import_dialect(name)
    return dialect_class()


_DIALECT_CLASSES: dict[str, type[ChatDialect]] = {}


def _import_dialect(name: object) -> type[ChatDialect]:
    target = _DIALECTS.get(name) if isinstance(name, str) else None
    if target is None:
        known = ", ".join(repr(n) for n in _DIALECTS)
        raise ValueError(f"unknown dialect {name!r}; known dialects: {known}")
    module_name, _, class_name = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise ValueError(f"dialect {name!r} is not available yet") from exc
    dialect_class: type[ChatDialect] = getattr(module, class_name)
    return dialect_class
