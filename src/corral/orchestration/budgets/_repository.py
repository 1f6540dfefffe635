"""The budgets repository: limits and spend of trees and agents (tables `budget_trees`, `budget_agents`,
`budget_spend_facts`, the Ray spend facts already counted, and `budget_reservations`, the estimates
of requests in flight).

Every verb is one transaction. Spend is added to an agent's row and to its tree's row in the same
transaction (group-committed: `durable=False`, like activity — a process crash loses nothing, see
`Database`), so the tree's sum is always the sum of its agents'. The check before a request and its
reservation are one transaction too (`reserve`), so two processes of one tree (the host and a tmux
worker) never both take the last room. A reply's spend replaces its reservation in the spend's
transaction. A reservation counts only while its generation runs: once the kernel's row says the
run finished or was lost (a process killed mid-request), it counts nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TypeVar

from corral.orchestration.budgets._check import tree_reached
from corral.orchestration.budgets.records import AgentBudget, BudgetName, Limits, Spend, TreeBudget
from corral.orchestration.store._database import Row
from corral.orchestration.store._repository import Repository

__all__ = ["BudgetLedger"]

T = TypeVar("T")

_LIVE_RESERVATIONS = (
    "FROM budget_reservations r WHERE r.tree_id = ? AND r.run_id <> ? AND NOT EXISTS"
    " (SELECT 1 FROM generations g WHERE g.run_id = r.run_id"
    " AND (g.phase IN ('completed', 'result_error', 'finalized') OR g.presence = 'lost'))"
)
"""The tree's reservations that still count: of other runs, whose generation has not ended or been lost."""

_AGENT_COLUMNS = (
    "a.run_id, a.tree_id, a.session_id, a.label, a.started_at, a.noticed, a.final_taken, a.exhausted,"
    " a.tokens_limit, a.cost_limit, a.ms_limit, a.soft, a.tokens, a.cost_usd, a.requests, a.estimated"
)
_TREE_COLUMNS = (
    "t.tree_id AS t_tree_id, t.started_at AS t_started_at, t.lead_told AS t_lead_told,"
    " t.exhausted AS t_exhausted, t.tokens_limit AS t_tokens_limit, t.cost_limit AS t_cost_limit,"
    " t.ms_limit AS t_ms_limit, t.soft AS t_soft, t.tokens AS t_tokens, t.cost_usd AS t_cost_usd,"
    " t.requests AS t_requests, t.estimated AS t_estimated"
)


def _limits(row: Row, prefix: str = "") -> Limits:
    return Limits(
        row[f"{prefix}tokens_limit"],
        row[f"{prefix}cost_limit"],
        row[f"{prefix}ms_limit"],
        row[f"{prefix}soft"],
    )


def _spend(row: Row, prefix: str = "") -> Spend:
    return Spend(
        row[f"{prefix}tokens"], row[f"{prefix}cost_usd"], row[f"{prefix}requests"], row[f"{prefix}estimated"]
    )


def _agent(row: Row) -> AgentBudget:
    return AgentBudget(
        run_id=row["run_id"],
        tree_id=row["tree_id"],
        session_id=row["session_id"],
        label=row["label"],
        limits=_limits(row),
        spend=_spend(row),
        started_at=row["started_at"],
        noticed=bool(row["noticed"]),
        final_taken=bool(row["final_taken"]),
        exhausted=row["exhausted"],
    )


def _tree(row: Row, prefix: str = "") -> TreeBudget:
    return TreeBudget(
        tree_id=row[f"{prefix}tree_id"],
        limits=_limits(row, prefix),
        spend=_spend(row, prefix),
        started_at=row[f"{prefix}started_at"],
        exhausted=row[f"{prefix}exhausted"],
        lead_told=bool(row[f"{prefix}lead_told"]),
    )


class BudgetLedger(Repository):
    """Budgets of agent trees and agents, and what they spent."""

    def now(self) -> int:
        """The store's clock (ms)."""
        return self.db.clock()

    def set_tree_limits(self, tree_id: str, limits: Limits) -> None:
        """Set the limits of the tree of lead `tree_id` (its spend is kept; a new tree starts at zero)."""

        def body() -> None:
            now = self._tx.now
            self._execute(
                "INSERT INTO budget_trees (tree_id, tokens_limit, cost_limit, ms_limit, soft, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (tree_id) DO UPDATE SET tokens_limit = excluded.tokens_limit,"
                " cost_limit = excluded.cost_limit, ms_limit = excluded.ms_limit, soft = excluded.soft,"
                " updated_at = excluded.updated_at",
                (tree_id, limits.tokens, limits.cost_usd, limits.ms, limits.soft, now),
            )
            # Raised limits make room again: an exhausted mark that no longer holds is cleared.
            row = self._one("SELECT * FROM budget_trees WHERE tree_id = ?", (tree_id,))
            if row is not None and row["exhausted"] is not None and not tree_reached(_tree(row), now):
                self._execute(
                    "UPDATE budget_trees SET exhausted = NULL, lead_told = 0 WHERE tree_id = ?", (tree_id,)
                )

        self._write(body)

    def tree(self, tree_id: str) -> TreeBudget | None:
        """The tree of lead `tree_id`, if it has a row."""

        def body() -> TreeBudget | None:
            row = self._one("SELECT * FROM budget_trees WHERE tree_id = ?", (tree_id,))
            return None if row is None else _tree(row)

        return self._read(body)

    def tree_of_session(self, session_id: str) -> str | None:
        """The tree of the agent whose session is `session_id` (a nested helper's owner), if budgeted."""

        def body() -> str | None:
            row = self._one(
                "SELECT tree_id FROM budget_agents WHERE session_id = ? ORDER BY started_at DESC LIMIT 1",
                (session_id,),
            )
            return None if row is None else str(row["tree_id"])

        return self._read(body)

    def open_agent(
        self, run_id: str, *, tree_id: str, session_id: str, label: str, limits: Limits
    ) -> AgentBudget:
        """The budget row of generation `run_id`, created on its first start (a moved or resumed run
        keeps its row and spend); starts its tree's clock."""

        def body() -> AgentBudget:
            now = self._tx.now
            self._execute(
                "INSERT INTO budget_trees (tree_id, updated_at) VALUES (?, ?) ON CONFLICT (tree_id) DO NOTHING",
                (tree_id, now),
            )
            self._execute(
                "UPDATE budget_trees SET started_at = ? WHERE tree_id = ? AND started_at IS NULL",
                (now, tree_id),
            )
            self._execute(
                "INSERT INTO budget_agents (run_id, tree_id, session_id, label, started_at, tokens_limit,"
                " cost_limit, ms_limit, soft, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (run_id) DO NOTHING",
                (
                    run_id,
                    tree_id,
                    session_id,
                    label,
                    now,
                    limits.tokens,
                    limits.cost_usd,
                    limits.ms,
                    limits.soft,
                    now,
                ),
            )
            row = self._one(f"SELECT {_AGENT_COLUMNS} FROM budget_agents a WHERE run_id = ?", (run_id,))
            assert row is not None
            return _agent(row)

        return self._write(body, durable=False)

    def _state(self, run_id: str) -> tuple[AgentBudget, TreeBudget] | None:
        row = self._one(
            f"SELECT {_AGENT_COLUMNS}, {_TREE_COLUMNS} FROM budget_agents a"
            " JOIN budget_trees t ON t.tree_id = a.tree_id WHERE a.run_id = ?",
            (run_id,),
        )
        if row is None:
            return None
        agent, tree = _agent(row), _tree(row, "t_")
        tokens, cost = self._reserved(agent.tree_id, but=run_id)
        return agent, replace(tree, reserved_tokens=tokens, reserved_cost=cost)

    def _reserved(self, tree_id: str, *, but: str) -> tuple[int, float]:
        """Tokens and USD the tree's reservations that still count hold, but those of run `but`."""
        row = self._one(
            f"SELECT COALESCE(SUM(r.tokens), 0) AS tokens, COALESCE(SUM(r.cost_usd), 0) AS cost {_LIVE_RESERVATIONS}",
            (tree_id, but),
        )
        assert row is not None
        return int(row["tokens"]), float(row["cost"])

    def state(self, run_id: str) -> tuple[AgentBudget, TreeBudget] | None:
        """Generation `run_id`'s row and its tree's, read together (the check before a request); the
        tree's `reserved_*` are the other runs' requests in flight."""
        return self._read(lambda: self._state(run_id))

    def reserve(
        self,
        run_id: str,
        decide: Callable[[AgentBudget, TreeBudget], tuple[T, tuple[int, float] | None]],
    ) -> T | None:
        """The check before a request and its reservation, in one transaction: `decide` gets the run's
        state (as `state`) and returns its answer and what to reserve (tokens, USD) for the request
        about to go out, or `None` to hold nothing; the run's previous reservation is replaced.
        `None` when the run has no budget row."""

        def body() -> T | None:
            state = self._state(run_id)
            if state is None:
                return None
            answer, hold = decide(*state)
            if hold is None:
                self._execute("DELETE FROM budget_reservations WHERE run_id = ?", (run_id,))
            else:
                self._execute(
                    "INSERT INTO budget_reservations (run_id, tree_id, tokens, cost_usd, reserved_at)"
                    " VALUES (?, ?, ?, ?, ?) ON CONFLICT (run_id) DO UPDATE SET tokens = excluded.tokens,"
                    " cost_usd = excluded.cost_usd, reserved_at = excluded.reserved_at",
                    (run_id, state[0].tree_id, max(0, hold[0]), max(0.0, hold[1]), self._tx.now),
                )
            return answer

        return self._write(body, durable=False)

    def release(self, run_id: str) -> None:
        """Drop the reservation of `run_id` (its request failed without usage, or its run ended)."""
        self._write(
            lambda: self._execute("DELETE FROM budget_reservations WHERE run_id = ?", (run_id,)),
            durable=False,
        )

    def reserved(self, tree_id: str) -> tuple[int, float]:
        """Tokens and USD the tree's requests in flight hold (reservations that still count)."""
        return self._read(lambda: self._reserved(tree_id, but=""))

    def agent(self, run_id: str) -> AgentBudget | None:
        """Generation `run_id`'s row, if it has one."""

        def body() -> AgentBudget | None:
            row = self._one(f"SELECT {_AGENT_COLUMNS} FROM budget_agents a WHERE run_id = ?", (run_id,))
            return None if row is None else _agent(row)

        return self._read(body)

    def agents(self, tree_id: str) -> list[AgentBudget]:
        """Every budgeted agent of the tree, oldest first."""

        def body() -> list[AgentBudget]:
            rows = self._all(
                f"SELECT {_AGENT_COLUMNS} FROM budget_agents a WHERE tree_id = ? ORDER BY started_at, run_id",
                (tree_id,),
            )
            return [_agent(row) for row in rows]

        return self._read(body)

    def record(
        self, run_id: str, *, tokens: int, cost_usd: float, estimated: bool, fact_id: str | None = None
    ) -> None:
        """Add one request's spend to generation `run_id` and to its tree; it replaces the request's
        reservation.

        `fact_id` names a Ray worker's spend fact: one already recorded for `run_id` (pulled again by a
        host that restarted before confirming it to the worker) is not added again."""

        def body() -> None:
            row = self._one("SELECT tree_id FROM budget_agents WHERE run_id = ?", (run_id,))
            if row is None:
                return
            if fact_id is not None and not self._execute(
                "INSERT INTO budget_spend_facts (run_id, fact_id) VALUES (?, ?) ON CONFLICT DO NOTHING",
                (run_id, fact_id),
            ):
                return  # already counted
            now = self._tx.now
            self._execute("DELETE FROM budget_reservations WHERE run_id = ?", (run_id,))  # settled
            params = (tokens, cost_usd, int(estimated), now)
            self._execute(
                "UPDATE budget_agents SET tokens = tokens + ?, cost_usd = cost_usd + ?, requests = requests + 1,"
                " estimated = estimated + ?, updated_at = ? WHERE run_id = ?",
                (*params, run_id),
            )
            self._execute(
                "UPDATE budget_trees SET tokens = tokens + ?, cost_usd = cost_usd + ?, requests = requests + 1,"
                " estimated = estimated + ?, updated_at = ? WHERE tree_id = ?",
                (*params, row["tree_id"]),
            )

        self._write(body, durable=False)

    def mark_noticed(self, run_id: str) -> bool:
        """Record the wrap-up notice of `run_id`; `False` when it was already given."""

        def body() -> bool:
            return bool(
                self._execute(
                    "UPDATE budget_agents SET noticed = 1, updated_at = ? WHERE run_id = ? AND noticed = 0",
                    (self._tx.now, run_id),
                )
            )

        return self._write(body)

    def mark_exhausted(self, run_id: str, name: BudgetName) -> bool:
        """Record that `run_id` takes its final turn because `name` is reached (a tree limit marks the
        tree too); `False` when its final turn was already taken."""

        def body() -> bool:
            now = self._tx.now
            changed = self._execute(
                "UPDATE budget_agents SET final_taken = 1, exhausted = ?, updated_at = ?"
                " WHERE run_id = ? AND final_taken = 0",
                (name, now, run_id),
            )
            if changed and name.startswith("tree_"):
                self._execute(
                    "UPDATE budget_trees SET exhausted = ?, updated_at = ? WHERE exhausted IS NULL"
                    " AND tree_id = (SELECT tree_id FROM budget_agents WHERE run_id = ?)",
                    (name, now, run_id),
                )
            return bool(changed)

        return self._write(body)

    def take_lead_notice(self, tree_id: str) -> TreeBudget | None:
        """The exhausted tree, once: marks its lead told and returns it; `None` when not exhausted or told."""

        def body() -> TreeBudget | None:
            row = self._one("SELECT * FROM budget_trees WHERE tree_id = ?", (tree_id,))
            if row is None or row["exhausted"] is None or row["lead_told"]:
                return None
            self._execute("UPDATE budget_trees SET lead_told = 1 WHERE tree_id = ?", (tree_id,))
            return _tree(row)

        return self._write(body)
