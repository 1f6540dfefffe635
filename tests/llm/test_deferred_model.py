"""`ModelRegistry.create_model` returns a provider model at once; its SDK is imported in the background."""

from __future__ import annotations

import asyncio
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from corral.llm import (
    DoneEvent,
    ErrorEvent,
    LlmContext,
    ModelRegistry,
    StreamOptions,
    TextContent,
    UserMessage,
    _deferred,
)
from corral.llm._deferred import DeferredProviderModel

from .fake_server import FakeProviderServer

GATE = "corral_test_slow_sdk_gate"


def _registry(server: FakeProviderServer) -> ModelRegistry:
    return ModelRegistry(environ={"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": server.base_url})


async def _ask(model: Any) -> Any:
    context = LlmContext("be brief", [UserMessage(content=[TextContent(text="hi")])])
    last = None
    async for event in model.stream(context, StreamOptions()):
        last = event
    return last


@pytest.fixture
def slow_sdk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """An SDK module whose import blocks until the returned event is set."""
    gate = threading.Event()
    started = threading.Event()
    module = type(sys)(GATE)
    module.gate = gate  # type: ignore[attr-defined]
    module.started = started  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, GATE, module)
    (tmp_path / "corral_test_slow_sdk.py").write_text(
        f"import {GATE}\n{GATE}.started.set()\nassert {GATE}.gate.wait(30)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "corral_test_slow_sdk", raising=False)
    monkeypatch.setattr(_deferred, "_preloads", {})
    monkeypatch.setitem(_deferred._SDK_MODULES, "openai-responses", ("corral_test_slow_sdk",))
    return gate


async def test_the_model_exists_before_its_sdk_and_the_first_request_waits_for_it(
    slow_sdk: threading.Event,
) -> None:
    with FakeProviderServer() as server:
        server.queue_text("hello")
        registry = _registry(server)
        model = registry.create_model(registry.resolve("openai/gpt-5-mini"))
        # Returned while the background import is still blocked.
        assert isinstance(model, DeferredProviderModel)
        assert sys.modules[GATE].started.wait(30)  # type: ignore[attr-defined]
        assert model.loaded is None
        request = asyncio.ensure_future(_ask(model))
        await asyncio.sleep(0.05)
        assert not request.done() and server.requests == []
        slow_sdk.set()
        reply = await asyncio.wait_for(request, 30)
        assert isinstance(reply, DoneEvent), reply
        assert model.loaded is not None
        assert isinstance(await _ask(model), ErrorEvent | DoneEvent)
        await model.aclose()


async def test_a_failed_import_ends_requests_with_an_error_naming_the_api(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_deferred, "_preloads", {})
    monkeypatch.setitem(_deferred._SDK_MODULES, "openai-responses", ("corral_test_no_such_sdk",))
    with FakeProviderServer() as server:
        registry = _registry(server)
        model = registry.create_model(registry.resolve("openai/gpt-5-mini"))
        reply = await _ask(model)
        assert isinstance(reply, ErrorEvent)
        assert reply.error.error_message is not None
        assert "openai-responses API is not available" in reply.error.error_message
        assert "corral_test_no_such_sdk" in reply.error.error_message
        assert server.requests == []
