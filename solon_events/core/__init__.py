"""The sans-I/O core: boundary normalization, per-response session, per-step accumulation."""

from .accumulator import ChatAccumulator
from .normalizer import ChatEventNormalizer
from .session import ChatStreamSession

__all__ = ["ChatAccumulator", "ChatEventNormalizer", "ChatStreamSession"]
