"""A tree budget is a cap (issue 27, item 5): 25 agents started at once with `tree_tokens = 10000`
spend at most 1.25× the limit — each request reserves its estimate in the store before it goes out,
the reservation is settled by the reply's usage, and a stopped agent's final turn is bounded and
skipped once the tree is spent."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from corral.agent import RequestEstimate
from corral.llm import AssistantMessage, ModelInfo, usage_with_total
from corral.orchestration import RESULT_TYPE, Repositories
from corral.orchestration.budgets import BudgetGuard, BudgetLedger, Limits
from corral.orchestration.surfaces import DelegateParams
from corral.settings import BudgetSettings, Settings
from tests._waits import eventually
from tests.orchestration._host_helpers import team, write_script

AGENTS = 25
LIMIT = 10_000


def _work(n: int) -> dict[str, Any]:
    # No `usage`: the scripted model reports the request's and the reply's size (chars / 4), as a
    # provider would; a short delay keeps every agent's request in flight together.
    return {
        "text": f"step {n}: " + "looked at the files and noted what they hold. " * 8,
        "tool_calls": [{"name": "ls", "args": {"path": "."}}],
        "delay_ms": 20,
    }


async def test_25_parallel_agents_spend_at_most_a_quarter_over_the_tree_limit(env: Path) -> None:
    agents = {"*": [*(_work(n) for n in range(6)), {"text": "Final report: what I found."}]}
    write_script(env, "team", {"steps": [{"text": "noted"}], "on_exhausted": "repeat_last", "agents": agents})
    settings = Settings(budget=BudgetSettings(tree_tokens=LIMIT))
    async with team(env, "team", settings=settings) as t:
        started = await asyncio.gather(
            *(
                t.controller.delegate(
                    t.caller, DelegateParams(definition="scout", task="look around", label=f"scout-{i}")
                )
                for i in range(AGENTS)
            )
        )
        assert len({s.run_id for s in started}) == AGENTS
        await t.quiet()
        ledger = BudgetLedger(t.host.kernel.db)
        tree = ledger.tree(t.caller.session_id)
        assert tree is not None and tree.exhausted == "tree_tokens"
        members = ledger.agents(t.caller.session_id)
        assert len(members) == AGENTS
        assert tree.spend.tokens == sum(a.spend.tokens for a in members)
        assert tree.spend.tokens <= 1.25 * LIMIT, f"tree spent {tree.spend.tokens / LIMIT:.2f}× its limit"
        # Every agent reported, each stopped one saying so; no reservation outlives its request.
        results = t.lead_entries(RESULT_TYPE)
        assert len(results) == AGENTS
        assert all(
            "budget_exhausted: tree_tokens" in r["content"]
            for r in results
            if r["details"].get("budget_exhausted")
        )
        assert ledger.reserved(t.caller.session_id) == (0, 0.0)


MODEL = ModelInfo(id="m", provider="scripted", api="scripted")
RUNS = [f"00000000-0000-4000-8000-{n:012d}" for n in range(1, 4)]


def _estimate(tokens: int) -> RequestEstimate:
    return RequestEstimate(model=MODEL, input_tokens=tokens, output_tokens=0)


def _reply(tokens: int, stop: str = "stop") -> AssistantMessage:
    return AssistantMessage(
        api="scripted", provider="scripted", model="m", usage=usage_with_total(input=tokens), stop_reason=stop
    )  # type: ignore[arg-type]


def test_requests_in_flight_reserve_the_tree_and_their_replies_settle_it(tmp_path: Path) -> None:
    with Repositories.open(tmp_path / "corral.db") as store:
        ledger = BudgetLedger(store.db)
        ledger.set_tree_limits("lead", Limits(tokens=10_000))
        guards = []
        for run in RUNS:
            ledger.open_agent(run, tree_id="lead", session_id=run, label=run[-3:], limits=Limits())
            guards.append(BudgetGuard(ledger, run))
        first, second, third = guards
        assert first.before_request(_estimate(4_000)).action == "go"
        assert ledger.reserved("lead")[0] >= 4_000
        assert second.before_request(_estimate(4_000)).action in ("go", "notice")
        # Nothing is spent yet, but the two requests in flight leave no room for a third full one:
        # it gets the final turn, its reply capped.
        verdict = third.before_request(_estimate(4_000))
        assert verdict.action == "final" and verdict.max_output_tokens is not None
        assert "reserved by requests in flight" in verdict.text
        # The replies settle the reservations with what they really used.
        first.after_reply(_reply(1_000), _estimate(4_000))
        second.after_reply(_reply(0, "error"), _estimate(4_000))  # a failed request releases its share
        third.after_reply(_reply(2_000), _estimate(4_000))
        assert ledger.reserved("lead") == (0, 0.0)
        tree = ledger.tree("lead")
        assert tree is not None and tree.spend.tokens == 3_000


def test_a_reservation_of_a_run_that_ended_or_was_lost_blocks_nothing(tmp_path: Path) -> None:
    """A process killed mid-request leaves its reservation in the store; it stops counting once its
    generation is no longer running (finished, finalized or marked lost by recovery)."""
    with Repositories.open(tmp_path / "corral.db") as store:
        ledger = BudgetLedger(store.db)
        ledger.set_tree_limits("lead", Limits(tokens=10_000))
        ledger.open_agent(RUNS[0], tree_id="lead", session_id="s", label="a", limits=Limits())
        guard = BudgetGuard(ledger, RUNS[0])
        assert guard.before_request(_estimate(9_000)).action in ("go", "notice")
        assert ledger.reserved("lead")[0] >= 9_000
        ledger.release(RUNS[0])  # the host's `lost` / `released` hook
        assert ledger.reserved("lead") == (0, 0.0)


async def test_a_request_in_flight_holds_the_tree_until_its_run_is_found_lost(env: Path) -> None:
    """What a host killed mid-request leaves: its agent's reservation row. Recovery marks the run
    `lost` (here directly, as `Recovery.recover` does for a dead host's run, no extension hook called):
    from then on the row counts nothing, so the tree is not blocked."""
    async with _request_in_flight(env) as (t, started, ledger, held):
        tree_id = t.caller.session_id
        assert held >= 256  # the input estimate plus the output floor
        t.host.kernel.mark_presence(started.run_id, "lost", diagnostic="host gone")
        assert ledger.reserved(tree_id) == (0, 0.0)
        row = store_row(ledger, started.run_id)
        assert row == held  # the row is still there: it is the run's state that makes it count nothing


async def test_a_request_in_flight_stops_counting_once_its_run_has_a_result(env: Path) -> None:
    """The other end of a run: once its generation is completed (here its result stored directly,
    no extension hook called), a reservation it still has counts nothing."""
    async with _request_in_flight(env) as (t, started, ledger, held):
        tree_id = t.caller.session_id
        t.host.kernel.store_result(started.run_id, started.request_id, status="completed", text="done")
        assert ledger.reserved(tree_id) == (0, 0.0)
        assert store_row(ledger, started.run_id) == held  # still stored, counted for nothing


@contextlib.asynccontextmanager
async def _request_in_flight(env: Path) -> AsyncIterator[tuple[Any, Any, BudgetLedger, int]]:
    """A team whose one scout has a model request in flight under a tree limit: `(team, the
    delegation, the ledger, the tokens its reservation holds)`."""
    write_script(
        env, "team", {"steps": [{"text": "noted"}], "agents": {"*": [{"text": "slow", "delay_ms": 60_000}]}}
    )
    async with team(env, "team", settings=Settings(budget=BudgetSettings(tree_tokens=LIMIT))) as t:
        started = await t.controller.delegate(t.caller, DelegateParams(definition="scout", task="look"))
        ledger = BudgetLedger(t.host.kernel.db)
        await eventually(lambda: ledger.reserved(t.caller.session_id)[0] > 0, t.host)
        yield t, started, ledger, ledger.reserved(t.caller.session_id)[0]


def store_row(ledger: BudgetLedger, run_id: str) -> int | None:
    with ledger.db.read() as tx:
        row = tx.one("SELECT tokens FROM budget_reservations WHERE run_id = ?", (run_id,))
    return None if row is None else int(row["tokens"])


async def test_notices_tell_spent_from_estimated_and_agree_with_the_result_line(env: Path) -> None:
    """Issue 28: the notice said `1,422 / 1,000` (spent plus the next request's estimate) and the result
    `410 / 1,000`. Now each notice names what is spent and what is estimated, and the result line's
    spend is the notice's plus the final turn's own reply."""
    import re

    from corral.agent import GuardVerdict

    usage = {"input": 400, "output": 10, "cache_read": 0, "cache_write": 0}
    step = {"text": "working", "tool_calls": [{"name": "ls", "args": {"path": "."}}], "usage": usage}
    script = {"*": [step] * 12 + [{"text": "Final report.", "usage": usage}]}
    write_script(env, "team", {"steps": [{"text": "noted"}], "on_exhausted": "repeat_last", "agents": script})
    async with team(env, "team", settings=Settings(budget=BudgetSettings(agent_tokens=3_000))) as t:
        started = await t.controller.delegate(t.caller, DelegateParams(definition="scout", task="look"))
        await t.quiet()
        from tests.orchestration.budgets.test_budgets import _messages

        notices = [
            m.content
            for m in _messages(t, started.run_id)
            if getattr(m, "custom_type", "") == GuardVerdict.NOTICE_TYPE
        ]
        assert len(notices) == 2, notices
        pattern = r"agent_tokens ([\d,]+) / 3,000 tokens spent, \+ ~([\d,]+) estimated for the next request"
        spent = []
        for text in notices:
            found = re.search(pattern, text)
            assert found is not None, text
            assert int(found[1].replace(",", "")) % 410 == 0  # only replies' usage counts as spent
            spent.append(int(found[1].replace(",", "")))
        row = BudgetLedger(t.host.kernel.db).agent(started.run_id)
        assert row is not None
        assert spent[1] + 410 == row.spend.tokens  # the final turn's reply is the difference
        [result] = t.lead_entries(RESULT_TYPE)
        assert (
            f"budget_exhausted: agent_tokens {row.spend.tokens:,} / 3,000 tokens (stopped"
            in result["content"]
        )


async def test_agents_list_prints_no_budget_line_without_a_budget(env: Path) -> None:
    """Issue 28: `corral agents list` printed `No agents.` and then `tree budget: …` with no budget set."""
    import io

    from corral._cli._agents import agents_list

    write_script(env, "team", {"steps": [{"text": "noted"}], "agents": {"*": [{"text": "done"}]}})
    async with team(env, "team") as t:
        await t.controller.delegate(t.caller, DelegateParams(definition="scout", task="look"))
        await t.quiet()
        lead_path = t.lead.session.path
    out = io.StringIO()
    assert await agents_list(cwd=env / "work", session=str(lead_path), as_json=False, out=out) == 0
    assert out.getvalue() == "No agents.\n"  # the agent finished; its spend made no budget line
