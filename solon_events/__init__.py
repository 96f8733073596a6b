"""solon_events: semantic event streams from the streamed responses of chat models.

A chat model's streamed response becomes an RxPY ``Observable`` of :class:`ChatEvent`
values (text, reasoning, tool calls, server tools, citations, media, safety, usage,
lifecycle and errors) with clean boundaries, per-step and whole-response aggregation and
a delivery filter. The documentation (``docs/``) explains the event model.
"""

from ._moved import MOVED as _MOVED
from ._moved import install as _install_moved
from ._version import __version__ as __version__
from .client.cache import MemoryCache, RedisCache, ResponseCache, SQLiteCache
from .client.fan_out import FanOut, FanOutPrompt, FanOutResponses, fan_out
from .client.limiter import Limiter
from .client.limits import LimitExceededError, Limits
from .client.metering import SpendRecord
from .client.model import ChatModel, ChatPrompt
from .client.router import NoHealthyDeploymentError, Router
from .client.routing import FallbackModel, HedgedModel, ModelGroup, race
from .core import (
    ArgumentDelta,
    ChatAccumulator,
    ChatEventNormalizer,
    ChatStreamSession,
    JsonDelta,
    JsonDeltaBuilder,
    PartialJsonParser,
)
from .dialects.base import ChatDialect, ChatStreamContext, get_dialect
from .event_model.approvals import PendingApproval
from .event_model.errors import (
    ChatConnectionError,
    ChatError,
    ChatHttpError,
    ChatProtocolError,
    ChatTimeoutError,
    ProviderError,
    StructuredOutputError,
    ToolCallError,
)
from .event_model.events import ChatEvent, ChatEventGroup, ChatEventPhase, ChatEventType
from .event_model.filters import ChatEventFilter
from .event_model.finish import FinishReason
from .event_model.messages import (
    ChatRequest,
    OutputFormat,
    SystemMessage,
    ToolMessage,
    ToolSpec,
    UserMessage,
)
from .event_model.results import (
    AssistantMessage,
    Attempt,
    CachedAnswer,
    ChatResponse,
    Citation,
    Cost,
    FileBlock,
    ImageBlock,
    SearchResult,
    TextBlock,
    ToolCall,
    Usage,
    UsageReport,
)
from .event_model.steps import (
    StepContext,
    StepResult,
    StepSettings,
    has_tool_call,
    step_count_is,
)
from .operators import (
    aggregate,
    argument_deltas,
    final_response,
    guard,
    normalize,
    parse,
    partial_arguments,
    partial_json,
    reduce_response,
    respond,
    smooth,
    text_deltas,
)
from .replay import replay
from .tools import McpTools, Tool, ToolContext, ToolSet, tool

__all__ = [
    "ArgumentDelta",
    "AssistantMessage",
    "Attempt",
    "CachedAnswer",
    "ChatAccumulator",
    "ChatConnectionError",
    "ChatDialect",
    "ChatError",
    "ChatEvent",
    "ChatEventFilter",
    "ChatEventGroup",
    "ChatEventNormalizer",
    "ChatEventPhase",
    "ChatEventType",
    "ChatHttpError",
    "ChatModel",
    "ChatPrompt",
    "ChatProtocolError",
    "ChatRequest",
    "ChatResponse",
    "ChatStreamContext",
    "ChatStreamSession",
    "ChatTimeoutError",
    "Citation",
    "Cost",
    "FallbackModel",
    "FanOut",
    "FanOutPrompt",
    "FanOutResponses",
    "FileBlock",
    "FinishReason",
    "HedgedModel",
    "ImageBlock",
    "JsonDelta",
    "JsonDeltaBuilder",
    "LimitExceededError",
    "Limiter",
    "Limits",
    "McpTools",
    "MemoryCache",
    "ModelGroup",
    "NoHealthyDeploymentError",
    "PartialJsonParser",
    "PendingApproval",
    "ProviderError",
    "RedisCache",
    "ResponseCache",
    "SQLiteCache",
    "Router",
    "SearchResult",
    "SpendRecord",
    "StepContext",
    "StepResult",
    "StepSettings",
    "SystemMessage",
    "TextBlock",
    "ToolCall",
    "Tool",
    "ToolCallError",
    "ToolContext",
    "ToolMessage",
    "ToolSet",
    "ToolSpec",
    "OutputFormat",
    "StructuredOutputError",
    "Usage",
    "UsageReport",
    "UserMessage",
    "aggregate",
    "argument_deltas",
    "fan_out",
    "final_response",
    "get_dialect",
    "guard",
    "has_tool_call",
    "normalize",
    "parse",
    "partial_arguments",
    "partial_json",
    "race",
    "reduce_response",
    "replay",
    "respond",
    "smooth",
    "step_count_is",
    "text_deltas",
    "tool",
]

_install_moved()


def __getattr__(name: str) -> object:
    """A moved module by its old attribute name (``solon_events.sse``), with the
    :class:`DeprecationWarning` its old import name gives."""
    if f"{__name__}.{name}" in _MOVED:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
