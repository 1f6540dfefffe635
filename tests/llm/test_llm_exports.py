"""`corral.llm` re-exports its public names in a sorted `__all__`."""

from __future__ import annotations

import corral.llm
import corral.settings


def _isort_key(name: str) -> tuple[int, str]:
    # ruff's RUF022 order: CONSTANTS, then Classes, then functions.
    return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)


def test_all_is_sorted_and_every_name_exists() -> None:
    for module in (corral.llm, corral.settings):
        assert list(module.__all__) == sorted(module.__all__, key=_isort_key)
        for name in module.__all__:
            assert hasattr(module, name), name


def test_llm_parts_of_this_package_are_exported() -> None:
    expected = {
        "LlmError",
        "MissingApiKeyError",
        "ModelRef",
        "ModelRefError",
        "ModelRegistry",
        "RetryPolicy",
        "ScriptError",
        "ScriptedModel",
        "UnknownModelError",
        "available_thinking_levels",
        "calculate_cost",
        "clamp_thinking_level",
        "is_retryable_error",
        "parse_model_ref",
    }
    assert expected <= set(corral.llm.__all__)
