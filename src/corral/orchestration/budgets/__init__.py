"""Budgets on the lead's whole agent tree and on each agent (docs/fleet.md, "Budgets").

Limits on tokens, cost and wall time, for a lead's tree (every agent it owns, nested, in every
runtime; the lead's own spend is not counted) and per agent. Checked before every model request
of a managed agent (`BudgetGuard`, the agent loop's `RequestGuard`; a harness agent's before each
of its turns, which a time limit cuts short), from the spend recorded in
the store (`BudgetLedger`) plus the tree's requests in flight (their reservations) plus the
request's estimate, which it reserves in the same transaction: one wrap-up notice at the soft
threshold, a final turn without tools and with a capped reply at the limit (none once the tree is
spent), `budget_exhausted` in the result or report; new agents are refused when the tree's
remainder cannot cover them (`BudgetsExtension`).

Ray's part (`_remote.py`: the pushed budget, the worker's facts, `attach_ray_guard`) is not
re-exported: every host has the extension, and only a Ray run loads it.
"""

from corral.orchestration.budgets._check import Finding
from corral.orchestration.budgets._extension import (
    BudgetsExtension,
    attach_worker_guard,
    budget_details,
    budget_text,
    lead_line,
)
from corral.orchestration.budgets._guard import BudgetGuard
from corral.orchestration.budgets._repository import BudgetLedger
from corral.orchestration.budgets.records import AgentBudget, BudgetName, Limits, Spend, TreeBudget

__all__ = [
    "AgentBudget",
    "BudgetGuard",
    "BudgetLedger",
    "BudgetName",
    "BudgetsExtension",
    "Finding",
    "Limits",
    "Spend",
    "TreeBudget",
    "attach_worker_guard",
    "budget_details",
    "budget_text",
    "lead_line",
]
