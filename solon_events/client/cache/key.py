"""The cache key of a prompt: a SHA-256 digest of the request in canonical form.

The request is what decides the answer: where it is asked (each model's dialect, the
endpoint's scheme, host, port and path, and the model's name), the conversation, the
tools (and which of them run elsewhere), the options as each model's dialect takes them,
the structured answer asked for, and the settings of the response that change what it
holds (tool calls run or not, the step budget, partial arguments). Never a secret: no
API key, no header, no query string or user info of the endpoint. Never how the answer is
delivered: streamed or not, the event filter, the client's wire protocol (at the gateway
the same conversation asked through ``/v1/messages`` and ``/v1/chat/completions`` is one
request, read into the same messages, tools and neutral options).

:func:`request_key` is None for a prompt that cannot be cached: one that continues a
response paused for approval, changes its steps with ``prepare_step`` (a function: what
it changes cannot be known ahead), or records its frames (``record()``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import attrs
import orjson

from ...tools import ToolSet

if TYPE_CHECKING:
    from ..model import ChatModel
    from ..prompt import ChatPrompt

__all__ = ["KEY_VERSION", "canonical", "endpoint_of", "request_document", "request_key"]

KEY_VERSION = 1
"""Part of every key: a new version of the key's document never reads an old entry."""


def endpoint_of(model: ChatModel) -> list[str]:
    """Where ``model`` is asked: its dialect, its endpoint (scheme, host, port and path;
    no user info, no query: they may hold a key) and its model name."""
    url = urlsplit(model.api_url)
    port = f":{url.port}" if url.port else ""
    return [model.dialect.name, f"{url.scheme}://{url.hostname}{port}{url.path}", model.model]


def canonical(value: Any) -> Any:
    """``value`` as plain JSON data that two equal requests write the same way: an attrs
    value as an object of its class name and its fields (those left at their default
    omitted), mappings with string keys, sequences as lists; anything else by its
    ``repr`` (which may hold an address: such a request then never hits, never collides)."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, Mapping):
        return {str(key): canonical(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [canonical(item) for item in value]
    if attrs.has(type(value)):
        data: dict[str, Any] = {"~": type(value).__name__}
        for field in attrs.fields(type(value)):
            item = getattr(value, field.name)
            if field.default is not attrs.NOTHING and _same(item, field.default):
                continue
            data[field.name] = canonical(item)
        return data
    if isinstance(value, bytes):
        return {"~bytes": hashlib.sha256(value).hexdigest()}
    return {"~repr": repr(value)}


def _same(item: Any, default: Any) -> bool:
    if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
        default = default.factory() if not default.takes_self else attrs.NOTHING
    try:
        return bool(item == default) or (item is None and default is None)
    except Exception:
        return False


def request_document(prompt: ChatPrompt) -> dict[str, Any] | None:
    """What :func:`request_key` hashes (None: the prompt cannot be cached)."""
    if prompt._resume is not None or prompt._prepare_step is not None:
        return None
    if prompt._frame_tap is not None:
        return None
    target = prompt._model
    leaves = target.leaves() if hasattr(target, "leaves") else (target,)  # a group's
    options = dict(prompt._options)
    options_for = getattr(prompt, "_options_for", None)
    by_dialect = {}
    for leaf in leaves:
        name = leaf.dialect.name
        written = {**options_for(name), **options} if options_for is not None else options
        by_dialect[name] = canonical(written)
    output = prompt._output
    return {
        "v": KEY_VERSION,
        "models": [endpoint_of(leaf) for leaf in leaves],
        "max_steps": sorted({leaf.max_steps for leaf in leaves}),
        "messages": canonical(prompt._messages),
        "tools": canonical(ToolSet(prompt._tools).specs()),
        "client_tools": canonical(prompt._client_tools),
        "options": by_dialect,
        "output": None if output is None else canonical(output.format),
        "output_retries": 0 if output is None else output.retries,
        "auto_tool_call": prompt._auto_tool_call,
        "partial_arguments": prompt._partial_arguments,
    }


def request_key(prompt: ChatPrompt) -> str | None:
    """The cache key of ``prompt`` (a hex SHA-256 digest), or None when it cannot be
    cached (see the module's documentation)."""
    document = request_document(prompt)
    if document is None:
        return None
    data = orjson.dumps(document, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
    return hashlib.sha256(data).hexdigest()
