"""Budgets of an agent in a tmux worker process: the worker's guard stops it at the limit, its spend
reaches the host's store, the lead is told once (on the host's watcher tick)."""

from __future__ import annotations

from pathlib import Path

from corral.agent import GuardVerdict
from corral.orchestration import RESULT_TYPE
from corral.orchestration.budgets import BudgetLedger
from corral.orchestration.surfaces import DelegateParams
from corral.settings import BudgetSettings, Settings
from tests._waits import eventually
from tests.orchestration._host_helpers import team, write_script
from tests.runtime._tmux_fixtures import tmux_socket

__all__ = ["tmux_socket"]

USAGE = {"input": 3000, "output": 100, "cache_read": 0, "cache_write": 0}


async def test_tmux_agent_reaches_the_tree_limit_in_its_worker(env: Path, tmux_socket: Path) -> None:
    step = {"text": "digging", "tool_calls": [{"name": "ls", "args": {"path": "."}}], "usage": USAGE}
    agents = {
        "scout": [
            step,
            step,
            {
                "text": "Scout's final report.",
                "usage": USAGE,
                "expect": {"last_user_contains": "Budget exhausted"},
            },
            {"text": "never asked"},
        ]
    }
    write_script(env, "team", {"steps": [{"text": "noted"}], "on_exhausted": "repeat_last", "agents": agents})
    settings = Settings(runtime="tmux", budget=BudgetSettings(tree_tokens=8_000))
    async with team(env, "team", settings=settings, tmux_socket=tmux_socket) as t:
        started = await t.controller.delegate(t.caller, DelegateParams(definition="scout", task="dig"))
        generation = t.host.kernel.get_generation(started.run_id)
        assert generation is not None and generation.runtime_kind == "tmux"
        await t.quiet()
        [result] = t.lead_entries(RESULT_TYPE)
        assert "Scout's final report." in result["content"]
        assert "budget_exhausted: tree_tokens" in result["content"]
        assert result["details"]["budget_exhausted"] is True
        ledger = BudgetLedger(t.host.kernel.db)
        row = ledger.agent(started.run_id)
        assert row is not None and row.exhausted == "tree_tokens" and row.spend.requests == 3
        tree = ledger.tree(t.caller.session_id)
        assert tree is not None and tree.spend.tokens == 9_300
        await eventually(lambda: len(t.lead_entries(GuardVerdict.NOTICE_TYPE)) == 1, t.host)
