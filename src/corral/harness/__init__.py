"""Harnesses: programs other than corral's own agent loop that run a managed agent.

A harness is *what* runs an agent (corral's loop, or a coding agent spoken to over a protocol);
a runtime is *where* it runs (in-process, a tmux pane, a Ray worker). `acp/` runs any agent that
speaks the Agent Client Protocol (Claude Code's, Codex's, OpenCode, Gemini CLI, goose) as an
`AgentSession` that records the agent's turn into corral's session file.
"""

from __future__ import annotations

__all__ = ["ACP_HARNESS", "CORRAL_HARNESS", "HARNESS_NAMES"]

CORRAL_HARNESS = "corral"
"""corral's own agent loop (`AgentSession`)."""

ACP_HARNESS = "acp"
"""An agent process spoken to over the Agent Client Protocol (`corral.harness.acp`)."""

HARNESS_NAMES = (CORRAL_HARNESS, ACP_HARNESS)
"""The harnesses a definition's `harness` may name (besides the ACP presets, `acp.PRESETS`)."""
