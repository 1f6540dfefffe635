"""`PydanticAIModel`: a corral `Model` over a pydantic-ai model (the Responses and Anthropic APIs).

One request goes like this: convert the context (`_convert`), open
`pydantic_ai.direct.model_request_stream` (or `model_request` when the model
was made with `streaming=False`), and translate pydantic-ai's part events into
ours. pydantic-ai numbers the parts of a response; we keep our own content
indexes (only text, thinking and tool-call parts become content) and emit
`*_start` when a part starts (plus a `*_delta` for any content the start
already carries), `*_delta` per delta, and `*_end` with the finished block
when pydantic-ai ends the part (or, for parts still open, when the stream
ends). `partial` is the one live `AssistantMessage` being built.

Failures never raise: any exception except `asyncio.CancelledError` ends the
stream with an `ErrorEvent` whose message keeps the HTTP status and the
provider's message (`_errors.error_message`). Cancellation passes through
untouched, closing the HTTP response on its way out.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from corral.llm._cost import calculate_cost
from corral.llm._lifecycle import ModelLifecycle
from corral.llm._messages import AssistantMessage, TextContent, ThinkingContent, ToolCall, Usage
from corral.llm._model import (
    AssistantMessageEvent,
    ErrorEvent,
    LlmContext,
    Model,
    ModelInfo,
    StartEvent,
    StreamOptions,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
)

from ._convert import IncrementalConversion, to_model_settings, to_request_parameters
from ._responses_request import responses_reasoning_signature
from ._text import parse_arguments, parse_partial_arguments, pi_api_name
from ._wire import reply_end

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelResponse, ModelResponsePart, ModelResponseStreamEvent
    from pydantic_ai.models import Model as PaiModel
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.usage import RequestUsage

__all__ = ["PydanticAIModel"]

_KEPT_CONVERSIONS = 8
"""Sessions whose converted history a model keeps (the least recently used one goes first)."""


@dataclass
class _Open:
    """A content block being streamed: where it is and what kind it is."""

    content_index: int
    kind: Literal["text", "thinking", "toolCall"]
    args: str = ""
    """The tool call's argument JSON text so far."""


class _Translator:
    """Turns pydantic-ai part events into our events, keeping `partial` current."""

    def __init__(self, partial: AssistantMessage, info: ModelInfo) -> None:
        self.partial = partial
        self.info = info
        self.open: dict[int, _Open] = {}
        """pydantic-ai part index → the block it feeds, while the part is open."""

    def handle(self, event: ModelResponseStreamEvent) -> list[AssistantMessageEvent]:
        from pydantic_ai.messages import PartDeltaEvent, PartEndEvent, PartStartEvent

        if isinstance(event, PartStartEvent):
            return self.start(event.index, event.part)
        if isinstance(event, PartDeltaEvent):
            return self.delta(event.index, event.delta)
        if isinstance(event, PartEndEvent):
            return self.end(event.index, event.part)
        return []

    def start(self, index: int, part: ModelResponsePart) -> list[AssistantMessageEvent]:
        from pydantic_ai.messages import TextPart, ThinkingPart, ToolCallPart

        events: list[AssistantMessageEvent] = []
        if index in self.open:
            # A second start for the same index replaces the part: end the old block first.
            events.extend(self.end(index, None))
        content_index = len(self.partial.content)
        if isinstance(part, TextPart):
            self.partial.content.append(TextContent(text=""))
            self.open[index] = _Open(content_index, "text")
            events.append(TextStartEvent(partial=self.partial, content_index=content_index))
            if part.content:
                events.extend(self._text_delta(index, part.content))
        elif isinstance(part, ThinkingPart):
            self.partial.content.append(ThinkingContent(thinking=""))
            self.open[index] = _Open(content_index, "thinking")
            events.append(ThinkingStartEvent(partial=self.partial, content_index=content_index))
            self._thinking_meta(index, part.id, part.signature)
            if part.content:
                events.extend(self._thinking_delta(index, part.content))
        elif isinstance(part, ToolCallPart):
            self.partial.content.append(ToolCall(id=part.tool_call_id, name=part.tool_name))
            self.open[index] = _Open(content_index, "toolCall")
            events.append(ToolCallStartEvent(partial=self.partial, content_index=content_index))
            if part.args:
                events.extend(self._args_delta(index, _args_text(part.args)))
        return events

    def delta(self, index: int, delta: Any) -> list[AssistantMessageEvent]:
        from pydantic_ai.messages import TextPartDelta, ThinkingPartDelta, ToolCallPartDelta

        if index not in self.open:
            return []
        if isinstance(delta, TextPartDelta):
            return self._text_delta(index, delta.content_delta) if delta.content_delta else []
        if isinstance(delta, ThinkingPartDelta):
            self._thinking_meta(index, None, delta.signature_delta)
            return self._thinking_delta(index, delta.content_delta) if delta.content_delta else []
        if isinstance(delta, ToolCallPartDelta):
            block = self.partial.content[self.open[index].content_index]
            assert isinstance(block, ToolCall)
            # Some servers (llama.cpp) repeat the whole name in every chunk: keep it once.
            if delta.tool_name_delta and delta.tool_name_delta != block.name:
                block.name += delta.tool_name_delta
            if delta.tool_call_id:
                block.id = delta.tool_call_id
            return self._args_delta(index, _args_text(delta.args_delta)) if delta.args_delta else []
        return []

    def end(self, index: int, part: ModelResponsePart | None) -> list[AssistantMessageEvent]:
        from pydantic_ai.messages import TextPart, ThinkingPart, ToolCallPart

        opened = self.open.pop(index, None)
        if opened is None:
            return []
        ci = opened.content_index
        block = self.partial.content[ci]
        if isinstance(block, TextContent):
            if isinstance(part, TextPart):
                block.text = part.content
            return [TextEndEvent(partial=self.partial, content_index=ci, content=block.text)]
        if isinstance(block, ThinkingContent):
            if isinstance(part, ThinkingPart):
                block.thinking = part.content
                self.open[index] = opened
                self._thinking_meta(index, part.id, part.signature)
                del self.open[index]
            return [ThinkingEndEvent(partial=self.partial, content_index=ci, content=block.thinking)]
        args = opened.args
        if isinstance(part, ToolCallPart):
            block.id = part.tool_call_id
            # pydantic-ai concatenates a repeated name ("lsls"); the name built in `delta` is right.
            block.name = block.name or part.tool_name
            if part.args is not None:
                args = _args_text(part.args)
        block.arguments, block.raw_arguments = parse_arguments(args)
        return [ToolCallEndEvent(partial=self.partial, content_index=ci, tool_call=block)]

    def finish(self) -> list[AssistantMessageEvent]:
        """End every block still open (pydantic-ai normally ends them itself)."""
        events: list[AssistantMessageEvent] = []
        for index in sorted(self.open):
            events.extend(self.end(index, None))
        return events

    # --- helpers ------------------------------------------------------------

    def _text_delta(self, index: int, text: str) -> list[AssistantMessageEvent]:
        ci = self.open[index].content_index
        block = self.partial.content[ci]
        assert isinstance(block, TextContent)
        block.text += text
        return [TextDeltaEvent(partial=self.partial, content_index=ci, delta=text)]

    def _thinking_delta(self, index: int, text: str) -> list[AssistantMessageEvent]:
        ci = self.open[index].content_index
        block = self.partial.content[ci]
        assert isinstance(block, ThinkingContent)
        block.thinking += text
        return [ThinkingDeltaEvent(partial=self.partial, content_index=ci, delta=text)]

    def _thinking_meta(self, index: int, part_id: str | None, signature: str | None) -> None:
        block = self.partial.content[self.open[index].content_index]
        assert isinstance(block, ThinkingContent)
        if self.info.api == "openai-responses":
            current_id, current_sig = None, None
            if block.thinking_signature:
                parsed = json.loads(block.thinking_signature)
                current_id, current_sig = parsed.get("id"), parsed.get("encrypted_content")
            block.thinking_signature = responses_reasoning_signature(
                part_id or current_id, signature or current_sig
            )
        elif signature:
            block.thinking_signature = signature
            if part_id == "redacted_thinking":
                # Anthropic withheld the reasoning; its data is the signature (as Pi records it).
                block.redacted = True

    def _args_delta(self, index: int, text: str) -> list[AssistantMessageEvent]:
        opened = self.open[index]
        opened.args += text
        block = self.partial.content[opened.content_index]
        assert isinstance(block, ToolCall)
        block.arguments = parse_partial_arguments(opened.args, block.arguments)
        return [ToolCallDeltaEvent(partial=self.partial, content_index=opened.content_index, delta=text)]


def _args_text(args: object) -> str:
    """Tool-call arguments (JSON text, a dict, or one of pydantic-ai's typed argument objects) as JSON text."""
    if isinstance(args, str):
        return args
    if isinstance(args, dict):
        return json.dumps(args)
    dump = getattr(args, "model_dump", None)
    if callable(dump):
        return json.dumps(dump(mode="json"))
    return json.dumps(args, default=str)


def normalise_usage(usage: RequestUsage) -> Usage:
    """Our `Usage` from pydantic-ai's (whose `input_tokens` includes cache reads and writes)."""
    cache_read = usage.cache_read_tokens
    cache_write = usage.cache_write_tokens
    input_tokens = max(0, usage.input_tokens - cache_read - cache_write)
    output = usage.output_tokens
    return Usage(
        input=input_tokens,
        output=output,
        cache_read=cache_read,
        cache_write=cache_write,
        total_tokens=input_tokens + output + cache_read + cache_write,
    )


def _response_parts_as_events(response: ModelResponse) -> list[ModelResponseStreamEvent]:
    """A whole (non-streamed) response as start/end part events."""
    from pydantic_ai.messages import PartEndEvent, PartStartEvent

    events: list[ModelResponseStreamEvent] = []
    for index, part in enumerate(response.parts):
        events.append(PartStartEvent(index=index, part=part))
        events.append(PartEndEvent(index=index, part=part))
    return events


class PydanticAIModel(Model):
    """A corral model backed by a pydantic-ai model (OpenAI Responses, Anthropic Messages).

    Args:
        info: The registry entry.
        pai_model: The pydantic-ai model that sends the requests.
        streaming: Stream replies (default); `False` asks for the plain JSON response and
            replays it as events, for endpoints that cannot stream.
    """

    def __init__(
        self,
        info: ModelInfo,
        pai_model: PaiModel,
        *,
        streaming: bool = True,
        lifecycle: ModelLifecycle | None = None,
    ) -> None:
        super().__init__(info)
        self.pai_model = pai_model
        self.streaming = streaming
        self._lifecycle = lifecycle
        self._conversions: dict[str | None, IncrementalConversion] = {}

    @property
    def lifecycle(self) -> ModelLifecycle | None:
        """The built-in table's, else what the SDK's catalogue said when the model was built."""
        return super().lifecycle or self._lifecycle

    def _conversion(self, session_id: str | None) -> IncrementalConversion:
        """The conversion kept for one session's requests (a model may serve several sessions)."""
        conversion = self._conversions.pop(session_id, None)
        if conversion is None:
            conversion = IncrementalConversion(self.info, self.pai_model.system)
        self._conversions[session_id] = conversion  # most recent last
        while len(self._conversions) > _KEPT_CONVERSIONS:
            del self._conversions[next(iter(self._conversions))]
        return conversion

    def _adaptive_thinking(self) -> bool:
        if self.info.api != "anthropic":
            return False
        return bool(self.pai_model.profile.get("anthropic_supports_adaptive_thinking", False))

    async def aclose(self) -> None:
        """Close the HTTP client this model's provider created."""
        client = getattr(self.pai_model, "client", None)
        close = getattr(client, "close", None)
        if close is not None:
            await close()

    async def stream(
        self, context: LlmContext, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        """Stream one reply; see [`Model.stream`][corral.llm.Model.stream]."""
        partial = AssistantMessage(
            content=[],
            api=pi_api_name(self.info),
            provider=self.info.provider,
            model=self.info.id,
        )
        translator = _Translator(partial, self.info)
        response: ModelResponse | None = None
        failure: BaseException | None = None
        try:
            messages = self._conversion(options.session_id).convert(context)
            parameters = to_request_parameters(context.tools)
            settings = to_model_settings(self.info, options, adaptive_thinking=self._adaptive_thinking())
            if self.streaming:
                from pydantic_ai.direct import model_request_stream

                async with model_request_stream(
                    self.pai_model,
                    messages,
                    model_settings=settings,
                    model_request_parameters=parameters,
                    instrument=_instrumentation(),
                ) as streamed:
                    yield StartEvent(partial=partial)
                    async for event in streamed:
                        for ours in translator.handle(event):
                            yield ours
                    response = streamed.get()
            else:
                from pydantic_ai.direct import model_request

                response = await model_request(
                    self.pai_model,
                    messages,
                    model_settings=settings,
                    model_request_parameters=parameters,
                    instrument=_instrumentation(),
                )
                yield StartEvent(partial=partial)
                for event in _response_parts_as_events(response):
                    for ours in translator.handle(event):
                        yield ours
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            failure = exc
        if failure is None:
            for ours in translator.finish():
                yield ours
        if response is not None:
            partial.usage = normalise_usage(response.usage)
        partial.usage = calculate_cost(self.info, partial.usage, endpoint=self.pai_model.base_url)
        if failure is None and response is None:
            partial.stop_reason = "error"
            partial.error_message = "No response"
            yield ErrorEvent(reason="error", error=partial)
            return
        finish_reason = response.finish_reason if response is not None else None
        yield reply_end(self.info, partial, failure, finish_reason, base_url=self.pai_model.base_url)


def _instrumentation() -> InstrumentationSettings | bool:
    """pydantic-ai's own spans when tracing asks for them (`CORRAL_TRACE_PYDANTIC_AI`), else none."""
    from corral import _tracing

    provider = _tracing.model_instrumentation()
    if provider is None:
        return False
    from pydantic_ai.models.instrumented import InstrumentationSettings

    return InstrumentationSettings(tracer_provider=provider)
