"""The Interactions API request (``"google-interactions"``): the URL, headers and body
posted to ``/v1beta/interactions``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..event_model.messages import ChatRequest, SystemMessage, ToolMessage, ToolSpec, UserMessage
from ..event_model.results import AssistantMessage, FileBlock, ImageBlock, TextBlock
from .output_schema import plain_schema
from .reading import plain_json
from .request import Endpoint, HttpRequest, request_headers
from .writing import (
    data_url_parts,
    place_option,
    thinking_signature,
    tool_definition,
    user_parts,
    verbatim,
)

__all__ = ["REQUEST_FIELDS", "assistant_steps", "interactions_request", "interactions_url"]

REQUEST_FIELDS = frozenset(
    {
        "background",
        "cached_content",
        "continuation_token",
        "environment",
        "generation_config",
        "labels",
        "previous_interaction_id",
        "response_format",
        "response_mime_type",
        "response_modalities",
        "safety_settings",
        "service_tier",
        "store",
        "tools",
        "webhook_config",
    }
)
"""The options sent as top-level request fields; every other option goes into
``generation_config``."""

_OPTION_NAMES = {"max_tokens": "max_output_tokens", "stop": "stop_sequences"}


def interactions_request(request: ChatRequest, endpoint: Endpoint) -> HttpRequest:
    """The streaming ``interactions.create`` request: :func:`interactions_url`, the key in
    ``x-goog-api-key``, a JSON body of:

    - ``model``, ``stream: true``;
    - ``system_instruction``: the system messages' text, joined by a blank line;
    - ``input``: the conversation as steps: a user message is a ``user_input`` step of
      ``text``, ``image`` and ``document`` content (``data`` and ``mime_type``, or ``uri``); an
      assistant turn is a ``thought`` step when it has thinking or a signature
      (``metadata["thinking_signature"]``, which the API wants back), a ``model_output``
      step with its text, and a ``function_call`` step per tool call; a tool result is a
      ``function_result`` step (``call_id``, ``name``, ``result``, ``is_error``);
    - ``tools``: ``{"type": "function", name, description, parameters}`` each; a ``tools``
      option (built-in tools such as ``{"type": "google_search"}``) is appended;
    - the options: the API's own request fields (:data:`REQUEST_FIELDS`) as they are,
      every other into ``generation_config`` (``temperature``, ``top_p``, ``seed``,
      ``thinking_level``, ...; ``max_tokens`` as ``max_output_tokens``, ``stop`` as
      ``stop_sequences``), merged over a ``generation_config`` option;
    - a structured answer: ``response_format`` ``{"type": "text", "mime_type":
      "application/json", "schema": ...}`` (a ``response_format`` option replaces it).
    """
    system, steps = _input(request.messages)
    body: dict[str, Any] = {"model": request.model, "input": steps}
    if system:
        body["system_instruction"] = "\n\n".join(system)
    if request.tools:
        body["tools"] = [_tool(spec) for spec in request.tools]
    output = request.output
    if output is not None:
        response_format = {"type": "text", "mime_type": "application/json"}
        if output.schema is not None:
            response_format["schema"] = plain_schema(output.schema)
        body["response_format"] = response_format
    _apply_options(body, request.options)
    body["stream"] = True
    api_key = endpoint.api_key
    headers = request_headers({"x-goog-api-key": api_key} if api_key else {}, endpoint.headers)
    return HttpRequest(url=interactions_url(endpoint.url), headers=headers, body=body)


def interactions_url(api_url: str) -> str:
    """The ``interactions`` URL: ``api_url`` when its path ends in ``/interactions``, else
    the API's base URL (``https://generativelanguage.googleapis.com/v1beta``) with
    ``/interactions`` added (query parameters kept)."""
    base, mark, query = api_url.partition("?")
    base = base.rstrip("/")
    if not base.endswith("/interactions"):
        base += "/interactions"
    return base + mark + query


def _apply_options(body: dict[str, Any], options: Mapping[str, Any]) -> None:
    config: dict[str, Any] = {}
    for key, value in options.items():
        name = _OPTION_NAMES.get(key, key)
        if name == "generation_config" and isinstance(value, Mapping):
            config = {**value, **config}
        else:
            place_option(body, config, name, value, REQUEST_FIELDS, "stop_sequences")
    if config:
        body["generation_config"] = config


def _tool(spec: ToolSpec) -> dict[str, Any]:
    return {"type": "function", **tool_definition(spec, "parameters", plain_json(spec.parameters))}


def _input(messages: Sequence[Any]) -> tuple[list[str], list[dict[str, Any]]]:
    """The system texts and the ``input`` steps of a conversation."""
    system: list[str] = []
    steps: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, SystemMessage):
            system.append(message.text)
        elif isinstance(message, UserMessage):
            steps.append({"type": "user_input", "content": user_parts(message, "text", _content)})
        elif isinstance(message, AssistantMessage):
            steps.extend(assistant_steps(message))
        elif isinstance(message, ToolMessage):
            steps.append(_function_result(message))
        else:
            steps.append(verbatim(message, "google-interactions", "message"))
    return system, steps


def _content(block: Any) -> dict[str, Any]:
    """A content item of an image, file or text block (or a ready-made mapping)."""
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text}
    if isinstance(block, ImageBlock):
        return _media("image", block.url, block.data, block.mime_type)
    if isinstance(block, FileBlock):
        return _media("document", block.url, block.data, block.mime_type)
    return verbatim(block, "google-interactions", "block")


def _media(kind: str, url: str | None, data: str | None, mime_type: str | None) -> dict[str, Any]:
    """Base64 ``data`` (a ``data:`` URL's included) or a ``uri``, with its mime type."""
    item: dict[str, Any] = {"type": kind}
    inline = data_url_parts(url) if not data else None
    if data:
        item["data"] = data
    elif inline is not None:
        mime_type = inline[0] or mime_type
        item["data"] = inline[1]
    elif url:
        item["uri"] = url
    else:
        raise ValueError(f"an {kind} block needs a url or data")
    if mime_type:
        item["mime_type"] = mime_type
    return item


def assistant_steps(message: AssistantMessage) -> list[dict[str, Any]]:
    """An assistant turn as the API's steps: a ``thought`` step when it has thinking or a
    signature (``summary`` and ``signature``), a ``model_output`` step of its text, images
    and files, then a ``function_call`` step per tool call (``id``, ``name``,
    ``arguments``)."""
    steps: list[dict[str, Any]] = []
    signature = thinking_signature(message)
    if message.thinking or signature:
        thought: dict[str, Any] = {"type": "thought"}
        if signature:
            thought["signature"] = signature
        if message.thinking:
            thought["summary"] = [{"type": "text", "text": message.thinking}]
        steps.append(thought)
    output = [{"type": "text", "text": message.text}] if message.text else []
    output.extend(
        _content(block) for block in message.blocks if isinstance(block, (ImageBlock, FileBlock))
    )
    if output:
        steps.append({"type": "model_output", "content": output})
    for call in message.tool_calls:
        steps.append(
            {
                "type": "function_call",
                "id": call.id,
                "name": call.name,
                "arguments": dict(call.arguments),
            }
        )
    return steps


def _function_result(message: ToolMessage) -> dict[str, Any]:
    step: dict[str, Any] = {
        "type": "function_result",
        "call_id": message.tool_call_id,
        "name": message.name,
        "result": message.content,
    }
    if message.is_error:
        step["is_error"] = True
    return step
