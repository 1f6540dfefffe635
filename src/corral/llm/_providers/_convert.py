"""Our context and options, in pydantic-ai's terms (the Responses and Anthropic APIs).

`to_model_messages` turns an `LlmContext` into pydantic-ai `ModelMessage`s
(consecutive user and tool-result messages share one `ModelRequest`, each
assistant message becomes a `ModelResponse`); `to_request_parameters` offers
the tools; `to_model_settings` maps the thinking level and reply cap.

Assistant messages travel between providers the way Pi's `transformMessages`
does: errored and aborted replies are left out, a tool call that never got a
result gets a synthetic error result, and thinking is sent back as thinking
only to the model (provider, API and model id) that produced it; for any other
it becomes plain text, or is dropped when empty or redacted. For the same
model, thinking is replayed in the provider's own form, as Pi's providers do:
Anthropic sends a signed `thinking` block, or the reasoning as text when
unsigned; Responses sends the stored reasoning item. (Chat Completions, which
corral speaks itself, follows the same rules in `_chat_request`.)

Failed tool results reach OpenAI models as the plain text of the result (as
Pi sends them); only Anthropic, which has an error flag, marks them failed.
Text a JSON encoder cannot send (lone UTF-16 surrogates, from a tool's
invalid output or a file written by Pi) is dropped before it reaches a
provider, like Pi's `sanitizeSurrogates`.

For the OpenAI Responses API a thinking block's signature is the reasoning
item as JSON (`{"type": "reasoning", "id": ..., "encrypted_content": ...}`),
as Pi stores it, so the item id and the encrypted reasoning both round-trip.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any, Literal, cast

from pydantic_ai.messages import (
    BinaryContent,
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    ModelResponsePart,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.messages import (
    UserContent as PaiUserContent,
)
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import ToolDefinition as PaiToolDefinition

from corral.llm._messages import (
    AgentMessage,
    AssistantMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from corral.llm._model import LlmContext, ModelInfo, StreamOptions, ThinkingLevel, ToolDefinition

from ._responses_request import parse_responses_signature
from ._text import (
    DEFAULT_MAX_TOKENS_CAP,
    NO_RESULT_TEXT,
    MessageFeed,
    continues,
    pi_api_name,
    sanitize_surrogates,
    sanitize_value,
)

__all__ = [
    "ANTHROPIC_THINKING_BUDGETS",
    "IncrementalConversion",
    "to_model_messages",
    "to_model_settings",
    "to_request_parameters",
]

ANTHROPIC_THINKING_BUDGETS: dict[ThinkingLevel, int] = {
    "minimal": 1024,
    "low": 2048,
    "medium": 8192,
    "high": 16384,
    "xhigh": 16384,
}
"""Thinking budgets (tokens) for Anthropic models without adaptive thinking; `xhigh` clamps to `high`."""

_MIN_OUTPUT_TOKENS = 1024
"""Output room kept beside a thinking budget when the model's cap squeezes them."""


# --- messages ---------------------------------------------------------------


def _image(block: ImageContent) -> BinaryContent:
    return BinaryContent(data=base64.b64decode(block.data), media_type=block.mime_type)


def _user_part(message: UserMessage) -> UserPromptPart | None:
    if isinstance(message.content, str):
        return UserPromptPart(sanitize_surrogates(message.content))
    items: list[PaiUserContent] = []
    for block in message.content:
        if isinstance(block, TextContent):
            items.append(sanitize_surrogates(block.text))
        else:
            items.append(_image(block))
    if not items:
        return None
    return UserPromptPart(items)


def _tool_return_part(message: ToolResultMessage, *, error_flag: bool) -> ToolReturnPart:
    images = [block for block in message.content if isinstance(block, ImageContent)]
    text = sanitize_surrogates(message.text)
    content: Any = [*([text] if text else []), *(_image(block) for block in images)] if images else text
    return ToolReturnPart(
        tool_name=message.tool_name,
        content=content,
        tool_call_id=message.tool_call_id,
        # pydantic-ai wraps a failed result as `{"error": ...}` where the API has no error
        # flag; Pi sends the plain text there, so only Anthropic's is_error marks it.
        outcome="failed" if message.is_error and error_flag else "success",
    )


class _Converter(MessageFeed):
    """Builds the pydantic-ai history for one model (`info`) talking through `pai_provider`."""

    def __init__(self, info: ModelInfo, pai_provider: str) -> None:
        self.info = info
        self.pai_provider = pai_provider
        self.api = pi_api_name(info)
        self.messages: list[ModelMessage] = []
        self.parts: list[ModelRequestPart] = []
        self.open_calls: dict[str, str] = {}
        """Tool calls of the last assistant message still waiting for a result: id → name."""

    def flush(self) -> None:
        if self.parts:
            self.messages.append(ModelRequest(parts=self.parts))
            self.parts = []

    @property
    def error_flag(self) -> bool:
        """Whether the API marks failed tool results (Anthropic's `is_error`)."""
        return self.info.api == "anthropic"

    def close_open_calls(self) -> None:
        outcome: Literal["failed", "success"] = "failed" if self.error_flag else "success"
        for call_id, name in self.open_calls.items():
            self.parts.append(ToolReturnPart(name, NO_RESULT_TEXT, call_id, outcome=outcome))
        self.open_calls = {}

    def same_source(self, message: AssistantMessage) -> bool:
        """Pi's `isSameModel`: the reply came from this provider, API and model id."""
        return (
            message.provider == self.info.provider
            and message.api == self.api
            and message.model == self.info.id
        )

    def assistant(self, message: AssistantMessage) -> None:
        if message.stop_reason in ("error", "aborted"):
            return
        same = self.same_source(message)
        parts: list[ModelResponsePart] = []
        for block in message.content:
            if isinstance(block, TextContent):
                if block.text:
                    parts.append(TextPart(sanitize_surrogates(block.text)))
            elif isinstance(block, ThinkingContent):
                parts.extend(self._thinking(block, same))
            else:
                parts.append(self._tool_call(block, same))
        if not parts:
            return
        self.close_open_calls()
        self.flush()
        self.messages.append(
            ModelResponse(
                parts=parts,
                model_name=message.model or None,
                provider_name=self.pai_provider if same else None,
            )
        )
        self.open_calls = {block.id: block.name for block in message.tool_calls}

    def _thinking(self, block: ThinkingContent, same: bool) -> list[ModelResponsePart]:
        thinking = sanitize_surrogates(block.thinking)
        if not same:
            if block.redacted or not thinking.strip():
                return []
            return [TextPart(thinking)]
        signature = block.thinking_signature
        part_id: str | None = None
        if self.info.api == "anthropic":
            if not signature or not signature.strip():
                # Unsigned (an interrupted stream): Pi sends the reasoning as text.
                return [] if block.redacted or not thinking.strip() else [TextPart(thinking)]
            if block.redacted:
                part_id = "redacted_thinking"
            elif not thinking.strip():
                return []
        if signature is not None and self.info.api == "openai-responses":
            part_id, signature = parse_responses_signature(signature)
        if not thinking and signature is None:
            return []
        return [ThinkingPart(thinking, id=part_id, signature=signature, provider_name=self.pai_provider)]

    def _tool_call(self, block: ToolCall, same: bool) -> ToolCallPart:
        return ToolCallPart(
            tool_name=block.name,
            args=sanitize_value(dict(block.arguments)),
            tool_call_id=block.id,
            provider_name=self.pai_provider if same else None,
        )

    def tool_result(self, message: ToolResultMessage) -> None:
        if message.tool_call_id in self.open_calls:
            del self.open_calls[message.tool_call_id]
        self.parts.append(_tool_return_part(message, error_flag=self.error_flag))

    def user(self, message: UserMessage) -> None:
        self.close_open_calls()
        part = _user_part(message)
        if part is not None:
            self.parts.append(part)


def _finish(converter: _Converter, done: list[ModelMessage]) -> list[ModelMessage]:
    """The request's messages: `done`, then the pending parts (and synthetic results for open calls).

    Leaves `converter` as it was, so it can take more messages later.
    """
    outcome: Literal["failed", "success"] = "failed" if converter.error_flag else "success"
    tail = [
        *converter.parts,
        *(
            ToolReturnPart(name, NO_RESULT_TEXT, call_id, outcome=outcome)
            for call_id, name in converter.open_calls.items()
        ),
    ]
    messages = [*done, ModelRequest(parts=tail)] if tail else list(done)
    return messages or [ModelRequest(parts=[UserPromptPart("")])]


def to_model_messages(context: LlmContext, info: ModelInfo, pai_provider: str) -> list[ModelMessage]:
    """The conversation as pydantic-ai messages, system prompt first.

    Args:
        context: The request's system prompt and messages (`user`, `assistant`, `toolResult`).
        info: The model the request goes to (decides whether thinking keeps its signature).
        pai_provider: pydantic-ai's provider name for that model (`openai`, `anthropic`).

    Returns:
        Alternating `ModelRequest` / `ModelResponse` messages; never empty.
    """
    return IncrementalConversion(info, pai_provider).convert(context)


class IncrementalConversion:
    """`to_model_messages` for one conversation, request after request, converting only what is new.

    The agent loop's context only grows between requests (replies, tool results,
    steering and follow-up messages are appended); the messages already
    converted keep their pydantic-ai form, and only the new ones are converted.
    Anything else — a compaction or a branch switch replacing messages, a
    different system prompt — is seen by comparing the context with the
    messages converted last time (by identity, in order), and the whole
    conversation is converted afresh. The result is always what
    `to_model_messages` would build from scratch.

    Args:
        info: The model the requests go to.
        pai_provider: pydantic-ai's provider name for that model.
    """

    def __init__(
        self,
        info: ModelInfo,
        pai_provider: str,
    ) -> None:
        self.info = info
        self.pai_provider = pai_provider
        self._system_prompt: str | None = None
        self._sources: list[AgentMessage] = []
        self._converter = _Converter(info, pai_provider)
        self._done: list[ModelMessage] = []
        self.rebuilds = 0
        """How many times the whole conversation was converted (the first request included)."""

    def convert(self, context: LlmContext) -> list[ModelMessage]:
        """The request's pydantic-ai messages for `context`."""
        if not continues(self._system_prompt, self._sources, context):
            self.rebuilds += 1
            self._system_prompt = context.system_prompt
            self._sources = []
            self._done = []
            self._converter = _Converter(self.info, self.pai_provider)
            if context.system_prompt:
                self._converter.parts.append(SystemPromptPart(sanitize_surrogates(context.system_prompt)))
        converter = self._converter
        fresh = context.messages[len(self._sources) :]
        for message in fresh:
            converter.feed(message)
            self._sources.append(message)
        if converter.messages:
            finished = converter.messages
            converter.messages = []
            self._done.extend(finished)
        return _finish(converter, self._done)


def to_request_parameters(tools: Sequence[ToolDefinition]) -> ModelRequestParameters:
    """The tools offered, as pydantic-ai function tools (schemas sent as given, not strict)."""
    return ModelRequestParameters(
        function_tools=[
            PaiToolDefinition(
                name=tool.name,
                parameters_json_schema=dict(tool.parameters),
                description=tool.description,
                strict=False,
            )
            for tool in tools
        ],
        allow_text_output=True,
    )


# --- settings ---------------------------------------------------------------


def to_model_settings(
    info: ModelInfo, options: StreamOptions, *, adaptive_thinking: bool = False
) -> ModelSettings:
    """pydantic-ai model settings for one request.

    Retries are off (the agent loop retries), `max_tokens` defaults to
    `min(info.max_tokens, 32000)`, and the thinking level maps per API: Responses
    gets `reasoning_effort` = the level and asks for a reasoning summary; Anthropic gets a thinking budget with `max_tokens` raised by it
    (capped at the model's limit), or adaptive thinking at that effort on
    models that only accept adaptive thinking.

    Args:
        info: The model.
        options: The request's options (`thinking` already clamped).
        adaptive_thinking: Whether the Anthropic model wants adaptive thinking instead of budgets.
    """
    max_tokens = (
        options.max_tokens if options.max_tokens is not None else min(info.max_tokens, DEFAULT_MAX_TOKENS_CAP)
    )
    settings: dict[str, Any] = {"max_retries": 0}
    level = options.thinking
    if info.api == "openai-responses":
        if level != "off":
            effort = level if (level != "xhigh" or info.supports_xhigh) else "high"
            settings["openai_reasoning_effort"] = effort
            settings["openai_reasoning_summary"] = "auto"
        if options.session_id and info.provider == "openai":
            settings["openai_prompt_cache_key"] = options.session_id
    elif info.api == "anthropic" and level != "off":
        if adaptive_thinking:
            settings["thinking"] = level
        else:
            budget = ANTHROPIC_THINKING_BUDGETS[level]
            max_tokens = min(max_tokens + budget, info.max_tokens)
            if max_tokens <= budget:
                budget = max(0, max_tokens - _MIN_OUTPUT_TOKENS)
            if budget >= _MIN_OUTPUT_TOKENS:
                settings["anthropic_thinking"] = {"type": "enabled", "budget_tokens": budget}
    settings["max_tokens"] = max_tokens
    if options.tool_choice is not None:
        settings["tool_choice"] = [options.tool_choice]
    return cast(ModelSettings, settings)
