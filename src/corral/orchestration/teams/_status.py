"""The phase of a teams agent: one pure projection, shared by `get_agent_status` and the terminal app.

`member_status` reads a live member's roster row, its generation and its in-process run (if this
process has one) and says what the agent is doing now. The rules, in order:

* `quarantined` while a teardown did not settle (the roster's fence);
* with no in-process run: `working` when it was handed off to a tmux pane (`h`), `finishing` when its
  generation ended (completed, or its result could not be stored) and the report is on its way, else
  `stalled` (its run is gone; `lost_reason` says why when the host marked it lost);
* `stopping` once message admission closed without an accepted report;
* else the run's own phase (`starting`, `thinking`, `working`, `waiting`, `finishing`), turned into
  `stalled` when a thinking or working run recorded no activity for `STALLED_AFTER_MS`.

`TeamSnapshot` is what one refresh reads from the store (members and their generations), so the app
can re-project every second from memory; `TeamAgentRow` is one of the lead's agents as a front end
shows it — a live member with its status, or a queued spawn with its position.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

if TYPE_CHECKING:
    from corral.agent import ContextUsage, RateLimitWaitEvent
    from corral.orchestration.kernel.records import GenerationRecord
    from corral.orchestration.teams.roster.records import TeamMemberKind, TeamMemberRecord

__all__ = [
    "STALLED_AFTER_MS",
    "LivePhase",
    "LiveRun",
    "MemberStatus",
    "TeamAgentRow",
    "TeamPhase",
    "TeamSnapshot",
    "member_status",
]

STALLED_AFTER_MS = 15 * 60 * 1000
"""An in-process agent thinking or working with no recorded activity for this long is `stalled`."""

LivePhase = Literal["starting", "thinking", "working", "waiting", "finishing"]
"""The phase of an in-process teams run, from memory alone (`TeamChild.phase`)."""


class LiveRun(Protocol):
    """What the projection reads of an in-process run (a `TeamChild`)."""

    @property
    def messages_open(self) -> bool: ...
    @property
    def report_accepted(self) -> bool: ...
    @property
    def interrupted(self) -> bool: ...
    @property
    def active_tool(self) -> str | None: ...
    @property
    def rate_limit_wait(self) -> RateLimitWaitEvent | None: ...
    def phase(self) -> LivePhase: ...


TeamPhase = Literal[
    "quarantined", "starting", "thinking", "working", "waiting", "finishing", "stalled", "stopping"
]
"""The phase of a live teams agent (`get_agent_status`'s `phase`, the app's state word)."""


@dataclass(frozen=True, slots=True)
class MemberStatus:
    """What a live teams agent is doing now (see the module docstring for the rules)."""

    phase: TeamPhase
    in_process: bool
    """Whether this process runs it (its live facts below are known)."""
    pane_id: str | None = None
    """The tmux pane it was handed off to (phase `working`, not in process)."""
    lost_reason: str | None = None
    """Why its run is gone, when the host marked it lost (not in process)."""
    activity_age_ms: int | None = None
    """Time since its last recorded activity (in process, when it recorded any)."""
    active_tool: str | None = None
    """The tool it is running (in process)."""
    interrupted: bool = False
    """It was interrupted and waits for a message (in process)."""
    rate_limit: str | None = None
    """`waiting (rate limit, Ns)` while its model request waits for the endpoint's shared limiter (in process)."""


def member_status(
    member: TeamMemberRecord, generation: GenerationRecord | None, child: LiveRun | None, *, now_ms: int
) -> MemberStatus:
    """Project a live member's phase from its roster row, generation and in-process run.

    Args:
        member: The member's roster row.
        generation: Its generation (`None` when there is none to read).
        child: Its in-process run, or `None` when this process does not run it.
        now_ms: The current time (Unix ms), for the stall rule.
    """
    if member.fence == "quarantined":
        return MemberStatus("quarantined", in_process=child is not None)
    if child is None:
        if generation is not None and (generation.runs_in_pane or generation.runs_on_ray):
            # Its worker (a tmux pane, or a Ray worker actor: `ray:<actor>@<node>`) runs it.
            return MemberStatus("working", in_process=False, pane_id=generation.pane_id)
        lost = None
        if generation is not None and generation.presence == "lost":
            lost = generation.diagnostic or "its run is gone"
        if generation is None or generation.phase in ("completed", "result_error"):
            return MemberStatus("finishing", in_process=False, lost_reason=lost)
        return MemberStatus("stalled", in_process=False, lost_reason=lost)
    if not child.messages_open and not child.report_accepted:
        return MemberStatus("stopping", in_process=True)
    live = child.phase()
    activity = None if generation is None else generation.last_activity_at
    age = None if activity is None else now_ms - activity
    stalled = age is not None and age > STALLED_AFTER_MS and live in ("thinking", "working")
    wait = child.rate_limit_wait
    return MemberStatus(
        "stalled" if stalled else live,
        in_process=True,
        activity_age_ms=age,
        active_tool=child.active_tool,
        interrupted=child.interrupted,
        rate_limit=None if wait is None else wait.describe(now_ms),
    )


@dataclass(frozen=True, slots=True)
class TeamSnapshot:
    """The lead's teams members and their live generations as one refresh read them from the store.

    A front end reads it when the host changes, not on its clock; only when an active member's
    recorded activity is old enough to make it `stalled` does it read again, since a child records
    activity without notifying anyone.
    """

    lead_session_id: str
    members: tuple[TeamMemberRecord, ...]
    generations: dict[str, GenerationRecord]

    def may_stall(self, now_ms: int) -> bool:
        """Whether some member's recorded activity is older than the stall limit at `now_ms`."""
        return any(
            g.last_activity_at is not None and now_ms - g.last_activity_at > STALLED_AFTER_MS
            for g in self.generations.values()
            if g.phase == "active"
        )


@dataclass(frozen=True, slots=True)
class TeamAgentRow:
    """One of the lead's own teams agents (not a nested helper) as a front end lists it."""

    name: str
    tier: str
    kind: TeamMemberKind
    """`read` or `write` (the tier's role)."""
    model: str
    thinking: str
    since_ms: int
    """When it was spawned (a member) or queued (a queued spawn), Unix ms."""
    status: MemberStatus | None
    """Its phase; `None` for a queued spawn."""
    generation: GenerationRecord | None = None
    """Its generation as the snapshot read it (a member)."""
    fence_reason: str | None = None
    """Why its name is fenced (a quarantined member)."""
    run_id: str | None = None
    """Its run (a member)."""
    context: ContextUsage | None = None
    """Its context window use (in process)."""
    helpers: int = 0
    """How many of its nested read helpers are running."""
    queue_position: int | None = None
    """Its place in the capacity queue (a queued spawn), when known."""

    @property
    def queued(self) -> bool:
        """Whether it is a spawn still waiting for capacity."""
        return self.status is None
