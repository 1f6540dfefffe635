"""A Chat Completions request body from an `LlmContext`, without any SDK.

`ChatConversation` turns a conversation into Chat Completions messages the way the
other wire APIs' conversion (`_convert`) does, request after request converting only
what is new; `request_body` adds the model, the reply cap, the reasoning effort, the
tools and the stream options. The body is the one pydantic-ai's `OpenAIChatModel`
sent before corral had its own client, byte for byte, key order included
(`tests/llm/golden/openai_chat.json` pins it); the rules, in Pi's terms:

- Consecutive user messages and tool results form one request; each assistant reply
  is one `assistant` message (its texts joined by a blank line; `content: null` when it
  only calls tools, `""` for an OpenAI-compatible server, which may reject `null`).
  Errored and aborted replies are left out, and a tool call that never got a result
  gets `No result provided`.
- Reasoning goes back only to the model that produced it, in the field it arrived in
  (`reasoning_content`, `reasoning`), joined; other providers' thinking is sent as text.
- An image a tool returned cannot travel in a `tool` message: the message says
  `See file <id>.` and the image follows, framed as `<pyai:tool_result ...>`, in one
  user message after the request's other messages (the id is the first six hex digits
  of the image's SHA-1, as pydantic-ai named it).
- A user message of text only goes to a compatible server as one string.
- Tool schemas are sent as pydantic-ai's OpenAI transformer (not strict) left them:
  `title`, `$schema` and `discriminator` dropped, `$defs` last, single-member unions
  merged into their parent (`tool_schema`).
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
from collections.abc import Sequence
from copy import deepcopy
from typing import Any

from corral.llm._messages import (
    AssistantMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from corral.llm._model import ModelInfo, StreamOptions, ToolDefinition

from ._text import (
    DEFAULT_MAX_TOKENS_CAP,
    NO_RESULT_TEXT,
    KeptConversion,
    MessageFeed,
    pi_api_name,
    sanitize_surrogates,
    sanitize_value,
)

__all__ = ["ChatConversation", "encode_body", "request_body", "tool_schema"]

_REASONING_FIELDS = ("reasoning", "reasoning_content")
"""The reasoning fields sent back as fields; reasoning recorded under another name goes back as `<think>` text."""

_TOOL_RESULT_TAG = "pyai:tool_result"

Message = dict[str, Any]


def encode_body(body: dict[str, Any]) -> bytes:
    """The request body as sent: compact JSON, UTF-8, non-ASCII characters as they are."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


# --- user content -------------------------------------------------------------


def _image_bytes(block: ImageContent) -> bytes:
    return base64.b64decode(block.data)


def _image_part(block: ImageContent) -> Message:
    data = base64.b64encode(_image_bytes(block)).decode()
    return {"image_url": {"url": f"data:{block.mime_type};base64,{data}"}, "type": "image_url"}


def _text_part(text: str) -> Message:
    return {"text": text, "type": "text"}


def _user_message(message: UserMessage, *, compatible: bool) -> Message | None:
    if isinstance(message.content, str):
        return {"role": "user", "content": sanitize_surrogates(message.content)}
    blocks = message.content
    if not blocks:
        return None
    if compatible and all(isinstance(block, TextContent) for block in blocks):
        texts = [sanitize_surrogates(block.text) for block in blocks if isinstance(block, TextContent)]
        return {"role": "user", "content": "\n".join(texts)}
    parts = [
        _text_part(sanitize_surrogates(block.text)) if isinstance(block, TextContent) else _image_part(block)
        for block in blocks
    ]
    return {"role": "user", "content": parts}


# --- the conversation ---------------------------------------------------------


class _Request:
    """The messages of one request turn (system prompt, user messages, tool results) being gathered."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.files: list[Message] = []
        """Images tools returned, framed, for the user message that ends the turn."""

    def finish(self) -> list[Message]:
        if not self.files:
            return list(self.messages)
        return [*self.messages, {"role": "user", "content": list(self.files)}]


class _Converter(MessageFeed):
    """Chat Completions messages for one model, fed the conversation message by message."""

    def __init__(self, info: ModelInfo) -> None:
        self.info = info
        self.api = pi_api_name(info)
        self.compatible = info.provider != "openai"
        self.done: list[Message] = []
        self.request = _Request()
        self.open_calls: dict[str, str] = {}
        """Tool calls of the last reply still waiting for a result: id → name."""

    def same_source(self, message: AssistantMessage) -> bool:
        """Pi's `isSameModel`: the reply came from this provider, API and model id."""
        return (
            message.provider == self.info.provider
            and message.api == self.api
            and message.model == self.info.id
        )

    def flush(self) -> None:
        self.done.extend(self.request.finish())
        self.request = _Request()

    def synthetic_results(self) -> list[Message]:
        return [
            {"role": "tool", "tool_call_id": call_id, "content": NO_RESULT_TEXT}
            for call_id in self.open_calls
        ]

    def user(self, message: UserMessage) -> None:
        self.request.messages.extend(self.synthetic_results())
        self.open_calls = {}
        mapped = _user_message(message, compatible=self.compatible)
        if mapped is not None:
            self.request.messages.append(mapped)

    def tool_result(self, message: ToolResultMessage) -> None:
        self.open_calls.pop(message.tool_call_id, None)
        text = sanitize_surrogates(message.text)
        images = [block for block in message.content if isinstance(block, ImageContent)]
        if not images:
            content = text
        else:
            items: list[str] = [text] if text else []
            for image in images:
                file_id = hashlib.sha1(_image_bytes(image), usedforsecurity=False).hexdigest()[:6]
                items.append(f"See file {file_id}.")
                attributes = (
                    f' tool_name="{html.escape(message.tool_name)}"'
                    f' tool_call_id="{html.escape(message.tool_call_id)}" file_id="{file_id}"'
                )
                self.request.files.extend(
                    [
                        _text_part(f"<{_TOOL_RESULT_TAG}{attributes}>"),
                        _image_part(image),
                        _text_part(f"</{_TOOL_RESULT_TAG}>"),
                    ]
                )
            content = "[" + ",".join(json.dumps(item, ensure_ascii=False) for item in items) + "]"
        self.request.messages.append(
            {"role": "tool", "tool_call_id": message.tool_call_id, "content": content}
        )

    def assistant(self, message: AssistantMessage) -> None:
        if message.stop_reason in ("error", "aborted"):
            return
        same = self.same_source(message)
        texts: list[str] = []
        reasoning: tuple[str, str] | None = None
        calls: list[Message] = []
        thinking_seen = False
        for block in message.content:
            if isinstance(block, TextContent):
                if block.text:
                    texts.append(sanitize_surrogates(block.text))
            elif isinstance(block, ThinkingContent):
                if same:
                    if not thinking_seen:
                        reasoning = self._reasoning(message)
                    thinking_seen = True
                else:
                    thinking = sanitize_surrogates(block.thinking)
                    if not block.redacted and thinking.strip():
                        texts.append(thinking)
            else:
                calls.append(self._tool_call(block))
        if not texts and not calls and reasoning is None:
            return
        if reasoning is not None and reasoning[0] not in _REASONING_FIELDS:
            # Recorded under a field no reply is read from: sent back as tagged text, first.
            if reasoning[1]:
                texts.insert(0, f"<think>\n{reasoning[1]}\n</think>")
            reasoning = None
        self.request.messages.extend(self.synthetic_results())
        self.flush()
        self.open_calls = {block.id: block.name for block in message.tool_calls}
        if calls and not texts and self.compatible:
            texts = [""]
        if not texts and not calls:
            return  # only reasoning: nothing Chat Completions would take
        mapped: Message = {"role": "assistant"}
        if reasoning is not None:
            mapped[reasoning[0]] = reasoning[1]
        mapped["content"] = "\n\n".join(texts) if texts else None
        if calls:
            mapped["tool_calls"] = calls
        self.done.append(mapped)

    def _reasoning(self, message: AssistantMessage) -> tuple[str, str] | None:
        """All of a same-model reply's thinking, joined, under the field its first block names."""
        blocks = [block for block in message.content if isinstance(block, ThinkingContent)]
        field = blocks[0].thinking_signature
        if not field:
            return None
        return field, sanitize_surrogates("\n".join(block.thinking for block in blocks))

    def _tool_call(self, block: ToolCall) -> Message:
        arguments = json.dumps(
            sanitize_value(dict(block.arguments)), ensure_ascii=False, separators=(",", ":")
        )
        return {"id": block.id, "type": "function", "function": {"name": block.name, "arguments": arguments}}

    def messages(self) -> list[Message]:
        """The request's messages: those done, then the turn being gathered (and results for open calls)."""
        tail = self.request.messages + self.synthetic_results()
        if tail or self.request.files:
            ending = _Request()
            ending.messages, ending.files = tail, self.request.files
            result = [*self.done, *ending.finish()]
        else:
            result = list(self.done)
        return result or [{"role": "user", "content": ""}]


class ChatConversation(KeptConversion[_Converter, list[Message]]):
    """One conversation's Chat Completions messages, request after request, converting only what is
    new (see `KeptConversion`); `convert` gives fresh dictionaries at the top level, shared below."""

    def _fresh(self, system_prompt: str) -> _Converter:
        converter = _Converter(self.info)
        if system_prompt:
            converter.request.messages.append(
                {"role": "system", "content": sanitize_surrogates(system_prompt)}
            )
        return converter

    def _request(self, converter: _Converter) -> list[Message]:
        return converter.messages()


# --- the body -----------------------------------------------------------------


def request_body(
    info: ModelInfo,
    messages: list[Message],
    tools: Sequence[ToolDefinition],
    options: StreamOptions,
    *,
    stream: bool,
) -> dict[str, Any]:
    """The whole request body, keys in the order pydantic-ai's client sent them.

    The reply cap is `options.max_tokens`, else `min(info.max_tokens, 32000)`, in the model's
    `reply_cap_field` (`both` sends `max_completion_tokens` and, last, `max_tokens`); a thinking
    level other than `off` becomes `reasoning_effort` (`xhigh` only where the model has it, else
    `high`); a `tool_choice` names one function.
    """
    max_tokens = (
        options.max_tokens if options.max_tokens is not None else min(info.max_tokens, DEFAULT_MAX_TOKENS_CAP)
    )
    body: dict[str, Any] = {"model": info.id, "stream": stream, "messages": messages}
    cap_field = info.reply_cap_field
    body["max_tokens" if cap_field == "max_tokens" else "max_completion_tokens"] = max_tokens
    level = options.thinking
    if level != "off":
        body["reasoning_effort"] = level if (level != "xhigh" or info.supports_xhigh) else "high"
    if stream:
        body["stream_options"] = {"include_usage": True}
    choice = (
        {"type": "function", "function": {"name": options.tool_choice}}
        if options.tool_choice is not None
        else None
    )
    if tools:
        body["tool_choice"] = choice or "auto"
        body["tools"] = [_tool(tool) for tool in tools]
    if cap_field == "both":
        body["max_tokens"] = max_tokens
    if choice is not None and not tools:
        body["tool_choice"] = choice
    return body


def _tool(tool: ToolDefinition) -> Message:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description or "",
            "parameters": tool_schema(tool.parameters),
        },
    }


# --- tool schemas ----------------------------------------------------------------


def tool_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` as pydantic-ai's `OpenAIJsonSchemaTransformer` (`strict=False`) sends it."""
    schema = deepcopy(schema)
    defs = schema.pop("$defs", None)
    root_ref = schema.get("$ref")
    handled: dict[str, Any] = _walk(schema, root_ref)
    if defs:
        handled["$defs"] = {key: _walk(value, root_ref) for key, value in defs.items()}
    definitions = handled.get("definitions")
    if definitions:
        handled["definitions"] = {key: _walk(value, root_ref) for key, value in definitions.items()}
    if root_ref is not None and isinstance(defs, dict):
        handled.pop("$ref", None)
        root = defs.get(str(root_ref).removeprefix("#/$defs/").replace("~1", "/").replace("~0", "~"))
        if isinstance(root, dict):
            handled.update(root)
    return handled


def _walk(schema: Any, root_ref: Any) -> Any:
    if not isinstance(schema, dict):
        return schema
    kind = schema.get("type")
    if kind == "object":
        if properties := schema.get("properties"):
            schema["properties"] = {key: _walk(value, root_ref) for key, value in properties.items()}
        extra = schema.get("additionalProperties")
        if extra is not None and not isinstance(extra, bool):
            schema["additionalProperties"] = _walk(extra, root_ref)
        if (patterns := schema.get("patternProperties")) is not None:
            schema["patternProperties"] = {key: _walk(value, root_ref) for key, value in patterns.items()}
    elif kind == "array":
        if prefix := schema.get("prefixItems"):
            schema["prefixItems"] = [_walk(item, root_ref) for item in prefix]
        items = schema.get("items")
        if isinstance(items, list):
            schema["items"] = [_walk(item, root_ref) for item in items]
        elif items:
            schema["items"] = _walk(items, root_ref)
    elif kind is None:
        for union in ("allOf", "anyOf", "oneOf"):
            schema = _union(schema, union, root_ref)
    if kind is not None:
        for union in ("allOf", "anyOf", "oneOf"):
            if members := schema.get(union):
                schema[union] = [_walk(member, root_ref) for member in members]
    return _transform(schema, root_ref)


def _union(schema: dict[str, Any], union: str, root_ref: Any) -> dict[str, Any]:
    if union not in schema:
        return schema
    members = schema.pop(union)
    handled = [_walk(member, root_ref) for member in members]
    if len(handled) == 1 and isinstance(handled[0], dict) and handled[0].get("not") != {}:
        return handled[0] | schema
    schema = schema.copy()
    schema[union] = handled
    return schema


def _transform(schema: dict[str, Any], root_ref: Any) -> dict[str, Any]:
    for key in ("title", "$schema", "discriminator"):
        schema.pop(key, None)
    if ref := schema.get("$ref"):
        if ref == root_ref:
            schema["$ref"] = "#"
        if len(schema) > 1:
            schema["anyOf"] = [{"$ref": schema.pop("$ref")}]
    if schema.get("type") == "object" and "properties" not in schema:
        schema["properties"] = {}
    return schema
