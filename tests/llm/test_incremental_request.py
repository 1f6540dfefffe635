"""A provider model converts only what is new in the context, and still sends what a fresh conversion would.

An `AgentSession` talks to the fake server through a real `openai-chat`
provider model while its context changes in every way it can: appended turns
and tool results, steering during a reply, a provider error dropped and
retried, a compaction, custom messages, a model switch and back. Every request
body the server got is then compared with the body a new model (no kept
conversion, and the openai SDK's own parameter transform) sends for the same
context.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from corral.agent import AgentSession
from corral.llm import (
    ApiKind,
    AssistantMessageEvent,
    CustomMessage,
    LlmContext,
    Model,
    StreamOptions,
)
from corral.llm._providers import ChatCompletionsModel, ResponsesModel, create_provider_model
from corral.llm._providers._adapter import PydanticAIModel
from corral.session import SessionManager
from corral.settings import Settings
from tests.agent.helpers import EchoTool

from ._provider_contract import make_info, server
from .fake_server import FakeProviderServer, FakeReply, FakeToolCall

__all__ = ["server"]


ProviderModel = ChatCompletionsModel | ResponsesModel | PydanticAIModel
"""The provider models that keep a conversion per session (`_conversions`)."""


def _model(
    server: FakeProviderServer, model_id: str, *, provider: str = "fake", api: ApiKind = "openai-chat"
) -> ProviderModel:
    base_url = server.url if api == "anthropic" else server.base_url
    model = create_provider_model(
        make_info(api, id=model_id, provider=provider), api_key="k", base_url=base_url
    )
    assert isinstance(model, ChatCompletionsModel | ResponsesModel | PydanticAIModel)
    return model


class _Recording(Model):
    """Passes requests to `inner`, keeping each request's context and options."""

    def __init__(self, inner: ProviderModel, log: list[tuple[ProviderModel, LlmContext, StreamOptions]]):
        super().__init__(inner.info)
        self.inner = inner
        self.log = log

    async def stream(
        self, context: LlmContext, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        snapshot = LlmContext(context.system_prompt, list(context.messages), list(context.tools))
        self.log.append((self.inner, snapshot, options))
        async for event in self.inner.stream(context, options):
            yield event


def _canonical(body: Any) -> str:
    return json.dumps(body, sort_keys=True)


async def _no_wait(_seconds: float) -> None:
    return None


@pytest.mark.parametrize("api", ["openai-chat", "openai-responses", "anthropic"])
async def test_incremental_requests_equal_fresh_ones_after_every_kind_of_change(
    server: FakeProviderServer, tmp_path: Path, api: ApiKind
) -> None:
    server.default_reply = FakeReply(text="Noted.")
    log: list[tuple[ProviderModel, LlmContext, StreamOptions]] = []
    first = _Recording(_model(server, "fake-model-1", api=api), log)
    other = _Recording(_model(server, "fake-model-2", api=api), log)
    session = SessionManager.create(tmp_path, persist=False)
    agent = AgentSession(
        session=session,
        model=first,
        thinking_level="off",
        tools=[EchoTool()],
        cwd=tmp_path,
        settings=Settings.model_validate({"compaction": {"keep_recent_tokens": 1}}),
        sleep=_no_wait,
    )

    # Appended turns: a tool call and its result, then an answer.
    server.queue(FakeReply(tool_calls=[FakeToolCall("echo", {"text": "ping"})]))
    server.queue_text("Echoed.")
    await agent.prompt("one")
    await agent.wait_for_idle()

    # Steering during a reply: the steered message joins the next request.
    server.queue(FakeReply(text=["slow", " reply"], chunk_delay=0.2, repeat_text=3))
    await agent.prompt("two")
    agent.steer("steered in")
    await agent.wait_for_idle()

    # A provider error is dropped from the context and the request retried.
    server.queue_error(503, "overloaded")
    await agent.prompt("three")
    await agent.wait_for_idle()

    # Custom messages (as deliveries are), then a compaction replacing the history.
    agent.send_custom_message(
        CustomMessage(custom_type="corral-team-report", content="A report."), trigger_turn=True
    )
    await agent.wait_for_idle()
    await agent.compact()
    await agent.prompt("four")
    await agent.wait_for_idle()

    # A model switch and back.
    agent.set_model(other)
    await agent.prompt("five")
    await agent.wait_for_idle()
    agent.set_model(first)
    await agent.prompt("six")
    await agent.wait_for_idle()

    sent = [request.body for request in server.requests]
    assert len(sent) == len(log) >= 11
    assert any("steered in" in str(body) for body in sent)
    assert first.inner._conversions, "the model kept its conversion between requests"

    # Every request again, from fresh models that convert everything and let the SDK transform it.
    reference: dict[str, ProviderModel] = {}
    for inner, context, options in log:
        fresh = reference.setdefault(inner.info.id, _model(server, inner.info.id, api=api))
        fresh._conversions.clear()
        if isinstance(fresh, PydanticAIModel) and hasattr(fresh.pai_model, "send_premapped"):
            fresh.pai_model.send_premapped = False
        async for _event in fresh.stream(context, options):
            pass
    rebuilt = [request.body for request in server.requests[len(sent) :]]
    assert len(rebuilt) == len(sent)
    # A compaction's two summary requests run concurrently, so arrival order may differ from the log's.
    assert sorted(map(_canonical, sent)) == sorted(map(_canonical, rebuilt))


async def test_a_context_that_is_not_an_extension_is_converted_afresh(server: FakeProviderServer) -> None:
    from corral.llm import TextContent, UserMessage

    server.default_reply = FakeReply(text="ok")
    model = _model(server, "fake-model-1", provider="local")
    a = UserMessage(content=[TextContent(text="a")])
    b = UserMessage(content=[TextContent(text="b")])
    c = UserMessage(content=[TextContent(text="c")])
    contexts = [
        LlmContext("sys", [a]),
        LlmContext("sys", [a, b]),  # appended: converted incrementally
        LlmContext("sys", [a, c]),  # replaced: afresh
        LlmContext("other", [a, c]),  # new system prompt: afresh
    ]
    for context in contexts:
        async for _event in model.stream(context, StreamOptions(session_id="s")):
            pass
    assert model._conversions["s"].rebuilds == 3
    bodies: list[Any] = [request.body["messages"] for request in server.requests]
    texts = [[message["content"] for message in body] for body in bodies]
    assert texts == [["sys", "a"], ["sys", "a", "b"], ["sys", "a", "c"], ["other", "a", "c"]], texts
