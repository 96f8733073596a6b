"""The OpenAI Chat Completions dialect (``"openai"``) and every server that speaks it.

Besides OpenAI itself this reads the variations of the compatible servers: DeepSeek, Kimi,
xAI and Qwen ``reasoning_content``; ``reasoning`` (OpenRouter, vLLM, Groq); Mistral content
arrays of ``text`` and ``thinking`` parts and tool calls sent whole without an ``index``;
Perplexity's top-level ``citations`` and ``search_results``, which every frame repeats;
usage in the finish chunk, in a usage-only final chunk with empty ``choices``, or in
Groq's ``x_groq``.

Only the first choice (``index`` 0) is read: requests with ``n > 1`` are not supported and
the other choices are ignored.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import orjson

from ..event_model.errors import ChatProtocolError
from ..event_model.events import EVENT_TYPES
from ..event_model.messages import ChatRequest, OutputFormat, OutputMode
from ..event_model.results import Citation, SearchResult, new_citation, new_search_result
from .base import ChatDialect
from .context import ChatStreamContext
from .openai_request import PrefillForm, chat_completions_request
from .reading import expect_object, make_usage
from .request import Endpoint, HttpRequest
from .tool_calls import ToolCallAssembler

__all__ = ["OpenAIDialect", "PrefillForm"]

# bound once: each enum member lookup costs a thousand instructions
_TEXT_DELTA = EVENT_TYPES.TEXT_DELTA
_THINKING_DELTA = EVENT_TYPES.THINKING_DELTA

# Keys of ctx.state used by this dialect.
_CALLS = "openai.calls"  # the ToolCallAssembler of the step
_BY_INDEX = "openai.by_index"  # provider index -> [assembler key, tool call id]
_BY_ID = "openai.by_id"  # tool call id -> assembler key, for calls sent without index
_LAST_KEY = "openai.last_key"  # the assembler key of the latest call started
_SEQ = "openai.seq"  # how many calls were started: the next assembler key
_SOURCES = "openai.sources"  # keys of the citations / search results already sent
_USAGE = "openai.usage"  # the provider's last usage payload, to skip repeats


class OpenAIDialect(ChatDialect):
    """OpenAI Chat Completions streaming (``stream: true``) and compatible servers.

    OpenAI answers after a trailing assistant message; some compatible servers continue
    it when the request says so, each in its own way. ``prefill`` declares the server's
    (:data:`~solon_events.dialects.openai_request.PrefillForm`): ``"prefix"`` (DeepSeek's
    beta base URL, Mistral: ``"prefix": true`` on the message), ``"partial"`` (Qwen on
    DashScope: ``"partial": true``) or ``"continue_final_message"`` (vLLM, SGLang: the
    request's ``continue_final_message: true`` and ``add_generation_prompt: false``).
    With one, :attr:`assistant_prefill` is true: ``fallback(..., mid_stream="continue")``
    may ask this model to continue a text (``ChatModel(url, model,
    dialect=OpenAIDialect(prefill="prefix"))``).
    """

    name = "openai"
    native_output = True

    def __init__(self, prefill: PrefillForm | None = None) -> None:
        if prefill not in (None, "prefix", "partial", "continue_final_message"):
            raise ValueError(
                "prefill must be None, 'prefix', 'partial' or 'continue_final_message', "
                f"got {prefill!r}"
            )
        self.prefill: PrefillForm | None = prefill
        """How a trailing assistant message is marked as a prefill (None: it is not)."""
        self.assistant_prefill = prefill is not None

    def request_for(self, request: ChatRequest, endpoint: Endpoint) -> HttpRequest:
        """A streaming Chat Completions request (:func:`chat_completions_request`)."""
        return chat_completions_request(request, endpoint, prefill=self.prefill)

    def output_mode(self, model: str, output: OutputFormat) -> OutputMode:
        """``"native"``: ``response_format`` (``json_schema``, strict where the schema can
        be made so; ``json_object`` without a schema)."""
        return "native"

    def forced_tool(self, name: str | None) -> dict[str, Any]:
        """``tool_choice``: the function ``name``, or ``"required"``."""
        if name is None:
            return {"tool_choice": "required"}
        return {"tool_choice": {"type": "function", "function": {"name": name}}}

    def parse_frame(self, ctx: ChatStreamContext, frame: Any) -> None:
        """Translate one ``chat.completion.chunk`` (or an error frame) into events."""
        expect_object(frame)
        if ctx.provider_response_id is None:
            response_id = frame.get("id")
            if isinstance(response_id, str) and response_id:
                ctx.provider_response_id = response_id
        if ctx.model is None:
            model = frame.get("model")
            if isinstance(model, str) and model:
                ctx.model = model
        # The common frames, a text or reasoning delta of the only choice and nothing else:
        # plain lookups tell (a missing key or an odd shape raises on the way, and the general
        # code decides).
        try:
            (choice,) = frame["choices"]
            delta = choice["delta"]
            if (
                type(delta) is dict
                and choice.get("finish_reason") is None
                and not choice["index"]
                and not frame.get("usage")
                and "error" not in frame
                and "citations" not in frame
                and "search_results" not in frame
                and "x_groq" not in frame
            ):
                text = delta.get("content")
                size = len(delta)
                if type(text) is str and size == 1:
                    if text:
                        ctx.send(_TEXT_DELTA, text=text, raw=frame)
                    return
                if text is None and size <= 2:  # {"content": null, "reasoning_content": ...}
                    thinking = delta.get("reasoning_content")
                    if thinking is None:
                        thinking = delta.get("reasoning")
                    if type(thinking) is str and thinking and size == 1 + ("content" in delta):
                        ctx.send(_THINKING_DELTA, text=thinking, raw=frame)
                        return
        except (KeyError, TypeError, ValueError):
            pass
        choices = frame.get("choices")
        error = frame.get("error")
        if error:
            ctx.fail(error if isinstance(error, dict) else frame)
            return
        if choices and isinstance(choices, list):
            for choice in choices:
                if isinstance(choice, dict) and not choice.get("index"):
                    _choice(ctx, choice, frame)
        known = "choices" in frame
        if "citations" in frame or "search_results" in frame:
            known = _sources(ctx, frame) or known
        usage = frame.get("usage")
        if usage is None:
            usage = _groq_usage(frame)
        if usage and isinstance(usage, dict):
            known = True
            _usage(ctx, usage)
        if not known:
            raw_type = frame.get("object") or frame.get("type") or "unknown"
            ctx.send(EVENT_TYPES.RAW, raw_type=str(raw_type), raw=frame)

    def parse_done(self, ctx: ChatStreamContext) -> None:
        """``[DONE]``: close tool calls still open and mark the stream complete."""
        _close_calls(ctx)
        ctx.finish()


# parsing


def _choice(ctx: ChatStreamContext, choice: dict[str, Any], frame: dict[str, Any]) -> None:
    delta = choice.get("delta")
    if delta is None:
        delta = choice.get("message")
    if delta and isinstance(delta, dict):
        _delta(ctx, delta, frame)
    reason = choice.get("finish_reason")
    if reason:
        _finish(ctx, str(reason), frame)


def _delta(ctx: ChatStreamContext, delta: dict[str, Any], frame: dict[str, Any]) -> None:
    reasoning = delta.get("reasoning_content") or delta.get("reasoning")
    if reasoning and isinstance(reasoning, str):
        ctx.send(EVENT_TYPES.THINKING_DELTA, text=reasoning, raw=frame)
    content = delta.get("content")
    if content:
        if isinstance(content, str):
            ctx.send(EVENT_TYPES.TEXT_DELTA, text=content, raw=frame)
        elif isinstance(content, list):
            _content_parts(ctx, content, frame)
    refusal = delta.get("refusal")
    if refusal and isinstance(refusal, str):
        ctx.send(EVENT_TYPES.REFUSAL_DELTA, text=refusal, raw=frame)
    tool_calls = delta.get("tool_calls")
    if tool_calls and isinstance(tool_calls, list):
        for call in tool_calls:
            if isinstance(call, dict):
                _tool_call(ctx, call, frame)
    annotations = delta.get("annotations")
    if annotations and isinstance(annotations, list):
        _annotations(ctx, annotations, frame)


def _content_parts(ctx: ChatStreamContext, parts: list[Any], frame: dict[str, Any]) -> None:
    """Mistral's content arrays: ``text`` parts and ``thinking`` parts holding text parts."""
    for part in parts:
        if isinstance(part, str):
            if part:
                ctx.send(EVENT_TYPES.TEXT_DELTA, text=part, raw=frame)
            continue
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "text":
            text = part.get("text")
            if text and isinstance(text, str):
                ctx.send(EVENT_TYPES.TEXT_DELTA, text=text, raw=frame)
        elif kind == "thinking":
            for text in _texts(part.get("thinking")):
                ctx.send(EVENT_TYPES.THINKING_DELTA, text=text, raw=frame)
        else:
            ctx.send(EVENT_TYPES.RAW, raw_type=f"content.{kind}", raw=part)


def _texts(value: Any) -> Iterable[str]:
    """The non-empty texts of a string or of a list of strings / ``text`` parts."""
    if isinstance(value, str):
        return (value,) if value else ()
    if not isinstance(value, list):
        return ()
    texts = []
    for part in value:
        text = part.get("text") if isinstance(part, dict) else part
        if text and isinstance(text, str):
            texts.append(text)
    return texts


def _assembler(ctx: ChatStreamContext) -> ToolCallAssembler:
    assembler: ToolCallAssembler | None = ctx.state.get(_CALLS)
    if assembler is None:
        assembler = ctx.state[_CALLS] = ToolCallAssembler()
        ctx.state[_BY_INDEX] = {}
        ctx.state[_BY_ID] = {}
        ctx.state[_SEQ] = 0
    return assembler


def _tool_call(ctx: ChatStreamContext, call: dict[str, Any], frame: dict[str, Any]) -> None:
    """One entry of ``delta.tool_calls``: a new call, or a fragment of an open one."""
    assembler = _assembler(ctx)
    function = call.get("function") or call.get("custom")
    if not isinstance(function, dict):
        function = {}
    name = function.get("name")
    name = name if isinstance(name, str) else ""
    call_id = call.get("id")
    call_id = call_id if isinstance(call_id, str) and call_id else None
    index = call.get("index")
    key: int | None
    if isinstance(index, int) and not isinstance(index, bool):
        key = _indexed_call(ctx, assembler, index, call_id, name, frame)
    else:
        key = _unindexed_call(ctx, assembler, call_id, name, frame)
    fragment = _arguments(function)
    if key is None:
        if fragment:
            raise ChatProtocolError(
                "tool call arguments with no id, name or index and no open tool call"
            )
        return
    assembler.delta(ctx, key, fragment, raw=frame)


def _indexed_call(
    ctx: ChatStreamContext,
    assembler: ToolCallAssembler,
    index: int,
    call_id: str | None,
    name: str,
    frame: dict[str, Any],
) -> int:
    """The assembler key of the call streamed at ``index``; opens it on first sight.

    Later fragments carry no id (or an empty one). A different id at an index already in
    use is a new call from a server that reuses indexes: the old one is closed.
    """
    by_index: dict[int, list[Any]] = ctx.state[_BY_INDEX]
    entry = by_index.get(index)
    if entry is not None and entry[0] in assembler:
        if call_id is None or entry[1] is None or call_id == entry[1]:
            return entry[0]  # type: ignore[no-any-return]
        assembler.end(ctx, entry[0])
    position = index if entry is None else None
    key = _start(ctx, assembler, call_id, name, position, frame)
    by_index[index] = [key, call_id]
    return key


def _unindexed_call(
    ctx: ChatStreamContext,
    assembler: ToolCallAssembler,
    call_id: str | None,
    name: str,
    frame: dict[str, Any],
) -> int | None:
    """The assembler key of a call sent without ``index`` (Mistral sends calls whole)."""
    by_id: dict[str, int] = ctx.state[_BY_ID]
    if call_id is not None:
        key = by_id.get(call_id)
        if key is not None and key in assembler:
            return key
    elif not name:
        last = ctx.state.get(_LAST_KEY)
        return last if last is not None and last in assembler else None
    key = _start(ctx, assembler, call_id, name, None, frame)
    if call_id is not None:
        by_id[call_id] = key
    return key


def _start(
    ctx: ChatStreamContext,
    assembler: ToolCallAssembler,
    call_id: str | None,
    name: str,
    position: int | None,
    frame: dict[str, Any],
) -> int:
    key: int = ctx.state[_SEQ]
    ctx.state[_SEQ] = key + 1
    ctx.state[_LAST_KEY] = key
    assembler.start(ctx, key, id=call_id, name=name, index=position, raw=frame)
    return key


def _arguments(function: dict[str, Any]) -> str:
    """The argument text of a tool call entry; an object sent as such is encoded as JSON."""
    arguments = function.get("arguments")
    if arguments is None:
        arguments = function.get("input")
    if arguments is None or isinstance(arguments, str):
        return arguments or ""
    return orjson.dumps(arguments).decode()


def _close_calls(ctx: ChatStreamContext) -> None:
    assembler = ctx.state.get(_CALLS)
    if assembler is not None:
        assembler.end_all(ctx)


def _finish(ctx: ChatStreamContext, reason: str, frame: dict[str, Any]) -> None:
    _close_calls(ctx)
    if reason == "content_filter":
        ctx.send(EVENT_TYPES.CONTENT_FILTER, text=reason, raw=frame)
    ctx.finish(reason)


def _sent_before(ctx: ChatStreamContext, key: Any) -> bool:
    """True when the source ``key`` was sent already; records it otherwise."""
    sent: set[Any] | None = ctx.state.get(_SOURCES)
    if sent is None:
        sent = ctx.state[_SOURCES] = set()
    if key in sent:
        return True
    sent.add(key)
    return False


def _occurrences(items: list[Any], key_of: Callable[[Any], Any]) -> Iterable[tuple[Any, Any]]:
    """``(item, key)`` pairs where the key counts repeats within the list.

    A source listed twice in one frame is two sources; the same list repeated by the next
    frame is none new.
    """
    counts: dict[Any, int] = {}
    for item in items:
        base = key_of(item)
        if base is None:
            continue
        count = counts[base] = counts.get(base, 0) + 1
        yield item, (base, count)


def _citation_key(item: Any) -> Any:
    if isinstance(item, str):
        return ("citation", item) if item else None
    if isinstance(item, dict):
        return ("citation", item.get("url"), item.get("title"))
    return None


def _search_result_key(item: Any) -> Any:
    if not isinstance(item, dict):
        return None
    return ("search_result", item.get("url"), item.get("title"))


def _sources(ctx: ChatStreamContext, frame: dict[str, Any]) -> bool:
    """Perplexity's ``citations`` (URLs) and ``search_results``, each sent once."""
    citations = frame.get("citations")
    if isinstance(citations, list):
        for item, key in _occurrences(citations, _citation_key):
            if not _sent_before(ctx, key):
                ctx.send(EVENT_TYPES.CITATION, citation=_citation(item), raw=frame)
    results = frame.get("search_results")
    if isinstance(results, list):
        for item, key in _occurrences(results, _search_result_key):
            if not _sent_before(ctx, key):
                ctx.send(EVENT_TYPES.SEARCH_RESULT, search_result=_search_result(item), raw=frame)
    return isinstance(citations, list) or isinstance(results, list)


def _citation(item: Any) -> Citation:
    if isinstance(item, str):
        return new_citation(item)
    return new_citation(_str(item.get("url")), _str(item.get("title")), raw=item)


def _search_result(item: dict[str, Any]) -> SearchResult:
    get = item.get
    return new_search_result(
        _str(get("url")), _str(get("title")), _str(get("snippet")), _str(get("date")), None, item
    )


def _annotations(ctx: ChatStreamContext, annotations: list[Any], frame: dict[str, Any]) -> None:
    """``url_citation`` annotations (OpenAI search models, OpenRouter web plugin)."""
    for annotation in annotations:
        if not isinstance(annotation, dict):
            continue
        kind = annotation.get("type")
        body = annotation.get(kind) if isinstance(kind, str) else None
        if kind != "url_citation" or not isinstance(body, dict):
            ctx.send(EVENT_TYPES.RAW, raw_type=f"annotation.{kind}", raw=annotation)
            continue
        url = _str(body.get("url"))
        start = _int_or_none(body.get("start_index"))
        end = _int_or_none(body.get("end_index"))
        if not _sent_before(ctx, ("annotation", url, start, end)):
            title = _str(body.get("title"))
            text = _str(body.get("content"))
            citation = new_citation(url, title, text, start, end, None, None, kind, annotation)
            ctx.send(EVENT_TYPES.CITATION, citation=citation, raw=frame)


def _groq_usage(frame: dict[str, Any]) -> Any:
    extra = frame.get("x_groq")
    return extra.get("usage") if isinstance(extra, dict) else None


def _usage(ctx: ChatStreamContext, usage: dict[str, Any]) -> None:
    """A USAGE event, unless the provider repeats the same payload (Perplexity)."""
    if usage == ctx.state.get(_USAGE):
        return
    ctx.state[_USAGE] = usage
    prompt_details = usage.get("prompt_tokens_details")
    cached = prompt_details.get("cached_tokens") if isinstance(prompt_details, dict) else None
    if cached is None:
        cached = usage.get("prompt_cache_hit_tokens")
    completion_details = usage.get("completion_tokens_details")
    reasoning = (
        completion_details.get("reasoning_tokens") if isinstance(completion_details, dict) else None
    )
    if reasoning is None:
        reasoning = usage.get("reasoning_tokens")
    searches = _count(usage.get("num_search_queries"))
    ctx.send(
        EVENT_TYPES.USAGE,
        usage=make_usage(
            prompt_tokens=_count(usage.get("prompt_tokens")),
            completion_tokens=_count(usage.get("completion_tokens")),
            total_tokens=_count(usage.get("total_tokens")),
            thinking_tokens=_count(reasoning),
            cache_read_input_tokens=_count(cached),
            server_tool_use={"web_search_requests": searches} if searches else None,
            source=usage,
        ),
        raw=usage,
    )


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None
