"""The Responses API on the wire, pinned: the request bytes and the events of recorded replies.

`golden/openai_responses.json` holds, for a set of contexts, the exact request body (its bytes)
and the headers that matter that corral sends to a Responses server, and, for a set of replies
the fake server streams (or sends whole), the events corral makes of them. They were recorded
from the pydantic-ai path (`OpenAIResponsesModel` over the openai SDK) corral used before it had
its own Responses client (`corral.llm._providers._responses`), so the client sends what
pydantic-ai sent and reads replies as it did. `CORRAL_UPDATE_GOLDEN=1` rewrites the file from
what the code does now (review the diff: a change there is a change on the wire).

One entry differs from the recording on purpose: `dropped_stream`. The openai SDK reported a
stream cut mid-reply as a failure to connect, so the line said `cannot reach <url> (is the
server running? ...)`; corral's client says `Connection error.`, as its Chat Completions
client does, which the retry classifier treats the same (retryable).

The `reasoning_model_*` requests go to OpenAI reasoning models, which keep pydantic-ai's
client (`corral.llm._openai_reasoning`): they pin what that path sends (encrypted
reasoning asked for with `include`, reasoning items sent back with their ids).
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
    ToolResultMessage,
    UserMessage,
)
from corral.llm._providers import create_provider_model

from ._golden import HEADERS, check_golden, event_record
from ._provider_contract import PNG_1PX, READ_TOOL, collect, make_info, server
from .fake_server import FakeProviderServer, FakeReply, FakeToolCall, FakeUsage
from .test_openai_chat_golden import NESTED_TOOL, builtin_tools

__all__ = ["server"]

GOLDEN = Path(__file__).with_name("golden") / "openai_responses.json"
MODEL_ID = "fake-model-1"


def _check(section: str, name: str, got: Any) -> None:
    check_golden(GOLDEN, section, name, got)


def _signature(item_id: str | None, encrypted: str | None = None) -> str:
    item: dict[str, Any] = {"type": "reasoning", "id": item_id, "summary": []}
    if encrypted is not None:
        item["encrypted_content"] = encrypted
    return json.dumps(item, separators=(",", ":"))


def reply(
    *content: Any, provider: str = "fake", stop: str = "toolUse", model: str = MODEL_ID, **fields: Any
) -> AssistantMessage:
    return AssistantMessage(
        content=list(content),
        api="openai-responses",
        provider=provider,
        model=model,
        stop_reason=stop,  # type: ignore[arg-type]
        **fields,
    )


def _conversation(provider: str, model: str = MODEL_ID) -> list[AgentMessage]:
    return [
        UserMessage(
            content=[
                TextContent(text="What is in this picture?"),
                ImageContent(data=PNG_1PX, mime_type="image/png"),
            ]
        ),
        reply(
            ThinkingContent(
                thinking="I should read the file.", thinking_signature=_signature("rs_9", "enc-9")
            ),
            TextContent(text="Let me look."),
            ToolCall(id="call_1", name="read", arguments={"path": "a.png"}),
            provider=provider,
            model=model,
        ),
        ToolResultMessage(
            tool_call_id="call_1",
            tool_name="read",
            content=[
                TextContent(text="Read image file [image/png]"),
                ImageContent(data=PNG_1PX, mime_type="image/png"),
            ],
        ),
        reply(
            TextContent(text="partial"),
            provider=provider,
            model=model,
            stop="error",
            error_message="503 overloaded",
        ),
        UserMessage(content="And now?"),
    ]


def _tools_turns(provider: str, model: str = MODEL_ID) -> list[AgentMessage]:
    return [
        UserMessage(content="go"),
        reply(
            ThinkingContent(thinking="first a", thinking_signature=_signature("rs_1", "enc-1")),
            ThinkingContent(thinking="then b", thinking_signature=_signature("rs_2")),
            ToolCall(id="c1", name="read", arguments={"path": "a"}),
            ToolCall(id="c2", name="read", arguments={"path": "b", "limit": 3}),
            TextContent(text="reading both"),
            provider=provider,
            model=model,
        ),
        ToolResultMessage(tool_call_id="c1", tool_name="read", content=[TextContent(text="A")]),
        ToolResultMessage(
            tool_call_id="c2", tool_name="read", content=[TextContent(text="no such file")], is_error=True
        ),
        reply(ToolCall(id="c3", name="read", arguments={"path": "c"}), provider=provider, model=model),
        ToolResultMessage(tool_call_id="c3", tool_name="read", content=[TextContent(text="C")]),
        reply(
            TextContent(text="done"), TextContent(text="twice"), provider=provider, model=model, stop="stop"
        ),
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


REASONING_MODEL = "gpt-5-mini"
"""A model pydantic-ai's profile knows as an OpenAI reasoning model (encrypted reasoning, item ids)."""


def _round_trip(model: str) -> list[AgentMessage]:
    return [
        UserMessage(content="q"),
        reply(
            ThinkingContent(thinking="", thinking_signature=_signature("rs_e", "only-encrypted")),
            ThinkingContent(thinking="summary only", thinking_signature=_signature("rs_s")),
            ThinkingContent(thinking="more summary", thinking_signature=_signature("rs_s")),
            TextContent(text="answer"),
            stop="stop",
            model=model,
        ),
        reply(ThinkingContent(thinking="unsigned"), TextContent(text="second"), stop="stop", model=model),
        reply(
            ThinkingContent(thinking="not json", thinking_signature="opaque-sig"),
            TextContent(text="third"),
            stop="stop",
            model=model,
        ),
        reply(
            ThinkingContent(thinking="other model", thinking_signature=_signature("rs_o", "enc-o")),
            TextContent(text="fourth"),
            stop="stop",
            model="gpt-5",
        ),
        UserMessage(content="more"),
    ]


REQUESTS: dict[str, Callable[[], RequestCase]] = {
    "builtin_tools": lambda: RequestCase(LlmContext("", [UserMessage(content="hi")], builtin_tools())),
    "nested_schema_tool": lambda: RequestCase(LlmContext("", [UserMessage(content="hi")], [NESTED_TOOL])),
    "image_only_prompt_and_image_only_result": lambda: RequestCase(
        LlmContext(
            "",
            [
                UserMessage(content=[ImageContent(data=PNG_1PX, mime_type="image/jpeg")]),
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
        StreamOptions(thinking="high", session_id="sess-1"),
        info={"provider": "openai"},
    ),
    "tool_turns_compatible": lambda: RequestCase(LlmContext("sys", _tools_turns("fake"), [READ_TOOL])),
    "tool_turns_openai": lambda: RequestCase(
        LlmContext("sys", _tools_turns("openai"), [READ_TOOL]), info={"provider": "openai"}
    ),
    "reasoning_round_trip": lambda: RequestCase(
        LlmContext("", _round_trip(MODEL_ID)),
        StreamOptions(thinking="low"),
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
                        ToolCall(id="toolu_1", name="read", arguments={"path": "z"}),
                    ],
                    api="anthropic-messages",
                    provider="anthropic",
                    model="claude-x",
                    stop_reason="toolUse",
                ),
                ToolResultMessage(tool_call_id="toolu_1", tool_name="read", content=[TextContent(text="Z")]),
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
    "max_tokens_option": lambda: RequestCase(_hi(), StreamOptions(max_tokens=77)),
    "max_tokens_model_cap": lambda: RequestCase(_hi(), info={"max_tokens": 100_000}),
    "thinking_xhigh_clamped": lambda: RequestCase(_hi(), StreamOptions(thinking="xhigh")),
    "thinking_xhigh_supported": lambda: RequestCase(
        _hi(), StreamOptions(thinking="xhigh"), info={"supports_xhigh": True}
    ),
    "thinking_minimal_openai": lambda: RequestCase(
        _hi(), StreamOptions(thinking="minimal", session_id="s-1"), info={"provider": "openai"}
    ),
    "session_compatible": lambda: RequestCase(_hi(), StreamOptions(session_id="s-2")),
    "tool_choice": lambda: RequestCase(
        LlmContext("", [UserMessage(content="hi")], [READ_TOOL]), StreamOptions(tool_choice="read")
    ),
    "reasoning_model_conversation_openai": lambda: RequestCase(
        LlmContext("You are terse.", _conversation("openai", REASONING_MODEL), [READ_TOOL]),
        StreamOptions(thinking="high", session_id="sess-1"),
        info={"provider": "openai", "id": REASONING_MODEL},
    ),
    "reasoning_model_tool_turns": lambda: RequestCase(
        LlmContext("sys", _tools_turns("fake", REASONING_MODEL), [READ_TOOL]),
        StreamOptions(thinking="medium"),
        info={"id": REASONING_MODEL},
    ),
    "reasoning_model_round_trip": lambda: RequestCase(
        LlmContext("", _round_trip(REASONING_MODEL)),
        StreamOptions(thinking="low"),
        info={"provider": "openai", "id": REASONING_MODEL},
    ),
    "reasoning_model_thinking_off": lambda: RequestCase(_hi("sys"), info={"id": REASONING_MODEL}),
    "reasoning_model_minimal": lambda: RequestCase(
        _hi(), StreamOptions(thinking="minimal"), info={"id": REASONING_MODEL}
    ),
    "reasoning_model_not_streamed": lambda: RequestCase(
        LlmContext("", _round_trip(REASONING_MODEL), [READ_TOOL]),
        StreamOptions(thinking="high"),
        info={"id": REASONING_MODEL},
        streaming=False,
    ),
    "tool_choice_among_several": lambda: RequestCase(
        LlmContext("", [UserMessage(content="hi")], [READ_TOOL, NESTED_TOOL]),
        StreamOptions(tool_choice="read"),
    ),
    "headers_and_no_key": lambda: RequestCase(
        _hi(), api_key=None, headers={"X-Team": "corral", "X-Trace": "abc"}
    ),
    "not_streamed": lambda: RequestCase(
        LlmContext("s", _tools_turns("fake"), [READ_TOOL]),
        StreamOptions(thinking="low"),
        streaming=False,
    ),
}


@pytest.mark.parametrize("name", sorted(REQUESTS))
async def test_request_bytes(server: FakeProviderServer, name: str) -> None:
    case = REQUESTS[name]()
    server.queue_text("ok")
    model = create_provider_model(
        make_info("openai-responses", **{"id": MODEL_ID, **case.info}),
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
    _check("requests", name, {"path": request.path, "headers": headers, "body": request.raw.decode()})


@dataclass
class ReplyCase:
    reply: FakeReply
    streaming: bool = True
    thinking: bool = False


REPLIES: dict[str, Callable[[], ReplyCase]] = {
    "text": lambda: ReplyCase(FakeReply(text=["Hel", "lo", " world"])),
    "empty_text": lambda: ReplyCase(FakeReply(text="")),
    "reasoning_then_text": lambda: ReplyCase(
        FakeReply(
            text="answer",
            thinking=["let me ", "think"],
            thinking_signature="enc-abc",
            usage=FakeUsage(output=9, reasoning=4),
        ),
        thinking=True,
    ),
    "reasoning_unencrypted": lambda: ReplyCase(FakeReply(text="a", thinking="hm"), thinking=True),
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
    "tool_call_no_arguments": lambda: ReplyCase(FakeReply(tool_calls=[FakeToolCall("ls", {}, "call_e")])),
    "length": lambda: ReplyCase(FakeReply(text="cut off", stop="length")),
    "cached_usage": lambda: ReplyCase(
        FakeReply(text="ok", usage=FakeUsage(input=1000, output=200, cache_read=3000, reasoning=50))
    ),
    "error_429": lambda: ReplyCase(
        FakeReply(status=429, error_message="Rate limit reached for requests", headers={"retry-after": "0"})
    ),
    "error_503": lambda: ReplyCase(
        FakeReply(status=503, error_message="Service unavailable, the server is overloaded")
    ),
    "error_400_context": lambda: ReplyCase(
        FakeReply(
            status=400,
            error_body={
                "error": {
                    "message": "Your input exceeds the context window of this model.",
                    "type": "invalid_request_error",
                    "param": "input",
                    "code": "context_length_exceeded",
                }
            },
        )
    ),
    "error_404": lambda: ReplyCase(FakeReply(status=404, error_message="no route")),
    "error_500_plain_body": lambda: ReplyCase(FakeReply(status=500, error_body="upstream exploded")),
    "error_401_code_only": lambda: ReplyCase(
        FakeReply(status=401, error_body={"error": {"message": "bad key", "code": "invalid_api_key"}})
    ),
    "error_in_stream": lambda: ReplyCase(
        FakeReply(text=["one ", "two ", "three"], fail_after=6, error_message="Overloaded")
    ),
    "response_failed": lambda: ReplyCase(
        FakeReply(text=["one ", "two"], failed=True, error_message="The server had an error")
    ),
    "dropped_stream": lambda: ReplyCase(FakeReply(text=["one ", "two ", "three"], drop_after=6)),
    "plain_text_and_call": lambda: ReplyCase(
        FakeReply(
            text="plain answer",
            tool_calls=[FakeToolCall("read", {"path": "x"}, "call_p1")],
            usage=FakeUsage(input=7, output=3, cache_read=2),
        ),
        streaming=False,
    ),
    "plain_reasoning": lambda: ReplyCase(
        FakeReply(text="plain", thinking="why", thinking_signature="enc-p"), streaming=False, thinking=True
    ),
    "plain_length": lambda: ReplyCase(FakeReply(text="cut", stop="length"), streaming=False),
    "plain_error_400": lambda: ReplyCase(FakeReply(status=400, error_message="bad request"), streaming=False),
}


@pytest.mark.parametrize("name", sorted(REPLIES))
async def test_reply_events(server: FakeProviderServer, name: str) -> None:
    case = REPLIES[name]()
    server.queue(case.reply)
    model = create_provider_model(
        make_info("openai-responses", id=MODEL_ID),
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
    model = create_provider_model(make_info("openai-responses", id=MODEL_ID), api_key="k", base_url=url)
    events = await collect(model, LlmContext("", [UserMessage(content="hi")]))
    records = json.loads(json.dumps([event_record(event) for event in events]).replace(url, "<base_url>"))
    _check("replies", "unreachable", records)
