"""The teams core: one `Teams` per host, the composition of the teams services over one context.

`Teams` belongs to a `Host` (made by `TeamsExtension`, the host's teams hook). A teams agent is an
ordinary generation of the store (see `docs/development.md`); the teams contract around it is
sliced into services over one `TeamContext` (`_plans.py`), each in the module or folder of its
feature:

* `spawning` (`Spawner`, `spawning/`): spawn, swarm, admission and the queue, placement on Ray, launch;
* `control` (`TeamControl`, `_control.py`): stop and interrupt, quarantine, status, claims;
* `messages` (`TeamMessages`, `messages/`): `send_message`, `read_inbox`, notices to the lead;
* `reports` (`TeamReports`, `reports/`): reports, their checkpoints, grouped delivery, costs;
* `remote` (`RemoteMembers`, `remote/`): members on Ray workers.

What stays here is what they share and the host's hooks: the capacity controllers, the live runs
and the queue, a run's ports (`MemberPorts`), `released`, `busy` and `recover`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from corral.agent import AgentSession
from corral.orchestration.errors import OrchestrationError
from corral.orchestration.kernel import Caller
from corral.orchestration.teams._repositories import TeamsRepositories

from . import texts
from ._capacity import DEFAULT_LIMITS, CapacityController, Reservation
from ._control import TeamControl
from ._member import MemberRun, TeamChild
from ._plans import TeamContext, _Live, _Prepared
from .checkpoints._checkpoints import Checkpoints
from .groups._groups import CompletionGroups
from .messages.messaging import TeamMessages
from .notices import QueuedRetained, SwarmMembersGone
from .remote import RemoteMembers
from .repair._verification import Verifier
from .reports import SwarmWakes
from .reports._team_reports import TeamReports
from .results import (
    ClaimResult,
    ClaimsList,
    InboxResult,
    MessageSent,
    ReleaseResult,
    ReportReceipt,
    SpawnResult,
    StatusSnapshot,
    SwarmResult,
)
from .roster.records import team_name
from .spawning.spawner import Spawner

if TYPE_CHECKING:
    from corral.orchestration.host._host import Host
    from corral.orchestration.teams.commands import (
        ReadInboxRequest,
        ReportSubmission,
        SendMessageRequest,
        SpawnRequest,
        SwarmRequest,
    )


__all__ = ["LocalMembers", "Teams"]


class Teams:
    """The teams surface's core (one per host).

    It composes the teams services over one `TeamContext` (`context`): `spawning`, `control`,
    `messages`, `reports` and `remote`, and `members`, a teams agent's port into them. Whoever
    calls a verb — a surface, a front end, the extension, another service — calls the service that
    owns it (`teams.spawning.spawn`, `teams.control.status`, `teams.messages.send_message`, …);
    `Teams` itself keeps only what they share and the host's hooks.
    """

    def __init__(self, host: Host) -> None:
        """Args:
        host: The host the teams agents run on.
        """
        self.host = host
        self._capacity: dict[str, CapacityController] = {}
        self.live: dict[str, _Live] = {}
        """Launched agents by run id (until their generation is released)."""
        self.pending: dict[tuple[str, str], tuple[Reservation, _Prepared]] = {}
        """Queued spawns by (lead session, name)."""
        self.swarm_wakes = SwarmWakes()
        """Which swarm reports wake their owner (`reports/_swarm_wakes.py`)."""
        self.lead_sessions: dict[str, AgentSession] = {}
        self.repos = TeamsRepositories.over(host.kernel)
        """The teams features' repositories over the host's database."""
        self.groups = CompletionGroups(self.repos.groups)
        self.checkpoints = Checkpoints(self.repos.checkpoints)
        self.checkpoint_saves: dict[str, asyncio.Future[None]] = {}
        """Checkpoint saves in flight, by run (`ensure_checkpoint`)."""
        self.verifier = Verifier(
            self.repos, logs_dir=lambda lead: self.data_dir(lead) / "checks", on_change=host.changed
        )
        self.context = TeamContext(
            host=host,
            repos=self.repos,
            capacity=self.capacity,
            live=self.live,
            pending=self.pending,
            lead_sessions=self.lead_sessions,
            groups=self.groups,
            checkpoints=self.checkpoints,
            verifier=self.verifier,
            checkpoint_saves=self.checkpoint_saves,
        )
        self.control = TeamControl(self.context, deliver_group_wakes=self._deliver_group_wakes)
        self.messages = TeamMessages(self.context)
        self.reports = TeamReports(self.context, self.control, self.messages)
        self.remote = RemoteMembers(self.context, self.control, self.reports, self.messages)
        """Members on Ray workers: their calls, answers and inbox pushes."""
        self.control.remote_interrupt = self.remote.interrupt
        self.members = LocalMembers(self)
        """A teams agent's port into this core (`MemberTeams` for its tools, `MemberPorts` for its run)."""
        self.spawning = Spawner(
            self.context,
            members=self.members,
            control=self.control,
            messages=self.messages,
            remote=self.remote,
            swarm_wakes=self.swarm_wakes,
            deliver_group_wakes=self._deliver_group_wakes,
            left_without_report=self.left_without_report,
            data_dir=self.data_dir,
        )
        """Spawn, swarm, admission, placement and launch."""

    async def _deliver_group_wakes(self, lead_session_id: str) -> None:
        await self.reports.deliver_group_wakes(lead_session_id)

    def left_without_report(self, lead_session_id: str, name: str) -> None:
        """A member left with no report to deliver (stopped, cancelled in the queue, lost): when its
        swarm's other reports went in without a wake and none is still to come, tell the lead (which
        wakes it)."""
        gone = self.swarm_wakes.ended(lead_session_id, name, self.members_active(lead_session_id))
        if gone:
            self.messages.notify_lead(lead_session_id, texts.swarm_members_gone(SwarmMembersGone(gone)))

    # --- configuration -------------------------------------------------------------------------

    def capacity(self, lead_session_id: str) -> CapacityController:
        """The team's capacity controller (created with the settings' limits on first use)."""
        controller = self._capacity.get(lead_session_id)
        if controller is None:
            teams = self.host.settings.teams
            limits = dict(DEFAULT_LIMITS)
            overflow: dict[str, bool] = {}
            for kind, section in (
                ("read", teams.read_agents),
                ("edit", teams.write_agents),
                ("helper", teams.read_helpers),
            ):
                if section.max_concurrent is not None:
                    limits[kind] = section.max_concurrent
                overflow[kind] = section.queue_overflow
            controller = CapacityController(
                limits,
                overflow=overflow,
                on_retained=lambda reservation: self.messages.notify_lead(
                    lead_session_id, texts.queued_retained(QueuedRetained(reservation.name))
                ),
            )
            self._capacity[lead_session_id] = controller
        return controller

    def data_dir(self, lead_session_id: str) -> Path:
        """`<data root>/teams/<team>` (private)."""
        return self.host.kernel.db.path.parent / "teams" / team_name(lead_session_id)

    # --- host hooks ----------------------------------------------------------------------------

    def released(self, run_id: str) -> None:
        """The host released a generation: give its capacity slot back and drop its snapshot file."""
        self.remote.released(run_id)
        live = self.live.pop(run_id, None)
        if live is None:
            return
        # A member whose report was delivered left its swarm then: this counts only one that had none.
        self.left_without_report(live.lead_session_id, live.run.member.name)
        live.run.dispose()
        if live.admission is not None:
            self.capacity(live.lead_session_id).release(live.admission)
        if live.context_path is not None:
            with contextlib.suppress(Exception):
                from ._session_context import remove_session_context

                remove_session_context(live.context_path)

    def members_active(self, lead_session_id: str) -> Callable[[str], bool]:
        """Whether a member of this lead runs here or waits for a slot (queued, or for the cluster)."""
        running: set[str] | None = None

        def active(name: str) -> bool:
            nonlocal running
            key = (lead_session_id, name)
            if key in self.pending or key in self.spawning.cluster_queue:
                return True
            if running is None:
                running = {
                    live.run.member.name
                    for live in self.live.values()
                    if live.lead_session_id == lead_session_id
                }
            return name in running

        return active

    def busy(self, owner_session_id: str) -> bool:
        """Whether teams work owed to `owner_session_id` is still due (queued spawns, undelivered messages)."""
        if any(lead == owner_session_id for lead, _name in self.pending):
            return True
        return bool(
            self.host.runs.is_owner(owner_session_id)
            and self.repos.messages.undelivered_lead_messages(owner_session_id)
        )

    def recover(self, lead_session_id: str) -> None:
        """After the lead attached: settle its completion groups, deliver undelivered messages and indexes.

        A grouped member whose in-process host is proven gone (the host marked it `lost`) and that
        left no report is settled `interrupted`: its work is never restarted and never counted as
        success, but its group can settle.
        """
        repos = self.repos
        for member in repos.roster.team_members(lead_session_id):
            generation = repos.kernel.get_generation(member.run_id)
            if (
                member.slot_id is not None
                and generation is not None
                and generation.presence == "lost"
                and repos.reports.team_report_for_run(member.run_id) is None
            ):
                with contextlib.suppress(OrchestrationError):
                    self.groups.settled(
                        member.slot_id,
                        "interrupted",
                        f"Agent {member.name}'s process ended without a report "
                        f"({generation.diagnostic or 'host gone'}); no work was restarted.",
                        run_id=member.run_id,
                    )
        # Group recovery interrupts unadmitted slots: only for groups no live part of this process owns.
        groups_warnings = (
            [] if lead_session_id in self.lead_sessions else self.reports.recover_groups(lead_session_id)
        )
        for warning in [*self.checkpoints.retire_expired(), *groups_warnings]:
            self.host.warn(warning)
        for report in repos.reports.team_reports(lead_session_id):
            checkpoint = report.result.checkpoint_id
            if checkpoint is not None and repos.checkpoints.get_checkpoint(checkpoint) is None:
                # The host died between storing the report and saving its checkpoint.
                self.host.spawn_background(self.reports.ensure_checkpoint(report))
        self.host.spawn_background(self.reports.deliver_group_wakes(lead_session_id))
        if self.repos.messages.undelivered_lead_messages(lead_session_id):
            self.host.spawn_background(self.messages.deliver_lead_messages(lead_session_id))


class LocalMembers:
    """A teams agent's port into the teams core of its process (the lead's, or a tmux worker's).

    `MemberTeams` (what the member's own tools call) and `MemberPorts` (what its run asks), each verb
    answered by the service that owns it. A member on a Ray worker has the other implementation of
    the same port, `RemoteTeams` (`remote/_worker.py`), whose calls its lead's host applies here.
    """

    def __init__(self, teams: Teams) -> None:
        self.teams = teams

    # --- MemberTeams ------------------------------------------------------------------------------

    async def send_message(self, sender: TeamChild, request: SendMessageRequest) -> MessageSent:
        """`send_message`: steer a live recipient, or store the message for the lead."""
        return await self.teams.messages.send_message(sender, request)

    async def read_inbox(self, reader: TeamChild, request: ReadInboxRequest) -> InboxResult:
        """`read_inbox`: the member's own messages."""
        return await self.teams.messages.read_inbox(reader, request)

    async def submit_report(
        self, child: TeamChild, submission: ReportSubmission, *, submission_id: str
    ) -> ReportReceipt:
        """`report_and_exit`: assigned checks first; the first accepted report wins and ends the work."""
        return await self.teams.reports.submit_report(child, submission, submission_id=submission_id)

    def claim_files(self, child: TeamChild, paths: tuple[str, ...]) -> ClaimResult:
        """`claim_file`: all-or-nothing claims for an edit agent."""
        return self.teams.control.claim_files(child, paths)

    def release_files(self, child: TeamChild, paths: tuple[str, ...]) -> ReleaseResult:
        """`release_file`: release the member's own claims."""
        return self.teams.control.release_files(child, paths)

    def list_file_claims(self, scope: TeamChild) -> ClaimsList:
        """`list_file_claims`: every claim of the team."""
        return self.teams.control.list_file_claims(scope)

    async def spawn(
        self, caller: Caller, request: SpawnRequest, *, parent: TeamChild | None = None
    ) -> SpawnResult:
        """A nested parent's read helper."""
        return await self.teams.spawning.spawn(caller, request, parent=parent)

    async def spawn_swarm(
        self, caller: Caller, request: SwarmRequest, *, parent: TeamChild | None = None
    ) -> SwarmResult:
        """A nested parent's read helpers."""
        return await self.teams.spawning.spawn_swarm(caller, request, parent=parent)

    async def status(self, scope: TeamChild, agent_name: str | None) -> StatusSnapshot:
        """`get_agent_status` of a writer's helpers."""
        return await self.teams.control.status(scope, agent_name)

    # --- MemberPorts ------------------------------------------------------------------------------

    def pending_helpers(self, parent: TeamChild) -> bool:
        """Whether queued read helpers of `parent` still wait for a slot (they keep it alive)."""
        return any(prepared.parent is parent for _reservation, prepared in self.teams.pending.values())

    async def finish_without_report(self, child: MemberRun) -> bool:
        """Store the fallback report of a run that ended without one; `True` when a repair turn was queued."""
        return await self.teams.reports.finish_without_report(child)

    def run_lost(self, child: MemberRun, reason: str) -> None:
        """A run ended without a report (it raised): its completion-group slot is interrupted."""
        self.teams.control.run_lost(child, reason)
        self.teams.left_without_report(child.member.lead_session_id, child.member.name)
