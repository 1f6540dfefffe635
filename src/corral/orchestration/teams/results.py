"""What the teams core answers: typed results that the teams surface renders for the model.

The core decides and records; `surfaces/teams/_render.py` turns these into the
text the model reads and into the tool result's JSON details (`*_details`
there: camelCase keys, omitted keys where the contract omits them). Results
still carrying a `details` dict (spawn, status, health) hold it in the
contract's shape until they get typed fields too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from corral.orchestration.teams.repair._verification import VerificationDecision
    from corral.orchestration.teams.roster.records import (
        FileClaimRecord,
        TeamMemberKind,
        TeamMessageRecord,
        TeamReportRecord,
    )

__all__ = [
    "ClaimResult",
    "ClaimsList",
    "InboxResult",
    "InterruptResult",
    "MessageSent",
    "ReleaseResult",
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
    """One agent started or queued (`Teams.spawn`)."""

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
    """The caller's metadata, as given."""
    parent: str | None = None
    """The label of the agent that spawned it (a nested read helper)."""
    sandbox_off: bool = False
    """The read sandbox is turned off in the settings (`teams.read_sandbox = "off"`)."""
    capacity: tuple[int, int] | None = None
    """A queued agent's kind: `(active, limit)` when it was queued; `None` when unknown or started."""


@dataclass(frozen=True, slots=True)
class SwarmFailure:
    """A swarm member that was not admitted."""

    name: str
    """The member's name."""
    error: str
    """Why, one line."""


@dataclass(frozen=True, slots=True)
class SwarmResult:
    """A swarm's admissions, in the request's order (`Teams.spawn_swarm`)."""

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
    """A stored (and, for a listening agent, injected) message (`Teams.send_message`)."""

    recipient: str
    """Who gets it (`team-lead` or an agent's name)."""
    session: str
    """The team's name."""
    delivery: Literal["inbox", "active-session"]
    """Stored in the inbox, or also injected into the recipient's running session."""


@dataclass(frozen=True, slots=True)
class InboxResult:
    """The messages read from one inbox (`Teams.read_inbox`)."""

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
class StatusSnapshot:
    """One read-only snapshot of a scope's agents (`Teams.status`)."""

    agents: tuple[dict[str, Any], ...]
    """Each agent's snapshot (`name`, `phase`, `role`, …), as in `details["agents"]`."""
    details: dict[str, Any]
    """The `get_agent_status` details (`session`, `agents`)."""


@dataclass(frozen=True, slots=True)
class TeammateHealth:
    """One agent's health, or the report it left (`Teams.check_teammate`)."""

    name: str
    """The agent's name."""
    health: str
    """`healthy`, `starting`, `stopping`, `dead`, `quarantined`, or `left` (no longer running)."""
    details: dict[str, Any]
    """The `check_teammate` details."""
    _: KW_ONLY
    report: TeamReportRecord | None = None
    """The persisted report of an agent that left."""
