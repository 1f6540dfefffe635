"""What the host tells a model on its own initiative, in corral's words (facts: `notices.py`).

An agent moved onto a worker runtime by its owner continues there with one prompt (`_handoff.py`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from corral.orchestration.host.notices import HandedOff

__all__ = ["HANDOFF_PROMPT", "REMOTE_HANDOFF_PROMPT", "handed_off"]

HANDOFF_PROMPT = (
    "You were moved to a terminal pane by your owner; continue the same assignment where you left off."
)
"""The prompt an agent moved into a tmux pane gets in its worker (before any carried-over messages)."""

REMOTE_HANDOFF_PROMPT = (
    "You were moved to another worker by your owner; continue the same assignment where you left off."
)
"""The prompt an agent moved to another worker runtime (Ray) gets there."""


def handed_off(fact: HandedOff) -> str:
    """The prompt a moved agent continues with: `HANDOFF_PROMPT` (tmux) or `REMOTE_HANDOFF_PROMPT`, then
    the carried messages under a heading."""
    prompt = HANDOFF_PROMPT if fact.runtime == "tmux" else REMOTE_HANDOFF_PROMPT
    if fact.carried:
        prompt += "\n\nMessages that arrived while you were being moved:\n\n" + "\n\n".join(fact.carried)
    return prompt
