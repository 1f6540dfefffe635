"""The Anthropic Messages API (`anthropic`) over HTTP against the fake server."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from corral.llm import ApiKind, LlmContext, StreamOptions, ThinkingContent, ThinkingLevel, ToolDefinition

from ._provider_contract import ProviderContract, collect, final, server, user
from .fake_server import FakeProviderServer

__all__ = ["server"]

BUDGETS = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384}


class TestAnthropic(ProviderContract):
    API: ClassVar[ApiKind] = "anthropic"
    PATH = "/v1/messages"
    FAIL_AFTER = 4
    PI_API = "anthropic-messages"
    MODEL_ID = "claude-test-model"
    SAME_SIGNATURE = "sig-9"
    CACHE_WRITE = 400

    def assert_tool_offered(self, body: Any, tool: ToolDefinition) -> None:
        assert body["tools"] == [
            {"name": tool.name, "description": tool.description, "input_schema": tool.parameters}
        ]

    def max_tokens_sent(self, body: Any) -> int:
        return int(body["max_tokens"])

    def assert_thinking_signature(self, block: ThinkingContent) -> None:
        assert block.thinking_signature == "sig-123"

    def assert_thinking_sent(self, body: Any, level: ThinkingLevel) -> None:
        if level == "off":
            assert "thinking" not in body
            assert body["max_tokens"] == 16_384
        else:
            # max_tokens is raised by the budget, capped at the model's limit (16384 here); a budget
            # that would fill the cap leaves 1024 tokens of output room.
            budget = BUDGETS[level] if BUDGETS[level] < 16_384 else 16_384 - 1024
            assert body["thinking"] == {"type": "enabled", "budget_tokens": budget}
            assert body["max_tokens"] == 16_384

    def assert_conversation_sent(self, body: Any) -> None:
        assert body["system"] == "You are terse."
        messages = body["messages"]
        assert [m["role"] for m in messages] == ["user", "assistant", "user"]
        assert messages[0]["content"][1] == {
            "type": "image",
            "source": {
                "type": "base64",
                "media_type": "image/png",
                "data": messages[0]["content"][1]["source"]["data"],
            },
        }
        assert messages[1]["content"] == [
            {"type": "thinking", "thinking": "I should read the file.", "signature": "sig-9"},
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "call_1", "name": "read", "input": {"path": "a.png"}},
        ]
        result, follow_up = messages[2]["content"]
        assert result["type"] == "tool_result" and result["tool_use_id"] == "call_1"
        assert result["is_error"] is False
        assert [part["type"] for part in result["content"]] == ["text", "image"]
        assert follow_up == {"type": "text", "text": "And now?"}

    def assert_api_key_sent(self, headers: dict[str, str], key: str) -> None:
        # anthropic 2.x sends the API key as a bearer token, with its version header.
        assert headers.get("authorization") == f"Bearer {key}"
        assert "anthropic-version" in headers

    async def test_thinking_budget_raises_max_tokens_within_the_model_cap(
        self, server: FakeProviderServer
    ) -> None:
        server.queue_text("ok")
        server.queue_text("ok")
        await collect(
            self.model(server, max_tokens=64_000),
            LlmContext("", [user("hi")]),
            StreamOptions(thinking="high"),
        )
        await collect(
            self.model(server, max_tokens=4_000), LlmContext("", [user("hi")]), StreamOptions(thinking="high")
        )
        first, second = (r.body for r in server.requests)
        assert first["max_tokens"] == 32_000 + 16_384
        assert first["thinking"] == {"type": "enabled", "budget_tokens": 16_384}
        # The cap squeezes the budget so some output room remains.
        assert second["max_tokens"] == 4_000
        assert second["thinking"] == {"type": "enabled", "budget_tokens": 4_000 - 1024}

    async def test_adaptive_models_get_adaptive_thinking(self, server: FakeProviderServer) -> None:
        server.queue_text("ok")
        await collect(
            self.model(server, id="claude-opus-4-6"),
            LlmContext("", [user("hi")]),
            StreamOptions(thinking="medium"),
        )
        body = server.requests[0].body
        # pydantic-ai ≥ 2.78 also asks for summarised thinking (newer models omit it by default).
        assert body["thinking"]["type"] == "adaptive"
        assert body["thinking"].get("display", "summarized") == "summarized"
        assert set(body["thinking"]) <= {"type", "display"}
        assert body["output_config"]["effort"] == "medium"

    async def test_overloaded_529_keeps_status_and_message(self, server: FakeProviderServer) -> None:
        server.queue_error(529, "Overloaded")
        events = await collect(self.model(server), LlmContext("", [user("hi")]))
        message = events[-1].error.error_message  # type: ignore[union-attr]
        assert message is not None and message.startswith("529 Overloaded")
        assert "overloaded_error" in message


async def test_a_catalogued_model_is_priced_by_genai_prices_with_its_long_context_tier(
    server: FakeProviderServer,
) -> None:
    # Claude Sonnet 4.5 bills a request whose input passes 200k tokens at $6/$22.50 per million
    # (not $3/$15): the hand-entered table said $1.05 here.
    from .fake_server import FakeUsage

    server.queue_text("long", usage=FakeUsage(input=300_000, output=10_000))
    server.queue_text("short", usage=FakeUsage(input=100_000, output=10_000))
    model = TestAnthropic().model(server, provider="anthropic", id="claude-sonnet-4-5")
    long, short = [final(await collect(model, LlmContext("", [user("hi")]))).usage.cost for _ in range(2)]
    assert long.input == pytest.approx(1.8) and long.output == pytest.approx(0.225)
    assert long.total == pytest.approx(2.025)
    assert short.total == pytest.approx(0.3 + 0.15)
