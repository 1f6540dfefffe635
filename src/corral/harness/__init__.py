"""Harnesses: programs other than corral's own agent loop that run a managed agent.

A harness is *what* runs an agent (corral's loop, or a coding agent spoken to over a protocol);
a runtime is *where* it runs (in-process, a tmux pane, a Ray worker). `acp/` runs any agent that
speaks the Agent Client Protocol (Claude Code's, Codex's, OpenCode, Gemini CLI, goose) as an
`AgentSession` that records the agent's turn into corral's session file.
"""

from __future__ import annotations

__all__ = ["ACP_HARNESS", "ACP_PRESETS", "CORRAL_HARNESS", "HARNESS_NAMES", "harness_problem", "is_acp"]

CORRAL_HARNESS = "corral"
"""corral's own agent loop (`AgentSession`)."""

ACP_HARNESS = "acp"
"""An agent process spoken to over the Agent Client Protocol (`corral.harness.acp`)."""

ACP_PRESETS: dict[str, tuple[str, ...]] = {
    "claude-code": ("claude-agent-acp",),
    "codex": ("codex-acp",),
    "opencode": ("opencode", "acp"),
    "gemini": ("gemini", "--acp"),
    "goose": ("goose", "acp"),
}
"""Harness names that stand for `acp` with a known agent's command (npm packages
`@agentclientprotocol/claude-agent-acp`, `@zed-industries/codex-acp`, `opencode-ai`,
`@google/gemini-cli`, `@aaif/goose-binary-linux-x64`; docs/harnesses.md lists their versions and
the environment each needs). A definition's `command` replaces the preset's."""

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
