"""Google's Interactions API dialect (``"google-interactions"``): streamed
``POST /v1beta/interactions``.

Frames are the JSON payloads of the SSE stream, each with an ``event_type``; the steps of the
interaction are keyed by their ``index``. What each becomes:

- ``interaction.created`` and ``interaction.status_update`` -> STATUS (``text`` the status,
  ``raw_type`` the event type). The interaction's ``id`` (when not empty: a stateless
  interaction, ``store: false``, has none) is ``ctx.provider_response_id``, its ``model``
  ``ctx.model``.
- ``step.start`` opens a step by its type: ``model_output`` -> TEXT_START (its first content
  items, if the step carries them, as for ``step.delta``); ``thought`` -> THINKING_START (a
  ``signature`` -> THINKING_SIGNATURE, a ``summary`` -> THINKING_DELTA); ``function_call`` ->
  TOOL_CALL_START (``id``, ``name``; a non-empty ``signature`` -> THINKING_SIGNATURE); a
  built-in tool's call (``google_search_call``, ``code_execution_call``,
  ``url_context_call``, ...) -> SERVER_TOOL_START with ``sub_type`` the type without
  ``_call``; its result step (``*_result``, ``call_id``) sends SERVER_TOOL_RESULT at its
  delta. Any other step type is RAW.
- ``step.delta`` by the delta's ``type``: ``text`` -> TEXT_DELTA; ``thought_summary`` ->
  THINKING_DELTA; ``thought_signature`` -> THINKING_SIGNATURE; ``arguments_delta`` ->
  TOOL_CALL_ARGS_DELTA; ``text_annotation_delta`` -> one CITATION per annotation (``url`` /
  ``document_uri``, ``title`` / ``file_name``, ``start_index``, ``end_index``, ``type``);
  ``image`` -> MEDIA_DONE with an ImageBlock, ``audio`` / ``video`` / ``document`` ->
  MEDIA_DONE with a FileBlock; a built-in tool's ``*_call`` -> SERVER_TOOL_ARGS_DELTA (the
  arguments as JSON text), its ``*_result`` -> SERVER_TOOL_RESULT (and a SEARCH_RESULT for
  each result item with a ``url``). Anything else is RAW.
- ``step.stop`` closes the step: TEXT_END, THINKING_END, TOOL_CALL_END with the whole call
  (the streamed ``arguments`` text, else the ``arguments`` the step started with).
- ``interaction.completed`` closes what is still open, sends USAGE and gives the completion
  signal with the interaction's ``status`` as the finish reason: ``completed``,
  ``requires_action`` (the model called client tools: the step's tool calls are the
  response's), ``incomplete``, ``cancelled``; ``failed`` is a provider failure. The API
  sends it without ``steps`` (the deltas were the output); one that carries ``steps`` when
  none was streamed has them read whole, as if streamed. Usage (see
  :func:`interactions_usage`) counts ``total_*``: thoughts and tool-use prompts included.
- ``error`` -> a provider failure carrying the API's ``error`` object.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, ClassVar

import orjson

from ..event_model.events import EVENT_TYPES
from ..event_model.messages import ChatRequest, OutputFormat, OutputMode
from ..event_model.results import (
    Citation,
    FileBlock,
    ImageBlock,
    SearchResult,
    Usage,
    new_citation,
    new_search_result,
    new_usage,
)
from .base import ChatDialect
from .blocks import Block, OpenBlocks, Opener, field_delta, signature_delta, text_delta
from .context import ChatStreamContext, FrameHandler, dispatch, identify, text_first
from .google_interactions_request import interactions_request, interactions_url
from .reading import Raw, output_by_total, token_count
from .request import Endpoint, HttpRequest

__all__ = ["GoogleInteractionsDialect", "interactions_url", "interactions_usage"]

_STATE_KEY = "google-interactions"
_CALL_SUFFIX = "_call"
_RESULT_SUFFIX = "_result"


class GoogleInteractionsDialect(ChatDialect):
    """Google's Interactions API streaming (``POST /v1beta/interactions``, ``stream: true``)."""

    name = "google-interactions"

    native_output = True

    def request_for(self, request: ChatRequest, endpoint: Endpoint) -> HttpRequest:
        """The ``/interactions`` request
        (:func:`~solon_events.dialects.google_interactions_request.interactions_request`)."""
        return interactions_request(request, endpoint)

    def output_mode(self, model: str, output: OutputFormat) -> OutputMode:
        """``"native"``: ``response_format`` (``mime_type`` ``application/json`` and the
        schema)."""
        return "native"

    def forced_tool(self, name: str | None) -> dict[str, Any]:
        """``tool_choice``: ``any``, only ``name`` allowed."""
        if name is None:
            return {"tool_choice": "any"}
        return {"tool_choice": {"allowed_tools": {"mode": "any", "tools": [name]}}}

    def parse_frame(self, ctx: ChatStreamContext, frame: Any) -> None:
        """Translate one Interactions stream event into events on ``ctx``."""
        text_first(ctx, frame, _text_of, _parse_general)

    def end_of_stream(self, ctx: ChatStreamContext) -> None:
        """Close the steps the provider left open."""
        state = ctx.state.get(_STATE_KEY)
        if state is not None:
            state.close_all(ctx)


# ---------------------------------------------------------------- stream events


def _text_of(frame: Any) -> tuple[Any, Any]:
    """A text delta's text and index, by plain lookups (see :func:`text_first`)."""
    if frame["event_type"] == "step.delta":
        delta = frame["delta"]
        if delta["type"] == "text" and len(delta) == 2:
            return delta["text"], frame["index"]
    return None, None


def _parse_general(ctx: ChatStreamContext, frame: Any) -> None:
    """Any frame: check it, then hand it to its event type's handler."""
    dispatch(ctx, frame, "event_type", _HANDLERS, _STATE_KEY, _State)


def _on_created(ctx: ChatStreamContext, state: _State, frame: dict[str, Any]) -> None:
    interaction = _mapping(frame.get("interaction"))
    identify(ctx, interaction.get("id"), interaction.get("model"))
    status = interaction.get("status")
    ctx.send(EVENT_TYPES.STATUS, text=_opt_str(status), raw_type="interaction.created", raw=frame)


def _on_status_update(ctx: ChatStreamContext, state: _State, frame: dict[str, Any]) -> None:
    status = frame.get("status")
    raw_type = "interaction.status_update"
    ctx.send(EVENT_TYPES.STATUS, text=_opt_str(status), raw_type=raw_type, raw=frame)


def _on_step_start(ctx: ChatStreamContext, state: _State, frame: dict[str, Any]) -> None:
    index = _index(frame.get("index"))
    step = frame.get("step")
    step_type = step.get("type") if isinstance(step, dict) else None
    if not isinstance(step, dict) or not isinstance(step_type, str):
        ctx.send(EVENT_TYPES.RAW, index=index, raw_type="step.start", raw=frame)
        return
    state.streamed = True
    state.open(ctx, index, step_type, step, frame)


def _on_step_delta(ctx: ChatStreamContext, state: _State, frame: dict[str, Any]) -> None:
    index = _index(frame.get("index"))
    delta = frame.get("delta")
    delta_type = delta.get("type") if isinstance(delta, dict) else None
    handler = _DELTAS.get(delta_type) if isinstance(delta_type, str) else None
    step = state.blocks.get(index)
    if not isinstance(delta, dict):
        pass
    elif handler is not None:
        handler(state, ctx, step, index, delta, frame)
        return
    elif step is not None and step.kind == "server":
        state.server_arguments(ctx, step, index, delta, frame)
        return
    elif step is not None and step.kind == "result":
        state.server_result(ctx, step, index, delta, frame)
        return
    ctx.send(EVENT_TYPES.RAW, index=index, raw_type=f"step.delta:{delta_type}", raw=frame)


def _on_step_stop(ctx: ChatStreamContext, state: _State, frame: dict[str, Any]) -> None:
    state.stop(ctx, _index(frame.get("index")), "step.stop", frame)


def _on_completed(ctx: ChatStreamContext, state: _State, frame: dict[str, Any]) -> None:
    interaction = _mapping(frame.get("interaction"))
    identify(ctx, interaction.get("id"), interaction.get("model"))
    steps = interaction.get("steps")
    if not state.streamed and isinstance(steps, list):
        _whole_steps(ctx, state, steps, frame)
    state.close_all(ctx)
    usage = interaction.get("usage")
    if isinstance(usage, dict):
        ctx.send(EVENT_TYPES.USAGE, usage=interactions_usage(usage), raw=frame)
    status = interaction.get("status")
    if status == "failed":
        error = interaction.get("error")
        ctx.fail(error if isinstance(error, dict) else "the interaction failed")
        return
    ctx.finish(status if isinstance(status, str) and status else None)


def _on_error(ctx: ChatStreamContext, state: _State, frame: dict[str, Any]) -> None:
    error = frame.get("error")
    ctx.fail(error if isinstance(error, dict) else frame)


def _whole_steps(
    ctx: ChatStreamContext, state: _State, steps: list[Any], frame: Mapping[str, Any]
) -> None:
    """Steps a completed interaction carries whole: each opened with its content, then
    closed (``user_input`` and ``function_result`` steps, the request's echo, are skipped)."""
    for index, step in enumerate(steps):
        step_type = step.get("type") if isinstance(step, dict) else None
        if not isinstance(step, dict) or not isinstance(step_type, str):
            continue
        if step_type in ("user_input", "function_result"):
            continue
        state.open(ctx, index, step_type, step, frame)
        block = state.blocks.pop(index)
        if block.kind == "result":
            state.server_result(ctx, block, index, step, frame)
        state.close(ctx, index, block, frame)


_HANDLERS: dict[str, FrameHandler[_State]] = {
    "interaction.created": _on_created,
    "interaction.status_update": _on_status_update,
    "step.start": _on_step_start,
    "step.delta": _on_step_delta,
    "step.stop": _on_step_stop,
    "interaction.completed": _on_completed,
    "error": _on_error,
}


# ---------------------------------------------------------------- steps

# The deltas of one field of text (as text_delta and signature_delta); a step's start may
# carry the same fields.
_summary_text = field_delta("text", EVENT_TYPES.THINKING_DELTA)


class _State(OpenBlocks):
    """The dialect's state for one interaction: its open steps (as blocks) and tool calls; how
    each type of step opens, and the deltas steps take."""

    __slots__ = ("streamed",)

    start_raw_type = "step.start"

    def __init__(self) -> None:
        super().__init__()
        self.streamed = False
        """Whether any step was streamed (a completed interaction's ``steps`` then are not)."""

    # ------------------------------------------------ openers, by step type

    def open_output(self, ctx: ChatStreamContext, index: int, step: Raw, frame: Raw) -> Block:
        ctx.send(EVENT_TYPES.TEXT_START, index=index, raw=frame)
        content = step.get("content")
        for item in content if isinstance(content, list) else ():
            kind = item.get("type") if isinstance(item, dict) else None
            if kind == "text":
                text_delta(self, ctx, None, index, item, frame)
            elif kind in _MEDIA_TYPES:
                self.media(ctx, None, index, item, frame)
        return _OUTPUT_STEP

    def open_thought(self, ctx: ChatStreamContext, index: int, step: Raw, frame: Raw) -> Block:
        ctx.send(EVENT_TYPES.THINKING_START, index=index, raw=frame)
        summary = step.get("summary")
        for item in summary if isinstance(summary, list) else ():
            if isinstance(item, dict):
                _summary_text(self, ctx, None, index, item, frame)
        signature_delta(self, ctx, None, index, step, frame)
        return _THOUGHT_STEP

    def open_function_call(
        self, ctx: ChatStreamContext, index: int, step: Raw, frame: Raw
    ) -> Block:
        call_id, name = _opt_str(step.get("id")), _str(step.get("name"))
        opened = Block("tool", "function_call", call_id, name, input=step.get("arguments"))
        self.open_call(ctx, index, opened, frame)
        signature = step.get("signature")
        if isinstance(signature, str) and signature:
            ctx.send(
                EVENT_TYPES.THINKING_SIGNATURE,
                signature,
                index=index,
                tool_call_id=call_id,
                raw=frame,
            )
        return opened

    def open_server_call(self, ctx: ChatStreamContext, index: int, step: Raw, frame: Raw) -> Block:
        """A built-in tool's call (``<sub_type>_call``)."""
        step_type = _str(step.get("type"))
        opened = Block("server", step_type, _opt_str(step.get("id")), step_type)
        opened.sub_type = step_type.removesuffix(_CALL_SUFFIX)
        opened.input = step.get("arguments")
        return self.open_call(ctx, index, opened, frame)

    def open_result(self, ctx: ChatStreamContext, index: int, step: Raw, frame: Raw) -> Block:
        """A built-in tool's result (``<sub_type>_result``), sent at its delta."""
        step_type = _str(step.get("type"))
        call_id = _opt_str(step.get("call_id"))
        return self.result_block(step_type, call_id, step_type.removesuffix(_RESULT_SUFFIX))

    openers: ClassVar[Mapping[str, Opener]] = {
        "model_output": open_output,
        "thought": open_thought,
        "function_call": open_function_call,
    }
    suffix_openers = ((_CALL_SUFFIX, open_server_call), (_RESULT_SUFFIX, open_result))

    # ------------------------------------------------ deltas (other than a field of text)

    def thought_summary(
        self, ctx: ChatStreamContext, step: Block | None, index: int, delta: Raw, frame: Raw
    ) -> None:
        content = delta.get("content")
        if isinstance(content, dict):
            _summary_text(self, ctx, step, index, content, frame)

    def arguments_delta(
        self, ctx: ChatStreamContext, step: Block | None, index: int, delta: Raw, frame: Raw
    ) -> None:
        if step is None or step.kind != "tool":
            ctx.send(EVENT_TYPES.RAW, index=index, raw_type="step.delta:arguments_delta", raw=frame)
        else:
            self.add_arguments(ctx, index, step, delta.get("arguments"), frame)

    def annotations(
        self, ctx: ChatStreamContext, step: Block | None, index: int, delta: Raw, frame: Raw
    ) -> None:
        annotations = delta.get("annotations")
        for annotation in annotations if isinstance(annotations, list) else ():
            if isinstance(annotation, dict):
                citation = _citation(annotation)
                ctx.send(EVENT_TYPES.CITATION, index=index, citation=citation, raw=frame)

    def media(
        self, ctx: ChatStreamContext, step: Block | None, index: int, delta: Raw, frame: Raw
    ) -> None:
        url = _opt_str(delta.get("uri"))
        data = _opt_str(delta.get("data"))
        mime_type = _opt_str(delta.get("mime_type"))
        block: ImageBlock | FileBlock
        if delta.get("type") == "image":
            block = ImageBlock(url=url, data=data, mime_type=mime_type)
        else:
            block = FileBlock(url=url, data=data, mime_type=mime_type)
        ctx.send(EVENT_TYPES.MEDIA_DONE, index=index, block=block, raw=frame)

    def server_arguments(
        self, ctx: ChatStreamContext, step: Block, index: int, delta: Raw, frame: Raw
    ) -> None:
        """A delta of a built-in tool's call step: its arguments, whole."""
        arguments = delta.get("arguments")
        if arguments is not None:
            step.input = arguments
            self.send_server_arguments(ctx, index, step, orjson.dumps(arguments).decode(), frame)

    def server_result(
        self, ctx: ChatStreamContext, step: Block, index: int, delta: Raw, frame: Raw
    ) -> None:
        """A delta of a built-in tool's result step: the result, whole."""
        items = delta.get("result")
        search_result = partial(_search_result, step.type)
        self.send_result(
            ctx, index, step, delta.get("is_error") is True, delta, items, search_result
        )


# Text and thought steps gather nothing: one step object of each kind serves them all.
_OUTPUT_STEP = Block("text", "model_output")
_THOUGHT_STEP = Block("thinking", "thought")

_MEDIA_TYPES = frozenset({"image", "audio", "video", "document"})

_DELTAS: dict[str, Callable[..., None]] = {
    "text": text_delta,
    "thought_summary": _State.thought_summary,
    "thought_signature": signature_delta,
    "arguments_delta": _State.arguments_delta,
    "text_annotation_delta": _State.annotations,
    "image": _State.media,
    "audio": _State.media,
    "video": _State.media,
    "document": _State.media,
}
"""The handlers of the delta types any step may carry (a built-in tool's call and result
deltas are known by the step they belong to)."""


# ---------------------------------------------------------------- value mapping


def interactions_usage(usage: Mapping[str, Any]) -> Usage:
    """A :class:`~solon_events.Usage` from an interaction's ``usage``.

    ``prompt_tokens`` = ``total_input_tokens`` (cached ones included) +
    ``total_tool_use_tokens``; ``completion_tokens`` = ``total_output_tokens`` +
    ``total_thought_tokens``; ``thinking_tokens`` = ``total_thought_tokens``;
    ``cache_read_input_tokens`` = ``total_cached_tokens``; ``total_tokens`` =
    ``total_tokens``; ``source`` = ``usage`` as given. A missing count counts 0. Reconciled
    with the total when it is given (:func:`~solon_events.dialects.reading.output_by_total`):
    an output count that holds the thoughts already has them once.
    """
    prompt = token_count(usage.get("total_input_tokens")) + token_count(
        usage.get("total_tool_use_tokens")
    )
    thoughts = token_count(usage.get("total_thought_tokens"))
    output = token_count(usage.get("total_output_tokens"))
    total = token_count(usage.get("total_tokens"))
    completion = output_by_total(prompt, output + thoughts, thoughts, total)
    cached = token_count(usage.get("total_cached_tokens"))
    return new_usage(
        prompt, completion, total or prompt + completion, thoughts, 0, cached, None, dict(usage)
    )


def _citation(annotation: Mapping[str, Any]) -> Citation:
    """A Citation from a text annotation (``url_citation``, ``file_citation``,
    ``place_citation``)."""
    return new_citation(
        _opt_str(annotation.get("url")) or _opt_str(annotation.get("document_uri")),
        _opt_str(annotation.get("title"))
        or _opt_str(annotation.get("file_name"))
        or _opt_str(annotation.get("name")),
        None,
        _opt_int(annotation.get("start_index")),
        _opt_int(annotation.get("end_index")),
        None,
        None,
        _opt_str(annotation.get("type")),
        annotation,
    )


def _search_result(result_type: str, url: str, item: Mapping[str, Any]) -> SearchResult:
    """A SearchResult from an item of a built-in tool's result of type ``result_type``."""
    return new_search_result(url, _opt_str(item.get("title")), None, None, result_type, item)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def _index(value: Any) -> int:
    return value if type(value) is int else -1


def _opt_int(value: Any) -> int | None:
    return value if type(value) is int else None


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _opt_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None
