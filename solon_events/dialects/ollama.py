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

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from ..events import TYPES
from ..messages import ChatRequest, SystemMessage, ToolMessage, ToolSpec, UserMessage
from ..results import AssistantMessage, ImageBlock, TextBlock, ToolCall, new_tool_call
from .base import ChatDialect
from .context import ChatStreamContext
from .reading import expect_object, make_usage, plain_json
from .request import Endpoint, HttpRequest, request_headers

__all__ = ["GENERATION_OPTIONS", "TOP_LEVEL_OPTIONS", "OllamaDialect"]

_T = TYPES
_TEXT_DELTA = _T.TEXT_DELTA
_THINKING_DELTA = _T.THINKING_DELTA

GENERATION_OPTIONS = frozenset(
    {
        "num_keep",
        "seed",
        "num_predict",
        "top_k",
        "top_p",
        "min_p",
        "typical_p",
        "tfs_z",
        "repeat_last_n",
        "temperature",
        "repeat_penalty",
        "presence_penalty",
        "frequency_penalty",
        "mirostat",
        "mirostat_tau",
        "mirostat_eta",
        "penalize_newline",
        "stop",
        "numa",
        "num_ctx",
        "num_batch",
        "num_gpu",
        "main_gpu",
        "low_vram",
        "vocab_only",
        "use_mmap",
        "use_mlock",
        "num_thread",
    }
)
"""Model options Ollama reads from the request's ``options`` object."""

TOP_LEVEL_OPTIONS = frozenset(
    {"think", "format", "keep_alive", "truncate", "shift", "logprobs", "top_logprobs"}
)
"""Options that are fields of the ``/api/chat`` request itself."""

_OPTION_NAMES = {"max_tokens": "num_predict", "max_completion_tokens": "num_predict"}
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

    def request_for(self, request: ChatRequest, endpoint: Endpoint) -> HttpRequest:
        """The ``/api/chat`` request.

        ``api_url`` is the endpoint (``http://localhost:11434/api/chat``); a bare server
        URL gets ``/api/chat`` added. An ``api_key`` (for a server behind a proxy, or
        Ollama's cloud) is sent as ``Authorization: Bearer``. The body holds ``model``,
        ``messages`` (system, user with ``images`` from base64 image blocks, assistant with
        ``thinking`` and ``tool_calls``, and ``tool`` results with ``tool_name``),
        ``tools`` (function schemas), ``stream: true``, and ``request.options`` sorted by
        :func:`_apply_options`.
        """
        api_url, api_key, headers = endpoint.url, endpoint.api_key, endpoint.headers
        body: dict[str, Any] = {
            "model": request.model,
            "messages": [_message(m) for m in request.messages],
        }
        if request.tools:
            body["tools"] = [_tool(t) for t in request.tools]
        _apply_options(body, request.options)
        body["stream"] = True
        all_headers = request_headers(
            {"Authorization": f"Bearer {api_key}"} if api_key else {}, headers
        )
        return HttpRequest(url=_chat_url(api_url), headers=all_headers, body=body)

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
            ctx.send(_T.RAW, raw_type="ollama.unknown", raw=frame)


# parsing


def _tool_call(ctx: ChatStreamContext, call: dict[str, Any]) -> None:
    function = call.get("function")
    if type(function) is not dict or not function.get("name"):
        ctx.send(_T.RAW, raw_type="ollama.tool_call", raw=call)
        return
    position = ctx.state.get(_COUNT_KEY, 0)
    ctx.state[_COUNT_KEY] = position + 1
    given = call.get("id")
    call_id = given if isinstance(given, str) and given else f"ollama_call_{ctx.step}_{position}"
    arguments = function.get("arguments")
    tool_call = (
        new_tool_call(call_id, str(function["name"]), None, arguments, position)
        if isinstance(arguments, str)
        else new_tool_call(
            call_id,
            str(function["name"]),
            dict(arguments) if type(arguments) is dict else {},
            "",
            position,
        )
    )
    ctx.send(
        _T.TOOL_CALL_CHUNK,
        index=position,
        tool_call_id=call_id,
        tool_call=tool_call,
        raw=call,
    )


def _done(ctx: ChatStreamContext, frame: dict[str, Any]) -> None:
    prompt = _count(frame.get("prompt_eval_count"))
    completion = _count(frame.get("eval_count"))
    if prompt or completion:
        source = {key: frame[key] for key in _METRICS if key in frame}
        usage = make_usage(prompt_tokens=prompt, completion_tokens=completion, source=source)
        ctx.send(_T.USAGE, usage=usage, raw=frame)
    reason = frame.get("done_reason")
    ctx.finish(reason if isinstance(reason, str) and reason else "stop")


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


# request building


def _chat_url(api_url: str) -> str:
    if urlsplit(api_url).path in ("", "/"):
        return api_url.rstrip("/") + "/api/chat"
    return api_url


def _apply_options(body: dict[str, Any], options: Mapping[str, Any]) -> None:
    """Sort ``request.options`` into the body.

    ``think``, ``format``, ``keep_alive``, ``truncate``, ``shift``, ``logprobs`` and
    ``top_logprobs`` are request fields. ``max_tokens`` (or ``max_completion_tokens``)
    becomes ``options.num_predict``; a ``stop`` string is wrapped in a list; an ``options``
    mapping is merged into ``options``. Everything else (``temperature``, ``top_p``,
    ``num_ctx``, ``seed``, ... see :data:`GENERATION_OPTIONS`) goes into ``options``, where
    Ollama logs a name it does not know and ignores it.
    """
    model_options: dict[str, Any] = {}
    for key, value in options.items():
        if key in TOP_LEVEL_OPTIONS:
            body[key] = value
        elif key == "options" and isinstance(value, Mapping):
            model_options.update(value)
        elif key == "stop" and isinstance(value, str):
            model_options["stop"] = [value]
        else:
            model_options[_OPTION_NAMES.get(key, key)] = value
    if model_options:
        body["options"] = model_options


def _tool(spec: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": plain_json(spec.parameters),
        },
    }


def _message(message: Any) -> dict[str, Any]:
    if isinstance(message, SystemMessage):
        return {"role": "system", "content": message.text}
    if isinstance(message, UserMessage):
        return _user_message(message)
    if isinstance(message, AssistantMessage):
        return _assistant_message(message)
    if isinstance(message, ToolMessage):
        out = {"role": "tool", "content": message.content, "tool_name": message.name}
        if message.tool_call_id:
            out["tool_call_id"] = message.tool_call_id
        return out
    if isinstance(message, Mapping):
        return dict(message)
    raise TypeError(f"the ollama dialect cannot send a {type(message).__name__} message")


def _user_message(message: UserMessage) -> dict[str, Any]:
    texts = [message.text] if message.text else []
    images: list[str] = []
    for block in message.blocks:
        if isinstance(block, TextBlock):
            texts.append(block.text)
        elif isinstance(block, ImageBlock):
            images.append(_image_data(block))
        else:
            raise TypeError(f"the ollama dialect cannot send a {type(block).__name__} block")
    out: dict[str, Any] = {"role": "user", "content": "\n\n".join(texts)}
    if images:
        out["images"] = images
    return out


def _image_data(block: ImageBlock) -> str:
    """The base64 data of an image: Ollama takes images as data only, never by URL."""
    if block.data:
        return block.data
    url = block.url or ""
    if url.startswith("data:") and ";base64," in url:
        return url.partition(";base64,")[2]
    raise ValueError("Ollama takes images as base64 data (or a data: URL), not by URL")


def _assistant_message(message: AssistantMessage) -> dict[str, Any]:
    out: dict[str, Any] = {"role": "assistant", "content": message.text}
    if message.thinking:
        out["thinking"] = message.thinking
    if message.tool_calls:
        out["tool_calls"] = [_sent_call(call) for call in message.tool_calls]
    return out


def _sent_call(call: ToolCall) -> dict[str, Any]:
    return {"function": {"name": call.name, "arguments": dict(call.arguments)}}
