"""The budget check: which limits a request would reach (pure; no store, no clock of its own)."""

from __future__ import annotations

from dataclasses import dataclass

from corral.orchestration.budgets.records import AgentBudget, BudgetName, Limits, Spend, TreeBudget

__all__ = ["Finding", "findings", "tree_reached"]


@dataclass(frozen=True, slots=True)
class Finding:
    """One limit reached (or its soft threshold): the budget, what is spent and the limit.

    Before a request, what is spent is counted apart from what is not yet known: `reserved`, the
    estimates of the tree's other requests in flight, and `estimated`, this request's own estimate.
    The limit is reached when their sum is; a stopped agent's result line shows `spent` alone."""

    name: BudgetName
    spent: float
    """Tokens, USD or milliseconds, as the limit counts: spent so far (replies' usage)."""
    limit: float
    estimated: float = 0
    """The estimate of the request about to go out (tokens or USD; 0 for time)."""
    reserved: float = 0
    """The estimates of the tree's other requests in flight (tree limits only)."""

    @property
    def total(self) -> float:
        """Spent, reserved and estimated together: what is compared with the limit."""
        return self.spent + self.reserved + self.estimated

    def _amount(self, value: float) -> str:
        if self.name.endswith("_tokens"):
            return f"{int(value):,}"
        return f"${value:,.4f}"

    def describe(self) -> str:
        """`agent_tokens 10,480 / 10,000 tokens`, `tree_cost_usd $1.02 / $1.00`, `agent_minutes 12.5 / 10 min`;
        with what is not spent yet: `tree_tokens 6,200 / 10,000 tokens spent, + 2,400 reserved by
        requests in flight, + ~3,100 estimated for the next request`."""
        if self.name.endswith("_minutes"):
            return f"{self.name} {self.spent / 60_000:,.1f} / {self.limit / 60_000:,.1f} min"
        unit = " tokens" if self.name.endswith("_tokens") else ""
        text = f"{self.name} {self._amount(self.spent)} / {self._amount(self.limit)}{unit}"
        if not (self.reserved or self.estimated):
            return text
        text += " spent"
        if self.reserved:
            text += f", + {self._amount(self.reserved)} reserved by requests in flight"
        if self.estimated:
            text += f", + ~{self._amount(self.estimated)} estimated for the next request"
        return text

    def to_json(self) -> dict[str, object]:
        """`{"budget", "spent", "limit"}` (minutes for time budgets; spent alone, without estimates)."""
        if self.name.endswith("_minutes"):
            return {
                "budget": self.name,
                "spent": round(self.spent / 60_000, 3),
                "limit": round(self.limit / 60_000, 3),
            }
        if self.name.endswith("_cost_usd"):
            return {"budget": self.name, "spent": round(self.spent, 6), "limit": self.limit}
        return {"budget": self.name, "spent": int(self.spent), "limit": int(self.limit)}


def _scan(
    scope: str,
    limits: Limits,
    spend: Spend,
    started_at: int | None,
    *,
    add_tokens: int,
    add_cost: float,
    reserved_tokens: int = 0,
    reserved_cost: float = 0.0,
    now: int,
    share: float,
) -> list[Finding]:
    found: list[Finding] = []
    if limits.tokens is not None and spend.tokens + reserved_tokens + add_tokens >= share * limits.tokens:
        found.append(Finding(f"{scope}_tokens", spend.tokens, limits.tokens, add_tokens, reserved_tokens))  # type: ignore[arg-type]
    if limits.cost_usd is not None and spend.cost_usd + reserved_cost + add_cost >= share * limits.cost_usd:
        found.append(Finding(f"{scope}_cost_usd", spend.cost_usd, limits.cost_usd, add_cost, reserved_cost))  # type: ignore[arg-type]
    if limits.ms is not None and started_at is not None and now - started_at >= share * limits.ms:
        found.append(Finding(f"{scope}_minutes", now - started_at, limits.ms))  # type: ignore[arg-type]
    return found


def findings(
    agent: AgentBudget, tree: TreeBudget, *, add_tokens: int, add_cost: float, now: int, soft: bool
) -> list[Finding]:
    """The limits (agent ones first) that the spend plus a request of `add_tokens`/`add_cost` reaches
    (a tree's with the other requests in flight, `TreeBudget.reserved_tokens`), or with `soft` its
    soft threshold."""
    found = _scan(
        "agent",
        agent.limits,
        agent.spend,
        agent.started_at,
        add_tokens=add_tokens,
        add_cost=add_cost,
        now=now,
        share=agent.limits.soft if soft else 1.0,
    )
    found += _scan(
        "tree",
        tree.limits,
        tree.spend,
        tree.started_at,
        add_tokens=add_tokens,
        add_cost=add_cost,
        reserved_tokens=tree.reserved_tokens,
        reserved_cost=tree.reserved_cost,
        now=now,
        share=tree.limits.soft if soft else 1.0,
    )
    return found


def tree_reached(tree: TreeBudget, now: int, *, add_tokens: int = 0) -> list[Finding]:
    """The tree limits its spend (plus `add_tokens`) has reached."""
    return _scan(
        "tree",
        tree.limits,
        tree.spend,
        tree.started_at,
        add_tokens=add_tokens,
        add_cost=0.0,
        now=now,
        share=1.0,
    )


def exhausted_finding(agent: AgentBudget, tree: TreeBudget | None, now: int) -> Finding | None:
    """The finding that stopped `agent` (its `exhausted` budget, with today's spend), if one did."""
    name = agent.exhausted
    if name is None:
        return None
    scope_tree = name.startswith("tree_")
    if scope_tree and tree is None:
        return None
    limits = tree.limits if scope_tree and tree is not None else agent.limits
    spend = tree.spend if scope_tree and tree is not None else agent.spend
    started = (tree.started_at if tree is not None else None) if scope_tree else agent.started_at
    if name.endswith("_tokens"):
        return Finding(name, spend.tokens, limits.tokens or 0)
    if name.endswith("_cost_usd"):
        return Finding(name, spend.cost_usd, limits.cost_usd or 0.0)
    return Finding(name, now - (started or now), limits.ms or 0)
