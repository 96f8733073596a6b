"""Provider wire formats: each dialect builds requests and parses frames (sans-I/O)."""

from __future__ import annotations

import importlib
from typing import Any

from .base import ChatDialect, dialect_names, get_dialect
from .context import ChatStreamContext
from .reading import make_usage
from .request import HttpRequest
from .tool_calls import ToolCallAssembler

__all__ = [
    "AnthropicDialect",
    "BedrockDialect",
    "ChatDialect",
    "ChatStreamContext",
    "CohereDialect",
    "GeminiDialect",
    "GoogleInteractionsDialect",
    "HttpRequest",
    "OllamaDialect",
    "OpenAIDialect",
    "OpenAIResponsesDialect",
    "ToolCallAssembler",
    "dialect_names",
    "get_dialect",
    "make_usage",
]

_LAZY = {
    "OpenAIDialect": ".openai",
    "OpenAIResponsesDialect": ".openai_responses",
    "AnthropicDialect": ".anthropic",
    "GeminiDialect": ".gemini",
    "OllamaDialect": ".ollama",
    "BedrockDialect": ".bedrock",
    "CohereDialect": ".cohere",
    "GoogleInteractionsDialect": ".google_interactions",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module, __name__), name)
