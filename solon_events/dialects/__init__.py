"""Provider wire formats: each dialect builds requests and parses frames (sans-I/O)."""

from __future__ import annotations

import importlib
from typing import Any

from .base import (
    ChatDialect,
    ChatStreamContext,
    HttpRequest,
    ToolCallAssembler,
    dialect_names,
    get_dialect,
    make_usage,
)

__all__ = [
    "AnthropicDialect",
    "ChatDialect",
    "ChatStreamContext",
    "GeminiDialect",
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
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module, __name__), name)
