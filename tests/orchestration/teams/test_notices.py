"""The teams core says nothing itself: its notices are facts the composition root's renderer words.

A host built with other words (`ComposedHost(teams_notices=...)`) shows that every notice on these
paths reaches the model through the port — the recovery prompt the agent reads, a fallback report's
content, the report and the message the lead reads, a message a member reads, the notice that
quarantine holds a queued agent back — and carries the facts the core saw.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from corral.orchestration.teams.notices import (
    CheckpointNotSaved,
    ContinuationDue,
    FallbackReport,
    MessageArrived,
    QueuedRetained,
    QueuedStartFailed,
    RepairDue,
    ReportArrived,
    ReportMissing,
    SessionContextAttached,
    SwarmMembersGone,
)
from corral.orchestration.teams.reports._reports import TEAM_REPORT_TYPE
from corral.orchestration.teams.roster.records import TEAM_MESSAGE_TYPE
from corral.settings import CapacitySettings, Settings, TeamsSettings
from tests._waits import eventually

from ._teams_helpers import teams_env, write_script

pytestmark = pytest.mark.usefixtures("env")


class _Tagged:
    """Other words for every notice: a tag naming the notice and the fact's fields."""

    def queued_start_failed(self, fact: QueuedStartFailed) -> str:
        return f"<start-failed {fact.name}: {fact.error}>"

    def queued_retained(self, fact: QueuedRetained) -> str:
        return f"<retained {fact.name}>"

    def checkpoint_not_saved(self, fact: CheckpointNotSaved) -> str:
        return f"<checkpoint {fact.checkpoint_id} {fact.agent}: {fact.error}>"

    def parent_notice(self, text: str) -> str:
        return f"<parent {text}>"

    def recovery_prompt(self, fact: ReportMissing) -> str:
        return f"<recover {fact.agent}>"

    def repair_prompt(self, fact: RepairDue) -> str:
        return f"<repair {fact.decision.verification.state}>"

    def session_context(self, fact: SessionContextAttached) -> str:
        return f"<context {fact.path.name}>"

    def continuation_prompt(self, fact: ContinuationDue) -> str:
        return f"<continue {fact.checkpoint.id}: {fact.assignment}>"

    def fallback_content(self, fact: FallbackReport) -> str:
        return f"<fallback {fact.agent} {fact.source} text={fact.text!r}>"

    def member_message(self, fact: MessageArrived) -> str:
        return f"<to member from {fact.sender}: {fact.content}>"

    def lead_message(self, fact: MessageArrived) -> str:
        return f"<to lead from {fact.sender} ({fact.summary}): {fact.content}>"

    def team_report(self, fact: ReportArrived) -> str:
        return f"<report {fact.report.name} {fact.report.status} verification={fact.verification}>"

    def report_reference(self, fact: ReportArrived) -> str:
        return f"<seen {fact.report.name}>"

    def swarm_members_gone(self, fact: SwarmMembersGone) -> str:
        return f"<gone {' '.join(fact.names)}>"


async def test_the_recovery_prompt_and_fallback_reports_come_from_the_renderer(tmp_path: Path) -> None:
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
                    {"expect": {"last_user_contains": "<recover talker>"}, "text": "The answer is 42."},
                ],
                "silent": [{"thinking": "hmm"}, {"thinking": "still nothing"}],
            },
        },
    )
    async with teams_env(tmp_path, "lead", notices=_Tagged()) as env:
        await env.lead.prompt("go")
        await env.quiet()
        reports = env.host.repositories.teams.reports
        delivered = {e["details"]["name"]: e["content"] for e in env.lead_custom(TEAM_REPORT_TYPE)}
        assert delivered == {
            "talker": "<report talker completed verification=not-requested>",
            "silent": "<report silent failed verification=not-requested>",
        }
        by_name = {e["details"]["name"]: e["details"]["report_id"] for e in env.lead_custom(TEAM_REPORT_TYPE)}
        talker, silent = reports.team_report(by_name["talker"]), reports.team_report(by_name["silent"])
        assert talker is not None and silent is not None
        assert (talker.status, talker.report_source, talker.content) == (
            "completed",
            "assistant-text",
            "<fallback talker assistant-text text='The answer is 42.'>",
        )
        assert (silent.status, silent.report_source, silent.content) == (
            "failed",
            "empty",
            "<fallback silent empty text=''>",
        )


async def test_quarantine_retaining_a_queued_agent_tells_the_lead_in_the_renderers_words(
    tmp_path: Path,
) -> None:
    write_script(tmp_path, "lead", {"steps": [{"text": "Noted."}], "on_exhausted": "repeat_last"})
    settings = Settings(teams=TeamsSettings(read_agents=CapacitySettings(max_concurrent=1)))
    async with teams_env(tmp_path, "lead", settings=settings, notices=_Tagged()) as env:
        capacity = env.teams.capacity(env.caller.session_id)
        holder = await capacity.admit("holder", "read")
        capacity.reserve("fenced", "read")
        capacity.quarantine("fenced")
        await eventually(lambda: bool(env.lead_custom(TEAM_MESSAGE_TYPE)), env.host)
        [notice] = env.lead_custom(TEAM_MESSAGE_TYPE)
        assert notice["content"] == "<to lead from corral (Notice): <retained fenced>>"
        assert notice["details"]["from"] == "corral"
        capacity.cancel_queued("fenced")
        capacity.release(holder)
        await env.quiet()
