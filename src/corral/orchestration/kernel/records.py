"""Typed rows of the orchestration store.

Every table of the store has one frozen, slotted `*Record` dataclass here, and
the store turns rows into records in exactly one place (`_store._*_from_row`).
Timestamps are Unix milliseconds (UTC). Ids (`run_id`, `request_id`, `ask_id`)
are UUID4 strings chosen by the store.

Statuses are `Literal` aliases rather than enums because they are public
strings of the tool contract (`spec/agent-api-detail.md` §3, §4) and travel
into tool results unchanged.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass
from pathlib import Path
from typing import Literal

from corral.orchestration.definitions._roster import RuntimeKind

__all__ = [
    "AckCode",
    "AskRecord",
    "AskState",
    "DeliveryState",
    "GenerationPhase",
    "GenerationRecord",
    "NewGeneration",
    "Presence",
    "RequestKind",
    "RequestRecord",
    "ResultArtifactRecord",
    "ResultErrorCode",
    "ResultRecord",
    "ResultStatus",
    "StoreSnapshot",
    "WatchedRun",
]

GenerationPhase = Literal["starting", "active", "completed", "result_error", "finalized"]
"""Durable progress of a generation's single assignment.

`starting`: created, task not yet acknowledged. `active`: the task was accepted
(`active_request_id` set). `completed`: a result row is durable
(`completed_request_id` set). `result_error`: the result could not be
persisted (cleanup-safe, retry-unsafe). `finalized`: torn down; the label is
free again and the row is history.
"""

Presence = Literal["live", "lost", "unknown"]
"""Whether a generation's physical execution is there (`live`), proven absent
(`lost`) or unprovable (`unknown`)."""

RequestKind = Literal["task", "steer", "interrupt", "reply"]
"""Kinds of controller → agent requests. Exactly one `task` per generation."""

AckCode = Literal["busy", "idle", "invalid", "identity", "delivery", "ambiguous"]
"""Why a child rejected a request (`spec/agent-api-detail.md` §4.2)."""

AskState = Literal["pending", "answered", "abandoned"]
"""State of an `ask_owner` question."""

ResultStatus = Literal["completed", "failed"]
"""Terminal status of an assignment's result."""

ResultErrorCode = Literal["empty_result", "result_too_large", "write_failure"]
"""Why a result is `failed`."""

DeliveryState = Literal["pending", "delivered"]
"""Whether a result's entry is persisted in the owner's session."""


@dataclass(frozen=True, slots=True)
class NewGeneration:
    """What the controller knows when it starts a generation (input to `Generations.create_generation`)."""

    definition: str
    """Name of the effective agent definition."""
    owner_session_id: str
    """Session id of the direct owner (the lead or a delegating agent)."""
    cwd: str
    """Working directory of the agent."""
    session_id: str
    """Session id the agent runs in (new, forked or continued)."""
    task: str
    """Prepared task text (the payload of the generation's single `task` request)."""
    _: KW_ONLY
    label: str | None = None
    """Explicit label; `None` picks `<definition>`, `<definition>-2`, … `<definition>-999`."""
    session_path: str | None = None
    """Session file path, when already known."""
    parent_run_id: str | None = None
    """Run id of the owning generation when the owner is a delegating agent."""
    delegating: bool = False
    """Whether this generation may delegate (lead-owned delegating agents only)."""
    runtime_kind: RuntimeKind = "inprocess"
    """Runtime that will host the agent session."""
    run_id: str | None = None
    """A run id chosen before the generation exists (an isolated agent's worktree and branch are
    named after it); `None` makes a new one."""


@dataclass(frozen=True, slots=True)
class GenerationRecord:
    """One execution of one agent for one assignment (table `generations`)."""

    run_id: str
    """UUID of this generation."""
    label: str
    """Logical live identity (`^[a-z][a-z0-9_-]{0,31}$`)."""
    definition: str
    """Effective definition name at launch."""
    owner_session_id: str
    """Session id of the direct owner."""
    parent_run_id: str | None
    """Run id of the owning generation, if the owner is a managed agent."""
    parent_label: str | None
    """Label of the owning generation at creation time."""
    delegating: bool
    """Whether this generation may delegate."""
    cwd: str
    """Working directory."""
    session_id: str
    """Agent session id (the continuation identity)."""
    session_path: str | None
    """Agent session file, once known."""
    runtime_kind: RuntimeKind
    """Where the agent runs."""
    pid: int | None
    """Process id of the agent's worker (tmux/worker runtimes)."""
    host_id: str | None
    """Identity of the host process/machine that runs it."""
    pane_id: str | None
    """Terminal pane id (tmux runtime)."""
    phase: GenerationPhase
    """Durable assignment progress."""
    presence: Presence
    """Recorded presence verdict (`live` means no recorded loss or doubt)."""
    active_request_id: str | None
    """The accepted task request while the assignment runs."""
    completed_request_id: str | None
    """The task request whose result is durable."""
    created_at: int
    """Row creation time (ms)."""
    started_at: int | None
    """When the runtime reported the agent started (ms)."""
    finalized_at: int | None
    """When the generation was torn down (ms)."""
    last_activity_at: int | None
    """Last qualifying progress of an active assignment (ms)."""
    updated_at: int
    """Last change to the row (ms)."""
    tokens: int | None
    """Context tokens last reported by the agent."""
    cleanup_error: str | None
    """Cleanup warning surfaced after teardown."""
    result_error: str | None
    """Why the result could not be persisted (phase `result_error`)."""
    diagnostic: str | None
    """Short (≤256 chars) reason for a `lost`/`unknown` verdict."""

    @property
    def live(self) -> bool:
        """Whether the generation is not finalized (it still holds its label)."""
        return self.phase != "finalized"

    @property
    def runs_in_pane(self) -> bool:
        """Whether it works on in a tmux pane (e.g. moved there by a handoff) and is not known to be lost."""
        return self.runtime_kind == "tmux" and self.phase == "active" and self.presence != "lost"

    @property
    def runs_on_ray(self) -> bool:
        """Whether it works on in a Ray worker actor and is not known to be lost."""
        return self.runtime_kind == "ray" and self.phase == "active" and self.presence != "lost"


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """A controller → agent request (table `requests`)."""

    request_id: str
    """UUID of the request (for a task: the assignment id)."""
    run_id: str
    """Generation it is addressed to."""
    kind: RequestKind
    """Request kind."""
    ask_id: str | None
    """The ask a `reply` answers (set iff `kind == "reply"`)."""
    payload: str
    """Prepared text (non-blank)."""
    created_at: int
    """When it was recorded (ms)."""
    delivered_at: int | None
    """When the child first injected it (at-least-once; may precede the ack)."""
    acknowledged_at: int | None
    """When the child acknowledged it (ms)."""
    accepted: bool | None
    """Ack outcome; `None` while unacknowledged."""
    ack_code: AckCode | None
    """Rejection code (set iff `accepted is False`)."""
    ack_message: str | None
    """Optional rejection detail."""

    @property
    def acknowledged(self) -> bool:
        """Whether the child acknowledged the request (either way)."""
        return self.acknowledged_at is not None


@dataclass(frozen=True, slots=True)
class AskRecord:
    """An agent → owner question (table `asks`)."""

    ask_id: str
    """UUID of the question."""
    run_id: str
    """Generation that asked."""
    request_id: str
    """The active assignment (task request id) at the time of asking."""
    question: str
    """Prepared question text (non-blank)."""
    state: AskState
    """`pending` until answered or abandoned."""
    reply: str | None
    """Accepted reply text (state `answered`)."""
    created_at: int
    """When it was asked (ms)."""
    resolved_at: int | None
    """When it was answered or abandoned (ms)."""
    delivered_entry_id: str | None
    """Entry id of the ask message in the owner's session, once delivered."""


@dataclass(frozen=True, slots=True)
class ResultRecord:
    """The terminal result of an assignment (table `results`; one per request, one per generation)."""

    request_id: str
    """The task request this result answers."""
    run_id: str
    """Generation that produced it."""
    owner_session_id: str
    """Owner it must be delivered to (copied from the generation)."""
    status: ResultStatus
    """`completed` or `failed`."""
    text: str | None
    """Inline result text (`None` when failed or when stored as an artifact file)."""
    artifact_path: Path | None
    """File holding the text when it was too large to keep inline."""
    error_code: ResultErrorCode | None
    """Why it failed (set iff `status == "failed"`)."""
    error_message: str | None
    """Human-readable failure reason."""
    context_tokens: int | None
    """Context usage of the agent when it finished."""
    created_at: int
    """When the result became durable (ms)."""
    delivery: DeliveryState
    """Whether the owner's session holds the result entry."""
    delivered_entry_id: str | None
    """Entry id of that session entry."""
    delivered_at: int | None
    """When delivery was recorded (ms)."""


@dataclass(frozen=True, slots=True)
class ResultArtifactRecord:
    """A result's text as a private file, for `result:<request-id>` references (table `result_artifacts`)."""

    request_id: str
    """Result it belongs to."""
    path: Path
    """`<data root>/results/<request-id>` (mode 0600)."""
    size: int
    """Size in bytes."""
    sha256: str
    """Hex digest of the file content."""
    created_at: int
    """When it was written (ms)."""


@dataclass(frozen=True, slots=True)
class StoreSnapshot:
    """One consistent read of everything the lifecycle projection needs."""

    generations: tuple[GenerationRecord, ...]
    """All generations that are not finalized."""
    pending_asks: tuple[AskRecord, ...]
    """Pending asks of those generations."""
    unacknowledged: tuple[RequestRecord, ...]
    """Requests of those generations still waiting for an ack."""
    undelivered: tuple[ResultRecord, ...]
    """Results of those generations not yet delivered."""
    taken_at: int
    """When the snapshot was read (ms)."""


@dataclass(frozen=True, slots=True)
class WatchedRun:
    """What the host's watch loop looks at for one run it watches (read for many runs at once)."""

    generation: GenerationRecord
    pending_ask: AskRecord | None
    """The run's pending ask, or `None`."""
    acknowledged: int
    """How many of its requests were acknowledged."""
