"""What corral says to an ACP agent in its own words: the transcript a continued session is seeded
with when the agent cannot load its earlier session (`session/load`), and what the user's policy
(permission rules, PreToolUse hooks) did with the agent's permission and file requests."""

from __future__ import annotations

from collections.abc import Sequence

from corral.llm import AgentMessage, AssistantMessage, TextContent, ToolCall, ToolResultMessage, UserMessage

__all__ = ["denied_call", "file_question", "refused_file", "seeded_prompt", "transcript_seed"]

_RESULT_CHARS = 2000
"""A tool result is cut to this many characters in the seed."""


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    return (
        "".join(block.text for block in content if isinstance(block, TextContent))
        if isinstance(content, list)
        else ""
    )


def transcript_seed(messages: Sequence[AgentMessage]) -> str:
    """The earlier session as plain text: each user message, the agent's replies and tool calls, and
    the tool results (cut to 2,000 characters each). Empty when there is nothing to tell."""
    lines: list[str] = []
    for message in messages:
        if isinstance(message, UserMessage):
            lines.append(f"[user]\n{_text(message.content)}")
        elif isinstance(message, AssistantMessage):
            text = _text(message.content)
            calls = [part for part in message.content if isinstance(part, ToolCall)]
            if text:
                lines.append(f"[you]\n{text}")
            for call in calls:
                title = call.arguments.get("title") if isinstance(call.arguments, dict) else None
                lines.append(f"[your tool call {call.name}] {title or call.arguments}")
            if message.stop_reason == "aborted":
                lines.append("[your turn was interrupted]")
        elif isinstance(message, ToolResultMessage):
            result = _text(message.content)
            if len(result) > _RESULT_CHARS:
                result = result[:_RESULT_CHARS] + " …(cut)"
            lines.append(f"[tool result{' (error)' if message.is_error else ''}]\n{result}")
    return "\n\n".join(lines)


def seeded_prompt(seed: str, prompt: str) -> str:
    """The first prompt of a new session that continues an earlier one it could not load."""
    return (
        "You are continuing an earlier session whose history you no longer have. "
        "This is its transcript, oldest first:\n\n"
        f"<transcript>\n{seed}\n</transcript>\n\n"
        f"Your new instruction:\n\n{prompt}"
    )


def denied_call(tool: str, reason: str) -> str:
    """A tool call the policy denied when the agent asked permission (shown with the call's result)."""
    return f"{tool} was not run: {reason} (corral rejected the agent's permission request)"


def refused_file(tool: str, path: str, reason: str) -> str:
    """The error an `fs/*` request the policy denied gets (the agent reads it)."""
    return f"{tool} {path} was refused: {reason}; corral's permission policy does not let this agent do it"


def file_question(tool: str, path: str, reason: str) -> str:
    """What the owner is asked about a file request the policy asks about."""
    return f"{tool} {path} ({reason})"
