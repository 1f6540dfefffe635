"""Thinking levels offered per model, and clamping."""

from __future__ import annotations

import pytest

from corral.llm import (
    THINKING_LEVELS,
    ModelInfo,
    ThinkingLevel,
    available_thinking_levels,
    clamp_thinking_level,
    supports_xhigh,
)

PLAIN = ModelInfo("x", "plain", "openai-chat", reasoning=False)
REASONING = ModelInfo("x", "thinker", "openai-chat", reasoning=True)
XHIGH_FLAG = ModelInfo("x", "deep", "openai-chat", reasoning=True, supports_xhigh=True)


def test_levels_offered_depend_on_reasoning_and_xhigh() -> None:
    assert available_thinking_levels(PLAIN) == ("off",)
    assert available_thinking_levels(REASONING) == ("off", "minimal", "low", "medium", "high")
    assert available_thinking_levels(XHIGH_FLAG) == THINKING_LEVELS


@pytest.mark.parametrize(
    ("model_id", "expected"),
    [
        ("gpt-5.2", True),
        ("gpt-5.3-codex", True),
        ("gpt-5.4-mini", True),
        ("claude-opus-4-6", True),
        ("claude-opus-4.6", True),
        ("gpt-5", False),
        ("claude-opus-4-5", False),
    ],
)
def test_supports_xhigh_follows_pi_id_rule(model_id: str, expected: bool) -> None:
    assert supports_xhigh(ModelInfo("p", model_id, "openai-responses", reasoning=True)) is expected


def test_non_reasoning_model_never_supports_xhigh() -> None:
    assert not supports_xhigh(ModelInfo("p", "gpt-5.2", "openai-chat", reasoning=False))


@pytest.mark.parametrize(
    ("info", "level", "expected"),
    [
        (PLAIN, "off", "off"),
        (PLAIN, "medium", "off"),
        (PLAIN, "xhigh", "off"),
        (REASONING, "off", "off"),
        (REASONING, "minimal", "minimal"),
        (REASONING, "high", "high"),
        (REASONING, "xhigh", "high"),
        (XHIGH_FLAG, "xhigh", "xhigh"),
    ],
)
def test_clamp_table(info: ModelInfo, level: ThinkingLevel, expected: ThinkingLevel) -> None:
    assert clamp_thinking_level(info, level) == expected


def test_clamp_prefers_next_higher_level_else_lower(monkeypatch: pytest.MonkeyPatch) -> None:
    # A (hypothetical) model offering only off and high moves `low` up; nothing above xhigh, so down.
    from corral.llm import _thinking

    monkeypatch.setattr(_thinking, "available_thinking_levels", lambda info: ("off", "high"))
    assert _thinking.clamp_thinking_level(REASONING, "low") == "high"
    assert _thinking.clamp_thinking_level(REASONING, "xhigh") == "high"


def test_unknown_level_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown thinking level"):
        clamp_thinking_level(REASONING, "max")  # type: ignore[arg-type]
