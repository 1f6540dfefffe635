"""The tool gate: a port the agent loop asks before each tool call runs, and tells after it ran.

`AgentSession` knows nothing of hooks or permission rules. Before it runs a tool call whose
arguments are valid, it asks its `ToolGate` (none by default: every call runs) with a `ToolCheck`;
after the tool ran, it tells the gate the result. The user's policy (`corral.permissions`' rules and
`corral.hooks`' PreToolUse / PostToolUse hooks) supplies a gate for every agent in the tree: the
lead, managed agents, nested helpers and teams members, in-process and on workers.

The gate answers with a `ToolVerdict`:

* `allow` — run the call;
* `deny` — do not run it: the call gets an error result carrying `reason`, and the agent goes on;
* `ask` — someone must approve it first: the loop asks its `ToolApprover` (set by whoever can
  answer: the lead's owner, a person in the app); with none, the call is denied, saying why, and
  never waits.

`context` (any decision) is text for the model: it is added to the call's result. `after_tool`
may return more of it (a PostToolUse hook's `additionalContext`).

A gate that raises is a failure of the gate: the call is denied (the policy could not be checked).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from ._tool import ToolResult

__all__ = ["ALLOW", "ToolApprover", "ToolCheck", "ToolGate", "ToolVerdict"]

ToolDecision = Literal["allow", "deny", "ask"]


@dataclass(frozen=True, slots=True)
class ToolCheck:
    """One tool call about to run (or that ran), as the gate sees it."""

    call_id: str
    tool_name: str
    """The tool's name as offered to the model (`bash`, `mcp__github__get_issue`, `agent`, …)."""
    arguments: Mapping[str, Any]
    """The call's arguments, validated against the tool's schema."""
    session_id: str
    """The agent's session id."""
    transcript_path: Path | None
    """The agent's session file (`None`: an in-memory session)."""
    cwd: Path
    """The agent's working directory."""


@dataclass(frozen=True, slots=True)
class ToolVerdict:
    """The gate's answer before one tool call."""

    decision: ToolDecision
    reason: str = ""
    """Why (for `deny`, the text the model reads; for `ask`, what the approver is shown)."""
    context: str = ""
    """Text for the model, added to the call's result (a hook's `additionalContext`)."""
    by_default: bool = False
    """No rule and no hook decided: the policy's default did (`permissions.default`). A broker that
    has its own way to ask (an ACP agent's permission request) asks rather than take a default allow."""


ALLOW = ToolVerdict("allow")


class ToolGate(Protocol):
    """Asked before every tool call of one agent; told about every call that ran."""

    async def before_tool(self, check: ToolCheck) -> ToolVerdict:
        """Whether the call may run."""
        ...

    async def after_tool(self, check: ToolCheck, result: ToolResult) -> str | None:
        """The call ran with `result`: text to add to the result for the model, or `None`."""
        ...


ToolApprover = Callable[[ToolCheck, ToolVerdict], Awaitable[ToolVerdict]]
"""Answers an `ask` verdict: `allow` or `deny` (with the answer's reason). Set with
`AgentSession.set_tool_approver` by whoever can answer for the agent."""
