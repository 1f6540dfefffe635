"""`ChatCompletionsModel`: corral's own client for the OpenAI Chat Completions API (`openai-chat`).

It imports no SDK: the body comes from `_chat_request`, goes out through the shared
pools and rate limiter (`_http`), and the reply — server-sent events, or one JSON
object when the model was made with `streaming=False` — becomes corral's events
here. That keeps pydantic-ai and the openai SDK (over a second of imports) off the
way to a Chat Completions model's first request (the Responses API has its own client,
`_responses`; the Anthropic API and OpenAI's reasoning families still go through pydantic-ai,
`_adapter`).

Reading a reply, as pydantic-ai's `OpenAIChatModel` read it (the events of recorded
replies are pinned by `tests/llm/golden/openai_chat.json`):

- Content blocks follow one another: a block ends when one of another kind (or
  another tool call) starts, or when the reply ends. Reasoning arrives in
  `reasoning` or `reasoning_content` (that field name is the thinking block's
  signature, so it goes back in the same field); text that a chunk of exactly
  `<think>` opens, up to a chunk of exactly `</think>`, is unsigned thinking.
- A tool call starts once its name is known; its arguments stream as deltas, and
  a server that repeats the name in every chunk (llama.cpp) gets it once.
- Usage is summed over the chunks that carry it; `prompt_tokens` includes the
  cached ones, which corral counts apart.
- Failures never raise: an error status, an error event inside the stream, a
  broken connection or an unreadable reply end the stream with an `ErrorEvent`
  whose message keeps the status and the provider's message (`_errors`).
  Cancellation passes through, closing the response on its way out.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from corral.llm._messages import AssistantMessage, TextContent, ThinkingContent, ToolCall
from corral.llm._model import (
    AssistantMessageEvent,
    LlmContext,
    StreamOptions,
    TextDeltaEvent,
    TextStartEvent,
    ThinkingDeltaEvent,
    ThinkingStartEvent,
    ToolCallDeltaEvent,
    ToolCallStartEvent,
)

from ._chat_request import ChatConversation, request_body
from ._errors import ModelHTTPError, ModelResponseError
from ._text import parse_partial_arguments
from ._wire import BlockReply, OpenAIWireModel, StreamedBlock, count

__all__ = ["ChatCompletionsModel"]

_REASONING_FIELDS = ("reasoning", "reasoning_content")
"""Where a reply's reasoning arrives, in the order they are looked at (the first one present wins)."""

_THINK_OPEN, _THINK_CLOSE = "<think>", "</think>"

_FINISH_REASONS: dict[str, str] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_call",
    "function_call": "tool_call",
    "content_filter": "content_filter",
}
"""Chat Completions' `finish_reason`s, as the reply's outcome (unknown ones leave it unset)."""


@dataclass
class _PendingCall:
    """A tool call whose chunks came before its name (it starts once the name arrives)."""

    call_id: str | None = None
    args: str = ""


class _Reply(BlockReply):
    """One reply being read: `partial` kept current, and the events it makes."""

    def __init__(self, partial: AssistantMessage) -> None:
        super().__init__(partial)
        self.ended_calls: set[int] = set()
        self.pending_calls: dict[int, _PendingCall] = {}

    # --- blocks ---------------------------------------------------------------

    def _start(
        self, kind: Literal["text", "thinking", "toolCall"], key: object
    ) -> list[AssistantMessageEvent]:
        events = self.end()
        index = len(self.partial.content)
        self.current = StreamedBlock(index, key)
        if kind == "text":
            self.partial.content.append(TextContent(text=""))
            events.append(TextStartEvent(partial=self.partial, content_index=index))
        elif kind == "thinking":
            thinking = ThinkingContent(thinking="")
            if isinstance(key, str) and key in _REASONING_FIELDS:
                thinking.thinking_signature = key  # like Pi: the field it arrived in goes back in that field
            self.partial.content.append(thinking)
            events.append(ThinkingStartEvent(partial=self.partial, content_index=index))
        return events

    def _call_ended(self, block: StreamedBlock) -> None:
        assert isinstance(block.key, int)
        self.ended_calls.add(block.key)

    def _text(self, text: str) -> list[AssistantMessageEvent]:
        assert self.current is not None
        block = self.partial.content[self.current.content_index]
        if isinstance(block, TextContent):
            block.text += text
            return [
                TextDeltaEvent(partial=self.partial, content_index=self.current.content_index, delta=text)
            ]
        assert isinstance(block, ThinkingContent)
        block.thinking += text
        return [
            ThinkingDeltaEvent(partial=self.partial, content_index=self.current.content_index, delta=text)
        ]

    def _args(self, text: str) -> list[AssistantMessageEvent]:
        block = self.current
        assert block is not None
        call = self.partial.content[block.content_index]
        assert isinstance(call, ToolCall)
        block.args += text
        call.arguments = parse_partial_arguments(block.args, call.arguments)
        return [ToolCallDeltaEvent(partial=self.partial, content_index=block.content_index, delta=text)]

    # --- what a reply holds -------------------------------------------------------

    def reasoning(self, field: str, text: str) -> list[AssistantMessageEvent]:
        events: list[AssistantMessageEvent] = []
        if self.current is None or self.current.key != field:
            events = self._start("thinking", field)
        return events + self._text(text)

    def content(self, text: str) -> list[AssistantMessageEvent]:
        current = self.current
        if current is not None and current.key == "think-tag":
            if text == _THINK_CLOSE:
                return self.end()
            return self._text(text)
        if text == _THINK_OPEN:
            return self._start("thinking", "think-tag")
        events: list[AssistantMessageEvent] = []
        if current is None or current.key != "text":
            events = self._start("text", "text")
        return events + self._text(text)

    def tool_call(
        self, index: int, call_id: str | None, name: str | None, args: str | None
    ) -> list[AssistantMessageEvent]:
        current = self.current
        if current is not None and current.key == index:
            call = self.partial.content[current.content_index]
            assert isinstance(call, ToolCall)
            # Some servers (llama.cpp) repeat the whole name in every chunk: keep it once.
            if name and name != call.name:
                call.name += name
            if call_id:
                call.id = call_id
            return self._args(args) if args else []
        if index in self.ended_calls:
            return []  # a late chunk for a call already ended
        pending = self.pending_calls.setdefault(index, _PendingCall())
        pending.call_id = call_id or pending.call_id
        pending.args += args or ""
        if not name:
            return []
        del self.pending_calls[index]
        events = self.end()
        content_index = len(self.partial.content)
        self.partial.content.append(ToolCall(id=pending.call_id or f"pyd_ai_{uuid.uuid4().hex}", name=name))
        self.current = StreamedBlock(content_index, index)
        events.append(ToolCallStartEvent(partial=self.partial, content_index=content_index))
        if pending.args:
            events.extend(self._args(pending.args))
        return events

    def add_usage(self, usage: Any) -> None:
        if not isinstance(usage, dict):
            return
        details = usage.get("prompt_tokens_details")
        cached = details.get("cached_tokens") if isinstance(details, dict) else None
        self.usage["input"] += count(usage.get("prompt_tokens"))
        self.usage["output"] += count(usage.get("completion_tokens"))
        self.usage["cache_read"] += count(cached)

    def chunk(self, data: Any) -> list[AssistantMessageEvent]:
        """The events of one streamed chunk."""
        if not isinstance(data, dict):
            raise ModelResponseError(f"Chat Completions chunk is not an object: {data!r}")
        if isinstance(data.get("error"), dict):
            raise ModelHTTPError(500, body=data["error"])
        self.add_usage(data.get("usage"))
        choices = data.get("choices")
        if not choices or not isinstance(choices[0], dict):
            return []
        choice = choices[0]
        delta = choice.get("delta")
        if not isinstance(delta, dict):
            return []
        if delta.get("refusal"):
            self.finish_reason = "content_filter"
            return []
        if choice.get("finish_reason"):
            self.finish_reason = _FINISH_REASONS.get(choice["finish_reason"])
        return self.message_delta(delta)

    def message_delta(self, delta: dict[str, Any]) -> list[AssistantMessageEvent]:
        events: list[AssistantMessageEvent] = []
        for field in _REASONING_FIELDS:
            reasoning = delta.get(field)
            if reasoning and isinstance(reasoning, str):
                events.extend(self.reasoning(field, reasoning))
                break
        text = delta.get("content")
        if isinstance(text, str) and text:
            events.extend(self.content(text))
        for call in delta.get("tool_calls") or ():
            function = call.get("function") or {}
            events.extend(
                self.tool_call(
                    call.get("index", 0), call.get("id"), function.get("name"), function.get("arguments")
                )
            )
        return events

    def whole(self, data: Any) -> list[AssistantMessageEvent]:
        """The events of a plain (not streamed) response."""
        if not isinstance(data, dict) or not data.get("choices"):
            raise ModelResponseError("Chat Completions response has no choices")
        self.add_usage(data.get("usage"))
        choice = data["choices"][0]
        message = choice.get("message") or {}
        self.finish_reason = _FINISH_REASONS.get(choice.get("finish_reason") or "stop")
        if message.get("refusal"):
            self.finish_reason = "content_filter"
        events: list[AssistantMessageEvent] = []
        for field in _REASONING_FIELDS:
            reasoning = message.get(field)
            if reasoning and isinstance(reasoning, str):
                events.extend(self.reasoning(field, reasoning))
                break
        text = message.get("content")
        if isinstance(text, str) and text:
            for kind, piece in _split_think_tags(text):
                events.extend(self._start(kind, "think-tag" if kind == "thinking" else "text"))
                events.extend(self._text(piece))
        for index, call in enumerate(message.get("tool_calls") or ()):
            function = call.get("function") or {}
            events.extend(
                self.tool_call(index, call.get("id"), function.get("name"), function.get("arguments"))
            )
        return events + self.end()


def _split_think_tags(text: str) -> Iterator[tuple[Literal["text", "thinking"], str]]:
    """Text and `<think>...</think>` thinking, in order (empty pieces left out)."""
    rest = text
    while rest:
        start = rest.find(_THINK_OPEN)
        if start < 0:
            yield "text", rest
            return
        if rest[:start]:
            yield "text", rest[:start]
        end = rest.find(_THINK_CLOSE, start)
        body_end = len(rest) if end < 0 else end
        if rest[start + len(_THINK_OPEN) : body_end]:
            yield "thinking", rest[start + len(_THINK_OPEN) : body_end]
        rest = "" if end < 0 else rest[end + len(_THINK_CLOSE) :]


class ChatCompletionsModel(OpenAIWireModel[ChatConversation]):
    """A corral model speaking the OpenAI Chat Completions API over HTTP; see the module docstring.

    Args:
        info: The registry entry.
        api_key: Sent as `Authorization: Bearer`.
        endpoint: The base URL (`https://host/v1`); requests go to `<endpoint>/chat/completions`.
        rate_limit: The limiter's key and the provider's caps, for every request.
        headers: Extra HTTP headers sent with every request.
        streaming: Stream replies (default); `False` asks for the plain JSON response and
            replays it as events, for endpoints that cannot stream.
    """

    API_NAME = "Chat Completions"
    PATH = "chat/completions"

    def _new_conversion(self) -> ChatConversation:
        return ChatConversation(self.info)

    def _body(
        self, conversion: ChatConversation, context: LlmContext, options: StreamOptions
    ) -> dict[str, Any]:
        messages = conversion.convert(context)
        return request_body(self.info, messages, context.tools, options, stream=self.streaming)

    def _reader(self, partial: AssistantMessage) -> _Reply:
        return _Reply(partial)
