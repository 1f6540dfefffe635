"""Teams reports, checkpoints on report, grouped delivery and costs (`TeamReports`, a service `Teams` composes).

* `submit_report` is `report_and_exit`: the first accepted report wins; it is
  stored in the same transaction that completes the generation, and the run
  ends after the tool batch (no further model request).
* `finish_without_report` covers a run that ended without an accepted report
  (after the single recovery prompt): its assistant text, or a failed report.
* `costs` is the per-agent and combined cost of a team. (The programmatic
  launch, the seed's event-bus request, is a surface:
  `surfaces/teams/_requests.py`.)
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from corral.orchestration.errors import InvalidRequestError, OrchestrationError
from corral.orchestration.kernel._delivery import deliver_message
from corral.orchestration.kernel._faults import fault_point
from corral.orchestration.teams import texts
from corral.orchestration.teams.checkpoints.records import (
    check_report_fields,
    checkpoint_id,
    parse_checkpoint_policy,
)
from corral.orchestration.teams.checks._checks import parse_check_policy
from corral.orchestration.teams.checks._fingerprint import SourceFingerprint
from corral.orchestration.teams.commands import ReportSubmission
from corral.orchestration.teams.notices import CheckpointNotSaved, RepairDue
from corral.orchestration.teams.repair import texts as repair_texts
from corral.orchestration.teams.repair._verification import VerificationDecision
from corral.orchestration.teams.repair.records import ReportVerification
from corral.orchestration.teams.results import ReportReceipt
from corral.orchestration.teams.roster.records import NewTeamReport, TeamReportOutcome, TeamReportRecord
from corral.orchestration.worktrees._extension import worktrees_of
from corral.orchestration.worktrees._repository import Worktrees as WorktreeRows

from ._reports import report_id, task_id, team_name, write_report_markdown
from .records import ReportClaims, ReportResult

if TYPE_CHECKING:
    from corral.orchestration.kernel.records import ResultRecord
    from corral.orchestration.teams._control import TeamControl
    from corral.orchestration.teams._costs import TeamCosts
    from corral.orchestration.teams._member import MemberRun
    from corral.orchestration.teams._plans import TeamContext
    from corral.orchestration.teams.checkpoints.records import CheckpointRecord
    from corral.orchestration.worktrees._worktrees import WorktreeReport

__all__ = ["TeamReports"]


class TeamReports:
    """Reports, their checkpoints and grouped delivery, and costs of the teams core (one per `Teams`).

    Args:
        context: What the teams services share.
        control: The control service (teardown of a finished parent's helpers, lead notices).
    """

    def __init__(self, context: TeamContext, control: TeamControl) -> None:
        self.host = context.host
        self.repos = context.repos
        self.pending = context.pending
        self.groups = context.groups
        self.checkpoints = context.checkpoints
        self.verifier = context.verifier
        self.live = context.live
        self.checkpoint_saves = context.checkpoint_saves
        self.capacity = context.capacity
        self.control = control

    # --- reports -------------------------------------------------------------------------------

    async def submit_report(
        self, child: MemberRun, submission: ReportSubmission, *, submission_id: str
    ) -> ReportReceipt:
        """`report_and_exit`: assigned checks first; the first accepted report wins and ends the work.

        With bounded repair, a failed verification that may still be repaired is *not* accepted:
        the receipt carries the repair request and the agent keeps working.
        """
        if child.report_accepted:
            return ReportReceipt("duplicate")
        claims = submission.claims()
        if child.member.checkpoint_policy is not None:
            check_report_fields(claims.to_json())
        # An isolated writer's work is committed first, so its checks' fingerprints see the commit
        # that will be merged (a later observation of the same tree is not stale).
        work = await self._commit_work(child, submission.summary or submission.content)
        decision = await self._verify(child, submission_id=submission_id, submission=submission)
        if decision is not None and not decision.accepted:
            return ReportReceipt("repair", decision=decision)
        record = self._store_report(
            child,
            status="completed",
            content=submission.content,
            summary=submission.summary,
            outcome=submission.outcome,
            claims=claims,
            source="report_and_exit",
            decision=decision,
            work=None if work is None else work.details(),
        )
        child.report_accepted = True
        child.close_messages()
        child.end_after_report()
        if child.delegating:
            self.host.spawn_background(self._close_helpers(child))
        return ReportReceipt("accepted", decision=decision, report=record)

    async def _verify(
        self, child: MemberRun, *, submission_id: str, submission: ReportSubmission
    ) -> VerificationDecision | None:
        """Run the run's assigned checks (and repair bookkeeping); `None` when it has none."""
        member = child.member
        if not member.assigned_checks:
            return None
        team = team_name(member.lead_session_id)
        repair = member.repair_policy or {}
        return await self.verifier.verify(
            lead_session_id=member.lead_session_id,
            task_id=task_id(team, member.name, child.run_id),
            report_id=report_id(team, member.name, child.run_id),
            run_id=child.run_id,
            cwd=Path(child.generation.cwd),
            checks=parse_check_policy(member.assigned_checks),
            max_attempts=int(repair.get("maxAttempts", 0)),
            submission_id=submission_id,
            submission=submission,
            executor=child.check_executor,
        )

    async def finish_without_report(self, child: MemberRun) -> bool:
        """A run ended without an accepted `report_and_exit`: verify and store its fallback report.

        Returns:
            `True` when a repair turn was queued instead (the run goes on).
        """
        fallback = child.fallback_report()
        status, source = fallback.status, fallback.source
        content = texts.fallback_content(fallback)
        notes = self.host.extensions.result_notes(
            child.run_id
        )  # e.g. budget_exhausted: the final turn's report
        if notes and status == "completed":
            content = "\n\n".join([content, *notes])
        work = await self._commit_work(child, content)
        decision = None
        if status == "completed":
            child.plain_submissions += 1
            decision = await self._verify(
                child,
                submission_id=f"plain-text:{child.plain_submissions}",
                submission=ReportSubmission(content),
            )
            if decision is not None and not decision.accepted:
                child.queue_prompt(repair_texts.repair_prompt(RepairDue(decision)))
                return True
        if child.delegating:
            await self._close_helpers(child)
        with contextlib.suppress(OrchestrationError):
            self._store_report(
                child,
                status=status,
                content=content,
                summary=None,
                outcome=None if status == "completed" else "failed",
                claims=ReportClaims(),
                source=source,
                decision=decision,
                work={
                    **({} if work is None else work.details()),
                    **(await self.host.extensions.result_details(child.run_id) or {}),
                },
            )
        return False

    async def _commit_work(self, child: MemberRun, summary: str) -> WorktreeReport | None:
        """Commit an isolated writer's work on its branch before its report is stored (`None` when
        the run shares the tree); its `details()` are the report's `branch`, `base`, `diffStat`, `merge`."""
        rows = WorktreeRows(self.host.kernel.db)
        if not rows.has_worktrees() or rows.worktree_for_run(child.run_id) is None:
            return None
        trees = worktrees_of(self.host.extensions, self.host.kernel.db)
        try:
            report = await asyncio.to_thread(trees.finish, child.run_id, summary)
        except OrchestrationError as exc:
            self.host.warn(f"the work of {child.member.name} could not be committed on its branch ({exc})")
            return None
        return report

    def _store_report(
        self,
        child: MemberRun,
        *,
        status: str,
        content: str,
        summary: str | None,
        outcome: TeamReportOutcome | None,
        claims: ReportClaims,
        source: str,
        decision: VerificationDecision | None = None,
        work: Mapping[str, object] | None = None,
    ) -> TeamReportRecord:
        """Store the run's report; `work` holds what host extensions add to its result (an isolated
        writer's `branch`, `base`, `diffStat`, `merge`; a `budget`): open JSON each extension shapes."""
        repos = self.repos
        member = child.member
        team = team_name(member.lead_session_id)
        verification = ReportVerification()
        if decision is not None:
            verification = decision.verification
        elif member.assigned_checks:
            # Checks were assigned but never ran: the run ended without a report to verify.
            verification = ReportVerification("failed", error="The run ended without a report; no check ran.")
        result = ReportResult(
            task_id(team, member.name, child.run_id),
            child.run_id,
            report_id(team, member.name, child.run_id),
            outcome=outcome,
            claims=claims,
            verification=verification,
            checkpoint_id=(
                None if member.checkpoint_policy is None else checkpoint_id(team, member.name, child.run_id)
            ),
            repair=None if decision is None else decision.repair,
            extensions=dict(work or {}),
        )
        markdown: Path | None = None
        with contextlib.suppress(OSError):
            markdown = write_report_markdown(
                self.host.kernel.db.path.parent / "reports" / team, member.name, content
            )
        tokens, cost = child.usage()
        elapsed = int((asyncio.get_running_loop().time() - child.started_monotonic) * 1000)
        record = repos.reports.store_team_report(
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
                tokens=tokens,
                cost_usd=cost,
            ),
        )
        fault_point("after_result_row")
        # The host delivers it; a checkpointed report's checkpoint is saved first (`ensure_checkpoint`).
        self.host.result_stored(child.run_id, child.task.request_id)
        return record

    async def ensure_checkpoint(self, record: TeamReportRecord) -> None:
        """Save the report's checkpoint unless it is saved already; one save per run at a time.

        The host calls it before it delivers any teams report (stored in-process, by a tmux
        worker, or before a restart), so the lead never gets a `checkpointId` it cannot continue
        from yet. A run still live here lends its admission-time source and parent checkpoint.
        """
        checkpoint = record.result.checkpoint_id
        if checkpoint is None or self.repos.checkpoints.get_checkpoint(checkpoint) is not None:
            return
        saving = self.checkpoint_saves.get(record.run_id)
        if saving is None:
            live = self.live.get(record.run_id)
            saving = asyncio.ensure_future(
                self.save_checkpoint(
                    record,
                    source_before=None if live is None else live.source_before,
                    parent=None if live is None else live.parent_checkpoint,
                )
            )
            self.checkpoint_saves[record.run_id] = saving
            saving.add_done_callback(lambda _done: self.checkpoint_saves.pop(record.run_id, None))
        await asyncio.shield(saving)

    async def save_checkpoint(
        self,
        record: TeamReportRecord,
        *,
        source_before: SourceFingerprint | None = None,
        parent: CheckpointRecord | None = None,
    ) -> None:
        """Save the checkpoint of a checkpointed run's stored report (also after a restart).

        The admission-time source observation comes from memory or, after a restart, from the
        member row; a failure is told to the lead, never raised (the report itself is delivered).
        """
        member = self.repos.roster.team_member(record.run_id)
        try:
            if member is None or member.checkpoint_policy is None:
                raise InvalidRequestError("the run has no checkpoint policy")
            if source_before is None and member.checkpoint_source is not None:
                source_before = SourceFingerprint.from_json(member.checkpoint_source)
            if source_before is None:
                raise InvalidRequestError("the source observed at admission is not available")
            if parent is None and member.continue_from is not None:
                with contextlib.suppress(OrchestrationError):
                    parent = self.checkpoints.load(member.continue_from)
            generation = self.host.kernel.get_generation(record.run_id)
            await self.checkpoints.record(
                team=team_name(member.lead_session_id),
                agent=member.name,
                run_id=record.run_id,
                model_slot=member.tier,
                cwd=Path(generation.cwd if generation is not None else "."),
                prompt=member.prompt,
                policy=parse_checkpoint_policy(member.checkpoint_policy),
                parent=parent,
                report=record,
                source_before=source_before,
            )
        except Exception as exc:
            lead = record.lead_session_id
            fact = CheckpointNotSaved(record.result.checkpoint_id, record.name, str(exc))
            self.control.notify_lead(lead, texts.checkpoint_not_saved(fact))

    async def _close_helpers(self, parent: MemberRun) -> None:
        """A nested parent reported: drop its queued helpers and stop its running ones."""
        lead = parent.member.lead_session_id
        for (lead_id, name), (_reservation, prepared) in list(self.pending.items()):
            if lead_id == lead and prepared.parent is parent:
                self.capacity(lead).cancel_queued(name, reason=f"its parent {parent.label} finished")
        for helper in self.repos.roster.team_members(lead, parent_run_id=parent.run_id):
            await self.control.teardown(helper, reason=f"parent {parent.label} finished")

    # --- completion groups ---------------------------------------------------------------------

    async def deliver_grouped(
        self, report: TeamReportRecord, result: ResultRecord, *, finalize: bool = False
    ) -> None:
        """A grouped member's stored report: hand it to its group journal, then deliver what is due.

        Once the journal holds the report (durably), the core result counts as delivered (entry
        `group:<slot>`), so the run finalizes and frees its slot; the group owns the lead delivery.
        `finalize` (the run has ended): the generation is finalized with that mark, in one commit.
        """
        member = self.repos.roster.team_member(report.run_id)
        if member is None or member.slot_id is None:  # pragma: no cover - callers check
            return
        self.groups.reported(member.slot_id, report)
        self.host.kernel.mark_delivered(
            result.request_id,
            owner_session_id=result.owner_session_id,
            entry_id=f"group:{member.slot_id}",
            finalize=finalize,
        )
        await self.deliver_group_wakes(member.lead_session_id)

    async def deliver_group_wakes(self, lead_session_id: str) -> None:
        """Send every planned group index to the lead once; a reserved wake is never sent again."""
        lead = self.host.runs.owner(lead_session_id)
        if lead is None:
            return
        for delivery in self.groups.reserve_wakes(lead_session_id):
            try:
                entry_id = await deliver_message(
                    lead, self.groups.message(delivery), key="delivery_id", value=delivery.delivery_id
                )
            except Exception as exc:
                self.groups.wake_failed(delivery.delivery_id, f"{type(exc).__name__}: {exc}")
                raise
            fault_point("after_owner_append")
            self.groups.observed(delivery.delivery_id, entry_id)
        self.host.changed()

    def recover_groups(self, lead_session_id: str) -> list[str]:
        """After a restart: confirm wakes found in the lead's session; warn about unconfirmed ones."""
        lead = self.host.runs.owner(lead_session_id)
        if lead is None:
            return []
        delivered = self.groups.find_wakes(lead_session_id, lead.session.entries)
        return self.groups.recover(lead_session_id, delivered=delivered)

    def costs(self, lead_session_id: str) -> TeamCosts:
        """Per-agent and combined tokens and cost of the lead's session and every teams agent's session."""
        from corral.orchestration.teams._costs import team_costs

        lead = self.host.runs.owner(lead_session_id)
        lead_path = None if lead is None else lead.session.path
        agents: list[tuple[str, Path]] = []
        for member in self.repos.roster.team_members(lead_session_id, live_only=False):
            generation = self.host.kernel.get_generation(member.run_id)
            if generation is not None and generation.session_path:
                agents.append((member.name, Path(generation.session_path)))
        if lead_path is None:
            raise InvalidRequestError(f"Lead session {lead_session_id} is not attached or has no file yet.")
        return team_costs(lead_path, agents)
