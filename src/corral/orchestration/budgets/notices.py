"""What budgets tell a model, as typed facts, and the port that words them.

A budget's guard decides *that* an agent gets its wrap-up notice or its final turn, that a stopped
agent's result ends with `budget_exhausted`, and that the lead learns its tree is exhausted; the
reached limit is a `Finding` (`_check.py`), the tree's state a `TreeExhausted`. `BudgetNotices`
words them. The default words are the surfaces'
(`corral.orchestration.surfaces._budget_notices.BudgetNoticeText`); the composition root hands them
to `BudgetsExtension` (the lead's host), `attach_worker_guard` (a tmux worker) and `attach_ray_guard`
(a Ray worker). Budgets hold no model-facing prose and never import a surface.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from corral.orchestration.budgets._check import Finding

__all__ = ["BudgetNotices", "TreeExhausted"]


@dataclass(frozen=True, slots=True)
class TreeExhausted:
    """The lead's agent tree reached a limit (told to the lead once)."""

    name: str
    """The budget that was exhausted, as recorded (`tree_tokens`, ...)."""
    reached: Finding | None
    """The limit reached with what is spent now, when it can be measured (else only `name`)."""


class BudgetNotices(Protocol):
    """Words for what budgets tell a model: one method per fact, each returning the text."""

    def wrap_up(self, finding: Finding) -> str:
        """The wrap-up notice an agent gets once at a soft threshold."""
        ...

    def final_turn(self, finding: Finding) -> str:
        """The instruction of an agent's final turn at a limit (no tools run any more)."""
        ...

    def stopped(self, finding: Finding) -> str:
        """The line a stopped agent's result or report ends with (starts `budget_exhausted:`)."""
        ...

    def tree_exhausted(self, fact: TreeExhausted) -> str:
        """The notice that tells the lead its tree is exhausted."""
        ...
