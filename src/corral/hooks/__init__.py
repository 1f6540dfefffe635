"""Hooks (`[hooks]` in settings) in Claude Code's format, and every agent's tool gate: the user's
`[permissions]` rules and PreToolUse / PostToolUse hooks, for the lead, managed agents, nested helpers
and teams members, in-process and on workers (docs/hooks.md, docs/permissions.md).

`install_tool_policy(agent, settings, identity)` is what each kind of process calls where it builds
an agent (`corral.lead`, `corral._compose`).
"""

from ._outcome import HookAnswer, read_answer
from ._policy import (
    AgentIdentity,
    Policy,
    ToolPolicy,
    compile_layers,
    install_tool_policy,
    policy_of,
    tool_input,
)
from ._run import HookRun, hook_environment, run_command_hook

__all__ = [
    "AgentIdentity",
    "HookAnswer",
    "HookRun",
    "Policy",
    "ToolPolicy",
    "compile_layers",
    "hook_environment",
    "install_tool_policy",
    "policy_of",
    "read_answer",
    "run_command_hook",
    "tool_input",
]
