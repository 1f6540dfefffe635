"""Teams on the host's extension port: how the kernel's generations carry the teams contract.

`TeamsExtension` is the one `HostExtension` of corral. The host calls its hooks and never
names teams; this module turns each hook into the teams core's own verbs:

* `deliver`: a run with a stored teams report gets its checkpoint saved first, then the report
  goes to its completion group's journal (grouped members) or to the lead as a hidden
  `corral-team-report` message; a run without a report is the kernel's to deliver.
* `released` / `busy` / `lead_attached`: capacity slots and snapshot files, queued spawns and
  undelivered lead messages, completion groups and checkpoints after a restart.
* `may_hand_off` / `lost`: a handoff refuses nested helpers, running checks, accepted reports
  and stopping agents; a failed handoff settles the member's group slot.
* `polled`: lead messages that agents moved to tmux panes stored are relayed to the lead.
* `remote_fact` / `remote_state`: a member on a Ray worker sends its teams calls as facts; they are
  applied here through the same verbs and answered, with its inbox, in the state pushed to it
  (`teams/remote/`).

The composition root adds this extension to a host only once a lead uses teams (the teams
surface, or teams state in its store), so a lead without either never imports the teams core
(`corral run`'s start-up stays short).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from corral.orchestration.host.ports import HandoffRefusal, HostExtension

from ._teams import Teams
from .reports._delivery import deliver_team_report
from .reports._swarm_wakes import is_urgent

if TYPE_CHECKING:
    from corral.agent import AgentSession
    from corral.orchestration.host._host import Host
    from corral.orchestration.kernel.records import GenerationRecord, ResultRecord

    from .launch import MemberLaunch

__all__ = ["TeamsExtension"]


class TeamsExtension(HostExtension):
    """The teams core on the host's extension port (see the module docstring)."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.teams = Teams(host)
        self._relaying: set[str] = set()
        """Leads whose stored messages are being relayed now (`polled`)."""

    # --- the hooks ---------------------------------------------------------------------------

    def claims(self, run_id: str) -> bool:
        """Whether `run_id` is a teams agent's run."""
        return self.teams.repos.roster.team_member(run_id) is not None

    async def deliver(
        self, generation: GenerationRecord, result: ResultRecord, owner: AgentSession, *, finalize: bool
    ) -> bool:
        """Deliver a stored teams report (checkpoint first; grouped members through their group);
        `finalize`: the run has ended, its generation is finalized with the delivered mark."""
        repos = self.teams.repos
        report = repos.reports.team_report_for_run(result.run_id)
        if report is None:
            return False
        teams = self.teams
        await teams.reports.ensure_checkpoint(report)
        member = repos.roster.team_member(result.run_id)
        if member is not None and member.slot_id is not None:
            await teams.reports.deliver_grouped(report, result, finalize=finalize)
        else:
            wake = teams.swarm_wakes.wakes(
                report.lead_session_id,
                report.name,
                teams.members_active(report.lead_session_id),
                urgent=is_urgent(report),
            )
            await deliver_team_report(repos.kernel, owner, report, result, wake=wake, finalize=finalize)
        return True

    def released(self, run_id: str) -> None:
        """Give the run's capacity slot back and drop its snapshot file."""
        self.teams.released(run_id)

    def busy(self, owner_session_id: str) -> bool:
        """Queued spawns or undelivered lead messages are still due to `owner_session_id`."""
        return self.teams.busy(owner_session_id)

    async def lead_attached(self, lead_session_id: str) -> Sequence[str]:
        """Settle the lead's completion groups, checkpoints and messages (`Teams.recover` warns itself)."""
        self.teams.recover(lead_session_id)
        return ()

    def lost(self, run_id: str, reason: str) -> None:
        """A member's run is gone without a report (a failed handoff, a lost Ray worker): its group
        slot is interrupted."""
        live = self.teams.live.get(run_id)
        if live is not None:
            self.teams.run_lost(live.run, reason)
            return
        self.teams.remote.lost(run_id, reason)

    def may_hand_off(self, run_id: str, runtime: str) -> HandoffRefusal | None:
        """Nested helpers, running checks, accepted reports and stopping agents stay where they are
        (whatever the target runtime: a member moves into a tmux pane or onto Ray alike)."""
        repos = self.teams.repos
        member = repos.roster.team_member(run_id)
        if member is None:
            return None
        generation = repos.kernel.get_generation(run_id)
        label = member.name if generation is None else generation.label
        if member.depth != 0:
            return (
                "nested_helper",
                f"Agent {label} is a writer's read helper; helpers stay with their writer.",
            )
        teams = self.teams
        live = teams.live.get(run_id)
        run = None if live is None else live.run
        if teams.verifier.unresolved(run_id) is not None:  # a claimed check or a running stage
            return "check_running", f"Agent {label} has an assigned check running; wait for it."
        if repos.reports.team_report_for_run(run_id) is not None or (run is not None and run.report_accepted):
            return "report_accepted", f"Agent {label} already reported; its report is being delivered."
        if member.fence != "none" or (run is not None and not run.messages_open):
            return "stopping", f"Agent {label} is being stopped."
        return None

    def handoff_launch(self, generation: GenerationRecord, runtime: str) -> MemberLaunch | None:
        """A member moving onto a worker: its member row (`teams.launch.MemberLaunch`), with which its
        worker gives it the member tools (a Ray worker over the Ray port; a tmux worker reads the row
        from the store again)."""
        from corral.orchestration.teams.launch import MemberLaunch

        member = self.teams.repos.roster.team_member(generation.run_id)
        return None if member is None else MemberLaunch(member)

    def remote_fact(self, run_id: str, payload: object) -> None:
        """A Ray member's teams call (applied once, in the background) or what its worker took."""
        self.teams.remote.fact(run_id, payload)

    def remote_state(self, run_id: str) -> object | None:
        """A Ray member's answers and unread messages, pushed with every pull (`None`: not a member)."""
        return self.teams.remote.state(run_id)

    def polled(self) -> None:
        """Relay `team-lead` messages that tmux teams agents stored into their leads' sessions.

        A moved agent's `send_message` to the lead only writes the store (its worker has no
        lead); this brings them in with the same routine as in-process messages.
        """
        teams = self.teams
        host = self.host
        leads: set[str] = set()
        for run_id in host.runs.worker_runs():
            member = self.teams.repos.roster.team_member(run_id)
            if member is not None and host.runs.is_owner(member.lead_session_id):
                leads.add(member.lead_session_id)
        for lead in leads - self._relaying:
            if not self.teams.repos.roster.undelivered_lead_messages(lead):
                continue
            self._relaying.add(lead)

            async def deliver(lead_session_id: str = lead) -> None:
                try:
                    await teams.control.deliver_lead_messages(lead_session_id)
                finally:
                    self._relaying.discard(lead_session_id)

            host.spawn_background(deliver())
