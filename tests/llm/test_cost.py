"""Usage priced with the model's prices (USD per million tokens)."""

from __future__ import annotations

import pytest

from corral.llm import ModelInfo, ModelPrices, Usage, calculate_cost, to_json_dict, usage_with_total

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
    priced = calculate_cost(ModelInfo("p", "m", "openai-chat"), usage_with_total(input=10, output=10))
    assert priced.cost.total == 0.0


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
