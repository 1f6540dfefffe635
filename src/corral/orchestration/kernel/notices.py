"""What a managed child tells its own agent on the kernel's initiative, as typed facts, and the port
that words them.

The kernel decides *that* an agent whose context is compacted at its threshold is told its session
is retired (`ManagedChild`, with `contextRetirement`) and records the fact below; the child asks its
host for the words (`ChildHooks.context_retired`), and the host answers from its `ChildNotices`. The
default wording is the surfaces' (`corral.orchestration.surfaces._host_notices.HostNoticeText`); the
composition root hands it to the lead's host (`corral.lead.ComposedHost`) and to the tmux and Ray
workers' hooks. The kernel holds no model-facing prose for these notices and never imports a surface.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

__all__ = ["ChildNotices", "ContextRetired"]


@dataclass(frozen=True, slots=True)
class ContextRetired:
    """An agent's context was compacted at its threshold: its session is retired and it must hand off."""

    run_id: str
    """The generation whose session is retired."""
    session_id: str
    """The retired session."""


class ChildNotices(Protocol):
    """Words for a managed child's notices: one method per fact, each returning the model's text."""

    def context_retired(self, fact: ContextRetired) -> str:
        """The steer that tells the agent to finish its step and end with a self-contained handoff."""
        ...
