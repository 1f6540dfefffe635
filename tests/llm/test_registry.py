"""The model registry: built-ins, custom providers from settings, credentials, scripted models."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from corral.llm import (
    BUILTIN_MODELS,
    MissingApiKeyError,
    ModelRegistry,
    ScriptedModel,
    ScriptError,
    UnknownModelError,
    parse_model_ref,
)
from corral.settings import Settings
from corral.trust import trust_project


def settings_from(data: dict[str, object]) -> Settings:
    return Settings.model_validate(data)


def test_builtin_models_resolve_with_keys_and_apis() -> None:
    registry = ModelRegistry(environ={})
    gpt = registry.resolve("openai/gpt-5")
    assert (gpt.api, gpt.api_key_env, gpt.reasoning) == ("openai-responses", "OPENAI_API_KEY", True)
    assert gpt.context_window > 100_000 and gpt.prices is None  # priced from the catalogue
    claude = registry.resolve(parse_model_ref("anthropic/claude-sonnet-4-5:high"))
    assert (claude.api, claude.api_key_env) == ("anthropic", "ANTHROPIC_API_KEY")
    assert registry.resolve("openai/gpt-5.2").supports_xhigh
    assert not registry.resolve("openai/gpt-5").supports_xhigh
    assert not registry.resolve("openai/gpt-4.1").reasoning
    ids = {info.ref for info in BUILTIN_MODELS}
    assert {"openai/gpt-5-mini", "openai/gpt-5-nano", "openai/o4-mini", "anthropic/claude-opus-4-5"} <= ids
    assert {"anthropic/claude-haiku-4-5", "openai/gpt-4.1-mini"} <= ids


@pytest.mark.parametrize(
    ("ref", "fragment"),
    [("nowhere/model", "unknown provider 'nowhere'"), ("openai/gpt-0", "unknown model 'openai/gpt-0'")],
)
def test_unknown_models_hint_at_corral_models(ref: str, fragment: str) -> None:
    with pytest.raises(UnknownModelError) as info:
        ModelRegistry(environ={}).resolve(ref)
    assert fragment in str(info.value)
    assert "corral models" in str(info.value)


def test_missing_api_key_names_the_variable() -> None:
    registry = ModelRegistry(environ={"OPENAI_API_KEY": ""})
    info = registry.resolve("openai/gpt-5")
    with pytest.raises(MissingApiKeyError) as error:
        registry.api_key_for(info)
    assert "OPENAI_API_KEY" in str(error.value)
    assert error.value.env_var == "OPENAI_API_KEY"
    assert ModelRegistry(environ={"OPENAI_API_KEY": "sk-test"}).api_key_for(info) == "sk-test"


def test_base_url_comes_from_env_for_builtins() -> None:
    environ = {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "ANTHROPIC_BASE_URL": "http://127.0.0.1:8"}
    registry = ModelRegistry(environ=environ)
    assert registry.base_url_for(registry.resolve("openai/gpt-5")) == "http://127.0.0.1:9/v1"
    assert registry.base_url_for(registry.resolve("anthropic/claude-haiku-4-5")) == "http://127.0.0.1:8"
    assert ModelRegistry(environ={}).base_url_for(registry.resolve("openai/gpt-5")) is None


def test_custom_openai_compatible_provider_from_settings() -> None:
    settings = settings_from(
        {
            "providers": {
                "local": {
                    "base_url": "http://127.0.0.1:11434/v1",
                    "headers": {"X-Test": "1"},
                    "models": [{"id": "qwen3:8b", "context_window": 32768, "prices": {"input": 0.1}}],
                },
                "vllm": {
                    "base_url": "http://127.0.0.1:8000/v1",
                    "api_key_env": "VLLM_API_KEY",
                    "api": "openai-responses",
                    "models": [{"id": "Qwen/Qwen3-32B", "reasoning": True}],
                },
            }
        }
    )
    registry = ModelRegistry(settings, environ={})
    local = registry.resolve("local/qwen3:8b")
    assert (local.api, local.context_window, local.max_tokens, local.prices.input) == (
        "openai-chat",
        32768,
        16384,
        0.1,
    )
    assert registry.api_key_for(local) is None  # no key needed
    assert registry.base_url_for(local) == "http://127.0.0.1:11434/v1"
    assert registry.headers_for(local) == {"X-Test": "1"}
    vllm = registry.resolve("vllm/Qwen/Qwen3-32B:high")
    assert (vllm.api, vllm.reasoning) == ("openai-responses", True)
    with pytest.raises(MissingApiKeyError, match="VLLM_API_KEY"):
        registry.api_key_for(vllm)


def test_settings_extend_and_override_builtin_provider() -> None:
    settings = settings_from(
        {
            "providers": {
                "openai": {
                    "base_url": "http://proxy.local/v1",
                    "models": [{"id": "gpt-5", "context_window": 1000}, {"id": "my-finetune"}],
                }
            }
        }
    )
    registry = ModelRegistry(settings, environ={"OPENAI_BASE_URL": "http://ignored/v1"})
    gpt5 = registry.resolve("openai/gpt-5")
    assert gpt5.context_window == 1000  # replaced by id
    assert gpt5.api == "openai-responses" and gpt5.api_key_env == "OPENAI_API_KEY"
    assert registry.base_url_for(gpt5) == "http://proxy.local/v1"  # settings win over the variable
    assert registry.resolve("openai/my-finetune").api_key_env == "OPENAI_API_KEY"
    assert registry.base_url_for(registry.resolve("openai/gpt-4.1")) == "http://proxy.local/v1"


def test_available_models_follow_credentials(tmp_path: Path) -> None:
    settings = settings_from({"providers": {"local": {"base_url": "http://x/v1", "models": [{"id": "m"}]}}})
    none = {info.ref for info in ModelRegistry(settings, environ={}, cwd=tmp_path).available_models()}
    assert "local/m" in none and "scripted/hello" in none
    assert not any(ref.startswith(("openai/", "anthropic/")) for ref in none)
    with_key = ModelRegistry(settings, environ={"ANTHROPIC_API_KEY": "k"}, cwd=tmp_path).available_models()
    refs = {info.ref for info in with_key}
    assert "anthropic/claude-sonnet-4-5" in refs and not any(ref.startswith("openai/") for ref in refs)
    everything = {info.ref for info in ModelRegistry(settings, environ={}, cwd=tmp_path).all_models()}
    assert "openai/gpt-5" in everything


def test_scripted_models_resolve_and_are_listed(tmp_path: Path) -> None:
    scripts = tmp_path / ".corral" / "scripts" / "team"
    scripts.mkdir(parents=True)
    (scripts / "review.yaml").write_text("steps:\n  - text: ok\n", encoding="utf-8")
    trust_project(tmp_path)
    registry = ModelRegistry(environ={}, cwd=tmp_path)
    info = registry.resolve("scripted/anything-at-all")
    assert (info.provider, info.api, info.context_window, info.max_tokens, info.reasoning) == (
        "scripted",
        "scripted",
        200000,
        32000,
        True,
    )
    assert registry.api_key_for(info) is None
    refs = [model.ref for model in registry.available_models()]
    assert "scripted/team/review" in refs and "scripted/hello" in refs and "scripted/demo" in refs


def test_scripted_prices_come_from_settings() -> None:
    settings = settings_from(
        {"providers": {"scripted": {"models": [{"id": "priced", "prices": {"input": 2, "output": 8}}]}}}
    )
    registry = ModelRegistry(settings, environ={})
    priced = registry.resolve("scripted/priced")
    assert (priced.prices.input, priced.prices.output) == (2.0, 8.0)
    assert (priced.context_window, priced.max_tokens, priced.reasoning) == (200000, 32000, True)
    assert registry.resolve("scripted/other").prices.input == 0.0
    assert "scripted/priced" in {info.ref for info in registry.all_models()}


def test_create_model_for_scripted_loads_the_script(tmp_path: Path) -> None:
    registry = ModelRegistry(environ={})
    model = registry.create_model(registry.resolve("scripted/hello"), cwd=tmp_path)
    assert isinstance(model, ScriptedModel)
    with pytest.raises(ScriptError, match=r"no script missing-one\.yaml"):
        registry.create_model(registry.resolve("scripted/missing-one"), cwd=tmp_path)
    bad = tmp_path / ".corral" / "scripts"
    bad.mkdir(parents=True)
    (bad / "broken.yaml").write_text("steps: []\n", encoding="utf-8")
    trust_project(tmp_path)
    with pytest.raises(ScriptError, match=r"broken\.yaml"):
        registry.create_model(registry.resolve("scripted/broken"), cwd=tmp_path)


def test_create_model_for_a_provider_needs_its_key() -> None:
    registry = ModelRegistry(environ={})
    with pytest.raises(MissingApiKeyError, match="ANTHROPIC_API_KEY"):
        registry.create_model(registry.resolve("anthropic/claude-haiku-4-5"))


def test_create_model_for_a_provider_uses_the_providers_package() -> None:
    registry = ModelRegistry(
        environ={"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    )
    info = registry.resolve("openai/gpt-5-mini")
    model = registry.create_model(info)
    assert model.info == info


def test_listing_models_does_not_import_provider_sdks(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from corral.llm import ModelRegistry\n"
        "from corral.settings import load_settings\n"
        "r = ModelRegistry(load_settings())\n"
        "r.all_models(); r.resolve('openai/gpt-5'); r.create_model(r.resolve('scripted/hello'))\n"
        "heavy = [m for m in ('pydantic_ai', 'openai', 'anthropic', 'httpx') if m in sys.modules]\n"
        "print(heavy)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "CORRAL_SCRIPTS"}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path, check=True
    )
    assert result.stdout.strip() == "[]"
