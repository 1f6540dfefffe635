"""What the host tells a model on its own initiative, as typed facts (their words are `texts.py`'s).

The host decides *that* an agent moved onto a worker runtime gets one prompt there (`_handoff.py`)
and records *what happened* in a `HandedOff`.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["HandedOff"]


@dataclass(frozen=True, slots=True)
class HandedOff:
    """An agent was moved onto a worker runtime by its owner: the one prompt it gets there."""

    runtime: str
    """The worker runtime it runs on now (`tmux`, `ray`)."""
    carried: tuple[str, ...]
    """Prompts that arrived for it while it was being moved, in order (sent with this prompt)."""
