"""Budgets of an agent in a Ray worker: the host pushes the run's budget, the worker sends facts.

A Ray worker never opens the store. With the launch and then every pull the host pushes the run's budget row and its
tree's (`BudgetPush`, the extension's `remote_state`); the worker's `BudgetGuard` decides from that
state plus the spend the worker recorded since (`RemoteBudget`). Each reply's usage and each
notice or final turn is a fact (`SpendFact`, `BudgetMarkFact`) that the host pulls and records
through the budgets repository (`remote_fact`) — the same accounting as an in-process agent.

Overshoot bound: the tree's spend by *other* agents reaches a worker one pull interval late, so a
tree limit can be passed by at most the requests the tree's agents send within one pull interval.
A Ray agent's own request reserves nothing in the store (the worker has none): the pushed tree
carries the reservations of the tree's other agents (in-process and tmux ones) as of the push, and
the worker decides from them. An agent's own spend is counted locally at once, so its own limit
holds as in-process.

Each spend fact carries its own id (`SpendFact.fact_id`): a host killed after recording a fact but
before confirming it to the worker leaves it in the worker's outbox, and the next host's pull brings
it again — the repository records each id once, in the spend's transaction, so it counts once.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypeVar

from corral.orchestration.budgets import texts
from corral.orchestration.budgets._check import exhausted_finding
from corral.orchestration.budgets._guard import BudgetGuard
from corral.orchestration.budgets.records import AgentBudget, BudgetName, Spend, TreeBudget

if TYPE_CHECKING:
    from corral.orchestration.kernel._child import ManagedChild
    from corral.orchestration.kernel._remote import RemoteStore

__all__ = ["BudgetMarkFact", "BudgetPush", "RemoteBudget", "SpendFact", "attach_ray_guard"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class BudgetPush:
    """The run's budget row and its tree's, as the host's store holds them (pushed with each pull)."""

    agent: AgentBudget
    tree: TreeBudget


@dataclass(frozen=True, slots=True)
class SpendFact:
    """One reply's spend in a Ray worker (recorded by the host like an in-process reply's)."""

    tokens: int
    cost_usd: float
    estimated: bool
    fact_id: str
    """This reply's own id: the host records a fact once, also when a restarted host pulls it again."""


@dataclass(frozen=True, slots=True)
class BudgetMarkFact:
    """The worker's guard gave the wrap-up notice (`noticed`) or took the final turn (`exhausted`)."""

    mark: Literal["noticed", "exhausted"]
    name: BudgetName | None = None


def _plus(spend: Spend, tokens: int, cost: float, requests: int, estimated: int) -> Spend:
    return Spend(
        spend.tokens + tokens,
        spend.cost_usd + cost,
        spend.requests + requests,
        spend.estimated + estimated,
    )


class RemoteBudget:
    """A `BudgetBook` in a Ray worker: the host's last push plus this worker's unconfirmed spend."""

    def __init__(self, store: RemoteStore) -> None:
        self.store = store
        self._spent: list[tuple[int, SpendFact]] = []
        self._noticed = False
        self._exhausted: BudgetName | None = None

    def now(self) -> int:
        return int(time.time() * 1000)

    def pushed(self) -> BudgetPush | None:
        """The host's last push, or `None` (no budget row, or no pull yet)."""
        for state in self.store.pushed:
            if isinstance(state, BudgetPush):
                return state
        return None

    def state(self, run_id: str) -> tuple[AgentBudget, TreeBudget] | None:
        pushed = self.pushed()
        if pushed is None:
            return None
        seen = self.store.view_confirmed
        self._spent = [(seq, fact) for seq, fact in self._spent if seq > seen]  # the rest is in the push
        pending = [fact for _, fact in self._spent]
        tokens = sum(f.tokens for f in pending)
        cost = sum(f.cost_usd for f in pending)
        estimated = sum(1 for f in pending if f.estimated)
        agent = dataclasses.replace(
            pushed.agent,
            spend=_plus(pushed.agent.spend, tokens, cost, len(pending), estimated),
            noticed=pushed.agent.noticed or self._noticed,
            final_taken=pushed.agent.final_taken or self._exhausted is not None,
            exhausted=pushed.agent.exhausted or self._exhausted,
        )
        tree = dataclasses.replace(
            pushed.tree, spend=_plus(pushed.tree.spend, tokens, cost, len(pending), estimated)
        )
        return agent, tree

    def mark_noticed(self, run_id: str) -> bool:
        if self._noticed:
            return False
        self._noticed = True
        self.store.emit_extension(BudgetMarkFact("noticed"))
        return True

    def mark_exhausted(self, run_id: str, name: BudgetName) -> bool:
        if self._exhausted is not None:
            return False
        self._exhausted = name
        self.store.emit_extension(BudgetMarkFact("exhausted", name))
        return True

    def reserve(
        self, run_id: str, decide: Callable[[AgentBudget, TreeBudget], tuple[T, tuple[int, float] | None]]
    ) -> T | None:
        """Decide on the pushed state plus this worker's spend; the reservation is not shared (no store)."""
        state = self.state(run_id)
        return None if state is None else decide(*state)[0]

    def release(self, run_id: str) -> None:
        """Nothing to release: a Ray worker's requests reserve nothing in the store."""

    def record(self, run_id: str, *, tokens: int, cost_usd: float, estimated: bool) -> None:
        fact = SpendFact(tokens, cost_usd, estimated, uuid.uuid4().hex)
        self._spent.append((self.store.emit_extension(fact), fact))

    def result_note(self, run_id: str) -> str | None:
        """`budget_exhausted: …` when this agent was stopped at a budget."""
        state = self.state(run_id)
        if state is None:
            return None
        finding = exhausted_finding(state[0], state[1], self.now())
        return None if finding is None else texts.stopped(finding)


def attach_ray_guard(store: RemoteStore, child: ManagedChild) -> None:
    """Give a Ray worker's agent its budget guard (it lets every request go until the host pushed a
    budget row), and end its result with `budget_exhausted` when it is stopped."""
    book = RemoteBudget(store)
    child.agent.set_request_guard(BudgetGuard(book, child.run_id))
    previous = child.on_work_done

    async def work_done(run_id: str, summary: str) -> str | None:
        notes = [
            await previous(run_id, summary) if previous is not None else None,
            book.result_note(run_id),
        ]
        return "\n".join(note for note in notes if note) or None

    child.on_work_done = work_done
