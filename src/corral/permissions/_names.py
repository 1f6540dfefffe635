"""Tool names: corral's and Claude Code's, so a rule or a hook matcher copied from Claude Code works."""

from __future__ import annotations

__all__ = ["CLAUDE_NAMES", "RULE_TOOLS", "claude_name", "names_of"]

CLAUDE_NAMES: dict[str, tuple[str, ...]] = {
    "bash": ("Bash",),
    "read": ("Read",),
    "edit": ("Edit", "MultiEdit"),
    "write": ("Write",),
    "grep": ("Grep",),
    "find": ("Glob",),
    "ls": ("LS",),
}
"""corral's built-in tools → the names Claude Code gives the same tool (the first is its own); a hook
matcher matches either."""

RULE_TOOLS: dict[str, tuple[str, ...]] = {
    "Bash": ("bash",),
    "Read": ("read", "grep", "find", "ls"),
    "Edit": ("edit", "write"),
    "MultiEdit": ("edit",),
    "Write": ("write",),
    "Grep": ("grep",),
    "Glob": ("find",),
    "LS": ("ls",),
    "Task": ("agent", "agent_delegate", "spawn_agent", "spawn_swarm_agents"),
    "Agent": ("agent", "agent_delegate", "spawn_agent", "spawn_swarm_agents"),
}
"""What a Claude Code tool name in a permission rule covers in corral: as in Claude Code, `Read` rules
apply to every tool that reads files (grep, find, ls too) and `Edit` rules to every tool that edits
them (write too); `Task`/`Agent` covers every tool that starts an agent — the `agent` tool and the
teams spawns (`Task(name)` matches a delegation of definition `name`; a spawn names a tier, not a
definition, so only a bare `Task` covers it)."""


def claude_name(tool: str) -> str | None:
    """Claude Code's name of corral's tool `tool` (`bash` → `Bash`), or `None` when it has none."""
    names = CLAUDE_NAMES.get(tool)
    return None if names is None else names[0]


def names_of(tool: str) -> tuple[str, ...]:
    """Every name tool `tool` answers to: its own, then Claude Code's."""
    return (tool, *CLAUDE_NAMES.get(tool, ()))
