"""`corral permissions check <tool> <input-json>`: what the user's policy would do with one tool call.

It reads the settings of the current directory (as `corral run` would: the user file and a trusted
project's), evaluates the `[permissions]` rules for the call and names the PreToolUse hooks that would
run before it; `--run-hooks` runs them too (they are the user's commands: they may have effects) and
gives the combined decision. A bad tool name or input is a one-line error, exit code 2.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import IO, Any

from corral.errors import UsageError

__all__ = ["permissions_check"]


def _tool(name: str) -> str:
    """corral's tool of `name`, which may be Claude Code's (`Bash` → `bash`)."""
    from corral.permissions import CLAUDE_NAMES

    name = name.strip()
    if not name or any(c.isspace() for c in name):
        raise UsageError(f"{name!r} is not a tool name (e.g. bash, read, Edit, mcp__github__get_issue)")
    for tool, names in CLAUDE_NAMES.items():
        if name in names:
            return tool
    return name


def _arguments(text: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise UsageError(
            f'the tool input is not JSON ({exc}); give an object, e.g. \'{{"command": "ls"}}\''
        ) from None
    if not isinstance(data, dict):
        raise UsageError('the tool input is not a JSON object; give an object, e.g. \'{"command": "ls"}\'')
    return data


def _line(decision: str, reason: str) -> str:
    if decision == "ask":
        reason += "; with no one to ask (a headless run) it is denied"
    return f"{decision}: {reason}" if reason else decision


def permissions_check(
    tool: str, input_text: str, *, cwd: Path, run_hooks: bool, out: IO[str], warn: IO[str]
) -> int:
    """Print the decision for one call and why (exit code 0 whatever it is)."""
    from corral.agent import ToolCheck
    from corral.hooks import AgentIdentity, ToolPolicy, policy_of
    from corral.settings import load_settings

    name = _tool(tool)
    arguments = _arguments(input_text)
    settings = load_settings(cwd, on_warning=lambda line: print(f"corral: warning: {line}", file=warn))
    policy = policy_of(settings)
    session = str(uuid.uuid4())
    gate = ToolPolicy(policy, AgentIdentity(session, "lead", "lead", None, session), cwd=cwd)
    check = ToolCheck("permissions-check", name, arguments, session, None, cwd)
    ruled = gate.rules(check)
    hooks = policy.hooks_for("PreToolUse", name)
    commands = ", ".join(f"`{hook.command}`" for hook in hooks)
    if ruled.decision == "deny" or not hooks:
        out.write(_line(ruled.decision, ruled.reason(name)) + "\n")
        if hooks:
            out.write(f"hooks: none run, as a deny rule ends the call first ({commands})\n")
        return 0
    if not run_hooks:
        out.write(_line(ruled.decision, ruled.reason(name)) + "\n")
        count = f"{len(hooks)} PreToolUse hook{'s' if len(hooks) > 1 else ''}"
        out.write(
            f"hooks: {count} would run first and may deny it or ask: {commands} (--run-hooks runs them)\n"
        )
        return 0
    verdict = asyncio.run(gate.before_tool(check))
    reason = verdict.reason or (
        ruled.reason(name) if verdict.decision == ruled.decision else "a PreToolUse hook allows it"
    )
    out.write(_line(verdict.decision, reason) + "\n")
    out.write(f"hooks: ran {commands}\n")
    if verdict.context:
        out.write(f"context for the model: {' '.join(verdict.context.split())}\n")
    return 0
