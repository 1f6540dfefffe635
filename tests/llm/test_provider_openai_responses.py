"""The OpenAI Responses API (`openai-responses`) over HTTP against the fake server."""

from __future__ import annotations

import json
from typing import Any, ClassVar

from corral.llm import ApiKind, ThinkingContent, ThinkingLevel, ToolDefinition

from ._provider_contract import ProviderContract, server

__all__ = ["server"]


class TestOpenAIResponses(ProviderContract):
    API: ClassVar[ApiKind] = "openai-responses"
    PATH = "/v1/responses"
    FAIL_AFTER = 6
    PI_API = "openai-responses"
    MODEL_ID = "gpt-5-mini"
    SAME_SIGNATURE = json.dumps(
        {"type": "reasoning", "id": "rs_9", "summary": [], "encrypted_content": "enc-9"}
    )

    def assert_tool_offered(self, body: Any, tool: ToolDefinition) -> None:
        assert body["tools"] == [
            {
                "type": "function",
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.parameters,
                "strict": False,
            }
        ]

    def max_tokens_sent(self, body: Any) -> int:
        return int(body["max_output_tokens"])

    def assert_thinking_signature(self, block: ThinkingContent) -> None:
        assert block.thinking_signature is not None
        item = json.loads(block.thinking_signature)
        assert item["type"] == "reasoning"
        assert item["id"].startswith("rs_")
        assert item["encrypted_content"] == "sig-123"

    def assert_thinking_sent(self, body: Any, level: ThinkingLevel) -> None:
        if level == "off":
            assert "reasoning" not in body
        else:
            assert body["reasoning"] == {"effort": level, "summary": "auto"}

    def assert_conversation_sent(self, body: Any) -> None:
        items = body["input"]
        assert items[0] == {"role": "system", "content": "You are terse."}
        assert items[1]["role"] == "user"
        assert [part["type"] for part in items[1]["content"]] == ["input_text", "input_image"]
        assert items[1]["content"][1]["image_url"].startswith("data:image/png;base64,")
        assert items[2] == {
            "type": "reasoning",
            "id": "rs_9",
            "summary": [{"type": "summary_text", "text": "I should read the file."}],
            "encrypted_content": "enc-9",
        }
        assert items[3] == {"role": "assistant", "content": "Let me look."}
        assert items[4] == {
            "type": "function_call",
            "call_id": "call_1",
            "name": "read",
            "arguments": json.dumps({"path": "a.png"}, separators=(",", ":")),
        }
        assert items[5]["type"] == "function_call_output" and items[5]["call_id"] == "call_1"
        assert [part["type"] for part in items[5]["output"]] == ["input_text", "input_image"]
        assert items[6] == {"role": "user", "content": "And now?"}
        assert len(items) == 7

    async def test_xhigh_is_sent_only_when_supported(self, server: Any) -> None:
        from corral.llm import LlmContext, StreamOptions

        from ._provider_contract import collect, user

        server.queue_text("ok")
        server.queue_text("ok")
        await collect(self.model(server), LlmContext("", [user("hi")]), StreamOptions(thinking="xhigh"))
        await collect(
            self.model(server, supports_xhigh=True),
            LlmContext("", [user("hi")]),
            StreamOptions(thinking="xhigh"),
        )
        assert [r.body["reasoning"]["effort"] for r in server.requests] == ["high", "xhigh"]
