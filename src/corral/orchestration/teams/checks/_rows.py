"""Typed rows of the check and repair tables of the orchestration store (schema v3).

These are the stored shapes, JSON columns decoded but not interpreted: the
teams layer turns a `CheckRow` into a `CheckRecord` (`checks/records.py`) and
checks a `RepairLedgerRow` (`repair/_repair.py`'s `validate_ledger`) for what
SQLite cannot (that a check id is the hash of its assignment, that a stage's
check ids belong to its assignments).
Times are Unix milliseconds (UTC).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from corral.orchestration.errors import InternalFailureError, InvalidRequestError

__all__ = [
    "TERMINAL_REPAIR_STATES",
    "CheckIdentityError",
    "CheckRecordError",
    "CheckRow",
    "CheckState",
    "RepairBindingError",
    "RepairLedgerError",
    "RepairLedgerRow",
    "RepairReservation",
    "RepairStageRow",
    "RepairStageState",
    "decode_json_column",
]

CheckState = Literal["claimed", "passed", "failed", "cancelled", "timed-out", "stale", "unsupported", "error"]
"""Where a check stands; `claimed` is the only unsettled state."""

RepairStageState = Literal[
    "running", "not-needed", "requested", "repaired", "exhausted", "cancelled", "declined", "blocked"
]
"""Where one repair attempt stands."""

TERMINAL_REPAIR_STATES: frozenset[str] = frozenset(
    {"not-needed", "repaired", "exhausted", "cancelled", "declined", "blocked"}
)
"""Stage states after which no attempt follows (`running` and `requested` are open)."""


class CheckRecordError(InternalFailureError):
    """A stored check record is missing, unreadable or breaks an invariant; inspect the named record."""


class CheckIdentityError(InvalidRequestError):
    """A check identity is already bound to a different assignment."""


class RepairLedgerError(InternalFailureError):
    """A repair ledger is missing, corrupt, or bound to another report or run."""


class RepairBindingError(InvalidRequestError):
    """The repair policy or assignments changed, or a submission id was reused with other report details."""


@dataclass(frozen=True, slots=True)
class CheckRow:
    """One row of `team_checks`: a check's claim and, once settled, its outcome."""

    check_id: str
    """`check:<64 hex>`."""
    run_id: str
    """The run the check verifies (a teams member)."""
    report_id: str
    """The report it belongs to."""
    name: str
    """The check's name."""
    attempt: int
    """Attempt number (1 first)."""
    assignment: dict[str, Any]
    """The `AssignedCheck` JSON object."""
    binding: str
    """The assignment binding (`JSON.stringify` array); a duplicate claim must match it."""
    claim_token: str
    """UUID written at claim; settling presents it."""
    state: CheckState
    """Where the check stands."""
    started_at: int
    """When it was claimed (ms)."""
    completed_at: int | None
    """When it settled (ms); `None` exactly while `claimed`."""
    source_before: dict[str, Any] | None
    """Source identity JSON before the command."""
    source_after: dict[str, Any] | None
    """Source identity JSON after the command."""
    exit_code: int | None
    """The command's exit code, if known."""
    log_path: str
    """The full log file (`<dir>/<64 hex>.log`)."""
    log_bytes: int
    """Size of the log when the check settled."""
    error: str | None
    """Why the check is neither `passed` nor `failed`, or a note on it."""


@dataclass(frozen=True, slots=True)
class RepairStageRow:
    """One row of `team_repair_stages`: one `report_and_exit` submission's attempt."""

    controller_id: str
    """The ledger (`repair:<64 hex>`)."""
    attempt: int
    """1..6; stage N has attempt N."""
    submission_id: str
    """The runtime's submission id (the tool call id)."""
    signature: str
    """`repair:` + sha256 of the submission's normalized task details."""
    token: str
    """UUID; only the reserver settles the stage with it."""
    state: RepairStageState
    """Where the attempt stands."""
    check_ids: tuple[str, ...]
    """One check id per assignment, in policy order."""
    created_at: int
    """When it was reserved (ms)."""
    updated_at: int
    """When it last changed (ms)."""


@dataclass(frozen=True, slots=True)
class RepairLedgerRow:
    """A report's repair ledger (`team_repair_ledgers`) with its stages, oldest first."""

    controller_id: str
    """`repair:` + sha256 of `JSON.stringify(reportId)`."""
    run_id: str
    """The run whose report it repairs."""
    report_id: str
    """The report."""
    assignments: tuple[dict[str, Any], ...]
    """The assigned checks at attempt 1 (JSON objects), in policy order."""
    max_attempts: int
    """1..5."""
    cancelled: bool
    """No further attempt is possible (final)."""
    stages: tuple[RepairStageRow, ...]
    """Attempts, in order."""
    created_at: int
    """When the ledger was created (ms)."""
    updated_at: int
    """When it last changed (ms)."""

    @property
    def last_stage(self) -> RepairStageRow | None:
        """The latest stage, if any."""
        return self.stages[-1] if self.stages else None

    def stage_for(self, submission_id: str) -> RepairStageRow | None:
        """The stage reserved for `submission_id`, if any."""
        return next((stage for stage in self.stages if stage.submission_id == submission_id), None)


@dataclass(frozen=True, slots=True)
class RepairReservation:
    """What `RepairLedgers.reserve_repair_stage` did."""

    ledger: RepairLedgerRow
    """The ledger after the reservation."""
    stage: RepairStageRow | None
    """The new stage (`created`), the replayed stage of the same submission, or the ledger's last stage."""
    created: bool
    """Whether this call appended `stage`; only then does the caller run its plan."""


def decode_json_column(text: str | None, what: str, key: str) -> Any:
    """A stored JSON column (`None` stays `None`); a malformed one raises `CheckRecordError`."""
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise CheckRecordError(f"Stored {what} of {key} is not JSON ({exc}); inspect that row.") from None
