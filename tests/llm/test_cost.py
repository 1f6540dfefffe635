"""Usage priced with the model's configured prices (USD per million tokens), else genai-prices' catalogue."""

from __future__ import annotations

import pytest
from genai_prices import Usage as CatalogUsage
from genai_prices import calc_price

from corral.llm import (
    ModelInfo,
    ModelPrices,
    ModelRegistry,
    Usage,
    calculate_cost,
    listed_prices,
    to_json_dict,
    usage_with_total,
)
from corral.settings import Settings

PRICED = ModelInfo(
    "p", "m", "anthropic", prices=ModelPrices(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)
)


def test_cost_per_million_tokens_and_total_is_sum() -> None:
    usage = usage_with_total(input=1_000_000, output=200_000, cache_read=500_000, cache_write=100_000)
    priced = calculate_cost(PRICED, usage)
    assert priced.cost.input == pytest.approx(3.0)
    assert priced.cost.output == pytest.approx(3.0)
    assert priced.cost.cache_read == pytest.approx(0.15)
    assert priced.cost.cache_write == pytest.approx(0.375)
    assert priced.cost.total == pytest.approx(3.0 + 3.0 + 0.15 + 0.375)
    assert (priced.input, priced.output, priced.cache_read, priced.cache_write) == (
        1_000_000,
        200_000,
        500_000,
        100_000,
    )
    assert priced.total_tokens == 1_800_000
    assert usage.cost.total == 0.0  # the argument is unchanged


def test_free_model_costs_nothing() -> None:
    free = ModelInfo("p", "m", "openai-chat", prices=ModelPrices())
    assert calculate_cost(free, usage_with_total(input=10, output=10)).cost.total == 0.0


SONNET = ModelInfo("anthropic", "claude-sonnet-4-5", "anthropic")


@pytest.mark.parametrize(
    ("input", "output", "cache_read", "cache_write"),
    [
        (300_000, 10_000, 0, 0),
        (100_000, 10_000, 50_000, 20_000),
        (150_000, 1_000, 60_000, 1_000),
        (0, 5, 0, 0),
    ],
)
def test_catalogue_prices_match_genai_prices_per_part_and_tier(
    input: int, output: int, cache_read: int, cache_write: int
) -> None:
    priced = calculate_cost(
        SONNET, usage_with_total(input=input, output=output, cache_read=cache_read, cache_write=cache_write)
    )
    # genai-prices counts cached tokens inside `input_tokens`; corral's `input` is the uncached rest.
    expected = calc_price(
        CatalogUsage(
            input_tokens=input + cache_read + cache_write,
            output_tokens=output,
            cache_read_tokens=cache_read,
            cache_write_tokens=cache_write,
        ),
        "claude-sonnet-4-5",
        provider_id="anthropic",
    )
    assert priced.cost.total == pytest.approx(float(expected.total_price))
    assert priced.cost.output == pytest.approx(float(expected.output_price))
    parts = priced.cost
    assert parts.total == pytest.approx(parts.input + parts.output + parts.cache_read + parts.cache_write)


def test_a_long_context_request_is_priced_at_its_tier() -> None:
    # 200,001 input tokens cross Sonnet 4.5's tier: every token is billed at $6 (and output at $22.50).
    under = calculate_cost(SONNET, usage_with_total(input=200_000, output=1_000_000)).cost
    over = calculate_cost(SONNET, usage_with_total(input=200_001, output=1_000_000)).cost
    assert (under.input, under.output) == (pytest.approx(0.6), pytest.approx(15.0))
    assert (over.input, over.output) == (pytest.approx(1.200006), pytest.approx(22.5))


def test_configured_prices_win_over_the_catalogue() -> None:
    settings = Settings.model_validate(
        {
            "providers": {
                "anthropic": {"models": [{"id": "claude-sonnet-4-5", "prices": {"input": 1, "output": 2}}]}
            }
        }
    )
    info = ModelRegistry(settings, environ={}).resolve("anthropic/claude-sonnet-4-5")
    assert info.prices == ModelPrices(input=1.0, output=2.0)
    cost = calculate_cost(info, usage_with_total(input=300_000, output=1_000_000)).cost
    assert cost.total == pytest.approx(0.3 + 2.0)  # flat, no tier
    assert listed_prices(info) == ModelPrices(input=1.0, output=2.0)


def test_a_custom_provider_is_found_by_its_endpoint_or_left_unknown() -> None:
    settings = Settings.model_validate(
        {
            "providers": {
                "router": {
                    "base_url": "https://openrouter.ai/api/v1",
                    "models": [{"id": "anthropic/claude-sonnet-4.5"}],
                },
                "local": {"base_url": "http://127.0.0.1:11434/v1", "models": [{"id": "claude-sonnet-4-5"}]},
            }
        }
    )
    registry = ModelRegistry(settings, environ={})
    router, local = (
        registry.resolve("router/anthropic/claude-sonnet-4.5"),
        registry.resolve("local/claude-sonnet-4-5"),
    )
    assert router.prices is None and local.prices is None
    usage = usage_with_total(input=100_000)
    routed = calculate_cost(router, usage, endpoint=registry.base_url_for(router)).cost
    assert routed.total == pytest.approx(0.3)
    # A local server is not in the catalogue, even serving a model with a catalogued name: unknown, zero.
    assert calculate_cost(local, usage, endpoint=registry.base_url_for(local)).cost.total == 0.0
    assert listed_prices(local, endpoint=registry.base_url_for(local)) is None
    assert calculate_cost(local, usage).cost.total == 0.0


def test_listed_prices_of_a_catalogued_model_are_its_base_rates() -> None:
    assert listed_prices(SONNET) == ModelPrices(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)
    assert listed_prices(ModelInfo("anthropic", "no-such-model", "anthropic")) is None


def test_usage_with_total_writes_every_field_in_pi_json() -> None:
    data = to_json_dict(usage_with_total(input=1, output=2))
    assert data == {
        "input": 1,
        "output": 2,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": 3,
        "cost": {"input": 0.0, "output": 0.0, "cacheRead": 0.0, "cacheWrite": 0.0, "total": 0.0},
    }


def test_calculate_cost_keeps_given_total_tokens() -> None:
    assert calculate_cost(PRICED, Usage(input=1, output=1, total_tokens=7)).total_tokens == 7
