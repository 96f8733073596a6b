"""Prices of usage, from the ``genai-prices`` package (the ``cost`` extra), as
:class:`Cost` values (``ChatResponse.cost``; exported as ``solon_events.Cost``).

:func:`price` (what :meth:`Usage.cost <solon_events.Usage.cost>` calls) asks genai-prices
for the price of a usage with a model of a provider and splits it into the parts a bill
names: input, cache reads, cache writes, output and reasoning, each where the model's
price list prices it apart. A model or provider genai-prices has no price for gives a
:class:`~solon_events.Cost` with no ``total`` and the ``reason``: never a guess.

Which provider: a genai-prices provider id (``"openai"``, ``"anthropic"``, ``"google"``,
``"aws"``, ``"deepseek"``, ...), a dialect name (mapped by :data:`PRICE_PROVIDERS`), or the
provider whose API ``api_url`` is (genai-prices knows their addresses: an OpenAI-compatible
server's, say ``https://api.deepseek.com/...``, names DeepSeek). ``ChatModel(...,
pricing=True)`` passes its URL first and its dialect's provider when the URL names none
(the embedded provider's, a proxy's).

The price list is the one the installed genai-prices carries (its snapshot; genai-prices
can update it, see its ``UpdatePrices``); prices are per the request time, in US dollars.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import attrs

from .display_hooks import repr_html, repr_pretty
from .extras import require
from .values import FrozenValue

if TYPE_CHECKING:
    from .results import Usage

__all__ = ["PRICE_PROVIDERS", "Cost", "ModelPrice", "price"]


def _add_amounts(a: Decimal | None, b: Decimal | None) -> Decimal | None:
    if a is None:
        return b
    return a if b is None else a + b


@attrs.frozen(kw_only=True)
class Cost(FrozenValue):
    """What a usage costs, in ``currency`` (US dollars), as ``genai-prices`` prices it.

    ``total`` is the whole price, or None when the price is unknown: then ``reason``
    says why (no price for the model, the extra not installed), and nothing is guessed.
    The parts (each a :class:`~decimal.Decimal`, or None when the model's price list does
    not price it apart, so that it is in another part): ``input`` (input tokens not read
    from or written to a cache), ``cache_read``, ``cache_write``, ``output`` (output tokens
    but reasoning priced apart) and ``reasoning``. ``total`` is genai-prices' own sum, and
    may hold what no part names (a price per request, say). ``model`` and ``provider`` are
    the price list's names for what was priced; ``estimated`` is the usage's (some counts
    were estimated).

    Costs add (``a + b``): the parts and totals add, and a sum with an unknown part is
    unknown (``total`` None, the reasons kept).
    """

    total: Decimal | None = None
    input: Decimal | None = None
    output: Decimal | None = None
    cache_read: Decimal | None = None
    cache_write: Decimal | None = None
    reasoning: Decimal | None = None
    currency: str = "USD"
    model: str | None = None
    provider: str | None = None
    estimated: bool = False
    reason: str | None = None

    _repr_html_ = repr_html
    _repr_pretty_ = repr_pretty

    @property
    def known(self) -> bool:
        """Whether the price is known (``total`` is not None)."""
        return self.total is not None

    def __add__(self, other: Cost) -> Cost:
        """Two costs together (the steps of a response, its attempts)."""
        if not isinstance(other, Cost):
            return NotImplemented
        known = self.total is not None and other.total is not None
        reasons = [r for r in (self.reason, other.reason) if r]
        return Cost(
            total=_add_amounts(self.total, other.total) if known else None,
            input=_add_amounts(self.input, other.input),
            output=_add_amounts(self.output, other.output),
            cache_read=_add_amounts(self.cache_read, other.cache_read),
            cache_write=_add_amounts(self.cache_write, other.cache_write),
            reasoning=_add_amounts(self.reasoning, other.reasoning),
            currency=self.currency,
            model=self.model if self.model == other.model else None,
            provider=self.provider if self.provider == other.provider else None,
            estimated=self.estimated or other.estimated,
            reason="; ".join(dict.fromkeys(reasons)) if reasons else None,
        )


def _per_million(_instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is None and attribute.name in ("cache_read", "cache_write"):
        return
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)) or value < 0:
        raise ValueError(f"{attribute.name} must be a price in USD per million tokens, 0 or more")


@attrs.frozen(kw_only=True)
class ModelPrice:
    """A model's price of your own, in US dollars per million tokens, for a model
    genai-prices does not price (one you host, the embedded provider's) or to price one
    your way: ``input``, ``output``, and cache reads and writes (``cache_read``,
    ``cache_write``; None: at the input price)."""

    input: float = attrs.field(validator=_per_million)
    output: float = attrs.field(validator=_per_million)
    cache_read: float | None = attrs.field(default=None, validator=_per_million)
    cache_write: float | None = attrs.field(default=None, validator=_per_million)

    def cost(self, usage: Usage, model: str | None = None) -> Cost:
        """What ``usage`` costs at this price (``model``: the name the cost is given)."""
        per = Decimal(_PER)
        read = usage.cache_read_input_tokens
        write = usage.cache_creation_input_tokens
        uncached = max(0, usage.prompt_tokens - read - write)
        input_part = Decimal(str(self.input)) * uncached / per
        cache_read = Decimal(str(self.input if self.cache_read is None else self.cache_read))
        cache_write = Decimal(str(self.input if self.cache_write is None else self.cache_write))
        read_part = cache_read * read / per
        write_part = cache_write * write / per
        output_part = Decimal(str(self.output)) * usage.completion_tokens / per
        return Cost(
            total=input_part + read_part + write_part + output_part,
            input=input_part,
            output=output_part,
            cache_read=read_part,
            cache_write=write_part,
            model=model,
            provider="custom",
            estimated=usage.estimated,
        )


PRICE_PROVIDERS: Mapping[str, str] = {
    "openai": "openai",
    "openai-responses": "openai",
    "anthropic": "anthropic",
    "gemini": "google",
    "google-interactions": "google",
    "bedrock": "aws",
    "cohere": "cohere",
}
"""The genai-prices provider id of each dialect whose provider has a price list (Ollama's
models run locally: none); any other name is passed on as given."""

_PER = 1_000_000  # genai-prices' token prices are per million tokens


def price(
    usage: Usage, model: str, provider: str | None = None, *, api_url: str | None = None
) -> Cost:
    """What ``usage`` costs with ``model``: see the module's docs for ``provider`` and
    ``api_url`` (tried first when given). Raises
    :class:`~solon_events.event_model.extras.MissingExtraError` without the ``cost`` extra."""
    genai_prices = require("genai_prices", feature="pricing", extra="cost", package="genai-prices")
    thinking = min(usage.thinking_tokens, usage.completion_tokens)
    counts = {
        "input_tokens": usage.prompt_tokens,
        "output_tokens": usage.completion_tokens,
        "cache_read_tokens": usage.cache_read_input_tokens,
        "cache_write_tokens": usage.cache_creation_input_tokens,
        "output_reasoning_tokens": thinking,
    }
    provider_id = PRICE_PROVIDERS.get(provider, provider) if provider is not None else None
    try:
        found = None
        if api_url is not None:
            try:
                found = genai_prices.calc_price(
                    genai_prices.Usage(**counts), model, provider_api_url=api_url
                )
            except LookupError:
                found = None  # an address genai-prices does not know: by the provider
        if found is None:
            found = genai_prices.calc_price(
                genai_prices.Usage(**counts), model, provider_id=provider_id
            )
    except (LookupError, ValueError) as error:
        where = f" of provider {provider_id!r}" if provider_id else ""
        return Cost(
            reason=f"no price for model {model!r}{where} ({error})", estimated=usage.estimated
        )
    return _cost(found, usage, thinking)


def _cost(found: Any, usage: Usage, thinking: int) -> Cost:
    """A genai-prices calculation as a :class:`Cost`, split into its parts."""
    from genai_prices.types import calc_unit_price

    prices = found.model_price
    total_input = usage.prompt_tokens

    def part(key: str, count: int) -> Decimal | None:
        unit_price = getattr(prices, key, None)
        if unit_price is None:
            return None
        return Decimal(calc_unit_price(unit_price, max(count, 0), total_input, _PER))

    cache_read = part("cache_read_mtok", usage.cache_read_input_tokens)
    cache_write = part("cache_write_mtok", usage.cache_creation_input_tokens)
    reasoning = part("output_reasoning_mtok", thinking)
    uncached = usage.prompt_tokens
    if cache_read is not None:
        uncached -= usage.cache_read_input_tokens
    if cache_write is not None:
        uncached -= usage.cache_creation_input_tokens
    output = usage.completion_tokens - (thinking if reasoning is not None else 0)
    return Cost(
        total=Decimal(found.total_price),
        input=part("input_mtok", uncached),
        output=part("output_mtok", output),
        cache_read=cache_read,
        cache_write=cache_write,
        reasoning=reasoning,
        model=found.model.id,
        provider=found.provider.id,
        estimated=usage.estimated,
    )
