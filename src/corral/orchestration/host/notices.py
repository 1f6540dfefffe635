"""What the host tells a model on its own initiative, as typed facts, and the port that words them.

The host decides *that* an agent moved onto a worker runtime gets one prompt there (`_handoff.py`)
and records *what happened* in a frozen fact; `HostNotices` turns it into the text the agent reads.
It also words its children's notices (`ChildNotices`, `kernel/notices.py`: the retirement steer),
which the host answers as their `ChildHooks`. The default wording is the surfaces'
(`corral.orchestration.surfaces._host_notices.HostNoticeText`); the composition root
(`corral.lead._host.ComposedHost`, the tmux worker's teams host) hands it to `Host(notices=...)`.
The host holds no model-facing prose for these notices and never imports a surface.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from corral.orchestration.kernel.notices import AgentMessages, ChildNotices

__all__ = ["HandedOff", "HostNotices"]


@dataclass(frozen=True, slots=True)
class HandedOff:
    """An agent was moved onto a worker runtime by its owner: the one prompt it gets there."""

    runtime: str
    """The worker runtime it runs on now (`tmux`, `ray`)."""
    carried: tuple[str, ...]
    """Prompts that arrived for it while it was being moved, in order (sent with this prompt)."""


class HostNotices(ChildNotices, AgentMessages, Protocol):
    """Words for the host's notices and its children's: one method per fact, each returning the model's text."""

    def handed_off(self, fact: HandedOff) -> str:
        """The prompt an agent moved onto a worker runtime continues with (before carried messages)."""
        ...
