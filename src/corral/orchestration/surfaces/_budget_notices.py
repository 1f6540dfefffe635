"""What budgets tell a model, in corral's words (`BudgetNoticeText`, the default `BudgetNotices`).

Budgets decide when an agent or the lead is told (`orchestration/budgets/notices.py`); only this
module says it in words. Small on purpose: the composition root loads it with every host.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from corral.orchestration.budgets._check import Finding
    from corral.orchestration.budgets.notices import TreeExhausted

__all__ = ["BudgetNoticeText"]


class BudgetNoticeText:
    """Budgets' notices in corral's words."""

    def wrap_up(self, finding: Finding) -> str:
        """`Budget notice: <spent> / <limit>[, + <estimates>] (<n>% of the limit). Wrap up now: ...`."""
        share = f"{finding.total / finding.limit:.0%} of the limit"
        if finding.reserved or finding.estimated:
            share += " with the next request"
        return (
            f"Budget notice: {finding.describe()} ({share}). Wrap up now: "
            "finish the current step and give your final answer (what is done, what remains) soon."
        )

    def final_turn(self, finding: Finding) -> str:
        """`Budget exhausted: <limit>. Your work stops here ...`."""
        return (
            f"Budget exhausted: {finding.describe()}. Your work stops here and tools are no longer run. "
            "Reply now, without tool calls, with your final report: what you did, what you found, and what "
            "remains undone."
        )

    def stopped(self, finding: Finding) -> str:
        """`budget_exhausted: <limit> (stopped at its budget; ...)`."""
        why = (
            "its time ran out"
            if finding.name.endswith("_minutes")
            else "its next request would have passed the limit"
        )
        return f"budget_exhausted: {finding.describe()} (stopped at its budget: {why}; the text above is its final report)"

    def tree_exhausted(self, fact: TreeExhausted) -> str:
        """What stops, what is refused, and that the lead's own turns go on."""
        what = fact.reached.describe() if fact.reached is not None else fact.name
        return (
            f"The budget of your agent tree is exhausted ({what}). Its running agents stop with a final "
            "report (budget_exhausted); new delegations and spawns are refused. Your own turns are not "
            "limited: work with the results you have."
        )
