"""Session statistics and context usage (Pi's `getSessionStats`, `getContextUsage`).

Statistics cover **every entry of the session file** (all branches, including
history summarised away by compaction), not just the in-memory context: the
counts and token sums come from message entries, plus the `usage` recorded on
compaction and branch-summary entries, on tool results and in Pi 1.x `usage`
entries. `totalMessages` counts message and custom-message entries of every
role; `toolCalls` counts tool-call blocks, `toolResults` tool-result messages
(Pi 1.6 counts the same way).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from corral.llm import AssistantMessage, PiModel, ToolResultMessage, Usage

__all__ = ["ContextUsage", "SessionStats", "TokenStats", "compute_session_stats"]


class ContextUsage(PiModel):
    """How full the model's context window is."""

    tokens: int | None
    """Estimated context tokens; `None` right after a compaction until a new reply reports usage."""
    context_window: int
    """The model's window in tokens."""
    percent: float | None
    """`tokens / context_window × 100`; `None` when `tokens` is."""


class TokenStats(PiModel):
    """Token sums over a session."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    total: int = 0


class SessionStats(PiModel):
    """Pi's session statistics, over the whole session file."""

    session_file: str | None
    """Path of the session file; `None` for an in-memory session."""
    session_id: str
    user_messages: int = 0
    assistant_messages: int = 0
    tool_calls: int = 0
    """Tool-call blocks in assistant messages."""
    tool_results: int = 0
    total_messages: int = 0
    """All message entries (any role) plus custom-message entries."""
    tokens: TokenStats
    cost: float = 0.0
    """Total cost in USD."""
    context_usage: ContextUsage | None = None


def _usage_of(value: Any) -> Usage | None:
    if isinstance(value, Usage):
        return value
    if isinstance(value, dict):
        try:
            return Usage.model_validate(value)
        except ValueError:
            return None
    return None


def _extra_usage(obj: Any) -> Usage | None:
    """A `usage` field, declared or kept as an extra (camelCase) field."""
    usage = getattr(obj, "usage", None)
    if usage is None:
        extra = getattr(obj, "model_extra", None) or {}
        usage = extra.get("usage")
    return _usage_of(usage)


def compute_session_stats(
    entries: Iterable[Any],
    *,
    session_file: str | None,
    session_id: str,
    context_usage: ContextUsage | None,
) -> SessionStats:
    """Count messages and sum usage over session `entries`.

    Args:
        entries: Every entry of the session (file order).
        session_file: The file's path, if persisted.
        session_id: The session's id.
        context_usage: The current context usage, copied into the result.
    """
    stats = SessionStats(
        session_file=session_file, session_id=session_id, tokens=TokenStats(), context_usage=context_usage
    )
    total = Usage()
    for entry in entries:
        kind = getattr(entry, "type", None)
        if kind == "message":
            message = entry.message
            stats.total_messages += 1
            role = getattr(message, "role", None)
            if role == "user":
                stats.user_messages += 1
            elif isinstance(message, AssistantMessage):
                stats.assistant_messages += 1
                stats.tool_calls += len(message.tool_calls)
                total = total + message.usage
            elif isinstance(message, ToolResultMessage):
                stats.tool_results += 1
                usage = _extra_usage(message)
                if usage is not None:
                    total = total + usage
        elif kind == "custom_message":
            stats.total_messages += 1
        elif kind in ("compaction", "branch_summary", "usage"):
            # Pi 1.x `usage` entries (cache warming and other calls outside the conversation)
            # count toward the totals, as in Pi 1.6.
            usage = _extra_usage(entry)
            if usage is not None:
                total = total + usage
    stats.tokens = TokenStats(
        input=total.input,
        output=total.output,
        cache_read=total.cache_read,
        cache_write=total.cache_write,
        total=total.input + total.output + total.cache_read + total.cache_write,
    )
    stats.cost = total.cost.total
    return stats
