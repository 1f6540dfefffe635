"""Teams status, control, messaging and file claims (`TeamControl`, a service `Teams` composes).

* **Teardown** (`teardown`, behind `stop_teammate` and same-name replacement):
  close the agent's message admission, stop its run within 2.5 s, then
  finalize exactly that run (which releases its claims and frees its name).
  A run that does not settle in time is *quarantined*: its name stays fenced
  (in the store and in the capacity controller) and a deferred finalizer
  completes the cleanup when the run finally ends — bound to that run id, so
  it never touches a newer run of the same name.
* **Messaging**: a live recipient gets the message as steering (`delivery:
  active-session`); `team-lead` messages are stored and brought to the lead
  once as hidden `corral-team-message` entries that wake it.
* **Status** is one read-only snapshot; it never cleans up.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, Literal, cast

from corral.llm import CustomMessage
from corral.orchestration.errors import InvalidRequestError, OrchestrationError, TargetNotFoundError
from corral.orchestration.kernel._caller import Caller
from corral.orchestration.kernel._delivery import deliver_message
from corral.orchestration.ratelimits import stored_waits
from corral.orchestration.teams.roster._repository import TEAM_LEAD, normalize_claim_path
from corral.orchestration.teams.roster.records import TEAM_MESSAGE_TYPE
from corral.orchestration.worktrees._repository import Worktrees as WorktreeRows

from . import texts
from ._status import TeamAgentRow, TeamSnapshot, member_status
from .notices import MessageArrived
from .repair.records import ObservedVerification, ReportVerification, effective_outcome
from .reports._reports import report_id, team_name
from .results import (
    AgentSnapshot,
    ClaimResult,
    ClaimsList,
    CompletedSnapshot,
    FailedSnapshot,
    InboxResult,
    InterruptResult,
    MemberSnapshot,
    MessageSent,
    QueuedSnapshot,
    ReleaseResult,
    ReportFacts,
    StatusSnapshot,
    StopResult,
    TeammateHealth,
    Teardown,
)

if TYPE_CHECKING:
    from corral.orchestration.kernel.records import GenerationRecord
    from corral.orchestration.teams._repositories import TeamsRepositories
    from corral.orchestration.teams.commands import ReadInboxRequest, SendMessageRequest
    from corral.orchestration.teams.roster.records import (
        TeamMemberRecord,
        TeamMessageRecord,
        TeamReportRecord,
    )

    from ._member import MemberRun, TeamChild
    from ._plans import TeamContext, _Prepared

__all__ = ["TEAM_MESSAGE_TYPE", "TEARDOWN_TIMEOUT_S", "TeamControl"]

TEARDOWN_TIMEOUT_S = 2.5
RECENT_COMPLETIONS = 20


class TeamControl:
    """Status, control, messages and claims of the teams core (one per `Teams`).

    Args:
        context: What the teams services share.
        deliver_group_wakes: Delivers a lead's owed completion-group wakes (`TeamReports`).
    """

    def __init__(
        self,
        context: TeamContext,
        *,
        deliver_group_wakes: Callable[[str], Coroutine[Any, Any, None]],
    ) -> None:
        self.host = context.host
        self.repos = context.repos
        self.live = context.live
        self.pending = context.pending
        self.lead_sessions = context.lead_sessions
        self.groups = context.groups
        self.verifier = context.verifier
        self.capacity = context.capacity
        self.deliver_group_wakes = deliver_group_wakes
        self.remote_interrupt: Callable[[str], Coroutine[Any, Any, str]] | None = None
        """Interrupts a member on a Ray worker by run id (`RemoteMembers.interrupt`, set by `Teams`)."""

    # --- helpers ---------------------------------------------------------------------------------

    def _lead_id(self, caller: Caller) -> str:
        if caller.scope != "lead" or not self.host.runs.is_lead(caller.session_id):
            raise InvalidRequestError("Only the lead session can use this tool.")
        return caller.session_id

    def child(self, run_id: str) -> TeamChild | None:
        """The live in-process run of `run_id`, if any (a run moved to a tmux pane has none)."""
        live = self.live.get(run_id)
        return None if live is None or live.run.child.handing_off else live.run

    def notify_lead(self, lead_session_id: str, text: str) -> None:
        """Send the lead a message from corral itself (stored, then delivered once)."""
        with contextlib.suppress(OrchestrationError):
            self.repos.roster.add_team_message(
                lead_session_id,
                recipient=TEAM_LEAD,
                sender="corral",
                sender_run_id=None,
                content=text,
                summary="Notice",
                delivery="inbox",
            )
            self.host.spawn_background(self.deliver_lead_messages(lead_session_id))

    def notify_requester(self, prepared: _Prepared, text: str) -> None:
        """Tell whoever asked for a spawn that it failed (the writer for a helper, else the lead)."""
        parent = prepared.parent
        if parent is not None and parent.inject(texts.parent_notice(text)):
            return
        self.notify_lead(prepared.lead_session_id, text)

    async def deliver_lead_messages(self, lead_session_id: str) -> None:
        """Bring every undelivered `team-lead` message into the lead's session, once each."""
        lead = self.host.runs.owner(lead_session_id)
        if lead is None:
            return
        for message in self.repos.roster.undelivered_lead_messages(lead_session_id):
            entry_id = await deliver_message(
                lead, _lead_message(message), key="message_id", value=message.message_id
            )
            self.repos.roster.mark_lead_message_delivered(message.message_id, entry_id=entry_id)
        self.host.changed()

    # --- messaging -------------------------------------------------------------------------------

    async def send_message(
        self, sender: Caller | MemberRun, request: SendMessageRequest, *, message_id: str | None = None
    ) -> MessageSent:
        """`send_message`: steer a live recipient, or store the message for the lead.

        `message_id` makes it idempotent (a Ray member's call, applied again by a host that
        restarted): a message of that id already stored is answered as sent, nothing is repeated.
        """
        repos = self.repos
        if message_id is not None and (stored := repos.roster.team_message(message_id)) is not None:
            return MessageSent(stored.recipient, team_name(stored.lead_session_id), stored.delivery)
        if isinstance(sender, Caller):
            lead = self._lead_id(sender)
            sender_name, sender_run = TEAM_LEAD, None
            if request.recipient is None:
                raise InvalidRequestError("recipient is required when the lead sends a message.")
            recipient = request.recipient
        else:
            lead = sender.member.lead_session_id
            sender_name, sender_run = sender.label, sender.run_id
            recipient = request.recipient or TEAM_LEAD
        team = team_name(lead)
        if recipient == TEAM_LEAD:
            if sender_name == TEAM_LEAD:
                raise InvalidRequestError("The lead cannot message itself; name an agent as recipient.")
            repos.roster.add_team_message(
                lead,
                recipient=TEAM_LEAD,
                sender=sender_name,
                sender_run_id=sender_run,
                content=request.content,
                summary=request.summary,
                delivery="inbox",
                message_id=message_id,
            )
            self.host.spawn_background(self.deliver_lead_messages(lead))
            return MessageSent(TEAM_LEAD, team, "inbox")
        member = repos.roster.live_team_member(lead, recipient)
        if member is None or member.fence != "none":
            raise TargetNotFoundError(f"Cannot send message to {recipient}: agent is not running.")
        child = self.child(member.run_id)
        direct = child is not None and child.messages_open and not child.ended
        text = texts.member_message(MessageArrived(sender_name, request.summary, request.content))
        repos.roster.add_team_message(
            lead,
            recipient=recipient,
            sender=sender_name,
            sender_run_id=sender_run,
            content=request.content,
            summary=request.summary,
            delivery="active-session" if direct else "inbox",
            expected_run_id=member.run_id,
            message_id=message_id,
        )
        if direct and child is not None and not child.inject(text):
            direct = False
        return MessageSent(recipient, team, "active-session" if direct else "inbox")

    async def read_inbox(self, reader: Caller | MemberRun, request: ReadInboxRequest) -> InboxResult:
        """`read_inbox`: the reader's messages (the lead may name an agent's inbox)."""
        if isinstance(reader, Caller):
            lead = self._lead_id(reader)
            target = request.agent_name or TEAM_LEAD
        else:
            lead = reader.member.lead_session_id
            target = reader.label
        messages = self.repos.roster.read_team_inbox(
            lead, target, unread_only=request.unread_only, mark_as_read=request.mark_as_read
        )
        return InboxResult(
            target, request.unread_only, tuple(messages), team_name(lead), request.mark_as_read
        )

    # --- teardown / stop / interrupt ------------------------------------------------------------

    async def teardown(self, member: TeamMemberRecord, *, reason: str) -> Teardown:
        """Stop one run within 2.5 s and finalize exactly it; quarantine what does not settle."""
        host = self.host
        repos = self.repos
        run_id = member.run_id
        live = self.live.get(run_id)
        if live is not None:
            live.run.close_messages()
        if member.assigned_checks:
            # Kill running checks and make further repair attempts impossible (durably).
            self.verifier.cancel(report_id(team_name(member.lead_session_id), member.name, run_id))
        for helper in repos.roster.team_members(member.lead_session_id, parent_run_id=run_id):
            await self.teardown(helper, reason=f"parent {member.name} stopped")
        handle = host.runs.runtime_handle(run_id)
        settled = True
        if handle is not None:
            stopping = asyncio.ensure_future(host.runtime.stop(handle))
            done, _ = await asyncio.wait({stopping}, timeout=TEARDOWN_TIMEOUT_S)
            if not done:
                settled = False
                repos.roster.set_team_fence(run_id, fence="quarantined", reason="teardown timed out")
                self.capacity(member.lead_session_id).quarantine(member.name)
                host.spawn_background(self._deferred_finalize(member, stopping))
        problem = self.verifier.unresolved(run_id) if settled and member.assigned_checks else None
        if problem is not None:
            repos.roster.set_team_fence(run_id, fence="quarantined", reason=problem[:200])
            self.capacity(member.lead_session_id).quarantine(member.name)
            return Teardown("cleanup_failed", reason, error=problem, quarantined=True)
        if not settled:
            return Teardown(
                "timed_out",
                reason,
                error="the run did not settle within 2.5 s; its name stays fenced until it does",
                quarantined=True,
            )
        return self._finalize_run(member, reason)

    def run_lost(self, child: MemberRun, reason: str) -> None:
        """A run ended without a report (it raised): its completion-group slot is interrupted."""
        self._settle_slot(child.member, "interrupted", reason)

    def _settle_slot(
        self, member: TeamMemberRecord, status: Literal["cancelled", "interrupted"], reason: str
    ) -> None:
        if member.slot_id is None or self.repos.reports.team_report_for_run(member.run_id) is not None:
            return
        with contextlib.suppress(OrchestrationError):
            self.groups.settled(member.slot_id, status, reason, run_id=member.run_id)
            self.host.spawn_background(self.deliver_group_wakes(member.lead_session_id))

    def _finalize_run(self, member: TeamMemberRecord, reason: str) -> Teardown:
        repos = self.repos
        generation = repos.kernel.get_generation(member.run_id)
        released: tuple[str, ...] = ()
        self._settle_slot(member, "cancelled", reason)
        try:
            if generation is not None and generation.phase != "finalized":
                released = tuple(
                    c.path
                    for c in repos.roster.file_claims(member.lead_session_id)
                    if c.run_id == member.run_id
                )
                repos.kernel.finalize_generation(member.run_id, owner_session_id=generation.owner_session_id)
        except OrchestrationError as exc:
            return Teardown("cleanup_failed", reason, error=str(exc))
        self.host.release(member.run_id)
        if member.fence != "none" or self.capacity(member.lead_session_id).is_quarantined(member.name):
            # A quarantined run settled after all (e.g. its abandoned check was resolved by hand).
            with contextlib.suppress(OrchestrationError):
                self.repos.roster.set_team_fence(member.run_id, fence="none", reason=None)
            self.capacity(member.lead_session_id).clear_quarantine(member.name)
        self.host.changed()
        return Teardown("settled", reason, released_claims=released)

    async def _deferred_finalize(self, member: TeamMemberRecord, stopping: asyncio.Future[None]) -> None:
        with contextlib.suppress(BaseException):
            await stopping
        self._finalize_run(member, "deferred cleanup after quarantine")  # lifts the fence once finalized

    def _require_known(self, lead: str, name: str) -> None:
        """Refuse a name this lead never spawned (no queued request, member or report by that name).

        Raises:
            TargetNotFoundError: naming the lead's agents, so the model can correct the call.
        """
        repos = self.repos
        if (lead, name) in self.pending:
            return
        members = repos.roster.team_members(lead, live_only=False)
        if any(member.name == name for member in members) or repos.reports.team_reports(
            lead, name=name, limit=1
        ):
            return
        known = sorted({member.name for member in members if member.depth == 0})
        hint = f" This session's agents: {', '.join(known)}." if known else " This session has no agents yet."
        raise TargetNotFoundError(f"No agent named {name} in this session.{hint}")

    async def stop_teammate(self, caller: Caller, name: str, reason: str | None) -> StopResult:
        """`stop_teammate`: cancel a queued request, or stop the whole agent.

        Raises:
            TargetNotFoundError: the lead never had an agent called `name`.
        """
        lead = self._lead_id(caller)
        team = team_name(lead)
        self._require_known(lead, name)
        if (lead, name) in self.pending:
            self.capacity(lead).cancel_queued(name, reason=reason or "stopped by the lead")
            self.pending.pop((lead, name), None)
            self.host.changed()
            return StopResult(name, "cancelled-queued", team)
        member = self.repos.roster.live_team_member(lead, name)
        if member is None or member.depth != 0:
            return StopResult(name, "not-active", team)
        generation = self.host.kernel.get_generation(member.run_id)
        if generation is not None and generation.phase in ("completed", "result_error"):
            return StopResult(name, "reported", team)
        outcome = await self.teardown(member, reason=reason or "stopped by the lead")
        if outcome.stopped:
            return StopResult(name, "stopped", team, reason=reason, teardown=outcome)
        state: Literal["quarantined", "cleanup-blocked"] = (
            "quarantined" if outcome.quarantined else "cleanup-blocked"
        )
        return StopResult(name, state, team, teardown=outcome)

    async def interrupt_teammate(self, caller: Caller, name: str) -> InterruptResult:
        """`interrupt_teammate`: cancel the running tool or model call; the agent stays.

        Raises:
            TargetNotFoundError: the lead never had an agent called `name`.
        """
        lead = self._lead_id(caller)
        team = team_name(lead)
        self._require_known(lead, name)
        member = self.repos.roster.live_team_member(lead, name)
        child = None if member is None else self.child(member.run_id)
        generation = None if member is None else self.host.kernel.get_generation(member.run_id)
        if member is not None and child is None and _runs_in_pane(generation):
            return InterruptResult(name, "tmux", team)
        if (
            member is not None
            and generation is not None
            and generation.runtime_kind == "ray"
            and generation.phase == "active"
            and self.remote_interrupt is not None
        ):  # on a Ray worker: interrupted there, as in-process
            ray_status = await self.remote_interrupt(member.run_id)
            return InterruptResult(
                name,
                cast('Literal["interrupted", "pending", "no_command"]', ray_status),
                team,
                agent_kind=member.kind,
                run_id=member.run_id,
            )
        if member is None or child is None:
            return InterruptResult(name, "not_found", team)
        if not child.messages_open:
            return InterruptResult(name, "closing", team, agent_kind=member.kind, run_id=member.run_id)
        status = cast('Literal["interrupted", "pending", "no_command"]', await child.interrupt())
        return InterruptResult(name, status, team, agent_kind=member.kind, run_id=member.run_id)

    # --- status -----------------------------------------------------------------------------------

    async def status(self, scope: Caller | TeamChild, agent_name: str | None) -> StatusSnapshot:
        """`get_agent_status`: one read-only snapshot of the scope's agents."""
        repos = self.repos
        now = int(time.time() * 1000)
        if isinstance(scope, Caller):
            lead = self._lead_id(scope)
            members = [m for m in repos.roster.team_members(lead) if m.depth == 0]
            queued = [
                (n, p) for (lid, n), (_r, p) in self.pending.items() if lid == lead and p.parent is None
            ]
            reports = [r for r in repos.reports.team_reports(lead) if not _is_helper_report(repos, r)]
        else:
            lead = scope.member.lead_session_id
            members = list(repos.roster.team_members(lead, parent_run_id=scope.run_id))
            queued = [
                (n, p) for (lid, n), (_r, p) in self.pending.items() if lid == lead and p.parent is scope
            ]
            reports = [
                r
                for r in repos.reports.team_reports(lead)
                if (m := repos.roster.team_member(r.run_id)) is not None and m.parent_run_id == scope.run_id
            ]
        snapshots: list[AgentSnapshot] = []
        active_names = set()
        for member in members:
            active_names.add(member.name)
            snapshots.append(await self._member_snapshot(member, now))
        capacity = self.capacity(lead)
        for name, prepared in queued:
            active_names.add(name)
            snapshots.append(
                QueuedSnapshot(
                    name,
                    prepared.tier.role,
                    prepared.tier.name,
                    capacity.queue_position(name),
                    int((time.time() - prepared.queued_at) * 1000),
                )
            )
        for failure in capacity.failures():
            if failure.name not in active_names:
                snapshots.append(
                    FailedSnapshot(
                        failure.name,
                        "read" if failure.kind in ("read", "helper") else "write",
                        failure.error,
                        int((time.time() - failure.failed_at) * 1000),
                    )
                )
        recent: dict[str, TeamReportRecord] = {}
        for report in reports:
            if report.name not in active_names:
                recent[report.name] = report
        for report in sorted(recent.values(), key=lambda r: r.created_at)[-RECENT_COMPLETIONS:]:
            snapshots.append(
                CompletedSnapshot(
                    report.name,
                    report.kind,
                    report.tier,
                    "completed" if report.status == "completed" else "failed",
                    report.run_id,
                    now - report.created_at,
                    _report_facts(report, await self._observed(report)),
                    fields=self.host.extensions.status_fields(report.run_id),  # e.g. its budget
                )
            )
        if agent_name is not None:
            snapshots = [s for s in snapshots if s.name == agent_name]
            if not snapshots:
                raise TargetNotFoundError(f"Agent {agent_name} has no current status in this scope.")
        return StatusSnapshot(team_name(lead), tuple(snapshots))

    async def _observed(self, report: TeamReportRecord) -> ObservedVerification:
        """The report's verification and repair observed now (stale checks show)."""
        verification, repair = report.result.verification, report.result.repair
        if verification.state == "not-requested" and repair is None:
            return ObservedVerification(verification, None)
        try:
            return await self.verifier.observe(
                report_id=report.report_id,
                run_id=report.run_id,
                task_id=report.task_id,
                verification=verification,
                repair=repair,
            )
        except OrchestrationError as exc:
            return ObservedVerification(ReportVerification("failed", error=str(exc)), repair)

    async def _member_snapshot(self, member: TeamMemberRecord, now: int) -> MemberSnapshot:
        repos = self.repos
        generation = repos.kernel.get_generation(member.run_id)
        status = member_status(member, generation, self.child(member.run_id), now_ms=now)
        live = status.in_process and status.phase not in ("quarantined", "stopping")
        rate_limit = status.rate_limit if live else None
        awaiting_message = False
        if (
            not live and generation is not None and generation.phase == "active"
        ):  # its run is in another process
            stored = stored_waits(self.host.kernel.db, [member.run_id]).get(member.run_id)
            if stored is not None:
                rate_limit = stored.describe(now)
            awaiting_message = status.interrupted
        report = repos.reports.team_report_for_run(member.run_id)
        return MemberSnapshot(
            member.name,
            member.kind,
            member.tier,
            member.model,
            member.run_id,
            status.phase,
            in_pane=not status.in_process and status.phase == "working",  # a tmux pane or a Ray worker
            pane_id=status.pane_id,
            error=status.lost_reason,
            live=live,
            activity_age_ms=status.activity_age_ms if live else None,
            active_tool=status.active_tool if live else None,
            rate_limit=rate_limit,
            awaiting_message=awaiting_message,
            report=None if report is None else _report_facts(report, await self._observed(report)),
            fields=self.host.extensions.status_fields(member.run_id),  # e.g. its budget (spent / limit)
        )

    # --- the rows a front end shows ---------------------------------------------------------------

    def snapshot(self, lead_session_id: str) -> TeamSnapshot:
        """The lead's members and their live generations, read from the store (two queries)."""
        repos = self.repos
        members = repos.roster.team_members(lead_session_id)
        generations = {g.run_id: g for g in repos.kernel.generations(owner_session_id=lead_session_id)}
        return TeamSnapshot(lead_session_id, members, generations)

    def agent_rows(self, snapshot: TeamSnapshot, *, now_ms: int) -> list[TeamAgentRow]:
        """The lead's own agents, oldest first, then its queued spawns (from memory and `snapshot`).

        A member's phase follows `member_status` (as `get_agent_status` reports it); nested read
        helpers are not rows, each writer counts its running ones.
        """
        helpers: dict[str, int] = {}
        for member in snapshot.members:
            live = self.live.get(member.run_id)
            parent = member.parent_run_id
            if member.depth == 1 and parent is not None and live is not None and not live.run.ended:
                helpers[parent] = helpers.get(parent, 0) + 1
        rows: list[TeamAgentRow] = []
        for member in snapshot.members:
            if member.depth != 0:
                continue
            generation = snapshot.generations.get(member.run_id)
            live = self.live.get(member.run_id)
            child = None if live is None else live.run  # a run being handed off still shows its phase
            rows.append(
                TeamAgentRow(
                    member.name,
                    member.tier,
                    member.kind,
                    member.model,
                    member.thinking,
                    since_ms=member.created_at,
                    status=member_status(member, generation, child, now_ms=now_ms),
                    generation=generation,
                    fence_reason=member.fence_reason,
                    run_id=member.run_id,
                    context=None if child is None else child.agent.context_usage(),
                    helpers=helpers.get(member.run_id, 0),
                )
            )
        lead = snapshot.lead_session_id
        for (lead_id, name), (_reservation, prepared) in list(self.pending.items()):
            if lead_id != lead or prepared.parent is not None:
                continue
            rows.append(
                TeamAgentRow(
                    name,
                    prepared.tier.name,
                    prepared.tier.role,
                    prepared.model_ref,
                    prepared.thinking,
                    since_ms=int(prepared.queued_at * 1000),
                    status=None,
                    queue_position=self.capacity(lead).queue_position(name),
                )
            )
        return rows

    # --- check_teammate ---------------------------------------------------------------------------

    async def check_teammate(self, caller: Caller, name: str) -> TeammateHealth:
        """`check_teammate`: health of a live agent, or the persisted report after it left."""
        repos = self.repos
        lead = self._lead_id(caller)
        member = repos.roster.live_team_member(lead, name)
        if member is None:
            reports = repos.reports.team_reports(lead, name=name, limit=1)
            if not reports:
                raise TargetNotFoundError(f"Agent {name} not found and no persisted report is available.")
            report = reports[-1]
            observed = await self._observed(report)
            return TeammateHealth(
                name,
                "left",
                report=report,
                facts=_report_facts(report, observed),
                checks=tuple(self.verifier.records(observed.verification.check_ids)),
            )
        child = self.child(member.run_id)
        generation = repos.kernel.get_generation(member.run_id)
        unread = len(repos.roster.read_team_inbox(lead, name, unread_only=True, mark_as_read=False))
        alive = (
            (child is not None and not child.ended)
            or _runs_in_pane(generation)
            or (generation is not None and generation.runs_on_ray)
        )
        health: Literal["healthy", "starting", "stopping", "dead", "quarantined"]
        if member.fence == "quarantined":
            health = "quarantined"
        elif child is None and alive:
            health = "healthy"  # runs in a tmux pane or on a Ray worker
        elif not alive:
            health = "dead"
        elif child is not None and not child.messages_open:
            health = "stopping"
        elif child is not None and child.ready:
            health = "healthy"
        else:
            health = "starting"
        return TeammateHealth(
            name,
            health,
            alive=alive,
            unread=unread,
            loop_ready=child is not None and child.ready,
            run_id=member.run_id,
            phase=None if generation is None else generation.phase,
            error=generation.diagnostic if generation is not None and generation.diagnostic else None,
        )

    # --- claims -----------------------------------------------------------------------------------

    def claim_files(self, child: MemberRun, paths: tuple[str, ...]) -> ClaimResult:
        """`claim_file`: all-or-nothing claims for an edit agent."""
        self._require_writer(child)
        normalized = [normalize_claim_path(p) for p in paths]
        outcome = self.repos.roster.claim_files(
            child.member.lead_session_id, run_id=child.run_id, agent=child.label, paths=normalized
        )
        return ClaimResult(
            tuple(c.path for c in outcome.granted),
            tuple((p, holder) for p, holder in outcome.conflicts),
            child.label,
            team_name(child.member.lead_session_id),
        )

    def release_files(self, child: MemberRun, paths: tuple[str, ...]) -> ReleaseResult:
        """`release_file`: release the caller's own claims."""
        self._require_writer(child)
        normalized = [normalize_claim_path(p) for p in paths]
        released = self.repos.roster.release_files(
            child.member.lead_session_id, run_id=child.run_id, paths=normalized
        )
        return ReleaseResult(tuple(released))

    def list_file_claims(self, scope: Caller | MemberRun) -> ClaimsList:
        """`list_file_claims`: every claim of the team."""
        lead = self._lead_id(scope) if isinstance(scope, Caller) else scope.member.lead_session_id
        claims = self.repos.roster.file_claims(lead)
        return ClaimsList(tuple(claims))

    def _require_writer(self, child: MemberRun) -> None:
        generation = self.host.kernel.get_generation(child.run_id)
        if child.member.kind != "write" or generation is None or generation.phase != "active":
            raise InvalidRequestError("Only an active edit agent can claim or release files.")

    # --- acceptance -------------------------------------------------------------------------------

    def record_report_acceptance(
        self, report_id: str, state: str, reason: str | None = None
    ) -> TeamReportRecord:
        """Record the lead's (or a trusted integration's) decision on a stored report.

        With `merge = "on-accept"`, accepting an isolated writer's report merges its branch into
        the lead's working tree (the outcome is recorded with the worktree and told as a warning
        when it did not merge: conflicts or uncommitted changes in the way).
        """
        record = self.repos.reports.record_report_acceptance(report_id, state, reason)
        if (
            state == "accepted"
            and self.host.settings.merge == "on-accept"
            and WorktreeRows(self.host.kernel.db).has_worktrees()
        ):
            worktree = WorktreeRows(self.host.kernel.db).worktree_for_run(record.run_id)
            if worktree is not None and worktree.state == "pending":
                from corral.orchestration.worktrees._extension import worktrees_of

                try:
                    outcome = worktrees_of(self.host.extensions, self.host.kernel.db).merge(worktree.branch)
                except OrchestrationError as exc:
                    self.host.warn(
                        f"accepted {record.name}'s report, but {worktree.branch} was not merged: {exc}"
                    )
                else:
                    if not outcome.ok:
                        self.host.warn(f"accepted {record.name}'s report, but: {outcome.message}")
        return record


def _lead_message(message: TeamMessageRecord) -> CustomMessage:
    text = texts.lead_message(MessageArrived(message.sender, message.summary, message.content))
    return CustomMessage(
        custom_type=TEAM_MESSAGE_TYPE,
        content=text,
        display=False,
        details={"message_id": message.message_id, "from": message.sender, "summary": message.summary},
    )


def _is_helper_report(repos: TeamsRepositories, report: TeamReportRecord) -> bool:
    member = repos.roster.team_member(report.run_id)
    return member is not None and member.depth != 0


def _report_facts(report: TeamReportRecord, observed: ObservedVerification) -> ReportFacts:
    return ReportFacts(
        report.task_id,
        report.report_id,
        report.outcome,
        effective_outcome(report.outcome, observed.repair),
        observed.verification,
        report.acceptance,
        report.acceptance_reason,
        report.summary,
        report.status,
        repair=observed.repair,
    )


def _runs_in_pane(generation: GenerationRecord | None) -> bool:
    return generation is not None and generation.runs_in_pane
