"""Pricing a request's usage: configured prices, else genai-prices' catalogue, else unknown (zero).

Configured prices (a `models` entry's `prices` in settings, and every scripted model) are flat USD
per million tokens. A model without them is priced from the `genai-prices` catalogue, the one
pydantic-ai uses: by provider for `openai` and `anthropic`, by API URL for any other provider (a
gateway such as OpenRouter or Groq is recognised by its endpoint; a local server is not). The
catalogue knows each model's current prices and long-context tiers (crossing a tier's input size
prices the whole request at that tier, as the providers bill). A model it does not know is priced
at zero: the cost is unknown, not free.

`genai_prices` is imported only when a catalogue price is needed (pydantic-ai, which a real
provider loads anyway, imports it too), so neither start-up nor a scripted run pays for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._messages import Cost, Usage
from ._model import ModelInfo, ModelPrices

if TYPE_CHECKING:
    from genai_prices.types import ModelPrice

__all__ = ["CATALOG_PROVIDERS", "calculate_cost", "listed_prices", "usage_with_total"]

CATALOG_PROVIDERS = frozenset({"openai", "anthropic"})
"""Providers whose models are looked up in the catalogue by provider; any other by API URL."""

_PRICE_KEYS = {
    "input": "input_mtok",
    "output": "output_mtok",
    "cache_read": "cache_read_mtok",
    "cache_write": "cache_write_mtok",
}


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


def calculate_cost(info: ModelInfo, usage: Usage, *, endpoint: str | None = None) -> Usage:
    """`usage` with its cost computed from the model's prices.

    With configured prices each `cost.x = prices.x / 1e6 * tokens.x`. Without them the rates come
    from the catalogue (see the module docstring), at the tier the request's whole input (uncached,
    cache read and cache write tokens) reaches; an unknown model costs zero. `cost.total` is the sum
    of the four parts. Token counts (and `total_tokens`) are kept as given. Returns a new `Usage`;
    the argument is not changed.

    Args:
        info: The model.
        usage: The request's token counts (`input` without cached tokens).
        endpoint: The API URL the request went to; identifies a custom provider in the catalogue.
    """
    prices = info.prices
    if prices is None:
        prices = _catalog_rates(info, endpoint, usage.input + usage.cache_read + usage.cache_write)
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


def listed_prices(info: ModelInfo, *, endpoint: str | None = None) -> ModelPrices | None:
    """The model's prices to list: configured ones, else the catalogue's base rates (below any
    long-context tier); `None` when neither is known.

    For listings (`corral models --json`, the RPC model shape); requests are priced by
    [`calculate_cost`][corral.llm.calculate_cost], which applies the tiers.
    """
    if info.prices is not None:
        return info.prices
    model_price = _catalog_model_price(info, endpoint)
    return None if model_price is None else _rates(model_price, 0)


def _catalog_rates(info: ModelInfo, endpoint: str | None, total_input: int) -> ModelPrices:
    model_price = _catalog_model_price(info, endpoint)
    return ModelPrices() if model_price is None else _rates(model_price, total_input)


def _catalog_model_price(info: ModelInfo, endpoint: str | None) -> ModelPrice | None:
    """The catalogue's current prices of the model, or `None` when the catalogue does not know it."""
    if info.provider in CATALOG_PROVIDERS:
        provider_id, url = info.provider, None
    elif endpoint:
        provider_id, url = None, endpoint
    else:
        return None
    from datetime import UTC, datetime

    from genai_prices.data_snapshot import get_snapshot

    try:
        _, model = get_snapshot().find_provider_model(info.id, None, provider_id, url)
    except LookupError:
        return None
    return model.get_prices(datetime.now(tz=UTC))


def _rates(model_price: ModelPrice, total_input: int) -> ModelPrices:
    """Per-million rates of the four token kinds at the tier `total_input` tokens reach."""
    from genai_prices.types import calc_unit_price

    def rate(key: str) -> float:
        # The price of a million tokens, at the tier the request's input reaches.
        return float(calc_unit_price(getattr(model_price, key, None), 1_000_000, total_input, 1_000_000))

    return ModelPrices(**{field: rate(key) for field, key in _PRICE_KEYS.items()})
