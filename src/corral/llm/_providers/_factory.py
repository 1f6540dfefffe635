"""`create_provider_model`: the model that talks to a registry entry's endpoint.

Chat Completions (`openai-chat`) gets corral's own client (`_chat`), and so does the Responses
API (`openai-responses`, `_responses`) for every model but OpenAI's reasoning models
(`serves_model`), whose requests pydantic-ai shapes by its per-model profile. Those and the
Anthropic API get a pydantic-ai model and provider, wrapped in `PydanticAIModel`.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from corral.llm._lifecycle import ModelLifecycle
from corral.llm._model import Model, ModelInfo
from corral.llm._openai_reasoning import serves_model
from corral.llm._ratelimit import PUBLIC_ENDPOINTS, EndpointKey, RateLimits

from ._chat import ChatCompletionsModel
from ._http import model_http_client
from ._responses import ResponsesModel

if TYPE_CHECKING:
    from pydantic_ai.models import Model as PaiModel

__all__ = ["NO_API_KEY", "create_provider_model"]

NO_API_KEY = "no-api-key"
"""Sent when no key is configured (a local OpenAI-compatible server may need none; the SDKs insist on one)."""


@functools.cache
def _pi_responses_model_class() -> type[Any]:
    """pydantic-ai's Responses model, whose input items skip the openai SDK's parameter transform.

    The openai SDK walks every request parameter against its TypedDicts before sending
    (`async_maybe_transform`), which for these plain JSON items changes nothing and cost most of
    a long context's request (30-40 ms at 200 messages, every turn). The mapped items go in
    `extra_body` instead, which the SDK merges into the body unchanged, in the place of `input`:
    the bytes sent are the same.
    """
    from pydantic_ai.models.openai import OpenAIResponsesModel

    class PiResponsesModel(OpenAIResponsesModel):
        send_premapped = True
        """Send the mapped input items in the request body as they are."""

        async def _map_messages(self, messages: Any, model_settings: Any, *args: Any, **kwargs: Any) -> Any:
            instructions, mapped = await super()._map_messages(messages, model_settings, *args, **kwargs)
            if self.send_premapped and isinstance(model_settings, dict):
                model_settings["extra_body"] = {**(model_settings.get("extra_body") or {}), "input": mapped}
                return instructions, []
            return instructions, mapped

    return PiResponsesModel


def create_provider_model(
    info: ModelInfo,
    *,
    api_key: str | None,
    base_url: str | None,
    headers: Mapping[str, str] | None = None,
    streaming: bool | None = None,
    rate_limits: RateLimits | None = None,
) -> Model:
    """Build the model that talks to `info`'s endpoint over HTTP.

    Dispatches on `info.api`: `openai-chat` → corral's `ChatCompletionsModel`,
    `openai-responses` → corral's `ResponsesModel` (pydantic-ai's `OpenAIResponsesModel` for
    OpenAI's reasoning models), `anthropic` → pydantic-ai's `AnthropicModel`, each with its
    provider given `base_url` and `api_key`.
    The key is resolved by the caller; `None` sends a placeholder rather
    than falling back to environment variables.

    Args:
        info: The registry entry.
        api_key: The API key (sent as `Authorization: Bearer` to OpenAI APIs, `x-api-key` to Anthropic).
        base_url: The endpoint (`https://host/v1` for OpenAI APIs, `https://host` for Anthropic);
            `None` uses the provider's public endpoint.
        headers: Extra HTTP headers sent with every request (from the provider's settings).
        streaming: `False` requests plain (non-streamed) responses; `None` follows `info.stream`.
        rate_limits: The provider's configured caps (default none); every request goes through the
            limiter of its endpoint and key either way, which honours `Retry-After` for all agents.

    Returns:
        A [`Model`][corral.llm.Model] whose `stream` never raises for provider failures.

    Raises:
        ValueError: `info.api` is not served over HTTP (such as `scripted`).
    """
    key = api_key if api_key else NO_API_KEY
    endpoint = base_url or PUBLIC_ENDPOINTS.get(info.api, info.provider)
    rate_limit = (EndpointKey.of(endpoint, api_key), rate_limits or RateLimits())
    stream = info.stream if streaming is None else streaming
    if info.api == "openai-chat":
        return ChatCompletionsModel(
            info, api_key=key, endpoint=endpoint, rate_limit=rate_limit, headers=headers, streaming=stream
        )
    if info.api == "openai-responses" and serves_model(info.id):
        return ResponsesModel(
            info, api_key=key, endpoint=endpoint, rate_limit=rate_limit, headers=headers, streaming=stream
        )
    from ._adapter import PydanticAIModel

    http_client = model_http_client(headers, rate_limit=rate_limit)
    with _no_price_table():
        pai_model, lifecycle = _pai_model(info, key, base_url, http_client)
    return PydanticAIModel(info, pai_model, streaming=stream, lifecycle=lifecycle)


def _pai_model(
    info: ModelInfo, key: str, base_url: str | None, http_client: Any
) -> tuple[PaiModel, ModelLifecycle | None]:
    """pydantic-ai's model and provider for `info`, and the lifecycle its catalogue knows."""
    # corral knows the context window: pydantic-ai need not look it up in genai-prices' table.
    profile_base: Any = {**_NO_DEPRECATION_WARNING, "context_window": info.context_window}
    pai_model: PaiModel
    lifecycle: ModelLifecycle | None
    if info.api == "openai-responses":
        from pydantic_ai.providers.openai import OpenAIProvider

        # The SDKs' own retries are off for every request (`max_retries: 0` in `to_model_settings`):
        # corral retries, behind the shared limiter.
        provider = OpenAIProvider(base_url=base_url, api_key=key, http_client=http_client)
        lifecycle = _catalogue_lifecycle(provider, info.id)
        pai_model = _pi_responses_model_class()(info.id, provider=provider, profile=profile_base)
    elif info.api == "anthropic":
        from pydantic_ai.models.anthropic import AnthropicModel
        from pydantic_ai.providers.anthropic import AnthropicProvider

        anthropic = AnthropicProvider(api_key=key, base_url=base_url, http_client=http_client)
        lifecycle = _catalogue_lifecycle(anthropic, info.id)
        pai_model = AnthropicModel(info.id, provider=anthropic, profile=profile_base)
    else:
        raise ValueError(
            f"API {info.api!r} of {info.ref} is not an HTTP provider API; use the registry's create_model."
        )
    return pai_model, lifecycle


@contextlib.contextmanager
def _no_price_table() -> Iterator[None]:
    """Make pydantic-ai models without building genai-prices' table first.

    pydantic-ai's `Model.__init__` calls `preload_pricing_data()`, which builds the whole price table
    (~20-100 ms of CPU) so that pricing a reply later does not. corral makes the lead's model on the
    event loop right before its first request, so that cost would delay the request; the table is
    built instead when the first reply's usage is read and priced (`_cost.py`), after the request
    went out. The skip lasts while the model is made (on the event loop's thread); a pydantic-ai
    without that hook is left as it is.
    """
    import pydantic_ai.models as pai_models

    preload = getattr(pai_models, "preload_pricing_data", None)
    if preload is None:
        yield
        return
    pai_models.preload_pricing_data = _skip  # type: ignore[attr-defined]
    try:
        yield
    finally:
        pai_models.preload_pricing_data = preload  # type: ignore[attr-defined]


def _skip() -> None:
    return None


_NO_DEPRECATION_WARNING: Any = {"deprecation": None}
"""The profile layer that stops pydantic-ai's `DeprecatedModelWarning` at each request.

A warning raised inside a request (under `-W error`, or a test's `filterwarnings = error`) would
fail the request; corral reads the deprecation itself (`_catalogue_lifecycle`) and the agent shows
it once as a notice (`ModelNoticeEvent`). Older pydantic-ai releases have no such key and ignore it.
"""


def _catalogue_lifecycle(provider: Any, model_id: str) -> ModelLifecycle | None:
    """The deprecation pydantic-ai's provider profile knows for `model_id`, as a `ModelLifecycle`."""
    try:
        profile = provider.model_profile(model_id)
        deprecation = profile.get("deprecation") if profile else None
    except Exception:  # an SDK without a catalogue, or a profile of another shape
        return None
    if deprecation is None:
        return None
    return ModelLifecycle.from_deprecation(deprecation)
