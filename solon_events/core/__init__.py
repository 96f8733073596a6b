"""The sans-I/O core: boundary normalization, per-response session, per-step accumulation,
incremental JSON."""

from .accumulator import ChatAccumulator
from .json_deltas import JsonDeltaBuilder
from .normalizer import ChatEventNormalizer
from .partial_arguments import ArgumentDelta
from .partial_json import JsonDelta, PartialJsonParser
from .session import ChatStreamSession

__all__ = [
    "ArgumentDelta",
    "ChatAccumulator",
    "ChatEventNormalizer",
    "ChatStreamSession",
    "JsonDelta",
    "JsonDeltaBuilder",
    "PartialJsonParser",
]
