"""Teams reports and the Python API (the `Teams` mixin).

* `submit_report` is `report_and_exit`: the first accepted report wins; it is
  stored in the same transaction that completes the generation, and the run
  ends after the tool batch (no further model request).
* `finish_without_report` covers a run that ended without an accepted report
  (after the single recovery prompt): its assistant text, or a failed report.
* `handle_request` is the programmatic launch (the seed's event-bus request)
  and `costs` the per-agent and combined cost of a team.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from corral.orchestration._faults import fault_point
from corral.orchestration._team_records import NewTeamReport, TeamReportRecord
from corral.orchestration.errors import InvalidRequestError, OrchestrationError

from ._reports import report_id, report_result, task_id, team_name, write_report_markdown

if TYPE_CHECKING:
    from corral.orchestration._host import Host
    from corral.orchestration._team_records import TeamMemberRecord
    from corral.orchestration.surfaces import ReportSubmission, SpawnRequest

    from ._capacity import CapacityController
    from ._member import TeamChild

__all__ = ["ORCHESTRATION_REQUEST_TYPES", "OrchestrationResponse", "ReportReceipt", "TeamReportsMixin"]

ORCHESTRATION_REQUEST_TYPES = ("spawn_agent",)
"""Request types `Teams.handle_request` serves."""


@dataclass(frozen=True, slots=True)
class ReportReceipt:
    """What `report_and_exit` answers the agent."""

    accepted: bool
    text: str
    details: dict[str, Any]


@dataclass(frozen=True, slots=True)
class OrchestrationResponse:
    """The correlated answer to a programmatic request (`Teams.handle_request`)."""

    request_id: str
    type: str
    ok: bool
    details: dict[str, Any] | None = None
    content: str | None = None
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The wire shape: `{requestId, type, ok: true, details, content}` or `{…, ok: false, error}`."""
        base: dict[str, Any] = {"requestId": self.request_id, "type": self.type, "ok": self.ok}
        if self.ok:
            return {**base, "details": self.details, "content": self.content}
        return {**base, "error": self.error}


class TeamReportsMixin:
    """Reports, the programmatic launch and costs of `Teams`."""

    host: Host
    pending: dict[tuple[str, str], Any]

    if TYPE_CHECKING:

        def capacity(self, lead_session_id: str) -> CapacityController: ...

        async def teardown(self, member: TeamMemberRecord, *, reason: str) -> dict[str, Any]: ...

        async def spawn(self, caller: Any, request: SpawnRequest) -> Any: ...

    # --- reports -------------------------------------------------------------------------------

    async def submit_report(
        self, child: TeamChild, submission: ReportSubmission, *, submission_id: str
    ) -> ReportReceipt:
        """`report_and_exit`: the first accepted report wins; it ends the agent's work at once."""
        if child.report_accepted:
            return ReportReceipt(
                False,
                "A final report was already accepted for this run. This duplicate was ignored; finish immediately.",
                {"accepted": False, "duplicate": True},
            )
        record = self._store_report(
            child,
            status="completed",
            content=submission.content,
            summary=submission.summary,
            outcome=submission.outcome,
            task_details=submission.task_details(),
            source="report_and_exit",
        )
        child.report_accepted = True
        child.close_messages()
        child.agent.end_after_tools()
        if child.delegating:
            self.host.spawn_background(self._close_helpers(child))
        text = (
            f"Report accepted ({record.report_id}). Your work is over: stop now. The lead decides acceptance."
        )
        return ReportReceipt(
            True,
            text,
            {
                "accepted": True,
                "reportId": record.report_id,
                "taskId": record.task_id,
                "runId": record.run_id,
                "deliveryOutcome": "none",
                "cancelledDeliveries": 0,
            },
        )

    async def finish_without_report(self, child: TeamChild) -> None:
        """Store the report of a run that ended without an accepted `report_and_exit`."""
        status, content, source = child.fallback_report()
        if child.delegating:
            await self._close_helpers(child)
        with contextlib.suppress(OrchestrationError):
            self._store_report(
                child,
                status=status,
                content=content,
                summary=None,
                outcome=None if status == "completed" else "failed",
                task_details={},
                source=source,
            )

    def _store_report(
        self,
        child: TeamChild,
        *,
        status: str,
        content: str,
        summary: str | None,
        outcome: Any,
        task_details: dict[str, Any],
        source: str,
    ) -> TeamReportRecord:
        store = self.host.store
        member = child.member
        team = team_name(member.lead_session_id)
        result = report_result(
            team=team, agent=member.name, run_id=child.run_id, outcome=outcome, task_details=task_details
        )
        markdown: Path | None = None
        with contextlib.suppress(OSError):
            markdown = write_report_markdown(
                self.host.store.path.parent / "reports" / team, member.name, content
            )
        stats = child.agent.stats()
        elapsed = int((asyncio.get_running_loop().time() - child.started_monotonic) * 1000)
        record = store.store_team_report(
            child.run_id,
            child.task.request_id,
            NewTeamReport(
                report_id=report_id(team, member.name, child.run_id),
                task_id=task_id(team, member.name, child.run_id),
                status=status,  # type: ignore[arg-type]
                content=content,
                summary=summary,
                outcome=outcome,
                result=result,
                report_source=source,
                markdown_path=None if markdown is None else str(markdown),
                elapsed_ms=max(0, elapsed),
                tokens=stats.tokens.total,
                cost_usd=stats.cost,
            ),
        )
        fault_point("after_result_row")
        self.host.result_stored(child.run_id, child.task.request_id)
        return record

    async def _close_helpers(self, parent: TeamChild) -> None:
        """A nested parent reported: drop its queued helpers and stop its running ones."""
        lead = parent.member.lead_session_id
        for (lead_id, name), (_reservation, prepared) in list(self.pending.items()):
            if lead_id == lead and prepared.parent is parent:
                self.capacity(lead).cancel_queued(name, reason=f"its parent {parent.label} finished")
        for helper in self.host.store.team_members(lead, parent_run_id=parent.run_id):
            await self.teardown(helper, reason=f"parent {parent.label} finished")

    # --- programmatic launch -----------------------------------------------------------------

    async def handle_request(
        self, lead_session_id: str, request: dict[str, Any]
    ) -> OrchestrationResponse | None:
        """Serve another program's request to the lead session (the seed's event-bus launch).

        `request` is `{requestId, type, params}`; only `type: "spawn_agent"` exists. The same tier,
        capacity and lifecycle rules as the tool apply. A request without `requestId` gets no
        response (`None`), as in the original.
        """
        request_id = request.get("requestId")
        if not isinstance(request_id, str) or not request_id:
            return None
        kind = str(request.get("type"))
        caller = self.host.lead_callers.get(lead_session_id)
        try:
            if caller is None:
                raise InvalidRequestError(
                    "No active lead session context is available; attach the lead (Host.attach_lead) first."
                )
            if kind not in ORCHESTRATION_REQUEST_TYPES:
                raise InvalidRequestError(f"Unsupported orchestration request type: {kind}")
            params = request.get("params")
            if not isinstance(params, dict):
                raise InvalidRequestError("params must be an object with the spawn_agent parameters.")
            from corral.orchestration.surfaces import parse_spawn

            outcome = await self.spawn(caller, parse_spawn(params))
        except OrchestrationError as exc:
            return OrchestrationResponse(request_id, kind, ok=False, error=str(exc))
        return OrchestrationResponse(request_id, kind, ok=True, details=outcome.details, content=outcome.text)

    def costs(self, lead_session_id: str) -> Any:
        """Per-agent and combined tokens and cost of the lead's session and every teams agent's session."""
        from ._costs import team_costs

        lead = self.host.owners.get(lead_session_id)
        lead_path = None if lead is None else lead.session.path
        agents: list[tuple[str, Path]] = []
        for member in self.host.store.team_members(lead_session_id, live_only=False):
            generation = self.host.store.get_generation(member.run_id)
            if generation is not None and generation.session_path:
                agents.append((member.name, Path(generation.session_path)))
        if lead_path is None:
            raise InvalidRequestError(f"Lead session {lead_session_id} is not attached or has no file yet.")
        return team_costs(lead_path, agents)
