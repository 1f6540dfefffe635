"""Budgets: scripted agents with known usage reach the soft and hard limits of an agent and of the
lead's tree (nested helpers), report `budget_exhausted`, later delegations are refused, and a
restarted host keeps the spend."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from corral.agent import GuardVerdict
from corral.lead._host import ComposedHost
from corral.llm import ModelRegistry
from corral.orchestration import RESULT_TYPE, InvalidRequestError, Repositories, load_roster
from corral.orchestration.budgets import BudgetLedger
from corral.orchestration.surfaces import DelegateParams
from corral.settings import BudgetSettings, Settings
from tests._waits import eventually
from tests.orchestration._host_helpers import team, write_script

LEAD = {"steps": [{"text": "noted"}], "on_exhausted": "repeat_last"}
USAGE = {"input": 3000, "output": 100, "cache_read": 0, "cache_write": 0}
"""Each scripted request reports 3,100 tokens."""


def _step(text: str, **extra: Any) -> dict[str, Any]:
    return {"text": text, "tool_calls": [{"name": "ls", "args": {"path": "."}}], "usage": USAGE, **extra}


def _tool_results(t: Any, run_id: str) -> list[Any]:
    child_session = t.host.kernel.get_generation(run_id).session_path
    from corral.session import SessionManager

    with SessionManager.open(Path(child_session), read_only=True) as session:
        return [m for m in session.build_context().messages if getattr(m, "role", "") == "toolResult"]


async def test_agent_budget_notice_then_final_turn_without_tools(env: Path) -> None:
    agents = {
        "scout": [
            _step("one"),
            _step("two"),
            _step("three", expect={"last_user_contains": "Budget notice: agent_tokens"}),
            _step("Final report: listed the files.", expect={"last_user_contains": "Budget exhausted"}),
            {"text": "never asked"},
        ]
    }
    write_script(env, "team", {**LEAD, "agents": agents})
    settings = Settings(budget=BudgetSettings(agent_tokens=10_000))
    async with team(env, "team", settings=settings) as t:
        started = await t.controller.delegate(t.caller, DelegateParams(definition="scout", task="look"))
        await t.quiet()
        [result] = t.lead_entries(RESULT_TYPE)
        assert result["content"].count("Final report: listed the files.") == 1
        assert "budget_exhausted: agent_tokens 12,400 / 10,000 tokens" in result["content"]
        details = result["details"]
        assert details["budget_exhausted"] is True
        assert details["budget"]["budget"] == "agent_tokens"
        assert details["budget"]["spend"]["tokens"] == 12_400
        # The final turn's tool call was answered, not run.
        last = _tool_results(t, started.run_id)[-1]
        assert last.is_error and "was not run: the budget is exhausted" in last.content[0].text
        row = BudgetLedger(t.host.kernel.db).agent(started.run_id)
        assert row is not None and row.noticed and row.final_taken and row.exhausted == "agent_tokens"
        assert row.spend.requests == 4 and row.spend.estimated == 0
        # One notice, one final instruction in the agent's transcript.
        notices = [
            m
            for m in _messages(t, started.run_id)
            if getattr(m, "custom_type", "") == GuardVerdict.NOTICE_TYPE
        ]
        assert [n.content.split(":")[0] for n in notices] == ["Budget notice", "Budget exhausted"]
        # An agent's own limit leaves its tree (and the lead) alone.
        assert t.lead.request_guard is None
        await t.controller.delegate(
            t.caller, DelegateParams(definition="scout", task="again", label="scout-2")
        )


def _messages(t: Any, run_id: str) -> list[Any]:
    from corral.session import SessionManager

    path = t.host.kernel.get_generation(run_id).session_path
    with SessionManager.open(Path(path), read_only=True) as session:
        return list(session.build_context().messages)


async def test_tree_budget_stops_nested_agents_refuses_new_ones_and_survives_a_restart(env: Path) -> None:
    agents = {
        "implementer": [
            {
                "tool_calls": [
                    {"name": "agent", "args": {"action": "delegate", "definition": "scout", "task": "dig"}}
                ],
                "usage": {"input": 1000, "output": 100, "cache_read": 0, "cache_write": 0},
            },
            {
                "text": "waiting for scout",
                "usage": {"input": 10, "output": 10, "cache_read": 0, "cache_write": 0},
            },
            {"text": "never asked: the tree is spent, so the implementer takes no final turn"},
        ],
        "scout": [
            _step("dig one"),
            _step("dig two"),
            _step("Scout's final report.", expect={"last_user_contains": "Budget exhausted: tree_tokens"}),
            {"text": "never asked"},
        ],
    }
    write_script(env, "team", {**LEAD, "agents": agents})
    settings = Settings(budget=BudgetSettings(tree_tokens=10_000))
    async with team(env, "team", settings=settings) as t:
        lead_id = t.caller.session_id
        started = await t.controller.delegate(
            t.caller, DelegateParams(definition="implementer", task="build")
        )
        await t.quiet()
        [result] = t.lead_entries(RESULT_TYPE)
        # The scout's final turn spent the tree: the implementer's run ends without a request, its
        # last text standing as its report.
        assert "waiting for scout" in result["content"] and "never asked" not in result["content"]
        assert "budget_exhausted: tree_tokens" in result["content"]
        assert result["details"]["budget_exhausted"] is True
        # The nested scout was stopped by the tree budget too; its report reached the implementer.
        scout_result = next(
            m for m in _messages(t, started.run_id) if getattr(m, "custom_type", "") == RESULT_TYPE
        )
        assert (
            "Scout's final report." in scout_result.content
            and "budget_exhausted: tree_tokens" in scout_result.content
        )
        ledger = BudgetLedger(t.host.kernel.db)
        tree = ledger.tree(lead_id)
        assert tree is not None and tree.exhausted == "tree_tokens"
        by_label = {a.label: a for a in ledger.agents(lead_id)}
        assert set(by_label) == {"implementer", "scout"}
        assert tree.spend.tokens == sum(a.spend.tokens for a in by_label.values()) >= 10_000
        # The lead is told once and never stopped by its tree's budget.
        told = [e for e in t.lead_entries(GuardVerdict.NOTICE_TYPE)]
        assert len(told) == 1 and "budget of your agent tree is exhausted" in told[0]["content"]
        assert t.lead.request_guard is None
        with pytest.raises(InvalidRequestError, match="tree_tokens") as refused:
            await t.controller.delegate(t.caller, DelegateParams(definition="scout", task="more"))
        assert refused.value.details["budget"]["budget"] == "tree_tokens"
        generations = len(t.host.kernel.generations(include_finalized=True))
        spent = tree.spend.tokens
        lead_path = t.lead.session.path

    second = ComposedHost(
        repositories=Repositories.open(env / "home" / "corral.db"),
        registry=ModelRegistry(Settings(), cwd=env / "work"),
        settings=settings,
        sessions_root=env / "sessions",
        roster_loader=lambda cwd: load_roster(cwd, user_dir=env / "none", trust=False),
    )
    try:
        from tests.orchestration._host_helpers import make_lead

        lead = make_lead(env, "team", sessions_root=env / "sessions", session_path=t.lead.session.path)
        caller = await second.attach_lead(lead, surfaces=())
        tree = BudgetLedger(second.kernel.db).tree(caller.session_id)
        assert tree is not None and tree.spend.tokens == spent
        with pytest.raises(InvalidRequestError, match="tree_tokens"):
            await second.controller.delegate(caller, DelegateParams(definition="scout", task="more"))
        assert len(second.kernel.generations(include_finalized=True)) == generations  # nothing recorded
        lead.session.close()
    finally:
        await second.aclose()
    # `corral agents list` ends with the tree's line, the lead's own spend beside it.
    import io

    from corral._cli._agents import agents_list

    out = io.StringIO()
    assert await agents_list(cwd=env / "work", session=str(lead_path), as_json=False, out=out) == 0
    tree_line = out.getvalue().splitlines()[-1]
    assert (
        tree_line.startswith(f"tree budget: {spent:,} / 10,000 tok")
        and "(exhausted: tree_tokens)" in tree_line
    )
    assert "; lead (not counted): " in tree_line


async def test_unknown_usage_counts_as_the_estimate_and_is_flagged(env: Path) -> None:
    none = {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0}
    write_script(env, "team", {**LEAD, "agents": {"scout": [{"text": "x" * 4000, "usage": none}]}})
    async with team(env, "team", settings=Settings(budget=BudgetSettings(agent_tokens=1_000_000))) as t:
        started = await t.controller.delegate(t.caller, DelegateParams(definition="scout", task="look"))
        await t.quiet()
        row = BudgetLedger(t.host.kernel.db).agent(started.run_id)
        assert row is not None and row.spend.requests == 1 and row.spend.estimated == 1
        assert row.spend.tokens > 100  # the system prompt and task, estimated


async def test_list_shows_spend_against_the_limits(env: Path) -> None:
    from corral.orchestration.surfaces import CloseParams, ListParams
    from corral.orchestration.surfaces.agent._render import render_list

    agents = {"scout": [_step("one"), {"text": "slow", "delay_ms": 60000}]}
    write_script(env, "team", {**LEAD, "agents": agents})
    settings = Settings(budget=BudgetSettings(tree_tokens=100_000, agent_tokens=50_000, agent_cost_usd=2))
    async with team(env, "team", settings=settings) as t:
        started = await t.controller.delegate(t.caller, DelegateParams(definition="scout", task="look"))

        def spent() -> bool:
            row = BudgetLedger(t.host.kernel.db).agent(started.run_id)
            return row is not None and row.spend.requests == 1

        await eventually(spent, t.host)
        details = (await t.controller.list(t.caller, ListParams())).to_details()
        [record] = details["agents"]
        budget = record["budget"]
        assert budget["spend"]["tokens"] == 3100
        assert budget["limits"] == {"tokens": 50_000, "costUsd": 2.0}
        assert budget["tree"]["limits"] == {"tokens": 100_000}
        assert "budget: 3,100 / 50,000 tok, $0.00 / $2.00" in render_list(details)
        line = t.host.budgets.tree_line(t.caller.session_id)
        assert line is not None and line.startswith("tree budget: 3,100 / 100,000 tok")
        await t.controller.close(t.caller, CloseParams(agent="scout"))


async def test_a_final_turn_without_text_still_says_budget_exhausted(env: Path) -> None:
    agents = {
        "scout": [_step("one"), {"tool_calls": [{"name": "ls", "args": {"path": "."}}], "usage": USAGE}]
    }
    write_script(env, "team", {**LEAD, "agents": agents})
    async with team(env, "team", settings=Settings(budget=BudgetSettings(agent_tokens=5_000))) as t:
        await t.controller.delegate(t.caller, DelegateParams(definition="scout", task="look"))
        await t.quiet()
        [result] = t.lead_entries(RESULT_TYPE)
        assert result["details"]["status"] == "failed"
        assert "budget_exhausted: agent_tokens" in result["content"]
        assert result["details"]["budget_exhausted"] is True


async def test_a_ray_spend_fact_pulled_twice_counts_once(env: Path) -> None:
    """A host killed after recording a Ray worker's spend fact but before confirming it to the worker
    pulls the same fact again after its restart: the fact's id makes the second record a no-op."""
    from corral.orchestration.budgets._remote import SpendFact

    write_script(env, "team", {**LEAD, "agents": {"scout": [{"text": "slow", "delay_ms": 60000}]}})
    settings = Settings(budget=BudgetSettings(tree_tokens=100_000, agent_tokens=50_000))
    async with team(env, "team", settings=settings) as t:
        started = await t.controller.delegate(t.caller, DelegateParams(definition="scout", task="look"))
        ledger = BudgetLedger(t.host.kernel.db)
        before = ledger.state(started.run_id)
        assert before is not None
        fact = SpendFact(tokens=700, cost_usd=0.25, estimated=False, fact_id="f-1")
        t.host.extensions.remote_fact(started.run_id, fact)
        t.host.extensions.remote_fact(started.run_id, fact)  # the same fact, pulled again by a restarted host
        t.host.extensions.remote_fact(
            started.run_id, SpendFact(tokens=300, cost_usd=0.5, estimated=True, fact_id="f-2")
        )
        after = ledger.state(started.run_id)
        assert after is not None
        agent, tree = after
        assert agent.spend.tokens - before[0].spend.tokens == 1000
        assert agent.spend.requests - before[0].spend.requests == 2
        assert agent.spend.estimated - before[0].spend.estimated == 1
        assert agent.spend.cost_usd - before[0].spend.cost_usd == pytest.approx(0.75)
        assert tree.spend.tokens - before[1].spend.tokens == 1000
        assert tree.spend.requests - before[1].spend.requests == 2
        # Without an id (an in-process reply) every record counts.
        ledger.record(started.run_id, tokens=5, cost_usd=0, estimated=False)
        ledger.record(started.run_id, tokens=5, cost_usd=0, estimated=False)
        final = ledger.agent(started.run_id)
        assert final is not None and final.spend.tokens - agent.spend.tokens == 10


async def test_a_delegate_reads_the_definitions_once_and_the_agent_gets_its_definitions_budget(
    env: Path,
) -> None:
    # The budget's per-definition limit comes from the roster the delegation read (one read per
    # launch, `Host.one_roster`); outside a launch every read goes to the files again.
    agents = env / "config" / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    (agents / "frugal.md").write_text(
        "---\nname: frugal\ndescription: A small budget.\nbudget:\n  agent_tokens: 1234\n---\nBe brief.\n"
    )
    write_script(env, "team", {**LEAD, "agents": {"*": [{"text": "done"}]}})
    reads: list[Path] = []

    def loader(cwd: Path) -> Any:
        reads.append(cwd)
        return load_roster(cwd, user_dir=agents, trust=False)

    from tests.orchestration._host_helpers import make_lead

    host = ComposedHost(
        repositories=Repositories.open(env / "home" / "corral.db"),
        registry=ModelRegistry(Settings(), cwd=env / "work"),
        sessions_root=env / "sessions",
        roster_loader=loader,
    )
    lead = make_lead(env, "team", sessions_root=env / "sessions")
    try:
        caller = await host.attach_lead(lead, surfaces=())
        reads.clear()
        started = await host.controller.delegate(caller, DelegateParams(definition="frugal", task="x"))
        assert len(reads) == 1
        agent = BudgetLedger(host.kernel.db).agent(started.run_id)
        assert agent is not None and agent.limits.tokens == 1234
        await host.wait_until_quiet(caller.session_id)
        host.roster_loader(env / "work")
        host.roster_loader(env / "work")
        assert len(reads) == 3
    finally:
        await host.aclose()
        lead.session.close()


@pytest.mark.parametrize("budget", [None, BudgetSettings(tree_tokens=1_000_000)])
async def test_without_limits_a_request_takes_no_budget_transaction(
    env: Path, monkeypatch: pytest.MonkeyPatch, budget: BudgetSettings | None
) -> None:
    """With no limit on the agent or its tree, the check before a request (a write transaction that
    sums the tree's reservations: quadratic over a fan-out) is skipped; the spend is still recorded.
    With a limit, every request is checked and reserved."""
    reserves: list[str] = []
    real_reserve = BudgetLedger.reserve

    def counted(self: BudgetLedger, run_id: str, decide: Any) -> Any:
        reserves.append(run_id)
        return real_reserve(self, run_id, decide)

    monkeypatch.setattr(BudgetLedger, "reserve", counted)
    write_script(env, "team", {**LEAD, "agents": {"scout": [_step("one"), _step("two"), {"text": "done"}]}})
    settings = Settings() if budget is None else Settings(budget=budget)
    async with team(env, "team", settings=settings) as t:
        started = await t.controller.delegate(t.caller, DelegateParams(definition="scout", task="look"))
        await t.quiet()
        row = BudgetLedger(t.host.kernel.db).agent(started.run_id)
        assert row is not None and row.spend.requests == 3
    assert reserves == ([] if budget is None else [started.run_id] * 3)
