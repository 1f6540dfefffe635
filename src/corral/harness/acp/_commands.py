"""The command and environment that start an ACP agent, and the preset commands of known agents."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from corral.harness import ACP_HARNESS, ACP_PRESETS

if TYPE_CHECKING:
    from corral.settings import HarnessSettings

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
    defaults: Mapping[str, str] = field(default_factory=dict)
    """Variables the agent gets unless corral's environment sets them (the preset's)."""
    overrides: Mapping[str, str] = field(default_factory=dict)
    """Variables the agent gets whatever corral's environment says (the preset's `env_as_root` when
    running as root, then `[harnesses.<name>]` `env`)."""

    def __post_init__(self) -> None:
        if not self.argv or not all(isinstance(part, str) and part for part in self.argv):
            raise ValueError("an ACP agent's command must be a non-empty list of non-empty strings")

    def environment(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """The agent's environment: the preset's variables, then `base` (default: corral's
        environment), then the settings' `env`."""
        return {**self.defaults, **(os.environ if base is None else base), **self.overrides}


def preset_command(
    harness: str, command: tuple[str, ...], settings: HarnessSettings | None = None
) -> AcpCommand:
    """The command of a definition with `harness` (`acp` or a preset name) and `command` (may be empty
    for a preset), with the `[harnesses.<harness>]` `settings` if any: the definition's command wins
    over the settings', which wins over the preset's (`acp` takes only the definition's).

    Raises:
        ValueError: `harness` is neither `acp` nor a preset, or `acp` has no command.
    """
    configured = tuple(settings.command or ()) if settings is not None else ()
    overrides = dict(settings.env) if settings is not None else {}
    if harness == ACP_HARNESS:
        if not command:
            raise ValueError("harness acp needs command: [program, arg, …]")
        return AcpCommand(command, command[0].rsplit("/", 1)[-1], overrides=overrides)
    if harness not in PRESETS:
        raise ValueError(f"unknown ACP preset {harness!r}; use one of {', '.join(sorted(PRESETS))}")
    preset = PRESETS[harness]
    return AcpCommand(
        command or configured or preset.command,
        harness,
        defaults=preset.env,
        overrides={**preset.root_environment(), **overrides},
    )
