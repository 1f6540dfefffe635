"""The agent loop, its events, system prompt assembly and built-in tools."""

from ._errors import AgentBusyError, AgentError, CompactionError
from ._events import (
    AgentEndEvent,
    AgentEvent,
    AgentSettledEvent,
    AgentStartEvent,
    AutoRetryEndEvent,
    AutoRetryStartEvent,
    CompactionEndEvent,
    CompactionReason,
    CompactionResult,
    CompactionStartEvent,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    ModelNoticeEvent,
    QueueUpdateEvent,
    RateLimitWaitEvent,
    ToolExecutionEndEvent,
    ToolExecutionResult,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    TurnEndEvent,
    TurnStartEvent,
)
from ._guard import GuardVerdict, RequestEstimate, RequestGuard
from ._loop import SEEN_REFERENCE_KEY
from ._session import AgentSession, StreamingBehavior
from ._stats import ContextUsage, SessionStats, TokenStats, compute_session_stats
from ._system_prompt import build_system_prompt, find_context_files
from ._tool import AgentTool, ToolError, ToolResult, ToolUpdate
from ._validation import ToolArgumentsError, validate_tool_arguments
from ._window import ContextOverhead, describe_failed_reply, reply_note

__all__ = [
    "SEEN_REFERENCE_KEY",
    "AgentBusyError",
    "AgentEndEvent",
    "AgentError",
    "AgentEvent",
    "AgentSession",
    "AgentSettledEvent",
    "AgentStartEvent",
    "AgentTool",
    "AutoRetryEndEvent",
    "AutoRetryStartEvent",
    "CompactionEndEvent",
    "CompactionError",
    "CompactionReason",
    "CompactionResult",
    "CompactionStartEvent",
    "ContextOverhead",
    "ContextUsage",
    "GuardVerdict",
    "MessageEndEvent",
    "MessageStartEvent",
    "MessageUpdateEvent",
    "ModelNoticeEvent",
    "QueueUpdateEvent",
    "RateLimitWaitEvent",
    "RequestEstimate",
    "RequestGuard",
    "SessionStats",
    "StreamingBehavior",
    "TokenStats",
    "ToolArgumentsError",
    "ToolError",
    "ToolExecutionEndEvent",
    "ToolExecutionResult",
    "ToolExecutionStartEvent",
    "ToolExecutionUpdateEvent",
    "ToolResult",
    "ToolUpdate",
    "TurnEndEvent",
    "TurnStartEvent",
    "build_system_prompt",
    "compute_session_stats",
    "describe_failed_reply",
    "find_context_files",
    "reply_note",
    "validate_tool_arguments",
]
