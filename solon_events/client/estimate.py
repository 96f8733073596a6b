"""Estimated usage, for a step the provider sent no usage for (sans-I/O).

A step gets an estimate only at its end, and only when the provider's own count is missing
or stale: a stream cancelled, cut or failed before its last frame, an OpenAI-compatible
server that sends no usage (no ``stream_options.include_usage``), a provider whose last
count came before some of the output (Anthropic counts the output at the end). Nothing is
counted while the stream runs: the estimate reads the text, thinking, refusal and tool
arguments the step's accumulator already holds, and the request.

- Output tokens: the tokens of what the step streamed (after the provider's last count,
  added to that count, when there was one). Thinking the provider did not stream (OpenAI's
  reasoning models, Gemini's thoughts unless asked for) cannot be counted: an estimate
  without them is low.
- Input tokens: the tokens of the request's messages (text, tool calls and results) and
  tools (name, description, JSON schema), plus :data:`MESSAGE_OVERHEAD` per message.
  Images and files are not counted.

How tokens are counted (:func:`token_counter`): with the ``tiktoken`` extra (``pip install
'solon-events[tiktoken]'``), by the model's own encoding when tiktoken knows the model
(OpenAI's: ``o200k_base`` for gpt-4o, o1, o3, gpt-4.1, ...; ``cl100k_base`` for gpt-4 and
gpt-3.5); tiktoken downloads an encoding on its first use and keeps it in its cache, so an
encoding that cannot be had (no network, no cache) falls back to the heuristic (logged at
INFO level, once; the usage's ``source`` names the counter used). Otherwise
:func:`heuristic_tokens`: the text is cut as a BPE tokenizer's pre-tokenizer cuts it (runs
of letters with a leading space, up to three digits, runs of punctuation, whitespace), a
letter run counts one token per :data:`LETTERS_PER_TOKEN` letters begun, each Chinese,
Japanese or Korean character one token, a run of digits one, a run of punctuation one per
:data:`PUNCTUATION_PER_TOKEN` characters begun, whitespace none unless it holds a line
break. On the corpus's texts it is within about 10 % (median) of OpenAI's ``cl100k_base``
count. ``python -m benchmarks.usage_estimates`` measures its error against the providers'
own counts on recorded streams that carry them (the table is in the docs' usage guide):
much larger, as the providers count what was not streamed (hidden reasoning, a tool call's
framing, search results) and with tokenizers of their own.

A request the provider accepted (it answered with a stream) but that was lost before its
first frame, and so retried, is billed its input at least: :meth:`StepAccounting.retried`
estimates it (no output: none came).

An estimated :class:`~solon_events.Usage` has ``estimated`` True and its ``source`` says
how it was made: ``{"estimated_by": "heuristic"}`` (or ``"tiktoken o200k_base"``), with
``"reported"`` the provider's count it completes, when there was one, or ``"retried": True``
for a retried request's.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Callable, Iterable
from typing import Any

import attrs
import orjson

from ..event_model.messages import ChatRequest, SystemMessage, ToolMessage, UserMessage
from ..event_model.results import AssistantMessage, ChatResponse, Usage, new_usage, with_usage

__all__ = [
    "LETTERS_PER_TOKEN",
    "MESSAGE_OVERHEAD",
    "PUNCTUATION_PER_TOKEN",
    "StepAccounting",
    "TokenCounter",
    "heuristic_tokens",
    "request_tokens",
    "token_counter",
]

_log = logging.getLogger(__name__)

LETTERS_PER_TOKEN = 8
"""The heuristic's letters per token in a run of letters (a word): most words are one
token of a BPE vocabulary, long ones a few."""

PUNCTUATION_PER_TOKEN = 3
"""The heuristic's characters per token in a run of punctuation (``**``, ``":``, ``},{``)."""

MESSAGE_OVERHEAD = 4
"""Tokens counted per message of a request for its role and framing (as OpenAI's chat
format spends them), plus this many once for the reply's priming."""

# A BPE pre-tokenizer's cut, in stdlib re: letters (with a leading space), up to three
# digits, punctuation runs, line breaks, other whitespace.
_PIECES = re.compile(r" ?[^\W\d_]+| ?\d{1,3}| ?[^\w\s]+|_+|\n+|\s+")
_CJK = re.compile(
    "[\u1100-\u11ff\u2e80-\u2fff\u3000-\u30ff\u3100-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\uff00-\uffef\U00020000-\U0002fa1f]"
)


def heuristic_tokens(text: str) -> int:
    """Tokens of ``text`` by the documented heuristic (see the module's docs)."""
    if not text:
        return 0
    tokens = 0
    for piece in _PIECES.findall(text):
        first = piece[0]
        if first == " " and len(piece) > 1:
            piece = piece[1:]
            first = piece[0]
        if first.isspace():
            tokens += 1 if "\n" in piece or "\r" in piece else 0
        elif first.isalpha():
            cjk = len(_CJK.findall(piece))
            letters = len(piece) - cjk
            tokens += cjk + -(-letters // LETTERS_PER_TOKEN)
        elif first.isdigit():
            tokens += 1
        else:
            tokens += -(-len(piece) // PUNCTUATION_PER_TOKEN)
    return tokens


@attrs.frozen
class TokenCounter:
    """Counts the tokens of a text: ``count(text)``; ``method`` names how (``"heuristic"``,
    ``"tiktoken o200k_base"``)."""

    method: str
    count: Callable[[str], int] = attrs.field(repr=False)

    def __call__(self, text: str) -> int:
        return self.count(text) if text else 0


HEURISTIC = TokenCounter("heuristic", heuristic_tokens)
"""The counter of :func:`heuristic_tokens`."""


@functools.lru_cache(maxsize=16)
def _tiktoken_encoding(name: str) -> Any:
    """tiktoken's encoding ``name``, or None when it cannot be had (tried once per process)."""
    import tiktoken

    try:
        return tiktoken.get_encoding(name)
    except Exception as error:  # no network and no cache, most often
        _log.info(
            "tiktoken could not load the %s encoding (%s): usage is estimated with the "
            "heuristic instead",
            name,
            type(error).__name__,
        )
        return None


@functools.lru_cache(maxsize=256)
def token_counter(model: str | None) -> TokenCounter:
    """The counter for ``model``'s tokens: its tiktoken encoding when the ``tiktoken``
    extra is installed, knows the model and has (or can fetch) the encoding; else the
    heuristic."""
    if not model:
        return HEURISTIC
    try:
        import tiktoken
    except ImportError:
        return HEURISTIC
    try:
        name = tiktoken.encoding_name_for_model(model)
    except KeyError:
        return HEURISTIC
    encoding = _tiktoken_encoding(name)
    if encoding is None:
        return HEURISTIC

    def count(text: str) -> int:
        return len(encoding.encode(text, disallowed_special=()))

    return TokenCounter(f"tiktoken {name}", count)


def _message_text(message: Any) -> Iterable[str]:
    if isinstance(message, (SystemMessage, UserMessage)):
        yield message.text
    elif isinstance(message, ToolMessage):
        yield message.name
        yield message.content
    elif isinstance(message, AssistantMessage):
        yield message.text
        for call in message.tool_calls:
            yield call.name
            yield call.arguments_str


def request_tokens(request: ChatRequest, count: Callable[[str], int]) -> int:
    """The estimated input tokens of ``request`` (see the module's docs)."""
    tokens = MESSAGE_OVERHEAD
    for message in request.messages:
        tokens += MESSAGE_OVERHEAD + sum(count(text) for text in _message_text(message) if text)
    for spec in request.tools:
        schema = orjson.dumps(dict(spec.parameters), option=orjson.OPT_SORT_KEYS).decode()
        tokens += MESSAGE_OVERHEAD + count(spec.name) + count(spec.description) + count(schema)
    return tokens


class StepAccounting:
    """Settles the usage of one step at its end: the provider's count where it is whole,
    else an estimate (see the module's docs); and its price, given ``price`` (a function of
    the usage and the model, giving a :class:`~solon_events.Cost`).

    Made per step by the model's tool loop, for the step's ``request`` (whose ``model`` is
    the model asked), and given to its :class:`~solon_events.core.parsing.ParseStage`.
    """

    __slots__ = ("_counter", "_price", "request")

    def __init__(
        self,
        request: ChatRequest,
        price: Callable[[Usage, str], Any] | None = None,
    ) -> None:
        self.request = request
        self._price = price
        self._counter: TokenCounter | None = None

    def counter(self, model: str | None) -> TokenCounter:
        """The token counter for the step (the model the provider named, else the one asked)."""
        if self._counter is None:
            self._counter = token_counter(model or self.request.model)
        return self._counter

    def settle(
        self,
        response: ChatResponse,
        unreported: tuple[str, str] | None,
        finished: bool,
        frames: int,
    ) -> ChatResponse:
        """``response`` (a step's, at its end) with its usage settled and priced.

        ``unreported`` is the output the step streamed after the provider's last count (all
        of it when there was none): its visible text and its thinking
        (:meth:`~solon_events.core.accumulator.ChatAccumulator.unreported_output`);
        ``finished`` whether the provider gave its completion signal; ``frames`` how many it
        sent (none: nothing was billed, nothing is estimated).
        """
        usage = response.usage
        if frames and (usage is None or not finished) and unreported is not None:
            usage = self._estimate(response.model, usage, *unreported)
        cost = None
        if self._price is not None and usage is not None:
            cost = self._price(usage, response.model or self.request.model)
        return with_usage(response, usage, cost)

    def retried(self) -> tuple[Usage, Any]:
        """The usage and price of a request of this step that the provider accepted (it
        answered with a stream) but that was lost before its first frame, then retried:
        its input tokens, estimated, as the provider may have billed them (what it may
        have generated after the connection was lost cannot be known)."""
        counter = self.counter(None)
        usage = new_usage(
            request_tokens(self.request, counter),
            0,
            None,
            0,
            source={"estimated_by": counter.method, "retried": True},
            estimated=True,
        )
        cost = self._price(usage, self.request.model) if self._price is not None else None
        return usage, cost

    def _estimate(
        self, model: str | None, reported: Usage | None, visible: str, thinking: str
    ) -> Usage | None:
        if reported is not None and not visible and not thinking:
            return reported  # nothing came after the provider's last count
        counter = self.counter(model)
        thinking_tokens = counter(thinking)
        output = counter(visible) + thinking_tokens
        if reported is None:
            return new_usage(
                request_tokens(self.request, counter),
                output,
                None,
                thinking_tokens,
                source={"estimated_by": counter.method},
                estimated=True,
            )
        return new_usage(
            reported.prompt_tokens,
            reported.completion_tokens + output,
            reported.total_tokens + output,
            reported.thinking_tokens + thinking_tokens,
            reported.cache_creation_input_tokens,
            reported.cache_read_input_tokens,
            reported.server_tool_use,
            {"estimated_by": counter.method, "reported": reported.source},
            True,
        )
