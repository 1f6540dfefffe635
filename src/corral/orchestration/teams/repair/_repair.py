"""Optional bounded repair (§7 of the teams notes): policy, ledger, attempts, decisions, observation.

With `repair: {maxAttempts: n}` (1..5, only with explicitly assigned checks)
a failed verification does not end the run: the agent gets a repair request
and resubmits, up to `n` times. Everything durable is the report's **ledger**
in the orchestration store (`controllerId = "repair:" + sha256(JSON.stringify(reportId))`):
its assignments (attempt 1), `maxAttempts`, a final `cancelled` flag and one
stage per submission that got an attempt.

One submission (`RepairController.submit`):

1. **Reserve** (one transaction, before any command or feedback): a known
   submission id replays its stage (a different signature is an error) and
   runs nothing; a cancelled ledger, or a last stage that is not
   `requested`, takes no new attempt (the current decision is returned);
   otherwise stage N+1 is appended — `declined` at once for a resubmission
   whose outcome is blocked/failed/cancelled, else `running`.
2. **Run plan** (only for a new `running` stage): per assignment, reuse the
   previous attempt's record if it still observes `passed` on the current
   scoped source, else run the check at the new attempt number; stop at a
   lingering claim, a cancellation or a claim the store refused.
3. **Finish** (keyed by the stage token): store the check ids and the state —
   `running` while verification is pending, `cancelled`, `not-needed` /
   `repaired` when verification passed, `declined` for a blocked/failed/
   cancelled outcome, `blocked` unless every check settled as passed, failed,
   stale or timed-out, else `requested` while `attempt ≤ maxAttempts`, then
   `exhausted`.

The decision (`RepairResult`) is always rebuilt from the ledger and the check
records observed now, never from what a report cached.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from corral.orchestration.errors import InvalidRequestError, ManagedAgentBusyError, OrchestrationError
from corral.orchestration.store.jsjson import stringify
from corral.orchestration.teams.checks._checks import (
    CANCELLED_VERIFICATION_ERROR,
    CheckRunner,
    CheckSpec,
    CheckVerification,
    observe_current,
    verify_batch,
)
from corral.orchestration.teams.checks._rows import RepairLedgerError, RepairLedgerRow, RepairStageRow
from corral.orchestration.teams.checks.records import (
    AssignedCheck,
    CheckRecord,
    CheckRecordError,
    check_id,
    read_check_records,
)

from .records import CheckSummary, RepairRequest, RepairResult, RepairState

if TYPE_CHECKING:
    from corral.orchestration.teams._repositories import TeamsRepositories

__all__ = [
    "INVALID_REPAIR_POLICY",
    "MAX_REPAIR_ATTEMPTS",
    "REPAIR_NEEDS_CHECKS",
    "RepairController",
    "RepairOutcome",
    "RepairPolicyError",
    "RepairUnresolvedError",
    "parse_repair_policy",
    "repair_controller_id",
    "repair_request_id",
    "submission_signature",
    "validate_ledger",
]

MAX_REPAIR_ATTEMPTS = 5
"""The largest `maxAttempts`."""
INVALID_REPAIR_POLICY = "Invalid repair policy."
REPAIR_NEEDS_CHECKS = "Repair policy requires explicitly assigned checks."
UNRESOLVED_MESSAGE = "Repair check ownership remains unresolved"

_DECLINING_OUTCOMES = frozenset({"blocked", "failed", "cancelled"})
_SETTLED_FOR_REPAIR = frozenset({"passed", "failed", "stale", "timed-out"})


class RepairPolicyError(InvalidRequestError):
    """A `repair` policy is malformed, or asks for repair without assigned checks."""


class RepairUnresolvedError(ManagedAgentBusyError):
    """Repair work (a running attempt or a claimed check) has not settled; cleanup must stay fenced."""


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def parse_repair_policy(value: object, *, checks: Sequence[CheckSpec]) -> int:
    """Validate a spawn's `repair` policy; returns `maxAttempts` (0 = no repair).

    Args:
        value: The JSON value given as `repair` (`None` when omitted).
        checks: The spawn's assigned checks (after `parse_check_policy`).

    Raises:
        RepairPolicyError: "Invalid repair policy." for anything but `{maxAttempts: <integer 0..5>}`,
            or "Repair policy requires explicitly assigned checks." for `maxAttempts > 0` without checks.
    """
    if value is None:
        return 0
    if not isinstance(value, Mapping) or set(value) != {"maxAttempts"}:
        raise RepairPolicyError(INVALID_REPAIR_POLICY, details={"reason": "repair must be {maxAttempts}"})
    attempts = value["maxAttempts"]
    if isinstance(attempts, float) and attempts.is_integer():
        attempts = int(attempts)
    if type(attempts) is not int or not 0 <= attempts <= MAX_REPAIR_ATTEMPTS:
        raise RepairPolicyError(
            INVALID_REPAIR_POLICY,
            details={"reason": f"maxAttempts must be an integer from 0 to {MAX_REPAIR_ATTEMPTS}"},
        )
    if attempts and not checks:
        raise RepairPolicyError(REPAIR_NEEDS_CHECKS)
    return attempts


def repair_controller_id(report_id: str) -> str:
    """`repair:` + sha256 hex of `JSON.stringify(reportId)`."""
    return "repair:" + _sha256(stringify(report_id))


def submission_signature(task_details: Mapping[str, Any]) -> str:
    """`repair:` + sha256 hex of `JSON.stringify(normalized task details)` (key order kept)."""
    return "repair:" + _sha256(stringify(dict(task_details)))


def repair_request_id(report_id: str, attempt: int) -> str:
    """`repair:` + sha256 hex of `JSON.stringify([reportId, attempt])`."""
    return "repair:" + _sha256(f"[{stringify(report_id)},{attempt}]")


@dataclass(frozen=True, slots=True)
class RepairOutcome:
    """A repair decision with the verification and records it was built from."""

    result: RepairResult
    """The decision."""
    verification: CheckVerification
    """The verification of the decisive stage's checks, observed now."""
    records: Mapping[str, CheckRecord | None]
    """Those checks' records as observed (`None` when missing), in policy order."""
    request: RepairRequest | None = None
    """The repair request when the state is `requested` (its checks: the non-passed records)."""


def validate_ledger(ledger: RepairLedgerRow, *, report_id: str, run_id: str) -> tuple[AssignedCheck, ...]:
    """Check a stored ledger against §7.2; returns its assignments (attempt 1).

    Raises:
        RepairLedgerError: The ledger belongs to another report or run, or breaks an invariant.
    """
    key = ledger.controller_id

    def corrupt(reason: str) -> RepairLedgerError:
        return RepairLedgerError(
            f"Repair ledger {key} is corrupt: {reason}; inspect it in team_repair_ledgers."
        )

    if key != repair_controller_id(report_id) or ledger.report_id != report_id:
        raise RepairLedgerError(f"Repair ledger {key} belongs to another report.")
    if ledger.run_id != run_id:
        raise RepairLedgerError(f"Repair ledger {key} belongs to another run.")
    try:
        assignments = tuple(AssignedCheck.from_json(item) for item in ledger.assignments)
    except ValueError as exc:
        raise corrupt(str(exc)) from None
    names = [item.name for item in assignments]
    if not assignments or len(set(names)) != len(names):
        raise corrupt("assignments must be at least one, with unique names")
    if any(item.attempt != 1 or item.report_id != report_id or item.run_id != run_id for item in assignments):
        raise corrupt("assignments must be attempt 1 of this report and run")
    if not 1 <= ledger.max_attempts <= MAX_REPAIR_ATTEMPTS or len(ledger.stages) > ledger.max_attempts + 1:
        raise corrupt("maxAttempts or the number of stages is out of bounds")
    if len({stage.submission_id for stage in ledger.stages}) != len(ledger.stages):
        raise corrupt("submission ids repeat")
    for index, stage in enumerate(ledger.stages):
        if stage.attempt != index + 1 or (index and ledger.stages[index - 1].state != "requested"):
            raise corrupt(f"stage {index + 1} does not follow a requested stage with the next attempt")
        if len(stage.check_ids) != len(assignments):
            raise corrupt(f"stage {stage.attempt} does not name one check per assignment")
        for assignment, identity in zip(assignments, stage.check_ids, strict=True):
            allowed = {
                check_id(report_id, assignment.name, attempt) for attempt in range(1, stage.attempt + 1)
            }
            if identity not in allowed:
                raise corrupt(f"stage {stage.attempt} names a check of another assignment or a later attempt")
    return assignments


def _stage_state(
    verification: CheckVerification,
    records: Mapping[str, CheckRecord | None],
    *,
    aborted: bool,
    attempt: int,
    max_attempts: int,
    outcome: str | None,
) -> str:
    """§7.3 step 3: the state a finished stage settles in."""
    if verification.state == "pending":
        return "running"
    if aborted:
        return "cancelled"
    if verification.state == "passed":
        return "not-needed" if attempt == 1 else "repaired"
    if outcome in _DECLINING_OUTCOMES:
        return "declined"
    if not all(record is not None and record.state in _SETTLED_FOR_REPAIR for record in records.values()):
        return "blocked"
    return "requested" if attempt <= max_attempts else "exhausted"


class RepairController:
    """Runs, decides, cancels and observes bounded repair over the ledgers in the store."""

    def __init__(self, repos: TeamsRepositories, runner: CheckRunner | None = None) -> None:
        """Keep ledgers in `repos.repair` (checks in `repos.checks`); `runner` (needed only by `submit`) runs the checks."""
        self._repos = repos
        self._runner = runner

    # --- one submission -------------------------------------------------------------------------

    async def submit(
        self,
        assignments: Sequence[AssignedCheck],
        *,
        max_attempts: int,
        submission_id: str,
        signature: str,
        outcome: str | None,
        cancel: asyncio.Event,
    ) -> RepairOutcome:
        """Verify one `report_and_exit` submission under the repair policy (§7.3).

        Args:
            assignments: The report's checks at attempt 1, in policy order (non-empty).
            max_attempts: The policy's `maxAttempts` (1..5).
            submission_id: The runtime's id of this submission.
            signature: `submission_signature` of the submission's task details.
            outcome: The agent's reported outcome (`None` = unspecified).
            cancel: Setting it kills running checks; if already set, the ledger is cancelled first.

        Raises:
            RepairBindingError: The policy or assignments changed, or the submission id was reused
                with other details.
            RepairLedgerError: The stored ledger is corrupt or belongs to another run.
        """
        if not assignments or self._runner is None:
            raise InvalidRequestError("Repair needs assigned checks and a check runner.")
        if not submission_id or not submission_id.strip():
            raise InvalidRequestError("A repair submission needs its submission id; pass the tool call id.")
        first = assignments[0]
        report_id, run_id, task_id = first.report_id, first.run_id, first.task_id
        key = repair_controller_id(report_id)
        existing = self._repos.repair.repair_ledger(key)
        if existing is not None:  # never append to a ledger that is already corrupt or foreign
            validate_ledger(existing, report_id=report_id, run_id=run_id)
        reservation = self._repos.repair.reserve_repair_stage(
            key,
            run_id=run_id,
            report_id=report_id,
            assignments=[item.to_json() for item in assignments],
            max_attempts=max_attempts,
            submission_id=submission_id,
            signature=signature,
            decline=outcome in _DECLINING_OUTCOMES,
            cancel_first=cancel.is_set(),
            check_ids=lambda attempt: [check_id(report_id, item.name, attempt) for item in assignments],
        )
        ledger = reservation.ledger
        validate_ledger(ledger, report_id=report_id, run_id=run_id)
        stage = reservation.stage
        if not reservation.created or stage is None or stage.state != "running":
            return await self._decide(ledger, stage, task_id=task_id)
        try:
            ids, records, failure = await self._run_plan(ledger, stage, assignments, cancel)
        except asyncio.CancelledError:
            # Shutdown cancelled the submission: the runner settled its checks as cancelled; settle
            # the stage too (cancelling the ledger) so cleanup is not fenced by a stage left running.
            cancel.set()
            with contextlib.suppress(OrchestrationError):
                self._repos.repair.finish_repair_stage(
                    key, token=stage.token, state="cancelled", check_ids=list(stage.check_ids), cancel=True
                )
            raise
        aborted = cancel.is_set() or any(r is not None and r.state == "cancelled" for r in records.values())
        verification = verify_batch(records, cancelled=aborted)
        if failure is not None and verification.state != "pending":
            verification = CheckVerification("failed", verification.check_ids, error=failure)
        state = _stage_state(
            verification,
            records,
            aborted=aborted,
            attempt=stage.attempt,
            max_attempts=max_attempts,
            outcome=outcome,
        )
        ledger = self._repos.repair.finish_repair_stage(
            key,
            token=stage.token,
            state=state,  # type: ignore[arg-type]  # one of the stage states
            check_ids=ids,
            cancel=aborted,
        )
        settled = next(s for s in ledger.stages if s.token == stage.token)
        return self._decision(ledger, settled, records, verification)

    async def _run_plan(
        self,
        ledger: RepairLedgerRow,
        stage: RepairStageRow,
        assignments: Sequence[AssignedCheck],
        cancel: asyncio.Event,
    ) -> tuple[list[str], dict[str, CheckRecord | None], str | None]:
        """§7.3 step 2: reuse what still passes, rerun the rest at this attempt; stop early when told."""
        assert self._runner is not None
        previous = ledger.stages[stage.attempt - 2] if stage.attempt > 1 else None
        earlier = read_check_records(self._repos.checks, previous.check_ids) if previous is not None else {}
        if any(record is not None and record.state == "claimed" for record in earlier.values()):
            assert previous is not None
            return list(previous.check_ids), {k: v for k, v in earlier.items()}, None
        ids: list[str] = []
        records: dict[str, CheckRecord | None] = {}
        failure: str | None = None
        stop = False
        for index, assignment in enumerate(assignments):
            fresh = dataclasses.replace(assignment, attempt=stage.attempt)
            if not stop and previous is not None:
                prior = earlier.get(previous.check_ids[index])
                if prior is not None:
                    observed = await observe_current(prior)
                    if observed.state == "passed":
                        ids.append(prior.check_id)
                        records[prior.check_id] = observed
                        continue
            if stop or cancel.is_set():
                ids.append(fresh.check_id)
                records[fresh.check_id] = None
                continue
            try:
                run = await self._runner.run(fresh, cancel=cancel)
            except OrchestrationError as exc:
                failure = str(exc)
                stop = True
                ids.append(fresh.check_id)
                records[fresh.check_id] = None
                continue
            ids.append(fresh.check_id)
            records[fresh.check_id] = run.record
            stop = run.record.state == "claimed"
        return ids, records, failure

    # --- decisions ----------------------------------------------------------------------------------

    async def _decide(
        self, ledger: RepairLedgerRow, stage: RepairStageRow | None, *, task_id: str
    ) -> RepairOutcome:
        """The decision of `stage` (the ledger's last stage when observing), its records observed now."""
        if stage is None:
            verification = (
                CheckVerification("failed", (), error=CANCELLED_VERIFICATION_ERROR)
                if ledger.cancelled
                else CheckVerification("pending", ())
            )
            return self._decision(ledger, None, {}, verification)
        records, error = await self._observe_records(stage.check_ids, task_id=task_id, run_id=ledger.run_id)
        verification = verify_batch(records, cancelled=ledger.cancelled)
        if stage.state == "running" and verification.state != "pending":
            verification = CheckVerification("pending", verification.check_ids)
        elif error is not None:
            verification = CheckVerification("failed", verification.check_ids, error=error)
        return self._decision(ledger, stage, records, verification)

    async def _observe_records(
        self, check_ids: Sequence[str], *, task_id: str, run_id: str
    ) -> tuple[dict[str, CheckRecord | None], str | None]:
        """The records of `check_ids`, re-observed now; the first reason one cannot be trusted."""
        try:
            stored = read_check_records(self._repos.checks, check_ids)
        except CheckRecordError as exc:
            return dict.fromkeys(check_ids), str(exc)
        records: dict[str, CheckRecord | None] = {}
        error: str | None = None
        for identity, record in stored.items():
            if record is not None and (
                record.assignment.task_id != task_id or record.assignment.run_id != run_id
            ):
                error = error or f"Check record {identity} belongs to another task or run."
                records[identity] = None
                continue
            records[identity] = None if record is None else await observe_current(record)
        return records, error

    def _decision(
        self,
        ledger: RepairLedgerRow,
        stage: RepairStageRow | None,
        records: Mapping[str, CheckRecord | None],
        verification: CheckVerification,
    ) -> RepairOutcome:
        """§7.4: the state, counts, request ids and (when `requested`) the repair request."""
        state: RepairState
        if stage is None:
            state = "cancelled" if ledger.cancelled else "pending"
        elif stage.state == "running" or verification.state == "pending":
            state = "pending"
        elif ledger.cancelled:
            state = "cancelled"
        else:
            state = stage.state  # type: ignore[assignment]  # every other stage state is a decision state
        requested = [s for s in ledger.stages if s.state == "requested"]
        result = RepairResult(
            ledger.controller_id,
            state,
            attempts_used=len(requested),
            max_attempts=ledger.max_attempts,
            request_ids=tuple(repair_request_id(ledger.report_id, s.attempt) for s in requested),
        )
        request = None
        if state == "requested" and stage is not None:
            request = RepairRequest(
                repair_request_id(ledger.report_id, stage.attempt),
                stage.attempt,
                tuple(CheckSummary.of(r) for r in records.values() if r is not None and r.state != "passed"),
            )
        return RepairOutcome(result, verification, records, request)

    # --- observation ----------------------------------------------------------------------------------

    async def observe(
        self, *, report_id: str, run_id: str, task_id: str, referenced: bool
    ) -> RepairOutcome | None:
        """Rebuild a report's repair decision from its ledger (§7.6); never writes.

        Args:
            report_id: The report.
            run_id: Its run (the ledger must belong to it).
            task_id: Its task (its check records must belong to it).
            referenced: The stored report references repair, so a missing ledger is an error.

        Returns:
            `None` when there is no ledger and none is referenced (plain check evidence applies);
            otherwise the decision — for a missing, corrupt or wrong-run ledger, verification
            `pending` with the error and repair `{state: pending, outcome: blocked, error}`.
        """
        key = repair_controller_id(report_id)
        try:
            ledger = self._repos.repair.repair_ledger(key)
            if ledger is None:
                if not referenced:
                    return None
                raise RepairLedgerError(
                    f"Referenced repair ledger is unavailable; inspect {key} in team_repair_ledgers of "
                    f"{self._repos.repair.db.path}."
                )
            validate_ledger(ledger, report_id=report_id, run_id=run_id)
        except OrchestrationError as exc:
            message = str(exc)
            return RepairOutcome(
                RepairResult(key, "pending", error=message),
                CheckVerification("pending", (), error=message),
                {},
            )
        return await self._decide(ledger, ledger.last_stage, task_id=task_id)

    # --- cancellation and fencing ----------------------------------------------------------------------

    def cancel(self, report_id: str) -> RepairLedgerRow | None:
        """Cancel the report's repair unless its last stage is terminal (§7.5); durable."""
        return self._repos.repair.cancel_repair(repair_controller_id(report_id))

    def cancel_and_require_settled(self, report_id: str) -> None:
        """Cancel, then refuse if repair work is unresolved (used by stop and cleanup).

        Raises:
            RepairUnresolvedError: The last stage is running, a requested stage's checks cannot be
                read back, or a referenced check is still claimed ("Repair check ownership remains
                unresolved: …").
        """
        ledger = self.cancel(report_id)
        problem = None if ledger is None else self._ledger_problem(ledger)
        if problem is not None:
            raise RepairUnresolvedError(f"{UNRESOLVED_MESSAGE}: {problem}")

    def unresolved(self, run_id: str) -> str | None:
        """Why the run's cleanup must stay fenced — a claimed check or unsettled repair — else `None`."""
        problems = [
            f"check {row.name} ({row.check_id}) is still claimed; its execution never settled"
            for row in self._repos.checks.claimed_checks(run_id)
        ]
        for ledger in self._repos.repair.repair_ledgers(run_id):
            problem = self._ledger_problem(ledger)
            if problem is not None and problem not in problems:
                problems.append(problem)
        if not problems:
            return None
        return f"{UNRESOLVED_MESSAGE}: " + "; ".join(problems) + "."

    def _ledger_problem(self, ledger: RepairLedgerRow) -> str | None:
        last = ledger.last_stage
        if last is None:
            return None
        if last.state == "running":
            return f"repair attempt {last.attempt} of {ledger.report_id} is still running"
        referenced = list(dict.fromkeys(identity for stage in ledger.stages for identity in stage.check_ids))
        rows = self._repos.checks.get_checks(referenced)
        for identity in referenced:
            row = rows.get(identity)
            if row is not None and row.state == "claimed":
                return f"check {row.name} ({identity}) is still claimed; its execution never settled"
        if last.state == "requested" and any(identity not in rows for identity in last.check_ids):
            return f"repair attempt {last.attempt} of {ledger.report_id} references missing check records"
        return None
