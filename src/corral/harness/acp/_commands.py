"""The command that starts an ACP agent, and the preset commands of known agents."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PRESETS", "AcpCommand", "preset_command"]

PRESETS: dict[str, tuple[str, ...]] = {
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


@dataclass(frozen=True, slots=True)
class AcpCommand:
    """How to start one ACP agent process."""

    argv: tuple[str, ...]
    """The program and its arguments."""
    name: str
    """What the agent is called in the session file's model line (`acp/<name>`): the preset's name,
    else the program's base name."""

    def __post_init__(self) -> None:
        if not self.argv or not all(isinstance(part, str) and part for part in self.argv):
            raise ValueError("an ACP agent's command must be a non-empty list of non-empty strings")


def preset_command(harness: str, command: tuple[str, ...]) -> AcpCommand:
    """The command of a definition with `harness` (`acp` or a preset name) and `command` (may be empty
    for a preset).

    Raises:
        ValueError: `harness` is neither `acp` nor a preset, or `acp` has no command.
    """
    if harness == "acp":
        if not command:
            raise ValueError("harness acp needs command: [program, arg, …]")
        return AcpCommand(command, command[0].rsplit("/", 1)[-1])
    if harness not in PRESETS:
        raise ValueError(f"unknown ACP preset {harness!r}; use one of {', '.join(sorted(PRESETS))}")
    return AcpCommand(command or PRESETS[harness], harness)
