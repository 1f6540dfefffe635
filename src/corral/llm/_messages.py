"""Conversation messages and content blocks, in Pi's session format v3.

These are the shapes that travel between the model layer, the agent loop and
the session files. Field names are Python snake_case; the JSON form (what is
written to session files and printed by `--mode json`) uses Pi's camelCase
names through aliases. Unknown fields are kept (`extra="allow"`) so a file
written by a newer Pi or corral round-trips without loss.

Serialise with [`to_json_dict`][corral.llm.to_json_dict]; it drops optional
fields that are absent (JavaScript `undefined`) but keeps explicit values.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    Tag,
    TypeAdapter,
    model_serializer,
)
from pydantic.alias_generators import to_camel

__all__ = [
    "AgentMessage",
    "AgentMessageAdapter",
    "AssistantContent",
    "AssistantMessage",
    "BashExecutionMessage",
    "BranchSummaryMessage",
    "CompactionSummaryMessage",
    "Cost",
    "CustomMessage",
    "ImageContent",
    "PiModel",
    "StopReason",
    "TextContent",
    "ThinkingContent",
    "ToolCall",
    "ToolResultMessage",
    "Usage",
    "UserContent",
    "UserMessage",
    "now_ms",
    "to_json_dict",
]

StopReason = Literal["stop", "length", "toolUse", "error", "aborted", "pending", "deferred"]
"""Why an assistant message ended. `error` and `aborted` carry `error_message`.

`pending` and `deferred` are written by Pi 1.x (a reply whose tool calls wait
for something outside the turn); corral reads them and replays such messages
like any other completed reply, but never produces them.
"""


class PiModel(BaseModel):
    """Base for every persisted shape: camelCase aliases, unknown fields kept."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="allow",
        validate_assignment=False,
        ser_json_inf_nan="constants",
        # Each subclass builds its validator and serializer when first used, not when its module is
        # imported: a run uses a fraction of the ~70 event, entry and message shapes before its first
        # model request (docs/development.md, "Start-up cost").
        defer_build=True,
    )

    @model_serializer(mode="wrap")
    def _omit_absent_optionals(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        # With `context={"pi_json": True}` (what `to_json_dict` passes), a field
        # whose value is `None` and that was never set is omitted (JavaScript
        # `undefined`); every other field, defaults included, is written.
        data = handler(self)
        context = info.context
        if not (isinstance(context, dict) and context.get("pi_json")) or not isinstance(data, dict):
            return data
        fields_set = self.model_fields_set
        for name, field in type(self).model_fields.items():
            if name not in fields_set and getattr(self, name, None) is None:
                data.pop(field.alias or name if info.by_alias else name, None)
        return data


def to_json_dict(model: BaseModel) -> dict[str, Any]:
    """The JSON form of a persisted shape: Pi's field names, absent optionals omitted.

    Every field with a value is written, defaults included (`role`, `type`,
    `timestamp`, `usage`, ...). An optional field that is `None` and was never
    set is omitted (JavaScript `undefined`); a field set explicitly to `None`
    (like a root entry's `parentId`) is written.
    """
    return model.model_dump(mode="json", by_alias=True, context={"pi_json": True})


def now_ms() -> int:
    """The current time in Unix milliseconds, as message payloads store it."""
    import time

    return time.time_ns() // 1_000_000


# --- content blocks -------------------------------------------------------


class TextContent(PiModel):
    """A block of text."""

    type: Literal["text"] = "text"
    text: str
    """The text itself."""
    text_signature: str | None = None
    """Provider signature of the text block (opaque), when the provider sends one."""


class ThinkingContent(PiModel):
    """A block of the model's reasoning."""

    type: Literal["thinking"] = "thinking"
    thinking: str
    """The reasoning text (may be empty when `redacted`)."""
    thinking_signature: str | None = None
    """Provider signature needed to send the reasoning back (opaque)."""
    redacted: bool | None = None
    """True when the provider withheld the reasoning text."""


class ImageContent(PiModel):
    """An image, inline."""

    type: Literal["image"] = "image"
    data: str
    """Base64-encoded image bytes."""
    mime_type: str
    """MIME type such as `image/png`."""


class ToolCall(PiModel):
    """A tool call made by the model."""

    type: Literal["toolCall"] = "toolCall"
    id: str
    """The provider's (or generated) tool-call id; unique within a session."""
    name: str
    """The tool name as offered to the model."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """The parsed JSON arguments."""
    thought_signature: str | None = None
    """Provider signature attached to the call (opaque)."""
    raw_arguments: str | None = None
    """The arguments text exactly as received, set only when it is not a JSON object (then
    `arguments` is empty and the call gets an error result quoting this text instead of running)."""


UserContent = Annotated[TextContent | ImageContent, Field(discriminator="type")]
AssistantContent = Annotated[TextContent | ThinkingContent | ToolCall, Field(discriminator="type")]


# --- usage ----------------------------------------------------------------


class Cost(PiModel):
    """Cost of one message in USD, computed once when the message completes."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0
    total: float = 0.0

    def __add__(self, other: Cost) -> Cost:
        return Cost(
            input=self.input + other.input,
            output=self.output + other.output,
            cache_read=self.cache_read + other.cache_read,
            cache_write=self.cache_write + other.cache_write,
            total=self.total + other.total,
        )


class Usage(PiModel):
    """Token usage of one model request, normalised across providers.

    `input` excludes cached tokens; `total_tokens` is the context size the
    request reached (`input + output + cache_read + cache_write`).
    """

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    total_tokens: int = 0
    cost: Cost = Field(default_factory=Cost)

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input=self.input + other.input,
            output=self.output + other.output,
            cache_read=self.cache_read + other.cache_read,
            cache_write=self.cache_write + other.cache_write,
            total_tokens=self.total_tokens + other.total_tokens,
            cost=self.cost + other.cost,
        )


def _usage_factory() -> Usage:
    return Usage()


# --- messages -------------------------------------------------------------


class UserMessage(PiModel):
    """A message from the user (or a prompt given by a program)."""

    role: Literal["user"] = "user"
    content: str | list[UserContent]
    """Plain text, or text and image blocks."""
    timestamp: int = Field(default_factory=now_ms)
    """Unix milliseconds."""

    @property
    def text(self) -> str:
        """The text, whichever form the content has (image blocks left out)."""
        if isinstance(self.content, str):
            return self.content
        return "".join(block.text for block in self.content if isinstance(block, TextContent))


class AssistantMessage(PiModel):
    """A model's reply, complete or partial (`stop_reason` `aborted` or `error`)."""

    role: Literal["assistant"] = "assistant"
    content: list[AssistantContent] = Field(default_factory=list)
    api: str = ""
    """Wire API used, such as `openai-responses`, `anthropic-messages` or `scripted`."""
    provider: str = ""
    """Provider name, the part of the model ref before `/`."""
    model: str = ""
    """Model id, the part of the model ref after `/`."""
    usage: Usage = Field(default_factory=_usage_factory)
    stop_reason: StopReason = "stop"
    error_message: str | None = None
    """Why the request failed or was aborted; set with `error` and `aborted`."""
    timestamp: int = Field(default_factory=now_ms)
    """Unix milliseconds."""

    @property
    def text(self) -> str:
        """The concatenated text blocks (no thinking, no tool calls)."""
        return "".join(block.text for block in self.content if isinstance(block, TextContent))

    @property
    def tool_calls(self) -> list[ToolCall]:
        """The tool calls, in the order the model made them."""
        return [block for block in self.content if isinstance(block, ToolCall)]


class ToolResultMessage(PiModel):
    """The result of one tool call, sent back to the model."""

    role: Literal["toolResult"] = "toolResult"
    tool_call_id: str
    tool_name: str
    content: list[UserContent] = Field(default_factory=list)
    details: Any = None
    """Structured data for front ends and later turns; never sent to the model."""
    is_error: bool = False
    timestamp: int = Field(default_factory=now_ms)

    @property
    def text(self) -> str:
        """The concatenated text blocks."""
        return "".join(block.text for block in self.content if isinstance(block, TextContent))


class BashExecutionMessage(PiModel):
    """A shell command the user ran directly (Pi's `!cmd`)."""

    role: Literal["bashExecution"] = "bashExecution"
    command: str
    output: str = ""
    exit_code: int | None = None
    cancelled: bool = False
    truncated: bool = False
    full_output_path: str | None = None
    exclude_from_context: bool | None = None
    """Set by `!!`: recorded, but never sent to the model."""
    timestamp: int = Field(default_factory=now_ms)


class CustomMessage(PiModel):
    """A message injected by a program (an extension, the orchestration core).

    Sent to the model as a user message; `details` never is.
    """

    role: Literal["custom"] = "custom"
    custom_type: str
    """Namespaced kind, such as `corral-agent-result`."""
    content: str | list[UserContent]
    display: bool = True
    """Whether front ends show it."""
    details: Any = None
    timestamp: int = Field(default_factory=now_ms)


class BranchSummaryMessage(PiModel):
    """In-memory only: rebuilt from a `branch_summary` entry."""

    role: Literal["branchSummary"] = "branchSummary"
    summary: str
    from_id: str
    timestamp: int = Field(default_factory=now_ms)


class CompactionSummaryMessage(PiModel):
    """In-memory only: rebuilt from a `compaction` entry."""

    role: Literal["compactionSummary"] = "compactionSummary"
    summary: str
    tokens_before: int
    timestamp: int = Field(default_factory=now_ms)


def _role_of(value: Any) -> str | None:
    if isinstance(value, dict):
        role = value.get("role")
        return role if isinstance(role, str) else None
    return getattr(value, "role", None)


AgentMessage = Annotated[
    Annotated[UserMessage, Tag("user")]
    | Annotated[AssistantMessage, Tag("assistant")]
    | Annotated[ToolResultMessage, Tag("toolResult")]
    | Annotated[BashExecutionMessage, Tag("bashExecution")]
    | Annotated[CustomMessage, Tag("custom")]
    | Annotated[BranchSummaryMessage, Tag("branchSummary")]
    | Annotated[CompactionSummaryMessage, Tag("compactionSummary")],
    Discriminator(_role_of),
]
"""Any message of a conversation, tagged by `role`."""

AgentMessageAdapter: TypeAdapter[AgentMessage] = TypeAdapter(
    AgentMessage, config=ConfigDict(defer_build=True)
)
"""Validates a message from its JSON form (Pi's camelCase names); built on first use (a run that
loads no session never needs it)."""
