"""The model interface every provider implements, and the stream events it yields.

A model streams one assistant reply for a context. It never raises for a
provider failure: the stream ends with an `ErrorEvent` carrying an assistant
message whose `stop_reason` is `error`. Cancellation is the caller's: the
agent loop cancels the task that iterates the stream and keeps the last
`partial` as an `aborted` message, so providers only need to let
`asyncio.CancelledError` through.
"""

from __future__ import annotations

import abc
from collections.abc import AsyncIterator, Sequence
from dataclasses import KW_ONLY, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ._messages import AgentMessage, AssistantMessage, PiModel, ToolCall

if TYPE_CHECKING:
    from ._lifecycle import ModelLifecycle

__all__ = [
    "THINKING_LEVELS",
    "ApiKind",
    "AssistantMessageEvent",
    "DoneEvent",
    "ErrorEvent",
    "LlmContext",
    "MaxTokensField",
    "Model",
    "ModelInfo",
    "ModelPrices",
    "StartEvent",
    "StreamOptions",
    "TextDeltaEvent",
    "TextEndEvent",
    "TextStartEvent",
    "ThinkingDeltaEvent",
    "ThinkingEndEvent",
    "ThinkingLevel",
    "ThinkingStartEvent",
    "ToolCallDeltaEvent",
    "ToolCallEndEvent",
    "ToolCallStartEvent",
    "ToolDefinition",
    "as_thinking_level",
]

ThinkingLevel = Literal["off", "minimal", "low", "medium", "high", "xhigh"]
"""How much the model should reason; `off` sends no reasoning option."""

THINKING_LEVELS: tuple[ThinkingLevel, ...] = ("off", "minimal", "low", "medium", "high", "xhigh")


def as_thinking_level(value: object) -> ThinkingLevel | None:
    """`value` as a thinking level when it names one exactly, else None."""
    for level in THINKING_LEVELS:
        if value == level:
            return level
    return None


ApiKind = Literal["openai-responses", "openai-chat", "anthropic", "scripted", "acp"]
"""The wire format a model speaks (`acp`: an agent behind the Agent Client Protocol, which runs its own
model; corral never requests it, `corral.harness.acp`)."""

MaxTokensField = Literal["max_tokens", "max_completion_tokens", "both"]
"""Which Chat Completions field carries the reply cap: OpenAI's `max_completion_tokens`, the older
`max_tokens` that llama.cpp, Ollama, vLLM and LM Studio read, or both."""


@dataclass(frozen=True)
class ModelPrices:
    """Prices in USD per million tokens."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0


@dataclass(frozen=True)
class ModelInfo:
    """A registry entry: what a model is, where it lives and what it can do."""

    provider: str
    """Provider name, such as `openai`, `anthropic`, `scripted` or a custom one."""
    id: str
    """Model id within the provider."""
    api: ApiKind
    _: KW_ONLY
    name: str = ""
    """Human-readable name; defaults to the id."""
    context_window: int = 128_000
    """Tokens the model accepts in one request."""
    max_tokens: int = 16_384
    """Most tokens the model produces in one reply."""
    reasoning: bool = False
    """Whether the model supports thinking levels above `off`."""
    supports_xhigh: bool = False
    """Whether `xhigh` is offered (otherwise it clamps to `high`)."""
    input: tuple[str, ...] = ("text",)
    """Input modalities: `text`, `image`."""
    prices: ModelPrices | None = None
    """Configured prices (a settings entry's `prices`; scripted models always have them). `None`
    prices each request from the genai-prices catalogue, or at zero when it does not know the
    model (see `corral.llm.calculate_cost`)."""
    base_url: str | None = None
    """Endpoint override; `None` uses the provider's default or its environment variable."""
    api_key_env: str | None = None
    """Environment variable holding the API key; `None` when no key is needed."""
    max_tokens_field: MaxTokensField | None = None
    """Where an `openai-chat` request puts the reply cap; `None` picks by provider
    (`max_completion_tokens` for `openai`, `max_tokens` for any other)."""
    stream: bool = True
    """Stream replies; `False` asks for whole responses (for servers that only call tools
    or report errors properly without streaming)."""

    @property
    def ref(self) -> str:
        """The model ref `provider/id`."""
        return f"{self.provider}/{self.id}"

    @property
    def reply_cap_field(self) -> MaxTokensField:
        """`max_tokens_field`, or the provider's default when unset."""
        if self.max_tokens_field is not None:
            return self.max_tokens_field
        return "max_completion_tokens" if self.provider == "openai" else "max_tokens"


@dataclass(frozen=True)
class ToolDefinition:
    """A tool as offered to the model."""

    name: str
    description: str
    parameters: dict[str, Any]
    """JSON Schema of the arguments object."""


@dataclass
class LlmContext:
    """What one request sends: system prompt, conversation and tools.

    `messages` holds only `user`, `assistant` and `toolResult` messages: the
    agent loop converts custom, bash and summary messages to user messages
    before a request (Pi's `convertToLlm`).
    """

    system_prompt: str
    messages: Sequence[AgentMessage]
    tools: Sequence[ToolDefinition] = ()


@dataclass
class StreamOptions:
    """Per-request options beyond the context."""

    _: KW_ONLY
    thinking: ThinkingLevel = "off"
    """Already clamped to what the model supports."""
    max_tokens: int | None = None
    """Reply cap; `None` means `min(model.max_tokens, 32000)`."""
    session_id: str | None = None
    """The session making the request (providers may use it as a cache key)."""
    agent_name: str | None = None
    """The managed agent's label or name, `None` for a lead or unmanaged session."""
    cwd: Path | None = None
    """The session's working directory (the scripted model looks for scripts there)."""
    tool_choice: str | None = None
    """The name of a tool the reply must call (`None`: the model decides). For callers that need
    exactly one call; the agent loop never forces one."""
    previous_response: AssistantMessage | None = None
    """The newest assistant message from this same model on the session's branch,
    including ones no longer in the context (after compaction or a dropped retry).
    Providers that keep state across requests (the scripted model's cursor) read it."""


# --- stream events (Pi's AssistantMessageEvent) ----------------------------


class _StreamEvent(PiModel):
    partial: AssistantMessage
    """The message as accumulated so far."""


class StartEvent(_StreamEvent):
    type: Literal["start"] = "start"


class TextStartEvent(_StreamEvent):
    type: Literal["text_start"] = "text_start"
    content_index: int


class TextDeltaEvent(_StreamEvent):
    type: Literal["text_delta"] = "text_delta"
    content_index: int
    delta: str


class TextEndEvent(_StreamEvent):
    type: Literal["text_end"] = "text_end"
    content_index: int
    content: str


class ThinkingStartEvent(_StreamEvent):
    type: Literal["thinking_start"] = "thinking_start"
    content_index: int


class ThinkingDeltaEvent(_StreamEvent):
    type: Literal["thinking_delta"] = "thinking_delta"
    content_index: int
    delta: str


class ThinkingEndEvent(_StreamEvent):
    type: Literal["thinking_end"] = "thinking_end"
    content_index: int
    content: str


class ToolCallStartEvent(_StreamEvent):
    type: Literal["toolcall_start"] = "toolcall_start"
    content_index: int


class ToolCallDeltaEvent(_StreamEvent):
    type: Literal["toolcall_delta"] = "toolcall_delta"
    content_index: int
    delta: str
    """A fragment of the arguments' JSON text."""


class ToolCallEndEvent(_StreamEvent):
    type: Literal["toolcall_end"] = "toolcall_end"
    content_index: int
    tool_call: ToolCall


class DoneEvent(PiModel):
    """The reply finished: `reason` is `stop`, `length` or `toolUse`."""

    type: Literal["done"] = "done"
    reason: Literal["stop", "length", "toolUse"]
    message: AssistantMessage


class ErrorEvent(PiModel):
    """The request failed (`error`) or was aborted (`aborted`); `error` is the message."""

    type: Literal["error"] = "error"
    reason: Literal["error", "aborted"]
    error: AssistantMessage


AssistantMessageEvent = (
    StartEvent
    | TextStartEvent
    | TextDeltaEvent
    | TextEndEvent
    | ThinkingStartEvent
    | ThinkingDeltaEvent
    | ThinkingEndEvent
    | ToolCallStartEvent
    | ToolCallDeltaEvent
    | ToolCallEndEvent
    | DoneEvent
    | ErrorEvent
)


class Model(abc.ABC):
    """One model of one provider, ready to stream replies."""

    def __init__(self, info: ModelInfo) -> None:
        self.info = info

    @property
    def lifecycle(self) -> ModelLifecycle | None:
        """The provider's deprecation of this model, `None` when it is current or not known.

        The built-in table (`corral.llm._lifecycle`) by default; a provider model also knows what
        its SDK's catalogue says.
        """
        from ._lifecycle import builtin_lifecycle

        return builtin_lifecycle(self.info.provider, self.info.id)

    @abc.abstractmethod
    def stream(self, context: LlmContext, options: StreamOptions) -> AsyncIterator[AssistantMessageEvent]:
        """Stream one reply. Ends with exactly one `DoneEvent` or `ErrorEvent`; never raises
        for provider failures (only `asyncio.CancelledError` passes through)."""
