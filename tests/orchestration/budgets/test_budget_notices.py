"""What budgets tell a model: the guard's notice and final turn, a stopped agent's result line and the
lead's notice are `budgets/texts.py`'s words, pinned here byte for byte."""

from __future__ import annotations

from pathlib import Path

from corral.agent import RequestEstimate
from corral.llm import ModelInfo
from corral.orchestration import Repositories
from corral.orchestration.budgets import BudgetGuard, BudgetLedger, Finding, Limits, texts
from corral.orchestration.budgets._extension import result_note
from corral.orchestration.budgets.notices import TreeExhausted

RUN = "00000000-0000-4000-8000-000000000001"


def test_the_guard_and_the_result_note_speak_the_budgets_words(tmp_path: Path) -> None:
    with Repositories.open(tmp_path / "corral.db") as store:
        ledger = BudgetLedger(store.db)
        ledger.set_tree_limits("lead", Limits())
        ledger.open_agent(RUN, tree_id="lead", session_id="s", label="scout", limits=Limits(tokens=10_000))
        guard = BudgetGuard(ledger, RUN)
        model = ModelInfo(id="m", provider="scripted", api="scripted")
        near = guard.before_request(RequestEstimate(model=model, input_tokens=9_000, output_tokens=0))
        over = guard.before_request(RequestEstimate(model=model, input_tokens=12_000, output_tokens=0))
        assert near.action == "notice" and near.text.startswith("Budget notice: agent_tokens "), near.text
        assert over.action == "final" and over.text.startswith("Budget exhausted: agent_tokens "), over.text
        note = result_note(ledger, RUN)
        assert note is not None and note.startswith("budget_exhausted: agent_tokens "), note


def test_default_words() -> None:
    tokens = Finding("agent_tokens", 12_400, 10_000)
    assert texts.wrap_up(Finding("agent_tokens", 8_000, 10_000)) == (
        "Budget notice: agent_tokens 8,000 / 10,000 tokens (80% of the limit). Wrap up now: finish the current "
        "step and give your final answer (what is done, what remains) soon."
    )
    # What is spent and what is only estimated are told apart (issue 28): 2,050 spent is not "used 2,476".
    assert texts.wrap_up(Finding("agent_tokens", 2_050, 3_000, estimated=426)) == (
        "Budget notice: agent_tokens 2,050 / 3,000 tokens spent, + ~426 estimated for the next request (83% "
        "of the limit with the next request). Wrap up now: finish the current step and give your final answer "
        "(what is done, what remains) soon."
    )
    assert texts.final_turn(Finding("tree_tokens", 6_200, 10_000, estimated=3_256, reserved=2_400)) == (
        "Budget exhausted: tree_tokens 6,200 / 10,000 tokens spent, + 2,400 reserved by requests in flight, "
        "+ ~3,256 estimated for the next request. Your work stops here and tools are no longer run. Reply now, "
        "without tool calls, with your final report: what you did, what you found, and what remains undone."
    )
    assert texts.final_turn(tokens) == (
        "Budget exhausted: agent_tokens 12,400 / 10,000 tokens. Your work stops here and tools are no longer "
        "run. Reply now, without tool calls, with your final report: what you did, what you found, and what "
        "remains undone."
    )
    assert texts.stopped(tokens) == (
        "budget_exhausted: agent_tokens 12,400 / 10,000 tokens (stopped at its budget: its next request would "
        "have passed the limit; the text above is its final report)"
    )
    assert texts.stopped(Finding("agent_minutes", 600_000, 600_000)) == (
        "budget_exhausted: agent_minutes 10.0 / 10.0 min (stopped at its budget: its time ran out; the text "
        "above is its final report)"
    )
    tail = (
        "Its running agents stop with a final report (budget_exhausted); new delegations and spawns are "
        "refused. Your own turns are not limited: work with the results you have."
    )
    reached = TreeExhausted("tree_cost_usd", Finding("tree_cost_usd", 1.02, 1.0))
    assert texts.tree_exhausted(reached) == (
        "The budget of your agent tree is exhausted (tree_cost_usd $1.0200 / $1.0000). " + tail
    )
    assert texts.tree_exhausted(TreeExhausted("tree_minutes", None)) == (
        "The budget of your agent tree is exhausted (tree_minutes). " + tail
    )
