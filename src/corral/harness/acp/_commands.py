"""The command that starts an ACP agent, and the preset commands of known agents."""

from __future__ import annotations

from dataclasses import dataclass

from corral.harness import ACP_PRESETS

__all__ = ["PRESETS", "AcpCommand", "preset_command"]

PRESETS = ACP_PRESETS
"""The preset agents (`corral.harness.ACP_PRESETS`)."""


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
