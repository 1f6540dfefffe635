"""The `transcript` projection (`spec/agent-api-detail.md` §2.6), as data and as bounded text.

The persisted session is read through the session's compaction- and
branch-aware context (`SessionManager.build_context`), so what is shown is
what the agent currently "remembers": user text, visible assistant text,
tool calls with their JSON arguments, textual tool results, and compaction
or branch summaries. Reasoning, system prompts, custom (program) messages,
model metadata and images are left out.

Bounds: a tool result over 4 KiB keeps its head and tail halves around
`TOOL_RESULT_MARKER`; the whole text is tail-bounded to 16 KiB.
`truncated` is true when either bound applied.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from corral.llm import (
    AssistantMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    TextContent,
    ToolResultMessage,
    UserMessage,
)
from corral.orchestration.errors import TargetNotFoundError
from corral.session import SessionError, SessionManager

__all__ = [
    "TOOL_RESULT_LIMIT",
    "TOOL_RESULT_MARKER",
    "TRANSCRIPT_LIMIT",
    "Transcript",
    "TranscriptBlock",
    "read_transcript",
]

TOOL_RESULT_LIMIT = 4096
TRANSCRIPT_LIMIT = 16384
TOOL_RESULT_MARKER = "\n[... middle of tool result omitted ...]\n"

BlockKind = Literal["user", "assistant", "tool_call", "tool_result", "compaction_summary", "branch_summary"]


@dataclass(frozen=True)
class TranscriptBlock:
    """One projected message part."""

    kind: BlockKind
    text: str
    tool_name: str | None = None
    is_error: bool = False

    def render(self) -> str:
        """The block as transcript text."""
        if self.kind == "tool_call":
            return f"tool {self.tool_name}:\n{self.text}"
        if self.kind == "tool_result":
            marker = " [error]" if self.is_error else ""
            return f"tool result {self.tool_name}{marker}:\n{self.text}"
        heading = {
            "user": "user",
            "assistant": "assistant",
            "compaction_summary": "compaction summary",
            "branch_summary": "branch summary",
        }[self.kind]
        return f"{heading}:\n{self.text}"


@dataclass(frozen=True)
class Transcript:
    """The projection of one session."""

    session_id: str
    blocks: tuple[TranscriptBlock, ...]
    text: str
    truncated: bool


def _bound_middle(text: str, limit: int) -> tuple[str, bool]:
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text, False
    half = limit // 2
    head = data[:half].decode("utf-8", errors="ignore")
    tail = data[len(data) - half :].decode("utf-8", errors="ignore")
    return head + TOOL_RESULT_MARKER + tail, True


def _bound_tail(text: str, limit: int) -> tuple[str, bool]:
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text, False
    return data[len(data) - limit :].decode("utf-8", errors="ignore"), True


def _user_text(message: UserMessage) -> str:
    if isinstance(message.content, str):
        return message.content
    return "\n".join(part.text for part in message.content if isinstance(part, TextContent))


def read_transcript(path: Path, expected_session_id: str) -> Transcript:
    """Project the persisted session at `path`.

    Raises:
        TargetNotFoundError: The file is not that session (or cannot be read as one).
    """
    try:
        with SessionManager.open(path, read_only=True) as manager:
            if manager.session_id != expected_session_id:
                raise TargetNotFoundError(
                    f"Session file {path} holds session {manager.session_id}, not {expected_session_id}."
                )
            messages = manager.build_context().messages
    except SessionError as exc:
        raise TargetNotFoundError(f"Cannot read the session of this agent: {exc}") from None
    blocks: list[TranscriptBlock] = []
    truncated = False
    for message in messages:
        if isinstance(message, UserMessage):
            text = _user_text(message)
            if text.strip():
                blocks.append(TranscriptBlock("user", text))
        elif isinstance(message, AssistantMessage):
            if message.text.strip():
                blocks.append(TranscriptBlock("assistant", message.text))
            for call in message.tool_calls:
                args = json.dumps(call.arguments, ensure_ascii=False)
                blocks.append(TranscriptBlock("tool_call", args, tool_name=call.name))
        elif isinstance(message, ToolResultMessage):
            text = "\n".join(part.text for part in message.content if isinstance(part, TextContent))
            text, cut = _bound_middle(text, TOOL_RESULT_LIMIT)
            truncated = truncated or cut
            blocks.append(
                TranscriptBlock("tool_result", text, tool_name=message.tool_name, is_error=message.is_error)
            )
        elif isinstance(message, CompactionSummaryMessage):
            blocks.append(TranscriptBlock("compaction_summary", message.summary))
        elif isinstance(message, BranchSummaryMessage):
            blocks.append(TranscriptBlock("branch_summary", message.summary))
    text, cut = _bound_tail("\n\n".join(block.render() for block in blocks), TRANSCRIPT_LIMIT)
    return Transcript(expected_session_id, tuple(blocks), text, truncated or cut)
