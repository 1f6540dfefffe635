"""The model registry: built-in models, custom providers from settings, scripted models.

`resolve("openai/gpt-5")` gives the model's `ModelInfo`; `create_model(info)`
makes a ready `Model`. Real providers are imported only inside
`create_model`, so listing models or `corral --help` never loads the
provider SDKs.

Credentials and endpoints come from the environment: `OPENAI_API_KEY` and
`OPENAI_BASE_URL`, `ANTHROPIC_API_KEY` and `ANTHROPIC_BASE_URL`, and for a
custom provider the variable its settings name in `api_key_env`. A
`base_url` in settings wins over the `*_BASE_URL` variables.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ._errors import LlmError, MissingApiKeyError, UnknownModelError
from ._lifecycle import ModelLifecycle, builtin_lifecycle
from ._model import ApiKind, Model, ModelInfo, ModelPrices
from ._ratelimit import PUBLIC_ENDPOINTS, EndpointKey, RateLimits
from ._refs import ModelRef, parse_model_ref
from ._thinking import supports_xhigh

if TYPE_CHECKING:
    from corral.settings import ModelSettings, ProviderSettings, Settings

__all__ = ["BUILTIN_MODELS", "DEFAULT_MODELS", "ModelRegistry"]

_HINT = "run `corral models` to list the models you can use"

_API_KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
_BASE_URL_ENV = {"openai": "OPENAI_BASE_URL", "anthropic": "ANTHROPIC_BASE_URL"}
_DEFAULT_API: dict[str, ApiKind] = {"openai": "openai-responses", "anthropic": "anthropic"}

SCRIPTED_CONTEXT_WINDOW = 200_000
SCRIPTED_MAX_TOKENS = 32_000


def _openai(
    model_id: str, name: str, window: int, max_tokens: int, *, reasoning: bool, xhigh: bool = False
) -> ModelInfo:
    return ModelInfo(
        "openai",
        model_id,
        "openai-responses",
        name=name,
        context_window=window,
        max_tokens=max_tokens,
        reasoning=reasoning,
        supports_xhigh=xhigh,
        input=("text", "image"),
        api_key_env="OPENAI_API_KEY",
    )


def _anthropic(
    model_id: str, name: str, max_tokens: int, *, window: int = 200_000, xhigh: bool = False
) -> ModelInfo:
    return ModelInfo(
        "anthropic",
        model_id,
        "anthropic",
        name=name,
        context_window=window,
        max_tokens=max_tokens,
        reasoning=True,
        supports_xhigh=xhigh,
        input=("text", "image"),
        api_key_env="ANTHROPIC_API_KEY",
    )


def _with_xhigh(info: ModelInfo) -> ModelInfo:
    return dataclasses.replace(info, supports_xhigh=supports_xhigh(info))


# Context windows and reply limits are published figures; set others in settings under
# [[providers.openai.models]] when they matter. Prices come from the genai-prices catalogue
# (`_cost.py`), which also knows the long-context tiers.
BUILTIN_MODELS: tuple[ModelInfo, ...] = tuple(
    _with_xhigh(info)
    for info in (
        _openai("gpt-6.2-sol", "GPT-6.2 Sol", 1_050_000, 128_000, reasoning=True, xhigh=True),
        _openai("gpt-6.2-astra", "GPT-6.2 Astra", 1_050_000, 128_000, reasoning=True, xhigh=True),
        _openai("gpt-6.1-sol", "GPT-6.1 Sol", 1_050_000, 128_000, reasoning=True, xhigh=True),
        _openai("gpt-6.1-terra", "GPT-6.1 Terra", 1_050_000, 128_000, reasoning=True, xhigh=True),
        _openai("gpt-6-luna", "GPT-6 Luna", 1_050_000, 128_000, reasoning=True, xhigh=True),
        _openai("gpt-5.5", "GPT-5.5", 1_000_000, 128_000, reasoning=True, xhigh=True),
        _openai("gpt-5.4", "GPT-5.4", 1_050_000, 128_000, reasoning=True),
        _openai("gpt-5.4-mini", "GPT-5.4 mini", 400_000, 128_000, reasoning=True),
        _openai("gpt-5.2", "GPT-5.2", 400_000, 128_000, reasoning=True),
        _openai("gpt-5.1", "GPT-5.1", 400_000, 128_000, reasoning=True),
        _openai("gpt-5", "GPT-5", 400_000, 128_000, reasoning=True),
        _openai("gpt-5-mini", "GPT-5 mini", 400_000, 128_000, reasoning=True),
        _openai("gpt-5-nano", "GPT-5 nano", 400_000, 128_000, reasoning=True),
        _openai("gpt-4.1", "GPT-4.1", 1_047_576, 32_768, reasoning=False),
        _openai("gpt-4.1-mini", "GPT-4.1 mini", 1_047_576, 32_768, reasoning=False),
        _openai("gpt-4o", "GPT-4o", 128_000, 16_384, reasoning=False),
        _openai("o3", "o3", 200_000, 100_000, reasoning=True),
        _openai("o4-mini", "o4-mini", 200_000, 100_000, reasoning=True),
        _anthropic("claude-opus-5-5", "Claude Opus 5.5", 128_000, window=1_000_000, xhigh=True),
        _anthropic("claude-sonnet-5-5", "Claude Sonnet 5.5", 64_000, window=1_000_000),
        _anthropic("claude-haiku-5-5", "Claude Haiku 5.5", 64_000, window=1_000_000),
        _anthropic("claude-opus-5", "Claude Opus 5", 128_000, window=1_000_000, xhigh=True),
        _anthropic("claude-sonnet-5", "Claude Sonnet 5", 64_000, window=1_000_000),
        _anthropic("claude-opus-4-7", "Claude Opus 4.7", 128_000, window=1_000_000, xhigh=True),
        _anthropic("claude-sonnet-4-6", "Claude Sonnet 4.6", 64_000, window=1_000_000),
        _anthropic("claude-opus-4-6", "Claude Opus 4.6", 128_000),
        _anthropic("claude-opus-4-5", "Claude Opus 4.5", 64_000),
        _anthropic("claude-sonnet-4-5", "Claude Sonnet 4.5", 64_000),
        _anthropic("claude-haiku-4-5", "Claude Haiku 4.5", 64_000),
        _anthropic("claude-opus-4-1", "Claude Opus 4.1", 32_000),
        _anthropic("claude-sonnet-4-0", "Claude Sonnet 4", 64_000),
    )
)
"""The models corral knows without settings, newest first per provider. Older models stay listed
(marked by `corral models` when their provider deprecated or retired them, `_lifecycle.py`) so a
session that used one still resolves."""

DEFAULT_MODELS: dict[str, str] = {"anthropic": "claude-opus-5-5", "openai": "gpt-6.2-sol"}
"""Each built-in provider's default model (its current most capable one), in the order they are
tried when neither `--model`, the session nor the `default_model` setting chooses: the first
provider whose API key is set gives the lead its model. Never a deprecated or retired model
(`tests/llm/test_lifecycle.py`)."""


def _configured_prices(entry: ModelSettings) -> ModelPrices:
    prices = entry.prices
    return ModelPrices(
        input=prices.input, output=prices.output, cache_read=prices.cache_read, cache_write=prices.cache_write
    )


def _from_settings(
    provider: str, api: ApiKind, entry: ModelSettings, provider_settings: ProviderSettings
) -> ModelInfo:
    api_key_env = provider_settings.api_key_env or _API_KEY_ENV.get(provider)
    info = ModelInfo(
        provider,
        entry.id,
        api,
        name=entry.name or entry.id,
        context_window=entry.context_window,
        max_tokens=entry.max_tokens,
        reasoning=entry.reasoning,
        supports_xhigh=entry.supports_xhigh,
        input=tuple(entry.input),
        prices=_configured_prices(entry) if "prices" in entry.model_fields_set else None,
        base_url=provider_settings.base_url,
        api_key_env=api_key_env,
        max_tokens_field=provider_settings.max_tokens_field,
        stream=provider_settings.stream,
    )
    return _with_xhigh(info)


class ModelRegistry:
    """Every model corral can use with the given settings.

    Args:
        settings: Loaded settings (custom providers, scripted prices); `None`
            means the defaults.
        environ: Where API keys and base URLs are read (default `os.environ`).
        cwd: Where `all_models` looks for `.corral/scripts/` (default: the
            current directory at the time of the call).
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        environ: Mapping[str, str] = os.environ,
        cwd: Path | None = None,
    ) -> None:
        if settings is None:
            from corral.settings import Settings

            settings = Settings()
        self._settings = settings
        self._environ = environ
        self._cwd = cwd
        self._models: dict[str, dict[str, ModelInfo]] = {}
        self._headers: dict[str, dict[str, str]] = {}
        self._rate_limits: dict[str, RateLimits] = {}
        for info in BUILTIN_MODELS:
            self._models.setdefault(info.provider, {})[info.id] = info
        for name, provider in settings.providers.items():
            if name == "scripted":
                continue
            self._add_provider(name, provider)

    def _add_provider(self, name: str, provider: ProviderSettings) -> None:
        api: ApiKind = provider.api or _DEFAULT_API.get(name, "openai-chat")
        models = self._models.setdefault(name, {})
        if name in _DEFAULT_API:
            # Settings for a built-in provider change its endpoint, key or API for every model.
            for model_id, info in list(models.items()):
                models[model_id] = dataclasses.replace(
                    info,
                    api=api,
                    base_url=provider.base_url or info.base_url,
                    api_key_env=provider.api_key_env or info.api_key_env,
                    max_tokens_field=provider.max_tokens_field or info.max_tokens_field,
                    stream=provider.stream,
                )
        for entry in provider.models:
            models[entry.id] = _from_settings(name, api, entry, provider)
        self._headers[name] = dict(provider.headers)
        self._rate_limits[name] = RateLimits(
            max_concurrent_requests=provider.max_concurrent_requests,
            requests_per_minute=provider.requests_per_minute,
            tokens_per_minute=provider.tokens_per_minute,
        )

    # --- lookup -------------------------------------------------------------

    def resolve(self, ref: str | ModelRef) -> ModelInfo:
        """The registry entry for a ref (`provider/model`; a thinking suffix is ignored).

        Any `scripted/<name>` resolves; whether its script exists is checked
        when the model is created.

        Raises:
            ModelRefError: `ref` is not a valid model ref.
            UnknownModelError: the provider or the model is unknown.
        """
        parsed = parse_model_ref(ref) if isinstance(ref, str) else ref
        if parsed.provider == "scripted":
            return self._scripted_info(parsed.model_id)
        models = self._models.get(parsed.provider)
        if models is None:
            raise UnknownModelError(
                f"unknown provider '{parsed.provider}' in model ref '{parsed.ref}': {_HINT}"
            )
        info = models.get(parsed.model_id)
        if info is None:
            raise UnknownModelError(f"unknown model '{parsed.ref}': {_HINT}")
        return info

    def _scripted_info(self, name: str) -> ModelInfo:
        info = ModelInfo(
            "scripted",
            name,
            "scripted",
            name=name,
            context_window=SCRIPTED_CONTEXT_WINDOW,
            max_tokens=SCRIPTED_MAX_TOKENS,
            reasoning=True,
            prices=ModelPrices(),  # free unless settings price it; never looked up in the catalogue
        )
        provider = self._settings.providers.get("scripted")
        entry = next((m for m in provider.models if m.id == name), None) if provider else None
        if entry is None:
            return info
        given = entry.model_fields_set
        return dataclasses.replace(
            info,
            name=entry.name or name,
            context_window=entry.context_window if "context_window" in given else info.context_window,
            max_tokens=entry.max_tokens if "max_tokens" in given else info.max_tokens,
            reasoning=entry.reasoning if "reasoning" in given else info.reasoning,
            supports_xhigh=entry.supports_xhigh if "supports_xhigh" in given else info.supports_xhigh,
            input=tuple(entry.input) if "input" in given else info.input,
            prices=_configured_prices(entry),
        )

    def all_models(self) -> list[ModelInfo]:
        """Every known model, credentials or not: built-ins, custom providers, and the
        scripted models whose scripts can be found (plus those named in settings),
        sorted by provider and id."""
        from ._script_format import list_script_names

        infos = [info for models in self._models.values() for info in models.values()]
        names = set(list_script_names(self._cwd or Path.cwd(), environ=self._environ))
        provider = self._settings.providers.get("scripted")
        if provider is not None:
            names.update(m.id for m in provider.models)
        infos.extend(self._scripted_info(name) for name in names)
        return sorted(infos, key=lambda info: (info.provider, info.id))

    def available_models(self) -> list[ModelInfo]:
        """The models usable now: those whose API key is set or that need none (scripted ones always)."""
        return [info for info in self.all_models() if self.has_credentials(info)]

    def default_model_ref(self) -> str | None:
        """The model used when none is chosen: the `default_model` setting (as written, a
        `:thinking` suffix included), else the first built-in provider's `DEFAULT_MODELS` entry
        whose API key is set, else `None`."""
        if self._settings.default_model:
            return self._settings.default_model
        for provider, model_id in DEFAULT_MODELS.items():
            info = self._models.get(provider, {}).get(model_id)
            if info is not None and self.has_credentials(info):
                return info.ref
        return None

    def lifecycle(self, info: ModelInfo) -> ModelLifecycle | None:
        """What the provider announced for a built-in model (deprecated or retired), else `None`
        (the table holds built-in providers' models only)."""
        return builtin_lifecycle(info.provider, info.id)

    def has_credentials(self, info: ModelInfo) -> bool:
        """Whether the model needs no API key or its environment variable is set."""
        return info.api_key_env is None or bool(self._environ.get(info.api_key_env))

    # --- credentials and endpoints --------------------------------------------

    def api_key_for(self, info: ModelInfo) -> str | None:
        """The API key for a model, `None` when it needs none.

        Raises:
            MissingApiKeyError: the model needs a key and its variable is unset or empty.
        """
        if info.api == "scripted" or info.api_key_env is None:
            return None
        key = self._environ.get(info.api_key_env)
        if not key:
            raise MissingApiKeyError(
                f"{info.ref} needs an API key: set the environment variable {info.api_key_env}",
                env_var=info.api_key_env,
            )
        return key

    def base_url_for(self, info: ModelInfo) -> str | None:
        """The endpoint: the model's `base_url` from settings, else `OPENAI_BASE_URL` or
        `ANTHROPIC_BASE_URL` for those providers, else `None` (the SDK's default)."""
        if info.base_url:
            return info.base_url
        variable = _BASE_URL_ENV.get(info.provider)
        return (self._environ.get(variable) or None) if variable else None

    def headers_for(self, info: ModelInfo) -> dict[str, str]:
        """Extra HTTP headers for the model's provider, from settings (often empty)."""
        return dict(self._headers.get(info.provider, {}))

    def endpoint_key(self, info: ModelInfo) -> EndpointKey | None:
        """Which shared rate limiter the model's requests go through; `None` for a model that sends
        no HTTP requests (scripted) or whose key is not set (it cannot send any)."""
        if info.api == "scripted":
            return None
        try:
            api_key = self.api_key_for(info)
        except MissingApiKeyError:
            return None
        return EndpointKey.of(self.base_url_for(info) or PUBLIC_ENDPOINTS[info.api], api_key)

    def rate_limits_for(self, info: ModelInfo) -> RateLimits:
        """The provider's configured rate limits (`[providers.<name>]`; none by default)."""
        return self._rate_limits.get(info.provider, RateLimits())

    # --- models -------------------------------------------------------------

    def create_model(self, info: ModelInfo, *, cwd: Path | None = None) -> Model:
        """A ready model for a registry entry.

        A scripted model loads and checks its script now (from `cwd`, default
        the current directory), so a bad script fails before any session
        starts. Other models get their key and endpoint from
        [`api_key_for`][corral.llm.ModelRegistry.api_key_for] and
        [`base_url_for`][corral.llm.ModelRegistry.base_url_for]; the model is
        returned at once while its SDK is imported in the background (the first
        request waits for whatever is left of that import; see `_deferred.py`).

        Raises:
            ScriptError: the script is missing or malformed.
            MissingApiKeyError: the model needs a key that is not set.
            LlmError: support for the model's API is not installed.
        """
        if info.api == "scripted":
            from ._scripted import ScriptedModel

            model = ScriptedModel(info, cwd=cwd, environ=self._environ)
            model.load_script(cwd)
            return model
        api_key = self.api_key_for(info)
        base_url = self.base_url_for(info)
        if importlib.util.find_spec("pydantic_ai") is None:  # pragma: no cover - only while it is missing
            raise LlmError(
                f"{info.ref}: support for the {info.api} API is not available (pydantic-ai is missing)"
            )
        headers = self.headers_for(info)
        limits = self.rate_limits_for(info)

        def build() -> Model:
            from ._providers import create_provider_model

            return create_provider_model(
                info, api_key=api_key, base_url=base_url, headers=headers, rate_limits=limits
            )

        from ._deferred import DeferredProviderModel

        # The SDK loads in the background from now; the first request waits only for what is left.
        secure = base_url is None or base_url.lower().startswith("https:")
        return DeferredProviderModel(info, build, secure=secure)
