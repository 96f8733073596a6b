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
