"""One wire per route: each reads its provider's requests; the library's adapters
(:mod:`solon_events.adapters.provider_formats`) write the streams of every format but
Bedrock's binary event stream, whose encoder is here (no adapter writes it)."""

from __future__ import annotations

from .anthropic import AnthropicWire
from .base import FormatWire, Frame, RequestView, ToolDecl, Wire
from .bedrock import BedrockWire
from .cohere import CohereWire
from .gemini import GeminiWire
from .google_interactions import GoogleInteractionsWire
from .ollama import OllamaWire
from .openai_chat import OpenAIChatWire
from .openai_responses import OpenAIResponsesWire

__all__ = [
    "WIRES",
    "AnthropicWire",
    "BedrockWire",
    "CohereWire",
    "FormatWire",
    "Frame",
    "GeminiWire",
    "GoogleInteractionsWire",
    "OllamaWire",
    "OpenAIChatWire",
    "OpenAIResponsesWire",
    "RequestView",
    "ToolDecl",
    "Wire",
]

WIRES: dict[str, type[Wire]] = {
    "/v1/chat/completions": OpenAIChatWire,
    "/v1/messages": AnthropicWire,
    "/v1/responses": OpenAIResponsesWire,
    "/v1beta/models/{model}:streamGenerateContent": GeminiWire,
    "/api/chat": OllamaWire,
    "/model/{model}/converse-stream": BedrockWire,
    "/v2/chat": CohereWire,
    "/v1beta/interactions": GoogleInteractionsWire,
}
"""The wire of each route, by its path."""
