"""What the teams core tells a model on its own initiative, as typed facts (their words: `texts.py`).

The core decides *that* the lead (or a helper's parent, or an agent) must be told something and
records *what happened* in a frozen fact below; `texts.py`'s plain functions (and `repair/texts.py`'s
for a failed check) turn each fact into the text the model reads. A Ray member's fallback report
crosses to the lead's host as the fact and is worded there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from pathlib import Path

    from corral.orchestration.teams.checkpoints.records import CheckpointRecord, Revalidation
    from corral.orchestration.teams.repair._verification import VerificationDecision
    from corral.orchestration.teams.roster.records import TeamReportRecord

__all__ = [
    "CheckpointNotSaved",
    "ContinuationDue",
    "FallbackReport",
    "MessageArrived",
    "QueuedRetained",
    "QueuedStartFailed",
    "RepairDue",
    "ReportArrived",
    "ReportMissing",
    "SessionContextAttached",
    "SwarmMembersGone",
]


@dataclass(frozen=True, slots=True)
class QueuedStartFailed:
    """A queued spawn was admitted but its agent could not be launched (told to whoever asked)."""

    name: str
    """The agent's name."""
    error: str
    """Why the launch failed (the error's own message)."""


@dataclass(frozen=True, slots=True)
class QueuedRetained:
    """A queued spawn is held back: its name was quarantined before it was admitted (told to the lead)."""

    name: str
    """The agent's name."""


@dataclass(frozen=True, slots=True)
class CheckpointNotSaved:
    """The checkpoint an agent's report asked for was not saved (told to the lead; the report is kept)."""

    checkpoint_id: str | None
    """The checkpoint's id as the report gave it (`None` when it gave none)."""
    agent: str
    """The reporting agent's name."""
    error: str
    """Why it was not saved (a `CheckpointError`'s message, or another failure's)."""


@dataclass(frozen=True, slots=True)
class ReportMissing:
    """An agent ended its work without an accepted `report_and_exit`: its one report-only recovery prompt."""

    agent: str
    """The agent's name."""


@dataclass(frozen=True, slots=True)
class RepairDue:
    """An assigned check failed on an agent's plain final answer and a repair attempt is available."""

    decision: VerificationDecision
    """The verification's decision (what failed, the repair requested, attempts left)."""


FallbackSource = Literal["provider-error", "assistant-text", "empty"]


@dataclass(frozen=True, slots=True)
class FallbackReport:
    """A run that ended without an accepted report, even after the recovery prompt: its fallback report.

    `assistant-text` reports the agent's last text as it is; the other two are failures the report's
    content explains.
    """

    agent: str
    """The agent's label."""
    source: FallbackSource
    """`provider-error` (the last model request failed), `assistant-text` or `empty` (no text at all)."""
    text: str
    """The agent's last assistant text, stripped (may be empty)."""
    error: str | None
    """The provider's error message (`provider-error` only; `None` when it gave none)."""
    session_path: str | None
    """The run's session file, kept for inspection."""

    @property
    def status(self) -> Literal["completed", "failed"]:
        """`completed` for an agent's own text, else `failed`."""
        return "completed" if self.source == "assistant-text" else "failed"


@dataclass(frozen=True, slots=True)
class SessionContextAttached:
    """An agent's mission comes with a filtered snapshot of the lead's conversation (its pointer ends
    the mission)."""

    path: Path
    """The snapshot file (readable by the agent, under `$CORRAL_HOME`)."""


@dataclass(frozen=True, slots=True)
class ContinuationDue:
    """A spawn continues from a checkpoint: its first prompt, built at actual launch (also after a
    queue wait), carries the checkpoint as historical data and what must be revalidated."""

    checkpoint: CheckpointRecord
    """The checkpoint as read again at launch."""
    revalidation: tuple[Revalidation, ...]
    """Per retained report: whether its scope changed since (`Checkpoints.revalidation`)."""
    assignment: str
    """The current assignment (authoritative)."""


@dataclass(frozen=True, slots=True)
class MessageArrived:
    """A teams message reaches its reader: a member (steering, its next prompt, or its worker's
    inbox) or the lead (a hidden `corral-team-message`)."""

    sender: str
    """`team-lead`, a member's name, or `corral` (a notice)."""
    summary: str | None
    """The sender's one-line summary, if any."""
    content: str
    """The message itself."""


@dataclass(frozen=True, slots=True)
class ReportArrived:
    """A stored teams report reaches the lead (the hidden `corral-team-report` message that wakes it)."""

    report: TeamReportRecord
    """The stored report (its content, structured claims, branch and merge state)."""
    effective_outcome: str | None
    """The outcome after repair (a blocker repair added), else the agent's own."""
    verification: str
    """The verification state (`not-requested`, `passed`, `failed`, ...)."""


@dataclass(frozen=True, slots=True)
class SwarmMembersGone:
    """The last members of a swarm still to report left without a report (stopped, cancelled in the
    queue, their run lost) after its other reports went in without waking the lead: told to the
    lead, which wakes it for them (`reports/_swarm_wakes.py`)."""

    names: tuple[str, ...]
    """The members that left without a report, in the order they left."""
