"""What budgets tell a model, in corral's words: one plain function per fact.

A budget's guard decides *that* an agent gets its wrap-up notice or its final turn, that a stopped
agent's result ends with `budget_exhausted`, and that the lead learns its tree is exhausted; the
reached limit is a `Finding` (`_check.py`), the tree's state a `TreeExhausted` (`notices.py`). The
functions here turn those facts into the text the model reads (pinned byte for byte in
tests/orchestration/budgets/test_budget_notices.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from corral.orchestration.budgets._check import Finding
    from corral.orchestration.budgets.notices import TreeExhausted

__all__ = ["final_turn", "stopped", "tree_exhausted", "wrap_up"]


def wrap_up(finding: Finding) -> str:
    """The wrap-up notice an agent gets once at a soft threshold: `Budget notice: <spent> / <limit>[, +
    <estimates>] (<n>% of the limit). Wrap up now: ...`."""
    share = f"{finding.total / finding.limit:.0%} of the limit"
    if finding.reserved or finding.estimated:
        share += " with the next request"
    return (
        f"Budget notice: {finding.describe()} ({share}). Wrap up now: "
        "finish the current step and give your final answer (what is done, what remains) soon."
    )


def final_turn(finding: Finding) -> str:
    """The instruction of an agent's final turn at a limit (no tools run any more): `Budget exhausted:
    <limit>. Your work stops here ...`."""
    return (
        f"Budget exhausted: {finding.describe()}. Your work stops here and tools are no longer run. "
        "Reply now, without tool calls, with your final report: what you did, what you found, and what "
        "remains undone."
    )


def stopped(finding: Finding) -> str:
    """The line a stopped agent's result or report ends with: `budget_exhausted: <limit> (stopped at its
    budget; ...)`."""
    why = (
        "its time ran out"
        if finding.name.endswith("_minutes")
        else "its next request would have passed the limit"
    )
    return f"budget_exhausted: {finding.describe()} (stopped at its budget: {why}; the text above is its final report)"


def tree_exhausted(fact: TreeExhausted) -> str:
    """The notice that tells the lead its tree is exhausted: what stops, what is refused, and that the
    lead's own turns go on."""
    what = fact.reached.describe() if fact.reached is not None else fact.name
    return (
        f"The budget of your agent tree is exhausted ({what}). Its running agents stop with a final "
        "report (budget_exhausted); new delegations and spawns are refused. Your own turns are not "
        "limited: work with the results you have."
    )
