"""One encoder per provider wire format, by route."""

from __future__ import annotations

from .anthropic import AnthropicWire
from .base import Frame, RequestView, ToolDecl, Wire
from .bedrock import BedrockWire
from .gemini import GeminiWire
from .ollama import OllamaWire
from .openai_chat import OpenAIChatWire
from .openai_responses import OpenAIResponsesWire

__all__ = [
    "AnthropicWire",
    "BedrockWire",
    "Frame",
    "GeminiWire",
    "OllamaWire",
    "OpenAIChatWire",
    "OpenAIResponsesWire",
    "RequestView",
    "ToolDecl",
    "Wire",
]
