"""Assigned-check identity, records, and their home in the orchestration store.

A check's identity is `check:` + SHA-256 of `JSON.stringify([reportId, name,
attempt])` (§6.2 of the teams notes), so one report's check at one attempt
has exactly one record. Records are rows of the store's `team_checks` table
(`Checks.claim_check` / `finish_check`, one SQLite transaction each, the store
running `synchronous = FULL`); the full log of a check stays a file,
`<team checks dir>/<64 hex>.log` (dir 0700, file 0600, exclusive create).

`CheckStore` binds the store to one team's log directory: `claim` writes the
durable `claimed` row before anything may run (a duplicate with the same
binding returns the stored record; another binding is refused), `finish`
settles it with the claim token. Every record read back is checked against
the invariants SQLite cannot express (the id is its assignment's hash, the
log is named after the id).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from corral._paths import ensure_private_dir
from corral.orchestration.store.jsjson import stringify
from corral.orchestration.teams.checks._rows import CheckIdentityError, CheckRecordError, CheckRow, CheckState

from ._fingerprint import SourceFingerprint, same_tested_source

if TYPE_CHECKING:
    from corral.orchestration.teams.checks._repository import Checks

__all__ = [
    "CHECK_RECORD_VERSION",
    "AssignedCheck",
    "CheckIdentityError",
    "CheckRecord",
    "CheckRecordError",
    "CheckState",
    "CheckStore",
    "check_id",
]

CHECK_RECORD_VERSION = 1
"""The `version` of every check record."""

_CHECK_PREFIX = "check:"


def _number_json(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value


def check_id(report_id: str, name: str, attempt: int) -> str:
    """`check:` + sha256 hex of `JSON.stringify([reportId, name, attempt])`."""
    payload = f"[{stringify(report_id)},{stringify(name)},{attempt}]"
    return _CHECK_PREFIX + hashlib.sha256(payload.encode("utf-8")).hexdigest()


def check_hex(identity: str) -> str:
    """The 64 hex digits of a check id.

    Raises:
        CheckRecordError: `identity` is not `check:<64 lowercase hex>`.
    """
    hex_part = identity.removeprefix(_CHECK_PREFIX)
    if (
        not identity.startswith(_CHECK_PREFIX)
        or len(hex_part) != 64
        or any(c not in "0123456789abcdef" for c in hex_part)
    ):
        raise CheckRecordError(f"Malformed check id {identity!r}; check ids are check:<64 hex>.")
    return hex_part


def iso_time(ms: int) -> str:
    """Unix milliseconds as an ISO-8601 UTC string (`Date.toISOString`)."""
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True, slots=True)
class AssignedCheck:
    """One check assigned to one execution (run) of one agent's task."""

    task_id: str
    """The report's task id (`task:<team>:<agent>:<run>`)."""
    run_id: str
    """The lifecycle run the check verifies."""
    report_id: str
    """The report the check belongs to (`report:<team>:<agent>:<run>`)."""
    name: str
    """The check's name, unique within its policy."""
    command: str
    """The shell command to run."""
    cwd: str
    """Canonical (realpath) working directory of the agent; the command runs here."""
    timeout_seconds: float
    """Seconds the command may run before its process group is killed."""
    attempt: int
    """Attempt number, 1 for the first run; repair raises it."""
    _: KW_ONLY
    inputs: tuple[str, ...] | None = None
    """Literal paths relative to `cwd` the fingerprint is scoped to; `None` = the whole repository."""

    def __post_init__(self) -> None:
        if type(self.attempt) is not int or self.attempt < 1:
            raise ValueError(f"attempt must be an integer >= 1, not {self.attempt!r}")

    @property
    def check_id(self) -> str:
        """The check's identity from (report id, name, attempt)."""
        return check_id(self.report_id, self.name, self.attempt)

    def binding(self) -> str:
        """The assignment binding: `JSON.stringify([taskId, runId, reportId, name, command, cwd,
        timeoutSeconds, attempt, inputs ?? null])`; a duplicate claim must match it exactly."""
        return stringify(
            [
                self.task_id,
                self.run_id,
                self.report_id,
                self.name,
                self.command,
                self.cwd,
                self.timeout_seconds,
                self.attempt,
                None if self.inputs is None else list(self.inputs),
            ]
        )

    def to_json(self) -> dict[str, Any]:
        """The JSON object (camelCase keys; `inputs` only when scoped)."""
        data: dict[str, Any] = {
            "taskId": self.task_id,
            "runId": self.run_id,
            "reportId": self.report_id,
            "name": self.name,
            "command": self.command,
            "cwd": self.cwd,
            "timeoutSeconds": _number_json(self.timeout_seconds),
            "attempt": self.attempt,
        }
        if self.inputs is not None:
            data["inputs"] = list(self.inputs)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AssignedCheck:
        """Parse what `to_json` wrote.

        Raises:
            ValueError: A field is missing or has the wrong type.
        """
        strings = ("taskId", "runId", "reportId", "name", "command", "cwd")
        if not all(isinstance(data.get(key), str) for key in strings):
            raise ValueError("assignment has a missing or non-string identity field")
        timeout = data.get("timeoutSeconds")
        if isinstance(timeout, bool) or not isinstance(timeout, int | float):
            raise ValueError("assignment timeoutSeconds is not a number")
        inputs = data.get("inputs")
        if inputs is not None and not (isinstance(inputs, list) and all(isinstance(i, str) for i in inputs)):
            raise ValueError("assignment inputs is not a list of strings")
        return cls(
            data["taskId"],
            data["runId"],
            data["reportId"],
            data["name"],
            data["command"],
            data["cwd"],
            timeout,
            data.get("attempt"),  # type: ignore[arg-type]  # checked in __post_init__
            inputs=tuple(inputs) if inputs is not None else None,
        )


@dataclass(frozen=True, slots=True)
class CheckRecord:
    """The durable record of one check execution (or of its claim)."""

    check_id: str
    """`check:<64 hex>`, derived from the assignment."""
    claim_token: str
    """UUID written at claim; `finish` must present it."""
    assignment: AssignedCheck
    """What was assigned."""
    state: CheckState
    """Where the check stands."""
    started_at: int
    """When the check was claimed (Unix ms)."""
    log_path: str
    """The full log: `<team checks dir>/<64 hex>.log`."""
    _: KW_ONLY
    completed_at: int | None = None
    """When the check settled (Unix ms); `None` exactly while `claimed`."""
    source_before: SourceFingerprint | None = None
    """The source observed before the command ran."""
    source_after: SourceFingerprint | None = None
    """The source observed after the command exited."""
    exit_code: int | None = None
    """The command's exit code; `None` when it never ran, timed out, was cancelled or died by a signal."""
    log_bytes: int = 0
    """Size of the log file when the check settled."""
    error: str | None = None
    """Why the check is not `passed` or `failed` (timeout, cancellation, capture failure, …)."""
    version: int = CHECK_RECORD_VERSION
    """Record format version."""

    def to_json(self) -> dict[str, Any]:
        """The `CheckRecord` JSON object (camelCase keys, ISO-8601 times; optional fields only when set)."""
        data: dict[str, Any] = {
            "version": self.version,
            "checkId": self.check_id,
            "claimToken": self.claim_token,
            "assignment": self.assignment.to_json(),
            "state": self.state,
            "startedAt": iso_time(self.started_at),
        }
        if self.completed_at is not None:
            data["completedAt"] = iso_time(self.completed_at)
        if self.source_before is not None:
            data["sourceBefore"] = self.source_before.to_json()
        if self.source_after is not None:
            data["sourceAfter"] = self.source_after.to_json()
        if self.completed_at is not None:
            data["exitCode"] = self.exit_code
        data["logPath"] = self.log_path
        data["logBytes"] = self.log_bytes
        if self.error is not None:
            data["error"] = self.error
        return data

    @classmethod
    def from_row(cls, row: CheckRow) -> CheckRecord:
        """The record of a stored row, checked against every invariant of §6.2.

        Raises:
            CheckRecordError: The row is malformed or breaks an invariant (the message names it).
        """
        try:
            assignment = AssignedCheck.from_json(row.assignment)
            if assignment.binding() != row.binding:
                raise ValueError("the stored binding is not its assignment's")
            record = cls(
                row.check_id,
                row.claim_token,
                assignment,
                row.state,
                row.started_at,
                row.log_path,
                completed_at=row.completed_at,
                source_before=None
                if row.source_before is None
                else SourceFingerprint.from_json(row.source_before),
                source_after=None
                if row.source_after is None
                else SourceFingerprint.from_json(row.source_after),
                exit_code=row.exit_code,
                log_bytes=row.log_bytes,
                error=row.error,
            )
            record.validate()
        except ValueError as exc:
            raise CheckRecordError(
                f"Corrupt check record {row.check_id}: {exc}; inspect its row in team_checks."
            ) from None
        return record

    def validate(self) -> None:
        """Check the record's invariants (§6.2).

        Raises:
            ValueError: The id is not the assignment's, `claimed` and `completed_at` disagree,
                a `passed` record lacks exit 0 / matching sources or has an error, or the log
                is not named `<64 hex>.log` after the id.
        """
        if self.check_id != self.assignment.check_id:
            raise ValueError("check id does not match its assignment")
        if (self.state == "claimed") != (self.completed_at is None):
            raise ValueError("a check record has completedAt exactly when it is not claimed")
        if self.state == "passed" and not (
            self.exit_code == 0
            and self.error is None
            and self.source_before is not None
            and self.source_after is not None
            and same_tested_source(self.source_before, self.source_after)
        ):
            raise ValueError("a passed check needs exit code 0, no error and matching source identities")
        if Path(self.log_path).name != f"{self.check_id.removeprefix(_CHECK_PREFIX)}.log":
            raise ValueError("check log path is not named <64 hex>.log after the check id")


def read_check_records(checks: Checks, identities: Sequence[str]) -> dict[str, CheckRecord | None]:
    """Each id's stored record (`None` when missing), in the given order, read in one transaction.

    Raises:
        CheckRecordError: A stored row breaks an invariant.
    """
    rows = checks.get_checks(identities)
    return {key: (CheckRecord.from_row(rows[key]) if key in rows else None) for key in identities}


class CheckStore:
    """One team's check records (rows of the orchestration store) and log files (a private directory).

    Methods block briefly (one SQLite transaction each, on the event loop like
    every store call; see "Store calls and the event loop" in docs/development.md).
    """

    def __init__(self, rows: Checks, directory: str | os.PathLike[str]) -> None:
        """Bind the check rows to the team's checks directory (created 0700 before the first claim)."""
        self.rows = rows
        self.directory = Path(directory)

    def log_path(self, identity: str) -> Path:
        """`<directory>/<64 hex>.log` for `identity`.

        Raises:
            CheckRecordError: `identity` is not `check:<64 lowercase hex>`.
        """
        return self.directory / f"{check_hex(identity)}.log"

    def read(self, identity: str) -> CheckRecord | None:
        """The stored record of `identity`, or `None` if there is none.

        Raises:
            CheckRecordError: The stored row breaks an invariant.
        """
        row = self.rows.get_check(identity)
        return None if row is None else CheckRecord.from_row(row)

    def read_many(self, identities: Sequence[str]) -> dict[str, CheckRecord | None]:
        """Each id's record (`None` when missing), in the given order, read in one transaction."""
        return read_check_records(self.rows, identities)

    def claim(self, assignment: AssignedCheck) -> tuple[CheckRecord, bool]:
        """Claim `assignment`'s check id, durably, before anything runs.

        Returns:
            `(record, True)` for a fresh `claimed` record, or `(stored, False)` when a record with
            the same assignment binding exists (duplicates never rerun).

        Raises:
            CheckIdentityError: The id is stored with a different assignment binding.
            CheckRecordError: The stored record is corrupt.
            OrchestrationError: The claim could not be made durable; nothing may run.
        """
        identity = assignment.check_id
        log = self.log_path(identity)
        ensure_private_dir(self.directory)
        row, fresh = self.rows.claim_check(
            identity, assignment=assignment.to_json(), binding=assignment.binding(), log_path=str(log)
        )
        return CheckRecord.from_row(row), fresh

    def finish(self, settled: CheckRecord) -> CheckRecord:
        """Store a settled record over its claim, keyed by the claim token.

        Returns:
            The stored settled record (completion time from the store), or the stored record
            unchanged when it had already settled.

        Raises:
            CheckRecordError: The record is missing, its claim token differs, or `settled`
                breaks an invariant.
        """
        if settled.state == "claimed":
            raise CheckRecordError(f"Cannot finish check {settled.check_id} in state claimed.")
        try:
            settled.validate()
        except ValueError as exc:
            raise CheckRecordError(f"Refusing to store check {settled.check_id}: {exc}.") from None
        row = self.rows.finish_check(
            settled.check_id,
            claim_token=settled.claim_token,
            state=settled.state,
            source_before=None if settled.source_before is None else settled.source_before.to_json(),
            source_after=None if settled.source_after is None else settled.source_after.to_json(),
            exit_code=settled.exit_code,
            log_bytes=settled.log_bytes,
            error=settled.error,
        )
        return CheckRecord.from_row(row)
