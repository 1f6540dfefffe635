"""Assigned-check identity, records and their durable files.

A check's identity is `check:` + SHA-256 of `JSON.stringify([reportId, name,
attempt])` (§6.2 of the teams notes), so one report's check at one attempt
has exactly one record. Records live as `<64 hex>.json` in a private
directory (0700, files 0600), the full log beside it as `<64 hex>.log`.

Writes are durable: a temp file made with exclusive create (0600), written,
fsynced, renamed over the target, then the directory and its ancestors are
fsynced. Claim and finish run under one `flock` on `.lock` in the directory,
so two processes never both claim one identity. The record types are plain
dataclasses with `to_json`/`from_json`; the SQLite store will take the rows
over later without changing their shape.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import math
import os
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import KW_ONLY, dataclass
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal, get_args

from corral._paths import ensure_private_dir
from corral.orchestration.errors import InternalFailureError, InvalidRequestError

from ._fingerprint import SourceFingerprint, same_tested_source

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

CheckState = Literal["claimed", "passed", "failed", "cancelled", "timed-out", "stale", "unsupported", "error"]
"""Where a check stands; `claimed` is the only unsettled state."""
_STATES: frozenset[str] = frozenset(get_args(CheckState))
_CHECK_PREFIX = "check:"


class CheckRecordError(InternalFailureError):
    """A stored check record is unreadable or breaks an invariant; inspect the named file."""


class CheckIdentityError(InvalidRequestError):
    """A check identity is already bound to a different assignment."""


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def js_number(value: float) -> str:
    """`String(value)` in JavaScript for a finite number (how `JSON.stringify` writes it)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not math.isfinite(value):
        raise ValueError(f"not a finite number: {value}")
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    _, digit_tuple, exponent = Decimal(repr(abs(value))).as_tuple()
    digits = "".join(map(str, digit_tuple)).lstrip("0")
    assert isinstance(exponent, int)
    stripped = digits.rstrip("0")
    exponent += len(digits) - len(stripped)
    digits = stripped
    k = len(digits)
    n = exponent + k
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = f"{digits[:n]}.{digits[n:]}"
    elif -6 < n <= 0:
        text = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        mantissa = digits[0] + (f".{digits[1:]}" if k > 1 else "")
        text = f"{mantissa}e{'+' if e >= 0 else '-'}{abs(e)}"
    return sign + text


def _number_json(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value


def check_id(report_id: str, name: str, attempt: int) -> str:
    """`check:` + sha256 hex of `JSON.stringify([reportId, name, attempt])`."""
    payload = f"[{_json(report_id)},{_json(name)},{attempt}]"
    return _CHECK_PREFIX + hashlib.sha256(payload.encode("utf-8")).hexdigest()


def now_iso() -> str:
    """The current time as an ISO-8601 UTC string with milliseconds (`Date.toISOString`)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


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
        parts = [
            _json(self.task_id),
            _json(self.run_id),
            _json(self.report_id),
            _json(self.name),
            _json(self.command),
            _json(self.cwd),
            js_number(self.timeout_seconds),
            str(self.attempt),
            _json(list(self.inputs)) if self.inputs is not None else "null",
        ]
        return "[" + ",".join(parts) + "]"

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
    started_at: str
    """ISO-8601 UTC time of the claim."""
    log_path: str
    """The full log: the record's path with `.log` instead of `.json`."""
    _: KW_ONLY
    completed_at: str | None = None
    """ISO-8601 UTC time the check settled; `None` exactly while `claimed`."""
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
        """The JSON object (camelCase keys; optional fields only when set)."""
        data: dict[str, Any] = {
            "version": self.version,
            "checkId": self.check_id,
            "claimToken": self.claim_token,
            "assignment": self.assignment.to_json(),
            "state": self.state,
            "startedAt": self.started_at,
        }
        if self.completed_at is not None:
            data["completedAt"] = self.completed_at
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
    def from_json(cls, data: Mapping[str, Any], *, record_path: Path | None = None) -> CheckRecord:
        """Parse and check a stored record.

        Args:
            data: The JSON object.
            record_path: Where it was read from; its log path must be this path with `.log`.

        Raises:
            ValueError: A field is malformed or an invariant of §6.2 does not hold.
        """
        if data.get("version") != CHECK_RECORD_VERSION:
            raise ValueError(f"unsupported check record version {data.get('version')!r}")
        assignment_data = data.get("assignment")
        if not isinstance(assignment_data, Mapping):
            raise ValueError("check record has no assignment")
        assignment = AssignedCheck.from_json(assignment_data)
        state = data.get("state")
        if state not in _STATES:
            raise ValueError(f"unknown check state {state!r}")
        for key in ("checkId", "claimToken", "startedAt", "logPath"):
            if not isinstance(data.get(key), str):
                raise ValueError(f"check record field {key} is missing or not a string")
        completed_at = data.get("completedAt")
        error = data.get("error")
        exit_code = data.get("exitCode")
        log_bytes = data.get("logBytes", 0)
        if completed_at is not None and not isinstance(completed_at, str):
            raise ValueError("check record completedAt is not a string")
        if error is not None and not isinstance(error, str):
            raise ValueError("check record error is not a string")
        if exit_code is not None and type(exit_code) is not int:
            raise ValueError("check record exitCode is not an integer")
        if type(log_bytes) is not int or log_bytes < 0:
            raise ValueError("check record logBytes is not a non-negative integer")
        before = data.get("sourceBefore")
        after = data.get("sourceAfter")
        record = cls(
            data["checkId"],
            data["claimToken"],
            assignment,
            state,
            data["startedAt"],
            data["logPath"],
            completed_at=completed_at,
            source_before=SourceFingerprint.from_json(before) if isinstance(before, Mapping) else None,
            source_after=SourceFingerprint.from_json(after) if isinstance(after, Mapping) else None,
            exit_code=exit_code,
            log_bytes=log_bytes,
            error=error,
        )
        record.validate(record_path=record_path)
        return record

    def validate(self, *, record_path: Path | None = None) -> None:
        """Check the record's invariants (§6.2).

        Raises:
            ValueError: The id is not the assignment's, `claimed` and `completedAt` disagree,
                a `passed` record lacks exit 0 / matching sources or has an error, or the log
                path is not the record path with `.log`.
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
        if record_path is not None and self.log_path != str(record_path.with_suffix(".log")):
            raise ValueError("check log path is not the record path with .log")


def _fsync_dirs(directory: Path) -> None:
    """fsync `directory` and each ancestor; ancestors we may not open are skipped."""
    for index, path in enumerate((directory, *directory.parents)):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        except PermissionError:
            if index == 0:
                raise
            continue
        try:
            os.fsync(fd)
        except OSError as exc:
            if exc.errno != errno.EINVAL:
                raise
        finally:
            os.close(fd)


def write_durable(path: Path, data: bytes) -> None:
    """Replace `path` with `data` durably: exclusive temp file 0600, fsync, rename, fsync directories."""
    temp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise
    _fsync_dirs(path.parent)


class CheckStore:
    """Check records and logs as files in one private directory.

    All methods block (file locks, fsync); async callers run them with `asyncio.to_thread`.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        """Use `directory` (created 0700 on first write) for records, logs and the lock file."""
        self.directory = Path(directory)

    def record_path(self, check_id: str) -> Path:
        """`<directory>/<64 hex>.json` for `check_id`.

        Raises:
            CheckRecordError: `check_id` is not `check:<64 lowercase hex>`.
        """
        hex_part = check_id.removeprefix(_CHECK_PREFIX)
        if (
            not check_id.startswith(_CHECK_PREFIX)
            or len(hex_part) != 64
            or any(c not in "0123456789abcdef" for c in hex_part)
        ):
            raise CheckRecordError(f"Malformed check id {check_id!r}; check ids are check:<64 hex>.")
        return self.directory / f"{hex_part}.json"

    def log_path(self, check_id: str) -> Path:
        """`<directory>/<64 hex>.log` for `check_id`."""
        return self.record_path(check_id).with_suffix(".log")

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        ensure_private_dir(self.directory)
        fd = os.open(self.directory / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def read(self, check_id: str) -> CheckRecord | None:
        """The stored record for `check_id`, or `None` if there is none.

        Raises:
            CheckRecordError: The file is unreadable, not JSON or breaks an invariant.
        """
        path = self.record_path(check_id)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise CheckRecordError(f"Cannot read check record {path}: {exc.strerror or exc}") from None
        try:
            data = json.loads(raw)
            if not isinstance(data, Mapping):
                raise ValueError("not a JSON object")
            record = CheckRecord.from_json(data, record_path=path)
        except ValueError as exc:
            raise CheckRecordError(f"Corrupt check record {path}: {exc}; inspect or remove it.") from None
        if record.check_id != check_id:
            raise CheckRecordError(f"Check record {path} holds another check id; inspect or remove it.")
        return record

    def _write(self, record: CheckRecord) -> None:
        path = self.record_path(record.check_id)
        write_durable(path, (_json(record.to_json()) + "\n").encode("utf-8"))

    def claim(self, assignment: AssignedCheck) -> tuple[CheckRecord, bool]:
        """Claim `assignment`'s check id, durably, before anything runs.

        Returns:
            `(record, True)` for a fresh `claimed` record, or `(stored, False)` when a record with
            the same assignment binding exists (duplicates never rerun).

        Raises:
            CheckIdentityError: The id is stored with a different assignment binding.
            CheckRecordError: The stored record is corrupt.
            OSError: The claim could not be made durable; nothing may run.
        """
        identity = assignment.check_id
        with self._locked():
            existing = self.read(identity)
            if existing is not None:
                if existing.assignment.binding() != assignment.binding():
                    raise CheckIdentityError("Check identity is already bound to another assignment.")
                return existing, False
            record = CheckRecord(
                identity,
                str(uuid.uuid4()),
                assignment,
                "claimed",
                now_iso(),
                str(self.log_path(identity)),
            )
            self._write(record)
            return record, True

    def finish(self, settled: CheckRecord) -> CheckRecord:
        """Store a settled record over its claim, keyed by the claim token.

        Returns:
            `settled`, or the stored record unchanged when it is already settled.

        Raises:
            CheckRecordError: The record is missing, its claim token differs, or `settled`
                breaks an invariant.
        """
        if settled.state == "claimed":
            raise CheckRecordError(f"Cannot finish check {settled.check_id} in state claimed.")
        try:
            settled.validate(record_path=self.record_path(settled.check_id))
        except ValueError as exc:
            raise CheckRecordError(f"Refusing to store check {settled.check_id}: {exc}.") from None
        with self._locked():
            stored = self.read(settled.check_id)
            if stored is None:
                raise CheckRecordError(f"Check record {settled.check_id} disappeared before it settled.")
            if stored.claim_token != settled.claim_token:
                raise CheckRecordError(f"Check {settled.check_id} is claimed by another token.")
            if stored.state != "claimed":
                return stored
            self._write(settled)
            return settled
