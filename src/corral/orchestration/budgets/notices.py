"""What budgets tell a model, as typed facts (their words are `texts.py`'s).

The reached limit is a `Finding` (`_check.py`); the lead's tree reaching one is a `TreeExhausted`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from corral.orchestration.budgets._check import Finding

__all__ = ["TreeExhausted"]


@dataclass(frozen=True, slots=True)
class TreeExhausted:
    """The lead's agent tree reached a limit (told to the lead once)."""

    name: str
    """The budget that was exhausted, as recorded (`tree_tokens`, ...)."""
    reached: Finding | None
    """The limit reached with what is spent now, when it can be measured (else only `name`)."""
