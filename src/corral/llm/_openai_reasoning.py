"""Which OpenAI model ids corral's own Responses client serves (stdlib only, cheap to import).

pydantic-ai shapes an OpenAI reasoning model's Responses requests by a per-model profile:
encrypted reasoning asked for (`include`) and sent back as items with their ids, per-model
effort tables, reasoning modes and contexts. Those models keep pydantic-ai's client; every
other model id (a local or compatible server's, GPT-4.x, `gpt-5-chat`) gets corral's own,
which sends what pydantic-ai sends for its plain profile (`_providers/_responses_request.py`).
The background SDK import (`_deferred`) reads the same answer, so a model served by corral's
client loads no SDK at all.
"""

from __future__ import annotations

__all__ = ["REASONING_MODEL_PREFIXES", "serves_model"]

REASONING_MODEL_PREFIXES = (
    "gpt-6-astra",
    "gpt-6.1-sol",
    "gpt-6.2-sol",
    "gpt-6.2-astra",
    "gpt-6.1-terra",
    "gpt-6-sol",
    "gpt-6-luna",
    "gpt-5.6",
    "gpt-5.5-pro",
    "gpt-5.5",
    "gpt-5.4-pro",
    "gpt-5.4",
    "gpt-5.3-chat",
    "gpt-5.3",
    "gpt-5.2-pro",
    "gpt-5.2-chat",
    "gpt-5.2",
    "gpt-5.1-codex",
    "gpt-5.1-chat",
    "gpt-5.1",
    "gpt-5-chat",
    "gpt-5-pro",
    "gpt-5-codex",
    "gpt-5",
    "o1",
    "o3",
    "o4",
)
"""The model-id prefixes pydantic-ai's OpenAI profile table names, first match wins (a test keeps
this equal to pydantic-ai's `_REASONING_SUPPORT_BY_PREFIX`)."""

_NOT_REASONING = ("gpt-5-chat",)
"""The prefixes of that table whose models do not reason."""


def serves_model(model_id: str) -> bool:
    """Whether corral's Responses client serves `model_id` (it is not one of OpenAI's reasoning models)."""
    prefix = next((p for p in REASONING_MODEL_PREFIXES if model_id.startswith(p)), None)
    return prefix is None or prefix in _NOT_REASONING
