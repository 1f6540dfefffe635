"""Budgets of teams agents: a tier's `[teams.tier_budget.<tier>]` limit stops the agent, whose
report says `budget_exhausted`; `get_agent_status` shows its spend against the limit."""

from __future__ import annotations

from pathlib import Path

from corral.orchestration.teams.reports._reports import TEAM_REPORT_TYPE
from corral.settings import AgentBudgetSettings, Settings, TeamsSettings
from tests.orchestration.teams._teams_helpers import teams_env, write_script

USAGE = {"input": 3000, "output": 100, "cache_read": 0, "cache_write": 0}


async def test_tier_budget_stops_a_teams_agent_and_its_report_says_so(env: Path) -> None:
    tmp_path = env
    spawn = {"name": "spawn_agent", "args": {"name": "a", "prompt": "Collect.", "model_slot": "read-collect"}}
    status = {"name": "get_agent_status", "args": {}}
    write_script(
        tmp_path,
        "lead",
        {
            "steps": [
                {"tool_calls": [spawn]},
                {"text": "Waiting."},
                {"tool_calls": [status]},
                {"text": "Seen."},
            ],
            "on_exhausted": "repeat_last",
            "agents": {
                "a": [
                    {
                        "text": "collecting",
                        "tool_calls": [{"name": "ls", "args": {"path": "."}}],
                        "usage": USAGE,
                    },
                    {
                        "text": "Collected two files so far.",
                        "usage": USAGE,
                        "expect": {"last_user_contains": "Budget exhausted: agent_tokens"},
                    },
                    {"text": "never asked"},
                ]
            },
        },
    )
    settings = Settings(
        teams=TeamsSettings(tier_budget={"read-collect": AgentBudgetSettings(agent_tokens=5_000)})
    )
    async with teams_env(tmp_path, "lead", settings=settings) as team:
        await team.lead.prompt("go")
        await team.quiet()
        [entry] = team.lead_custom(TEAM_REPORT_TYPE)
        assert "Collected two files so far." in entry["content"]
        assert "budget_exhausted: agent_tokens 6,200 / 5,000 tokens" in entry["content"]
        report = team.host.repositories.teams.reports.team_report(entry["details"]["report_id"])
        assert report is not None and report.report_source == "assistant-text"
        assert report.result.extensions["budget_exhausted"] is True
        budget = report.result.extensions["budget"]
        assert isinstance(budget, dict) and budget["budget"] == "agent_tokens"
        await team.lead.prompt("status")
        await team.quiet()
        [shown] = team.tool_results("get_agent_status")
        [agent] = [a for a in shown["details"]["agents"] if a["name"] == "a"]
        assert agent["budget"]["spend"]["tokens"] == 6_200
        assert agent["budget"]["limits"] == {"tokens": 5_000}
        assert agent["budget"]["exhausted"] == "agent_tokens"
