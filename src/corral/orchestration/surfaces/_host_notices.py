"""What the host tells a model, in corral's words (`HostNoticeText`, the default `HostNotices`).

The host decides when an agent is told (`orchestration/host/notices.py`); only this module says it
in words. Small on purpose: the composition root loads it with every host.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from corral.orchestration.host.notices import HandedOff
    from corral.orchestration.kernel.notices import ContextRetired

__all__ = ["HANDOFF_PROMPT", "REMOTE_HANDOFF_PROMPT", "RETIREMENT_TEXT", "HostNoticeText"]

HANDOFF_PROMPT = (
    "You were moved to a terminal pane by your owner; continue the same assignment where you left off."
)
"""The prompt an agent moved into a tmux pane gets in its worker (before any carried-over messages)."""

REMOTE_HANDOFF_PROMPT = (
    "You were moved to another worker by your owner; continue the same assignment where you left off."
)
"""The prompt an agent moved to another worker runtime (Ray) gets there."""


RETIREMENT_TEXT = (
    "Your context is under pressure and this session is now retired. Do not start new work: finish the "
    "current coherent step and end with a self-contained handoff (what is done, what remains, relevant "
    "files) as your final answer."
)
"""The steer an agent gets when its context is compacted at its threshold (`contextRetirement`)."""


class HostNoticeText:
    """The host's and its children's notices in corral's words."""

    def context_retired(self, fact: ContextRetired) -> str:
        """`RETIREMENT_TEXT`: finish the current step, end with a self-contained handoff."""
        return RETIREMENT_TEXT

    def handed_off(self, fact: HandedOff) -> str:
        """`HANDOFF_PROMPT` (tmux) or `REMOTE_HANDOFF_PROMPT`, then the carried messages under a heading."""
        prompt = HANDOFF_PROMPT if fact.runtime == "tmux" else REMOTE_HANDOFF_PROMPT
        if fact.carried:
            prompt += "\n\nMessages that arrived while you were being moved:\n\n" + "\n\n".join(fact.carried)
        return prompt
