"""The verification and repair state a report carries: typed, with their stored JSON shape.

A report's `result.verification` (`ReportVerification`) and `result.repair`
(`RepairResult`) are stored as JSON in the report's row and read back through
`from_json` here, once; everything between modules passes these dataclasses.
`to_json` is the stored shape (camelCase, omitted keys where the contract
omits them), which is also the shape the model sees in tool results. A repair
request (`RepairRequest`) is never stored: the surface shapes its JSON.

A stored value that is not the expected shape reads the fail-closed way:
a malformed verification as `not-requested`, a malformed repair state as
`pending` (which blocks the task's effective outcome).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from corral.orchestration.teams.checks._checks import CheckVerification
    from corral.orchestration.teams.checks.records import CheckRecord

__all__ = [
    "BLOCKING_REPAIR_STATES",
    "CheckSummary",
    "ObservedVerification",
    "RepairRequest",
    "RepairResult",
    "RepairState",
    "ReportVerification",
    "ReportVerificationState",
    "effective_outcome",
]

ReportVerificationState = Literal["not-requested", "pending", "passed", "failed", "stale"]
"""A report's verification: no checks assigned, or the state of its checks' batch."""

_VERIFICATION_STATES: frozenset[str] = frozenset({"not-requested", "pending", "passed", "failed", "stale"})

RepairState = Literal[
    "pending", "not-needed", "requested", "repaired", "exhausted", "cancelled", "declined", "blocked"
]
"""The state of a repair decision (`pending` covers a running stage or pending verification)."""

_REPAIR_STATES: frozenset[str] = frozenset(
    {"pending", "not-needed", "requested", "repaired", "exhausted", "cancelled", "declined", "blocked"}
)

BLOCKING_REPAIR_STATES: frozenset[str] = frozenset(
    {"pending", "exhausted", "cancelled", "declined", "blocked"}
)
"""Decision states that add the effective outcome `blocked`."""


@dataclass(frozen=True, slots=True)
class ReportVerification:
    """A report's verification (`result.verification`): its state, the checks it covers, why not conclusive."""

    state: ReportVerificationState = "not-requested"
    """`not-requested` without assigned checks, else `pending`, `passed`, `failed` or `stale`."""
    check_ids: tuple[str, ...] = ()
    """The checks it covers, in policy order (none: omitted from the JSON)."""
    _: KW_ONLY
    error: str | None = None
    """Why verification is not conclusive (a cancellation, a missing record, no check ran)."""

    @classmethod
    def of(cls, verification: CheckVerification) -> ReportVerification:
        """The report's verification of a batch of checks."""
        return cls(verification.state, verification.check_ids, error=verification.error)

    def to_json(self) -> dict[str, Any]:
        """`{state, checkIds?, error?}` (`checkIds` only when it names checks)."""
        data: dict[str, Any] = {"state": self.state}
        if self.check_ids:
            data["checkIds"] = list(self.check_ids)
        if self.error is not None:
            data["error"] = self.error
        return data

    @classmethod
    def from_json(cls, value: object) -> ReportVerification:
        """Read a stored `result.verification`; anything but an object reads as `not-requested`."""
        if not isinstance(value, Mapping):
            return cls()
        state = value.get("state")
        ids = value.get("checkIds")
        error = value.get("error")
        return cls(
            state if isinstance(state, str) and state in _VERIFICATION_STATES else "not-requested",  # type: ignore[arg-type]
            tuple(str(item) for item in ids) if isinstance(ids, list) else (),
            error=str(error) if error else None,
        )


@dataclass(frozen=True, slots=True)
class RepairResult:
    """The repair decision of a report (`RepairResult` of the notes; a report's `result.repair`)."""

    controller_id: str
    """The ledger's id."""
    state: RepairState
    """Where repair stands."""
    _: KW_ONLY
    attempts_used: int | None = None
    """How many stages requested a repair (omitted when the ledger is unavailable)."""
    max_attempts: int | None = None
    """The policy's `maxAttempts` (omitted when the ledger is unavailable)."""
    request_ids: tuple[str, ...] | None = None
    """The id of each repair request, oldest first (omitted when the ledger is unavailable)."""
    error: str | None = None
    """Why the ledger could not be read."""

    @property
    def outcome(self) -> Literal["blocked"] | None:
        """`blocked` when the state blocks the task (pending, exhausted, cancelled, declined, blocked)."""
        return "blocked" if self.state in BLOCKING_REPAIR_STATES else None

    def to_json(self) -> dict[str, Any]:
        """`{controllerId, state, attemptsUsed?, maxAttempts?, requestIds?, outcome?, error?}`."""
        data: dict[str, Any] = {"controllerId": self.controller_id, "state": self.state}
        if self.attempts_used is not None:
            data["attemptsUsed"] = self.attempts_used
        if self.max_attempts is not None:
            data["maxAttempts"] = self.max_attempts
        if self.request_ids is not None:
            data["requestIds"] = list(self.request_ids)
        if self.outcome is not None:
            data["outcome"] = self.outcome
        if self.error is not None:
            data["error"] = self.error
        return data

    @classmethod
    def from_json(cls, value: object) -> RepairResult | None:
        """Read a stored `result.repair` (`None` for anything but an object); an unknown state reads
        `pending`, so it blocks (the stored `outcome` is derived from the state, never trusted)."""
        if not isinstance(value, Mapping):
            return None
        state = value.get("state")
        attempts = value.get("attemptsUsed")
        maximum = value.get("maxAttempts")
        requests = value.get("requestIds")
        error = value.get("error")
        return cls(
            str(value.get("controllerId", "")),
            state if isinstance(state, str) and state in _REPAIR_STATES else "pending",  # type: ignore[arg-type]
            attempts_used=attempts if type(attempts) is int else None,
            max_attempts=maximum if type(maximum) is int else None,
            request_ids=tuple(str(item) for item in requests) if isinstance(requests, list) else None,
            error=None if error is None else str(error),
        )


@dataclass(frozen=True, slots=True)
class CheckSummary:
    """One check of a repair request, as observed: what the agent needs to fix it."""

    check_id: str
    """The check's id."""
    name: str
    """The assigned check's name."""
    state: str
    """Its record's state (`failed`, `stale`, `timed-out`, …)."""
    exit_code: int | None
    """Its exit code (`None`: none)."""
    log_path: str
    """Its full log."""
    error: str | None = None
    """Why it did not settle as passed, when the record says."""

    @classmethod
    def of(cls, record: CheckRecord) -> CheckSummary:
        """The summary of an observed record."""
        return cls(
            record.check_id,
            record.assignment.name,
            record.state,
            record.exit_code,
            record.log_path,
            record.error,
        )


@dataclass(frozen=True, slots=True)
class RepairRequest:
    """A repair the agent is asked for (the decision is `requested`): not stored, shaped by the surface."""

    id: str
    """`repair_request_id(report id, attempt)`."""
    attempt: int
    """The attempt that failed (the next submission is attempt + 1)."""
    checks: tuple[CheckSummary, ...]
    """The checks that did not pass, in policy order."""


@dataclass(frozen=True, slots=True)
class ObservedVerification:
    """A stored report's verification and repair, observed now (`Verifier.observe`)."""

    verification: ReportVerification
    """The verification as it stands now (`passed` checks whose source changed read `stale`)."""
    repair: RepairResult | None
    """The repair decision rebuilt from the ledger, or the stored one when there is no ledger to read."""


def effective_outcome(outcome: str | None, repair: RepairResult | None) -> str | None:
    """The task's effective outcome: `blocked` when repair added a blocker, else the agent's own `outcome`."""
    if repair is not None and repair.outcome is not None:
        return repair.outcome
    return outcome
