"""One contract suite for the three HTTP provider APIs, run against the fake server.

`ProviderContract` holds the tests every API must pass (streaming events,
tool-call deltas, usage and cost, errors, abort, plain responses,
concurrency); each `test_provider_<api>.py` subclasses it once with its `API`
and adds the checks of its own wire format. This is the shape of huey's
storage tests: the behaviour is the same, only the wire differs.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

import pytest

from corral.llm import (
    AgentMessage,
    ApiKind,
    AssistantMessage,
    AssistantMessageEvent,
    DoneEvent,
    ErrorEvent,
    ImageContent,
    LlmContext,
    Model,
    ModelInfo,
    ModelPrices,
    StreamOptions,
    TextContent,
    ThinkingContent,
    ThinkingLevel,
    ToolCall,
    ToolDefinition,
    ToolResultMessage,
    UserMessage,
)
from corral.llm._providers import create_provider_model

from .fake_server import FakeProviderServer, FakeReply, FakeToolCall, FakeUsage

TIMEOUT = 30.0
"""Upper bound on any wait in these tests (never reached when things work)."""

PNG_1PX = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
    )
).decode()

READ_TOOL = ToolDefinition(
    name="read",
    description="Read a file",
    parameters={
        "type": "object",
        "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}},
        "required": ["path"],
    },
)


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as fake:
        yield fake


def make_info(api: ApiKind, **overrides: Any) -> ModelInfo:
    fields: dict[str, Any] = {
        "name": "Fake",
        "reasoning": True,
        "max_tokens": 16_384,
        "input": ("text", "image"),
    }
    fields.update(overrides)
    provider = fields.pop("provider", "fake")
    model_id = fields.pop("id", "fake-model-1")
    return ModelInfo(provider, model_id, api, **fields)


def base_url_for(server: FakeProviderServer, api: ApiKind) -> str:
    return server.url if api == "anthropic" else server.base_url


def user(text: str) -> UserMessage:
    return UserMessage(content=text)


async def collect(
    model: Model, context: LlmContext, options: StreamOptions | None = None
) -> list[AssistantMessageEvent]:
    async def run() -> list[AssistantMessageEvent]:
        return [event async for event in model.stream(context, options or StreamOptions())]

    return await asyncio.wait_for(run(), TIMEOUT)


def final(events: Sequence[AssistantMessageEvent]) -> AssistantMessage:
    last = events[-1]
    if isinstance(last, DoneEvent):
        return last.message
    assert isinstance(last, ErrorEvent)
    return last.error


def kinds(events: Sequence[AssistantMessageEvent]) -> list[str]:
    """The event types, with the error message appended to an `error` (so a failed assert shows it)."""
    return [
        f"error: {event.error.error_message}"
        if isinstance(event, ErrorEvent) and event.error.error_message
        else event.type
        for event in events
    ]


class ProviderContract:
    """Behaviour every HTTP provider API shares. Subclasses set `API`."""

    API: ClassVar[ApiKind]
    MODEL_ID: ClassVar[str] = "fake-model-1"
    """The model id used (a real-looking one where pydantic-ai's profile for it matters)."""

    def model(self, server: FakeProviderServer, *, streaming: bool = True, **info: Any) -> Model:
        info.setdefault("id", self.MODEL_ID)
        return create_provider_model(
            make_info(self.API, **info),
            api_key="sk-test-key",
            base_url=base_url_for(server, self.API),
            streaming=streaming,
        )

    async def test_text_streams_as_deltas_in_order(self, server: FakeProviderServer) -> None:
        server.queue_text(["Hel", "lo", " world"])
        events = await collect(self.model(server), LlmContext("be brief", [user("hi")]))
        assert kinds(events) == [
            "start",
            "text_start",
            "text_delta",
            "text_delta",
            "text_delta",
            "text_end",
            "done",
        ]
        deltas = [e.delta for e in events if e.type == "text_delta"]  # type: ignore[union-attr]
        assert deltas == ["Hel", "lo", " world"]
        assert {e.content_index for e in events[1:-1]} == {0}  # type: ignore[union-attr]
        end = events[-2]
        assert end.type == "text_end" and end.content == "Hello world"
        done = events[-1]
        assert isinstance(done, DoneEvent) and done.reason == "stop"
        assert done.message.text == "Hello world"
        assert done.message.stop_reason == "stop"
        assert (done.message.provider, done.message.model) == ("fake", self.MODEL_ID)

    async def test_partial_is_kept_current_while_streaming(self, server: FakeProviderServer) -> None:
        server.queue_text(["a", "b", "c"])
        seen: list[str] = []
        async for event in self.model(server).stream(LlmContext("", [user("hi")]), StreamOptions()):
            if event.type == "text_delta":
                seen.append(event.partial.text)
        assert seen == ["a", "ab", "abc"]

    async def test_tool_call_streams_argument_deltas(self, server: FakeProviderServer) -> None:
        arguments = {"path": "src/app.py", "limit": 20}
        server.queue(
            FakeReply(text="Reading.", tool_calls=[FakeToolCall("read", arguments, "call_abc")]),
        )
        events = await collect(self.model(server), LlmContext("", [user("read it")], [READ_TOOL]))
        assert kinds(events)[0] == "start"
        tool_events = [e for e in events if e.type.startswith("toolcall_")]
        assert tool_events[0].type == "toolcall_start"
        assert tool_events[-1].type == "toolcall_end"
        deltas = [e.delta for e in tool_events if e.type == "toolcall_delta"]  # type: ignore[union-attr]
        assert len(deltas) >= 2
        assert json.loads("".join(deltas)) == arguments
        text_index = next(e.content_index for e in events if e.type == "text_start")  # type: ignore[union-attr]
        assert text_index == 0
        assert {e.content_index for e in tool_events} == {1}  # type: ignore[union-attr]
        end = tool_events[-1]
        assert end.type == "toolcall_end"
        assert end.tool_call == ToolCall(id="call_abc", name="read", arguments=arguments)
        done = events[-1]
        assert isinstance(done, DoneEvent) and done.reason == "toolUse"
        assert done.message.tool_calls == [ToolCall(id="call_abc", name="read", arguments=arguments)]
        self.assert_tool_offered(server.requests[0].body, READ_TOOL)

    def assert_tool_offered(self, body: Any, tool: ToolDefinition) -> None:
        raise NotImplementedError

    async def test_length_stop_is_reported(self, server: FakeProviderServer) -> None:
        server.queue_text("cut off", stop="length")
        events = await collect(self.model(server), LlmContext("", [user("hi")]))
        done = events[-1]
        assert isinstance(done, DoneEvent) and done.reason == "length"
        assert done.message.stop_reason == "length"

    async def test_usage_is_normalised_and_priced(self, server: FakeProviderServer) -> None:
        usage = FakeUsage(input=1000, output=200, cache_read=3000, cache_write=self.CACHE_WRITE, reasoning=50)
        server.queue_text("ok", usage=usage)
        prices = ModelPrices(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)
        events = await collect(self.model(server, prices=prices), LlmContext("", [user("hi")]))
        got = final(events).usage
        assert (got.input, got.output, got.cache_read, got.cache_write) == (1000, 200, 3000, self.CACHE_WRITE)
        assert got.total_tokens == 1000 + 200 + 3000 + self.CACHE_WRITE
        assert got.cost.input == pytest.approx(0.003)
        assert got.cost.output == pytest.approx(0.003)
        assert got.cost.cache_read == pytest.approx(0.0009)
        assert got.cost.cache_write == pytest.approx(3.75e-6 * self.CACHE_WRITE)
        assert got.cost.total == pytest.approx(0.003 + 0.003 + 0.0009 + 3.75e-6 * self.CACHE_WRITE)

    CACHE_WRITE: ClassVar[int] = 0
    """Cache-write tokens the API reports (only Anthropic has them)."""

    async def test_default_max_tokens_is_capped_at_32000(self, server: FakeProviderServer) -> None:
        server.queue_text("ok")
        server.queue_text("ok")
        await collect(self.model(server, max_tokens=128_000), LlmContext("", [user("hi")]))
        await collect(self.model(server, max_tokens=8_000), LlmContext("", [user("hi")]))
        assert [self.max_tokens_sent(r.body) for r in server.requests] == [32_000, 8_000]

    def max_tokens_sent(self, body: Any) -> int:
        raise NotImplementedError

    @pytest.mark.parametrize(
        ("status", "message"),
        [
            (429, "Rate limit reached for requests"),
            (503, "Service unavailable, the server is overloaded"),
            (400, "prompt is too long: 210000 tokens > 200000 maximum context length"),
        ],
    )
    async def test_error_status_becomes_error_event(
        self, server: FakeProviderServer, status: int, message: str
    ) -> None:
        server.queue_error(status, message)
        events = await collect(self.model(server), LlmContext("", [user("hi")]))
        assert [e.type for e in events] == ["error"]
        error = events[0]
        assert isinstance(error, ErrorEvent) and error.reason == "error"
        assert error.error.stop_reason == "error"
        assert error.error.error_message is not None
        line = error.error.error_message
        assert "\n" not in line
        assert line.startswith(str(status))
        assert message in line
        assert len(server.requests) == 1, "the SDK must not retry on its own"

    async def test_error_inside_the_stream_keeps_the_partial_reply(self, server: FakeProviderServer) -> None:
        server.queue(
            FakeReply(text=["one ", "two ", "three"], fail_after=self.FAIL_AFTER, error_message="Overloaded")
        )
        events = await collect(self.model(server), LlmContext("", [user("hi")]))
        assert events[0].type == "start"
        assert "text_delta" in kinds(events)
        assert "text_end" not in kinds(events)
        error = events[-1]
        assert isinstance(error, ErrorEvent) and error.reason == "error"
        assert error.error.stop_reason == "error"
        assert "Overloaded" in (error.error.error_message or "")
        assert error.error.text.startswith("one ")

    FAIL_AFTER: ClassVar[int]
    """Stream events before the first text delta has surely been sent."""

    async def test_unreachable_endpoint_becomes_error_event(self) -> None:
        with FakeProviderServer() as gone:
            url = base_url_for(gone, self.API)
        model = create_provider_model(make_info(self.API), api_key="k", base_url=url)
        events = await collect(model, LlmContext("", [user("hi")]))
        assert [e.type for e in events] == ["error"]
        message = final(events).error_message or ""
        assert "connect" in message.lower()

    async def test_cancelling_the_consumer_propagates_and_releases_the_connection(
        self, server: FakeProviderServer
    ) -> None:
        server.queue_text(["tick "], chunk_delay=0.02, repeat_text=2000)
        model = self.model(server)
        first_delta = asyncio.Event()
        seen: list[str] = []

        async def consume() -> None:
            async for event in model.stream(LlmContext("", [user("count")]), StreamOptions()):
                seen.append(event.type)
                if event.type == "text_delta":
                    first_delta.set()

        task = asyncio.create_task(consume())
        await asyncio.wait_for(first_delta.wait(), TIMEOUT)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert "done" not in seen and "error" not in seen
        released = await asyncio.to_thread(server.disconnected.wait, TIMEOUT)
        assert released, "the server never saw the client close the stream"
        assert server.disconnects == 1

    async def test_plain_response_form(self, server: FakeProviderServer) -> None:
        server.queue(
            FakeReply(
                text="plain answer",
                tool_calls=[FakeToolCall("read", {"path": "x"}, "call_p1")],
                usage=FakeUsage(input=7, output=3),
            )
        )
        events = await collect(self.model(server, streaming=False), LlmContext("", [user("hi")], [READ_TOOL]))
        assert kinds(events) == [
            "start",
            "text_start",
            "text_delta",
            "text_end",
            "toolcall_start",
            "toolcall_delta",
            "toolcall_end",
            "done",
        ]
        message = final(events)
        assert message.text == "plain answer"
        assert message.tool_calls == [ToolCall(id="call_p1", name="read", arguments={"path": "x"})]
        assert (message.usage.input, message.usage.output) == (7, 3)
        assert not server.requests[0].body.get("stream")

    async def test_many_concurrent_requests_are_all_answered(self, server: FakeProviderServer) -> None:
        server.default_reply = FakeReply(text=["one ", "two"])
        model = self.model(server)
        results = await asyncio.wait_for(
            asyncio.gather(*(collect(model, LlmContext("", [user(f"q{i}")])) for i in range(50))),
            TIMEOUT * 2,
        )
        assert all(isinstance(events[-1], DoneEvent) for events in results)
        assert all(final(events).text == "one two" for events in results)
        assert len(server.requests) == 50

    async def test_base_url_path_and_api_key_header(self, server: FakeProviderServer) -> None:
        server.queue_text("ok")
        await collect(self.model(server), LlmContext("", [user("hi")]))
        request = server.requests[0]
        assert request.path == self.PATH
        assert request.body["model"] == self.MODEL_ID
        self.assert_api_key_sent(request.headers, "sk-test-key")

    PATH: ClassVar[str]

    def assert_api_key_sent(self, headers: dict[str, str], key: str) -> None:
        assert headers.get("authorization") == f"Bearer {key}"

    async def test_thinking_streams_as_thinking_blocks(self, server: FakeProviderServer) -> None:
        server.queue(FakeReply(text="answer", thinking=["let me ", "think"], thinking_signature="sig-123"))
        events = await collect(
            self.model(server), LlmContext("", [user("hi")]), StreamOptions(thinking="medium")
        )
        assert kinds(events)[:5] == [
            "start",
            "thinking_start",
            "thinking_delta",
            "thinking_delta",
            "thinking_end",
        ]
        assert [e.content_index for e in events[1:5]] == [0, 0, 0, 0]  # type: ignore[union-attr]
        message = final(events)
        thinking = message.content[0]
        assert isinstance(thinking, ThinkingContent) and thinking.thinking == "let me think"
        assert message.content[1] == TextContent(text="answer")
        self.assert_thinking_signature(thinking)

    def assert_thinking_signature(self, block: ThinkingContent) -> None:
        raise NotImplementedError

    @pytest.mark.parametrize("level", ["off", "minimal", "low", "medium", "high"])
    async def test_thinking_level_is_mapped_into_the_request(
        self, server: FakeProviderServer, level: ThinkingLevel
    ) -> None:
        server.queue_text("ok")
        await collect(self.model(server), LlmContext("", [user("hi")]), StreamOptions(thinking=level))
        self.assert_thinking_sent(server.requests[0].body, level)

    def assert_thinking_sent(self, body: Any, level: ThinkingLevel) -> None:
        raise NotImplementedError

    def conversation(self) -> list[AgentMessage]:
        """A multi-turn context: image prompt, a reply with thinking and a tool call, its result, a follow-up."""
        return [
            UserMessage(
                content=[
                    TextContent(text="What is in this picture?"),
                    ImageContent(data=PNG_1PX, mime_type="image/png"),
                ]
            ),
            AssistantMessage(
                content=[
                    ThinkingContent(
                        thinking="I should read the file.", thinking_signature=self.SAME_SIGNATURE
                    ),
                    TextContent(text="Let me look."),
                    ToolCall(id="call_1", name="read", arguments={"path": "a.png"}),
                ],
                api=self.PI_API,
                provider="fake",
                model=self.MODEL_ID,
                stop_reason="toolUse",
            ),
            ToolResultMessage(
                tool_call_id="call_1",
                tool_name="read",
                content=[
                    TextContent(text="Read image file [image/png]"),
                    ImageContent(data=PNG_1PX, mime_type="image/png"),
                ],
                is_error=False,
            ),
            AssistantMessage(
                content=[TextContent(text="partial")],
                api=self.PI_API,
                provider="fake",
                model=self.MODEL_ID,
                stop_reason="error",
                error_message="503 overloaded",
            ),
            UserMessage(content="And now?"),
        ]

    SAME_SIGNATURE: ClassVar[str]
    PI_API: ClassVar[str]

    async def test_multi_turn_context_is_converted(self, server: FakeProviderServer) -> None:
        server.queue_text("ok")
        events = await collect(
            self.model(server), LlmContext("You are terse.", self.conversation(), [READ_TOOL])
        )
        assert isinstance(events[-1], DoneEvent)
        body = server.requests[0].body
        assert "partial" not in json.dumps(body), "errored replies are not sent back"
        self.assert_conversation_sent(body)

    def assert_conversation_sent(self, body: Any) -> None:
        raise NotImplementedError

    async def test_thinking_from_another_provider_is_sent_as_text(self, server: FakeProviderServer) -> None:
        server.queue_text("ok")
        messages: list[AgentMessage] = [
            user("hi"),
            AssistantMessage(
                content=[
                    ThinkingContent(thinking="foreign thoughts", thinking_signature="other-sig"),
                    TextContent(text="hello"),
                ],
                api="some-other-api",
                provider="elsewhere",
                model="x",
            ),
            user("go on"),
        ]
        await collect(self.model(server), LlmContext("", messages))
        sent = json.dumps(server.requests[0].body)
        assert "foreign thoughts" in sent
        assert "other-sig" not in sent

    async def test_tool_call_without_result_gets_an_error_result(self, server: FakeProviderServer) -> None:
        server.queue_text("ok")
        messages: list[AgentMessage] = [
            user("hi"),
            AssistantMessage(
                content=[ToolCall(id="call_lost", name="read", arguments={"path": "a"})],
                api=self.PI_API,
                provider="fake",
                model=self.MODEL_ID,
                stop_reason="toolUse",
            ),
            user("never mind"),
        ]
        events = await collect(self.model(server), LlmContext("", messages, [READ_TOOL]))
        assert isinstance(events[-1], DoneEvent)
        sent = json.dumps(server.requests[0].body)
        assert "No result provided" in sent
