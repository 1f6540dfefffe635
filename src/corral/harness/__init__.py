"""Harnesses: programs other than corral's own agent loop that run a managed agent.

A harness is *what* runs an agent (corral's loop, or a coding agent spoken to over a protocol);
a runtime is *where* it runs (in-process, a tmux pane, a Ray worker). `acp/` runs any agent that
speaks the Agent Client Protocol (Claude Code's, Codex's, OpenCode, Gemini CLI, goose) as an
`AgentSession` that records the agent's turn into corral's session file.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = [
    "ACP_HARNESS",
    "ACP_PRESETS",
    "CORRAL_HARNESS",
    "HARNESS_NAMES",
    "AcpPreset",
    "harness_problem",
    "is_acp",
]

CORRAL_HARNESS = "corral"
"""corral's own agent loop (`AgentSession`)."""

ACP_HARNESS = "acp"
"""An agent process spoken to over the Agent Client Protocol (`corral.harness.acp`)."""


@dataclass(frozen=True, slots=True)
class AcpPreset:
    """A known ACP agent: how corral starts it and what it needs (docs/harnesses.md)."""

    command: tuple[str, ...]
    """The program (found on `PATH`) and its arguments."""
    package: str
    """The npm package that provides the program."""
    version: str
    """The package version corral is tested with."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Variables the agent needs to run under corral; corral's environment and `[harnesses.<name>]`
    `env` override them."""
    env_as_root: Mapping[str, str] = field(default_factory=dict)
    """Variables the agent needs when corral runs as root, whatever corral's environment says
    (`[harnesses.<name>]` `env` still overrides them)."""
    install: str = ""
    """What to run when the program is missing (default `npm install -g <package>@<version>`)."""

    @property
    def install_command(self) -> str:
        """How to install the agent."""
        return self.install or f"npm install -g {self.package}@{self.version}"

    def root_environment(self) -> dict[str, str]:
        """`env_as_root` when corral runs as root, else nothing."""
        as_root = hasattr(os, "geteuid") and os.geteuid() == 0
        return dict(self.env_as_root) if as_root else {}


ACP_PRESETS: dict[str, AcpPreset] = {
    "claude-code": AcpPreset(
        ("claude-agent-acp",),
        "@agentclientprotocol/claude-agent-acp",
        "0.101.0",
        # MCP tools stay in the tool list; no update checks or telemetry from a managed agent.
        env={"ENABLE_TOOL_SEARCH": "false", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"},
        # Claude Code refuses to start as root unless it is told it runs in a sandbox (only `1`
        # counts: a sandbox's own `IS_SANDBOX=yes` does not).
        env_as_root={"IS_SANDBOX": "1"},
    ),
    "codex": AcpPreset(("codex-acp",), "@zed-industries/codex-acp", "0.16.0"),
    "opencode": AcpPreset(("opencode", "acp"), "opencode-ai", "1.18.33"),
    "gemini": AcpPreset(
        ("gemini", "--acp"),
        "@google/gemini-cli",
        "0.61.0",
        # Without it Gemini CLI exits 55 in a folder the user has not trusted interactively.
        env={"GEMINI_CLI_TRUST_WORKSPACE": "true"},
    ),
    "goose": AcpPreset(
        ("goose", "acp"),
        "@aaif/goose-binary-linux-x64",
        "1.52.0",
        # Ask the owner before running a tool (goose's default, `auto`, asks nothing).
        env={"GOOSE_MODE": "approve", "GOOSE_DISABLE_KEYRING": "1"},
        install=(
            "npm install -g @aaif/goose-binary-linux-x64@1.52.0, then put its bin/goose on PATH "
            "(or see https://block.github.io/goose/docs/getting-started/installation)"
        ),
    ),
}
"""Harness names that stand for `acp` with a known agent: its command, the npm package and version
it is tested with, and the environment it needs. A definition's `command` replaces the preset's;
`[harnesses.<name>]` settings replace the command and add environment (docs/harnesses.md)."""

HARNESS_NAMES = (CORRAL_HARNESS, ACP_HARNESS, *ACP_PRESETS)
"""Every name a definition's `harness` may take."""


def is_acp(harness: str) -> bool:
    """Whether `harness` runs the agent over ACP (`acp` or a preset)."""
    return harness == ACP_HARNESS or harness in ACP_PRESETS


def harness_problem(harness: str, command: tuple[str, ...]) -> str | None:
    """Why a definition's `harness` and `command` cannot run an agent, or `None` when they can."""
    if harness not in HARNESS_NAMES:
        return f"its harness {harness!r} is unknown; use one of {', '.join(HARNESS_NAMES)}"
    if harness == ACP_HARNESS and not command:
        return "harness acp needs command: [program, arg, …] (or a preset harness such as claude-code)"
    if harness == CORRAL_HARNESS and command:
        return "command is only for an ACP harness; set harness: acp (or a preset) or remove command"
    return None
