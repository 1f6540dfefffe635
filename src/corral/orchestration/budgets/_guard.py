"""`BudgetGuard`: the request guard of a managed agent (`corral.agent.RequestGuard`).

Before every model request it checks and reserves in one step (`BudgetBook.reserve`): the agent's
and its tree's spend, plus the estimates the tree's other requests in flight hold, plus this
request's estimate, against the limits. Within them the request goes out holding its estimate (a
wrap-up notice first, once, at the soft threshold). At a limit the agent takes one final turn, its
reply capped at `FINAL_REPLY_TOKENS` and its tool calls not run — unless its tree is already spent
(spent plus reserved at its limit): then the run ends without a request. After every reply the
reply's usage, or the estimate when the provider reported none, replaces the reservation; a failed
request without usage releases it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol, TypeVar

from corral.agent import GuardVerdict, RequestEstimate
from corral.llm import AssistantMessage, ModelInfo, calculate_cost, usage_with_total
from corral.orchestration.budgets import texts
from corral.orchestration.budgets._check import Finding, findings
from corral.orchestration.budgets.records import AgentBudget, BudgetName, TreeBudget
from corral.orchestration.errors import OrchestrationError

__all__ = ["FINAL_REPLY_TOKENS", "OUTPUT_FLOOR_TOKENS", "BudgetBook", "BudgetGuard"]

_log = logging.getLogger("corral.budgets")

T = TypeVar("T")

_GO = GuardVerdict("go")
_STOP = GuardVerdict("stop")
_MTOK = 1_000_000

FINAL_REPLY_TOKENS = 512
"""The reply cap of a final turn (the model's own cap when lower)."""
OUTPUT_FLOOR_TOKENS = 256
"""The least output a request reserves (its estimate's output is the previous reply's, 0 at first)."""


class BudgetBook(Protocol):
    """Where a guard reads and records its run's budget: the store (`BudgetLedger`), or in a Ray
    worker the state the host pushed plus the worker's unconfirmed facts (`RemoteBudget`)."""

    def now(self) -> int: ...

    def mark_noticed(self, run_id: str) -> bool: ...

    def mark_exhausted(self, run_id: str, name: BudgetName) -> bool: ...

    def reserve(
        self, run_id: str, decide: Callable[[AgentBudget, TreeBudget], tuple[T, tuple[int, float] | None]]
    ) -> T | None: ...

    def release(self, run_id: str) -> None: ...

    def record(self, run_id: str, *, tokens: int, cost_usd: float, estimated: bool) -> None: ...


class BudgetGuard:
    """The budget check of one generation (in the host, a tmux worker or a Ray worker).

    Args:
        ledger: Where the run's budget is kept (the budgets repository, or a Ray worker's `RemoteBudget`).
        run_id: The generation.
        on_exhausted: Called with the tree id when this agent reaches a limit (to tell the lead).
        on_recorded: Called after a request's reservation or a reply's spend is recorded (the host's
            change signal).
        limited: Whether any limit applies to the run (its own or its tree's); when it says no, a
            request goes out without the check and its reservation (no store transaction: nothing
            could stop it, and a reservation counts only against a limit). `None`: always checked.
    """

    def __init__(
        self,
        ledger: BudgetBook,
        run_id: str,
        *,
        on_exhausted: Callable[[str], None] | None = None,
        on_recorded: Callable[[], None] | None = None,
        limited: Callable[[], bool] | None = None,
    ) -> None:
        self.ledger = ledger
        self.run_id = run_id
        self.on_exhausted = on_exhausted
        self.on_recorded = on_recorded
        self.limited = limited
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
        """Reserve and go, a notice once at the soft threshold, a bounded final turn at a limit, or
        stop (see the module docstring)."""
        if self.limited is not None and not self.limited():
            return _GO
        model = estimate.model
        output = max(estimate.output_tokens, min(OUTPUT_FLOOR_TOKENS, model.max_tokens))
        request = replace(estimate, output_tokens=output)
        final = replace(estimate, output_tokens=min(FINAL_REPLY_TOKENS, model.max_tokens))
        now = self.ledger.now()

        def decide(agent: AgentBudget, tree: TreeBudget) -> tuple[_Decision, tuple[int, float] | None]:
            if agent.final_taken:
                return _Decision("stop"), None
            costed = agent.limits.cost_usd is not None or tree.limits.cost_usd is not None
            cost = self._cost(model, request.input_tokens, request.output_tokens) if costed else 0.0
            hard = findings(agent, tree, add_tokens=request.tokens, add_cost=cost, now=now, soft=False)
            if not hard:
                soft = []
                if not agent.noticed:
                    soft = findings(agent, tree, add_tokens=request.tokens, add_cost=cost, now=now, soft=True)
                left = _time_left(agent, tree, now)
                return _Decision("notice" if soft else "go", soft[0] if soft else None, time_left_ms=left), (
                    request.tokens,
                    cost,
                )
            # A limit is reached: the final turn, unless the tree is spent (no room left at all).
            spent = findings(agent, tree, add_tokens=0, add_cost=0.0, now=now, soft=False)
            if any(f.name in ("tree_tokens", "tree_cost_usd") for f in spent):
                return _Decision("skip", hard[0], agent.tree_id), None
            final_cost = self._cost(model, final.input_tokens, final.output_tokens) if costed else 0.0
            return _Decision("final", hard[0], agent.tree_id), (final.tokens, final_cost)

        try:
            decision = self.ledger.reserve(self.run_id, decide)
        except OrchestrationError as exc:
            _log.warning("budget of run %s could not be read (%s); the request goes out", self.run_id, exc)
            return _GO
        if (
            decision is not None
            and decision.action in ("go", "notice", "final")
            and self.on_recorded is not None
        ):
            self.on_recorded()  # a reservation was stored: host state others may wait on
        if decision is None:
            return _GO
        if decision.action == "go":
            return (
                _GO
                if decision.time_left_ms is None
                else GuardVerdict("go", time_left_ms=decision.time_left_ms)
            )
        if decision.action == "stop":
            return _STOP
        finding = decision.finding
        assert finding is not None
        if decision.action == "notice":
            if self.ledger.mark_noticed(self.run_id):
                return GuardVerdict("notice", texts.wrap_up(finding), time_left_ms=decision.time_left_ms)
            return GuardVerdict("go", time_left_ms=decision.time_left_ms)
        if self.ledger.mark_exhausted(self.run_id, finding.name) and self.on_exhausted is not None:
            self.on_exhausted(decision.tree_id)
        if decision.action == "skip":
            return _STOP
        return GuardVerdict("final", texts.final_turn(finding), max_output_tokens=final.output_tokens)

    def after_reply(self, reply: AssistantMessage, estimate: RequestEstimate) -> None:
        """Add the reply's usage (or, when the provider reported none, the estimate, flagged)."""
        usage = reply.usage
        if usage.total_tokens > 0:
            tokens, cost, estimated = usage.total_tokens, usage.cost.total, False
        elif reply.stop_reason in ("error", "aborted"):
            try:
                self.ledger.release(self.run_id)  # a failed request without usage is not counted
            except OrchestrationError as exc:
                _log.warning("budget reservation of run %s could not be released: %s", self.run_id, exc)
            return
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


@dataclass(frozen=True, slots=True)
class _Decision:
    action: str
    """`go`, `notice`, `final`, `skip` (a limit reached, the tree spent: no final turn) or `stop`."""
    finding: Finding | None = None
    tree_id: str = ""
    time_left_ms: int | None = None
    """For `go` and `notice`: until the first time limit (the agent's or its tree's), if any."""


def _time_left(agent: AgentBudget, tree: TreeBudget, now: int) -> int | None:
    """How long until the agent's or its tree's time limit is reached (`None`: no time limit)."""
    left = [
        started + limits.ms - now
        for limits, started in ((agent.limits, agent.started_at), (tree.limits, tree.started_at))
        if limits.ms is not None and started is not None
    ]
    return max(0, min(left)) if left else None
