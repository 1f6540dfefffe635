"""The events an `AgentSession` emits, in Pi's names and shapes.

Each event is a pydantic model with a `type` literal; `corral.llm.to_json_dict`
gives Pi's camelCase JSON form, which the CLI prints in its JSON and RPC modes.
Every field holding a value is serialised (also `False` and empty lists);
optional fields that are `None` (`result`, `errorMessage`, `finalError`) are
omitted, like JavaScript `undefined`.

A run emits, in order::

    agent_start
    turn_start
      message_start/message_end          (each prompt message)
      message_start, message_update…, message_end   (the assistant reply)
      tool_execution_start…              (in call order)
      tool_execution_update…/tool_execution_end…   (as tools progress and finish)
      message_start/message_end          (each tool result, in call order)
    turn_end
    turn_start …                         (further turns)
    agent_end {willRetry}
    [auto_retry_* | compaction_* | more runs]
    agent_settled                        (once nothing remains to do)

`rate_limit_wait` (corral's own, not Pi's) comes while a model request waits for its
endpoint's shared rate limiter, with `waiting` true when the wait starts (or its reason or
expected end changes) and false when the request is sent.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from corral.llm import (
    AgentMessage,
    AssistantMessage,
    AssistantMessageEvent,
    PiModel,
    ToolResultMessage,
    Usage,
    UserContent,
)

__all__ = [
    "AgentEndEvent",
    "AgentEvent",
    "AgentSettledEvent",
    "AgentStartEvent",
    "AutoRetryEndEvent",
    "AutoRetryStartEvent",
    "CompactionEndEvent",
    "CompactionReason",
    "CompactionResult",
    "CompactionStartEvent",
    "MessageEndEvent",
    "MessageStartEvent",
    "MessageUpdateEvent",
    "QueueUpdateEvent",
    "RateLimitWaitEvent",
    "ToolExecutionEndEvent",
    "ToolExecutionResult",
    "ToolExecutionStartEvent",
    "ToolExecutionUpdateEvent",
    "TurnEndEvent",
    "TurnStartEvent",
]

CompactionReason = Literal["manual", "threshold", "overflow"]
"""Why a compaction ran: asked for, context above the threshold, or the provider refused an overflow."""


class _Event(PiModel):
    """Base: marks every non-`None` field as set so `to_json_dict` writes it."""

    def model_post_init(self, context: Any, /) -> None:
        fields_set = self.__pydantic_fields_set__
        for name in type(self).model_fields:
            if name not in fields_set and getattr(self, name) is not None:
                fields_set.add(name)


class ToolExecutionResult(PiModel):
    """A tool's (partial or final) result as events carry it: content and details."""

    content: list[UserContent] = Field(default_factory=list)
    """Text and image blocks for the model."""
    details: Any = None
    """Structured data for programs (never sent to the model)."""


class CompactionResult(PiModel):
    """What a compaction produced (the fields of the appended `compaction` entry)."""

    summary: str
    """The summary text that replaces the older history."""
    first_kept_entry_id: str
    """Id of the first session entry kept verbatim after the summary."""
    tokens_before: int
    """Estimated context tokens before compacting."""
    details: Any = None
    """`{readFiles, modifiedFiles}`: cumulative file operations."""
    usage: Usage | None = None
    """What the summary request(s) cost."""


class AgentStartEvent(_Event):
    """A run began."""

    type: Literal["agent_start"] = "agent_start"


class AgentEndEvent(_Event):
    """A run ended (the session may still retry, compact or continue: see `agent_settled`)."""

    type: Literal["agent_end"] = "agent_end"
    messages: list[AgentMessage] = Field(default_factory=list)
    """The messages this run added to the context."""
    will_retry: bool = False
    """True when the session continues on its own (auto-retry or overflow recovery)."""


class TurnStartEvent(_Event):
    """A turn (one model request and its tool calls) began."""

    type: Literal["turn_start"] = "turn_start"


class TurnEndEvent(_Event):
    """A turn ended."""

    type: Literal["turn_end"] = "turn_end"
    message: AgentMessage
    """The turn's assistant message."""
    tool_results: list[ToolResultMessage] = Field(default_factory=list)
    """Results of the turn's tool calls, in call order."""


class MessageStartEvent(_Event):
    """A message entered the context (assistant messages: streaming began)."""

    type: Literal["message_start"] = "message_start"
    message: AgentMessage


class MessageUpdateEvent(_Event):
    """An assistant message streamed a delta."""

    type: Literal["message_update"] = "message_update"
    message: AssistantMessage
    """The message so far."""
    assistant_message_event: AssistantMessageEvent = Field(discriminator="type")
    """The provider's stream event."""


class MessageEndEvent(_Event):
    """A message is complete (and persisted)."""

    type: Literal["message_end"] = "message_end"
    message: AgentMessage


class ToolExecutionStartEvent(_Event):
    """A tool call is about to run (emitted in call order)."""

    type: Literal["tool_execution_start"] = "tool_execution_start"
    tool_call_id: str
    tool_name: str
    args: dict[str, Any] = Field(default_factory=dict)


class ToolExecutionUpdateEvent(_Event):
    """A running tool reported progress; `partial_result` is cumulative."""

    type: Literal["tool_execution_update"] = "tool_execution_update"
    tool_call_id: str
    tool_name: str
    args: dict[str, Any] = Field(default_factory=dict)
    partial_result: ToolExecutionResult


class ToolExecutionEndEvent(_Event):
    """A tool call finished (emitted as each finishes; results enter the context in call order)."""

    type: Literal["tool_execution_end"] = "tool_execution_end"
    tool_call_id: str
    tool_name: str
    result: ToolExecutionResult
    is_error: bool = False


class CompactionStartEvent(_Event):
    """A compaction began."""

    type: Literal["compaction_start"] = "compaction_start"
    reason: CompactionReason


class CompactionEndEvent(_Event):
    """A compaction ended: `result` on success, `aborted` or `error_message` otherwise."""

    type: Literal["compaction_end"] = "compaction_end"
    reason: CompactionReason
    result: CompactionResult | None = None
    aborted: bool = False
    will_retry: bool = False
    """True when the session retries the failed request after this (overflow recovery)."""
    error_message: str | None = None


class AutoRetryStartEvent(_Event):
    """A transient provider error will be retried after `delay_ms`."""

    type: Literal["auto_retry_start"] = "auto_retry_start"
    attempt: int
    """1-based retry number."""
    max_attempts: int
    delay_ms: int
    error_message: str


class AutoRetryEndEvent(_Event):
    """Retrying ended: a request succeeded, retries ran out, or the retry was cancelled."""

    type: Literal["auto_retry_end"] = "auto_retry_end"
    success: bool
    attempt: int
    final_error: str | None = None


class QueueUpdateEvent(_Event):
    """The steering or follow-up queue changed; both lists hold the queued texts."""

    type: Literal["queue_update"] = "queue_update"
    steering: list[str] = Field(default_factory=list)
    follow_up: list[str] = Field(default_factory=list)


class RateLimitWaitEvent(_Event):
    """A model request waits for its endpoint's shared rate limiter (`waiting` false: it was sent)."""

    type: Literal["rate_limit_wait"] = "rate_limit_wait"
    waiting: bool
    endpoint: str
    """The provider endpoint (base URL) the request is for."""
    reason: Literal["retry_after", "concurrency", "requests_per_minute", "tokens_per_minute"] | None = None
    """What it waits for: the provider's `Retry-After` window, a free slot, or a per-minute cap."""
    until_ms: int | None = None
    """When the wait is expected to end (Unix ms), when known."""
    since_ms: int = 0
    """When this request began waiting (Unix ms)."""

    def describe(self, now_ms: int) -> str:
        """`waiting (rate limit, Ns)`: the seconds left when known, else the seconds waited so far."""
        from corral._units import format_rate_limit_wait

        return format_rate_limit_wait(until_ms=self.until_ms, since_ms=self.since_ms, now_ms=now_ms)


class AgentSettledEvent(_Event):
    """The session is idle: no retry, compaction retry or queued message remains."""

    type: Literal["agent_settled"] = "agent_settled"


class ModelNoticeEvent(_Event):
    """Something the user should know about the model the next request goes to, said once per
    session and model: today, that its provider deprecated or retired it (`corral.llm._lifecycle`).
    The request is sent all the same."""

    type: Literal["model_notice"] = "model_notice"
    model: str
    """The model's ref (`provider/id`)."""
    kind: Literal["deprecated", "retired"]
    text: str
    """One line for a person, naming the successor when the provider names one."""


AgentEvent = Annotated[
    AgentStartEvent
    | AgentEndEvent
    | TurnStartEvent
    | TurnEndEvent
    | MessageStartEvent
    | MessageUpdateEvent
    | MessageEndEvent
    | ToolExecutionStartEvent
    | ToolExecutionUpdateEvent
    | ToolExecutionEndEvent
    | CompactionStartEvent
    | CompactionEndEvent
    | AutoRetryStartEvent
    | AutoRetryEndEvent
    | QueueUpdateEvent
    | RateLimitWaitEvent
    | ModelNoticeEvent
    | AgentSettledEvent,
    Field(discriminator="type"),
]
"""Any event an `AgentSession` emits, tagged by `type`."""
