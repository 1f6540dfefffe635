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
from typing import IO, TYPE_CHECKING, Any

from corral.errors import UsageError

if TYPE_CHECKING:
    from corral.settings import PermissionLayer, Settings

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


def _line(decision: str, reason: str, *, agent: str | None = None) -> str:
    if decision == "ask":
        if agent is None:
            reason += "; with no one to ask (a headless run) it is denied"
        else:
            reason += "; the agent's owner is asked (a yes runs it)"
    return f"{decision}: {reason}" if reason else decision


def _layers(agent: str, settings: Settings, cwd: Path) -> tuple[PermissionLayer, ...]:
    """The rules an agent of definition (or teams tier) `agent` adds when the lead starts it."""
    from corral.llm import ModelRegistry
    from corral.orchestration import load_roster, model_names
    from corral.settings import PermissionLayer

    tier = settings.teams.tier_permissions.get(agent)  # type: ignore[call-overload]
    if tier is not None:
        return (PermissionLayer(f"tier `{agent}`", tier),)
    roster = load_roster(cwd, models=model_names(settings.model_aliases, ModelRegistry(settings, cwd=cwd)))
    defn = roster.get(agent)
    if defn is None:
        raise UsageError(
            f"no definition or teams tier named {agent!r} here; `corral agents list` shows the definitions"
        )
    if not defn.enabled and defn.permissions is None:
        problems = [i.problem for i in roster.issues if defn.path is not None and i.path == defn.path]
        if problems:
            raise UsageError(f"the definition {agent!r} cannot be used: {problems[0]}")
    if defn.permissions is None:
        return ()
    return (PermissionLayer(f"definition `{agent}`", defn.permissions),)


def permissions_check(
    tool: str,
    input_text: str,
    *,
    cwd: Path,
    run_hooks: bool,
    out: IO[str],
    warn: IO[str],
    agent: str | None = None,
) -> int:
    """Print the decision for one call and why (exit code 0 whatever it is); with `agent`, for an agent
    of that definition or teams tier started by the lead (its own rules narrowing the settings')."""
    from corral.agent import ToolCheck
    from corral.hooks import AgentIdentity, ToolPolicy, policy_of
    from corral.settings import load_settings

    name = _tool(tool)
    arguments = _arguments(input_text)
    settings = load_settings(cwd, on_warning=lambda line: print(f"corral: warning: {line}", file=warn))
    policy = policy_of(settings)
    session = str(uuid.uuid4())
    layers = () if agent is None else _layers(agent, settings, cwd)
    identity = (
        AgentIdentity(session, "lead", "lead", None, session)
        if agent is None
        else AgentIdentity(str(uuid.uuid4()), agent, agent, session, session)
    )
    gate = ToolPolicy(policy, identity, cwd=cwd, layers=layers)
    check = ToolCheck("permissions-check", name, arguments, session, None, cwd)
    ruled = gate.rules(check)
    hooks = policy.hooks_for("PreToolUse", name)
    commands = ", ".join(f"`{hook.command}`" for hook in hooks)
    if ruled.decision == "deny" or not hooks:
        out.write(_line(ruled.decision, ruled.reason(name), agent=agent) + "\n")
        if hooks:
            out.write(f"hooks: none run, as a deny rule ends the call first ({commands})\n")
        return 0
    if not run_hooks:
        out.write(_line(ruled.decision, ruled.reason(name), agent=agent) + "\n")
        count = f"{len(hooks)} PreToolUse hook{'s' if len(hooks) > 1 else ''}"
        out.write(
            f"hooks: {count} would run first and may deny it or ask: {commands} (--run-hooks runs them)\n"
        )
        return 0
    verdict = asyncio.run(gate.before_tool(check))
    reason = verdict.reason or (
        ruled.reason(name) if verdict.decision == ruled.decision else "a PreToolUse hook allows it"
    )
    out.write(_line(verdict.decision, reason, agent=agent) + "\n")
    out.write(f"hooks: ran {commands}\n")
    if verdict.context:
        out.write(f"context for the model: {' '.join(verdict.context.split())}\n")
    return 0
