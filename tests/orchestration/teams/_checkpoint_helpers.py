"""Builders for checkpoint tests: synthetic observations and records, stored reports, a pinned clock."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from corral.orchestration import Repositories
from corral.orchestration.teams.checkpoints._checkpoints import build_draft
from corral.orchestration.teams.checkpoints.records import (
    CheckpointAuthor,
    CheckpointPolicy,
    CheckpointRecord,
    CheckpointReport,
    report_contribution,
)
from corral.orchestration.teams.checks._fingerprint import SourceFingerprint
from corral.orchestration.teams.repair.records import ReportVerification
from corral.orchestration.teams.reports._reports import report_id, task_id
from corral.orchestration.teams.reports.records import ReportClaims, ReportResult
from corral.orchestration.teams.roster.records import TeamReportRecord

TEAM = "session-lead"
CREATED = 1_700_000_000_000
"""A report time (Unix ms) for synthetic records."""


class Clock:
    """A settable clock in seconds (what `Checkpoints` takes)."""

    def __init__(self, ms: int = CREATED) -> None:
        self.ms = ms

    def __call__(self) -> float:
        return self.ms / 1000


def fingerprint(
    digest: str = "a", *, cwd: str = "/w/repo", root: str = "/w/repo", inputs: tuple[str, ...] = ("src",)
) -> SourceFingerprint:
    """A synthetic observation (64 hex digits made of `digest`)."""
    return SourceFingerprint(1, cwd, root, None, (digest * 64)[:64], inputs, 1)


def report_record(
    *,
    agent: str = "auth-review",
    run_id: str = "run-1",
    markdown: Path | str | None = "/w/reports/auth-review.md",
    created_at: int = CREATED,
    details: dict[str, Any] | None = None,
    verification: str = "not-requested",
    acceptance: str = "pending",
    team: str = TEAM,
) -> TeamReportRecord:
    """A stored-report record as the teams core hands it to `Checkpoints.record`."""
    result = ReportResult(
        task_id(team, agent, run_id),
        run_id,
        report_id(team, agent, run_id),
        outcome="succeeded",
        claims=ReportClaims.from_json(details or {}),
        verification=ReportVerification(verification),  # type: ignore[arg-type]
    )
    return TeamReportRecord(
        report_id=report_id(team, agent, run_id),
        task_id=task_id(team, agent, run_id),
        run_id=run_id,
        request_id=f"request-{run_id}",
        lead_session_id="lead",
        name=agent,
        tier="read-review",
        kind="read",
        status="completed",
        content="Full report.",
        summary=None,
        outcome="succeeded",
        result=result,
        report_source="report_and_exit",
        markdown_path=None if markdown is None else str(markdown),
        acceptance=acceptance,  # type: ignore[arg-type]
        acceptance_reason=None,
        decided_at=None,
        elapsed_ms=1,
        tokens=1,
        cost_usd=0.0,
        created_at=created_at,
        delivery="pending",
        delivered_entry_id=None,
    )


def make_record(
    *,
    agent: str = "auth-review",
    run_id: str = "run-1",
    created_at: int = CREATED,
    policy: CheckpointPolicy | None = None,
    parent: CheckpointRecord | None = None,
    details: dict[str, Any] | None = None,
    prompt: str = "Review auth.",
    before: SourceFingerprint | None = None,
    after: SourceFingerprint | None = None,
) -> CheckpointRecord:
    """A valid record built the way `Checkpoints.record` builds one, without git."""
    policy = policy or CheckpointPolicy(("src",))
    own = report_id(TEAM, agent, run_id)
    report = CheckpointReport(
        own,
        f"/w/reports/{agent}-{run_id}.md",
        before or fingerprint(),
        after or fingerprint(),
        "not-requested",
        "pending",
        lead_decisions=policy.decisions,
    )
    return build_draft(
        author=CheckpointAuthor(TEAM, agent, run_id, "read-review"),
        created_at=created_at,
        prompt=prompt,
        policy=policy,
        parent=parent,
        report=report,
        contribution=report_contribution({**(details or {})}, own),
    )


def record_text(record: CheckpointRecord) -> str:
    """The JSON a row stores."""
    return json.dumps(record.to_json(), separators=(",", ":"), ensure_ascii=False)


def save(store: Repositories, record: CheckpointRecord) -> None:
    """Insert a ready row for `record`."""
    store.teams.checkpoints.insert_checkpoint(
        record.id, record_text(record), created_at=record.created_at, expires_at=record.expires_at
    )
