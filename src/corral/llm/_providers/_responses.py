"""`ResponsesModel`: corral's own client for the OpenAI Responses API (`openai-responses`).

It imports no SDK: the body comes from `_responses_request`, the request and the reply's
ending are `_wire`'s (shared with the Chat Completions client), and the reply — server-sent
events, or one JSON object when the model was made with `streaming=False` — becomes corral's
events here. That keeps pydantic-ai and the openai SDK off the way to a Responses model's
first request. It serves the models `corral.llm._openai_reasoning.serves_model` accepts; OpenAI's reasoning models keep
pydantic-ai's client (`_adapter`), whose requests depend on its per-model profile.

Reading a reply, as pydantic-ai's `OpenAIResponsesModel` read it (the events of recorded
replies are pinned by `tests/llm/golden/openai_responses.json`):

- Blocks follow the output items: a reasoning summary part is a thinking block (each
  summary part its own), an output text part a text block (started by its first delta),
  a `function_call` item a tool call from `response.output_item.added` on, its
  arguments streamed by `response.function_call_arguments.delta`. A block ends when
  another starts or the reply ends.
- A thinking block's signature is the reasoning item as JSON: its id, and the encrypted
  reasoning once `response.output_item.done` brings it.
- `response.completed` and `response.incomplete` carry the usage (`input_tokens` includes
  the cached ones, which corral counts apart); `incomplete_details.reason` gives the stop
  (`max_output_tokens` is `length`, `content_filter` an error).
- `response.failed` and an `error` event fail the reply as a `500` with the provider's
  message and code, keeping what streamed so far (and no usage).
"""

from __future__ import annotations

import uuid
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

from ._errors import ModelHTTPError, ModelResponseError
from ._responses_request import ResponsesConversation, request_body, responses_reasoning_signature
from ._text import parse_partial_arguments
from ._wire import BlockReply, OpenAIWireModel, StreamedBlock, count

__all__ = ["ResponsesModel"]

_FINISH_REASONS: dict[str, str] = {
    "max_output_tokens": "length",
    "content_filter": "content_filter",
    "completed": "stop",
    "cancelled": "error",
    "failed": "error",
}
"""A response's `incomplete_details.reason` (else its `status`), as the reply's outcome."""


class _Reply(BlockReply):
    """One Responses reply being read: `partial` kept current, and the events it makes.

    A block's key is (`reasoning`, item id, summary index), (`text`, item id, content index) or
    (`call`, item id, 0).
    """

    def __init__(self, partial: AssistantMessage) -> None:
        super().__init__(partial)
        self.reasoning: dict[str, int] = {}
        """Reasoning item id → the content index of its first thinking block (the one signed)."""

    # --- blocks ------------------------------------------------------------------

    def _start(
        self, kind: Literal["text", "thinking", "toolCall"], key: tuple[str, str, int], **fields: Any
    ) -> list[AssistantMessageEvent]:
        events = self.end()
        index = len(self.partial.content)
        self.current = StreamedBlock(index, key)
        if kind == "text":
            self.partial.content.append(TextContent(text=""))
            events.append(TextStartEvent(partial=self.partial, content_index=index))
        elif kind == "thinking":
            item_id = key[1]
            self.partial.content.append(
                ThinkingContent(thinking="", thinking_signature=responses_reasoning_signature(item_id, None))
            )
            self.reasoning.setdefault(item_id, index)
            events.append(ThinkingStartEvent(partial=self.partial, content_index=index))
        else:
            self.partial.content.append(ToolCall(id=fields["call_id"], name=fields["name"]))
            events.append(ToolCallStartEvent(partial=self.partial, content_index=index))
        return events

    def _delta(self, key: tuple[str, str, int], text: str, **start: Any) -> list[AssistantMessageEvent]:
        """`text` added to the block `key` names, started first when it is not the one streaming."""
        events: list[AssistantMessageEvent] = []
        if self.current is None or self.current.key != key:
            kind: Literal["text", "thinking", "toolCall"] = (
                "text" if key[0] == "text" else "thinking" if key[0] == "reasoning" else "toolCall"
            )
            events = self._start(kind, key, **start)
        if not text:
            return events
        block = self.current
        assert block is not None
        content = self.partial.content[block.content_index]
        index = block.content_index
        if isinstance(content, TextContent):
            content.text += text
            events.append(TextDeltaEvent(partial=self.partial, content_index=index, delta=text))
        elif isinstance(content, ThinkingContent):
            content.thinking += text
            events.append(ThinkingDeltaEvent(partial=self.partial, content_index=index, delta=text))
        else:
            block.args += text
            content.arguments = parse_partial_arguments(block.args, content.arguments)
            events.append(ToolCallDeltaEvent(partial=self.partial, content_index=index, delta=text))
        return events

    def _sign(self, item: dict[str, Any]) -> None:
        """Put a finished reasoning item's encrypted content in its first thinking block's signature."""
        item_id = item.get("id")
        encrypted = item.get("encrypted_content")
        index = self.reasoning.get(item_id) if isinstance(item_id, str) else None
        if index is None or not isinstance(encrypted, str):
            return
        block = self.partial.content[index]
        assert isinstance(block, ThinkingContent)
        block.thinking_signature = responses_reasoning_signature(item_id, encrypted)

    # --- what a reply holds ----------------------------------------------------------

    def _response(self, response: Any) -> None:
        """A finished response's usage and outcome."""
        if not isinstance(response, dict):
            return
        usage = response.get("usage")
        if isinstance(usage, dict):
            details = usage.get("input_tokens_details")
            cached = details.get("cached_tokens") if isinstance(details, dict) else None
            self.usage = {
                "input": count(usage.get("input_tokens")),
                "output": count(usage.get("output_tokens")),
                "cache_read": count(cached),
            }
        details = response.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, dict) else response.get("status")
        if isinstance(reason, str):
            self.finish_reason = _FINISH_REASONS.get(reason)

    def chunk(self, data: Any) -> list[AssistantMessageEvent]:
        """The events of one streamed event."""
        if not isinstance(data, dict):
            raise ModelResponseError(f"Responses event is not an object: {data!r}")
        kind = data.get("type")
        if kind == "response.output_text.delta":
            key = ("text", str(data.get("item_id")), count(data.get("content_index")))
            return self._delta(key, str(data.get("delta") or ""))
        if kind in ("response.reasoning_summary_text.delta", "response.reasoning_summary_part.added"):
            key = ("reasoning", str(data.get("item_id")), count(data.get("summary_index")))
            part = data.get("part")
            text = (
                data.get("delta")
                if kind.endswith(".delta")
                else part.get("text")
                if isinstance(part, dict)
                else ""
            )
            return self._delta(key, str(text or ""))
        if kind == "response.function_call_arguments.delta":
            key = ("call", str(data.get("item_id")), 0)
            if self.current is None or self.current.key != key:
                return []  # arguments of a call whose start never came
            return self._delta(key, str(data.get("delta") or ""))
        if kind == "response.output_item.added":
            item = data.get("item")
            if isinstance(item, dict) and item.get("type") == "function_call":
                call_id = item.get("call_id") or f"pyd_ai_{uuid.uuid4().hex}"
                key = ("call", str(item.get("id")), 0)
                return self._delta(
                    key, str(item.get("arguments") or ""), call_id=call_id, name=str(item.get("name") or "")
                )
            return []
        if kind == "response.output_item.done":
            item = data.get("item")
            if isinstance(item, dict):
                if item.get("type") == "reasoning":
                    self._sign(item)
                elif item.get("type") == "function_call":
                    return self._call_done(item)
            return []
        if kind in ("response.completed", "response.incomplete"):
            self._response(data.get("response"))
            return []
        if kind == "response.failed":
            response = data.get("response")
            error = response.get("error") if isinstance(response, dict) else None
            raise ModelHTTPError(500, body=error if isinstance(error, dict) else "Response failed")
        if kind == "error":
            raise ModelHTTPError(
                500,
                body={"code": data.get("code"), "message": data.get("message"), "param": data.get("param")},
            )
        return []

    def _call_done(self, item: dict[str, Any]) -> list[AssistantMessageEvent]:
        """A finished call: its arguments, when none streamed."""
        key = ("call", str(item.get("id")), 0)
        block = self.current
        arguments = item.get("arguments")
        if block is not None and block.key == key and not block.args and isinstance(arguments, str):
            return self._delta(key, arguments)
        return []

    def whole(self, data: Any) -> list[AssistantMessageEvent]:
        """The events of a plain (not streamed) response."""
        if not isinstance(data, dict) or not isinstance(data.get("output"), list):
            raise ModelResponseError("Responses response has no output")
        if isinstance(data.get("error"), dict):
            raise ModelHTTPError(500, body=data["error"])
        self._response(data)
        events: list[AssistantMessageEvent] = []
        for item in data["output"]:
            if not isinstance(item, dict):
                continue
            item_id = str(item.get("id"))
            kind = item.get("type")
            if kind == "reasoning":
                for index, summary in enumerate(item.get("summary") or ()):
                    text = summary.get("text") if isinstance(summary, dict) else None
                    events.extend(self._delta(("reasoning", item_id, index), str(text or "")))
                self._sign(item)
            elif kind == "message":
                for index, part in enumerate(item.get("content") or ()):
                    if isinstance(part, dict) and part.get("type") == "output_text":
                        events.extend(self._delta(("text", item_id, index), str(part.get("text") or "")))
            elif kind == "function_call":
                events.extend(
                    self._delta(
                        ("call", item_id, 0),
                        str(item.get("arguments") or ""),
                        call_id=item.get("call_id") or f"pyd_ai_{uuid.uuid4().hex}",
                        name=str(item.get("name") or ""),
                    )
                )
        return events + self.end()


class ResponsesModel(OpenAIWireModel[ResponsesConversation]):
    """A corral model speaking the OpenAI Responses API over HTTP; see the module docstring.

    Args:
        info: The registry entry.
        api_key: Sent as `Authorization: Bearer`.
        endpoint: The base URL (`https://host/v1`); requests go to `<endpoint>/responses`.
        rate_limit: The limiter's key and the provider's caps, for every request.
        headers: Extra HTTP headers sent with every request.
        streaming: Stream replies (default); `False` asks for the plain JSON response and
            replays it as events, for endpoints that cannot stream.
    """

    API_NAME = "Responses"
    PATH = "responses"

    def _new_conversion(self) -> ResponsesConversation:
        return ResponsesConversation(self.info)

    def _body(
        self, conversion: ResponsesConversation, context: LlmContext, options: StreamOptions
    ) -> dict[str, Any]:
        items = conversion.convert(context)
        return request_body(self.info, items, context.tools, options, stream=self.streaming)

    def _reader(self, partial: AssistantMessage) -> _Reply:
        return _Reply(partial)
