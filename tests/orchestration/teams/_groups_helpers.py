"""Real teams members and stored reports for the completion-group tests (real SQLite in tmp_path)."""

from __future__ import annotations

import itertools
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from corral.orchestration import NewGeneration, NewTeamMember, NewTeamReport, Repositories, TeamReportRecord
from corral.orchestration.teams.repair.records import RepairResult, ReportVerification
from corral.orchestration.teams.reports._reports import report_id, task_id
from corral.orchestration.teams.reports.records import ReportClaims, ReportResult
from corral.orchestration.teams.roster.records import team_name

LEAD = "lead-groups"
TEAM = team_name(LEAD)

__all__ = ["LEAD", "TEAM", "add_member", "counting_clock", "dump", "open_store", "store_report"]


def counting_clock() -> Callable[[], int]:
    ticks = itertools.count(1_000)
    lock = threading.Lock()

    def clock() -> int:
        with lock:
            return next(ticks)

    return clock


def open_store(path: Path) -> Repositories:
    return Repositories.open(path, clock=counting_clock())


def dump(path: Path) -> list[str]:
    """Every row of the database as SQL text (to prove a refused event changed nothing)."""
    conn = sqlite3.connect(path)
    try:
        return [line for line in conn.iterdump() if line.startswith("INSERT")]
    finally:
        conn.close()


def add_member(
    store: Repositories,
    name: str,
    *,
    lead: str = LEAD,
    group_id: str | None = None,
    slot_id: str | None = None,
) -> str:
    """Create a live, accepted read member `name` of the team; returns its run id."""
    generation, task, _member = store.teams.roster.create_team_generation(
        NewGeneration(
            definition="read-review",
            owner_session_id=lead,
            cwd="/work/project",
            session_id=f"session-{lead}-{name}-{len(store.teams.roster.team_members(lead, live_only=False))}",
            task="Review the module.",
            label=name,
        ),
        NewTeamMember(
            lead_session_id=lead,
            name=name,
            tier="read-review",
            requested_tier="review",
            kind="read",
            model="scripted/echo",
            thinking="off",
            model_source="lead",
            sandbox="enforced",
            prompt="Review the module.",
            group_id=group_id,
            slot_id=slot_id,
        ),
    )
    store.kernel.record_ack(generation.run_id, task.request_id, accepted=True)
    return generation.run_id


def store_report(
    store: Repositories,
    name: str,
    run_id: str,
    *,
    lead: str = LEAD,
    status: str = "completed",
    outcome: str | None = "succeeded",
    verification: str = "not-requested",
    repair_outcome: str | None = None,
    summary: str | None = "done",
    content: str = "Reviewed the module; nothing to fix.",
    findings: list[dict[str, Any]] | None = None,
) -> TeamReportRecord:
    """Store the run's final report (completing its generation), with the given facts."""
    team = team_name(lead)
    checks = ("check:" + "0" * 64,) if verification in ("passed", "failed", "stale") else ()
    result = ReportResult(
        task_id(team, name, run_id),
        run_id,
        report_id(team, name, run_id),
        outcome=outcome,
        claims=ReportClaims.from_json({"findings": findings or []}),
        verification=ReportVerification(verification, checks),  # type: ignore[arg-type]
        repair=None if repair_outcome is None else RepairResult("repair:" + "0" * 64, "exhausted"),
    )
    generation = store.kernel.get_generation(run_id)
    assert generation is not None and generation.active_request_id is not None
    return store.teams.reports.store_team_report(
        run_id,
        generation.active_request_id,
        NewTeamReport(
            report_id=report_id(team, name, run_id),
            task_id=task_id(team, name, run_id),
            status=status,  # type: ignore[arg-type]
            content=content,
            result=result,
            report_source="report_and_exit",
            summary=summary,
            outcome=outcome,  # type: ignore[arg-type]
            markdown_path=f"/reports/{name}.md",
        ),
    )
