"""Local OpenAI-compatible servers (llama.cpp, Ollama, vLLM, LM Studio) against the fake server.

The provider settings (`max_tokens_field`, `stream`) reach the wire, and the Chat Completions
stream is parsed defensively: a tool name repeated in every chunk stays one name, and arguments
that are not JSON reach the model as a tool error quoting them, never as `{}`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from corral.llm import (
    AssistantMessage,
    LlmContext,
    ModelRegistry,
    StreamOptions,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from corral.session import SessionManager
from corral.settings import ProviderSettings, Settings
from tests.agent.helpers import EchoTool, Harness, wait

from ._provider_contract import collect, final
from .fake_server import FakeProviderServer, FakeReply, FakeToolCall

pytestmark = pytest.mark.timeout(60)

ECHO_SCHEMA = EchoTool().definition()


@pytest.fixture
def server() -> Any:
    with FakeProviderServer() as fake:
        yield fake


def registry(server: FakeProviderServer, **provider: Any) -> ModelRegistry:
    settings = Settings.model_validate(
        {
            "providers": {
                "local": {
                    "base_url": server.base_url,
                    "models": [{"id": "small", "context_window": 8192, "max_tokens": 512}],
                    **provider,
                }
            }
        }
    )
    return ModelRegistry(settings, environ={})


async def ask(registry: ModelRegistry, ref: str = "local/small") -> AssistantMessage:
    model = registry.create_model(registry.resolve(ref))
    try:
        return final(await collect(model, LlmContext("be brief", [UserMessage(content="hi")], [ECHO_SCHEMA])))
    finally:
        await model.aclose()  # type: ignore[attr-defined]


# --- settings -----------------------------------------------------------------------


def test_provider_settings_default_to_streaming_and_the_providers_cap_field() -> None:
    provider = ProviderSettings(base_url="http://127.0.0.1:8080/v1")
    assert provider.stream is True
    assert provider.max_tokens_field is None


def test_unknown_cap_field_is_a_settings_error_naming_the_choices() -> None:
    with pytest.raises(ValueError, match="max_completion_tokens"):
        Settings.model_validate(
            {"providers": {"local": {"base_url": "http://x/v1", "max_tokens_field": "cap"}}}
        )


async def test_custom_provider_sends_the_cap_as_max_tokens(server: FakeProviderServer) -> None:
    server.queue_text("ok")
    await ask(registry(server))
    body = server.requests[-1].body
    assert body["max_tokens"] == 512
    assert "max_completion_tokens" not in body


async def test_openai_keeps_max_completion_tokens(server: FakeProviderServer) -> None:
    server.queue_text("ok")
    settings = Settings.model_validate(
        {"providers": {"openai": {"base_url": server.base_url, "api": "openai-chat"}}}
    )
    reg = ModelRegistry(settings, environ={"OPENAI_API_KEY": "sk-test"})
    await ask(reg, "openai/gpt-4o")
    body = server.requests[-1].body
    assert body["max_completion_tokens"] == 16_384
    assert "max_tokens" not in body


@pytest.mark.parametrize(
    ("field", "sent"),
    [
        ("both", {"max_tokens": 512, "max_completion_tokens": 512}),
        ("max_completion_tokens", {"max_completion_tokens": 512}),
        ("max_tokens", {"max_tokens": 512}),
    ],
)
async def test_cap_field_setting_chooses_the_fields_sent(
    server: FakeProviderServer, field: str, sent: dict[str, int]
) -> None:
    server.queue_text("ok")
    await ask(registry(server, max_tokens_field=field))
    body = server.requests[-1].body
    assert {key: body[key] for key in ("max_tokens", "max_completion_tokens") if key in body} == sent


async def test_stream_false_asks_for_a_whole_response(server: FakeProviderServer) -> None:
    server.queue(FakeReply(tool_calls=[FakeToolCall("echo", {"text": "hi"})]))
    reply = await ask(registry(server, stream=False))
    assert not server.requests[-1].body.get("stream")
    assert reply.stop_reason == "toolUse"
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [("echo", {"text": "hi"})]


async def test_streaming_is_the_default(server: FakeProviderServer) -> None:
    server.queue_text("ok")
    await ask(registry(server))
    assert server.requests[-1].body["stream"] is True


# --- stream parsing ----------------------------------------------------------------------


async def test_a_name_repeated_in_every_chunk_is_not_concatenated(server: FakeProviderServer) -> None:
    server.queue(
        FakeReply(
            tool_calls=[FakeToolCall("echo", {"text": "a fairly long argument"})], repeat_tool_name=True
        )
    )
    reply = await ask(registry(server))
    assert [(c.name, c.arguments, c.raw_arguments) for c in reply.tool_calls] == [
        ("echo", {"text": "a fairly long argument"}, None)
    ]


@pytest.mark.parametrize("stream", [True, False])
async def test_arguments_that_are_not_json_are_kept_raw(server: FakeProviderServer, stream: bool) -> None:
    server.queue(FakeReply(tool_calls=[FakeToolCall("echo", {}, raw_arguments='{"text": "/etc"')]))
    reply = await ask(registry(server, stream=stream))
    [call] = reply.tool_calls
    assert call.name == "echo"
    assert call.arguments == {}
    assert call.raw_arguments == '{"text": "/etc"'


async def test_bad_arguments_reach_the_model_as_a_tool_error_quoting_them(
    server: FakeProviderServer, tmp_path: Path
) -> None:
    server.queue(FakeReply(tool_calls=[FakeToolCall("echo", {}, raw_arguments="[text: /etc]")]))
    server.queue_text("sorry")
    reg = registry(server)
    model = reg.create_model(reg.resolve("local/small"))
    agent, _ = Harness(tmp_path).agent(model, tools=[EchoTool()])
    await wait(agent.prompt("echo /etc"))
    results = [m for m in agent.messages if isinstance(m, ToolResultMessage)]
    assert len(results) == 1 and results[0].is_error
    assert "not a valid JSON object" in results[0].text and "[text: /etc]" in results[0].text
    # The model is told, on the next request, what it sent.
    tool_message = next(m for m in server.requests[-1].body["messages"] if m["role"] == "tool")
    assert "[text: /etc]" in tool_message["content"]
    # The raw text is kept in the session file.
    path = agent.session.path
    assert path is not None
    reopened = SessionManager.open(path, read_only=True)
    calls = [
        block
        for m in reopened.build_context().messages
        if isinstance(m, AssistantMessage)
        for block in m.content
        if isinstance(block, ToolCall)
    ]
    assert [c.raw_arguments for c in calls] == ["[text: /etc]"]
    assert "rawArguments" in path.read_text()
    await model.aclose()  # type: ignore[attr-defined]


async def test_a_reply_cut_at_the_cap_ends_with_length(server: FakeProviderServer) -> None:
    server.queue(FakeReply(text="a long answer", stop="length"))
    reply = await ask(registry(server))
    assert reply.stop_reason == "length"
    assert reply.text == "a long answer"


async def test_a_reply_without_usage_reports_zero_usage(server: FakeProviderServer) -> None:
    server.queue(FakeReply(text="ok", no_usage=True))
    reply = await ask(registry(server))
    assert reply.stop_reason == "stop"
    assert reply.usage.total_tokens == 0
    assert json.dumps(server.requests[-1].body["stream_options"]) == '{"include_usage": true}'


async def test_tool_choice_forces_the_named_tool(server: FakeProviderServer) -> None:
    server.queue(FakeReply(tool_calls=[FakeToolCall("echo", {"text": "hi"})]))
    reg = registry(server)
    model = reg.create_model(reg.resolve("local/small"))
    context = LlmContext("be brief", [UserMessage(content="hi")], [ECHO_SCHEMA])
    await collect(model, context, StreamOptions(tool_choice="echo"))
    await model.aclose()  # type: ignore[attr-defined]
    assert server.requests[-1].body["tool_choice"] == {"type": "function", "function": {"name": "echo"}}


async def test_history_is_sent_in_the_plainest_shapes(server: FakeProviderServer) -> None:
    """Text-only user content as one string; a tool-only reply with `content: ""`, not null."""
    server.queue_text("done")
    reg = registry(server)
    model = reg.create_model(reg.resolve("local/small"))
    call = ToolCall(id="call_1", name="echo", arguments={"text": "hi"})
    history = [
        UserMessage(content=[TextContent(text="echo hi")]),
        AssistantMessage(content=[call], provider="local", model="small", stop_reason="toolUse"),
        ToolResultMessage(tool_call_id="call_1", tool_name="echo", content=[TextContent(text="hi")]),
    ]
    await collect(model, LlmContext("be brief", history, [ECHO_SCHEMA]))
    await model.aclose()  # type: ignore[attr-defined]
    messages = server.requests[-1].body["messages"]
    assert messages[1] == {"role": "user", "content": "echo hi"}
    assert messages[2]["role"] == "assistant" and messages[2]["content"] == ""
    assert messages[2]["tool_calls"][0]["function"]["name"] == "echo"


async def test_a_404_on_responses_names_the_url_and_the_api_setting(server: FakeProviderServer) -> None:
    server.queue_error(404, "Not Found")
    reply = await ask(registry(server, api="openai-responses"))
    assert reply.stop_reason == "error"
    message = reply.error_message or ""
    assert message.startswith("404")
    assert f"{server.base_url}/responses does not exist" in message
    assert 'set api = "openai-chat" under [providers.local]' in message


async def test_a_404_on_chat_completions_points_at_base_url(server: FakeProviderServer) -> None:
    server.queue_error(404, "Not Found")
    reply = await ask(registry(server))
    message = reply.error_message or ""
    assert f"{server.base_url}/chat/completions does not exist" in message
    assert "check base_url under [providers.local]" in message
