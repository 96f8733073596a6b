"""Cost with genai-prices (the ``cost`` extra): ``Usage.cost(model, provider)``, a cost on
every step's and the whole response's ``ChatResponse``, and None with the reason for a
model it has no price for, never a guess.

Expected figures are worked out from the price list genai-prices itself gives for the
model (its ``model_price``), so that a newer price list changes nothing here.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

import genai_prices
import pytest
from reactivex import operators as ops
from usage_reports import Reports

from solon_events import ChatEventType, ChatModel, Cost, Usage, tool
from solon_events.devserver import RunningServer
from solon_events.display.html import to_html
from solon_events.display.pretty import to_text
from solon_events.display.render import usage_line
from solon_events.event_model.pricing import PRICE_PROVIDERS, price

T = ChatEventType
MILLION = Decimal(1_000_000)


def _prices(model: str, provider: str) -> object:
    usage = genai_prices.Usage(input_tokens=1, output_tokens=1)
    return genai_prices.calc_price(usage, model, provider_id=provider).model_price


def test_a_usage_is_priced_part_by_part() -> None:
    usage = Usage(prompt_tokens=12_000, completion_tokens=3_000, cache_read_input_tokens=2_000)
    cost = usage.cost("gpt-4o-mini", "openai")
    prices = _prices("gpt-4o-mini", "openai")
    assert cost.known and cost.reason is None and not cost.estimated
    assert (cost.model, cost.provider, cost.currency) == ("gpt-4o-mini", "openai", "USD")
    assert cost.input == prices.input_mtok * 10_000 / MILLION  # type: ignore[attr-defined]
    assert cost.cache_read == prices.cache_read_mtok * 2_000 / MILLION  # type: ignore[attr-defined]
    assert cost.output == prices.output_mtok * 3_000 / MILLION  # type: ignore[attr-defined]
    assert cost.cache_write is None and cost.reasoning is None  # not priced apart
    assert cost.total == cost.input + cost.cache_read + cost.output
    whole = genai_prices.calc_price(
        genai_prices.Usage(input_tokens=12_000, output_tokens=3_000, cache_read_tokens=2_000),
        "gpt-4o-mini",
        provider_id="openai",
    )
    assert cost.total == whole.total_price


def test_cache_writes_are_priced_apart_where_the_model_prices_them() -> None:
    usage = Usage(prompt_tokens=5_000, completion_tokens=100, cache_creation_input_tokens=4_000)
    cost = usage.cost("claude-sonnet-4-20250514", "anthropic")
    prices = _prices("claude-sonnet-4-20250514", "anthropic")
    assert cost.cache_write == prices.cache_write_mtok * 4_000 / MILLION  # type: ignore[attr-defined]
    assert cost.input == prices.input_mtok * 1_000 / MILLION  # type: ignore[attr-defined]
    assert cost.total == cost.input + cost.cache_write + cost.output  # type: ignore[operator]


def test_a_dialect_name_is_its_providers_and_an_estimate_stays_one() -> None:
    usage = Usage(prompt_tokens=100, completion_tokens=50, estimated=True)
    assert PRICE_PROVIDERS["gemini"] == "google"
    by_dialect = usage.cost("gemini-2.5-flash", "gemini")
    assert by_dialect == usage.cost("gemini-2.5-flash", "google")
    assert by_dialect.known and by_dialect.estimated and by_dialect.provider == "google"


def test_an_unknown_model_has_no_price_and_says_why() -> None:
    cost = Usage(prompt_tokens=100, completion_tokens=50).cost("my-own-model", "openai")
    assert cost.total is None and not cost.known
    assert cost.input is None and cost.output is None
    assert cost.reason is not None and "my-own-model" in cost.reason and "openai" in cost.reason


def test_an_openai_compatible_servers_url_names_its_provider() -> None:
    usage = Usage(prompt_tokens=1_000, completion_tokens=1_000)
    by_url = price(usage, "deepseek-chat", "openai", api_url="https://api.deepseek.com/v1")
    assert by_url.known and by_url.provider == "deepseek"
    assert not price(usage, "deepseek-chat", "openai").known  # not an OpenAI model


@tool
def get_weather(city: str) -> str:
    """The weather in a city.

    Args:
        city: The city.
    """
    return f"sunny in {city}"


def test_a_priced_model_prices_every_step_and_the_whole_response(
    server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    reports = Reports()
    # gpt-4o-mini is no scenario of the embedded provider: it answers as "weather" does
    model = make_model(server, "gpt-4o-mini", pricing=True, on_usage=reports)
    events = model.prompt("Weather in Paris?").tools(get_weather).stream().pipe(ops.to_list()).run()
    step_ends = [e for e in events if e.type is T.STEP_END]
    assert len(step_ends) == 2
    costs = [e.response.cost for e in step_ends]  # type: ignore[union-attr]
    for event, cost in zip(step_ends, costs, strict=True):
        assert cost is not None and cost.known
        assert event.usage is not None and cost == event.usage.cost("gpt-4o-mini", "openai")
    end = events[-1]
    assert end.type is T.RESPONSE_END and end.response is not None
    assert end.response.cost == costs[0] + costs[1]  # type: ignore[operator]
    assert reports.one().cost == end.response.cost
    shown = f"${format(end.response.cost.total.normalize(), 'f')}"  # type: ignore[union-attr]
    assert shown in to_text(end.response)
    assert shown in to_html(end.response)
    assert usage_line(end.usage, end.response.cost).endswith(f"cost {shown}")


def test_a_model_without_a_price_answers_with_no_cost_and_the_reason(
    server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    model = make_model(server, "echo", pricing=True)
    response = model.prompt("one two").call()
    assert response.cost is not None and response.cost.total is None
    assert response.cost.reason is not None and "'echo'" in response.cost.reason
    assert "cost" not in to_text(response)


def test_an_estimated_usage_shows_its_counts_and_cost_as_estimates() -> None:
    usage = Usage(prompt_tokens=1_000, completion_tokens=10, estimated=True)
    cost = usage.cost("gpt-4o-mini", "openai")
    assert to_text(usage) == "Usage(prompt ≈1000, completion ≈10, total ≈1010)"
    assert "≈1000" in to_html(usage) and "estimated" in to_html(usage)
    assert to_text(cost).startswith("Cost(≈$")
    assert usage_line(usage, cost).startswith("prompt ≈1000, completion ≈10, total ≈1010")
    assert "cost ≈$" in usage_line(usage, cost)
    unknown = Cost(reason="no price for model 'x'")
    assert "unknown: no price for model" in to_html(unknown)


def test_pricing_without_the_extra_says_which_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys

    from solon_events.event_model.extras import MissingExtraError

    monkeypatch.setitem(sys.modules, "genai_prices", None)  # as if it were not installed
    with pytest.raises(MissingExtraError, match=r"solon-events\[cost\]"):
        Usage(prompt_tokens=1).cost("gpt-4o-mini")
    with pytest.raises(MissingExtraError, match=r"solon-events\[cost\]"):
        ChatModel("http://127.0.0.1:1/v1/chat/completions", "m", pricing=True)


def test_a_retried_requests_estimated_input_is_priced() -> None:
    from solon_events.client.estimate import StepAccounting, request_tokens
    from solon_events.event_model.messages import ChatRequest, UserMessage

    request = ChatRequest(
        model="gpt-4o-mini", messages=(UserMessage(text="What is the weather in Paris?"),)
    )
    accounting = StepAccounting(request, lambda usage, model: price(usage, model, "openai"))
    usage, cost = accounting.retried()
    assert usage.estimated and usage.completion_tokens == 0
    assert usage.prompt_tokens == request_tokens(request, accounting.counter(None)) > 0
    assert cost is not None and cost.known and cost.estimated
    assert cost == usage.cost("gpt-4o-mini", "openai")
    assert cost.total == cost.input  # input alone: nothing came out
