"""The generation options a client sends, in neutral terms, and as each upstream dialect
takes them.

Every client protocol names the same few knobs its own way (``max_tokens``,
``max_output_tokens``, ``maxOutputTokens``, ``options.num_predict``; ``reasoning_effort``,
``reasoning.effort``, ``thinking.budget_tokens``, ``thinkingConfig.thinkingBudget``,
``think``). :class:`GenerationOptions` holds them once; :meth:`GenerationOptions.for_dialect`
writes them as the options of a :class:`~solon_events.ChatPrompt` for the upstream dialect
(which its request builder puts into the provider's body). What the upstream has no field
for is left out (see :data:`UNSUPPORTED`). Sans-I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs

from .fields import integer, kind_of, number, optional, stop_sequences

__all__ = [
    "EFFORT_BUDGETS",
    "GenerationOptions",
    "UNSUPPORTED",
    "budget_for_effort",
    "effort_for_budget",
    "effort_fields",
    "sampling",
    "thinking_fields",
]

EFFORT_BUDGETS = {"minimal": 1024, "low": 1024, "medium": 4096, "high": 16384, "xhigh": 32768}
"""The thinking budget (tokens) sent to a budget-taking upstream (Anthropic, Gemini,
Bedrock) for a client's reasoning effort."""

_MIN_BUDGET = 1024


def _strings(values: Iterable[str]) -> tuple[str, ...]:
    return tuple(values)  # Anthropic's smallest thinking budget


def budget_for_effort(effort: str | None) -> int:
    """The thinking budget for a reasoning ``effort`` (``"medium"``'s for an unknown one)."""
    return EFFORT_BUDGETS.get(effort or "medium", EFFORT_BUDGETS["medium"])


def effort_for_budget(budget: int) -> str:
    """The reasoning effort for a thinking ``budget``: low up to 1,024 tokens, medium up
    to 8,192, high beyond."""
    if budget <= 1024:
        return "low"
    return "medium" if budget <= 8192 else "high"


@attrs.frozen(kw_only=True)
class GenerationOptions:
    """What a client asked of the generation, whatever its protocol called it.

    ``None`` (or an empty ``stop``) means the client did not say. ``reasoning`` is True
    when the client asked for reasoning, False when it turned it off; ``reasoning_effort``
    (``"low"``, ``"medium"``, ``"high"``, ...) and ``reasoning_budget`` (tokens) are what
    it gave, each derived from the other when the upstream needs the other kind.
    ``tool_choice`` is ``"auto"``, ``"none"`` or ``"required"``; ``tool_name`` the one
    tool the client forces (with ``tool_choice="required"``).
    """

    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    max_tokens: int | None = None
    stop: tuple[str, ...] = attrs.field(default=(), converter=_strings)
    seed: int | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    reasoning: bool | None = None
    reasoning_effort: str | None = None
    reasoning_budget: int | None = None
    tool_choice: str | None = None
    tool_name: str | None = None
    parallel_tool_calls: bool | None = None

    def for_dialect(self, dialect: str) -> dict[str, Any]:
        """These options as :meth:`ChatPrompt.options() <solon_events.ChatPrompt.options>`
        for an upstream speaking ``dialect`` (``"openai"``, ``"openai-responses"``,
        ``"anthropic"``, ``"gemini"``, ``"ollama"``, ``"bedrock"``, ``"cohere"``,
        ``"google-interactions"``; any other dialect gets
        ``temperature``, ``top_p``, ``max_tokens``, ``stop`` and ``seed`` by those names).
        An option the dialect has no field for is left out: :data:`UNSUPPORTED`."""
        options: dict[str, Any] = {}
        for field, name in _NAMES.get(dialect, _GENERIC).items():
            value = getattr(self, field)
            options[name] = (list(value) or None) if field == "stop" else value
        options.update(_WRITERS.get(dialect, _generic)(self))
        return {key: value for key, value in options.items() if value is not None}

    def effort(self) -> str:
        """The reasoning effort asked for, or the one matching the budget asked for."""
        if self.reasoning_effort:
            return self.reasoning_effort
        if self.reasoning_budget is not None:
            return effort_for_budget(self.reasoning_budget)
        return "medium"

    def budget(self) -> int:
        """The thinking budget asked for, or the one matching the effort asked for."""
        if self.reasoning_budget is not None:
            return self.reasoning_budget
        return budget_for_effort(self.reasoning_effort)


_SAMPLING = (
    "temperature",
    "top_p",
    "top_k",
    "stop",
    "seed",
    "presence_penalty",
    "frequency_penalty",
)

_NAMES: dict[str, dict[str, str]] = {
    # what each dialect's request options call our fields (the rest it has no field for)
    "openai": {
        **{name: name for name in _SAMPLING if name != "top_k"},
        "max_tokens": "max_completion_tokens",
        "parallel_tool_calls": "parallel_tool_calls",
    },
    "openai-responses": {
        "temperature": "temperature",
        "top_p": "top_p",
        "max_tokens": "max_output_tokens",
        "parallel_tool_calls": "parallel_tool_calls",
    },
    "anthropic": {
        "temperature": "temperature",
        "top_p": "top_p",
        "top_k": "top_k",
        "max_tokens": "max_tokens",
        "stop": "stop_sequences",
    },
    "gemini": {**{name: name for name in _SAMPLING}, "max_tokens": "max_tokens"},
    "ollama": {**{name: name for name in _SAMPLING}, "max_tokens": "max_tokens"},
    "bedrock": {
        "temperature": "temperature",
        "top_p": "top_p",
        "max_tokens": "max_tokens",
        "stop": "stop",
    },
    "cohere": {
        "temperature": "temperature",
        "top_p": "p",
        "top_k": "k",
        "max_tokens": "max_tokens",
        "stop": "stop_sequences",
        "seed": "seed",
        "presence_penalty": "presence_penalty",
        "frequency_penalty": "frequency_penalty",
    },
    "google-interactions": {  # the request builder puts them in generation_config
        name: name for name in ("temperature", "top_p", "max_tokens", "stop", "seed")
    },
}
_GENERIC = {name: name for name in ("temperature", "top_p", "max_tokens", "stop", "seed")}


def _openai(o: GenerationOptions) -> dict[str, Any]:
    choice: Any = o.tool_choice
    if o.tool_name:
        choice = {"type": "function", "function": {"name": o.tool_name}}
    return {"reasoning_effort": o.effort() if o.reasoning else None, "tool_choice": choice}


def _responses(o: GenerationOptions) -> dict[str, Any]:
    choice: Any = o.tool_choice
    if o.tool_name:
        choice = {"type": "function", "name": o.tool_name}
    reasoning = {"effort": o.effort(), "summary": "auto"} if o.reasoning else None
    return {"reasoning": reasoning, "tool_choice": choice}


def _anthropic_thinking(o: GenerationOptions) -> dict[str, Any] | None:
    """``thinking`` within ``max_tokens``, as the Messages API demands (None when
    ``max_tokens`` leaves no room for the smallest budget)."""
    if not o.reasoning:
        return None
    budget = max(o.budget(), _MIN_BUDGET)
    if o.max_tokens is not None:
        if o.max_tokens <= _MIN_BUDGET:
            return None
        budget = min(budget, o.max_tokens - 1)
    return {"type": "enabled", "budget_tokens": budget}


def _anthropic(o: GenerationOptions) -> dict[str, Any]:
    kinds = {"auto": "auto", "none": "none", "required": "any"}
    choice: dict[str, Any] | None = None
    if o.tool_name:
        choice = {"type": "tool", "name": o.tool_name}
    elif o.tool_choice in kinds:
        choice = {"type": kinds[o.tool_choice]}
    elif o.parallel_tool_calls is False:
        choice = {"type": "auto"}
    if choice is not None and o.parallel_tool_calls is False and choice["type"] != "none":
        choice["disable_parallel_tool_use"] = True
    return {"thinking": _anthropic_thinking(o), "tool_choice": choice}


def _gemini(o: GenerationOptions) -> dict[str, Any]:
    thinking = None
    if o.reasoning:
        thinking = {"include_thoughts": True, "thinking_budget": o.budget()}
    elif o.reasoning is False and o.reasoning_budget == 0:
        thinking = {"thinking_budget": 0}
    tool_config = None
    modes = {"auto": "AUTO", "none": "NONE", "required": "ANY"}
    if o.tool_choice in modes:
        config: dict[str, Any] = {"mode": modes[o.tool_choice]}
        if o.tool_name:
            config["allowedFunctionNames"] = [o.tool_name]
        tool_config = {"functionCallingConfig": config}
    return {"thinking_config": thinking, "tool_config": tool_config}


def _ollama(o: GenerationOptions) -> dict[str, Any]:
    think: bool | str | None = o.reasoning
    if o.reasoning and o.reasoning_effort in ("low", "medium", "high"):
        think = o.reasoning_effort
    return {"think": think}


def _bedrock(o: GenerationOptions) -> dict[str, Any]:
    choice = None
    if o.tool_name:
        choice = {"tool": {"name": o.tool_name}}
    elif o.tool_choice in ("auto", "required"):
        choice = {"auto": {}} if o.tool_choice == "auto" else {"any": {}}
    return {"thinking": _anthropic_thinking(o), "tool_choice": choice}


def _cohere(o: GenerationOptions) -> dict[str, Any]:
    thinking = None
    if o.reasoning:
        thinking = {"type": "enabled", "token_budget": o.budget()}
    elif o.reasoning is False:
        thinking = {"type": "disabled"}
    kinds = {"none": "NONE", "required": "REQUIRED"}  # "auto" is Cohere's default
    return {"thinking": thinking, "tool_choice": kinds.get(o.tool_choice or "")}


def _interactions(o: GenerationOptions) -> dict[str, Any]:
    level = summaries = None
    if o.reasoning:
        level, summaries = o.effort(), "auto"
    elif o.reasoning is False:
        level = "minimal"  # the API's least: thinking cannot be turned off
    modes = {"auto": "auto", "none": "none", "required": "any"}
    choice: Any = modes.get(o.tool_choice or "")
    if o.tool_name:
        choice = {"allowed_tools": {"mode": "any", "tools": [o.tool_name]}}
    return {"thinking_level": level, "thinking_summaries": summaries, "tool_choice": choice}


def _generic(o: GenerationOptions) -> dict[str, Any]:
    return {}


_WRITERS: dict[str, Callable[[GenerationOptions], dict[str, Any]]] = {
    # the options that are more than a renamed field
    "openai": _openai,
    "openai-responses": _responses,
    "anthropic": _anthropic,
    "gemini": _gemini,
    "ollama": _ollama,
    "bedrock": _bedrock,
    "cohere": _cohere,
    "google-interactions": _interactions,
}

UNSUPPORTED: dict[str, tuple[str, ...]] = {
    "openai": ("top_k",),
    "openai-responses": ("top_k", "stop", "seed", "presence_penalty", "frequency_penalty"),
    "anthropic": ("seed", "presence_penalty", "frequency_penalty"),
    "gemini": ("parallel_tool_calls",),
    "ollama": ("tool_choice", "tool_name", "parallel_tool_calls"),
    "bedrock": ("top_k", "seed", "presence_penalty", "frequency_penalty", "parallel_tool_calls"),
    "cohere": ("tool_name", "parallel_tool_calls"),
    "google-interactions": (
        "top_k",
        "presence_penalty",
        "frequency_penalty",
        "parallel_tool_calls",
    ),
}
"""Per upstream dialect, the :class:`GenerationOptions` fields it has no field for (left out
of :meth:`GenerationOptions.for_dialect`). Besides: ``reasoning=False`` is sent only where
the upstream can be told (Ollama's ``think: false``, Gemini's budget 0, Cohere's
``thinking: disabled``; the Interactions API's ``thinking_level`` goes down to
``"minimal"``, not off), elsewhere the upstream's default stands; Bedrock has no
``tool_choice="none"``, and Cohere's ``"auto"`` is its default, written as nothing;
Anthropic's and Bedrock's thinking is left out when ``max_tokens`` leaves no room for a
1,024-token budget."""


# ------------------------------------------------------------------ reading them

_SPELLINGS: dict[str, str] = {
    "temperature": "temperature",
    "top_p": "top_p",
    "topP": "top_p",
    "p": "top_p",
    "top_k": "top_k",
    "topK": "top_k",
    "k": "top_k",
    "max_tokens": "max_tokens",
    "max_output_tokens": "max_tokens",
    "maxOutputTokens": "max_tokens",
    "num_predict": "max_tokens",
    "stop": "stop",
    "stop_sequences": "stop",
    "stopSequences": "stop",
    "seed": "seed",
    "presence_penalty": "presence_penalty",
    "presencePenalty": "presence_penalty",
    "frequency_penalty": "frequency_penalty",
    "frequencyPenalty": "frequency_penalty",
}
"""Every protocol's name for a sampling option: the :class:`GenerationOptions` field it is."""

_FRACTIONAL = frozenset({"temperature", "top_p", "presence_penalty", "frequency_penalty"})


def sampling(body: Mapping[str, Any], fields: Iterable[str], where: str = "") -> dict[str, Any]:
    """The sampling options that a client protocol names ``fields`` (each one of the
    spellings in ``_SPELLINGS``), read from ``body``, as :class:`GenerationOptions` fields."""
    options: dict[str, Any] = {}
    for field in fields:
        option = _SPELLINGS[field]
        if option == "stop":
            options[option] = stop_sequences(
                body.get(field), f"{where}.{field}" if where else field
            )
        elif option in _FRACTIONAL:
            options[option] = number(body, field, where)
        else:
            options[option] = integer(body, field, where)
    return options


def effort_fields(effort: str | None) -> dict[str, Any]:
    """The :class:`GenerationOptions` fields of an OpenAI-style reasoning effort (``"none"``
    turns reasoning off)."""
    if effort is None:
        return {}
    return {"reasoning": effort != "none", "reasoning_effort": effort if effort != "none" else None}


def thinking_fields(
    body: Mapping[str, Any], on: tuple[str, ...], budget_key: str
) -> dict[str, Any]:
    """The :class:`GenerationOptions` fields of a ``thinking`` object (Anthropic's, Cohere's):
    its ``type``, ``"disabled"`` or one of ``on`` (a ValueError for any other), turns
    reasoning off or on; an ``"enabled"`` one gives the budget (its ``budget_key``)."""
    thinking = optional(body, "thinking", Mapping, "")
    if thinking is None:
        return {}
    kind = kind_of(thinking, "thinking")
    if kind != "disabled" and kind not in on:
        raise ValueError(f"thinking.type must be {', '.join(on)} or disabled, not {kind!r}")
    budget = integer(thinking, budget_key, "thinking") if kind == "enabled" else None
    return {"reasoning": kind in on, "reasoning_budget": budget}
