"""A stored teams report reaches the lead: the hidden `corral-team-report` message, delivered once.

Its text is worded by `teams/texts.py` (from a `ReportArrived`); its details are the core's. Kept apart
from `_reports.py` (ids, the report's `result`, the Markdown copy), which the checkpoint records import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from corral.agent import SEEN_REFERENCE_KEY
from corral.llm import CustomMessage
from corral.orchestration.kernel import deliver_message
from corral.orchestration.kernel._faults import fault_point
from corral.orchestration.teams import texts
from corral.orchestration.teams.notices import ReportArrived
from corral.orchestration.teams.roster.records import TEAM_REPORT_TYPE

if TYPE_CHECKING:
    from corral.agent import AgentSession
    from corral.orchestration.kernel._generations import Generations
    from corral.orchestration.kernel.records import ResultRecord
    from corral.orchestration.teams.repair.records import ReportVerification
    from corral.orchestration.teams.roster.records import TeamReportRecord

__all__ = ["deliver_team_report", "team_report_message"]


def _verification_details(verification: ReportVerification) -> dict[str, Any]:
    """The report message's `verification` details: `{state, check_ids?, error?}`."""
    details: dict[str, Any] = {"state": verification.state}
    if verification.check_ids:
        details["check_ids"] = list(verification.check_ids)
    if verification.error:
        details["error"] = verification.error
    return details


def team_report_message(report: TeamReportRecord) -> CustomMessage:
    """The hidden `corral-team-report` message that gives the lead one full report and wakes it
    (its text: `texts.team_report`)."""
    effective = report.result.effective_outcome
    acceptance: dict[str, Any] = {"state": report.acceptance}
    if report.acceptance_reason:
        acceptance["reason"] = report.acceptance_reason
    verification = _verification_details(report.result.verification)
    text = texts.team_report(ReportArrived(report, effective, report.result.verification.state))
    work = report.result.extensions  # an isolated writer's branch, base, diffStat and merge (the worktrees')
    details: dict[str, Any] = {
        "name": report.name,
        "task_id": report.task_id,
        "run_id": report.run_id,
        "report_id": report.report_id,
        "outcome": report.outcome,
        "effective_outcome": effective,
        "verification": verification,
        "acceptance": acceptance,
        "elapsed_ms": report.elapsed_ms,
        "tokens": report.tokens,
        "status": report.status,
        "tier": report.tier,
    }
    for key in ("branch", "base", "diffStat", "merge"):
        if key in work:
            details[key] = work[key]
    if report.markdown_path:
        details["report_path"] = report.markdown_path
    # sent in full until the owner's model replied after it once, then this stands in its place
    details[SEEN_REFERENCE_KEY] = texts.report_reference(
        ReportArrived(report, effective, report.result.verification.state)
    )
    return CustomMessage(custom_type=TEAM_REPORT_TYPE, content=text, display=False, details=details)


async def deliver_team_report(
    kernel: Generations,
    owner: AgentSession,
    report: TeamReportRecord,
    result: ResultRecord,
    *,
    wake: bool = True,
    finalize: bool = False,
) -> str:
    """Deliver a teams report exactly once (`corral-team-report`, keyed by `report_id`) and mark it delivered
    (with `finalize`, the run has ended: its generation is finalized in the same commit).

    The kernel's delivery routine (`kernel._delivery`) with the report's message in place of the
    plain result's; `wake=False` (a swarm member with siblings still to report) delivers it
    without a model request of its own.
    """
    message = team_report_message(report)
    entry_id = await deliver_message(owner, message, key="report_id", value=report.report_id, wake=wake)
    fault_point("after_owner_append")
    kernel.mark_delivered(
        result.request_id, owner_session_id=result.owner_session_id, entry_id=entry_id, finalize=finalize
    )
    return entry_id
