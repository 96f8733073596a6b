"""The Gemini dialect (``"gemini"``): ``streamGenerateContent?alt=sse``.

Each SSE ``data:`` payload is one ``GenerateContentResponse``. Only the first candidate
(``index`` 0) is read; other candidates become RAW events. What a frame carries, and the
events it becomes:

- ``text`` parts -> TEXT_DELTA; parts with ``thought: true`` -> THINKING_DELTA;
  ``thoughtSignature`` (on any part) -> THINKING_SIGNATURE, after the part's own event.
- ``functionCall`` parts sent whole -> TOOL_CALL_CHUNK (``args`` as the arguments, ``id``
  when the API gives one, the call's position in the step as ``index``).
- ``functionCall`` parts streamed (``willContinue`` / ``partialArgs``): the part with the
  ``name`` opens the call (TOOL_CALL_START), each partial argument (a JSON path and a string,
  number, boolean or null value; strings may come in pieces) becomes a TOOL_CALL_ARGS_DELTA
  holding the next piece of the arguments' JSON text (assembled by
  :class:`~solon_events.dialects.json_path.JsonPathAssembler`), and the part without
  ``willContinue`` closes it (TOOL_CALL_END with the whole call).
- ``inlineData`` / ``fileData`` parts -> MEDIA_DONE with an ``ImageBlock`` (a ``FileBlock``
  for other mime types); thought images (``thought: true``) -> MEDIA_PARTIAL.
- ``executableCode`` / ``codeExecutionResult`` parts -> SERVER_TOOL_START /
  SERVER_TOOL_RESULT with ``sub_type="code_execution"``.
- ``groundingMetadata``: each grounding chunk -> one SEARCH_RESULT, each (support, chunk)
  pair -> one CITATION; ``citationMetadata`` sources -> CITATION. Each is sent once even when
  the API repeats the metadata in later frames.
- ``promptFeedback.blockReason`` and the safety finish reasons (:data:`FILTER_REASONS`) ->
  CONTENT_FILTER with the reason as text.
- ``usageMetadata`` -> USAGE, a cumulative snapshot (see :func:`gemini_usage`): the step's
  first at once, then only the latest, as the step ends (the API repeats it on every frame).
- ``finishReason`` -> the completion signal, with the API's own reason (``"STOP"``); a
  blocked prompt, which has no candidate, completes with its ``blockReason``.
- ``responseId`` -> ``ctx.provider_response_id``; ``modelVersion`` -> ``ctx.model``.
- ``{"error": {...}}`` -> a provider failure carrying the API's error fields.
"""

from __future__ import annotations

from collections.abc import Container, Mapping
from typing import Any

from ..event_model.events import EVENT_TYPES, ChatEvent
from ..event_model.messages import ChatRequest, OutputFormat, OutputMode
from ..event_model.results import (
    FileBlock,
    ImageBlock,
    SearchResult,
    ToolCall,
    Usage,
    new_citation,
    new_usage,
)
from ..event_model.values import EMPTY_MAPPING, held_member
from .base import ChatDialect
from .context import ChatStreamContext, identify
from .gemini_request import SKIP_SIGNATURE, generate_content_request, stream_url
from .json_path import JsonPathAssembler, json_path_segments
from .reading import expect_object, output_by_total
from .request import Endpoint, HttpRequest
from .tool_calls import ToolCallAssembler, send_whole_call

__all__ = [
    "FILTER_REASONS",
    "SKIP_SIGNATURE",
    "GeminiDialect",
    "gemini_usage",
    "stream_url",
]

_TEXT_DELTA = EVENT_TYPES.TEXT_DELTA
_USAGE = EVENT_TYPES.USAGE

FILTER_REASONS = frozenset(
    {
        "SAFETY",
        "RECITATION",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
    }
)
"""The ``finishReason`` values that mean the API withheld content (CONTENT_FILTER)."""

_STATE_KEY = "gemini"
_ONE_PART_FRAME = frozenset(
    {"candidates", "usageMetadata", "modelVersion", "responseId", "createTime"}
)
"""The frame fields a one-part frame may hold and still take :func:`_one_part`."""
_ONE_PART_CANDIDATE = frozenset({"content", "index", "finishReason", "safetyRatings"})
"""The candidate fields a one-part frame may hold and still take :func:`_one_part`."""
_USAGE_COUNTS = frozenset(
    {
        "promptTokenCount",
        "candidatesTokenCount",
        "thoughtsTokenCount",
        "cachedContentTokenCount",
        "toolUsePromptTokenCount",
        "totalTokenCount",
    }
)


class GeminiDialect(ChatDialect):
    """Gemini API ``streamGenerateContent`` with ``alt=sse`` (Google AI and Vertex AI)."""

    name = "gemini"
    native_output = True

    def request_for(self, request: ChatRequest, endpoint: Endpoint) -> HttpRequest:
        """The ``streamGenerateContent`` request (:func:`generate_content_request`)."""
        return generate_content_request(request, endpoint)

    def output_mode(self, model: str, output: OutputFormat) -> OutputMode:
        """``"native"``: ``responseMimeType`` and ``responseJsonSchema`` (``responseSchema``
        for Gemini 1.x and 2.0)."""
        return "native"

    def forced_tool(self, name: str | None) -> dict[str, Any]:
        """``toolConfig.functionCallingConfig``: mode ``ANY``, only ``name`` allowed."""
        config: dict[str, Any] = {"mode": "ANY"}
        if name is not None:
            config["allowedFunctionNames"] = [name]
        return {"tool_config": {"functionCallingConfig": config}}

    def parse_frame(self, ctx: ChatStreamContext, frame: Any) -> None:
        """Translate one ``GenerateContentResponse`` (or an error payload) into events."""
        # Most frames hold one candidate whose content is one part (an object): plain lookups
        # reach it. Any other shape raises on the way (a missing key, a non-object, a count
        # other than one) or fails the checks below, and goes the general way.
        try:
            (candidate,) = frame["candidates"]
            (part,) = candidate["content"]["parts"]
            text = part.get("text")
            response_id = frame["responseId"]
            model = frame["modelVersion"]
        except (AttributeError, KeyError, TypeError, ValueError):
            pass
        else:
            # A plain text frame: each object holds only the keys read here (and the frame
            # perhaps usage), so nothing that makes events of its own.
            if (
                type(text) is str
                and text
                and len(part) == 1
                and len(candidate) == 2
                and candidate.get("index") == 0
            ):
                usage = frame.get("usageMetadata")
                if len(frame) == 3 or (len(frame) == 4 and type(usage) is dict):
                    if response_id != ctx.provider_response_id or model != ctx.model:
                        identify(ctx, response_id, model)
                    ctx.send(_TEXT_DELTA, text=text, raw=part)
                    if usage is not None:
                        _usage(ctx, _state(ctx), usage, frame)
                    return
            if _one_part(ctx, frame, candidate, part, response_id, model):
                return
        if type(frame) is list:
            for item in frame:
                self.parse_frame(ctx, item)
            return
        _response(ctx, frame)

    def end_of_stream(self, ctx: ChatStreamContext) -> None:
        """Close a streamed function call the API left open."""
        state: _State | None = ctx.state.get(_STATE_KEY)
        if state is not None:
            state.close_call(ctx)


# parsing


def _response(ctx: ChatStreamContext, frame: Any) -> None:
    """Events of one ``GenerateContentResponse`` or error payload, whatever its shape."""
    expect_object(frame)
    error = frame.get("error")
    if error:
        ctx.fail(error if isinstance(error, dict) else frame)
        return
    state = _state(ctx)
    identify(ctx, frame.get("responseId"), frame.get("modelVersion"))
    known = False
    blocked = None
    feedback = frame.get("promptFeedback")
    if isinstance(feedback, dict):
        known = True
        blocked = _reason(ctx, state, feedback, "blockReason", None)
    finish = None
    candidates = frame.get("candidates")
    if isinstance(candidates, list):
        known = True
        for candidate in candidates:
            if isinstance(candidate, dict):
                finish = _candidate(ctx, state, candidate) or finish
    usage = frame.get("usageMetadata")
    if isinstance(usage, dict):
        known = True
        _usage(ctx, state, usage, frame)
    if finish is None and blocked and not candidates:
        finish = blocked
    if finish is not None:
        state.close_call(ctx)
        ctx.finish(finish)
    if not known:
        ctx.send(EVENT_TYPES.RAW, raw_type="gemini.unknown", raw=frame)


def _one_part(
    ctx: ChatStreamContext,
    frame: dict[str, Any],
    candidate: dict[str, Any],
    part: dict[str, Any],
    response_id: Any,
    model: Any,
) -> bool:
    """The events :func:`_response` gives a frame with one candidate holding one part.

    Only frame and candidate fields the general code ignores or reads here may be there
    (:data:`_ONE_PART_FRAME`, :data:`_ONE_PART_CANDIDATE`) and the candidate's index must be
    0, null or missing; for any other frame this returns False having done nothing.
    """
    if (
        candidate.get("index")
        or not _ONE_PART_FRAME.issuperset(frame)
        or not _ONE_PART_CANDIDATE.issuperset(candidate)
    ):
        return False
    state = _state(ctx)
    if response_id != ctx.provider_response_id or model != ctx.model:
        identify(ctx, response_id, model)
    _part(ctx, state, part)
    reason = (
        _reason(ctx, state, candidate, "finishReason", FILTER_REASONS)
        if "finishReason" in candidate
        else None
    )
    usage = frame.get("usageMetadata")
    if type(usage) is dict:
        _usage(ctx, state, usage, frame)
    if reason is not None:
        state.close_call(ctx)
        ctx.finish(reason)
    return True


class _State:
    """What the dialect remembers across one step's frames."""

    __slots__ = ("args", "calls", "code_ids", "count", "open_call", "seen", "usage")

    def __init__(self) -> None:
        self.calls = ToolCallAssembler()
        self.count = 0  # function calls seen: the next call's position
        self.open_call: int | None = None  # position of the streamed call still open
        self.args: JsonPathAssembler | None = None
        self.seen: set[tuple[Any, ...]] = set()  # sources and filters already sent
        self.usage: Mapping[str, Any] | None = None
        self.code_ids: list[str] = []  # code executions started, to pair their results

    def next_position(self) -> int:
        position = self.count
        self.count += 1
        return position

    def first_time(self, key: tuple[Any, ...]) -> bool:
        if key in self.seen:
            return False
        self.seen.add(key)
        return True

    def close_call(self, ctx: ChatStreamContext, raw: Mapping[str, Any] | None = None) -> None:
        if self.open_call is None:
            return
        args = self.args
        tail = args.finish() if args is not None else ""
        if tail:
            self.calls.delta(ctx, self.open_call, tail, raw=raw)
        text = args.arguments_str() if args is not None else ""
        self.calls.end(ctx, self.open_call, arguments_str=text, raw=raw)
        self.open_call = None
        self.args = None


def _state(ctx: ChatStreamContext) -> _State:
    """The step's :class:`_State` in ``ctx.state``, made on first use."""
    return ctx.state_of(_STATE_KEY, _State)


def _candidate(ctx: ChatStreamContext, state: _State, candidate: Mapping[str, Any]) -> str | None:
    """Events of one candidate; returns its finish reason, if it has one."""
    if candidate.get("index", 0):
        ctx.send(EVENT_TYPES.RAW, raw_type="gemini.candidate", raw=candidate)
        return None
    content = candidate.get("content")
    parts = content.get("parts") if isinstance(content, dict) else None
    if isinstance(parts, list):
        for part in parts:
            if isinstance(part, dict):
                _part(ctx, state, part)
    grounding = candidate.get("groundingMetadata")
    if isinstance(grounding, dict):
        _grounding(ctx, state, grounding)
    citations = candidate.get("citationMetadata")
    if isinstance(citations, dict):
        _citation_sources(ctx, state, citations)
    return _reason(ctx, state, candidate, "finishReason", FILTER_REASONS)


def _reason(
    ctx: ChatStreamContext,
    state: _State,
    raw: Mapping[str, Any],
    key: str,
    filters: Container[str] | None,
) -> str | None:
    """``raw[key]`` if it is a non-empty string; CONTENT_FILTER (once a reason) when it is
    one of ``filters`` (None: any)."""
    reason = raw.get(key)
    if not isinstance(reason, str) or not reason:
        return None
    if (filters is None or reason in filters) and state.first_time(("filter", reason)):
        ctx.send(EVENT_TYPES.CONTENT_FILTER, text=reason, raw=raw)
    return reason


def _part(ctx: ChatStreamContext, state: _State, part: Mapping[str, Any]) -> None:
    """Events of one content part, then its thought signature."""
    handled = True
    if "functionCall" in part:
        _function_call(ctx, state, part, part["functionCall"])
    elif "text" in part:
        text = part["text"]
        if isinstance(text, str) and text:
            kind = EVENT_TYPES.THINKING_DELTA if part.get("thought") else EVENT_TYPES.TEXT_DELTA
            ctx.send(kind, text=text, raw=part)
    elif "inlineData" in part or "fileData" in part:
        _media(ctx, part)
    elif "executableCode" in part:
        _code(ctx, state, part)
    elif "codeExecutionResult" in part:
        _code_result(ctx, state, part)
    else:
        handled = False
    signature = part.get("thoughtSignature")
    if isinstance(signature, str) and signature:
        ctx.send(EVENT_TYPES.THINKING_SIGNATURE, text=signature, raw=part)
    elif not handled:
        ctx.send(EVENT_TYPES.RAW, raw_type="gemini.part", raw=part)


def _function_call(
    ctx: ChatStreamContext, state: _State, part: Mapping[str, Any], call: Any
) -> None:
    """A whole call, or the opening, a piece or the close of a streamed one."""
    if not isinstance(call, dict):
        ctx.send(EVENT_TYPES.RAW, raw_type="gemini.functionCall", raw=part)
        return
    name = call.get("name")
    more = bool(call.get("willContinue"))
    partial = call.get("partialArgs")
    if not name:
        if state.open_call is None:
            ctx.send(EVENT_TYPES.RAW, raw_type="gemini.functionCall", raw=part)
            return
        if partial:
            _feed(ctx, state, partial, part)
        if not more:
            state.close_call(ctx, part)
        return
    state.close_call(ctx)
    call_id = call.get("id")
    if not isinstance(call_id, str):
        call_id = None
    args = call.get("args")
    position = state.next_position()
    if not more and not partial:
        arguments = args if isinstance(args, dict) else None
        send_whole_call(ctx, call_id, str(name), arguments, position, part)
        return
    state.calls.start(ctx, position, id=call_id, name=str(name), index=position, raw=part)
    state.open_call = position
    state.args = JsonPathAssembler()
    if isinstance(args, dict):
        for key, value in args.items():
            _send_args(ctx, state, state.args.value((str(key),), value), part)
    if partial:
        _feed(ctx, state, partial, part)
    if not more:
        state.close_call(ctx, part)


def _feed(ctx: ChatStreamContext, state: _State, partial: Any, part: Mapping[str, Any]) -> None:
    """TOOL_CALL_ARGS_DELTA for each ``partialArgs`` entry of the open call."""
    args = state.args
    if not isinstance(partial, list) or args is None:
        return
    for entry in partial:
        if isinstance(entry, dict):
            _send_args(ctx, state, _partial_argument(args, entry), part)


def _send_args(
    ctx: ChatStreamContext, state: _State, fragment: str, part: Mapping[str, Any]
) -> None:
    if fragment and state.open_call is not None:
        state.calls.delta(ctx, state.open_call, fragment, raw=part)


def _media(ctx: ChatStreamContext, part: Mapping[str, Any]) -> None:
    inline = part.get("inlineData")
    source = inline if isinstance(inline, dict) else part.get("fileData")
    if not isinstance(source, dict):
        ctx.send(EVENT_TYPES.RAW, raw_type="gemini.media", raw=part)
        return
    mime_type = _str(source.get("mimeType"))
    data = _str(source.get("data"))
    url = _str(source.get("fileUri"))
    block: ImageBlock | FileBlock
    if mime_type is None or mime_type.startswith("image/"):
        block = ImageBlock(url=url, data=data, mime_type=mime_type)
    else:
        block = FileBlock(url=url, data=data, mime_type=mime_type)
    kind = EVENT_TYPES.MEDIA_PARTIAL if part.get("thought") else EVENT_TYPES.MEDIA_DONE
    ctx.send(kind, block=block, raw=part)


def _code(ctx: ChatStreamContext, state: _State, part: Mapping[str, Any]) -> None:
    code = part.get("executableCode")
    code = code if isinstance(code, dict) else {}
    item_id = _str(code.get("id")) or f"code_execution_{len(state.code_ids)}"
    state.code_ids.append(item_id)
    arguments = {"language": code.get("language"), "code": code.get("code")}
    ctx.send(
        EVENT_TYPES.SERVER_TOOL_START,
        item_id=item_id,
        tool_call_id=item_id,
        sub_type="code_execution",
        tool_call=ToolCall(id=item_id, name="code_execution", arguments=arguments),
        raw=part,
    )


def _code_result(ctx: ChatStreamContext, state: _State, part: Mapping[str, Any]) -> None:
    result = part.get("codeExecutionResult")
    given = _str(result.get("id")) if isinstance(result, dict) else None
    item_id = given or (state.code_ids[-1] if state.code_ids else None)
    ctx.send(
        EVENT_TYPES.SERVER_TOOL_RESULT,
        item_id=item_id,
        tool_call_id=item_id,
        sub_type="code_execution",
        raw=part,
    )


def _grounding(ctx: ChatStreamContext, state: _State, grounding: Mapping[str, Any]) -> None:
    """One SEARCH_RESULT per grounding chunk, one CITATION per (support, chunk) pair."""
    chunks = grounding.get("groundingChunks")
    chunks = chunks if isinstance(chunks, list) else []
    for chunk in chunks:
        kind, source = _chunk_source(chunk)
        if source is None:
            continue
        url, title = _str(source.get("uri")), _str(source.get("title"))
        if state.first_time(("search", kind, url, title)):
            result = SearchResult(
                url=url, title=title, snippet=_str(source.get("text")), type=kind, raw=chunk
            )
            ctx.send(EVENT_TYPES.SEARCH_RESULT, search_result=result, raw=grounding)
    supports = grounding.get("groundingSupports")
    for support in supports if isinstance(supports, list) else ():
        if isinstance(support, dict):
            _support(ctx, state, support, chunks, grounding)


def _support(
    ctx: ChatStreamContext,
    state: _State,
    support: Mapping[str, Any],
    chunks: list[Any],
    grounding: Mapping[str, Any],
) -> None:
    segment = support.get("segment")
    segment = segment if isinstance(segment, dict) else {}
    text = _str(segment.get("text"))
    end = _int_or_none(segment.get("endIndex"))
    # The API leaves out a zero startIndex, as JSON of protocol buffers does.
    start = _int_or_none(segment.get("startIndex"))
    if start is None and end is not None:
        start = 0
    indices = support.get("groundingChunkIndices")
    for chunk_index in indices if isinstance(indices, list) else ():
        if not isinstance(chunk_index, int) or not 0 <= chunk_index < len(chunks):
            continue
        kind, source = _chunk_source(chunks[chunk_index])
        url = _str(source.get("uri")) if source is not None else None
        if not state.first_time(("citation", start, end, text, chunk_index, url)):
            continue
        title = _str(source.get("title")) if source is not None else None
        citation = new_citation(url, title, text, start, end, chunk_index, None, kind, support)
        ctx.send(EVENT_TYPES.CITATION, citation=citation, raw=grounding)


def _chunk_source(chunk: Any) -> tuple[str | None, Mapping[str, Any] | None]:
    """The kind (``web``, ``retrievedContext``, ``maps``) and body of a grounding chunk."""
    if isinstance(chunk, dict):
        for kind in ("web", "retrievedContext", "maps"):
            source = chunk.get(kind)
            if isinstance(source, dict):
                return kind, source
    return None, None


def _citation_sources(ctx: ChatStreamContext, state: _State, metadata: Mapping[str, Any]) -> None:
    sources = metadata.get("citationSources") or metadata.get("citations")
    for source in sources if isinstance(sources, list) else ():
        if not isinstance(source, dict):
            continue
        url = _str(source.get("uri"))
        start = _int_or_none(source.get("startIndex"))
        end = _int_or_none(source.get("endIndex"))
        if url is None or not state.first_time(("source", url, start, end)):
            continue
        title = _str(source.get("title"))
        citation = new_citation(url, title, None, start, end, None, None, "citation_source", source)
        ctx.send(EVENT_TYPES.CITATION, citation=citation, raw=metadata)


def gemini_usage(usage: Mapping[str, Any], source: Any = None) -> Usage:
    """A :class:`Usage` from a ``usageMetadata`` payload.

    ``prompt_tokens`` = ``promptTokenCount`` (cached tokens included) +
    ``toolUsePromptTokenCount``; ``completion_tokens`` = ``candidatesTokenCount`` +
    ``thoughtsTokenCount``; ``thinking_tokens`` = ``thoughtsTokenCount``;
    ``cache_read_input_tokens`` = ``cachedContentTokenCount``; ``total_tokens`` =
    ``totalTokenCount``; ``source`` = ``source``, by default the payload. A count that is
    missing or not an integer counts 0. A server whose ``candidatesTokenCount`` holds the
    thoughts already (its total says prompt + candidates) has them counted once
    (:func:`~solon_events.dialects.reading.output_by_total`).
    """
    held = usage if source is None else source
    return _usage_of(usage, held) or new_usage(source=held)


def _usage_of(usage: Mapping[str, Any], source: Any) -> Usage | None:
    """:func:`gemini_usage` of ``usage`` holding ``source``; None when ``usage`` holds no count."""
    get = usage.get
    prompt = get("promptTokenCount")
    candidates = get("candidatesTokenCount")
    total = get("totalTokenCount")
    thoughts = get("thoughtsTokenCount", 0)
    tool_prompt = get("toolUsePromptTokenCount", 0)
    cached = get("cachedContentTokenCount", 0)
    # plain integers as the API sends them (a bool is not one), the first three present;
    # anything else through _count, once it is known to hold a count
    if not (
        type(prompt) is type(candidates) is type(total) is int
        and type(thoughts) is type(tool_prompt) is type(cached) is int
    ):
        if _USAGE_COUNTS.isdisjoint(usage):
            return None
        prompt, candidates, total, thoughts, tool_prompt, cached = map(
            _count, (prompt, candidates, total, thoughts, tool_prompt, cached)
        )
    prompt += tool_prompt
    completion = candidates + thoughts
    if thoughts and total and prompt + completion != total:  # a total that says otherwise
        completion = output_by_total(prompt, completion, thoughts, total)
    return new_usage(
        prompt, completion, total or prompt + completion, thoughts, 0, cached, EMPTY_MAPPING, source
    )


def _usage(ctx: ChatStreamContext, state: _State, usage: Mapping[str, Any], frame: Any) -> None:
    """The step's usage: its first snapshot as a USAGE at once, each later one that differs
    held back (:meth:`~ChatStreamContext.hold`) until the step ends, the latest winning.

    The API repeats its cumulative snapshot on every frame; one USAGE per frame would cost
    as much as the text it comes with. Of the frame the parse stage decoded, the event's
    ``raw`` and its usage's ``source`` hold the ``usageMetadata`` as part of the frame's
    text, decoded when read.
    """
    if usage == state.usage:
        return
    text = ctx.frame_text if frame is ctx.frame else None
    if state.usage is None:
        event = _usage_event(ctx, usage, text)
        if event is not None:
            state.usage = usage
            ctx.emit(event)
    elif not _USAGE_COUNTS.isdisjoint(usage):
        state.usage = usage
        ctx.hold(_usage_event, usage, text)


def _usage_event(ctx: ChatStreamContext, usage: Mapping[str, Any], text: Any) -> ChatEvent | None:
    """The USAGE event of ``usage`` (held as part of the frame's ``text`` when given); None
    when it holds no count."""
    held = usage if text is None else held_member(text, "usageMetadata")
    built = _usage_of(usage, held)
    return None if built is None else ctx.event(_USAGE, usage=built, raw=held)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _partial_argument(args: JsonPathAssembler, entry: Mapping[str, Any]) -> str:
    """The JSON text of one ``partialArgs`` entry: a ``jsonPath`` and a ``stringValue``
    (``willContinue`` when more of the string follows), ``numberValue``, ``boolValue`` or
    ``nullValue``."""
    path = entry.get("jsonPath")
    if not isinstance(path, str):
        return ""
    segments = json_path_segments(path)
    if "stringValue" in entry:
        piece = entry["stringValue"]
        more = bool(entry.get("willContinue"))
        return args.string(segments, piece if isinstance(piece, str) else "", more)
    if "numberValue" in entry:
        number = entry["numberValue"]
        if isinstance(number, float) and number.is_integer():
            number = int(number)
        return args.value(segments, number)
    if "boolValue" in entry:
        return args.value(segments, bool(entry["boolValue"]))
    if "nullValue" in entry:
        return args.value(segments, None)
    return ""
