"""One finish vocabulary for every provider: :class:`FinishReason` and its table (sans-I/O).

Each provider says in its own words why a response ended (OpenAI ``stop``, the Responses
API ``completed``, Anthropic ``end_turn``, Gemini ``STOP``, Cohere ``COMPLETE`` ...).
Every :class:`~solon_events.ChatResponse` keeps that word in ``finish_reason`` and carries
beside it ``finish``, the same reason in one small vocabulary:

==================  ========================================================================
``finish``          the providers' words (any letter case)
==================  ========================================================================
``stop``            ``stop``, ``end_turn``, ``stop_sequence``, ``pause_turn``, ``completed``,
                    ``complete``, ``finish``, ``eos``; no word at all from a stream that
                    completed
``length``          ``length``, ``max_tokens``, ``max_output_tokens``,
                    ``model_context_window_exceeded``, ``incomplete``
``tool_calls``      ``tool_calls``, ``tool_use``, ``function_call``, ``tool_call``,
                    ``requires_action``; and a ``stop`` of a step that made tool calls
                    (Gemini's ``STOP``, the Responses API's ``completed``, Ollama's ``stop``)
``content_filter``  ``content_filter``, ``content_filtered``, ``guardrail_intervened``,
                    ``refusal``, ``safety``, ``recitation``, ``blocklist``,
                    ``prohibited_content``, ``spii``, ``image_safety``,
                    ``image_prohibited_content``, ``image_recitation``
``error``           ``error``, ``failed``, ``malformed_function_call``,
                    ``unexpected_tool_call``, ``timeout``; and every response that failed
                    (its ERROR event's, a failed step's)
``other``           any other word (``cancelled``, ``other``, ``language``, ``load``,
                    ``too_many_tool_calls``, ...); a response the provider stopped (ABORT)
==================  ========================================================================

The word is mapped once, when a step ends (never per frame). The provider-format encoders
(:mod:`solon_events.adapters.provider_formats`) write each format's own word back from
``finish`` (see their ``FINISH_WORDS``).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

__all__ = ["FINISH_REASONS", "FinishReason", "finish_reason_of", "unified_finish"]


class FinishReason(str, enum.Enum):
    """Why a response ended, in one vocabulary across providers (see the module's table).

    A ``str``: ``FinishReason.STOP == "stop"``, and it is written as its value in JSON.
    """

    STOP = "stop"
    """The model ended its answer (or met a stop sequence)."""
    LENGTH = "length"
    """The answer reached its token limit (or the context window's)."""
    TOOL_CALLS = "tool_calls"
    """The model called tools, which are to be run and answered."""
    CONTENT_FILTER = "content_filter"
    """A safety filter or guardrail stopped the answer, or the model refused."""
    ERROR = "error"
    """The response failed, or the provider ended it saying it went wrong."""
    OTHER = "other"
    """Any other reason (a cancellation, an unlisted word)."""

    def __str__(self) -> str:
        return self.value


_S, _L, _T, _C, _E, _O = (
    FinishReason.STOP,
    FinishReason.LENGTH,
    FinishReason.TOOL_CALLS,
    FinishReason.CONTENT_FILTER,
    FinishReason.ERROR,
    FinishReason.OTHER,
)

FINISH_REASONS: Mapping[str, FinishReason] = {
    # OpenAI Chat Completions and compatible servers, Ollama
    "stop": _S,
    "eos": _S,
    "finish": _S,
    "length": _L,
    "tool_calls": _T,
    "function_call": _T,
    "content_filter": _C,
    # Anthropic, Bedrock
    "end_turn": _S,
    "stop_sequence": _S,
    "pause_turn": _S,
    "max_tokens": _L,
    "model_context_window_exceeded": _L,
    "tool_use": _T,
    "refusal": _C,
    "guardrail_intervened": _C,
    "content_filtered": _C,
    # the Responses API (status, incomplete_details.reason), the Interactions API (status)
    "completed": _S,
    "max_output_tokens": _L,
    "incomplete": _L,
    "requires_action": _T,
    "failed": _E,
    "cancelled": _O,
    # Gemini
    "safety": _C,
    "recitation": _C,
    "blocklist": _C,
    "prohibited_content": _C,
    "spii": _C,
    "image_safety": _C,
    "image_prohibited_content": _C,
    "image_recitation": _C,
    "malformed_function_call": _E,
    "unexpected_tool_call": _E,
    "other": _O,
    # Cohere
    "complete": _S,
    "tool_call": _T,
    "error": _E,
    "timeout": _E,
}
"""Each provider word (lower case) and its :class:`FinishReason`; a word not listed is
``other``."""


def unified_finish(word: str | None, has_tool_calls: bool = False) -> FinishReason:
    """The :class:`FinishReason` of a provider's finish ``word`` (any letter case) for a
    step that completed: ``stop`` without a word, ``other`` for a word not listed, and
    ``tool_calls`` for a stop of a step that made tool calls."""
    reason = FINISH_REASONS.get(word.lower(), _O) if word else _S
    return _T if reason is _S and has_tool_calls else reason


def finish_reason_of(value: FinishReason | str | None) -> FinishReason | None:
    """``value`` as a :class:`FinishReason` (None stays None): one of the vocabulary's
    values, else a provider's word, mapped as :func:`unified_finish` maps it."""
    if value is None or isinstance(value, FinishReason):
        return value
    try:
        return FinishReason(value)
    except ValueError:
        return unified_finish(str(value))
