"""Permission rules (`[permissions]` in settings): Claude Code's `allow` / `ask` / `deny` syntax,
evaluated in-process for every tool call of every agent (docs/permissions.md).

Imports nothing of corral: the settings validate rules with `parse_rule`, and the hooks package
(`corral.hooks`) puts rules and hooks together into each agent's tool gate.
"""

from ._names import CLAUDE_NAMES, RULE_TOOLS, claude_name, names_of
from ._rules import (
    Decision,
    Permissions,
    Rule,
    RuleError,
    RuleVerdict,
    parse_rule,
    split_command,
    stricter,
)

__all__ = [
    "CLAUDE_NAMES",
    "RULE_TOOLS",
    "Decision",
    "Permissions",
    "Rule",
    "RuleError",
    "RuleVerdict",
    "claude_name",
    "names_of",
    "parse_rule",
    "split_command",
    "stricter",
]
