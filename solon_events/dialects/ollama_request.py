"""The Ollama request (``"ollama"``): the ``/api/chat`` URL, headers and body posted."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from ..event_model.messages import ChatRequest, ToolMessage, UserMessage
from ..event_model.results import AssistantMessage, ImageBlock, TextBlock, ToolCall
from .output_schema import plain_schema
from .request import Endpoint, HttpRequest, bearer, request_headers
from .writing import data_url_parts, function_tool, role_message

__all__ = ["GENERATION_OPTIONS", "TOP_LEVEL_OPTIONS", "chat_request"]

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


def chat_request(request: ChatRequest, endpoint: Endpoint) -> HttpRequest:
    """The ``/api/chat`` request.

    ``api_url`` is the endpoint (``http://localhost:11434/api/chat``); a bare server
    URL gets ``/api/chat`` added. An ``api_key`` (for a server behind a proxy, or
    Ollama's cloud) is sent as ``Authorization: Bearer``. The body holds ``model``,
    ``messages`` (system, user with ``images`` from base64 image blocks, assistant with
    ``thinking`` and ``tool_calls``, and ``tool`` results with ``tool_name``),
    ``tools`` (function schemas), ``stream: true``, a structured answer's ``format`` (its
    schema, or ``"json"`` without one), and ``request.options`` sorted by
    :func:`_apply_options`.
    """
    body: dict[str, Any] = {
        "model": request.model,
        "messages": [_message(m) for m in request.messages],
    }
    if request.tools:
        body["tools"] = [function_tool(t) for t in request.tools]
    output = request.output
    if output is not None:
        body["format"] = "json" if output.schema is None else plain_schema(output.schema)
    _apply_options(body, request.options)
    body["stream"] = True
    headers = request_headers(bearer(endpoint.api_key), endpoint.headers)
    return HttpRequest(url=_chat_url(endpoint.url), headers=headers, body=body)


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


def _message(message: Any) -> dict[str, Any]:
    return role_message(message, "ollama", _user_message, _assistant_message, _tool_result)


def _tool_result(message: ToolMessage) -> dict[str, Any]:
    out = {"role": "tool", "content": message.content, "tool_name": message.name}
    if message.tool_call_id:
        out["tool_call_id"] = message.tool_call_id
    return out


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
    inline = data_url_parts(block.url)
    if inline is not None:
        return inline[1]
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
