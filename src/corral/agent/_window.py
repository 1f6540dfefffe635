"""Fitting a session to its model's context window, and naming replies that are not answers.

corral's own system prompt and tool schemas are sent with every request. On a small window
(a local model started with 2,048 or 4,096 tokens) they can take most of it, or more than all
of it. `ContextOverhead` measures them (`ceil(chars / 4)`, like the message estimates); more
than `OVERHEAD_WARN_SHARE` of the window gets a warning, the whole window an error before any
request is sent.

`reply_note` names the replies that end normally but carry no answer (empty, or cut at the
reply cap), for the front ends to show.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass

from corral.llm import AssistantMessage, ModelInfo, TextContent, ToolDefinition
from corral.session import is_context_overflow

__all__ = [
    "OVERHEAD_WARN_SHARE",
    "ContextOverhead",
    "describe_failed_reply",
    "estimate_overhead_tokens",
    "reply_note",
]

OVERHEAD_WARN_SHARE = 0.5
"""Warn when corral's system prompt and tools take more than this share of the window."""


def estimate_overhead_tokens(system_prompt: str, tools: Sequence[ToolDefinition]) -> int:
    """Estimated tokens of the system prompt and the tool schemas sent with every request."""
    chars = len(system_prompt)
    for tool in tools:
        chars += len(tool.name) + len(tool.description) + len(json.dumps(tool.parameters))
    return math.ceil(chars / 4)


@dataclass(frozen=True)
class ContextOverhead:
    """What corral itself sends with every request, against the model's window."""

    tokens: int
    """Estimated tokens of the system prompt and tool schemas."""
    context_window: int
    model_ref: str
    tool_count: int

    @property
    def share(self) -> float:
        """`tokens / context_window` (0 when the window is unknown)."""
        return self.tokens / self.context_window if self.context_window > 0 else 0.0

    def _what(self) -> str:
        return (
            f"corral's system prompt and {self.tool_count} tool definitions take about {self.tokens:,} tokens"
        )

    def error(self) -> str | None:
        """The error when nothing fits beside the overhead, else `None`."""
        if self.context_window <= 0 or self.tokens < self.context_window:
            return None
        return (
            f"{self._what()}, more than the {self.context_window:,}-token context window of "
            f"{self.model_ref}, so no request can fit: start the server with a larger window and set "
            "that model's context_window to it, or offer fewer tools (--surfaces agent, or --surfaces '' "
            "for none)"
        )

    def warning(self) -> str | None:
        """The warning when the overhead takes more than `OVERHEAD_WARN_SHARE` of the window, else `None`."""
        if self.error() is not None or self.share <= OVERHEAD_WARN_SHARE:
            return None
        return (
            f"{self._what()}, {self.share:.0%} of the {self.context_window:,}-token context window of "
            f"{self.model_ref}; little room is left for the conversation (a larger window, or fewer "
            "surfaces, helps)"
        )


def reply_note(message: AssistantMessage, info: ModelInfo | None = None) -> str | None:
    """A one-line note for a finished reply that is not a full answer: cut at the cap, or empty."""
    if message.stop_reason == "length":
        cap = f" ({info.max_tokens:,} tokens, the model's max_tokens)" if info is not None else ""
        return f"the reply was cut at the reply cap{cap}; raise max_tokens in the model's settings for longer replies"
    if message.stop_reason == "stop" and not _has_answer(message):
        return "the model returned an empty reply (no text and no tool call)"
    return None


def _has_answer(message: AssistantMessage) -> bool:
    return bool(message.tool_calls) or any(
        isinstance(block, TextContent) and block.text.strip() for block in message.content
    )


def describe_failed_reply(message: AssistantMessage, info: ModelInfo) -> str:
    """The one-line reason a reply failed, with what to do for a context overflow."""
    error = message.error_message or ("aborted" if message.stop_reason == "aborted" else "provider error")
    if message.stop_reason == "error" and is_context_overflow(message, info.context_window):
        return (
            f"the conversation no longer fits the {info.context_window:,}-token context window of "
            f"{info.ref} and compaction could not make room ({error}); start a new session, use a "
            "larger window (and set context_window to it), or send less at once"
        )
    return error
