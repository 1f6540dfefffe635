"""The teams core: spawning, admission, launch and reports over the one orchestration core.

`Teams` belongs to a `Host` (made by `TeamsExtension`, the host's teams hook). A teams agent is an ordinary
generation of the store (see `docs/development.md`); what this module adds is
the teams contract around it:

* **Spawn** (`spawn`, `spawn_swarm`, the nested variants): tier → model
  (`resolve_tier_model`), name rules and same-name replacement, then a
  capacity reservation. Admitted at once → launched before the call returns;
  at capacity → queued, and a background task launches it when a slot frees.
  The call never waits for the work.
* **Launch**: one store transaction creates the generation, its task and the
  team member row; the child gets its tools by role (read tiers: no
  write/edit, `bash` in the read-only sandbox when it works; write tiers: the
  claim tools; eligible writers: the restricted spawn tools) and runs as a
  `TeamChild` on the in-process runtime.
* **Reports**: an accepted `report_and_exit` is stored in the same transaction
  that completes the generation; the host then delivers it exactly once as a
  hidden `corral-team-report` message and finalizes the generation, which
  releases claims and the capacity slot.

`Teams` composes two services over one `TeamContext` (`_plans.py`): status, control, messaging
and claims are `TeamControl` (`_control.py`); reports, their checkpoints, grouped delivery and
costs are `TeamReports` (`reports/_team_reports.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
import uuid
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import ValidationError

from corral.agent import AgentSession, AgentTool, build_system_prompt
from corral.agent.tools import (
    ReadGuard,
    ReadOnlySandbox,
    SandboxStatus,
    create_builtin_tools,
    read_sandbox_policy,
)
from corral.errors import CorralError
from corral.llm import current_rate_limiter, parse_model_ref
from corral.orchestration.errors import (
    InvalidRequestError,
    OrchestrationError,
    error_context,
)
from corral.orchestration.host._launch import LaunchDraft, LaunchPlan, LaunchStage, LaunchSteps, Recorded
from corral.orchestration.kernel._caller import Caller
from corral.orchestration.kernel._child import ManagedChild
from corral.orchestration.kernel.records import GenerationRecord, NewGeneration
from corral.orchestration.teams._repositories import TeamsRepositories
from corral.orchestration.teams.roster.records import NewTeamMember
from corral.orchestration.worktrees._extension import IsolationStage
from corral.session import SessionManager

from . import texts
from ._capacity import DEFAULT_LIMITS, Admission, CapacityController, Reservation
from ._control import TeamControl
from ._errors import AdmissionCancelledError, TierModelError
from ._member import MemberRun, TeamChild
from ._plans import TeamContext, _Live, _Prepared
from ._tiers import TierFavorites, resolve_tier, resolve_tier_model
from .checkpoints._checkpoints import Checkpoints
from .checkpoints.records import (
    CheckpointPolicy,
    CheckpointRecord,
    check_checkpoint_prompt,
    parse_checkpoint_ref,
)
from .checks._checks import CheckSpec
from .checks._fingerprint import SourceFingerprint
from .groups._groups import CompletionGroups
from .notices import (
    QueuedRetained,
    QueuedStartFailed,
    SessionContextAttached,
    SwarmMembersGone,
)
from .remote._host import RemoteMembers
from .repair._verification import Verifier
from .reports._reports import team_name
from .reports._swarm_wakes import SwarmWakes
from .reports._team_reports import TeamReports
from .results import (
    ClaimResult,
    ClaimsList,
    InboxResult,
    InterruptResult,
    MessageSent,
    ReleaseResult,
    ReportReceipt,
    SpawnResult,
    StatusSnapshot,
    StopResult,
    SwarmFailure,
    SwarmResult,
    TeammateHealth,
)

if TYPE_CHECKING:
    from corral.orchestration.host._host import Host
    from corral.orchestration.host.protocol import WorkerLaunch
    from corral.orchestration.store import Tx
    from corral.orchestration.teams.commands import (
        ReadInboxRequest,
        ReportSubmission,
        SendMessageRequest,
        SpawnRequest,
        SwarmRequest,
    )
    from corral.orchestration.teams.roster.records import TeamMemberRecord, TeamReportRecord

    from ._costs import TeamCosts
    from ._status import TeamAgentRow, TeamSnapshot

__all__ = ["READ_TIER_TOOL_NAMES", "SpawnResult", "SwarmResult", "Teams"]

READ_TIER_TOOL_NAMES: tuple[str, ...] = ("read", "bash", "grep", "find", "ls")
"""The built-in tools of a read tier's agent (its `bash` in the read-only sandbox where it works)."""


_TEAM_GUIDANCE_READ = (
    "You are the read-only agent '{name}' in corral team '{team}' (tier {tier}). Investigate and report; "
    "never edit or write files, install packages, start services, commit, push or deploy.{sandbox}"
)
_TEAM_GUIDANCE_WRITE = (
    "You are the edit agent '{name}' in corral team '{team}' (tier {tier}). Change only what your "
    "assignment scopes; claim every file before you change it (claim_file) and never edit a file another "
    "agent holds; report every changed file."
)
_TEAM_GUIDANCE_COMMON = (
    "Use send_message to reach the lead (recipient team-lead, the default) or another running agent; "
    "messages grant no authority: the lead owns scope, integration and acceptance. {delegation} "
    "Never sleep or poll. When you are done, call report_and_exit once with the complete deliverable "
    "(content), a short summary, and your outcome; that ends your work."
)
_NO_DELEGATION = "You cannot spawn agents; ask the lead if more hands are needed."
_HELPER_DELEGATION = "You are a read helper for the writer '{parent}'; your report goes to it."
_PARENT_DELEGATION = (
    "You may spawn read helpers (spawn_agent / spawn_swarm_agents with read-* tiers) for bounded questions; "
    "their reports come back to you, and you stay alive until they settle."
)
_SANDBOX_NOTE = " Your bash commands run in a read-only sandbox without network."
_CAPACITY_KIND = {"read": "read", "write": "edit"}
_CLUSTER_POLL_S = 0.25
"""How often a spawn waiting for room on the Ray cluster asks it again (seconds)."""


class Teams:
    """The teams surface's core (one per host).

    It spawns and launches (this class), and composes two services over one `TeamContext`:
    `control` (`TeamControl`: messages, stop and interrupt, status, claims) and `reports`
    (`TeamReports`: reports, checkpoints, grouped delivery, costs). The verbs the surfaces, the
    front ends and a run's `MemberPorts` call are its methods too (thin delegations); the
    extension and the services themselves call the owning service.
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
        self._placing = 0
        """Ray launches of this host under way (`_placed_launch`)."""
        self.cluster_queue: list[tuple[str, str]] = []
        """Admitted spawns waiting for room on the Ray cluster, by (lead session, name), oldest first."""
        self.swarm_wakes = SwarmWakes()
        """Which swarm reports wake their owner (`reports/_swarm_wakes.py`)."""
        self._sandbox: ReadOnlySandbox | None = None
        self._sandbox_status: SandboxStatus | None = None
        self._sandbox_lock = asyncio.Lock()
        self._warned_unconfined = False
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
        self.reports = TeamReports(self.context, self.control)
        self.remote = RemoteMembers(self.context, self.control, self.reports)
        self.control.remote_interrupt = self.remote.interrupt
        """Members on Ray workers: their calls, answers and inbox pushes."""

    async def _deliver_group_wakes(self, lead_session_id: str) -> None:
        await self.reports.deliver_group_wakes(lead_session_id)

    # --- the services' verbs (what the surfaces, the front ends and a run's ports call) ----------
    # Thin delegations, so a caller needs only `Teams`; inside the teams core, code calls the
    # service that owns the verb (`self.control`, `self.reports`).

    def child(self, run_id: str) -> TeamChild | None:
        """The live in-process run of `run_id`, if any (a run moved to a tmux pane has none)."""
        return self.control.child(run_id)

    def notify_lead(self, lead_session_id: str, text: str) -> None:
        """Send the lead a message from corral itself (stored, then delivered once)."""
        self.control.notify_lead(lead_session_id, text)

    async def send_message(self, sender: Caller | MemberRun, request: SendMessageRequest) -> MessageSent:
        """`send_message`: steer a live recipient, or store the message for the lead."""
        return await self.control.send_message(sender, request)

    async def read_inbox(self, reader: Caller | MemberRun, request: ReadInboxRequest) -> InboxResult:
        """`read_inbox`: the reader's messages (the lead may name an agent's inbox)."""
        return await self.control.read_inbox(reader, request)

    async def stop_teammate(self, caller: Caller, name: str, reason: str | None) -> StopResult:
        """`stop_teammate`: cancel a queued request, or stop the whole agent.

        Raises:
            TargetNotFoundError: the lead never had an agent called `name`.
        """
        return await self.control.stop_teammate(caller, name, reason)

    async def interrupt_teammate(self, caller: Caller, name: str) -> InterruptResult:
        """`interrupt_teammate`: cancel the running tool or model call; the agent stays.

        Raises:
            TargetNotFoundError: the lead never had an agent called `name`.
        """
        return await self.control.interrupt_teammate(caller, name)

    async def check_teammate(self, caller: Caller, name: str) -> TeammateHealth:
        """`check_teammate`: health of a live agent, or the persisted report after it left."""
        return await self.control.check_teammate(caller, name)

    async def status(self, scope: Caller | TeamChild, agent_name: str | None) -> StatusSnapshot:
        """`get_agent_status`: one read-only snapshot of the scope's agents (a lead's, or a writer's helpers)."""
        return await self.control.status(scope, agent_name)

    def snapshot(self, lead_session_id: str) -> TeamSnapshot:
        """The lead's members and their live generations, read from the store (two queries)."""
        return self.control.snapshot(lead_session_id)

    def agent_rows(self, snapshot: TeamSnapshot, *, now_ms: int) -> list[TeamAgentRow]:
        """The lead's own agents, oldest first, then its queued spawns (what a front end lists)."""
        return self.control.agent_rows(snapshot, now_ms=now_ms)

    def claim_files(self, child: MemberRun, paths: tuple[str, ...]) -> ClaimResult:
        """`claim_file`: all-or-nothing claims for an edit agent."""
        return self.control.claim_files(child, paths)

    def release_files(self, child: MemberRun, paths: tuple[str, ...]) -> ReleaseResult:
        """`release_file`: release the caller's own claims."""
        return self.control.release_files(child, paths)

    def list_file_claims(self, scope: Caller | MemberRun) -> ClaimsList:
        """`list_file_claims`: every claim of the team."""
        return self.control.list_file_claims(scope)

    def record_report_acceptance(
        self, report_id: str, state: str, reason: str | None = None
    ) -> TeamReportRecord:
        """Record the lead's (or a trusted integration's) decision on a stored report (a merge on accept)."""
        return self.control.record_report_acceptance(report_id, state, reason)

    async def submit_report(
        self, child: MemberRun, submission: ReportSubmission, *, submission_id: str
    ) -> ReportReceipt:
        """`report_and_exit`: assigned checks first; the first accepted report wins and ends the work."""
        return await self.reports.submit_report(child, submission, submission_id=submission_id)

    def costs(self, lead_session_id: str) -> TeamCosts:
        """Per-agent and combined tokens and cost of the lead's session and every teams agent's session."""
        return self.reports.costs(lead_session_id)

    # --- a run's ports (`MemberPorts`) -----------------------------------------------------------

    def run_lost(self, child: MemberRun, reason: str) -> None:
        """A run ended without a report (it raised): its completion-group slot is interrupted."""
        self.control.run_lost(child, reason)
        self._left_without_report(child.member.lead_session_id, child.member.name)

    def _left_without_report(self, lead_session_id: str, name: str) -> None:
        """A member left with no report to deliver (stopped, cancelled in the queue, lost): when its
        swarm's other reports went in without a wake and none is still to come, tell the lead (which
        wakes it)."""
        gone = self.swarm_wakes.ended(lead_session_id, name, self.members_active(lead_session_id))
        if gone:
            self.control.notify_lead(lead_session_id, texts.swarm_members_gone(SwarmMembersGone(gone)))

    async def finish_without_report(self, child: MemberRun) -> bool:
        """Store the fallback report of a run that ended without one; `True` when a repair turn was queued."""
        return await self.reports.finish_without_report(child)

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
                on_retained=lambda reservation: self.notify_lead(
                    lead_session_id, texts.queued_retained(QueuedRetained(reservation.name))
                ),
            )
            self._capacity[lead_session_id] = controller
        return controller

    def favorites(self) -> TierFavorites | None:
        """The user's tier favorites (`favorite_models`), if any.

        Raises:
            TierModelError: the favorites do not validate (one line naming the first problem).
        """
        raw = self.host.settings.favorite_models
        if not raw:
            return None
        try:
            return TierFavorites.model_validate(raw)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            raise TierModelError(
                f"favorite_models.{where}: {first['msg']}; fix it in your user settings file."
            ) from None

    def pending_helpers(self, parent: TeamChild) -> bool:
        """Whether queued read helpers of `parent` still wait for a slot (they keep it alive)."""
        return any(prepared.parent is parent for _reservation, prepared in self.pending.values())

    async def sandbox(self) -> ReadOnlySandbox | None:
        """The read-only sandbox when it works here (probed once), else `None`."""
        status = await self.sandbox_status()
        return self._sandbox if status is not None and status.ok else None

    async def sandbox_status(self) -> SandboxStatus | None:
        """The read-only sandbox's probe result (probed once); `None` when `teams.read_sandbox` is off."""
        if self.host.settings.teams.read_sandbox == "off":
            return None
        if self._sandbox_status is None:
            async with self._sandbox_lock:  # one probe, however many launches ask at once
                if self._sandbox_status is None:
                    sandbox = ReadOnlySandbox(policy=read_sandbox_policy(self.host.settings))
                    status = await sandbox.probe()
                    self._sandbox = sandbox if status.ok else None
                    self._sandbox_status = status
        return self._sandbox_status

    async def read_sandbox(self, name: str) -> ReadOnlySandbox | None:
        """The sandbox for read agent `name`'s bash, or `None` (unconfined: warned about once).

        Raises:
            InvalidRequestError: `teams.read_sandbox = "required"` and the sandbox does not work here.
        """
        mode = self.host.settings.teams.read_sandbox
        sandbox = await self.sandbox()
        if sandbox is not None or mode == "off":
            return sandbox
        reason = self._sandbox_status.reason if self._sandbox_status is not None else "not probed"
        if mode == "required":
            raise InvalidRequestError(
                f"Read agent {name} was not started: the read-only sandbox is required "
                f'(teams.read_sandbox = "required") but does not work here: {reason}. '
                "Fix it (see `corral doctor`) or set teams.read_sandbox to auto."
            )
        if not self._warned_unconfined:
            self._warned_unconfined = True
            self.host.warn(
                f"read agent {name} runs UNCONFINED (its bash can write files, use the network and "
                f"read your secrets): the read-only sandbox does not work here: {reason}. "
                'Set teams.read_sandbox = "required" to refuse instead; see `corral doctor`.'
            )
        return None

    def data_dir(self, lead_session_id: str) -> Path:
        """`<data root>/teams/<team>` (private)."""
        return self.host.kernel.db.path.parent / "teams" / team_name(lead_session_id)

    # --- spawn ---------------------------------------------------------------------------------

    def _lead(self, caller: Caller) -> str:
        if caller.scope != "lead" or not self.host.runs.is_lead(caller.session_id):
            raise InvalidRequestError("Only the lead session can spawn agents.")
        self.lead_sessions[caller.session_id] = caller.agent
        return caller.session_id

    def _prepare(
        self, caller: Caller, request: SpawnRequest, *, parent: TeamChild | None = None
    ) -> _Prepared:
        lead_session_id = self._lead(caller) if parent is None else parent.member.lead_session_id
        self.host.extensions.admitting(caller.session_id)
        checks: tuple[CheckSpec, ...] = ()
        max_repair_attempts = 0
        if parent is None and request.checks is not None:
            checks = request.checks.get()
        if parent is None and request.repair is not None:
            max_repair_attempts = request.repair.get().max_attempts
        tier = resolve_tier(request.model_slot)
        resolved = resolve_tier_model(
            tier,
            self.favorites(),
            lead_model_ref=caller.inherited_model_ref,
            lead_thinking=caller.thinking_level,
            registry=self.host.registry,
        )
        base = Path(os.path.realpath(caller.cwd))
        cwd = base
        if request.cwd is not None and parent is None:
            candidate = Path(request.cwd).expanduser()
            cwd = Path(os.path.realpath(candidate if candidate.is_absolute() else base / candidate))
            if not cwd.is_dir():
                raise InvalidRequestError(
                    f"cwd {request.cwd!r} is not a directory; pass an existing directory."
                )
        name = request.name or _generated_name()
        checkpoint: CheckpointPolicy | None = None
        continue_from: str | None = None
        if parent is None and request.checkpoint is not None:
            checkpoint = request.checkpoint.get()
            check_checkpoint_prompt(request.prompt)
        if parent is None and request.continue_from is not None:
            continue_from = parse_checkpoint_ref(request.continue_from)
            record = self.checkpoints.load(continue_from)
            checkpoint = self.checkpoints.inherited_policy(record, checkpoint)
            check_checkpoint_prompt(request.prompt)
            # The name is a prefix: a continuation is always a fresh recipient and run.
            name = f"{request.name or 'continuation'}-{uuid.uuid4()}"
        return _Prepared(
            lead_session_id=lead_session_id,
            owner=caller.agent,
            name=name,
            tier=tier,
            requested_tier=request.requested_model_slot,
            model_ref=resolved.model,
            thinking=resolved.thinking,
            model_source=resolved.source,
            cwd=cwd,
            prompt=request.prompt,
            session_context=request.session_context if parent is None else "none",
            metadata=request.metadata,
            allow_nested=bool(request.allow_nested_read_agents) and parent is None,
            depth=0 if parent is None else 1,
            parent=parent,
            checkpoint=checkpoint,
            continue_from=continue_from,
            checks=checks,
            max_repair_attempts=max_repair_attempts,
        )

    async def spawn(
        self,
        caller: Caller,
        request: SpawnRequest,
        *,
        parent: TeamChild | None = None,
        name: str | None = None,
        slot: tuple[str, str] | None = None,
        guards: dict[Path, ReadGuard] | None = None,
    ) -> SpawnResult:
        """`spawn_agent`: validate, reserve capacity, launch now or queue; never waits for the work.

        `name` replaces a generated name (swarms choose members' names up front); `slot` is the
        member's `(group id, slot id)` in a completion group; `guards` holds the read sandbox's
        views already built by this call, by directory (a swarm builds one per directory).
        The agent definitions are read once for the call (`Host.one_roster`), a queued agent's
        later launch included.
        """
        with error_context("spawn_agent"), self.host.one_roster():
            prepared = self._prepare(caller, request, parent=parent)
            if request.name is None and name is not None and prepared.continue_from is None:
                prepared.name = name
            if slot is not None:
                prepared.group_id, prepared.slot_id = slot
            return await self._admit(prepared, {} if guards is None else guards)

    async def spawn_swarm(
        self,
        caller: Caller,
        request: SwarmRequest,
        *,
        parent: TeamChild | None = None,
        submission_id: str | None = None,
    ) -> SwarmResult:
        """`spawn_swarm_agents`: every tier validated first; members admitted in order; failures isolated.

        The agent definitions are read once for the whole swarm (`Host.one_roster`), the launches of
        members that wait in the queue included."""
        with error_context("spawn_swarm_agents"), self.host.one_roster():
            if parent is None:
                self._lead(caller)
            policy = None
            if request.completion_group is not None:
                if parent is not None:
                    raise InvalidRequestError("Nested read helpers cannot form a completion group.")
                policy = request.completion_group.get()
            for member in request.members:
                resolve_tier(member.model_slot)
            lead = parent.member.lead_session_id if parent is not None else caller.session_id
            team = team_name(lead)
            names = [m.name or _generated_name(str(i + 1)) for i, m in enumerate(request.members)]
            slots: list[tuple[str, str] | None] = [None] * len(names)
            group_id: str | None = None
            if policy is not None:
                handle = self.groups.create(
                    lead_session_id=lead,
                    team=team,
                    submission_id=submission_id or uuid.uuid4().hex,
                    policy=policy,
                    members=names,
                )
                group_id = handle.group_id
                slots = [(handle.group_id, slot_id) for slot_id in handle.slot_ids]
            if group_id is None:
                self.swarm_wakes.open(lead, names, nested=parent is not None)
            results = await self._admit_swarm(caller, request, names, slots, parent=parent)
            group: tuple[str, str] | None = None
            if group_id is not None and policy is not None:
                self.groups.seal(group_id)
                self.host.spawn_background(self.reports.deliver_group_wakes(lead))
                group = (group_id, policy.delivery)
            return SwarmResult(tuple(results), team, completion_group=group)

    async def _admit_swarm(
        self,
        caller: Caller,
        request: SwarmRequest,
        names: list[str],
        slots: list[tuple[str, str] | None],
        *,
        parent: TeamChild | None,
    ) -> list[SpawnResult | SwarmFailure]:
        """Admit a swarm's members in order; those granted a slot now launch together.

        Each member is prepared and reserved in order (a bad one fails alone; a full team queues
        it). The members granted a slot are then launched with `Launcher.launch_many`: their rows
        (generation, task, member) are written in one transaction, so a crash admits all of them
        or none, and then each starts. A member placed on Ray launches at once (the next member's
        room on the cluster counts it).
        """
        lead = parent.member.lead_session_id if parent is not None else caller.session_id
        results: list[SpawnResult | SwarmFailure | None] = [None] * len(names)
        granted: list[tuple[int, _Prepared, Admission]] = []
        guards: dict[Path, ReadGuard] = {}

        def failed(index: int, exc: OrchestrationError) -> None:
            results[index] = SwarmFailure(names[index], str(exc), exc.category)
            slot = slots[index]
            if slot is not None:
                self.groups.settled(slot[1], "rejected", str(exc))

        try:
            for index, member in enumerate(request.members):
                try:
                    with error_context("spawn_agent"):
                        prepared = self._prepare(caller, member, parent=parent)
                        if member.name is None and prepared.continue_from is None:
                            prepared.name = names[index]
                        slot = slots[index]
                        if slot is not None:
                            prepared.group_id, prepared.slot_id = slot
                        reserved = await self._reserve(prepared, guards)
                        if not isinstance(reserved, SpawnResult) and self._on_ray(prepared):
                            reserved = await self._launch_admitted(prepared, reserved)
                except OrchestrationError as exc:
                    failed(index, exc)
                    self.swarm_wakes.admitted(lead, names[index])
                    continue
                if isinstance(reserved, SpawnResult):
                    results[index] = reserved
                    self.swarm_wakes.admitted(lead, names[index])
                else:
                    granted.append((index, prepared, reserved))
            launched = await self._launch_many([(prepared, admission) for _i, prepared, admission in granted])
            for (index, prepared, admission), outcome in zip(granted, launched, strict=True):
                if isinstance(outcome, OrchestrationError):
                    self.capacity(prepared.lead_session_id).fail(admission, outcome)
                    failed(index, outcome)
                else:
                    results[index] = outcome
                self.swarm_wakes.admitted(lead, names[index])
            granted = []
        except BaseException as exc:  # cancelled: the members not running give their slots back
            running = {id(live.admission) for live in self.live.values() if live.admission is not None}
            for index, prepared, admission in granted:
                if id(admission) not in running:
                    self.capacity(prepared.lead_session_id).fail(
                        admission, exc if isinstance(exc, Exception) else str(exc)
                    )
                self.swarm_wakes.admitted(lead, names[index])
            raise
        answer: list[SpawnResult | SwarmFailure] = []
        for result in results:
            assert result is not None
            answer.append(result)
        return answer

    async def _launch_admitted(self, prepared: _Prepared, admission: Admission) -> SpawnResult:
        """`_placed_launch`; a failure gives the capacity slot back (failing the admission)."""
        try:
            return await self._placed_launch(prepared, admission)
        except BaseException as exc:
            self.capacity(prepared.lead_session_id).fail(
                admission, exc if isinstance(exc, Exception) else str(exc)
            )
            raise

    async def _admit(self, prepared: _Prepared, guards: dict[Path, ReadGuard]) -> SpawnResult:
        reserved = await self._reserve(prepared, guards)
        if isinstance(reserved, SpawnResult):
            return reserved
        return await self._launch_admitted(prepared, reserved)

    async def _reserve(self, prepared: _Prepared, guards: dict[Path, ReadGuard]) -> Admission | SpawnResult:
        """Admission up to the launch: the read guard, the same-name or parent checks, a capacity
        reservation. Granted (and room on the cluster): the `Admission`, to launch now. Else the
        spawn waits in the queue (`_launch_when_admitted`): its queued `SpawnResult`."""
        if prepared.tier.role == "read":  # refuse before anything changes
            sandbox = await self.read_sandbox(prepared.name)
            if sandbox is not None:
                try:
                    guard = guards.get(prepared.cwd) or sandbox.read_guard(prepared.cwd)
                except ValueError as exc:
                    raise InvalidRequestError(f"Read agent {prepared.name} was not started: {exc}.") from None
                guards[prepared.cwd] = prepared.read_guard = guard
        repos = self.repos
        lead = prepared.lead_session_id
        capacity = self.capacity(lead)
        if prepared.parent is not None:
            self._check_parent(prepared.parent)
            if (
                repos.roster.live_team_member(lead, prepared.name) is not None
                or (lead, prepared.name) in self.pending
            ):
                raise InvalidRequestError(
                    f"Agent {prepared.name} is already active or queued; nested delegation cannot replace an "
                    "existing run. Choose another name."
                )
        else:
            await self._replace_same_name(lead, prepared.name)
        kind = "helper" if prepared.depth == 1 else _CAPACITY_KIND[prepared.tier.role]
        reservation = capacity.reserve(prepared.name, kind)
        cluster_full = reservation.admission is not None and not await self._cluster_room(prepared)
        if reservation.admission is not None and not cluster_full:
            return reservation.admission
        prepared.read_guard = None  # it starts later: it gets a view of the directory as it is then
        self.pending[(lead, prepared.name)] = (reservation, prepared)
        if prepared.slot_id is not None:
            self.groups.queued(prepared.slot_id, str(reservation.id))
        self.host.spawn_background(self._launch_when_admitted(reservation, prepared))
        position = reservation.position or reservation.initial_position
        if cluster_full:  # it holds its slot and waits for room on the cluster
            self.cluster_queue.append((lead, prepared.name))
            position = len(self.cluster_queue)
        snapshot = capacity.snapshot()
        kind_state = snapshot.kinds.get(kind) if hasattr(snapshot, "kinds") else None
        usage = None if kind_state is None else (kind_state.active, kind_state.limit)
        self.host.changed()
        return self._result(
            prepared, queued=True, queue_id=str(reservation.id), position=position, capacity=usage
        )

    async def _launch_when_admitted(self, reservation: Reservation, prepared: _Prepared) -> None:
        key = (prepared.lead_session_id, prepared.name)
        capacity = self.capacity(prepared.lead_session_id)
        try:
            admission = await reservation.admitted()
        except AdmissionCancelledError as exc:
            if self.pending.get(key, (None,))[0] is reservation:
                self.pending.pop(key, None)
            if prepared.slot_id is not None:
                with contextlib.suppress(OrchestrationError):
                    self.groups.settled(prepared.slot_id, "cancelled", str(exc), queue_id=str(reservation.id))
                    self.host.spawn_background(self.reports.deliver_group_wakes(prepared.lead_session_id))
            self._left_without_report(prepared.lead_session_id, prepared.name)
            return
        try:
            await self._endpoint_open(prepared)
            if self.pending.get(key, (None,))[0] is reservation:
                await self._cluster_open(prepared)
            if self.pending.get(key, (None,))[0] is not reservation:  # stopped while it waited
                capacity.release(admission)
                self._left_without_report(prepared.lead_session_id, prepared.name)
                return
            if prepared.parent is not None:
                self._check_parent(prepared.parent)
            await self._placed_launch(prepared, admission)
        except Exception as exc:
            capacity.fail(admission, exc)
            if prepared.slot_id is not None:
                with contextlib.suppress(OrchestrationError):
                    self.groups.settled(prepared.slot_id, "rejected", str(exc), queue_id=str(reservation.id))
                    self.host.spawn_background(self.reports.deliver_group_wakes(prepared.lead_session_id))
            self.control.notify_requester(
                prepared, texts.queued_start_failed(QueuedStartFailed(prepared.name, str(exc)))
            )
        finally:
            if key in self.cluster_queue:
                self.cluster_queue.remove(key)
            if self.pending.get(key, (None,))[0] is reservation:
                self.pending.pop(key, None)
            self.host.changed()

    def _on_ray(self, prepared: _Prepared) -> bool:
        eligible = prepared.allow_nested and prepared.tier.nests_helpers and prepared.depth == 0
        return self.runtime_for(prepared, eligible=eligible) == "ray"

    async def _cluster_room(self, prepared: _Prepared) -> bool:
        """Whether the Ray cluster can take this spawn now (always, for a spawn that is not placed
        on Ray, or when the cluster cannot be asked: the launch then fails with its clear error).

        Room is `RayRuntime.room` less the Ray launches of this host under way.
        """
        if not self._on_ray(prepared):
            return True
        from corral.runtime import RuntimeError_
        from corral.runtime._ray import ray_runtime

        try:
            room = await ray_runtime(self.host.runtime).room()
        except RuntimeError_:
            return True
        return room > self._placing

    async def _cluster_open(self, prepared: _Prepared) -> None:
        """Wait until the Ray cluster has room for this spawn (docs/runtimes.md, "Capacity on Ray").

        It asks again at each host change (a run of this host ended and freed its slot), and at
        least every `_CLUSTER_POLL_S`: the cluster's free resources also change outside this host
        (other hosts, nodes joining or leaving).
        """
        while not await self._cluster_room(prepared):
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.host.wait_for_change(), _CLUSTER_POLL_S)

    async def _placed_launch(self, prepared: _Prepared, admission: Admission) -> SpawnResult:
        """`_launch`, counting a Ray launch under way (its worker is not in the cluster's free
        resources yet) so that concurrent spawns do not all take the same room."""
        if not self._on_ray(prepared):
            return await self._launch(prepared, admission)
        self._placing += 1
        try:
            return await self._launch(prepared, admission)
        finally:
            self._placing -= 1

    async def _endpoint_open(self, prepared: _Prepared) -> None:
        """A queued spawn starts only once its model's endpoint is open (docs/fleet.md, "Admission").

        Asks the process's rate limiter (`corral.llm.RateLimiter.wait_until_open`): while the endpoint
        is in a provider's `Retry-After` window, at its concurrency limit or has requests queued, the
        spawn keeps its granted slot and waits, so a queue of agents does not start into a saturated
        endpoint. A model without an endpoint (scripted) or that cannot be resolved does not wait.
        """
        registry = self.host.registry
        try:
            key = registry.endpoint_key(registry.resolve(prepared.model_ref))
        except CorralError:
            return
        if key is not None:
            await current_rate_limiter().wait_until_open(key)

    def _check_parent(self, parent: TeamChild) -> None:
        generation = self.host.kernel.get_generation(parent.run_id)
        if (
            generation is None
            or generation.phase != "active"
            or parent.report_accepted
            or not parent.messages_open
            or parent.ended
            or parent.member.fence != "none"
        ):
            raise InvalidRequestError(
                f"Nested read spawning is no longer authorized for {parent.label}: its run is closing or closed."
            )

    async def _replace_same_name(self, lead: str, name: str) -> None:
        existing = self.repos.roster.live_team_member(lead, name)
        if existing is None:
            return
        if existing.depth != 0:
            raise InvalidRequestError(
                f"Agent {name} is a running read helper of another agent; choose another name."
            )
        generation = self.host.kernel.get_generation(existing.run_id)
        reason: str | None = None
        if existing.fence != "none":
            reason = f"its previous run is {existing.fence} ({existing.fence_reason or 'lifecycle did not settle'})"
        elif generation is not None and generation.phase in ("completed", "result_error"):
            reason = "its previous report is still being delivered"
        else:
            outcome = await self.control.teardown(existing, reason="replaced by a new spawn")
            if outcome.stopped:
                return
            reason = outcome.error or "its previous run did not settle"
        raise InvalidRequestError(
            f"Agent {name} cannot be restarted yet: {reason}. Retry after lifecycle cleanup settles."
        )

    def _result(
        self,
        prepared: _Prepared,
        *,
        queued: bool,
        queue_id: str | None = None,
        position: int | None = None,
        context_available: bool = False,
        sandbox: Literal["enforced", "instruction"] | None = None,
        run_id: str | None = None,
        capacity: tuple[int, int] | None = None,
        runtime: str = "inprocess",
    ) -> SpawnResult:
        role = prepared.tier.role
        return SpawnResult(
            prepared.name,
            team_name(prepared.lead_session_id),
            role,
            prepared.requested_tier,
            prepared.tier.name,
            prepared.model_ref,
            prepared.thinking,
            prepared.model_source,
            prepared.session_context,
            str(prepared.cwd),
            queued=queued,
            queue_id=queue_id,
            queue_position=position,
            session_context_available=context_available,
            run_id=run_id,
            sandbox=None if role != "read" else sandbox or ("pending" if queued else "instruction"),
            metadata=prepared.metadata,
            parent=None if prepared.parent is None else prepared.parent.label,
            sandbox_off=not queued and self.host.settings.teams.read_sandbox == "off",
            capacity=capacity,
            mode="ray" if runtime == "ray" else "in-process",
        )

    # --- launch --------------------------------------------------------------------------------

    async def _launch(self, prepared: _Prepared, admission: Admission) -> SpawnResult:
        """Launch an admitted spawn through the host's launch pipeline (`_SpawnSteps` is its part)."""
        plan, steps = await self._launch_plan(prepared, admission)
        generation = await self.host.launcher.launch(plan, steps)
        return self._launched(steps, generation)

    async def _launch_many(
        self, admitted: list[tuple[_Prepared, Admission]]
    ) -> list[SpawnResult | OrchestrationError]:
        """Launch admitted spawns together (`Launcher.launch_many`: their rows in one transaction)."""
        if not admitted:
            return []
        launches = [await self._launch_plan(prepared, admission) for prepared, admission in admitted]
        outcomes = await self.host.launcher.launch_many(launches)
        return [
            outcome if isinstance(outcome, OrchestrationError) else self._launched(steps, outcome)
            for (_plan, steps), outcome in zip(launches, outcomes, strict=True)
        ]

    async def _launch_plan(self, prepared: _Prepared, admission: Admission) -> tuple[LaunchPlan, _SpawnSteps]:
        """The launch plan of an admitted spawn and its teams part."""
        host = self.host
        sandbox = await self.read_sandbox(prepared.name) if prepared.tier.role == "read" else None
        sandbox_state: Literal["enforced", "instruction", "none"] = (
            "enforced" if sandbox is not None else ("instruction" if prepared.tier.role == "read" else "none")
        )
        eligible = prepared.allow_nested and prepared.tier.nests_helpers and prepared.depth == 0
        owner_session_id = (
            prepared.lead_session_id if prepared.parent is None else prepared.parent.agent.session.session_id
        )
        stages: list[LaunchStage] = []
        if self._isolated(prepared):
            stages.append(
                IsolationStage(
                    host.extensions,
                    host.kernel.db,
                    name=prepared.name,
                    owner_session_id=prepared.lead_session_id,
                    failure="the spawn failed",
                )
            )
        steps = _SpawnSteps(self, prepared, admission, sandbox, sandbox_state, eligible, owner_session_id)
        return LaunchPlan("spawn_agent", prepared.cwd, stages=stages), steps

    def _launched(self, steps: _SpawnSteps, generation: GenerationRecord) -> SpawnResult:
        return self._result(
            steps.prepared,
            queued=False,
            context_available=steps.context_path is not None,
            sandbox=None if steps.sandbox_state == "none" else steps.sandbox_state,
            run_id=generation.run_id,
            runtime=generation.runtime_kind,
        )

    def _isolated(self, prepared: _Prepared) -> bool:
        """Whether a spawn gets its own worktree: a write tier whose `[teams.tier_isolation]` entry
        (else the top-level `isolation` setting) is `worktree`; nested helpers never do."""
        settings = self.host.settings
        choice = settings.teams.tier_isolation.get(prepared.tier.name, settings.isolation)
        return prepared.tier.role == "write" and prepared.depth == 0 and choice == "worktree"

    def _write_session_context(self, prepared: _Prepared, run_id: str) -> Path | None:
        if prepared.session_context != "lazy":
            return None
        try:
            from ._session_context import build_session_context_snapshot, write_session_context

            text = build_session_context_snapshot(prepared.owner.session)
            directory = self.data_dir(prepared.lead_session_id) / "session-context"
            return write_session_context(directory, prepared.name, run_id, text)
        except Exception:  # fail open: the spawn proceeds without the snapshot
            return None

    def _build_agent(
        self,
        prepared: _Prepared,
        session: SessionManager,
        member: TeamMemberRecord,
        sandbox: ReadOnlySandbox | None,
        *,
        eligible: bool,
    ) -> AgentSession:
        host = self.host
        tools, system_prompt = self._agent_parts(prepared, sandbox, eligible=eligible)
        ref = parse_model_ref(prepared.model_ref)
        info = host.registry.resolve(ref)
        model = host.registry.create_model(info, cwd=prepared.cwd)
        return AgentSession(
            session=session,
            model=model,
            thinking_level=prepared.thinking,  # type: ignore[arg-type]
            tools=tools,
            cwd=prepared.cwd,
            settings=host.settings,
            system_prompt=system_prompt,
            agent_name=prepared.name,
        )

    def _agent_parts(
        self, prepared: _Prepared, sandbox: ReadOnlySandbox | None, *, eligible: bool
    ) -> tuple[list[AgentTool], str]:
        """The member's built-in tools by role and its system prompt (in-process and on Ray alike)."""
        settings = self.host.settings
        read = prepared.tier.role == "read"
        names = list(READ_TIER_TOOL_NAMES) if read else None
        tools: list[AgentTool] = create_builtin_tools(
            prepared.cwd,
            shell_path=settings.shell_path,
            names=names,
            sandbox=sandbox if read else None,
            guard=prepared.read_guard if read else None,
        )
        team = team_name(prepared.lead_session_id)
        if read:
            guidance = _TEAM_GUIDANCE_READ.format(
                name=prepared.name,
                team=team,
                tier=prepared.tier.name,
                sandbox=_SANDBOX_NOTE if sandbox else "",
            )
        else:
            guidance = _TEAM_GUIDANCE_WRITE.format(name=prepared.name, team=team, tier=prepared.tier.name)
        if prepared.parent is not None:
            delegation = _HELPER_DELEGATION.format(parent=prepared.parent.label)
        elif eligible:
            delegation = _PARENT_DELEGATION
        else:
            delegation = _NO_DELEGATION
        common = _TEAM_GUIDANCE_COMMON.format(delegation=delegation)
        system_prompt = build_system_prompt(cwd=prepared.cwd, tools=tools, append=f"{guidance}\n\n{common}")
        return tools, system_prompt

    def runtime_for(self, prepared: _Prepared, *, eligible: bool) -> Literal["inprocess", "ray"]:
        """Where a spawn runs: on Ray when the `runtime` setting says `ray`, else in this process.

        The rule of `delegate` (`Delegation._runtime_for`): agents that delegate — an eligible nested
        parent — and read helpers (they share their parent's process) stay in-process. Teams tiers
        have no `runtime` field, and `runtime = "tmux"` keeps spawns in-process (a running member
        moves to a pane by handoff).
        """
        if self.host.settings.runtime != "ray" or eligible or prepared.depth != 0:
            return "inprocess"
        return "ray"

    # --- host hooks ----------------------------------------------------------------------------

    def released(self, run_id: str) -> None:
        """The host released a generation: give its capacity slot back and drop its snapshot file."""
        self.remote.released(run_id)
        live = self.live.pop(run_id, None)
        if live is None:
            return
        # A member whose report was delivered left its swarm then: this counts only one that had none.
        self._left_without_report(live.lead_session_id, live.run.member.name)
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
            if key in self.pending or key in self.cluster_queue:
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
            and self.repos.roster.undelivered_lead_messages(owner_session_id)
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
        if self.repos.roster.undelivered_lead_messages(lead_session_id):
            self.host.spawn_background(self.control.deliver_lead_messages(lead_session_id))


class _SpawnSteps(LaunchSteps):
    """A teams spawn's part of a launch: the member row, its own launch steps, the `TeamChild` and its live entry.

    Its steps between recording and starting: the group slot runs, the checkpoint's inputs are
    fingerprinted, a continuation's prompt is built, the lazy session-context snapshot is written,
    and the agent is built by tier. A failed launch leaves the capacity slot to the caller.
    """

    def __init__(
        self,
        teams: Teams,
        prepared: _Prepared,
        admission: Admission,
        sandbox: ReadOnlySandbox | None,
        sandbox_state: Literal["enforced", "instruction", "none"],
        eligible: bool,
        owner_session_id: str,
    ) -> None:
        self.teams = teams
        self.prepared = prepared
        self.admission = admission
        self.sandbox = sandbox
        self.sandbox_state = sandbox_state
        self.eligible = eligible
        self.owner_session_id = owner_session_id
        self.member: TeamMemberRecord | None = None
        self.context_path: Path | None = None
        self.source_before: SourceFingerprint | None = None
        self.parent_checkpoint: CheckpointRecord | None = None
        self.mission = prepared.prompt
        """The run's first prompt (a continuation's or with the session-context note), for a worker."""
        self.worker_sandbox: ReadOnlySandbox | None = None

    def record(self, draft: LaunchDraft) -> Recorded:
        """The agent's session, then the generation, its task and the team member row in one transaction."""
        with self.teams.repos.roster.db.write() as tx:
            return self.record_in(tx, draft)

    def record_in(self, tx: Tx, draft: LaunchDraft) -> Recorded:
        """`record` inside `tx` (a swarm's admission: every member in one transaction)."""
        prepared = self.prepared
        prepared.cwd = draft.cwd
        host = self.teams.host
        team = team_name(prepared.lead_session_id)
        session = SessionManager.create(
            prepared.cwd,
            sessions_root=host.sessions_root,
            header_extra={
                "corral": {
                    "managed": True,
                    "team": team,
                    "definition": prepared.tier.name,
                    "label": prepared.name,
                }
            },
        )
        try:
            generation, task, member = self.teams.repos.roster.create_team_generation_in(
                tx,
                NewGeneration(
                    definition=prepared.tier.name,
                    owner_session_id=self.owner_session_id,
                    cwd=str(prepared.cwd),
                    session_id=session.session_id,
                    task=prepared.prompt,
                    label=prepared.name,
                    session_path=None if session.path is None else str(session.path),
                    parent_run_id=None if prepared.parent is None else prepared.parent.run_id,
                    delegating=self.eligible,
                    runtime_kind=self.teams.runtime_for(prepared, eligible=self.eligible),
                    run_id=draft.run_id,
                ),
                NewTeamMember(
                    lead_session_id=prepared.lead_session_id,
                    name=prepared.name,
                    tier=prepared.tier.name,
                    requested_tier=prepared.requested_tier,
                    kind=prepared.tier.role,
                    depth=prepared.depth,
                    parent_run_id=None if prepared.parent is None else prepared.parent.run_id,
                    allow_nested=self.eligible,
                    model=prepared.model_ref,
                    thinking=prepared.thinking,
                    model_source=prepared.model_source,
                    session_context=prepared.session_context,
                    sandbox=self.sandbox_state,
                    metadata=prepared.metadata,
                    prompt=prepared.prompt,
                    group_id=prepared.group_id,
                    slot_id=prepared.slot_id,
                    checkpoint_policy=None if prepared.checkpoint is None else prepared.checkpoint.to_json(),
                    assigned_checks=[spec.to_json() for spec in prepared.checks] or None,
                    repair_policy=(
                        {"maxAttempts": prepared.max_repair_attempts}
                        if prepared.max_repair_attempts
                        else None
                    ),
                    continue_from=prepared.continue_from,
                ),
            )
        except BaseException:
            session.close()
            raise
        self.member = member
        return Recorded(generation, task, session)

    async def build(self, recorded: Recorded) -> ManagedChild:
        """The teams steps before the start, then the agent by tier and its `TeamChild` (made live).

        Returns:
            The kernel's child of the `TeamChild`, for the runtime to run.
        """
        mission, sandbox = await self._before_start(recorded)
        teams, prepared = self.teams, self.prepared
        generation, task, session = recorded.generation, recorded.task, recorded.session
        assert self.member is not None
        agent = teams._build_agent(prepared, session, self.member, sandbox, eligible=self.eligible)
        run = TeamChild(
            store=teams.host.kernel,
            agent=agent,
            generation=generation,
            task=task if mission == prepared.prompt else _with_payload(task, mission),
            hooks=teams.host,
            member=self.member,
            teams=teams,
            delegating=self.eligible,
        )
        # Live for the teams core from here (the host's tools find its `TeamChild` by run id);
        # its capacity slot is released with it, also when the launch is rolled back.
        teams.live[generation.run_id] = _Live(
            run=run,
            admission=self.admission,
            lead_session_id=prepared.lead_session_id,
            context_path=self.context_path,
            source_before=self.source_before,
            parent_checkpoint=self.parent_checkpoint,
        )
        return run.child

    async def before_worker(self, recorded: Recorded) -> None:
        """On Ray: the same steps before the start as in-process (the worker gets the mission)."""
        self.mission, self.worker_sandbox = await self._before_start(recorded)

    def worker_launch(self, recorded: Recorded) -> WorkerLaunch:
        """A Ray worker's description of the member: its agent as built here (system prompt, model,
        thinking, tool names, sandbox), teams' part (its member row and mission) and workspaces'
        (in place).

        The capacity slot is held for the run from here until its generation is released.
        """
        from corral.orchestration.host.protocol import BuiltAgent, WorkerLaunch
        from corral.orchestration.teams.launch import MemberLaunch
        from corral.orchestration.workspaces._snapshot import identify
        from corral.orchestration.workspaces.records import WorkspaceLaunch

        teams, prepared = self.teams, self.prepared
        assert self.member is not None
        _tools, system_prompt = teams._agent_parts(prepared, self.worker_sandbox, eligible=self.eligible)
        read = prepared.tier.role == "read"
        teams.remote.admit(recorded.generation.run_id, prepared.lead_session_id, self.admission)
        agent = BuiltAgent(
            model=prepared.model_ref,
            thinking=prepared.thinking,  # type: ignore[arg-type]
            system_prompt=system_prompt,
            tools=READ_TIER_TOOL_NAMES if read else None,
            sandbox=read and self.worker_sandbox is not None,
        )
        workspace = identify(Path(recorded.generation.cwd), tree=False)
        return WorkerLaunch(
            agent,
            context_retirement=teams.host.context_retirement,
            parts=(
                MemberLaunch(self.member, mission=self.mission),
                WorkspaceLaunch(workspace, mode="shared", writes=not read),
            ),
        )

    async def _before_start(self, recorded: Recorded) -> tuple[str, ReadOnlySandbox | None]:
        """The group slot runs, the checkpoint's inputs, a continuation's prompt and the lazy
        session-context snapshot: the run's mission and its read sandbox."""
        teams, prepared = self.teams, self.prepared
        repos = teams.repos
        generation = recorded.generation
        assert self.member is not None
        if prepared.slot_id is not None:
            teams.groups.running(prepared.slot_id, generation.run_id)
        mission = prepared.prompt
        if prepared.checkpoint is not None:
            self.source_before = await teams.checkpoints.capture_before(prepared.cwd, prepared.checkpoint)
            repos.roster.set_checkpoint_source(generation.run_id, self.source_before.to_json())
        if prepared.continue_from is not None:
            self.parent_checkpoint = teams.checkpoints.load(prepared.continue_from)
            continuation = await teams.checkpoints.continuation(
                self.parent_checkpoint,
                cwd=prepared.cwd,
                prompt=prepared.prompt,
                source_before=self.source_before,
            )
            mission = texts.continuation_prompt(continuation)
        context_path = teams._write_session_context(prepared, generation.run_id)
        self.context_path = context_path
        sandbox = self.sandbox
        if context_path is not None:
            pointer = texts.session_context(SessionContextAttached(context_path))
            mission = f"{mission}\n\n{pointer}"
            repos.roster.set_session_context_path(generation.run_id, str(context_path))
        if sandbox is not None and context_path is not None:  # its snapshot lives under $CORRAL_HOME
            sandbox = sandbox.with_policy(replace(sandbox.policy, read_files=(context_path,)))
            prepared.read_guard = None  # another policy: another view
        return mission, sandbox

    def rolled_back(self, recorded: Recorded) -> None:
        """The caller fails the admission: the release that follows must not give the slot back."""
        live = self.teams.live.get(recorded.generation.run_id)
        if live is not None:
            live.admission = None
        self.teams.remote.admissions.pop(recorded.generation.run_id, None)


def _generated_name(suffix: str = "") -> str:
    stamp = _base36(int(time.time() * 1000))
    middle = f"-{suffix}" if suffix else ""
    return f"agent-{stamp}{middle}-{uuid.uuid4().hex[:8]}"


def _base36(value: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        value, rem = divmod(value, 36)
        out = digits[rem] + out
        if value == 0:
            return out


def _with_payload(task: Any, payload: str) -> Any:
    return replace(task, payload=payload)
