"""The typed commands of the teams tools: what the teams core acts on.

The surface (`surfaces/teams/_wire.py`) turns a model's JSON into these;
the event bus, the TUI and tests build them directly. Policies arrive parsed
by their own feature's parser (`parse_check_policy`, `parse_repair_policy`,
`parse_checkpoint_policy`, `parse_completion_group`) and wrapped in `Parsed`:
a policy that failed to parse carries its error, which the core raises at
the point where it admits that agent. So a swarm member with a bad policy
fails alone, and the order in which a spawn's problems are reported is the
core's (the lead check, then checks, repair, cwd, checkpoint).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass
from typing import TYPE_CHECKING, Generic, Literal, TypeVar, cast, get_args

from corral.orchestration.teams._tiers import Tier, resolve_tier
from corral.orchestration.teams.reports.records import Artifact, Finding, ReportClaims

if TYPE_CHECKING:
    from corral.orchestration.teams.checkpoints.records import CheckpointPolicy
    from corral.orchestration.teams.checks._checks import CheckSpec
    from corral.orchestration.teams.groups.records import CompletionPolicy

__all__ = [
    "LEAD_RECIPIENT",
    "MAX_EVIDENCE_CHARS",
    "MAX_INSPECTED_EVIDENCE",
    "NAME_MAX_LENGTH",
    "NAME_PATTERN",
    "TASK_OUTCOMES",
    "AgentNameRequest",
    "Artifact",
    "ClaimRequest",
    "Finding",
    "Parsed",
    "ReadInboxRequest",
    "RepairPolicy",
    "ReportSubmission",
    "SendMessageRequest",
    "SessionContextMode",
    "SpawnRequest",
    "StatusRequest",
    "StopRequest",
    "SwarmRequest",
    "TaskOutcome",
]

_T = TypeVar("_T")

SessionContextMode = Literal["none", "lazy"]
"""`session_context`: `none` (only the prompt) or `lazy` (the lead's branch readable on demand)."""

TaskOutcome = Literal["succeeded", "blocked", "failed", "cancelled"]
"""An agent's claimed task outcome in `report_and_exit`."""

TASK_OUTCOMES: tuple[TaskOutcome, ...] = get_args(TaskOutcome)
"""The four outcomes, in the contract's order."""

NAME_PATTERN = r"^[A-Za-z0-9_-]+$"
"""What a teams agent name (or a `continue_from` name prefix) must match."""
NAME_MAX_LENGTH = 128
"""Longest accepted agent name."""
LEAD_RECIPIENT = "team-lead"
"""The lead's recipient name; a spawned agent's `send_message` goes there by default."""
MAX_INSPECTED_EVIDENCE = 128
"""Most `inspectedEvidence` items a report may carry."""
MAX_EVIDENCE_CHARS = 2048
"""Longest `inspectedEvidence` item."""


@dataclass(frozen=True, slots=True)
class Parsed(Generic[_T]):
    """A policy parsed by its feature's parser: the value, or the error raised in its place."""

    value: _T | None = None
    """The parsed policy (meaningful only when `error` is `None`)."""
    error: Exception | None = None
    """What the parser raised; `get` raises it again."""

    @classmethod
    def of(cls, parse: Callable[[], _T]) -> Parsed[_T]:
        """Run `parse` now and keep its value or its error."""
        try:
            return cls(parse())
        except Exception as exc:
            return cls(error=exc)

    def get(self) -> _T:
        """The policy.

        Raises:
            Exception: the parser's own error (an `InvalidRequestError` subclass for a bad policy).
        """
        if self.error is not None:
            raise self.error
        return cast("_T", self.value)


@dataclass(frozen=True, slots=True)
class RepairPolicy:
    """A validated `repair` policy (`parse_repair_policy`)."""

    max_attempts: int
    """Repair attempts after failed checks, 0-5 (0 = no repair)."""


@dataclass(frozen=True, slots=True)
class SpawnRequest:
    """One agent to spawn: a `spawn_agent` call, or one swarm member after the defaults merge."""

    prompt: str
    """The mission, exactly as given (non-blank)."""
    model_slot: str
    """Canonical tier name (aliases normalized; `read-review` when none was given)."""
    requested_model_slot: str
    """The tier as given, alias kept (`details.requestedModelSlot`)."""
    _: KW_ONLY
    name: str | None = None
    """Display and recipient name (`^[A-Za-z0-9_-]+$`, ≤128); with `continue_from` a prefix; `None` = generate."""
    cwd: str | None = None
    """Working directory as given; `None` = the lead's (nested helpers always use their parent's)."""
    session_context: SessionContextMode = "none"
    """Whether the agent can read a snapshot of the lead's branch on demand."""
    metadata: dict[str, object] | None = None
    """Free-form integration record (`operationId`, …); authorizes nothing."""
    allow_nested_read_agents: bool = False
    """Opt-in to nested read helpers (effective only for depth-0 `write-feature`/`write-critical`)."""
    checks: Parsed[tuple[CheckSpec, ...]] | None = None
    """Assigned checks (`None` = absent, an empty tuple = explicitly none)."""
    repair: Parsed[RepairPolicy] | None = None
    """Repair policy (`None` = absent)."""
    checkpoint: Parsed[CheckpointPolicy] | None = None
    """Checkpoint policy (`None` = absent)."""
    continue_from: str | None = None
    """`checkpoint:<hex>` id to continue from, as given (checked by the checkpoint store)."""

    @property
    def tier(self) -> Tier:
        """The canonical tier."""
        return resolve_tier(self.model_slot)


@dataclass(frozen=True, slots=True)
class SwarmRequest:
    """A `spawn_swarm_agents` call: its members in order, defaults already merged in."""

    members: tuple[SpawnRequest, ...]
    """Each agent after the shallow merge `{...defaults, ...agent}` (at least one)."""
    _: KW_ONLY
    completion_group: Parsed[CompletionPolicy] | None = None
    """Completion-group policy (`None` = absent)."""


@dataclass(frozen=True, slots=True)
class SendMessageRequest:
    """A `send_message` call."""

    recipient: str | None
    """Recipient name (stripped). `parse_send_message` fills `team-lead` for a spawned agent that
    named none and requires one from the lead, so it never returns `None`."""
    content: str
    """The message text, exactly as given (non-blank)."""
    _: KW_ONLY
    summary: str = "Message"
    """Short label (default `Message`)."""


@dataclass(frozen=True, slots=True)
class ReadInboxRequest:
    """A `read_inbox` call."""

    _: KW_ONLY
    unread_only: bool = True
    """Return only unread messages."""
    mark_as_read: bool = True
    """Mark the returned messages read (`False` = peek)."""
    agent_name: str | None = None
    """Whose inbox (lead only); `None` = the caller's own."""


@dataclass(frozen=True, slots=True)
class ReportSubmission:
    """A `report_and_exit` call: the deliverable and the agent's claims (never ids or verdicts)."""

    content: str
    """The complete deliverable, exactly as given (non-blank)."""
    _: KW_ONLY
    summary: str | None = None
    """Short label."""
    outcome: TaskOutcome | None = None
    """Claimed task outcome; `None` = unspecified."""
    changed_paths: tuple[str, ...] = ()
    """Paths the agent says it changed."""
    artifacts: tuple[Artifact, ...] = ()
    """Artifacts the agent points to."""
    findings: tuple[Finding, ...] = ()
    """Findings with unique ids."""
    questions: tuple[str, ...] = ()
    """Open questions for the lead."""
    inspected_evidence: tuple[str, ...] = ()
    """References the agent inspected (≤128, each 1..2048 characters)."""

    def claims(self) -> ReportClaims:
        """The claims as the report's `result` keeps them."""
        return ReportClaims(
            changed_paths=self.changed_paths,
            inspected_evidence=self.inspected_evidence,
            artifacts=self.artifacts,
            findings=self.findings,
            questions=self.questions,
        )


@dataclass(frozen=True, slots=True)
class AgentNameRequest:
    """A call naming one agent (`check_teammate`, `interrupt_teammate`)."""

    agent_name: str
    """The agent's name (stripped, non-blank)."""


@dataclass(frozen=True, slots=True)
class StopRequest:
    """A `stop_teammate` call."""

    agent_name: str
    """The agent's name (stripped, non-blank)."""
    _: KW_ONLY
    reason: str | None = None
    """Why, shown to the lead."""


@dataclass(frozen=True, slots=True)
class StatusRequest:
    """A `get_agent_status` call."""

    _: KW_ONLY
    agent_name: str | None = None
    """One agent; `None` = every agent in the caller's scope."""


@dataclass(frozen=True, slots=True)
class ClaimRequest:
    """A `claim_file` or `release_file` call."""

    paths: tuple[str, ...]
    """The paths as given (non-empty, non-blank; the store normalizes them)."""
