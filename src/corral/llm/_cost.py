"""Pricing a request's usage with the model's prices (USD per million tokens)."""

from __future__ import annotations

from ._messages import Cost, Usage
from ._model import ModelInfo

__all__ = ["calculate_cost", "usage_with_total"]


def usage_with_total(*, input: int = 0, output: int = 0, cache_read: int = 0, cache_write: int = 0) -> Usage:
    """A normalised `Usage` with every field set and `total_tokens` the sum of the four counts.

    `input` excludes cached tokens. Cost is zero; price it with
    [`calculate_cost`][corral.llm.calculate_cost].
    """
    return Usage(
        input=input,
        output=output,
        cache_read=cache_read,
        cache_write=cache_write,
        total_tokens=input + output + cache_read + cache_write,
        cost=Cost(input=0.0, output=0.0, cache_read=0.0, cache_write=0.0, total=0.0),
    )


def calculate_cost(info: ModelInfo, usage: Usage) -> Usage:
    """`usage` with its cost computed from the model's prices.

    Each `cost.x = prices.x / 1e6 * tokens.x`; `cost.total` is their sum.
    Token counts (and `total_tokens`) are kept as given. Returns a new
    `Usage`; the argument is not changed.
    """
    prices = info.prices
    cost_input = prices.input / 1e6 * usage.input
    cost_output = prices.output / 1e6 * usage.output
    cost_cache_read = prices.cache_read / 1e6 * usage.cache_read
    cost_cache_write = prices.cache_write / 1e6 * usage.cache_write
    return Usage(
        input=usage.input,
        output=usage.output,
        cache_read=usage.cache_read,
        cache_write=usage.cache_write,
        total_tokens=usage.total_tokens,
        cost=Cost(
            input=cost_input,
            output=cost_output,
            cache_read=cost_cache_read,
            cache_write=cost_cache_write,
            total=cost_input + cost_output + cost_cache_read + cost_cache_write,
        ),
    )
