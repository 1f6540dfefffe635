"""A Responses API request body from an `LlmContext`, without any SDK.

`ResponsesConversation` turns a conversation into Responses input items, request after
request converting only what is new; `request_body` adds the model, the reply cap, the
reasoning effort, the prompt cache key and the tools. The body is the one pydantic-ai's
`OpenAIResponsesModel` sent before corral had its own client, byte for byte, key order
included (`tests/llm/golden/openai_responses.json` pins it), for the models that client
serves (`corral.llm._openai_reasoning.serves_model`); the rules, in Pi's terms:

- The system prompt is the first item (`role: system`). User messages and tool results
  follow in order; a user message of blocks becomes `input_text` / `input_image` parts
  (images as data URLs, `detail: auto`), a tool result a `function_call_output` whose
  output is its text, or, when it holds images, its text and images as parts.
- Each assistant reply gives one item per block, in order: text as an `assistant`
  message, a tool call as a `function_call` (arguments as compact JSON). Errored and
  aborted replies are left out, and a tool call that never got a result gets
  `No result provided` before the next user message (or at the end).
- Thinking goes back as `<think>` text only to the model that produced it; another
  model's thinking is sent as plain text, or dropped when empty or redacted. (Reasoning
  items with their ids and encrypted content go back only to OpenAI's reasoning models,
  which keep pydantic-ai's client: see `_openai_reasoning`.)
- Tool schemas are sent as pydantic-ai's OpenAI transformer (not strict) left them, the
  same as for Chat Completions (`_chat_request.tool_schema`).

A Responses thinking block's signature is the reasoning item as JSON
(`{"type": "reasoning", "id": ..., "encrypted_content": ...}`), as Pi stores it.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any

from corral.llm._messages import (
    AssistantMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolResultMessage,
    UserMessage,
)
from corral.llm._model import ModelInfo, StreamOptions, ToolDefinition

from ._chat_request import tool_schema
from ._text import (
    DEFAULT_MAX_TOKENS_CAP,
    NO_RESULT_TEXT,
    KeptConversion,
    MessageFeed,
    pi_api_name,
    sanitize_surrogates,
    sanitize_value,
)

__all__ = [
    "ResponsesConversation",
    "parse_responses_signature",
    "request_body",
    "responses_reasoning_signature",
]

Item = dict[str, Any]


def responses_reasoning_signature(item_id: str | None, encrypted: str | None) -> str | None:
    """The thinking signature stored for an OpenAI Responses reasoning item."""
    if item_id is None and encrypted is None:
        return None
    item: dict[str, Any] = {"type": "reasoning", "id": item_id, "summary": []}
    if encrypted is not None:
        item["encrypted_content"] = encrypted
    return json.dumps(item, separators=(",", ":"))


def parse_responses_signature(signature: str) -> tuple[str | None, str | None]:
    """A stored signature's reasoning item id and encrypted content (an opaque one is the content)."""
    try:
        item = json.loads(signature)
    except ValueError:
        return None, signature
    if not isinstance(item, dict):
        return None, signature
    item_id = item.get("id")
    encrypted = item.get("encrypted_content")
    return (
        item_id if isinstance(item_id, str) else None,
        encrypted if isinstance(encrypted, str) else None,
    )


# --- content ------------------------------------------------------------------


def _image_part(block: ImageContent) -> Item:
    data = base64.b64encode(base64.b64decode(block.data)).decode()
    return {"image_url": f"data:{block.mime_type};base64,{data}", "type": "input_image", "detail": "auto"}


def _user_item(message: UserMessage) -> Item | None:
    if isinstance(message.content, str):
        return {"role": "user", "content": sanitize_surrogates(message.content)}
    if not message.content:
        return None
    parts = [
        {"text": sanitize_surrogates(block.text), "type": "input_text"}
        if isinstance(block, TextContent)
        else _image_part(block)
        for block in message.content
    ]
    return {"role": "user", "content": parts}


def _tool_output(message: ToolResultMessage) -> Item:
    text = sanitize_surrogates(message.text)
    images = [block for block in message.content if isinstance(block, ImageContent)]
    output: Any = text
    if images:
        output = [
            *([{"type": "input_text", "text": text}] if text else []),
            *(_image_part(image) for image in images),
        ]
    return {"type": "function_call_output", "call_id": message.tool_call_id, "output": output}


def _no_result(call_id: str) -> Item:
    return {"type": "function_call_output", "call_id": call_id, "output": NO_RESULT_TEXT}


# --- the conversation ---------------------------------------------------------


class _Converter(MessageFeed):
    """Responses input items for one model, fed the conversation message by message."""

    def __init__(self, info: ModelInfo) -> None:
        self.info = info
        self.api = pi_api_name(info)
        self.items: list[Item] = []
        self.open_calls: list[str] = []
        """Tool calls of the last reply still waiting for a result."""

    def same_source(self, message: AssistantMessage) -> bool:
        """Pi's `isSameModel`: the reply came from this provider, API and model id."""
        return (
            message.provider == self.info.provider
            and message.api == self.api
            and message.model == self.info.id
        )

    def close_open_calls(self) -> None:
        self.items.extend(_no_result(call_id) for call_id in self.open_calls)
        self.open_calls = []

    def user(self, message: UserMessage) -> None:
        self.close_open_calls()
        item = _user_item(message)
        if item is not None:
            self.items.append(item)

    def tool_result(self, message: ToolResultMessage) -> None:
        if message.tool_call_id in self.open_calls:
            self.open_calls.remove(message.tool_call_id)
        self.items.append(_tool_output(message))

    def assistant(self, message: AssistantMessage) -> None:
        if message.stop_reason in ("error", "aborted"):
            return
        same = self.same_source(message)
        items: list[Item] = []
        kept = False
        """Whether pydantic-ai kept the reply (a part came of it, even one that sends nothing)."""
        for block in message.content:
            if isinstance(block, TextContent):
                if block.text:
                    kept = True
                    items.append({"role": "assistant", "content": sanitize_surrogates(block.text)})
            elif isinstance(block, ThinkingContent):
                thinking = sanitize_surrogates(block.thinking)
                if same:
                    kept = kept or bool(thinking) or block.thinking_signature is not None
                    if thinking:
                        items.append({"role": "assistant", "content": f"<think>\n{thinking}\n</think>"})
                elif not block.redacted and thinking.strip():
                    kept = True
                    items.append({"role": "assistant", "content": thinking})
            else:
                kept = True
                arguments = json.dumps(
                    sanitize_value(dict(block.arguments)), ensure_ascii=False, separators=(",", ":")
                )
                items.append(
                    {"name": block.name, "arguments": arguments, "call_id": block.id, "type": "function_call"}
                )
        if not kept:
            return
        self.close_open_calls()
        self.items.extend(items)
        self.open_calls = [block.id for block in message.tool_calls]

    def request_items(self) -> list[Item]:
        """The request's items: those so far, then results for calls still open; never empty."""
        items = [*self.items, *(_no_result(call_id) for call_id in self.open_calls)]
        return items or [{"role": "user", "content": ""}]


class ResponsesConversation(KeptConversion[_Converter, list[Item]]):
    """One conversation's Responses input items, request after request, converting only what is new
    (see `KeptConversion`)."""

    def _fresh(self, system_prompt: str) -> _Converter:
        converter = _Converter(self.info)
        if system_prompt:
            converter.items.append({"role": "system", "content": sanitize_surrogates(system_prompt)})
        return converter

    def _request(self, converter: _Converter) -> list[Item]:
        return converter.request_items()


# --- the body -----------------------------------------------------------------


def request_body(
    info: ModelInfo,
    items: list[Item],
    tools: Sequence[ToolDefinition],
    options: StreamOptions,
    *,
    stream: bool,
) -> dict[str, Any]:
    """The whole request body, keys in the order pydantic-ai's client sent them.

    The reply cap is `options.max_tokens`, else `min(info.max_tokens, 32000)`; OpenAI's own
    endpoint gets the session id as `prompt_cache_key`; a thinking level other than `off`
    becomes `reasoning` with that effort (`xhigh` only where the model has it, else `high`) and
    an automatic summary; a `tool_choice` naming the only tool offered is `required`, one of
    several names that function.

    Raises:
        ValueError: `options.tool_choice` names a tool that is not offered.
    """
    max_tokens = (
        options.max_tokens if options.max_tokens is not None else min(info.max_tokens, DEFAULT_MAX_TOKENS_CAP)
    )
    body: dict[str, Any] = {
        "model": info.id,
        "stream": stream,
        "input": items,
        "max_output_tokens": max_tokens,
    }
    if options.session_id and info.provider == "openai":
        body["prompt_cache_key"] = options.session_id
    level = options.thinking
    if level != "off":
        effort = level if (level != "xhigh" or info.supports_xhigh) else "high"
        body["reasoning"] = {"effort": effort, "summary": "auto"}
    names = [tool.name for tool in tools]
    if options.tool_choice is not None and options.tool_choice not in names:
        known = ", ".join(repr(name) for name in names) or "none"
        raise ValueError(
            f"Invalid tool names in `tool_choice`: {{{options.tool_choice!r}}}. Known tools: {known}"
        )
    if tools:
        if options.tool_choice is None:
            body["tool_choice"] = "auto"
        elif set(names) == {options.tool_choice}:
            body["tool_choice"] = "required"
        else:
            body["tool_choice"] = {"type": "function", "name": options.tool_choice}
        body["tools"] = [
            {
                "name": tool.name,
                "parameters": tool_schema(tool.parameters),
                "type": "function",
                "description": tool.description or "",
                "strict": False,
            }
            for tool in tools
        ]
    return body
