"""What the teams core answers: typed results that the teams surface renders for the model.

The core decides and records; `surfaces/teams/_render.py` turns these into the
text the model reads and into the tool result's JSON details (`*_details`
there: camelCase keys, omitted keys where the contract omits them). A report's
verification and repair are typed (`ReportVerification`, `RepairResult`); the
model sees them in the shape the report's result stores (their `to_json`).
Two fields stay mappings because they are genuinely open: a spawn's free-form
`metadata` (the caller's, echoed as given) and the `fields` host extensions
add to status (`HostExtension.status_fields`; e.g. a budget), each extension's
to shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from corral.mcp_servers import McpReport
    from corral.orchestration.errors import ErrorCategory
    from corral.orchestration.teams._status import TeamPhase
    from corral.orchestration.teams.checks.records import CheckRecord
    from corral.orchestration.teams.messages.records import TeamMessageRecord
    from corral.orchestration.teams.repair._verification import VerificationDecision
    from corral.orchestration.teams.repair.records import RepairResult, ReportVerification
    from corral.orchestration.teams.roster.records import FileClaimRecord, TeamMemberKind, TeamReportRecord

__all__ = [
    "AgentSnapshot",
    "ClaimResult",
    "ClaimsList",
    "CompletedSnapshot",
    "FailedSnapshot",
    "InboxResult",
    "InterruptResult",
    "MemberSnapshot",
    "MessageSent",
    "QueuedSnapshot",
    "ReleaseResult",
    "ReportFacts",
    "ReportReceipt",
    "SpawnResult",
    "StatusSnapshot",
    "StopResult",
    "SwarmFailure",
    "SwarmResult",
    "TeammateHealth",
    "Teardown",
]


@dataclass(frozen=True, slots=True)
class SpawnResult:
    """One agent started or queued (`Spawner.spawn`)."""

    name: str
    """The agent's name."""
    session: str
    """The team's name."""
    role: Literal["read", "write"]
    """Its tier's role."""
    requested_slot: str
    """The model slot the caller asked for, as given."""
    model_slot: str
    """The model slot (tier) it runs in."""
    model: str
    """The model it runs on (`provider/model`)."""
    thinking: str
    """Its thinking level."""
    model_source: str
    """Where the model came from (the tier's setting, the lead's model, …)."""
    session_context: Literal["none", "lazy"]
    """Whether it gets a snapshot of the lead's session (`lazy`)."""
    cwd: str
    """Its working directory."""
    _: KW_ONLY
    mode: Literal["in-process", "ray"] = "in-process"
    """Where it runs: in the lead's process, or on a Ray worker (`runtime = "ray"`)."""
    queued: bool = False
    """It waits for a free slot."""
    queue_id: str | None = None
    """Its reservation in the capacity queue (queued only)."""
    queue_position: int | None = None
    """Its place in the capacity queue (queued only)."""
    session_context_available: bool = False
    """The session snapshot was written for it (started only)."""
    run_id: str | None = None
    """Its run (started only)."""
    sandbox: Literal["enforced", "instruction", "pending"] | None = None
    """A read agent's read sandbox: enforced, an instruction only, or built when it starts (queued);
    `None` for a write agent."""
    metadata: Mapping[str, object] | None = None
    """The caller's metadata, as given (free-form JSON the caller owns, so it stays a mapping)."""
    parent: str | None = None
    """The label of the agent that spawned it (a nested read helper)."""
    sandbox_off: bool = False
    """The read sandbox is turned off in the settings (`teams.read_sandbox = "off"`)."""
    capacity: tuple[int, int] | None = None
    """A queued agent's kind: `(active, limit)` when it was queued; `None` when unknown or started."""
    mcp: McpReport | None = None
    """What it got of its MCP servers (started only; `None`: none is configured)."""


@dataclass(frozen=True, slots=True)
class SwarmFailure:
    """A swarm member that was not admitted."""

    name: str
    """The member's name."""
    error: str
    """Why, one line."""
    category: ErrorCategory = "invalid_request"
    """The public error category of why (`invalid_request`, `agent_busy`, …)."""


@dataclass(frozen=True, slots=True)
class SwarmResult:
    """A swarm's admissions, in the request's order (`Spawner.spawn_swarm`)."""

    members: tuple[SpawnResult | SwarmFailure, ...]
    """Each member's result."""
    session: str
    """The team's name."""
    _: KW_ONLY
    completion_group: tuple[str, str] | None = None
    """`(group id, delivery)` when the swarm forms a completion group."""

    @property
    def failed(self) -> bool:
        """Every member failed to spawn: the tool result is an error."""
        return not any(isinstance(member, SpawnResult) for member in self.members)

    @property
    def category(self) -> ErrorCategory | None:
        """A swarm that started no member fails as a whole: the category its members' failures share,
        else `invalid_request` (they failed for different reasons); `None` when a member started."""
        if not self.failed:
            return None
        shared = {member.category for member in self.members if isinstance(member, SwarmFailure)}
        return shared.pop() if len(shared) == 1 else "invalid_request"


@dataclass(frozen=True, slots=True)
class ReportReceipt:
    """What `report_and_exit` answers the agent (`Teams.submit_report`)."""

    kind: Literal["accepted", "repair", "duplicate"]
    """Accepted (the work ends), not accepted yet (a repair attempt is due), or a duplicate (ignored)."""
    _: KW_ONLY
    decision: VerificationDecision | None = None
    """What verifying the report decided (assigned checks), when it was verified."""
    report: TeamReportRecord | None = None
    """The stored report (accepted only)."""

    @property
    def accepted(self) -> bool:
        """The report was accepted: the agent's work is over."""
        return self.kind == "accepted"


@dataclass(frozen=True, slots=True)
class MessageSent:
    """A stored (and, for a listening agent, injected) message (`TeamMessages.send_message`)."""

    recipient: str
    """Who gets it (`team-lead` or an agent's name)."""
    session: str
    """The team's name."""
    delivery: Literal["inbox", "active-session"]
    """Stored in the inbox, or also injected into the recipient's running session."""


@dataclass(frozen=True, slots=True)
class InboxResult:
    """The messages read from one inbox (`TeamMessages.read_inbox`)."""

    target: str
    """Whose inbox."""
    unread_only: bool
    """Only unread messages were asked for."""
    messages: tuple[TeamMessageRecord, ...]
    """The messages, oldest first."""
    session: str
    """The team's name."""
    mark_as_read: bool
    """The messages read were marked read."""


@dataclass(frozen=True, slots=True)
class ClaimResult:
    """All-or-nothing file claims (`Teams.claim_files`)."""

    granted: tuple[str, ...]
    """The paths claimed (empty when any path was held)."""
    conflicts: tuple[tuple[str, str], ...]
    """`(path, holder)` of each path another agent holds."""
    agent: str
    """The claiming agent's label."""
    session: str
    """The team's name."""


@dataclass(frozen=True, slots=True)
class ReleaseResult:
    """Released file claims (`Teams.release_files`)."""

    released: tuple[str, ...]
    """The paths released (those the caller held)."""


@dataclass(frozen=True, slots=True)
class ClaimsList:
    """Every file claim of a team (`Teams.list_file_claims`)."""

    claims: tuple[FileClaimRecord, ...]
    """The claims."""


@dataclass(frozen=True, slots=True)
class Teardown:
    """How stopping one run ended (`TeamControl.teardown`)."""

    status: Literal["settled", "cleanup_failed", "timed_out"]
    """Settled and finalized, cleanup failed, or the run did not settle in time."""
    reason: str
    """Why the run was stopped."""
    _: KW_ONLY
    error: str | None = None
    """Why cleanup did not complete (not settled only)."""
    quarantined: bool = False
    """The agent's name is fenced until cleanup completes."""
    released_claims: tuple[str, ...] = ()
    """The file claims released by finalizing the run (settled only)."""

    @property
    def stopped(self) -> bool:
        """The run settled and was finalized."""
        return self.status == "settled"


@dataclass(frozen=True, slots=True)
class StopResult:
    """What `stop_teammate` did (`Teams.stop_teammate`)."""

    name: str
    """The agent's name."""
    outcome: Literal[
        "cancelled-queued", "not-active", "reported", "stopped", "quarantined", "cleanup-blocked"
    ]
    """Cancelled before it started, nothing to stop, already reported, stopped, or stopped but its cleanup
    did not complete (quarantined or blocked)."""
    session: str
    """The team's name."""
    _: KW_ONLY
    reason: str | None = None
    """The lead's reason, as given."""
    teardown: Teardown | None = None
    """How stopping the running agent ended (`stopped`, `quarantined`, `cleanup-blocked` only)."""

    @property
    def stopped(self) -> bool:
        """The agent was stopped (or cancelled while queued)."""
        return self.outcome in ("cancelled-queued", "stopped")

    @property
    def error(self) -> str | None:
        """Why cleanup did not complete."""
        return None if self.teardown is None else self.teardown.error


@dataclass(frozen=True, slots=True)
class InterruptResult:
    """What `interrupt_teammate` did (`Teams.interrupt_teammate`)."""

    name: str
    """The agent's name."""
    status: Literal["interrupted", "pending", "no_command", "not_found", "closing", "tmux"]
    """Interrupted, still pending, nothing running, not active, closing, or running in a tmux pane."""
    session: str
    """The team's name."""
    _: KW_ONLY
    agent_kind: TeamMemberKind | None = None
    """The live agent's kind (`read` or `write`); `None` when no in-process agent was found."""
    run_id: str | None = None
    """The live agent's run; `None` when no in-process agent was found."""


@dataclass(frozen=True, slots=True)
class ReportFacts:
    """A stored report as status shows it, with its verification and repair observed now."""

    task_id: str
    """The task the report closes."""
    report_id: str
    """The report's id."""
    outcome: str | None
    """The agent's own outcome (`None`: unspecified)."""
    effective_outcome: str | None
    """The outcome after repair (a blocker repair added), else the agent's own."""
    verification: ReportVerification
    """Its verification as observed now."""
    acceptance: str
    """The lead's decision: `pending`, `accepted`, …"""
    acceptance_reason: str | None
    """Why, when the lead gave a reason."""
    summary: str | None
    """The report's summary line."""
    report_status: str
    """`completed` or `failed`."""
    repair: RepairResult | None = None
    """Its repair decision as observed now (rebuilt from the repair ledger), when it was repaired."""

    @property
    def verification_state(self) -> str:
        """`not-requested`, `pending`, `passed`, `failed` or `stale`."""
        return self.verification.state


@dataclass(frozen=True, slots=True)
class MemberSnapshot:
    """A live member of the scope: its phase (`member_status`) and what is known of its run now."""

    name: str
    """The agent's name."""
    role: TeamMemberKind
    """`read` or `write`."""
    model_slot: str
    """Its model slot (tier)."""
    model: str
    """Its model."""
    run_id: str
    """Its run."""
    phase: TeamPhase
    """What it is doing now."""
    _: KW_ONLY
    in_pane: bool = False
    """It works on in another process (phase `working`): a tmux pane it was handed off to, or a
    Ray worker actor."""
    pane_id: str | None = None
    """That pane, or the Ray worker (`ray:<actor>@<node ip>`), when known."""
    error: str | None = None
    """Why its run is gone, when the host marked it lost."""
    live: bool = False
    """This process runs it and its live facts below are current (not quarantined or stopping)."""
    activity_age_ms: int | None = None
    """Time since its last recorded activity (live, when it recorded any)."""
    active_tool: str | None = None
    """The tool it is running (live)."""
    rate_limit: str | None = None
    """`waiting (rate limit, Ns)`: its model request waits for the endpoint's limiter (from memory when
    live, else the wait its run in another process stored)."""
    awaiting_message: bool = False
    """Interrupted in another process, waiting for a message."""
    report: ReportFacts | None = None
    """The report it submitted, while that report is being delivered."""
    fields: Mapping[str, object] = field(default_factory=dict)
    """What host extensions add to status (e.g. its budget: spent / limit): open, each extension shapes
    its own (`HostExtension.status_fields`)."""


@dataclass(frozen=True, slots=True)
class QueuedSnapshot:
    """A spawn of the scope waiting for capacity."""

    name: str
    """The agent's name."""
    role: Literal["read", "write"]
    """Its tier's role."""
    model_slot: str
    """Its model slot (tier)."""
    queue_position: int | None
    """Its place in the capacity queue, when known."""
    queued_age_ms: int
    """How long it has waited."""

    @property
    def phase(self) -> Literal["queued"]:
        """Always `queued`."""
        return "queued"


@dataclass(frozen=True, slots=True)
class FailedSnapshot:
    """A queued spawn that could not start (the capacity controller's recent failures)."""

    name: str
    """The agent's name."""
    role: Literal["read", "write"]
    """Its role."""
    error: str
    """Why it did not start."""
    completed_age_ms: int
    """How long ago it failed."""

    @property
    def phase(self) -> Literal["failed"]:
        """Always `failed`."""
        return "failed"


@dataclass(frozen=True, slots=True)
class CompletedSnapshot:
    """A recent completion of the scope: an agent that left, with the report it stored."""

    name: str
    """The agent's name."""
    role: TeamMemberKind
    """`read` or `write`."""
    model_slot: str
    """Its model slot (tier)."""
    phase: Literal["completed", "failed"]
    """How its run ended (the report's status)."""
    run_id: str
    """Its run."""
    completed_age_ms: int
    """How long ago it reported."""
    report: ReportFacts
    """Its report."""
    _: KW_ONLY
    fields: Mapping[str, object] = field(default_factory=dict)
    """What host extensions add to status (e.g. its budget: spent / limit): open, each extension shapes
    its own (`HostExtension.status_fields`)."""


AgentSnapshot = MemberSnapshot | QueuedSnapshot | FailedSnapshot | CompletedSnapshot
"""One agent in a status snapshot: live, queued, failed to start, or recently completed."""


@dataclass(frozen=True, slots=True)
class StatusSnapshot:
    """One read-only snapshot of a scope's agents (`TeamControl.status`)."""

    session: str
    """The team's name."""
    agents: tuple[AgentSnapshot, ...]
    """Live members (oldest first), queued spawns, failed starts, then recent completions."""


@dataclass(frozen=True, slots=True)
class TeammateHealth:
    """One agent's health, or the report it left (`Teams.check_teammate`)."""

    name: str
    """The agent's name."""
    health: Literal["healthy", "starting", "stopping", "dead", "quarantined", "left"]
    """`healthy`, `starting`, `stopping`, `dead`, `quarantined`, or `left` (no longer running)."""
    _: KW_ONLY
    alive: bool = False
    """Its run is going on (in this process or in a tmux pane)."""
    unread: int = 0
    """Its unread inbox messages."""
    loop_ready: bool = False
    """Its in-process agent loop acknowledged the start."""
    run_id: str | None = None
    """Its run (a live agent)."""
    phase: str | None = None
    """Its generation's phase (a live agent; `None` when there is no generation)."""
    error: str | None = None
    """The generation's diagnostic, when it recorded one."""
    report: TeamReportRecord | None = None
    """The persisted report of an agent that left."""
    facts: ReportFacts | None = None
    """That report as status shows it, observed now (an agent that left)."""
    checks: tuple[CheckRecord, ...] = ()
    """The records of that report's verification checks (an agent that left)."""
