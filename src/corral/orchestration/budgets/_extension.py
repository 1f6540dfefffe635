"""`BudgetsExtension`: budgets ride on the host's generations through `HostExtension` hooks.

* `lead_attached` sets the tree's limits from the host's `[budget]` settings (a resumed lead keeps
  its tree's spend; raised limits make room again).
* `run_starting` opens the generation's budget row (its limits: `[budget]`'s `agent_*` keys, then
  the tier's `[teams.tier_budget.<tier>]` or the definition's `budget:`) in the tree of its lead —
  a nested helper's tree is its parent's — and gives an in-process agent its `BudgetGuard`. A tmux
  worker gives its agent the guard itself (`attach_worker_guard`), from the same row.
* `admitting` refuses a new delegation or spawn the tree's remainder cannot cover.
* `result_note` / `result_details` put `budget_exhausted` in a stopped agent's result or report.
* `released` / `lost` drop a finished or lost run's reservation (the store ignores one of a run
  that ended or was marked lost anyway, e.g. after a crash that left it behind).
* the lead is told once when its tree reaches a limit (in-process at once; a tmux agent's on the
  host's next watcher tick, `polled`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from corral.agent import GuardVerdict
from corral.llm import CustomMessage
from corral.orchestration.budgets import texts
from corral.orchestration.budgets._check import exhausted_finding, tree_reached
from corral.orchestration.budgets._guard import BudgetGuard
from corral.orchestration.budgets._repository import BudgetLedger
from corral.orchestration.budgets.notices import TreeExhausted
from corral.orchestration.budgets.records import (
    AgentBudget,
    Limits,
    Spend,
    TreeBudget,
    agent_limits,
    tree_limits,
)
from corral.orchestration.errors import InvalidRequestError, OrchestrationError
from corral.orchestration.host.ports import HostExtension

if TYPE_CHECKING:
    from corral.orchestration.budgets._remote import BudgetPush
    from corral.orchestration.host._host import Host
    from corral.orchestration.kernel._child import ManagedChild
    from corral.orchestration.kernel.records import GenerationRecord
    from corral.orchestration.store._database import Database
    from corral.settings import AgentBudgetSettings

__all__ = ["BudgetsExtension", "attach_worker_guard", "budget_details", "budget_text"]

MIN_REQUEST_TOKENS = 1000
"""A tree with fewer tokens left cannot cover a new agent's first request: new agents are refused."""


def budget_details(agent: AgentBudget, ledger: BudgetLedger) -> dict[str, object]:
    """The `budget` details of an agent's result or report (`budget_exhausted` when it was stopped)."""
    tree = ledger.tree(agent.tree_id)
    out: dict[str, object] = {}
    if agent.limits.any or (tree is not None and tree.limits.any):
        out["budget"] = {"spend": agent.spend.to_json()}
    if agent.spend.unmetered:
        out["budget"] = {"spend": agent.spend.to_json(), "unmetered": True}
    finding = exhausted_finding(agent, tree, ledger.db.clock())
    if finding is not None:
        out["budget_exhausted"] = True
        out["budget"] = {"spend": agent.spend.to_json(), **finding.to_json()}
        if agent.spend.unmetered:
            out["budget"]["unmetered"] = True  # type: ignore[index]
    return out


def limits_json(limits: Limits) -> dict[str, object]:
    """The limits that are set: `tokens`, `costUsd`, `minutes`."""
    out: dict[str, object] = {}
    if limits.tokens is not None:
        out["tokens"] = limits.tokens
    if limits.cost_usd is not None:
        out["costUsd"] = limits.cost_usd
    if limits.ms is not None:
        out["minutes"] = round(limits.ms / 60_000, 3)
    return out


def budget_status(agent: AgentBudget, tree: TreeBudget | None) -> dict[str, object]:
    """An agent's `budget` status: its spend and limits, its tree's, and what stopped it."""
    out: dict[str, object] = {"spend": agent.spend.to_json(), "limits": limits_json(agent.limits)}
    if tree is not None:
        out["tree"] = {"spend": tree.spend.to_json(), "limits": limits_json(tree.limits)}
    if agent.exhausted is not None:
        out["exhausted"] = agent.exhausted
    elif agent.noticed:
        out["noticed"] = True
    if agent.spend.unmetered:
        out["unmetered"] = True
    return out


def spent_over_limit(spend: Spend, limits: Limits) -> str:
    """`12,400 / 10,000 tok, $0.12 / $1.00` — the spend against the limits that are set (spend alone
    for the kinds without one)."""
    parts = [f"{spend.tokens:,}" + (f" / {limits.tokens:,}" if limits.tokens is not None else "") + " tok"]
    if limits.cost_usd is not None or spend.cost_usd:
        limit = f" / ${limits.cost_usd:,.2f}" if limits.cost_usd is not None else ""
        parts.append(f"${spend.cost_usd:,.2f}{limit}")
    if spend.estimated:
        parts.append(f"{spend.estimated} estimated")
    return ", ".join(parts)


def budget_text(budget: Mapping[str, Any]) -> str:
    """`12,400 / 10,000 tok, $0.01 (exhausted: agent_tokens)`: a `list` record's or status' `budget`."""
    spend, limits = budget.get("spend") or {}, budget.get("limits") or {}
    text = f"{spend.get('tokens', 0):,}"
    if "tokens" in limits:
        text += f" / {limits['tokens']:,}"
    text += " tok"
    if "costUsd" in limits or spend.get("costUsd"):
        text += f", ${spend.get('costUsd', 0):,.2f}"
        if "costUsd" in limits:
            text += f" / ${limits['costUsd']:,.2f}"
    if budget.get("unmetered"):
        text += ", unmetered: the agent reports no usage, only its time is counted"
    elif spend.get("estimatedRequests"):
        text += f", {spend['estimatedRequests']} request(s) without usage counted at their estimate"
    if budget.get("exhausted"):
        text += f" (exhausted: {budget['exhausted']})"
    elif budget.get("noticed"):
        text += " (wrap-up notice sent)"
    return text


def result_note(ledger: BudgetLedger, run_id: str) -> str | None:
    """`budget_exhausted: …` for an agent stopped at a budget, else `None`."""
    agent = ledger.agent(run_id)
    if agent is None:
        return None
    finding = exhausted_finding(agent, ledger.tree(agent.tree_id), ledger.db.clock())
    return None if finding is None else texts.stopped(finding)


def attach_worker_guard(db: Database, child: ManagedChild) -> bool:
    """Give a tmux worker's agent the guard of its generation's budget row, and end its result with
    `budget_exhausted` when it is stopped (after the `on_work_done` already set); `False` without a row."""
    ledger = BudgetLedger(db)
    if ledger.agent(child.run_id) is None:
        return False
    child.agent.set_request_guard(BudgetGuard(ledger, child.run_id))
    previous = child.on_work_done

    async def work_done(run_id: str, summary: str) -> str | None:
        notes = [
            await previous(run_id, summary) if previous is not None else None,
            result_note(ledger, run_id),
        ]
        return "\n".join(note for note in notes if note) or None

    child.on_work_done = work_done
    return True


def lead_line(tokens: int, cost_usd: float) -> str:
    """`lead (not counted): 1,200 tok, $0.04`: the lead's own spend, shown beside its tree's."""
    return f"lead (not counted): {tokens:,} tok, ${cost_usd:,.2f}"


class BudgetsExtension(HostExtension):
    """Budgets of the lead's tree and of each agent (docs/fleet.md, "Budgets")."""

    def __init__(self, host: Host) -> None:
        """Args:
        host: The host whose generations get budgets.
        """
        self.host = host
        self.ledger = BudgetLedger(host.kernel.db)
        self._tree_limited: dict[str, bool] = {}
        """Whether a tree has limits, by tree id: set here when a lead attaches (the only place a
        tree's limits change), read once for another tree (a nested helper's owner elsewhere)."""

    # --- hooks -----------------------------------------------------------------------------------

    async def lead_attached(self, lead_session_id: str) -> Sequence[str]:
        """Set the tree's limits from `[budget]`; warn when a resumed tree is already exhausted."""
        limits = tree_limits(self.host.settings.budget)
        tree = self.ledger.tree(lead_session_id)
        if (tree is None and limits.any) or (tree is not None and tree.limits != limits):
            self.ledger.set_tree_limits(lead_session_id, limits)  # written only when they change
            tree = self.ledger.tree(lead_session_id)
        self._tree_limited[lead_session_id] = tree is not None and tree.limits.any
        if tree is not None and tree.exhausted is not None:
            reached = tree_reached(tree, self.ledger.db.clock())
            if reached:
                return (
                    f"the agent tree's budget is exhausted ({reached[0].describe()}); new agents are refused",
                )
        return ()

    def run_starting(self, generation: GenerationRecord, child: ManagedChild | None) -> None:
        """Open the generation's budget row; an in-process agent gets its guard."""
        tree_id = self.tree_of(generation.owner_session_id)
        limits = agent_limits(self.host.settings.budget, self._override(generation))
        opened = self.ledger.open_agent(
            generation.run_id,
            tree_id=tree_id,
            session_id=generation.session_id,
            label=generation.label,
            limits=limits,
        )
        if child is not None:
            own = opened.limits.any  # an agent's limits are fixed when its row is made

            def limited() -> bool:
                return own or self.tree_limited(tree_id)

            child.agent.set_request_guard(
                BudgetGuard(
                    self.ledger,
                    generation.run_id,
                    on_exhausted=self.tell_lead,
                    on_recorded=self.host.changed,
                    limited=limited,
                )
            )

    def tree_limited(self, tree_id: str) -> bool:
        """Whether the tree `tree_id` has limits (known from its lead's attach, else read once)."""
        known = self._tree_limited.get(tree_id)
        if known is None:
            tree = self.ledger.tree(tree_id)
            known = self._tree_limited[tree_id] = tree is not None and tree.limits.any
        return known

    def admitting(self, owner_session_id: str) -> None:
        """Refuse a new agent when its tree's remaining budget cannot cover it."""
        tree = self.ledger.tree(self.tree_of(owner_session_id))
        if tree is None or not tree.limits.any:
            return
        reached = tree_reached(tree, self.ledger.db.clock(), add_tokens=MIN_REQUEST_TOKENS)
        if reached:
            finding = reached[0]
            raise InvalidRequestError(
                f"No new agent: the agent tree's budget is exhausted ({finding.describe()} spent). Work with "
                "the results you have, or raise `[budget]` in settings and resume.",
                details={"budget": {**finding.to_json(), "spend": tree.spend.to_json()}},
            )

    async def result_details(self, run_id: str) -> Mapping[str, object] | None:
        """`budget` (the agent's spend) and, for a stopped agent, `budget_exhausted: true`."""
        agent = self.ledger.agent(run_id)
        if agent is None:
            return None
        return budget_details(agent, self.ledger) or None

    def status_fields(self, run_id: str) -> Mapping[str, object] | None:
        """`budget`: the agent's spend, its limits and its tree's, when any limit applies or the agent
        is *unmetered* (a harness agent that reports no usage: `unmetered: true`)."""
        agent = self.ledger.agent(run_id)
        if agent is None:
            return None
        tree = self.ledger.tree(agent.tree_id)
        if not agent.limits.any and (tree is None or not tree.limits.any) and not agent.spend.unmetered:
            return None
        return {"budget": budget_status(agent, tree)}

    def tree_line(self, lead_session_id: str) -> str | None:
        """`tree budget: 9,300 / 10,000 tok (exhausted: tree_tokens)` for a lead whose tree has limits
        (`None` without any: no budget, no line)."""
        tree = self.ledger.tree(lead_session_id)
        if tree is None or not tree.limits.any:
            return None
        line = f"tree budget: {spent_over_limit(tree.spend, tree.limits)}"
        if tree.limits.ms is not None and tree.started_at is not None:
            minutes = (self.ledger.db.clock() - tree.started_at) / 60_000
            line += f", {minutes:,.1f} / {tree.limits.ms / 60_000:,.1f} min"
        if tree.exhausted is not None:
            line += f" (exhausted: {tree.exhausted})"
        return line

    def result_note(self, run_id: str) -> str | None:
        """`budget_exhausted: …` for an agent stopped at a budget."""
        return result_note(self.ledger, run_id)

    def remote_state(self, run_id: str) -> BudgetPush | None:
        """The run's budget row and its tree's, pushed to its Ray worker with every pull."""
        from corral.orchestration.budgets._remote import BudgetPush  # Ray's part: loads with a Ray run

        state = self.ledger.state(run_id)
        return None if state is None else BudgetPush(*state)

    def remote_fact(self, run_id: str, payload: object) -> None:
        """A Ray agent's spend or budget mark: recorded as an in-process agent's would be."""
        from corral.orchestration.budgets._remote import BudgetMarkFact, SpendFact

        if isinstance(payload, SpendFact):
            self.ledger.record(
                run_id,
                tokens=payload.tokens,
                cost_usd=payload.cost_usd,
                estimated=payload.estimated,
                fact_id=payload.fact_id,
            )
        elif isinstance(payload, BudgetMarkFact):
            if payload.mark == "noticed":
                self.ledger.mark_noticed(run_id)
            elif payload.name is not None and self.ledger.mark_exhausted(run_id, payload.name):
                agent = self.ledger.agent(run_id)
                if agent is not None:
                    self.tell_lead(agent.tree_id)

    def released(self, run_id: str) -> None:
        """A finished run holds no reservation (one left by a request cut short is dropped)."""
        with contextlib.suppress(OrchestrationError):
            self.ledger.release(run_id)

    def lost(self, run_id: str, reason: str) -> None:
        """A lost run holds no reservation (its process may have died mid-request)."""
        with contextlib.suppress(OrchestrationError):
            self.ledger.release(run_id)

    def polled(self) -> None:
        """Tell each attached lead once whose tree a tmux agent exhausted."""
        for lead in self.host.runs.leads():
            self.tell_lead(lead)

    # --- helpers ---------------------------------------------------------------------------------

    def tree_of(self, owner_session_id: str) -> str:
        """The tree of an agent owned by `owner_session_id`: the lead's, through a delegating owner."""
        if self.host.runs.is_lead(owner_session_id):
            return owner_session_id
        return self.ledger.tree_of_session(owner_session_id) or owner_session_id

    def _override(self, generation: GenerationRecord) -> AgentBudgetSettings | None:
        settings = self.host.settings
        for tier, budget in settings.teams.tier_budget.items():  # a teams agent's definition is its tier
            if tier == generation.definition:
                return budget
        with contextlib.suppress(Exception):  # a roster that cannot load leaves the defaults
            defn = self.host.roster_loader(Path(generation.cwd)).get(generation.definition)
            if defn is not None:
                return defn.budget
        return None

    def tell_lead(self, tree_id: str) -> None:
        """Tell the lead once that its tree reached a limit (when it is attached here)."""
        owner = self.host.runs.owner(tree_id)
        if owner is None:
            return
        try:
            seen = self.ledger.tree(tree_id)  # a read first: the watcher asks on every tick
            if seen is None or seen.exhausted is None or seen.lead_told:
                return
            tree = self.ledger.take_lead_notice(tree_id)
        except OrchestrationError:
            return
        if tree is None or tree.exhausted is None:
            return
        reached = tree_reached(tree, self.ledger.db.clock())
        text = texts.tree_exhausted(TreeExhausted(tree.exhausted, reached[0] if reached else None))
        owner.send_custom_message(
            CustomMessage(custom_type=GuardVerdict.NOTICE_TYPE, content=text, display=True)
        )
