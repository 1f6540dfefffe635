"""Model refs: `provider/model[:thinking]`."""

from __future__ import annotations

import pytest

from corral.errors import CorralError
from corral.llm import ModelRef, ModelRefError, parse_model_ref


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("openai/gpt-5", ModelRef("openai", "gpt-5", None)),
        ("openai/gpt-5:high", ModelRef("openai", "gpt-5", "high")),
        ("anthropic/claude-sonnet-4-5:off", ModelRef("anthropic", "claude-sonnet-4-5", "off")),
        ("scripted/team/review", ModelRef("scripted", "team/review", None)),
        ("ollama/qwen3:8b", ModelRef("ollama", "qwen3:8b", None)),
        ("ollama/qwen3:8b:xhigh", ModelRef("ollama", "qwen3:8b", "xhigh")),
        ("openrouter/meta-llama/llama-3:minimal", ModelRef("openrouter", "meta-llama/llama-3", "minimal")),
        ("local/model:HIGH", ModelRef("local", "model:HIGH", None)),
        ("  openai/gpt-5  ", ModelRef("openai", "gpt-5", None)),
    ],
)
def test_valid_refs_parse_into_provider_model_and_thinking(text: str, expected: ModelRef) -> None:
    assert parse_model_ref(text) == expected


@pytest.mark.parametrize(
    "text",
    ["gpt-5", "", "/gpt-5", "openai/", "openai/:high", "open ai/gpt-5", "openai/gpt 5", "-x/y"],
)
def test_invalid_refs_raise_model_ref_error_with_one_line(text: str) -> None:
    with pytest.raises(ModelRefError) as info:
        parse_model_ref(text)
    assert "\n" not in str(info.value)
    assert isinstance(info.value, CorralError)


def test_ref_string_forms_round_trip() -> None:
    ref = parse_model_ref("ollama/qwen3:8b:low")
    assert ref.ref == "ollama/qwen3:8b"
    assert str(ref) == "ollama/qwen3:8b:low"
    assert parse_model_ref(str(ref)) == ref
