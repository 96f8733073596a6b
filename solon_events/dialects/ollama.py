"""The Ollama dialect (``"ollama"``): ``POST /api/chat`` streaming NDJSON.

Each line is one chat response object. What a line carries, and the events it becomes:

- ``message.thinking`` -> THINKING_DELTA; ``message.content`` -> TEXT_DELTA.
- ``message.tool_calls`` (each sent whole: ``function.name`` and ``function.arguments``, an
  object) -> one TOOL_CALL_CHUNK per call, its position in the step as ``index``. Ollama
  gives calls no id (newer servers may: it is used when present), so the dialect makes one,
  ``ollama_call_<step>_<position>``, for the tool loop to pair each result with its call.
- ``done: true`` -> USAGE (``prompt_eval_count`` as prompt tokens, ``eval_count``, which
  counts thinking too, as completion tokens, their sum as total) and the completion signal
  with ``done_reason`` (``"stop"`` when the server gives none).
- ``model`` -> ``ctx.model``. Ollama sends no response id.
- ``{"error": "..."}`` -> a provider failure carrying the error object.
"""

from __future__ import annotations

from typing import Any

from ..event_model.events import EVENT_TYPES
from ..event_model.messages import ChatRequest, OutputFormat, OutputMode
from .base import ChatDialect
from .context import ChatStreamContext
from .ollama_request import GENERATION_OPTIONS, TOP_LEVEL_OPTIONS, chat_request
from .reading import expect_object, make_usage
from .request import Endpoint, HttpRequest
from .tool_calls import send_whole_call

__all__ = ["GENERATION_OPTIONS", "TOP_LEVEL_OPTIONS", "OllamaDialect"]

_TEXT_DELTA = EVENT_TYPES.TEXT_DELTA
_THINKING_DELTA = EVENT_TYPES.THINKING_DELTA

_COUNT_KEY = "ollama.count"  # tool calls seen in the step: the next call's position
_METRICS = (
    "total_duration",
    "load_duration",
    "prompt_eval_count",
    "prompt_eval_duration",
    "eval_count",
    "eval_duration",
)


class OllamaDialect(ChatDialect):
    """Ollama's native chat API, ``/api/chat`` with ``stream: true`` (NDJSON)."""

    name = "ollama"
    assistant_prefill = True  # /api/chat continues a trailing assistant message

    native_output = True

    def request_for(self, request: ChatRequest, endpoint: Endpoint) -> HttpRequest:
        """The ``/api/chat`` request (:func:`chat_request`)."""
        return chat_request(request, endpoint)

    def output_mode(self, model: str, output: OutputFormat) -> OutputMode:
        """``"native"``: ``format`` (the schema, or ``"json"``). Ollama cannot make the
        model call a tool, so it has no ``"tool"`` mode."""
        return "native"

    def parse_frame(self, ctx: ChatStreamContext, frame: Any) -> None:
        """Translate one NDJSON line (a chat response object or an error) into events."""
        # Most lines are a message of role and content only, not done: plain lookups tell
        # (a missing key or a non-object raises on the way, and the general code decides).
        try:
            message = frame["message"]
            if frame["done"] is False and len(message) == 2 and "role" in message:
                content = message["content"]
                model = frame["model"]
                if type(content) is str and type(model) is str and "error" not in frame:
                    if model and model != ctx.model:
                        ctx.model = model
                    if content:
                        ctx.send(_TEXT_DELTA, text=content, raw=frame)
                    return
        except (KeyError, TypeError):
            pass
        expect_object(frame)
        get = frame.get
        if get("error"):
            ctx.fail(frame)
            return
        model = get("model")
        if model and model != ctx.model and type(model) is str:
            ctx.model = model
        message = get("message")
        if type(message) is dict:
            thinking = message.get("thinking")
            if thinking and type(thinking) is str:
                ctx.send(_THINKING_DELTA, text=thinking, raw=frame)
            content = message.get("content")
            if content and type(content) is str:
                ctx.send(_TEXT_DELTA, text=content, raw=frame)
            calls = message.get("tool_calls")
            if calls and type(calls) is list:
                for call in calls:
                    if type(call) is dict:
                        _tool_call(ctx, call)
        if get("done"):
            _done(ctx, frame)
        elif type(message) is not dict:
            ctx.send(EVENT_TYPES.RAW, raw_type="ollama.unknown", raw=frame)


# parsing


def _tool_call(ctx: ChatStreamContext, call: dict[str, Any]) -> None:
    function = call.get("function")
    if type(function) is not dict or not function.get("name"):
        ctx.send(EVENT_TYPES.RAW, raw_type="ollama.tool_call", raw=call)
        return
    position = ctx.state.get(_COUNT_KEY, 0)
    ctx.state[_COUNT_KEY] = position + 1
    given = call.get("id")
    call_id = given if isinstance(given, str) and given else f"ollama_call_{ctx.step}_{position}"
    send_whole_call(ctx, call_id, str(function["name"]), function.get("arguments"), position, call)


def _done(ctx: ChatStreamContext, frame: dict[str, Any]) -> None:
    prompt = _count(frame.get("prompt_eval_count"))
    completion = _count(frame.get("eval_count"))
    if prompt or completion:
        source = {key: frame[key] for key in _METRICS if key in frame}
        usage = make_usage(prompt_tokens=prompt, completion_tokens=completion, source=source)
        ctx.send(EVENT_TYPES.USAGE, usage=usage, raw=frame)
    reason = frame.get("done_reason")
    ctx.finish(reason if isinstance(reason, str) and reason else "stop")


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
