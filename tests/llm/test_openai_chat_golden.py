"""Chat Completions on the wire, pinned: the request bytes and the events of recorded replies.

`golden/openai_chat.json` holds, for a set of contexts, the exact request body (its bytes) and
the headers that matter that corral sends to a Chat Completions server, and, for a set of
replies the fake server streams (or sends whole), the events corral makes of them. They were
recorded from the pydantic-ai path corral used before it had its own Chat Completions client
(`corral.llm._providers._chat`), so the client sends what pydantic-ai sent and reads replies
as it did. `CORRAL_UPDATE_GOLDEN=1` rewrites the file from what the code does now (review the
diff: a change there is a change on the wire).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from corral.llm import (
    AgentMessage,
    AssistantMessage,
    ImageContent,
    LlmContext,
    StreamOptions,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolDefinition,
    ToolResultMessage,
    UserMessage,
)
from corral.llm._providers import create_provider_model

from ._golden import HEADERS, check_golden, event_record
from ._provider_contract import PNG_1PX, READ_TOOL, collect, make_info, server
from .fake_server import FakeProviderServer, FakeReply, FakeToolCall, FakeUsage

__all__ = ["server"]

GOLDEN = Path(__file__).with_name("golden") / "openai_chat.json"
MODEL_ID = "fake-model-1"


def _check(section: str, name: str, got: Any) -> None:
    check_golden(GOLDEN, section, name, got)


def reply(*content: Any, provider: str = "fake", stop: str = "toolUse", **fields: Any) -> AssistantMessage:
    return AssistantMessage(
        content=list(content),
        api="openai-completions",
        provider=provider,
        model=MODEL_ID,
        stop_reason=stop,  # type: ignore[arg-type]
        **fields,
    )


def _conversation(provider: str) -> list[AgentMessage]:
    return [
        UserMessage(
            content=[
                TextContent(text="What is in this picture?"),
                ImageContent(data=PNG_1PX, mime_type="image/png"),
            ]
        ),
        reply(
            ThinkingContent(thinking="I should read the file.", thinking_signature="reasoning_content"),
            TextContent(text="Let me look."),
            ToolCall(id="call_1", name="read", arguments={"path": "a.png"}),
            provider=provider,
        ),
        ToolResultMessage(
            tool_call_id="call_1",
            tool_name="read",
            content=[
                TextContent(text="Read image file [image/png]"),
                ImageContent(data=PNG_1PX, mime_type="image/png"),
            ],
        ),
        reply(TextContent(text="partial"), provider=provider, stop="error", error_message="503 overloaded"),
        UserMessage(content="And now?"),
    ]


def _tools_turns(provider: str) -> list[AgentMessage]:
    return [
        UserMessage(content="go"),
        reply(
            ThinkingContent(thinking="first a", thinking_signature="reasoning_content"),
            ThinkingContent(thinking="then b", thinking_signature="reasoning_content"),
            ToolCall(id="c1", name="read", arguments={"path": "a"}),
            ToolCall(id="c2", name="read", arguments={"path": "b", "limit": 3}),
            provider=provider,
        ),
        ToolResultMessage(tool_call_id="c1", tool_name="read", content=[TextContent(text="A")]),
        ToolResultMessage(
            tool_call_id="c2", tool_name="read", content=[TextContent(text="no such file")], is_error=True
        ),
        reply(ToolCall(id="c3", name="read", arguments={"path": "c"}), provider=provider),
        ToolResultMessage(tool_call_id="c3", tool_name="read", content=[TextContent(text="C")]),
        reply(TextContent(text="done"), provider=provider, stop="stop"),
        UserMessage(content=[TextContent(text="line one"), TextContent(text="line two")]),
    ]


@dataclass
class RequestCase:
    context: LlmContext
    options: StreamOptions = field(default_factory=StreamOptions)
    info: dict[str, Any] = field(default_factory=dict)
    api_key: str | None = "sk-test-key"
    headers: dict[str, str] | None = None
    streaming: bool = True


def _hi(system: str = "") -> LlmContext:
    return LlmContext(system, [UserMessage(content="hi")])


def builtin_tools() -> list[ToolDefinition]:
    from corral.agent.tools import ALL_TOOL_NAMES, create_builtin_tools

    return [tool.definition() for tool in create_builtin_tools(Path("/tmp"), names=ALL_TOOL_NAMES)]


NESTED_TOOL = ToolDefinition(
    name="plan",
    description="",
    parameters={
        "type": "object",
        "title": "Plan",
        "$defs": {"Step": {"type": "object", "properties": {"text": {"type": "string"}}, "title": "Step"}},
        "properties": {
            "steps": {"type": "array", "items": {"$ref": "#/$defs/Step"}},
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None, "title": "Note"},
            "mode": {"enum": ["a", "b"], "type": "string", "description": "Mode"},
        },
        "required": ["steps"],
        "additionalProperties": False,
    },
)


REQUESTS: dict[str, Callable[[], RequestCase]] = {
    "builtin_tools": lambda: RequestCase(LlmContext("", [UserMessage(content="hi")], builtin_tools())),
    "nested_schema_tool": lambda: RequestCase(LlmContext("", [UserMessage(content="hi")], [NESTED_TOOL])),
    "image_only_prompt_and_image_only_result": lambda: RequestCase(
        LlmContext(
            "",
            [
                UserMessage(content=[ImageContent(data=PNG_1PX, mime_type="image/png")]),
                reply(ToolCall(id="c1", name="read", arguments={"path": "x.png"}), TextContent(text="t")),
                ToolResultMessage(
                    tool_call_id="c1",
                    tool_name="read",
                    content=[ImageContent(data=PNG_1PX, mime_type="image/png")],
                ),
                ToolResultMessage(tool_call_id="c0", tool_name="ls", content=[], is_error=True),
            ],
            [READ_TOOL],
        )
    ),
    "plain": lambda: RequestCase(_hi()),
    "system_prompt": lambda: RequestCase(_hi("You are terse.")),
    "empty_context": lambda: RequestCase(LlmContext("", [])),
    "system_only": lambda: RequestCase(LlmContext("Just the system.", [])),
    "conversation_compatible": lambda: RequestCase(
        LlmContext("You are terse.", _conversation("fake"), [READ_TOOL]), StreamOptions(thinking="medium")
    ),
    "conversation_openai": lambda: RequestCase(
        LlmContext("You are terse.", _conversation("openai"), [READ_TOOL]),
        StreamOptions(thinking="high"),
        info={"provider": "openai"},
    ),
    "tool_turns_compatible": lambda: RequestCase(LlmContext("sys", _tools_turns("fake"), [READ_TOOL])),
    "tool_turns_openai": lambda: RequestCase(
        LlmContext("sys", _tools_turns("openai"), [READ_TOOL]), info={"provider": "openai"}
    ),
    "reasoning_field_round_trip": lambda: RequestCase(
        LlmContext(
            "",
            [
                UserMessage(content="q"),
                reply(
                    ThinkingContent(thinking="via reasoning", thinking_signature="reasoning"),
                    TextContent(text="answer"),
                    stop="stop",
                ),
                reply(ThinkingContent(thinking="unsigned"), TextContent(text="second"), stop="stop"),
                UserMessage(content="more"),
            ],
        )
    ),
    "foreign_thinking_and_lost_call": lambda: RequestCase(
        LlmContext(
            "",
            [
                UserMessage(content="hi"),
                AssistantMessage(
                    content=[
                        ThinkingContent(thinking="foreign thoughts", thinking_signature="other-sig"),
                        ThinkingContent(thinking="  ", thinking_signature="x"),
                        ThinkingContent(thinking="hidden", redacted=True),
                        TextContent(text="hello"),
                    ],
                    api="some-other-api",
                    provider="elsewhere",
                    model="x",
                ),
                reply(ToolCall(id="call_lost", name="read", arguments={"path": "a"})),
                UserMessage(content="never mind"),
            ],
            [READ_TOOL],
        )
    ),
    "pending_tool_call_at_end": lambda: RequestCase(
        LlmContext(
            "", [UserMessage(content="hi"), reply(ToolCall(id="c9", name="read", arguments={}))], [READ_TOOL]
        )
    ),
    "surrogates": lambda: RequestCase(
        LlmContext(
            "sys \ud800x",
            [
                UserMessage(content="bad \udc00 text"),
                reply(ToolCall(id="c1", name="read", arguments={"path": "p\ud800"})),
                ToolResultMessage(tool_call_id="c1", tool_name="read", content=[TextContent(text="r\udfff")]),
            ],
            [READ_TOOL],
        )
    ),
    "unicode": lambda: RequestCase(LlmContext("Système ✓", [UserMessage(content='日本語 "quoted" \\ 🎉')])),
    "max_tokens_field_max_tokens": lambda: RequestCase(_hi(), info={"max_tokens_field": "max_tokens"}),
    "max_tokens_field_completion": lambda: RequestCase(
        _hi(), info={"max_tokens_field": "max_completion_tokens"}
    ),
    "max_tokens_field_both": lambda: RequestCase(
        _hi(), info={"max_tokens_field": "both", "max_tokens": 100_000}
    ),
    "max_tokens_option": lambda: RequestCase(_hi(), StreamOptions(max_tokens=77)),
    "thinking_xhigh_clamped": lambda: RequestCase(_hi(), StreamOptions(thinking="xhigh")),
    "thinking_xhigh_supported": lambda: RequestCase(
        _hi(), StreamOptions(thinking="xhigh"), info={"supports_xhigh": True}
    ),
    "thinking_minimal_openai": lambda: RequestCase(
        _hi(), StreamOptions(thinking="minimal", session_id="s-1"), info={"provider": "openai"}
    ),
    "tool_choice": lambda: RequestCase(
        LlmContext("", [UserMessage(content="hi")], [READ_TOOL]), StreamOptions(tool_choice="read")
    ),
    "tool_choice_both_cap": lambda: RequestCase(
        LlmContext("", [UserMessage(content="hi")], [READ_TOOL]),
        StreamOptions(tool_choice="read"),
        info={"max_tokens_field": "both"},
    ),
    "headers_and_no_key": lambda: RequestCase(
        _hi(), api_key=None, headers={"X-Team": "corral", "X-Trace": "abc"}
    ),
    "not_streamed": lambda: RequestCase(
        LlmContext("s", [UserMessage(content="hi")], [READ_TOOL]),
        StreamOptions(thinking="low"),
        streaming=False,
    ),
}


@pytest.mark.parametrize("name", sorted(REQUESTS))
async def test_request_bytes(server: FakeProviderServer, name: str) -> None:
    case = REQUESTS[name]()
    server.queue_text("ok")
    model = create_provider_model(
        make_info("openai-chat", id=MODEL_ID, **case.info),
        api_key=case.api_key,
        base_url=server.base_url,
        headers=case.headers,
        streaming=case.streaming,
    )
    try:
        await collect(model, case.context, case.options)
    finally:
        await model.aclose()  # type: ignore[attr-defined]
    request = server.requests[0]
    headers = {name: request.headers[name] for name in HEADERS if name in request.headers}
    _check(
        "requests",
        name,
        {"path": request.path, "headers": headers, "body": request.raw.decode()},
    )


@dataclass
class ReplyCase:
    reply: FakeReply
    streaming: bool = True
    thinking: bool = False


REPLIES: dict[str, Callable[[], ReplyCase]] = {
    "text": lambda: ReplyCase(FakeReply(text=["Hel", "lo", " world"])),
    "empty_text": lambda: ReplyCase(FakeReply(text="")),
    "reasoning_then_text": lambda: ReplyCase(
        FakeReply(text="answer", thinking=["let me ", "think"], usage=FakeUsage(output=9, reasoning=4)),
        thinking=True,
    ),
    "think_tags_in_text": lambda: ReplyCase(FakeReply(text=["<think>", "hmm", "</think>", "Answer"])),
    "tool_calls": lambda: ReplyCase(
        FakeReply(
            text="Reading.",
            tool_calls=[
                FakeToolCall("read", {"path": "src/app.py", "limit": 20}, "call_abc"),
                FakeToolCall("read", {"path": "b"}, "call_def"),
            ],
        )
    ),
    "tool_call_only": lambda: ReplyCase(
        FakeReply(tool_calls=[FakeToolCall("read", {"path": "x"}, "call_1")])
    ),
    "tool_call_repeated_name": lambda: ReplyCase(
        FakeReply(tool_calls=[FakeToolCall("ls", {"path": "."}, "call_r")], repeat_tool_name=True)
    ),
    "tool_call_bad_arguments": lambda: ReplyCase(
        FakeReply(tool_calls=[FakeToolCall("read", {}, "call_bad", raw_arguments='{"path": "unterminated')])
    ),
    "tool_call_array_arguments": lambda: ReplyCase(
        FakeReply(tool_calls=[FakeToolCall("read", {}, "call_arr", raw_arguments="[1, 2]")])
    ),
    "length": lambda: ReplyCase(FakeReply(text="cut off", stop="length")),
    "no_usage": lambda: ReplyCase(FakeReply(text="ok", no_usage=True)),
    "cached_usage": lambda: ReplyCase(
        FakeReply(text="ok", usage=FakeUsage(input=1000, output=200, cache_read=3000, reasoning=50))
    ),
    "error_429": lambda: ReplyCase(FakeReply(status=429, error_message="Rate limit reached for requests")),
    "error_503": lambda: ReplyCase(
        FakeReply(status=503, error_message="Service unavailable, the server is overloaded")
    ),
    "error_400": lambda: ReplyCase(
        FakeReply(
            status=400, error_message="prompt is too long: 210000 tokens > 200000 maximum context length"
        )
    ),
    "error_404": lambda: ReplyCase(FakeReply(status=404, error_message="no route")),
    "error_500_plain_body": lambda: ReplyCase(FakeReply(status=500, error_body="upstream exploded")),
    "error_401_code_only": lambda: ReplyCase(
        FakeReply(status=401, error_body={"error": {"message": "bad key", "code": "invalid_api_key"}})
    ),
    "error_in_stream": lambda: ReplyCase(
        FakeReply(text=["one ", "two ", "three"], fail_after=3, error_message="Overloaded")
    ),
    "plain_text_and_call": lambda: ReplyCase(
        FakeReply(
            text="plain answer",
            tool_calls=[FakeToolCall("read", {"path": "x"}, "call_p1")],
            usage=FakeUsage(input=7, output=3),
        ),
        streaming=False,
    ),
    "plain_reasoning": lambda: ReplyCase(
        FakeReply(text="plain", thinking="why"), streaming=False, thinking=True
    ),
    "plain_length_no_usage": lambda: ReplyCase(
        FakeReply(text="cut", stop="length", no_usage=True), streaming=False
    ),
    "plain_error_400": lambda: ReplyCase(FakeReply(status=400, error_message="bad request"), streaming=False),
}


@pytest.mark.parametrize("name", sorted(REPLIES))
async def test_reply_events(server: FakeProviderServer, name: str) -> None:
    case = REPLIES[name]()
    server.queue(case.reply)
    model = create_provider_model(
        make_info("openai-chat", id=MODEL_ID),
        api_key="sk-test-key",
        base_url=server.base_url,
        streaming=case.streaming,
    )
    options = StreamOptions(thinking="medium" if case.thinking else "off")
    try:
        events = await collect(model, LlmContext("", [UserMessage(content="hi")], [READ_TOOL]), options)
    finally:
        await model.aclose()  # type: ignore[attr-defined]
    records = [event_record(event) for event in events]
    text = json.dumps(records).replace(server.base_url, "<base_url>")
    _check("replies", name, json.loads(text))


async def test_unreachable_endpoint_event() -> None:
    with FakeProviderServer() as gone:
        url = gone.base_url
    model = create_provider_model(make_info("openai-chat", id=MODEL_ID), api_key="k", base_url=url)
    events = await collect(model, LlmContext("", [UserMessage(content="hi")]))
    records = json.loads(json.dumps([event_record(event) for event in events]).replace(url, "<base_url>"))
    _check("replies", "unreachable", records)


def _schemas() -> dict[str, dict[str, Any]]:
    """corral's own tool schemas (built-in tools, the agent surface, the teams tools) and a few
    pydantic-generated ones (optional fields, nested models, a tagged union, a recursive model)."""
    from typing import Literal

    from pydantic import BaseModel, Field, TypeAdapter

    from corral.orchestration.surfaces import (
        ACTIONS,
        agent_tool_schema,
        ask_owner_schema,
        operation_tool_schema,
    )

    class Step(BaseModel):
        text: str
        done: bool = False

    class Cat(BaseModel):
        kind: Literal["cat"]
        lives: int = 9

    class Dog(BaseModel):
        kind: Literal["dog"]
        tricks: list[str] = []

    class Plan(BaseModel):
        title: str
        steps: list[Step]
        note: str | None = None
        pet: Cat | Dog = Field(discriminator="kind")
        extra: dict[str, int] = {}

    class Tree(BaseModel):
        name: str
        children: list[Tree] = []

    schemas = {f"builtin.{tool.name}": dict(tool.parameters) for tool in builtin_tools()}
    schemas["agent"] = agent_tool_schema()
    schemas["ask_owner"] = ask_owner_schema()
    schemas.update({f"operation.{action}": operation_tool_schema(action) for action in ACTIONS})
    teams = json.loads(
        (
            Path(__file__).parents[1] / "orchestration/surfaces/snapshots/teams_schemas_structure.json"
        ).read_text()
    )
    schemas.update({f"teams.{name}": schema for name, schema in teams.items()})
    schemas["nested"] = NESTED_TOOL.parameters
    schemas["pydantic.plan"] = TypeAdapter(Plan).json_schema()
    schemas["pydantic.tree"] = TypeAdapter(Tree).json_schema()
    schemas["pydantic.optional_list"] = TypeAdapter(list[Step] | None).json_schema()
    return schemas


SCHEMAS = _schemas()


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_tool_schemas_go_out_as_pydantic_ais_openai_transformer_left_them(name: str) -> None:
    from pydantic_ai.profiles.openai import OpenAIJsonSchemaTransformer

    from corral.llm._providers._chat_request import request_body

    schema = SCHEMAS[name]
    expected = OpenAIJsonSchemaTransformer(json.loads(json.dumps(schema)), strict=False).walk()
    body = request_body(
        make_info("openai-chat"),
        [],
        [ToolDefinition(name="t", description="d", parameters=schema)],
        StreamOptions(),
        stream=True,
    )
    sent = body["tools"][0]["function"]["parameters"]
    assert json.dumps(sent) == json.dumps(expected)  # same keys, same order
