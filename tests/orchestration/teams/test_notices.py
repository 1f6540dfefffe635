"""The teams core's notices reach the model in `teams/texts.py`'s words, with the facts the core saw:
the recovery prompt the agent reads, a fallback report's content, the report the lead reads, and the
notice that quarantine holds a queued agent back.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from corral.orchestration.teams import texts
from corral.orchestration.teams.messages.records import TEAM_MESSAGE_TYPE
from corral.orchestration.teams.reports._reports import TEAM_REPORT_TYPE
from corral.settings import CapacitySettings, Settings, TeamsSettings
from tests._waits import eventually

from ._teams_helpers import teams_env, write_script

pytestmark = pytest.mark.usefixtures("env")


async def test_the_recovery_prompt_and_fallback_reports_reach_the_model_in_the_teams_words(
    tmp_path: Path,
) -> None:
    spawn = [
        {"name": "spawn_agent", "args": {"name": name, "prompt": "p", "model_slot": "read-collect"}}
        for name in ("talker", "silent")
    ]
    write_script(
        tmp_path,
        "lead",
        {
            "steps": [{"tool_calls": spawn}, {"text": "Waiting."}],
            "on_exhausted": "repeat_last",
            "agents": {
                "talker": [
                    {"text": "First answer."},
                    {"expect": {"last_user_contains": texts.RECOVERY_PROMPT}, "text": "The answer is 42."},
                ],
                "silent": [{"thinking": "hmm"}, {"thinking": "still nothing"}],
            },
        },
    )
    async with teams_env(tmp_path, "lead") as env:
        await env.lead.prompt("go")
        await env.quiet()
        reports = env.host.repositories.teams.reports
        delivered = {e["details"]["name"]: e["content"] for e in env.lead_custom(TEAM_REPORT_TYPE)}
        assert sorted(delivered) == ["silent", "talker"]
        assert (
            delivered["talker"].startswith("Report from agent talker (")
            and " · status=completed · " in (delivered["talker"])
        )
        assert (
            delivered["silent"].startswith("Report from agent silent (")
            and " · status=failed · " in (delivered["silent"])
        )
        assert all(text.endswith(texts.REPORT_CAVEAT) for text in delivered.values())
        by_name = {e["details"]["name"]: e["details"]["report_id"] for e in env.lead_custom(TEAM_REPORT_TYPE)}
        talker, silent = reports.team_report(by_name["talker"]), reports.team_report(by_name["silent"])
        assert talker is not None and silent is not None
        assert (talker.status, talker.report_source, talker.content) == (
            "completed",
            "assistant-text",
            "The answer is 42.",
        )
        assert (silent.status, silent.report_source) == ("failed", "empty")
        assert silent.content.startswith(
            "Agent silent ended without a report, even after the report-only recovery prompt."
        ), silent.content
        assert "The answer is 42." in delivered["talker"]


async def test_quarantine_retaining_a_queued_agent_tells_the_lead_in_the_teams_words(
    tmp_path: Path,
) -> None:
    write_script(tmp_path, "lead", {"steps": [{"text": "Noted."}], "on_exhausted": "repeat_last"})
    settings = Settings(teams=TeamsSettings(read_agents=CapacitySettings(max_concurrent=1)))
    async with teams_env(tmp_path, "lead", settings=settings) as env:
        capacity = env.teams.capacity(env.caller.session_id)
        holder = await capacity.admit("holder", "read")
        capacity.reserve("fenced", "read")
        capacity.quarantine("fenced")
        await eventually(lambda: bool(env.lead_custom(TEAM_MESSAGE_TYPE)), env.host)
        [notice] = env.lead_custom(TEAM_MESSAGE_TYPE)
        assert notice["content"] == (
            "Message from corral — Notice:\n\n"
            "Retained queued agent fenced: lifecycle quarantine appeared before admission."
        )
        assert notice["details"]["from"] == "corral"
        capacity.cancel_queued("fenced")
        capacity.release(holder)
        await env.quiet()
