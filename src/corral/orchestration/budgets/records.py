"""The budgets feature's records: limits, spend, and the rows of a tree and of an agent."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from corral.settings import AgentBudgetSettings, BudgetSettings

__all__ = ["AgentBudget", "BudgetName", "Limits", "Spend", "TreeBudget", "agent_limits", "tree_limits"]

BudgetName = Literal[
    "agent_tokens", "agent_cost_usd", "agent_minutes", "tree_tokens", "tree_cost_usd", "tree_minutes"
]
"""A limit, named as its settings key."""


@dataclass(frozen=True, slots=True)
class Limits:
    """The limits of one tree or one agent (`None`: no limit of that kind)."""

    tokens: int | None = None
    cost_usd: float | None = None
    ms: int | None = None
    soft: float = 0.8
    """Share of a limit at which the wrap-up notice is given."""

    @property
    def any(self) -> bool:
        """Whether any limit is set."""
        return self.tokens is not None or self.cost_usd is not None or self.ms is not None


def _ms(minutes: float | None) -> int | None:
    return None if minutes is None else max(1, round(minutes * 60_000))


def tree_limits(budget: BudgetSettings) -> Limits:
    """The tree limits of `[budget]`."""
    return Limits(budget.tree_tokens, budget.tree_cost_usd, _ms(budget.tree_minutes), budget.soft_threshold)


def agent_limits(budget: BudgetSettings, *overrides: AgentBudgetSettings | None) -> Limits:
    """An agent's limits: `[budget]`'s `agent_*` keys, each replaced by the overrides that set it
    (a tier's `[teams.tier_budget.<tier>]`, a definition's `budget:`), later ones winning."""
    values = {key: getattr(budget, key) for key in ("agent_tokens", "agent_cost_usd", "agent_minutes")}
    for override in overrides:
        if override is not None:
            for key in override.model_fields_set:
                values[key] = getattr(override, key)
    return Limits(
        values["agent_tokens"], values["agent_cost_usd"], _ms(values["agent_minutes"]), budget.soft_threshold
    )


@dataclass(frozen=True, slots=True)
class Spend:
    """What a tree or an agent used so far."""

    tokens: int = 0
    """Tokens of every model reply: input (cached included) plus output."""
    cost_usd: float = 0.0
    """USD, from the registry's prices."""
    requests: int = 0
    """Model requests counted."""
    estimated: int = 0
    """Of those, requests whose provider reported no usage (counted at their estimate)."""

    @property
    def unmetered(self) -> bool:
        """Whether none of the requests counted reported usage and none had an estimate: a harness
        agent's turns, when the agent reports no usage (its budget counts only time)."""
        return self.requests > 0 and self.estimated == self.requests and not self.tokens and not self.cost_usd

    def to_json(self) -> dict[str, object]:
        """The spend as JSON (for details)."""
        return {
            "tokens": self.tokens,
            "costUsd": round(self.cost_usd, 6),
            "requests": self.requests,
            "estimatedRequests": self.estimated,
        }


@dataclass(frozen=True, slots=True)
class TreeBudget:
    """A lead's tree: its limits and the summed spend of every agent it owns, nested."""

    tree_id: str
    """The lead's session id."""
    limits: Limits
    spend: Spend
    started_at: int | None
    """When its first agent started (Unix ms), the start of `tree_minutes`."""
    exhausted: BudgetName | None
    """The tree limit that was reached first, once one was."""
    lead_told: bool
    reserved_tokens: int = 0
    """Estimates of the tree's requests in flight (other than the reading agent's own), not yet spent."""
    reserved_cost: float = 0.0


@dataclass(frozen=True, slots=True)
class AgentBudget:
    """One generation's budget row."""

    run_id: str
    tree_id: str
    session_id: str
    label: str
    limits: Limits
    spend: Spend
    started_at: int
    noticed: bool
    """Whether it got its wrap-up notice."""
    final_taken: bool
    """Whether it got its final turn (no more requests)."""
    exhausted: BudgetName | None
    """The limit (agent or tree) that stopped it."""
