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


class TestOpenAIResponsesOwnClient(TestOpenAIResponses):
    """The same contract for corral's own Responses client (a model outside OpenAI's reasoning
    families: a local or compatible server's), whose same-model thinking goes back as `<think>` text."""

    MODEL_ID = "fake-model-1"

    def model(self, server: Any, *, streaming: bool = True, **info: Any) -> Any:
        from corral.llm._providers import ResponsesModel

        model = super().model(server, streaming=streaming, **info)
        assert isinstance(model, ResponsesModel)
        return model

    def assert_conversation_sent(self, body: Any) -> None:
        items = body["input"]
        assert items[0] == {"role": "system", "content": "You are terse."}
        assert [part["type"] for part in items[1]["content"]] == ["input_text", "input_image"]
        assert items[2] == {"role": "assistant", "content": "<think>\nI should read the file.\n</think>"}
        assert items[3] == {"role": "assistant", "content": "Let me look."}
        assert items[4] == {
            "name": "read",
            "arguments": json.dumps({"path": "a.png"}, separators=(",", ":")),
            "call_id": "call_1",
            "type": "function_call",
        }
        assert items[5]["type"] == "function_call_output" and items[5]["call_id"] == "call_1"
        assert [part["type"] for part in items[5]["output"]] == ["input_text", "input_image"]
        assert items[6] == {"role": "user", "content": "And now?"}
        assert len(items) == 7


def test_openai_reasoning_models_keep_pydantic_ais_client_and_others_get_corrals() -> None:
    from corral.llm._providers import ResponsesModel, create_provider_model
    from corral.llm._providers._adapter import PydanticAIModel

    from ._provider_contract import make_info

    def made(model_id: str) -> object:
        return create_provider_model(
            make_info("openai-responses", id=model_id), api_key="k", base_url="http://127.0.0.1:9/v1"
        )

    for model_id in ("fake-model-1", "gpt-4.1", "gpt-5-chat-latest", "qwen3-coder", "gpt-oss-20b"):
        assert isinstance(made(model_id), ResponsesModel), model_id
    for model_id in ("gpt-5-mini", "gpt-5.6-terra", "o3", "gpt-6.1-sol"):
        assert isinstance(made(model_id), PydanticAIModel), model_id


def test_the_reasoning_prefixes_are_pydantic_ais() -> None:
    """corral's copy of the model-id prefixes pydantic-ai's OpenAI profile table names, in its order,
    and which of them do not reason: a new pydantic-ai family must be looked at before it is served."""
    from pydantic_ai.profiles import openai as profiles

    from corral.llm._openai_reasoning import REASONING_MODEL_PREFIXES, serves_model

    table = profiles._REASONING_SUPPORT_BY_PREFIX
    assert tuple(table) == REASONING_MODEL_PREFIXES
    for prefix, support in table.items():
        assert serves_model(prefix) is (not support.supported), prefix


async def test_an_agent_calls_a_tool_and_answers_through_corrals_client(server: Any, tmp_path: Any) -> None:
    """A whole agent turn against the fake Responses server: the model calls `echo`, the agent runs
    it, and the next request carries the call and its output as `function_call` items."""
    from corral.agent import AgentSession
    from corral.llm._providers import ResponsesModel, create_provider_model
    from corral.session import SessionManager
    from tests.agent.helpers import EchoTool

    from ._provider_contract import make_info
    from .fake_server import FakeReply, FakeToolCall

    server.queue(FakeReply(text="Echoing.", tool_calls=[FakeToolCall("echo", {"text": "ping"}, "call_e1")]))
    server.queue_text("It said ping.")
    model = create_provider_model(make_info("openai-responses"), api_key="k", base_url=server.base_url)
    assert isinstance(model, ResponsesModel)
    session = SessionManager.create(tmp_path, persist=False)
    agent = AgentSession(session=session, model=model, thinking_level="off", tools=[EchoTool()], cwd=tmp_path)
    try:
        await agent.prompt("echo ping")
        await agent.wait_for_idle()
    finally:
        await model.aclose()
    assert agent.last_assistant_text() == "It said ping."
    first, second = (request.body for request in server.requests)
    assert [tool["name"] for tool in first["tools"]] == ["echo"]
    assert second["input"][-3:] == [
        {"role": "assistant", "content": "Echoing."},
        {"name": "echo", "arguments": '{"text":"ping"}', "call_id": "call_e1", "type": "function_call"},
        {"type": "function_call_output", "call_id": "call_e1", "output": "ping"},
    ]
