"""Assigned checks: policy validation, the runner, observation and batch verification.

Running one check (§6.3 of the teams notes):

1. Claim the check id durably (`CheckStore.claim`: a `claimed` row in the
   orchestration store, committed before anything runs; if the claim cannot
   be committed, nothing runs). A duplicate (same assignment binding) returns
   the stored record, re-observed against the current source, and runs
   nothing; a record still `claimed` after a crash is never replayed.
2. Create the log (exclusive create, 0600). Without a local shell executor the
   check is `unsupported`; there is no fallback runner.
3. Capture the source before, run the command through the shell in the
   agent's cwd, in a new session (its own process group), with stdout and
   stderr appended to the log, then capture the source after.
4. Exit ≠ 0 → `failed`; exit 0 and the same source → `passed`; exit 0 with
   the source changed by the run → `stale`. A timeout kills the process group
   → `timed-out` (the partial log is kept); cancellation (the `cancel` event
   or cancelling the task) kills it → `cancelled`, even if the command would
   have exited 0; anything else (capture failure, no exit code) → `error`.
5. fsync and close the log, record its size, and `finish` under the claim
   token.

On every exit of the command, anything left in its process group is killed,
so a check leaves nothing running that corral does not know about.

`observe` re-observes a `passed` record: when the current source differs
from the source it passed on, the returned copy is `stale` (the stored record
stays `passed`). `verify_batch` folds a batch into `pending`, `failed`,
`stale` or `passed`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import math
import os
import signal
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from corral._process import kill_group, signal_group
from corral.agent.tools import resolve_shell
from corral.orchestration.errors import InvalidRequestError, OrchestrationError
from corral.orchestration.kernel._faults import fault_point
from corral.orchestration.store.jsjson import js_number

from ._fingerprint import SourceCaptureError, SourceFingerprint, capture_fingerprint, same_tested_source
from .records import (
    AssignedCheck,
    CheckRecord,
    CheckRecordError,
    CheckState,
    CheckStore,
    read_check_records,
)

if TYPE_CHECKING:
    from corral.orchestration.teams.checks._repository import Checks

__all__ = [
    "CANCELLED_VERIFICATION_ERROR",
    "MAX_CHECK_TIMEOUT_SECONDS",
    "UNSUPPORTED_CHECKS_ERROR",
    "CheckBatch",
    "CheckExecution",
    "CheckExecutor",
    "CheckPolicyError",
    "CheckRun",
    "CheckRunner",
    "CheckSpec",
    "CheckVerification",
    "LocalShellExecutor",
    "VerificationState",
    "assign_checks",
    "observe",
    "observe_current",
    "parse_check_policy",
    "read_evidence",
    "verify_batch",
]

MAX_CHECK_TIMEOUT_SECONDS = 2_147_483.647
"""The largest `timeoutSeconds` a check may have."""
KILL_GRACE_SECONDS = 2.0
"""How long a check's process group gets between SIGTERM and SIGKILL."""
INVALID_POLICY_MESSAGE = "Invalid assigned check policy."
DUPLICATE_NAMES_MESSAGE = "Assigned check names must be unique."
UNSUPPORTED_CHECKS_ERROR = (
    "This corral runtime does not expose native local bash operations required for assigned checks."
)
"""The error of an `unsupported` check."""
CANCELLED_VERIFICATION_ERROR = "Assigned verification was cancelled before all checks settled."
"""The verification error of a batch cancelled before every check settled."""
STALE_SOURCE_ERROR = "Source changed since the check passed; rerun the check to verify the current source."

VerificationState = Literal["pending", "passed", "failed", "stale"]
"""The verification of a batch of checks (`not-requested` belongs to reports without checks)."""


class CheckPolicyError(InvalidRequestError):
    """An assigned check policy is malformed; `details["reason"]` says which part."""


def _invalid(reason: str) -> CheckPolicyError:
    return CheckPolicyError(INVALID_POLICY_MESSAGE, details={"reason": reason})


def _has_text(value: object) -> bool:
    return isinstance(value, str) and value.strip() != ""


@dataclass(frozen=True, slots=True)
class CheckSpec:
    """One check of a spawn's policy (`{name, command, timeoutSeconds, inputs?}`).

    Raises:
        CheckPolicyError: On construction, when a field is invalid ("Invalid assigned check policy.").
    """

    name: str
    """Non-blank name, unique within the policy."""
    command: str
    """Non-blank shell command."""
    timeout_seconds: float
    """Finite, > 0 and ≤ 2,147,483.647."""
    _: KW_ONLY
    inputs: tuple[str, ...] | None = None
    """Literal paths relative to the agent's cwd, deduplicated and sorted; `None` = whole repository."""

    def __post_init__(self) -> None:
        if not _has_text(self.name):
            raise _invalid("name must contain a non-whitespace character")
        if not _has_text(self.command):
            raise _invalid(f"check {self.name}: command must contain a non-whitespace character")
        timeout = self.timeout_seconds
        if (
            isinstance(timeout, bool)
            or not isinstance(timeout, int | float)
            or not math.isfinite(timeout)
            or not 0 < timeout <= MAX_CHECK_TIMEOUT_SECONDS
        ):
            raise _invalid(
                f"check {self.name}: timeoutSeconds must be a finite number > 0 and ≤ {MAX_CHECK_TIMEOUT_SECONDS}"
            )
        if self.inputs is not None:
            inputs: Any = self.inputs
            if isinstance(inputs, str) or not isinstance(inputs, Sequence) or not inputs:
                raise _invalid(f"check {self.name}: inputs must be a non-empty array of paths")
            for item in inputs:
                if not isinstance(item, str) or not item or "\0" in item:
                    raise _invalid(f"check {self.name}: every input must be a non-empty path")
                if os.path.isabs(item):
                    raise _invalid(f"check {self.name}: input {item} must be relative to the agent's cwd")
            object.__setattr__(self, "inputs", tuple(sorted(set(inputs))))

    def to_json(self) -> dict[str, Any]:
        """The `CheckDefinition` object."""
        data: dict[str, Any] = {
            "name": self.name,
            "command": self.command,
            "timeoutSeconds": int(self.timeout_seconds)
            if float(self.timeout_seconds).is_integer()
            else self.timeout_seconds,
        }
        if self.inputs is not None:
            data["inputs"] = list(self.inputs)
        return data


_SPEC_KEYS = frozenset({"name", "command", "timeoutSeconds", "inputs"})


def parse_check_policy(value: object) -> tuple[CheckSpec, ...]:
    """Validate a spawn's `checks` array; an empty array means no checks.

    Args:
        value: The JSON value given as `checks`.

    Returns:
        The checks in policy order.

    Raises:
        CheckPolicyError: "Invalid assigned check policy." for a malformed policy, or
            "Assigned check names must be unique." for a repeated name.
    """
    if not isinstance(value, list):
        raise _invalid("checks must be an array")
    specs: list[CheckSpec] = []
    for item in value:
        if not isinstance(item, Mapping):
            raise _invalid("each check must be an object")
        unknown = set(item) - _SPEC_KEYS
        if unknown:
            raise _invalid(f"unknown check fields: {', '.join(sorted(map(str, unknown)))}")
        if "inputs" in item and item["inputs"] is None:
            raise _invalid("inputs must be a non-empty array of paths when given")
        inputs = item.get("inputs")
        specs.append(
            CheckSpec(
                item.get("name"),  # type: ignore[arg-type]  # validated in __post_init__
                item.get("command"),  # type: ignore[arg-type]
                item.get("timeoutSeconds"),  # type: ignore[arg-type]
                inputs=tuple(inputs) if isinstance(inputs, list) else inputs,
            )
        )
    names = [spec.name for spec in specs]
    if len(set(names)) != len(names):
        raise CheckPolicyError(DUPLICATE_NAMES_MESSAGE)
    return tuple(specs)


def assign_checks(
    specs: Sequence[CheckSpec],
    *,
    task_id: str,
    run_id: str,
    report_id: str,
    cwd: str | os.PathLike[str],
    attempt: int = 1,
) -> tuple[AssignedCheck, ...]:
    """Bind a policy's checks to one execution: its report identity, canonical cwd and attempt."""
    canonical = os.path.realpath(cwd)
    return tuple(
        AssignedCheck(
            task_id,
            run_id,
            report_id,
            spec.name,
            spec.command,
            canonical,
            spec.timeout_seconds,
            attempt,
            inputs=spec.inputs,
        )
        for spec in specs
    )


# -- execution -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CheckExecution:
    """How a command ended."""

    exit_code: int | None
    """The exit code, or `None` when it timed out, was cancelled or died by a signal."""
    _: KW_ONLY
    timed_out: bool = False
    """The timeout expired and the process group was killed."""
    cancelled: bool = False
    """The cancel event was set and the process group was killed."""
    signal_name: str | None = None
    """The signal that ended the shell, if one did."""


class CheckExecutor(Protocol):
    """Runs a check's command: the runtime's native local shell operations."""

    def available(self) -> bool:
        """Whether commands can run here at all (otherwise checks are `unsupported`)."""
        ...

    async def execute(
        self,
        command: str,
        *,
        cwd: str,
        log_fd: int,
        timeout_seconds: float,
        cancel: asyncio.Event | None = None,
    ) -> CheckExecution:
        """Run `command` in `cwd`, appending its output to `log_fd`, until it exits, times out or is cancelled.

        Task cancellation must kill the command before `CancelledError` propagates.
        """
        ...


class LocalShellExecutor:
    """Runs commands with the local shell (`/bin/bash`, else `bash`, else `sh`) in a new process group."""

    def __init__(self, shell_path: str | None = None) -> None:
        """Use `shell_path` instead of the default shell (the `shellPath` setting)."""
        self.shell_path = shell_path

    def available(self) -> bool:
        """Whether the shell exists."""
        if self.shell_path is not None:
            return os.path.exists(self.shell_path)
        return True

    async def execute(
        self,
        command: str,
        *,
        cwd: str,
        log_fd: int,
        timeout_seconds: float,
        cancel: asyncio.Event | None = None,
    ) -> CheckExecution:
        """Run `[shell, "-c", command]`; see the module docstring for the process handling."""
        shell = resolve_shell(self.shell_path)
        process = await asyncio.create_subprocess_exec(
            shell,
            "-c",
            command,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=log_fd,
            stderr=log_fd,
            cwd=cwd,
            start_new_session=True,
        )
        try:
            waiter = asyncio.ensure_future(process.wait())
            cancel_waiter = asyncio.ensure_future(cancel.wait()) if cancel is not None else None
            waiting: set[asyncio.Future[Any]] = {waiter}
            if cancel_waiter is not None:
                waiting.add(cancel_waiter)
            try:
                await asyncio.wait(waiting, timeout=timeout_seconds, return_when=asyncio.FIRST_COMPLETED)
            finally:
                if cancel_waiter is not None:
                    cancel_waiter.cancel()
            if cancel is not None and cancel.is_set():
                await kill_group(process, KILL_GRACE_SECONDS)
                return CheckExecution(None, cancelled=True)
            if not waiter.done():
                await kill_group(process, KILL_GRACE_SECONDS)
                return CheckExecution(None, timed_out=True)
        except asyncio.CancelledError:
            await asyncio.shield(asyncio.ensure_future(kill_group(process, KILL_GRACE_SECONDS)))
            raise
        finally:
            if process.returncode is None:
                await asyncio.shield(asyncio.ensure_future(kill_group(process, KILL_GRACE_SECONDS)))
            # Nothing the command started may outlive it.
            signal_group(process.pid, signal.SIGKILL)
        code = process.returncode
        assert code is not None
        if code < 0:
            number = -code
            name = signal.Signals(number).name if number in signal.valid_signals() else str(number)
            return CheckExecution(None, signal_name=name)
        return CheckExecution(code)


# -- observation and verification ---------------------------------------------


def observe(
    record: CheckRecord, current: SourceFingerprint | None, *, error: str | None = None
) -> CheckRecord:
    """Re-observe a record against the current source, without touching the stored record.

    A `passed` record whose `source_after` differs from `current` (or when `current`
    could not be captured, `None` with `error` saying why) is returned as a `stale`
    copy with an error. Every other record is returned unchanged.
    """
    if record.state != "passed":
        return record
    if (
        current is not None
        and record.source_after is not None
        and same_tested_source(record.source_after, current)
    ):
        return record
    reason = error if current is None and error else STALE_SOURCE_ERROR
    return dataclasses.replace(record, state="stale", error=reason)


async def observe_current(record: CheckRecord) -> CheckRecord:
    """`observe` a record against the source as it is now (scoped like the check); never writes."""
    if record.state != "passed":
        return record
    try:
        current = await capture_fingerprint(record.assignment.cwd, record.assignment.inputs)
    except SourceCaptureError as exc:
        return observe(record, None, error=str(exc))
    return observe(record, current)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True, slots=True)
class CheckVerification:
    """The verification of a report's batch of checks."""

    state: VerificationState
    """`pending` (a claim is unresolved), `failed`, `stale` or `passed`."""
    check_ids: tuple[str, ...]
    """The checks the verification covers, in policy order."""
    _: KW_ONLY
    error: str | None = None
    """Why verification is not conclusive (cancellation, a missing record)."""

    def to_json(self) -> dict[str, Any]:
        """`{state, checkIds, error?}`."""
        data: dict[str, Any] = {"state": self.state, "checkIds": list(self.check_ids)}
        if self.error is not None:
            data["error"] = self.error
        return data


def verify_batch(records: Mapping[str, CheckRecord | None], *, cancelled: bool = False) -> CheckVerification:
    """Fold a batch of (observed) records into one verification.

    Args:
        records: Check id → its record, `None` when missing, in policy order.
        cancelled: The batch was cancelled; if not every check settled, the verification
            is `failed` with "Assigned verification was cancelled before all checks settled."

    Returns:
        `pending` if any record is `claimed`; `failed` if there are none or any is missing
        or not `passed`/`stale`; `stale` if any is `stale`; else `passed`.
    """
    ids = tuple(records)
    values = list(records.values())
    settled = bool(values) and all(record is not None and record.state != "claimed" for record in values)
    if cancelled and not settled:
        return CheckVerification("failed", ids, error=CANCELLED_VERIFICATION_ERROR)
    if any(record is not None and record.state == "claimed" for record in values):
        return CheckVerification("pending", ids)
    if not values:
        return CheckVerification("failed", ids, error="No assigned check records.")
    missing = [check for check, record in records.items() if record is None]
    if missing:
        return CheckVerification("failed", ids, error=f"Check record {missing[0]} is missing.")
    states: list[CheckState] = [record.state for record in values if record is not None]
    if any(state not in ("passed", "stale") for state in states):
        return CheckVerification("failed", ids)
    if "stale" in states:
        return CheckVerification("stale", ids)
    return CheckVerification("passed", ids)


@dataclass(frozen=True, slots=True)
class CheckRun:
    """What `CheckRunner.run` returned."""

    record: CheckRecord
    """The settled record (or, for a duplicate, the stored record as observed now)."""
    claimed: bool
    """Whether this call claimed and ran the check; `False` for a duplicate."""


@dataclass(frozen=True, slots=True)
class CheckBatch:
    """A batch of checks and its verification."""

    records: Mapping[str, CheckRecord | None]
    """Check id → record as observed (or `None` when not run or missing), in policy order."""
    verification: CheckVerification
    """The batch's verification."""


class CheckRunner:
    """Runs assigned checks against a `CheckStore`, one at a time, each at most once."""

    def __init__(
        self,
        store: CheckStore,
        *,
        executor: CheckExecutor | None = None,
        on_change: Callable[[], None] | None = None,
    ) -> None:
        """Create a runner.

        Args:
            store: Where records and logs live.
            executor: The runtime's local shell; `None` when the runtime has none, which makes
                every check `unsupported`.
            on_change: Called after a claim and after a settle are stored (the host's `changed`,
                so waits on check state and front ends see them).
        """
        self.store = store
        self.executor = executor
        self._on_change = on_change

    def _changed(self) -> None:
        if self._on_change is not None:
            self._on_change()

    async def observe_current(self, record: CheckRecord) -> CheckRecord:
        """`observe` the record against the source as it is now (scoped like the check)."""
        return await observe_current(record)

    async def run(self, check: AssignedCheck, *, cancel: asyncio.Event | None = None) -> CheckRun:
        """Run one check unless its id was claimed before.

        Args:
            check: The assignment.
            cancel: Setting it kills the command; the check then settles as `cancelled`.

        Returns:
            The settled record and `claimed=True`, or for a duplicate the stored record
            (observed now) and `claimed=False`.

        Raises:
            CheckIdentityError: The id is bound to another assignment.
            CheckRecordError: The stored record is corrupt or the claim was lost.
            OrchestrationError: The claim could not be committed (nothing ran).
            asyncio.CancelledError: The task was cancelled; the record settled as `cancelled` first.
        """
        record, fresh = self.store.claim(check)
        if not fresh:
            return CheckRun(await observe_current(record), claimed=False)
        self._changed()
        fault_point("after_check_claim")
        try:
            settled = await self._execute(record, cancel)
        except asyncio.CancelledError:
            self._finish(self._settle_cancelled(record))
            raise
        fault_point("before_check_finish")
        return CheckRun(self._finish(settled), claimed=True)

    def _settle_cancelled(self, record: CheckRecord) -> CheckRecord:
        return dataclasses.replace(
            record,
            state="cancelled",
            completed_at=_now_ms(),
            exit_code=None,
            error="Check command was cancelled.",
        )

    def _finish(self, settled: CheckRecord) -> CheckRecord:
        """Fix `logBytes` from the log file and store the settled record."""
        try:
            size = os.stat(settled.log_path).st_size
        except FileNotFoundError:
            size = 0
        finished = self.store.finish(dataclasses.replace(settled, log_bytes=size))
        self._changed()
        return finished

    async def _execute(self, record: CheckRecord, cancel: asyncio.Event | None) -> CheckRecord:
        def settled(state: CheckState, **fields: Any) -> CheckRecord:
            return dataclasses.replace(record, state=state, completed_at=_now_ms(), **fields)

        check = record.assignment
        try:
            log_fd = os.open(record.log_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
        except OSError as exc:
            return settled("error", error=f"Cannot create check log {record.log_path}: {exc.strerror or exc}")
        try:
            if self.executor is None or not self.executor.available():
                return settled("unsupported", error=UNSUPPORTED_CHECKS_ERROR)
            try:
                before = await capture_fingerprint(check.cwd, check.inputs)
            except SourceCaptureError as exc:
                return settled("error", error=str(exc))
            if cancel is not None and cancel.is_set():
                return settled("cancelled", source_before=before, error="Check command was cancelled.")
            try:
                outcome = await self.executor.execute(
                    check.command,
                    cwd=check.cwd,
                    log_fd=log_fd,
                    timeout_seconds=check.timeout_seconds,
                    cancel=cancel,
                )
            except OSError as exc:
                return settled(
                    "error",
                    source_before=before,
                    error=f"Check command failed to start: {exc.strerror or exc}",
                )
            if outcome.cancelled or (cancel is not None and cancel.is_set()):
                return settled("cancelled", source_before=before, error="Check command was cancelled.")
            if outcome.timed_out:
                return settled(
                    "timed-out",
                    source_before=before,
                    error=f"Check command timed out after {js_number(check.timeout_seconds)} seconds.",
                )
            if outcome.exit_code is None:
                signal_note = f" (killed by {outcome.signal_name})" if outcome.signal_name else ""
                return settled(
                    "error",
                    source_before=before,
                    error=f"Check command exited without a known exit code{signal_note}.",
                )
            try:
                after = await capture_fingerprint(check.cwd, check.inputs)
            except SourceCaptureError as exc:
                return settled("error", source_before=before, exit_code=outcome.exit_code, error=str(exc))
            if outcome.exit_code != 0:
                return settled(
                    "failed", source_before=before, source_after=after, exit_code=outcome.exit_code
                )
            if same_tested_source(before, after):
                return settled("passed", source_before=before, source_after=after, exit_code=0)
            return settled(
                "stale",
                source_before=before,
                source_after=after,
                exit_code=0,
                error="The check changed its own source while it ran.",
            )
        finally:
            with contextlib.suppress(OSError):
                os.fsync(log_fd)
            os.close(log_fd)

    async def run_all(
        self, checks: Sequence[AssignedCheck], *, cancel: asyncio.Event | None = None
    ) -> CheckBatch:
        """Run a policy's checks in order, stopping early on a lingering claim, cancellation or store error.

        A claim the store refuses or cannot commit (another binding, a database failure) runs
        nothing and stops the batch; the verification is then `failed` with that error.

        Returns:
            Every check's record (`None` for checks not reached) and the batch verification.
        """
        records: dict[str, CheckRecord | None] = {check.check_id: None for check in checks}
        failure: str | None = None
        for check in checks:
            if cancel is not None and cancel.is_set():
                break
            try:
                result = await self.run(check, cancel=cancel)
            except OrchestrationError as exc:
                failure = str(exc)
                break
            records[check.check_id] = result.record
            if result.record.state == "claimed":
                break
        cancelled = cancel is not None and cancel.is_set()
        cancelled = cancelled or any(r is not None and r.state == "cancelled" for r in records.values())
        verification = verify_batch(records, cancelled=cancelled)
        if failure is not None:
            verification = CheckVerification("failed", verification.check_ids, error=failure)
        return CheckBatch(records, verification)

    async def read_evidence(self, check_ids: Sequence[str], *, task_id: str, run_id: str) -> CheckBatch:
        """Read a report's check records, re-observed against the current source; never writes.

        Raises:
            CheckRecordError: A referenced record is missing, corrupt or belongs to another task or run.
        """
        return await read_evidence(self.store.rows, check_ids, task_id=task_id, run_id=run_id)


async def read_evidence(checks: Checks, check_ids: Sequence[str], *, task_id: str, run_id: str) -> CheckBatch:
    """Read check records by id, check they belong to the task and run, and re-observe them; never writes.

    Raises:
        CheckRecordError: A referenced record is missing, corrupt or belongs to another task or run.
    """
    stored = read_check_records(checks, check_ids)
    records: dict[str, CheckRecord | None] = {}
    for identity, record in stored.items():
        if record is None:
            raise CheckRecordError(
                f"Check record {identity} is unavailable; inspect team_checks in {checks.db.path}."
            )
        if record.assignment.task_id != task_id or record.assignment.run_id != run_id:
            raise CheckRecordError(f"Check record {identity} belongs to another task or run.")
        records[identity] = await observe_current(record)
    return CheckBatch(records, verify_batch(records))
