"""`ChatCompletionsModel`: corral's own client for the OpenAI Chat Completions API (`openai-chat`).

It imports no SDK: the body comes from `_chat_request`, goes out through the shared
pools and rate limiter (`_http`), and the reply — server-sent events, or one JSON
object when the model was made with `streaming=False` — becomes corral's events
here. That keeps pydantic-ai and the openai SDK (over a second of imports) off the
way to a Chat Completions model's first request; the Responses and Anthropic APIs
still go through pydantic-ai (`_adapter`).

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

import asyncio
import functools
import json
import uuid
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import httpx2

from corral.llm._cost import calculate_cost
from corral.llm._lifecycle import ModelLifecycle
from corral.llm._messages import AssistantMessage, TextContent, ThinkingContent, ToolCall, Usage
from corral.llm._model import (
    AssistantMessageEvent,
    DoneEvent,
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
from corral.llm._ratelimit import EndpointKey, RateLimits

from ._chat_request import ChatConversation, encode_body, request_body
from ._errors import (
    ModelConnectionError,
    ModelHTTPError,
    ModelResponseError,
    endpoint_hint,
    error_message,
    unreachable_endpoint,
)
from ._http import model_http_client
from ._text import parse_arguments, parse_partial_arguments, pi_api_name

__all__ = ["ChatCompletionsModel"]

_KEPT_CONVERSIONS = 8
"""Sessions whose converted history a model keeps (the least recently used one goes first)."""

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
class _Block:
    """The content block being streamed."""

    content_index: int
    key: object
    """What feeds it: a reasoning field, `"text"`, `"think-tag"` or a tool call's index."""
    args: str = ""
    """A tool call's argument text so far."""


@dataclass
class _PendingCall:
    """A tool call whose chunks came before its name (it starts once the name arrives)."""

    call_id: str | None = None
    args: str = ""


class _Reply:
    """One reply being read: `partial` kept current, and the events it makes."""

    def __init__(self, partial: AssistantMessage) -> None:
        self.partial = partial
        self.current: _Block | None = None
        self.ended_calls: set[int] = set()
        self.pending_calls: dict[int, _PendingCall] = {}
        self.finish_reason: str | None = None
        self.usage: dict[str, int] = {"input": 0, "output": 0, "cache_read": 0}

    # --- blocks ---------------------------------------------------------------

    def _start(
        self, kind: Literal["text", "thinking", "toolCall"], key: object
    ) -> list[AssistantMessageEvent]:
        events = self.end()
        index = len(self.partial.content)
        self.current = _Block(index, key)
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

    def end(self) -> list[AssistantMessageEvent]:
        """End the block being streamed, if any."""
        block, self.current = self.current, None
        if block is None:
            return []
        index = block.content_index
        content = self.partial.content[index]
        if isinstance(content, TextContent):
            return [TextEndEvent(partial=self.partial, content_index=index, content=content.text)]
        if isinstance(content, ThinkingContent):
            return [ThinkingEndEvent(partial=self.partial, content_index=index, content=content.thinking)]
        assert isinstance(block.key, int)
        self.ended_calls.add(block.key)
        content.arguments, content.raw_arguments = parse_arguments(block.args)
        return [ToolCallEndEvent(partial=self.partial, content_index=index, tool_call=content)]

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
        self.current = _Block(content_index, index)
        events.append(ToolCallStartEvent(partial=self.partial, content_index=content_index))
        if pending.args:
            events.extend(self._args(pending.args))
        return events

    def add_usage(self, usage: Any) -> None:
        if not isinstance(usage, dict):
            return
        details = usage.get("prompt_tokens_details")
        cached = details.get("cached_tokens") if isinstance(details, dict) else None
        self.usage["input"] += _count(usage.get("prompt_tokens"))
        self.usage["output"] += _count(usage.get("completion_tokens"))
        self.usage["cache_read"] += _count(cached)

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


def _count(value: Any) -> int:
    return value if isinstance(value, int) else 0


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


async def _sse_data(response: httpx2.Response) -> AsyncIterator[str]:
    """The `data` of each server-sent event (multi-line data joined), up to `[DONE]`.

    The body is read to its end even after `[DONE]`, so the connection goes back to the pool.
    """
    lines: list[str] = []
    done = False
    async for line in response.aiter_lines():
        if done:
            continue
        if not line:
            if lines:
                data = "\n".join(lines)
                lines = []
                if data == "[DONE]":
                    done = True
                    continue
                yield data
            continue
        if line.startswith("data:"):
            lines.append(line[5:].removeprefix(" "))
    if not done and lines and (data := "\n".join(lines)) != "[DONE]":
        yield data


class ChatCompletionsModel(Model):
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

    def __init__(
        self,
        info: ModelInfo,
        *,
        api_key: str,
        endpoint: str,
        rate_limit: tuple[EndpointKey, RateLimits],
        headers: Mapping[str, str] | None = None,
        streaming: bool = True,
    ) -> None:
        super().__init__(info)
        self.streaming = streaming
        self.base_url = endpoint.rstrip("/") + "/"
        """The endpoint as errors and the price catalogue see it (one trailing slash)."""
        self._url = f"{self.base_url}chat/completions"
        self._client = model_http_client(headers, rate_limit=rate_limit)
        self._headers = {"Authorization": f"Bearer {api_key}", "Accept": "application/json"}
        self._conversions: dict[str | None, ChatConversation] = {}

    @property
    def lifecycle(self) -> ModelLifecycle | None:
        """The built-in table's, else (for OpenAI's own endpoint) pydantic-ai's deprecation catalogue."""
        return super().lifecycle or (
            _openai_catalogue(self.info.id) if self.info.provider == "openai" else None
        )

    def _conversion(self, session_id: str | None) -> ChatConversation:
        """The conversion kept for one session's requests (a model may serve several sessions)."""
        conversion = self._conversions.pop(session_id, None) or ChatConversation(self.info)
        self._conversions[session_id] = conversion  # most recent last
        while len(self._conversions) > _KEPT_CONVERSIONS:
            del self._conversions[next(iter(self._conversions))]
        return conversion

    async def aclose(self) -> None:
        """Close this model's HTTP client (the pooled connections belong to their loop)."""
        await self._client.aclose()

    async def stream(
        self, context: LlmContext, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        """Stream one reply; see [`Model.stream`][corral.llm.Model.stream]."""
        partial = AssistantMessage(
            content=[], api=pi_api_name(self.info), provider=self.info.provider, model=self.info.id
        )
        reply = _Reply(partial)
        failure: BaseException | None = None
        answered = False
        try:
            messages = self._conversion(options.session_id).convert(context)
            body = request_body(self.info, messages, context.tools, options, stream=self.streaming)
            request = self._client.build_request(
                "POST",
                self._url,
                content=encode_body(body),
                headers={**self._headers, "Content-Type": "application/json"},
            )
            response = await self._send(request)
            try:
                if response.status_code >= 400:
                    await response.aread()
                    raise ModelHTTPError(response.status_code, body=_error_body(response))
                if self.streaming:
                    async for data in self._read(_sse_data(response)):
                        events = reply.chunk(_json(data))
                        if not answered:
                            # The reply starts with its first chunk (an error there is the only event).
                            yield StartEvent(partial=partial)
                            answered = True
                        for event in events:
                            yield event
                    if not answered:
                        raise ModelResponseError("Streamed response ended without content or tool calls")
                else:
                    whole = _json((await self._read_body(response)).decode())
                    events = reply.whole(whole)
                    yield StartEvent(partial=partial)
                    answered = True
                    for event in events:
                        yield event
            finally:
                await response.aclose()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            failure = exc
        if failure is None:
            for event in reply.end():
                yield event
        if answered:
            usage = reply.usage
            partial.usage = Usage(
                input=max(0, usage["input"] - usage["cache_read"]),
                output=usage["output"],
                cache_read=usage["cache_read"],
                total_tokens=max(0, usage["input"] - usage["cache_read"])
                + usage["output"]
                + usage["cache_read"],
            )
        partial.usage = calculate_cost(self.info, partial.usage, endpoint=self.base_url)
        if failure is None and reply.finish_reason in ("content_filter", "error"):
            failure = RuntimeError(f"Provider stopped the reply: {reply.finish_reason}")
        if failure is not None:
            partial.stop_reason = "error"
            partial.error_message = error_message(failure)
            hint = unreachable_endpoint(failure, self.base_url) or endpoint_hint(
                failure, api=self.info.api, provider=self.info.provider, base_url=self.base_url
            )
            if hint is not None:
                partial.error_message = f"{partial.error_message.rstrip('.')}: {hint}"
            yield ErrorEvent(reason="error", error=partial)
            return
        reason: Literal["stop", "length", "toolUse"]
        if reply.finish_reason == "length":
            reason = "length"
        elif partial.tool_calls:
            reason = "toolUse"
        else:
            reason = "stop"
        partial.stop_reason = reason
        yield DoneEvent(reason=reason, message=partial)

    async def _send(self, request: httpx2.Request) -> httpx2.Response:
        try:
            return await self._client.send(request, stream=True)
        except httpx2.TimeoutException:
            raise ModelConnectionError("Request timed out.") from None
        except httpx2.HTTPError:
            raise ModelConnectionError("Connection error.") from None

    async def _read(self, data: AsyncIterator[str]) -> AsyncIterator[str]:
        """`data`, with a broken or timed-out connection as `ModelConnectionError`."""
        try:
            async for item in data:
                yield item
        except httpx2.TimeoutException:
            raise ModelConnectionError("Request timed out.") from None
        except httpx2.HTTPError:
            raise ModelConnectionError("Connection error.") from None

    async def _read_body(self, response: httpx2.Response) -> bytes:
        try:
            return await response.aread()
        except httpx2.TimeoutException:
            raise ModelConnectionError("Request timed out.") from None
        except httpx2.HTTPError:
            raise ModelConnectionError("Connection error.") from None


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        raise ModelResponseError(
            f"Chat Completions sent something that is not JSON: {text[:200]!r}"
        ) from None


def _error_body(response: httpx2.Response) -> Any:
    """An error response's body as the SDKs kept it: the `error` object when there is one, else the text."""
    try:
        body = response.json()
    except ValueError:
        return response.text
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return body["error"]
    return body


@functools.cache
def _openai_catalogue(model_id: str) -> ModelLifecycle | None:
    """The deprecation pydantic-ai's catalogue lists for an OpenAI model id (imports pydantic-ai; cached)."""
    try:
        from pydantic_ai.providers._model_deprecations import OPENAI_MODEL_DEPRECATIONS
    except ImportError:
        return None
    deprecation = OPENAI_MODEL_DEPRECATIONS.get(model_id)
    if deprecation is None:
        return None
    return ModelLifecycle.from_deprecation(deprecation)
