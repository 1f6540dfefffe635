"""What corral's own OpenAI clients share: `OpenAIWireModel`, one request and its reply as events.

The Chat Completions client (`_chat`) and the Responses client (`_responses`) differ only in
the body they send and in how they read a reply; a reader (`ReplyReader`) turns the reply's
events (or its one JSON object, when the model was made with `streaming=False`) into corral's
events. The rest is here: the request goes out through the shared pools and rate limiter
(`_http`), an error status becomes `ModelHTTPError`, a broken or timed-out connection
`ModelConnectionError`, and the reply ends with a `DoneEvent` carrying its usage, cost and
stop reason, or an `ErrorEvent` whose one-line message keeps the status and the provider's
message (`_errors`). Nothing raises but cancellation, which closes the response on its way out.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Literal, Protocol, TypeVar

import httpx2

from corral.llm._cost import calculate_cost
from corral.llm._lifecycle import ModelLifecycle
from corral.llm._messages import AssistantMessage, TextContent, ThinkingContent, Usage
from corral.llm._model import (
    AssistantMessageEvent,
    DoneEvent,
    ErrorEvent,
    LlmContext,
    Model,
    ModelInfo,
    StartEvent,
    StreamOptions,
    TextEndEvent,
    ThinkingEndEvent,
    ToolCallEndEvent,
)
from corral.llm._ratelimit import EndpointKey, RateLimits

from ._chat_request import encode_body
from ._errors import (
    ModelConnectionError,
    ModelHTTPError,
    ModelResponseError,
    endpoint_hint,
    error_message,
    unreachable_endpoint,
)
from ._http import model_http_client
from ._text import parse_arguments, pi_api_name

__all__ = [
    "BlockReply",
    "OpenAIWireModel",
    "ReplyReader",
    "StreamedBlock",
    "count",
    "error_body",
    "parse_json",
    "reply_end",
    "sse_data",
]

_KEPT_CONVERSIONS = 8
"""Sessions whose converted history a model keeps (the least recently used one goes first)."""


class ReplyReader(Protocol):
    """One reply being read into `partial` (the message the events carry)."""

    usage: dict[str, int]
    """`input` (cached tokens included), `output` and `cache_read`, as the reply counted them."""
    finish_reason: str | None
    """`length`, `content_filter`, `error`, or anything else (a normal end)."""

    def chunk(self, data: Any) -> list[AssistantMessageEvent]:
        """The events of one streamed event's JSON data."""
        ...

    def whole(self, data: Any) -> list[AssistantMessageEvent]:
        """The events of a plain (not streamed) reply's JSON body."""
        ...

    def end(self) -> list[AssistantMessageEvent]:
        """End the block being streamed, if any."""
        ...


Conversion = TypeVar("Conversion")


@dataclass
class StreamedBlock:
    """The content block of a reply being streamed."""

    content_index: int
    key: Any
    """What feeds it (each reader has its own keys: a reasoning field, an output item, a call index)."""
    args: str = ""
    """A tool call's argument text so far."""


class BlockReply:
    """A reply read block by block into `partial`: one block streams at a time, and ends when
    another starts or the reply ends (`end`)."""

    def __init__(self, partial: AssistantMessage) -> None:
        self.partial = partial
        self.current: StreamedBlock | None = None
        self.finish_reason: str | None = None
        self.usage: dict[str, int] = {"input": 0, "output": 0, "cache_read": 0}

    def _call_ended(self, block: StreamedBlock) -> None:
        """A tool call's block ended (a reader that must ignore its late chunks remembers it)."""

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
        self._call_ended(block)
        content.arguments, content.raw_arguments = parse_arguments(block.args)
        return [ToolCallEndEvent(partial=self.partial, content_index=index, tool_call=content)]


async def sse_data(response: httpx2.Response) -> AsyncIterator[str]:
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


def count(value: Any) -> int:
    """A usage count from a reply (`0` when absent or not a whole number)."""
    return value if isinstance(value, int) else 0


def parse_json(text: str, api: str) -> Any:
    """`text` as JSON, or `ModelResponseError` naming the API that sent something else."""
    try:
        return json.loads(text)
    except ValueError:
        raise ModelResponseError(f"{api} sent something that is not JSON: {text[:200]!r}") from None


def error_body(response: httpx2.Response) -> Any:
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


def reply_end(
    info: ModelInfo,
    partial: AssistantMessage,
    failure: BaseException | None,
    finish_reason: str | None,
    *,
    base_url: str | None,
) -> DoneEvent | ErrorEvent:
    """The event that ends a reply: `ErrorEvent` for a failure (or a reply the provider stopped),
    its one-line message with a hint where one fits, else `DoneEvent` with the stop reason.

    Every provider model ends its replies here (corral's own clients and `PydanticAIModel`).
    """
    if failure is None and finish_reason in ("content_filter", "error"):
        failure = RuntimeError(f"Provider stopped the reply: {finish_reason}")
    if failure is not None:
        partial.stop_reason = "error"
        partial.error_message = error_message(failure)
        hint = unreachable_endpoint(failure, base_url) or endpoint_hint(
            failure, api=info.api, provider=info.provider, base_url=base_url
        )
        if hint is not None:
            partial.error_message = f"{partial.error_message.rstrip('.')}: {hint}"
        return ErrorEvent(reason="error", error=partial)
    reason: Literal["stop", "length", "toolUse"]
    if finish_reason == "length":
        reason = "length"
    elif partial.tool_calls:
        reason = "toolUse"
    else:
        reason = "stop"
    partial.stop_reason = reason
    return DoneEvent(reason=reason, message=partial)


class OpenAIWireModel(Model, Generic[Conversion]):
    """A corral model speaking an OpenAI API over HTTP itself; see the module docstring.

    Subclasses say what the API is called (`API_NAME`, for error messages), where requests go
    (`PATH`), how a session's conversation is kept (`_new_conversion`), the body of one request
    (`_body`) and how a reply is read (`_reader`).

    Args:
        info: The registry entry.
        api_key: Sent as `Authorization: Bearer`.
        endpoint: The base URL (`https://host/v1`); requests go to `<endpoint>/<PATH>`.
        rate_limit: The limiter's key and the provider's caps, for every request.
        headers: Extra HTTP headers sent with every request.
        streaming: Stream replies (default); `False` asks for the plain JSON response and
            replays it as events, for endpoints that cannot stream.
    """

    API_NAME = "OpenAI"
    PATH = ""

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
        self._url = f"{self.base_url}{self.PATH}"
        self._client = model_http_client(headers, rate_limit=rate_limit)
        self._headers = {"Authorization": f"Bearer {api_key}", "Accept": "application/json"}
        self._conversions: dict[str | None, Conversion] = {}

    # --- what a subclass says ----------------------------------------------------

    def _new_conversion(self) -> Conversion:
        raise NotImplementedError

    def _body(self, conversion: Conversion, context: LlmContext, options: StreamOptions) -> dict[str, Any]:
        raise NotImplementedError

    def _reader(self, partial: AssistantMessage) -> ReplyReader:
        raise NotImplementedError

    # --- shared --------------------------------------------------------------------

    @property
    def lifecycle(self) -> ModelLifecycle | None:
        """The built-in table's, else (for OpenAI's own endpoint) pydantic-ai's deprecation catalogue."""
        return super().lifecycle or (
            _openai_catalogue(self.info.id) if self.info.provider == "openai" else None
        )

    def _conversion(self, session_id: str | None) -> Conversion:
        """The conversion kept for one session's requests (a model may serve several sessions)."""
        conversion = self._conversions.pop(session_id, None) or self._new_conversion()
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
        reply = self._reader(partial)
        failure: BaseException | None = None
        answered = False
        try:
            body = self._body(self._conversion(options.session_id), context, options)
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
                    raise ModelHTTPError(response.status_code, body=error_body(response))
                if self.streaming:
                    async for data in self._read(sse_data(response)):
                        events = reply.chunk(parse_json(data, self.API_NAME))
                        if not answered:
                            # The reply starts with its first event (an error there is the only event).
                            yield StartEvent(partial=partial)
                            answered = True
                        for event in events:
                            yield event
                    if not answered:
                        raise ModelResponseError("Streamed response ended without content or tool calls")
                else:
                    whole = parse_json((await self._read_body(response)).decode(), self.API_NAME)
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
            uncached = max(0, usage["input"] - usage["cache_read"])
            partial.usage = Usage(
                input=uncached,
                output=usage["output"],
                cache_read=usage["cache_read"],
                total_tokens=uncached + usage["output"] + usage["cache_read"],
            )
        partial.usage = calculate_cost(self.info, partial.usage, endpoint=self.base_url)
        yield reply_end(self.info, partial, failure, reply.finish_reason, base_url=self.base_url)

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
