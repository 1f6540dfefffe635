"""`BudgetGuard`: the request guard of a managed agent (`corral.agent.RequestGuard`).

Before every model request it reads the agent's and its tree's rows (one read) and compares the
spend plus the request's estimate with the limits: a limit reached → the final turn (marked in the
store, so it happens once, whichever process runs the agent); the soft threshold reached → one
wrap-up notice. After every reply it adds the reply's usage, or the estimate when the provider
reported none, to the agent and its tree.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from corral.agent import GuardVerdict, RequestEstimate
from corral.llm import AssistantMessage, ModelInfo, calculate_cost, usage_with_total
from corral.orchestration.budgets._check import findings
from corral.orchestration.budgets.records import AgentBudget, BudgetName, TreeBudget
from corral.orchestration.errors import OrchestrationError

if TYPE_CHECKING:
    from corral.orchestration.budgets.notices import BudgetNotices

__all__ = ["BudgetBook", "BudgetGuard"]

_log = logging.getLogger("corral.budgets")

_GO = GuardVerdict("go")
_STOP = GuardVerdict("stop")
_MTOK = 1_000_000


class BudgetBook(Protocol):
    """Where a guard reads and records its run's budget: the store (`BudgetLedger`), or in a Ray
    worker the state the host pushed plus the worker's unconfirmed facts (`RemoteBudget`)."""

    def now(self) -> int: ...

    def state(self, run_id: str) -> tuple[AgentBudget, TreeBudget] | None: ...

    def mark_noticed(self, run_id: str) -> bool: ...

    def mark_exhausted(self, run_id: str, name: BudgetName) -> bool: ...

    def record(self, run_id: str, *, tokens: int, cost_usd: float, estimated: bool) -> None: ...


class BudgetGuard:
    """The budget check of one generation (in the host, a tmux worker or a Ray worker).

    Args:
        ledger: Where the run's budget is kept (the budgets repository, or a Ray worker's `RemoteBudget`).
        run_id: The generation.
        notices: Words for the wrap-up notice and the final turn.
        on_exhausted: Called with the tree id when this agent reaches a limit (to tell the lead).
        on_recorded: Called after a reply's spend is recorded (the host's change signal).
    """

    def __init__(
        self,
        ledger: BudgetBook,
        run_id: str,
        *,
        notices: BudgetNotices,
        on_exhausted: Callable[[str], None] | None = None,
        on_recorded: Callable[[], None] | None = None,
    ) -> None:
        self.ledger = ledger
        self.run_id = run_id
        self.notices = notices
        self.on_exhausted = on_exhausted
        self.on_recorded = on_recorded
        self._rates: dict[tuple[str, str], tuple[float, float]] = {}

    def _cost(self, model: ModelInfo, input_tokens: int, output_tokens: int) -> float:
        key = (model.provider, model.id)
        rates = self._rates.get(key)
        if rates is None:
            per_input = calculate_cost(model, usage_with_total(input=_MTOK)).cost.total / _MTOK
            per_output = calculate_cost(model, usage_with_total(output=_MTOK)).cost.total / _MTOK
            rates = self._rates[key] = (per_input, per_output)
        return input_tokens * rates[0] + output_tokens * rates[1]

    def before_request(self, estimate: RequestEstimate) -> GuardVerdict:
        """Final turn at a limit, one notice at the soft threshold, else go (see the module docstring)."""
        try:
            state = self.ledger.state(self.run_id)
        except OrchestrationError as exc:
            _log.warning("budget of run %s could not be read (%s); the request goes out", self.run_id, exc)
            return _GO
        if state is None:
            return _GO
        agent, tree = state
        if agent.final_taken:
            return _STOP
        costed = agent.limits.cost_usd is not None or tree.limits.cost_usd is not None
        add_cost = (
            self._cost(estimate.model, estimate.input_tokens, estimate.output_tokens) if costed else 0.0
        )
        now = self.ledger.now()
        hard = findings(agent, tree, add_tokens=estimate.tokens, add_cost=add_cost, now=now, soft=False)
        if hard:
            if self.ledger.mark_exhausted(self.run_id, hard[0].name) and self.on_exhausted is not None:
                self.on_exhausted(agent.tree_id)
            return GuardVerdict("final", self.notices.final_turn(hard[0]))
        if not agent.noticed:
            soft = findings(agent, tree, add_tokens=estimate.tokens, add_cost=add_cost, now=now, soft=True)
            if soft and self.ledger.mark_noticed(self.run_id):
                return GuardVerdict("notice", self.notices.wrap_up(soft[0]))
        return _GO

    def after_reply(self, reply: AssistantMessage, estimate: RequestEstimate) -> None:
        """Add the reply's usage (or, when the provider reported none, the estimate, flagged)."""
        usage = reply.usage
        if usage.total_tokens > 0:
            tokens, cost, estimated = usage.total_tokens, usage.cost.total, False
        elif reply.stop_reason in ("error", "aborted"):
            return  # a failed request without usage is not counted
        else:
            tokens = estimate.tokens
            cost = self._cost(estimate.model, estimate.input_tokens, estimate.output_tokens)
            estimated = True
        try:
            self.ledger.record(self.run_id, tokens=tokens, cost_usd=cost, estimated=estimated)
        except OrchestrationError as exc:
            _log.warning("spend of run %s could not be recorded: %s", self.run_id, exc)
            return
        if self.on_recorded is not None:
            self.on_recorded()
