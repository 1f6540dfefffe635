"""Provider models whose SDK loads in the background.

Importing a provider's SDK stack (pydantic-ai, then the openai or anthropic
SDK) takes 0.3-2.4 s; Chat Completions has none (corral's own client, over
`httpx2`), but its import and the SSL context still take a little. A front end creates the lead's model while it starts —
before the user has typed anything, before the session is loaded and the store
opened — so `ModelRegistry.create_model` hands back a `DeferredProviderModel`
at once and starts that import in a daemon thread (one per wire API per
process); the thread also loads the shared SSL context for an HTTPS endpoint.
The first request waits for the import only if it has not finished yet
(without blocking the event loop), then builds the real model and streams
through it; later requests go straight to it.

If the import fails, the model's requests end with an error event that says
what is missing (a model never raises for provider failures).
"""

from __future__ import annotations

import asyncio
import importlib
import threading
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING

from corral import _startup

from ._messages import AssistantMessage
from ._model import AssistantMessageEvent, ErrorEvent, LlmContext, Model, ModelInfo, StreamOptions
from ._openai_reasoning import serves_model

if TYPE_CHECKING:
    from ._lifecycle import ModelLifecycle

__all__ = ["DeferredProviderModel", "preload_provider"]

_SDK_MODULES: dict[str, tuple[str, ...]] = {
    "openai-responses": (
        "pydantic_ai.models.openai",
        "pydantic_ai.providers.openai",
        "openai.resources.responses",
    ),
    "anthropic": ("pydantic_ai.models.anthropic", "pydantic_ai.providers.anthropic"),
}
"""What a wire API's first request needs imported, beside `corral.llm._providers`.

Chat Completions needs nothing more: corral's own client (`_providers/_chat.py`) imports no SDK;
nor does the Responses API, but for OpenAI's reasoning models (`_sdk_modules`).
"""


def _sdk_modules(info: ModelInfo) -> tuple[str, ...]:
    """What `info`'s first request needs imported: nothing for a model corral's own client serves."""
    if info.api == "openai-responses" and serves_model(info.id):
        return ()
    return _SDK_MODULES.get(info.api, ())


class _Preload:
    """One background import: a daemon thread, and what it ended with."""

    def __init__(self, modules: tuple[str, ...], secure: bool) -> None:
        self.done = threading.Event()
        self.error: BaseException | None = None
        self.secure = secure
        self._modules = modules
        # A start-up that paused the garbage collector keeps it paused until these are imported.
        self._release_gc = _startup.hold()
        self._thread = threading.Thread(target=self._run, name="corral-sdk-import", daemon=True)
        try:
            self._thread.start()
        except BaseException:
            self._release_gc()
            raise

    def _run(self) -> None:
        try:
            for name in ("corral.llm._providers", "corral.llm._providers._http", *self._modules):
                importlib.import_module(name)
            if self.secure:
                from ._providers._http import warm_ssl_context

                warm_ssl_context()
        except BaseException as exc:
            self.error = exc
        finally:
            self._release_gc()
            self.done.set()

    async def wait(self) -> None:
        if not self.done.is_set():
            await asyncio.to_thread(self.done.wait)


_lock = threading.Lock()
_preloads: dict[tuple[tuple[str, ...], bool], _Preload] = {}


def preload_provider(info: ModelInfo, *, secure: bool) -> _Preload:
    """Start importing what `info`'s requests need (once per set of modules per process); `secure`
    also loads TLS."""
    modules = _sdk_modules(info)
    key = (modules, secure)
    with _lock:
        preload = _preloads.get(key)
        if preload is None or (preload.done.is_set() and preload.error is not None):
            preload = _preloads[key] = _Preload(modules, secure)
        return preload


class DeferredProviderModel(Model):
    """A provider model that exists before its SDK is imported; see the module docstring.

    Args:
        info: The registry entry.
        build: Makes the real model (called once, after the import, on the event loop).
        secure: The endpoint is HTTPS (the background thread loads the SSL context too).
    """

    def __init__(self, info: ModelInfo, build: Callable[[], Model], *, secure: bool) -> None:
        super().__init__(info)
        self._build = build
        self._preload = preload_provider(info, secure=secure)
        self._model: Model | None = None

    @property
    def loaded(self) -> Model | None:
        """The real model, once a request has built it."""
        return self._model

    @property
    def lifecycle(self) -> ModelLifecycle | None:
        """The real model's once it is built (it also reads the SDK's catalogue), else the table's."""
        if self._model is not None:
            return self._model.lifecycle
        return super().lifecycle

    async def _real(self) -> Model:
        if self._model is None:
            await self._preload.wait()
            if self._preload.error is not None:
                raise self._preload.error
            if self._model is None:
                self._model = self._build()
        return self._model

    async def stream(
        self, context: LlmContext, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        """Stream one reply through the real model, built on the first request."""
        try:
            model = await self._real()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            failed = AssistantMessage(
                api=self.info.api,
                provider=self.info.provider,
                model=self.info.id,
                stop_reason="error",
                error_message=f"{self.info.ref}: support for the {self.info.api} API is not available ({exc})",
            )
            yield ErrorEvent(reason="error", error=failed)
            return
        async for event in model.stream(context, options):
            yield event

    async def aclose(self) -> None:
        """Close the real model's HTTP client, if it was built."""
        close = getattr(self._model, "aclose", None)
        if close is not None:
            await close()
