"""The sans-I/O core: boundary normalization, per-response session, per-step accumulation,
incremental JSON."""

from .accumulator import ChatAccumulator
from .normalizer import ChatEventNormalizer
from .partial_json import PartialJsonParser
from .session import ChatStreamSession

__all__ = ["ChatAccumulator", "ChatEventNormalizer", "ChatStreamSession", "PartialJsonParser"]
