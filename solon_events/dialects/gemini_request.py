"""The Gemini request (``"gemini"``): the ``streamGenerateContent`` URL, headers and body."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl

from ..event_model.messages import ChatRequest, SystemMessage, ToolMessage, ToolSpec, UserMessage
from ..event_model.results import AssistantMessage, FileBlock, ImageBlock, TextBlock
from .gemini_schema import gemini_schema
from .output_schema import plain_schema
from .reading import plain_json
from .request import Endpoint, HttpRequest, request_headers
from .writing import data_url_parts, place_option, thinking_signature, user_parts, verbatim

if TYPE_CHECKING:
    from ..event_model.messages import OutputFormat

__all__ = ["SKIP_SIGNATURE", "generate_content_request", "response_schema", "stream_url"]

SKIP_SIGNATURE = "skip_thought_signature_validator"
"""The placeholder signature Google documents for function calls whose signature is unknown."""


def generate_content_request(request: ChatRequest, endpoint: Endpoint) -> HttpRequest:
    """The ``streamGenerateContent`` request: URL, ``x-goog-api-key`` header, JSON body.

    The URL is made by :func:`stream_url`; the API key travels only in the
    ``x-goog-api-key`` header, never in the URL (a ``?key=`` in ``api_url`` is moved into
    the header, so it cannot reach a log line or an error message). The body holds:

    - ``contents``: user turns (role ``user``: ``text`` parts, ``inlineData`` for an
      ``ImageBlock``/``FileBlock`` with data, ``fileData`` for one with a URL), assistant
      turns (role ``model``: ``text``, ``inlineData`` for image blocks, ``functionCall``
      parts) and tool results (role ``user``: ``functionResponse`` parts with
      ``response={"result": content}``, or ``{"error": content}`` for a failed tool;
      consecutive results form one turn, as the API pairs them with parallel calls).
      The first ``functionCall`` of an assistant turn carries the turn's
      ``metadata["thinking_signature"]``, or :data:`SKIP_SIGNATURE` when it is unknown
      (Gemini 3 rejects function calls sent back without a signature); a turn without
      calls carries a known signature on its last part.
    - ``systemInstruction``: the system messages, one text part each.
    - ``tools``: ``[{"functionDeclarations": [{name, description, parameters}]}]``.
    - ``generationConfig`` and top-level fields from ``request.options``, see
      :func:`_apply_options`; a structured answer as ``responseMimeType`` and its schema
      (:func:`response_schema`), which options of the same names replace.
    """
    api_url = endpoint.url
    system, contents = _contents(request.messages)
    body: dict[str, Any] = {"contents": contents}
    if system:
        body["systemInstruction"] = {"parts": system}
    if request.tools:
        body["tools"] = [{"functionDeclarations": [_declaration(t) for t in request.tools]}]
    options = request.options
    if request.output is not None:
        options = {**response_schema(request.output, request.model), **options}
    _apply_options(body, options)
    api_key = endpoint.api_key or _url_key(api_url)
    headers = request_headers({"x-goog-api-key": api_key} if api_key else {}, endpoint.headers)
    return HttpRequest(url=stream_url(api_url, request.model), headers=headers, body=body)


def stream_url(api_url: str, model: str) -> str:
    """The ``streamGenerateContent`` URL, always with ``alt=sse``.

    ``api_url`` is either the full method URL (ending in ``:streamGenerateContent``, or
    ``:generateContent``, which is turned into the streaming method) or the API's base URL
    (``https://generativelanguage.googleapis.com/v1beta``, with or without ``/models``), to
    which ``/models/{model}:streamGenerateContent`` is added. An ``alt`` parameter already
    there is replaced by ``alt=sse``; a ``key`` parameter is dropped (the key travels in a
    header, see :func:`generate_content_request`); other query parameters are kept.
    """
    base, _, query = api_url.partition("?")
    if base.endswith(":generateContent"):
        base = base[: -len(":generateContent")] + ":streamGenerateContent"
    if not base.endswith(":streamGenerateContent"):
        base = base.rstrip("/")
        name = model if model.startswith(("models/", "tunedModels/")) else f"models/{model}"
        if base.endswith("/models"):
            base = base[: -len("/models")]
        base = f"{base}/{name}:streamGenerateContent"
    params = [p for p in query.split("&") if p and not p.startswith(("alt=", "key="))]
    return f"{base}?{'&'.join(['alt=sse', *params])}"


def _url_key(api_url: str) -> str | None:
    """The ``key`` query parameter of ``api_url``, if it has one."""
    for name, value in parse_qsl(api_url.partition("?")[2]):
        if name == "key" and value:
            return value
    return None


_OPTION_NAMES = {
    "max_tokens": "maxOutputTokens",
    "max_output_tokens": "maxOutputTokens",
    "max_completion_tokens": "maxOutputTokens",
    "stop": "stopSequences",
    "stop_sequences": "stopSequences",
}
_TOP_LEVEL_OPTIONS = frozenset({"safetySettings", "toolConfig", "cachedContent", "labels"})


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


def _apply_options(body: dict[str, Any], options: Mapping[str, Any]) -> None:
    """Put ``request.options`` into the body.

    Names are taken in snake_case or camelCase (``top_p`` is sent as ``topP``).
    ``max_tokens`` (and ``max_output_tokens``, ``max_completion_tokens``) become
    ``maxOutputTokens``; ``stop`` / ``stop_sequences`` become ``stopSequences`` (a string
    is wrapped in a list); ``thinking_config`` / ``thinkingConfig`` becomes
    ``generationConfig.thinkingConfig`` with its keys camelCased (``thinking_budget`` ->
    ``thinkingBudget``, ``include_thoughts`` -> ``includeThoughts``); a
    ``generation_config`` mapping is merged into ``generationConfig`` as it is.
    ``safety_settings``, ``tool_config``, ``cached_content`` and ``labels`` are top-level
    request fields; ``tools`` entries (such as ``{"googleSearch": {}}``) are appended to the
    request's tools. Every other option goes into ``generationConfig`` (``temperature``,
    ``top_k``, ``seed``, ``response_mime_type``, ``response_schema``, ...).
    """
    config: dict[str, Any] = {}
    for key, value in options.items():
        name = _OPTION_NAMES.get(key) or _camel(key)
        if name == "generationConfig" and isinstance(value, Mapping):
            config.update(value)
        elif name == "thinkingConfig" and isinstance(value, Mapping):
            config[name] = {_camel(k): v for k, v in value.items()}
        else:
            place_option(body, config, name, value, _TOP_LEVEL_OPTIONS, "stopSequences")
    if config:
        body["generationConfig"] = config


def response_schema(output: OutputFormat, model: str) -> dict[str, Any]:
    """The generation options of a structured answer: ``responseMimeType``
    ``application/json`` and the schema as ``responseJsonSchema`` (JSON schema), or as
    ``responseSchema`` (:func:`~.gemini_schema.gemini_schema`) for the models before it
    (Gemini 1.x and 2.0); no schema: JSON mode."""
    options: dict[str, Any] = {"responseMimeType": "application/json"}
    if output.schema is None:
        return options
    if model.removeprefix("models/").startswith(("gemini-1.", "gemini-2.0")):
        options["responseSchema"] = gemini_schema(output.schema)
    else:
        options["responseJsonSchema"] = plain_schema(output.schema)
    return options


def _declaration(spec: ToolSpec) -> dict[str, Any]:
    declaration: dict[str, Any] = {"name": spec.name, "description": spec.description}
    if spec.parameters.get("properties"):
        declaration["parameters"] = plain_json(spec.parameters)
    return declaration


def _contents(messages: Sequence[Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The system parts and the ``contents`` of the conversation."""
    system: list[dict[str, Any]] = []
    contents: list[dict[str, Any]] = []
    results: dict[str, Any] | None = None  # the turn collecting consecutive tool results
    for message in messages:
        if isinstance(message, ToolMessage):
            if results is None:
                results = {"role": "user", "parts": []}
                contents.append(results)
            results["parts"].append(_function_response(message))
            continue
        results = None
        if isinstance(message, SystemMessage):
            system.append({"text": message.text})
        elif isinstance(message, UserMessage):
            contents.append({"role": "user", "parts": user_parts(message, None, _block_part)})
        elif isinstance(message, AssistantMessage):
            contents.append({"role": "model", "parts": _model_parts(message)})
        else:
            contents.append(verbatim(message, "gemini", "message"))
    return system, contents


def _block_part(block: Any) -> dict[str, Any]:
    """A content part for an image, file or text block (or a ready-made mapping)."""
    if isinstance(block, TextBlock):
        return {"text": block.text}
    if isinstance(block, (ImageBlock, FileBlock)):
        default = "image/png" if isinstance(block, ImageBlock) else "application/octet-stream"
        return _media_part(block.url, block.data, block.mime_type or default)
    return verbatim(block, "gemini", "block")


def _media_part(url: str | None, data: str | None, mime_type: str) -> dict[str, Any]:
    """``inlineData`` for base64 data (or a ``data:`` URL), ``fileData`` for a URL."""
    if data:
        return {"inlineData": {"mimeType": mime_type, "data": data}}
    inline = data_url_parts(url)
    if inline is not None:
        return {"inlineData": {"mimeType": inline[0] or mime_type, "data": inline[1]}}
    if url:
        return {"fileData": {"mimeType": mime_type, "fileUri": url}}
    raise ValueError("an image or file block needs a url or data")


def _model_parts(message: AssistantMessage) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = [{"text": message.text}] if message.text else []
    parts.extend(_block_part(b) for b in message.blocks if isinstance(b, (ImageBlock, FileBlock)))
    signature = thinking_signature(message)
    for position, call in enumerate(message.tool_calls):
        function_call: dict[str, Any] = {"name": call.name, "args": dict(call.arguments)}
        if call.id:
            function_call["id"] = call.id
        part: dict[str, Any] = {"functionCall": function_call}
        if position == 0:
            part["thoughtSignature"] = signature or SKIP_SIGNATURE
        parts.append(part)
    if signature and not message.tool_calls and parts:
        parts[-1]["thoughtSignature"] = signature
    return parts or [{"text": ""}]


def _function_response(message: ToolMessage) -> dict[str, Any]:
    key = "error" if message.is_error else "result"
    response: dict[str, Any] = {"name": message.name, "response": {key: message.content}}
    if message.tool_call_id:
        response["id"] = message.tool_call_id
    return {"functionResponse": response}
