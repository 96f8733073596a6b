"""Which dialect an API URL names, and what a built-in dialect's URL looks like.

A provider's endpoint says its wire format: ``.../chat/completions`` is Chat Completions,
``.../responses`` the Responses API, ``.../v1/messages`` Anthropic Messages, a
``...:streamGenerateContent`` method (or the ``.../v1beta`` base) Gemini,
``.../v1beta/interactions`` Google's Interactions API, ``.../v2/chat`` Cohere, ``.../api/chat``
Ollama, ``.../converse-stream`` (or a ``bedrock-runtime`` host) Bedrock.
:func:`dialect_for_url` is what ``ChatModel(dialect="auto")`` (the default) goes by, before
any frame is read: the request must be written in the provider's format. A 404 for a URL
that does not have its dialect's shape names that shape (:func:`expected_url`).
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

__all__ = ["dialect_for_url", "expected_url"]


def _itself(ending: str, example: str, named_by: str | None = None) -> tuple[str, str, str]:
    """The patterns and shape of a dialect posted to the endpoint itself, whose path ends in
    ``ending`` (a URL names the dialect by the longer ending ``named_by``, if given)."""
    return (
        re.escape(named_by or ending) + "$",
        re.escape(ending) + "$",
        f"the endpoint itself, ending in {ending}: {example}",
    )


# dialect: (what the path of a URL it is named by matches, what the path of the URL it
# posts to matches, the shape to show when a 404 says the URL is wrong)
_PATTERNS: dict[str, tuple[str, str, str]] = {
    "openai": _itself("/chat/completions", "https://api.openai.com/v1/chat/completions"),
    "openai-responses": _itself(
        "/responses", "https://api.openai.com/v1/responses", named_by="/v1/responses"
    ),
    "anthropic": _itself(
        "/messages", "https://api.anthropic.com/v1/messages", named_by="/v1/messages"
    ),
    "gemini": (
        r"(?::(?:stream)?[gG]enerateContent|/v1beta(?:/models)?)$",
        r"/v1\w*/.+:(?:stream)?[gG]enerateContent$",
        "the API's base with its version, https://generativelanguage.googleapis.com/v1beta, to "
        "which the model's path is added, or .../v1beta/models/{model}:streamGenerateContent",
    ),
    "google-interactions": (
        r"/interactions$",
        r"/interactions$",
        "the API's base with its version, https://generativelanguage.googleapis.com/v1beta, to "
        "which /interactions is added, or the endpoint itself, ending in /interactions",
    ),
    "cohere": _itself("/v2/chat", "https://api.cohere.com/v2/chat"),
    "ollama": (
        r"/api/chat$",
        r"/api/chat$",
        "the server's /api/chat endpoint: http://localhost:11434/api/chat",
    ),
    "bedrock": (
        r"/converse-stream$",
        r"/model/[^/]+/converse-stream$",
        "the runtime's base, https://bedrock-runtime.us-east-1.amazonaws.com, to which the "
        "model's path is added, or .../model/{modelId}/converse-stream",
    ),
}

_ENDPOINTS: dict[str, tuple[re.Pattern[str], re.Pattern[str], str]] = {
    name: (re.compile(named_by), re.compile(posts_to), shape)
    for name, (named_by, posts_to, shape) in _PATTERNS.items()
}

_BEDROCK_HOST = re.compile(r"^bedrock-runtime(?:-fips)?\.[\w-]+\.amazonaws\.com$")


def _path(url: str) -> str:
    return urlsplit(url).path.rstrip("/")


def dialect_for_url(url: str) -> str | None:
    """The name of the built-in dialect ``url`` plainly names by its path (or, for
    Bedrock, its host), or None when it names none (a base URL such as ``.../v1``, a
    path of the server's own).

    >>> dialect_for_url("https://api.anthropic.com/v1/messages")
    'anthropic'
    """
    path = _path(url)
    for name, (named_by, _posts_to, _shape) in _ENDPOINTS.items():
        if named_by.search(path):
            return name
    if _BEDROCK_HOST.match(urlsplit(url).hostname or "") and path in ("", "/"):
        return "bedrock"
    return None


def expected_url(dialect: str, url: str) -> str | None:
    """What a URL of ``dialect`` looks like, when ``url`` (the one posted to) does not
    look so; None when it does, or for a dialect this module does not know."""
    endpoint = _ENDPOINTS.get(dialect)
    if endpoint is None or endpoint[1].search(_path(url)):
        return None
    return endpoint[2]
