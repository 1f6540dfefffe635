"""OpenAI-compatible Chat Completions (`openai-chat`) over HTTP against the fake server."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any, ClassVar

from corral.llm import ApiKind, ThinkingContent, ThinkingLevel, ToolDefinition

from ._provider_contract import ProviderContract, server

__all__ = ["server"]


class TestOpenAIChat(ProviderContract):
    API: ClassVar[ApiKind] = "openai-chat"
    PATH = "/v1/chat/completions"
    FAIL_AFTER = 3
    PI_API = "openai-completions"
    SAME_SIGNATURE = "reasoning_content"

    def assert_tool_offered(self, body: Any, tool: ToolDefinition) -> None:
        assert body["tools"] == [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.parameters,
                },
            }
        ]

    def max_tokens_sent(self, body: Any) -> int:
        return int(body["max_tokens"])

    def assert_thinking_signature(self, block: ThinkingContent) -> None:
        # Like Pi: the signature of Chat Completions reasoning is the field it arrived in.
        assert block.thinking_signature == "reasoning_content"

    def assert_thinking_sent(self, body: Any, level: ThinkingLevel) -> None:
        assert body["stream_options"] == {"include_usage": True}
        if level == "off":
            assert "reasoning_effort" not in body
        else:
            assert body["reasoning_effort"] == level

    def assert_conversation_sent(self, body: Any) -> None:
        messages = body["messages"]
        assert messages[0] == {"role": "system", "content": "You are terse."}
        assert messages[1]["role"] == "user"
        assert [part["type"] for part in messages[1]["content"]] == ["text", "image_url"]
        assistant = messages[2]
        assert assistant["role"] == "assistant"
        assert "Let me look." in json.dumps(assistant["content"])
        # Reasoning goes back in its own field, never as <think> text in the content.
        assert assistant["reasoning_content"] == "I should read the file."
        assert "I should read the file." not in json.dumps(assistant["content"])
        assert assistant["tool_calls"] == [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "read", "arguments": '{"path":"a.png"}'},
            }
        ]
        assert messages[3]["role"] == "tool" and messages[3]["tool_call_id"] == "call_1"
        assert "Read image file [image/png]" in messages[3]["content"]
        # Chat Completions has no images in tool messages: the image follows in a user message.
        users = [m for m in messages[4:] if m["role"] == "user"]
        assert any(m["content"] == "And now?" for m in users)
        image_parts = [
            part
            for m in users
            if isinstance(m["content"], list)
            for part in m["content"]
            if part["type"] == "image_url"
        ]
        assert len(image_parts) == 1


def test_importing_corral_llm_does_not_import_pydantic_ai() -> None:
    code = (
        "import json, sys, corral.llm; "
        "print(json.dumps(sorted(m for m in sys.modules "
        "if m.split('.')[0] in ('pydantic_ai', 'openai', 'anthropic', 'httpx2', 'httpx'))))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert json.loads(result.stdout) == []


async def test_only_replies_that_reasoned_carry_the_reasoning_field(server: Any) -> None:
    """Like Pi: a later tool-calling turn without reasoning gets no empty `reasoning_content`."""
    from corral.llm import (
        AssistantMessage,
        LlmContext,
        TextContent,
        ToolCall,
        ToolResultMessage,
        UserMessage,
    )

    from ._provider_contract import READ_TOOL, collect

    def reply(*content: Any) -> AssistantMessage:
        return AssistantMessage(
            content=list(content),
            api="openai-completions",
            provider="fake",
            model=TestOpenAIChat.MODEL_ID,
            stop_reason="toolUse",
        )

    messages = [
        UserMessage(content="go"),
        reply(
            ThinkingContent(thinking="first a", thinking_signature="reasoning_content"),
            ToolCall(id="c1", name="read", arguments={"path": "a"}),
        ),
        ToolResultMessage(tool_call_id="c1", tool_name="read", content=[TextContent(text="A")]),
        reply(ToolCall(id="c2", name="read", arguments={"path": "b"})),
        ToolResultMessage(tool_call_id="c2", tool_name="read", content=[TextContent(text="B")]),
    ]
    server.queue_text("ok")
    await collect(TestOpenAIChat().model(server), LlmContext("", messages, [READ_TOOL]))
    replies = [m for m in server.requests[0].body["messages"] if m["role"] == "assistant"]
    assert replies[0]["reasoning_content"] == "first a"
    assert "reasoning_content" not in replies[1]
