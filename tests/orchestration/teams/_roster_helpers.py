"""Helpers of the teams store tests: a member spawned straight into the roster, a report, a message row."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from typing import Any

from corral.orchestration import (
    TEAM_LEAD,
    GenerationRecord,
    NewGeneration,
    NewTeamMember,
    NewTeamReport,
    Repositories,
    RequestRecord,
    TeamMemberRecord,
)
from corral.orchestration.teams.reports.records import ReportResult
from tests.orchestration._store_helpers import LEAD

OTHER_LEAD = "other-lead"


def counting_clock() -> Callable[[], int]:
    ticks = itertools.count(1_000)
    lock = threading.Lock()

    def clock() -> int:
        with lock:
            return next(ticks)

    return clock


def spawn(
    store: Repositories,
    name: str,
    *,
    kind: str = "read",
    lead: str = LEAD,
    parent: GenerationRecord | None = None,
    allow_nested: bool = False,
    session_context: str = "none",
    metadata: dict[str, Any] | None = None,
    ack: bool = True,
) -> tuple[GenerationRecord, RequestRecord, TeamMemberRecord]:
    """Create a teams member (and accept its task unless `ack=False`)."""
    tier = "read-review" if kind == "read" else "write-feature"
    generation, task, member = store.teams.roster.create_team_generation(
        NewGeneration(
            definition=tier,
            owner_session_id=lead if parent is None else parent.session_id,
            cwd="/work/project",
            session_id=f"session-{lead}-{name}-{len(store.teams.roster.team_members(lead, live_only=False))}",
            task="Review the module.",
            label=name,
            parent_run_id=None if parent is None else parent.run_id,
            delegating=allow_nested,
        ),
        NewTeamMember(
            lead_session_id=lead,
            name=name,
            tier=tier,
            requested_tier="review" if kind == "read" else tier,
            kind=kind,  # type: ignore[arg-type]
            model="scripted/echo",
            thinking="off",
            model_source="lead",
            sandbox="enforced" if kind == "read" else "none",
            prompt="Review the module.",
            depth=0 if parent is None else 1,
            parent_run_id=None if parent is None else parent.run_id,
            allow_nested=allow_nested,
            session_context=session_context,  # type: ignore[arg-type]
            metadata=metadata,
        ),
    )
    if ack:
        store.kernel.record_ack(generation.run_id, task.request_id, accepted=True)
        refreshed = store.kernel.get_generation(generation.run_id)
        assert refreshed is not None
        generation = refreshed
    return generation, task, member


def report(
    name: str, run_id: str, *, content: str = "Found two bugs.", status: str = "completed"
) -> NewTeamReport:
    return NewTeamReport(
        report_id=f"report:session-{LEAD}:{name}:{run_id}",
        task_id=f"task:session-{LEAD}:{name}:{run_id}",
        status=status,  # type: ignore[arg-type]
        content=content,
        result=ReportResult(
            f"task:session-{LEAD}:{name}:{run_id}", run_id, f"report:session-{LEAD}:{name}:{run_id}"
        ),
        report_source="report_and_exit",
        summary="bugs",
        outcome="succeeded",
        markdown_path=f"/reports/{name}.md",
        elapsed_ms=1200,
        tokens=345,
        cost_usd=0.25,
    )


def send(store: Repositories, recipient: str, content: str = "hello", **extra: Any) -> Any:
    fields: dict[str, Any] = {
        "recipient": recipient,
        "sender": TEAM_LEAD,
        "sender_run_id": None,
        "content": content,
        "summary": "Message",
        "delivery": "inbox",
    }
    fields.update(extra)
    return store.teams.messages.add_team_message(LEAD, **fields)
